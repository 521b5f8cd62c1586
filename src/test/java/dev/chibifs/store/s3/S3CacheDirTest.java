package dev.chibifs.store.s3;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.chibifs.config.ChibiHome;
import dev.chibifs.path.VfsPath;
import dev.chibifs.store.FileHandle;
import dev.chibifs.store.OpenFlag;
import dev.chibifs.testing.MutableClock;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Instant;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * A cache directory belongs to one store: another store's pending changes are never replayed into
 * this one, default names of stores that map alike differ, and content damaged in the cache since
 * its journal's record is neither served nor uploaded over S3's.
 */
@Timeout(120)
class S3CacheDirTest {

    private static final String BUCKET = "chibi";
    private static final String OTHER_BUCKET = "other";
    private static final AtomicInteger RUNS = new AtomicInteger();
    /** What the conflict copies of these tests are stamped with: {@link #clock}'s time. */
    private static final String STAMP = "20260102T030405Z";

    @TempDir
    static Path temp;
    @RegisterExtension
    static final S3Server server = S3Server.perClass(BUCKET, OTHER_BUCKET);

    /** Stands still unless a test moves it: nothing goes up but what a test flushes. */
    private final MutableClock clock = new MutableClock(Instant.parse("2026-01-02T03:04:05Z"));
    private Path cacheDir;
    private String ns;
    private final List<S3Storage> open = new ArrayList<>();
    private final List<Bucket> raw = new ArrayList<>();

    @BeforeEach
    void newNames() {
        int run = RUNS.incrementAndGet();
        cacheDir = temp.resolve("cache-" + run);
        ns = "ns" + run;
    }

    @AfterEach
    void closeAll() throws IOException {
        for (S3Storage s : open) {
            try {
                s.close();
            } catch (IOException | IllegalStateException e) {
                // closed or crashed by the test already
            }
        }
        for (Bucket b : raw) {
            b.close();
        }
    }

    private S3Options options(Path dir) {
        return S3Options.defaults(dir, server.env()).withHost("a").withClock(clock, false);
    }

    private S3Storage store(String spec, Path dir) throws IOException {
        S3Storage s = S3Storage.open(spec, options(dir));
        open.add(s);
        return s;
    }

    private static VfsPath p(String s) {
        return VfsPath.of(s);
    }

    /** What S3 holds under {@code key} of {@code bucket}, or null. */
    private String inS3(String bucket, String key) throws IOException {
        Bucket b = Bucket.connect(S3Spec.parse("s3://" + bucket + "/x"), server.env());
        raw.add(b);
        Path to = temp.resolve("get-" + System.nanoTime());
        Bucket.Head h = b.get(key, to);
        return h == null ? null : Files.readString(to);
    }

    private static long ino(S3Storage s, String path) {
        synchronized (s) {
            return s.overlay.nodes.get(p(path)).ino;
        }
    }

    /** Cuts the cached content of {@code ino} to {@code size} bytes, as a power cut or a hand would. */
    private void cut(long ino, long size) throws IOException {
        try (FileChannel ch = FileChannel.open(cacheDir.resolve("data").resolve(Long.toString(ino)), StandardOpenOption.WRITE)) {
            ch.truncate(size);
        }
    }

    /**
     * The cache directory's file system failing under a mount (ext4 shut down, as a dying disk
     * does): callers got EIO, but stats said "answers; to upload: 1" and status active, with no
     * trouble line. Root only, with mkfs.ext4 and python3 (the shutdown ioctl) at hand.
     */
    @Test
    void aCacheDirectoryWhoseFileSystemFailsIsATrouble() throws Exception {
        cacheDirOnAnExt4Image();
        try {
            S3Storage s = store("s3://" + BUCKET + "/" + ns, cacheDir);
            s.write(p("/a"), "waits".getBytes());
            assertNull(s.failing());
            assertTrue(s.state().contains(": answers; to send: 1;"), s.state());
            shutDownCacheDir();
            String why = "its cache directory " + cacheDir + " answers EIO (Input/output error): every change fails,"
                    + " and 1 change(s) to send wait there";
            assertEquals(why, s.failing());
            assertEquals(why, s.unanswered());
            assertTrue(s.state().contains(": " + why + "; to send: 1;"), s.state());
        } finally {
            run("umount", "-l", cacheDir.toString());
        }
    }

    /**
     * A tester's finding (session 68): on a shut-down cache file system, mkdir, rename and unlink
     * answered EIO yet were made (the listing showed them, the mkdir reached S3), and the next start
     * undid the rename and the unlink, which the journal had not kept. A call answered EIO changes nothing.
     */
    @Test
    void aChangeRefusedForTheCachesFileSystemFailingIsNotMade() throws Exception {
        cacheDirOnAnExt4Image();
        try {
            S3Storage s = store("s3://" + BUCKET + "/" + ns, cacheDir);
            s.write(p("/x/a"), "a".getBytes(UTF_8));
            s.write(p("/x/b"), "b".getBytes(UTF_8));
            s.flushAll();
            shutDownCacheDir();

            dev.chibifs.sys.ErrnoException mkdir = assertThrows(dev.chibifs.sys.ErrnoException.class, () -> s.mkdir(p("/x/sub")));
            assertEquals(dev.chibifs.sys.Linux.EIO, mkdir.errno());
            assertTrue(mkdir.getMessage().contains("its cache directory " + cacheDir + " fails: the change was not made"),
                    mkdir.getMessage());
            assertThrows(IOException.class, () -> s.rename(p("/x/b"), p("/x/b2")));
            assertThrows(IOException.class, () -> s.removeFile(p("/x/a")));
            assertTrue(s.exists(p("/x/a")) && s.exists(p("/x/b")), "neither removed nor renamed");
            assertFalse(s.exists(p("/x/b2")) || s.exists(p("/x/sub")), "nor made");
            try {
                s.flushAll();
            } catch (IOException failing) {
                // the cache fails: whatever the pass can say of it
            }
            assertNull(inS3(BUCKET, ns + "/x/sub/"), "the refused mkdir did not reach S3");
            assertEquals("a", inS3(BUCKET, ns + "/x/a"));
            assertEquals("b", inS3(BUCKET, ns + "/x/b"));
        } finally {
            run("umount", "-l", cacheDir.toString());
        }
    }

    /**
     * A tester's finding (session 67): with the cache's file system failing, the log's line read
     * "CREATE of node 3: /tmp/.../cache9/data/17: Input/output error", the cache's own file, not the
     * one the user made. Here the cache's file cannot be made (a directory in its place: EISDIR).
     */
    @Test
    void aCreateTheCacheFailsNamesTheFileMadeNotTheCachesOwn() throws Exception {
        S3Storage s = store("s3://" + BUCKET + "/" + ns, cacheDir);
        s.mkdir(p("/home"));
        long next;
        synchronized (s) {
            next = s.overlay.nextIno;
        }
        Files.createDirectory(cacheDir.resolve("data").resolve(Long.toString(next)));
        dev.chibifs.sys.ErrnoException e = assertThrows(dev.chibifs.sys.ErrnoException.class,
                () -> s.open(p("/home/d.md"), java.util.EnumSet.of(dev.chibifs.store.OpenFlag.WRITE,
                        dev.chibifs.store.OpenFlag.CREATE), 0644));
        assertEquals("/home/d.md: Is a directory in its cache directory", e.getMessage());
        assertEquals(dev.chibifs.sys.Linux.EISDIR, e.errno(), "its errno as it was");
    }

    private static int run(String... command) throws IOException, InterruptedException {
        return new ProcessBuilder(command).inheritIO().start().waitFor();
    }

    @Test
    void aCacheDirectoryOfAnotherStoreIsRefusedAndNothingOfItGoesUp() throws Exception {
        String mine = "s3://" + BUCKET + "/" + ns;
        S3Storage a = store(mine, cacheDir);
        a.write(p("/shared/f"), "pending".getBytes(UTF_8));
        a.crash(); // what a kill -9 leaves: the change in the journal only

        for (String other : List.of("s3://" + BUCKET + "/" + ns + "-2", "s3://" + OTHER_BUCKET + "/" + ns)) {
            IOException e = assertThrows(IOException.class, () -> store(other, cacheDir));
            String why = e.getMessage();
            assertTrue(why.contains(cacheDir + " belongs to the S3 store " + mine + ", not to " + other), why);
            assertTrue(why.contains("--cache-dir") && why.contains("remove " + cacheDir), why);
            assertFalse(why.contains("\n"), "one line: " + why);
        }
        assertNull(inS3(BUCKET, ns + "-2/shared/f"));
        assertNull(inS3(OTHER_BUCKET, ns + "/shared/f"));

        // the refusals let the directory go, and its own store uploads its changes
        S3Storage again = store(mine, cacheDir);
        again.flushAll();
        assertEquals("pending", inS3(BUCKET, ns + "/shared/f"));
    }

    /** A second store on a busy cache directory was refused without the way out: a directory of its own. */
    @Test
    void aBusyCacheDirectorySaysToGiveAnotherItsOwn() throws Exception {
        String mine = "s3://" + BUCKET + "/" + ns;
        store(mine, cacheDir);
        IOException e = assertThrows(IOException.class, () -> store(mine, cacheDir));
        assertTrue(e.getMessage().contains("in use by another chibifs") && e.getMessage().contains("--cache-dir DIR of its own"),
                e.getMessage());
        assertTrue(Files.exists(cacheDir.resolve(CacheOwner.FILE)), "the refusal leaves the holder's directory alone");
    }

    /** A mount S3 refused (no such bucket) left its new cache directory behind; one that was there stays. */
    @Test
    void aRefusedStoreRemovesTheCacheDirectoryItMadeOnly() throws Exception {
        String refused = "s3://no-such-bucket/" + ns;
        assertThrows(IOException.class, () -> store(refused, cacheDir));
        assertFalse(Files.exists(cacheDir, java.nio.file.LinkOption.NOFOLLOW_LINKS), "made by the refused open");
        assertTrue(Files.exists(cacheDir.getParent()), "only the cache directory itself goes");
    }

    /**
     * A refused open on an operator's directory left a record claiming it for the mistyped bucket, and
     * the corrected command was told to remove the directory, files and all.
     */
    @Test
    void aRefusedStoreLeavesADirectoryThatWasThereAsItFoundIt() throws Exception {
        Files.createDirectories(cacheDir.resolve("data"));
        Files.writeString(cacheDir.resolve("kept"), "an operator's");
        Files.writeString(cacheDir.resolve("data").resolve("mine"), "an operator's too");
        assertThrows(IOException.class, () -> store("s3://no-such-bucket/" + ns, cacheDir));
        assertEquals(List.of("data", "kept"), names(cacheDir), "what the open made went, nothing else");
        assertEquals(List.of("mine"), names(cacheDir.resolve("data")));
        assertEquals("an operator's", Files.readString(cacheDir.resolve("kept")));

        S3Storage corrected = store("s3://" + BUCKET + "/" + ns, cacheDir);
        corrected.write(p("/shared/f"), "up".getBytes(UTF_8));
        corrected.flushAll();
        assertEquals("up", inS3(BUCKET, ns + "/shared/f"));
    }

    /** A store's record another endpoint wrote is put back as it was when S3 refuses the open. */
    @Test
    void aRefusedStorePutsTheRecordItReplacedBack() throws Exception {
        Files.createDirectories(cacheDir);
        String before = "{\"bucket\":\"no-such-bucket\",\"prefix\":\"" + ns + "\",\"endpoint\":\"http://127.0.0.1:1\"}\n";
        Files.writeString(cacheDir.resolve(CacheOwner.FILE), before);
        assertThrows(IOException.class, () -> store("s3://no-such-bucket/" + ns, cacheDir));
        assertEquals(new CacheOwner("no-such-bucket", ns, "http://127.0.0.1:1"), CacheOwner.read(cacheDir));
        assertEquals(List.of(CacheOwner.FILE), names(cacheDir));
    }

    /** --cache-dir n1/n2/n3, none there, refused by S3: n1 and n2 were left. */
    @Test
    void aRefusedStoreRemovesTheDirectoriesItMadeAboveItsCache() throws Exception {
        Path top = temp.resolve("n1-" + ns);
        assertThrows(IOException.class, () -> store("s3://no-such-bucket/" + ns, top.resolve("n2").resolve("n3")));
        assertFalse(Files.exists(top, java.nio.file.LinkOption.NOFOLLOW_LINKS));

        Files.createDirectories(top.resolve("n2"));
        Files.writeString(top.resolve("n2").resolve("kept"), "an operator's");
        assertThrows(IOException.class, () -> store("s3://no-such-bucket/" + ns, top.resolve("n2").resolve("n3")));
        assertEquals(List.of("kept"), names(top.resolve("n2")));
    }

    /** A link to nowhere as --cache-dir was refused with the path alone (FileAlreadyExistsException). */
    @Test
    void aLinkToNowhereAsCacheDirectoryIsNamedAsOne() throws Exception {
        Path link = Files.createSymbolicLink(temp.resolve("dangling-" + ns), temp.resolve("nowhere-" + ns));
        IOException e = assertThrows(IOException.class, () -> store("s3://" + BUCKET + "/" + ns, link));
        assertTrue(e.getMessage().contains(link + " is a symbolic link to " + temp.resolve("nowhere-" + ns)
                + ", which is no directory"), e.getMessage());
        assertTrue(Files.isSymbolicLink(link), "left as it was");
    }

    private static List<String> names(Path dir) throws IOException {
        try (java.util.stream.Stream<Path> s = Files.list(dir)) {
            return s.map(f -> f.getFileName().toString()).sorted().toList();
        }
    }

    /** The record as a fifo hung the mount in open(2), holding the directory's lock; a link to /dev/zero would end it. */
    @Test
    void aRecordThatIsNoRegularFileIsRefusedAtOnce() throws Exception {
        String mine = "s3://" + BUCKET + "/" + ns;
        store(mine, cacheDir).close();
        Files.delete(cacheDir.resolve(CacheOwner.FILE));
        dev.chibifs.testing.OddFiles.fifo(cacheDir.resolve(CacheOwner.FILE));
        IOException e = org.junit.jupiter.api.Assertions.assertTimeoutPreemptively(dev.chibifs.testing.OddFiles.PROMPTLY,
                () -> org.junit.jupiter.api.Assertions.assertThrows(IOException.class, () -> store(mine, cacheDir)));
        assertTrue(e.getMessage().contains(dev.chibifs.config.HomeFile.NOT_REGULAR), e.getMessage());
        Files.delete(cacheDir.resolve(CacheOwner.FILE));
        store(mine, cacheDir); // the refusal let the directory's lock go
    }

    @Test
    void aCacheDirectoryWithNoRecordOfItsStoreIsAdopted() throws Exception {
        String mine = "s3://" + BUCKET + "/" + ns;
        S3Storage a = store(mine, cacheDir);
        a.write(p("/shared/f"), "made by an older chibifs".getBytes(UTF_8));
        a.crash();
        Files.delete(cacheDir.resolve(CacheOwner.FILE)); // as a chibifs before the record left it

        S3Storage again = store(mine, cacheDir);
        again.flushAll();
        assertEquals("made by an older chibifs", inS3(BUCKET, ns + "/shared/f"));
        CacheOwner recorded = CacheOwner.read(cacheDir);
        assertEquals(new CacheOwner(BUCKET, ns, server.endpoint().toString()), recorded);
        again.close();
        assertThrows(IOException.class, () -> store("s3://" + BUCKET + "/" + ns + "-2", cacheDir));
    }

    @Test
    void anotherEndpointOfTheSameBucketAndPrefixOpensAndIsRecorded() throws Exception {
        String mine = "s3://" + BUCKET + "/" + ns;
        S3Storage a = store(mine, cacheDir);
        a.write(p("/shared/f"), "pending".getBytes(UTF_8));
        a.crash();
        // last used with the server on another port, as scripts/s3-loopback.sh takes a free one at each start
        Files.writeString(cacheDir.resolve(CacheOwner.FILE),
                "{\"bucket\":\"" + BUCKET + "\",\"prefix\":\"" + ns + "\",\"endpoint\":\"http://127.0.0.1:1\"}\n");

        S3Storage again = store(mine, cacheDir);
        again.flushAll();
        assertEquals("pending", inS3(BUCKET, ns + "/shared/f"));
        assertEquals(server.endpoint().toString(), CacheOwner.read(cacheDir).endpoint());
    }

    @Test
    void defaultCacheNamesOfStoresThatMapAlikeDiffer() throws Exception {
        ChibiHome home = new ChibiHome(temp.resolve("home-" + ns));
        S3Spec slash = S3Spec.parse("s3://" + BUCKET + "/" + ns + "/x");
        S3Spec underscore = S3Spec.parse("s3://" + BUCKET + "/" + ns + "_x");
        Path plain = home.chibifsDir().resolve("cache").resolve(slash.cacheName());
        assertEquals(plain, S3Options.defaultCacheDir(home, underscore)); // the same name, and none there yet

        S3Storage a = store(slash.toString(), S3Options.defaultCacheDir(home, slash));
        a.write(p("/f"), "slash".getBytes(UTF_8));
        a.crash(); // its change stays pending in the plain directory

        Path other = S3Options.defaultCacheDir(home, underscore);
        assertNotEquals(plain, other);
        assertTrue(other.getFileName().toString().matches(slash.cacheName() + "-[0-9a-f]{8}"), other.toString());
        assertEquals(plain, S3Options.defaultCacheDir(home, slash), "the store whose directory it is keeps its name");
        S3Storage b = store(underscore.toString(), other);
        b.write(p("/f"), "underscore".getBytes(UTF_8));
        b.flushAll();
        S3Storage again = store(slash.toString(), S3Options.defaultCacheDir(home, slash));
        again.flushAll();
        assertEquals("slash", inS3(BUCKET, ns + "/x/f"));
        assertEquals("underscore", inS3(BUCKET, ns + "_x/f"));
        again.close();

        // a directory left by a chibifs before the record is taken by the first store to use it
        Files.delete(plain.resolve(CacheOwner.FILE));
        assertEquals(plain, S3Options.defaultCacheDir(home, underscore));
    }

    /**
     * A cache directory another user may write is refused before its journal is read: a tester who
     * owned the home planted a journal there, and root's daemon uploaded its files into another
     * context's home and chibi's flock registry, on every host of the bucket.
     */
    @Test
    void aCacheDirectoryAnotherUserMayWriteIsRefusedAndNothingOfItGoesUp() throws Exception {
        String spec = "s3://" + BUCKET + "/" + ns;
        S3Storage a = store(spec, cacheDir);
        a.write(p("/home/bob/planted.txt"), "not bob's".getBytes(UTF_8));
        a.crash(); // the change waits in the journal, as a planted one would
        Files.setPosixFilePermissions(cacheDir, java.nio.file.attribute.PosixFilePermissions.fromString("rwxrwxrwx"));
        IOException refused = assertThrows(IOException.class, () -> store(spec, cacheDir));
        assertTrue(refused.getMessage().contains(cacheDir + " may be written by other users (mode 0777): chmod go-w it"),
                refused.getMessage());
        // group-writable, the group the owner's alone (umask 002 with a group of one's own): trusted
        int gid = (Integer) Files.getAttribute(cacheDir, "unix:gid");
        org.junit.jupiter.api.Assumptions.assumeTrue(dev.chibifs.sys.OwnedDirectories.privateGroup(gid,
                dev.chibifs.sys.Syscalls.geteuid()), "a private group to test with");
        Files.setPosixFilePermissions(cacheDir, java.nio.file.attribute.PosixFilePermissions.fromString("rwxrwxr-x"));
        assertTrue(dev.chibifs.sys.OwnedDirectories.whyOthersMayWrite(cacheDir) == null);
        assertNull(inS3(BUCKET, ns + "/home/bob/planted.txt"));

        Files.setPosixFilePermissions(cacheDir, java.nio.file.attribute.PosixFilePermissions.fromString("rwxr-xr-x"));
        org.junit.jupiter.api.Assumptions.assumeTrue(dev.chibifs.sys.Syscalls.geteuid() == 0, "chown needs root");
        // reached through a link another user owns: they can point it at a directory of theirs after the check
        Path link = Files.createSymbolicLink(temp.resolve("link-" + ns), cacheDir);
        Files.setAttribute(link, "unix:uid", 4242, java.nio.file.LinkOption.NOFOLLOW_LINKS);
        refused = assertThrows(IOException.class, () -> store(spec, link));
        assertTrue(refused.getMessage().contains(link + " belongs to uid 4242"), refused.getMessage());
        Files.setAttribute(cacheDir, "unix:uid", 4242);
        refused = assertThrows(IOException.class, () -> store(spec, cacheDir));
        assertTrue(refused.getMessage().contains(cacheDir + " belongs to uid 4242"), refused.getMessage());
        assertNull(inS3(BUCKET, ns + "/home/bob/planted.txt"));
    }

    /** A daemon run as root on a home another user owns keeps its caches where only root writes. */
    @Test
    void rootsCachesOfAHomeAnotherUserOwnsAreOutsideIt() throws Exception {
        org.junit.jupiter.api.Assumptions.assumeTrue(dev.chibifs.sys.Syscalls.geteuid() == 0, "chown needs root");
        ChibiHome home = new ChibiHome(Files.createDirectories(temp.resolve("home-" + ns)));
        S3Spec spec = S3Spec.parse("s3://" + BUCKET + "/" + ns);
        assertEquals(home.chibifsDir().resolve("cache").resolve(spec.cacheName()), S3Options.defaultCacheDir(home, spec),
                "root's own home");
        Files.setAttribute(home.dir(), "unix:uid", 4242);
        Path cache = S3Options.defaultCacheDir(home, spec);
        assertEquals(S3Options.ROOT_CACHES, cache.getParent().getParent(), cache.toString());
        assertEquals(spec.cacheName(), cache.getFileName().toString());
    }

    @Test
    void aCleanFileCutShortInTheCacheIsFetchedAgainAndNotUploadedShort() throws Exception {
        String spec = "s3://" + BUCKET + "/" + ns;
        S3Storage a = store(spec, cacheDir);
        a.write(p("/shared/f"), "first version ok!".getBytes(UTF_8));
        a.flushAll();
        long ino = ino(a, "/shared/f");
        a.close(); // a clean stop: the journal says the file is S3's version, 17 bytes, cached
        cut(ino, 3);

        S3Storage again = store(spec, cacheDir);
        assertEquals("first version ok!", new String(again.read(p("/shared/f")), UTF_8));
        try (FileHandle h = again.open(p("/shared/f"), EnumSet.of(OpenFlag.WRITE, OpenFlag.APPEND), 0)) {
            h.write(ByteBuffer.wrap(" appended".getBytes(UTF_8)), 0);
        }
        again.flushAll();
        assertEquals("first version ok! appended", inS3(BUCKET, ns + "/shared/f"));
    }

    @Test
    void aFileBeingRewrittenWhenTheStoreWasKilledIsKeptAsAConflictCopyNotUploadedOverS3s() throws Exception {
        String spec = "s3://" + BUCKET + "/" + ns;
        S3Storage a = store(spec, cacheDir);
        a.write(p("/shared/f"), "the good version on S3".getBytes(UTF_8));
        a.write(p("/shared/log"), "line 1\n".getBytes(UTF_8));
        a.flushAll();
        // open at the kill: a rewrite cut off (no close, so never due), and a log appended to
        FileHandle rewrite = a.open(p("/shared/f"), EnumSet.of(OpenFlag.WRITE, OpenFlag.TRUNCATE), 0);
        rewrite.write(ByteBuffer.wrap("partial-new-".getBytes(UTF_8)), 0);
        FileHandle log = a.open(p("/shared/log"), EnumSet.of(OpenFlag.WRITE, OpenFlag.APPEND), 0);
        log.write(ByteBuffer.wrap("line 2\n".getBytes(UTF_8)), 0);
        a.crash();

        S3Storage again = store(spec, cacheDir);
        again.flushAll();
        assertEquals("the good version on S3", inS3(BUCKET, ns + "/shared/f"));
        assertEquals("partial-new-", inS3(BUCKET, ns + "/shared/f.conflict-a-" + STAMP));
        assertEquals("the good version on S3", new String(again.read(p("/shared/f")), UTF_8));
        assertEquals("line 1\nline 2\n", inS3(BUCKET, ns + "/shared/log"), "appends go up as they are");
    }

    @Test
    void aChangedFileCutShortInTheCacheIsKeptAsAConflictCopyNotUploadedOverS3s() throws Exception {
        String spec = "s3://" + BUCKET + "/" + ns;
        S3Storage a = store(spec, cacheDir);
        a.write(p("/shared/f"), "the good version on S3".getBytes(UTF_8));
        a.flushAll();
        a.write(p("/shared/f"), "a second version, not up yet".getBytes(UTF_8));
        a.write(p("/shared/new"), "a new file, not up yet".getBytes(UTF_8));
        long f = ino(a, "/shared/f");
        long made = ino(a, "/shared/new");
        a.crash();
        cut(f, 3);
        cut(made, 0); // as ext4 leaves a file whose blocks were not written at a power cut

        S3Storage again = store(spec, cacheDir);
        again.flushAll();
        assertEquals("the good version on S3", inS3(BUCKET, ns + "/shared/f"));
        assertEquals("a s", inS3(BUCKET, ns + "/shared/f.conflict-a-" + STAMP));
        assertNull(inS3(BUCKET, ns + "/shared/new"));
        assertEquals("", inS3(BUCKET, ns + "/shared/new.conflict-a-" + STAMP));
        assertEquals("the good version on S3", new String(again.read(p("/shared/f")), UTF_8));
        assertFalse(again.exists(p("/shared/new")));
    }

    @Test
    void aWriterKilledAfterCuttingAFileItReopenedLeavesWhatItWroteAsAConflictCopy() throws Exception {
        String spec = "s3://" + BUCKET + "/" + ns;
        S3Storage a = store(spec, cacheDir);
        a.write(p("/shared/f"), "a long first version, closed".getBytes(UTF_8));
        // reopened while its change waits for the debounce, cut and written, and killed before its close
        FileHandle h = a.open(p("/shared/f"), EnumSet.of(OpenFlag.WRITE), 0);
        h.truncate(0);
        h.write(ByteBuffer.wrap("short".getBytes(UTF_8)), 0);
        a.crash();

        S3Storage again = store(spec, cacheDir);
        again.flushAll();
        // shorter than its record says, but a writer was open: half written, not damaged, and whole
        assertEquals("short", inS3(BUCKET, ns + "/shared/f.conflict-a-" + STAMP));
        assertNull(inS3(BUCKET, ns + "/shared/f"));
    }

    @Test
    void aNewFileBeingWrittenWhenTheStoreWasKilledGoesUpAsAConflictCopyNotUnderItsName() throws Exception {
        String spec = "s3://" + BUCKET + "/" + ns;
        S3Storage a = store(spec, cacheDir);
        a.mkdir(p("/shared"));
        // open at the kill: a report a shell writes with '>', a log made by '>>', a lock file held open
        FileHandle report = a.open(p("/shared/report.md"), EnumSet.of(OpenFlag.WRITE, OpenFlag.CREATE, OpenFlag.TRUNCATE), 0644);
        report.write(ByteBuffer.wrap("line 1 of 100\n".getBytes(UTF_8)), 0);
        FileHandle log = a.open(p("/shared/log"), EnumSet.of(OpenFlag.WRITE, OpenFlag.CREATE, OpenFlag.APPEND), 0644);
        log.write(ByteBuffer.wrap("line 1\n".getBytes(UTF_8)), 0);
        FileHandle lock = a.open(p("/shared/lock"), EnumSet.of(OpenFlag.WRITE, OpenFlag.CREATE), 0644);
        a.crash();

        S3Storage again = store(spec, cacheDir);
        again.flushAll();
        assertNull(inS3(BUCKET, ns + "/shared/report.md"), "never half written under its name");
        assertEquals("line 1 of 100\n", inS3(BUCKET, ns + "/shared/report.md.conflict-a-" + STAMP));
        assertFalse(again.exists(p("/shared/report.md")));
        assertEquals("line 1\n", inS3(BUCKET, ns + "/shared/log"), "appends go up as they are");
        assertEquals("", inS3(BUCKET, ns + "/shared/lock"), "empty, as its open made it");
    }

    /**
     * The cache directory on a 16 MiB ext4 image of its own, loop-mounted (the caller unmounts it
     * lazily); skips unless root, with mkfs.ext4 and python3 (the shutdown ioctl) at hand.
     */
    private void cacheDirOnAnExt4Image() throws Exception {
        dev.chibifs.testing.FuseSupport.requireRoot();
        org.junit.jupiter.api.Assumptions.assumeTrue(run("sh", "-c", "command -v mkfs.ext4 && command -v python3") == 0,
                "no mkfs.ext4 or python3");
        Path image = temp.resolve("cache-" + ns + ".img");
        try (java.io.RandomAccessFile f = new java.io.RandomAccessFile(image.toFile(), "rw")) {
            f.setLength(16 << 20);
        }
        assertEquals(0, run("mkfs.ext4", "-q", image.toString()));
        Files.createDirectories(cacheDir);
        assertEquals(0, run("mount", "-o", "loop", image.toString(), cacheDir.toString()));
        Files.setPosixFilePermissions(cacheDir, java.nio.file.attribute.PosixFilePermissions.fromString("rwx------"));
    }

    /** The cache directory's ext4 shut down (EXT4_IOC_SHUTDOWN), as a dying disk fails: every call there EIO. */
    private void shutDownCacheDir() throws Exception {
        assertEquals(0, run("python3", "-c", "import fcntl,os,struct; fcntl.ioctl(os.open('" + cacheDir
                + "', os.O_RDONLY), 0x8004587d, struct.pack('I', 0))"));
    }

}
