package dev.chibifs.store.s3;

import dev.chibifs.testing.MutableClock;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.chibifs.path.VfsPath;
import dev.chibifs.store.ContentHash;
import dev.chibifs.store.Entry;
import dev.chibifs.store.EtagMismatchException;
import dev.chibifs.store.EntryKind;
import dev.chibifs.store.FileHandle;
import dev.chibifs.store.Metadata;
import dev.chibifs.store.OpenFlag;
import dev.chibifs.store.Precondition;
import dev.chibifs.store.XattrMode;
import dev.chibifs.sys.Errors;
import dev.chibifs.sys.Linux;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two S3 stores with cache directories of their own over one bucket stand in for two hosts: the
 * write-back, what one host sees of the other, conflicts, a kill and restart, an unreachable S3.
 */
@Timeout(120)
class S3HostsTest {

    private static final String BUCKET = "hosts";

    @TempDir
    static Path temp;
    @RegisterExtension
    static final S3Server server = S3Server.perClass(BUCKET);

    private S3Namespace ns;
    private String spec;
    private String prefix;
    private Bucket raw;

    @BeforeEach
    void newPrefix() {
        ns = new S3Namespace(BUCKET, server);
        prefix = ns.prefix;
        spec = ns.spec;
        raw = ns.raw;
    }

    @AfterEach
    void closeStores() throws IOException {
        ns.close();
    }

    private S3Options options(String host) {
        return S3Options.defaults(temp.resolve(prefix + "-" + host), server.env()).withHost(host);
    }

    private S3Storage host(S3Options o) throws IOException {
        return ns.open(o);
    }

    /**
     * A host that fetches nothing a listing shows and believes its listings for minutes: it does not
     * see another host's new version of a file before it acts on the one it listed.
     */
    private S3Storage hostHoldingItsListings(String host) throws IOException {
        return host(options(host).withFlushAfter(Duration.ZERO).withPrefetchBelow(0).withValidity(Duration.ofMinutes(5)));
    }

    private static MutableClock startClock() {
        return S3Namespace.startClock();
    }

    private static VfsPath p(String s) {
        return VfsPath.of(s);
    }

    private static void put(S3Storage s, String path, String content) throws IOException {
        s.mkdir(p(path).parent());
        try (FileHandle h = s.open(p(path), EnumSet.of(OpenFlag.WRITE, OpenFlag.CREATE, OpenFlag.TRUNCATE), 0644)) {
            h.write(ByteBuffer.wrap(content.getBytes(UTF_8)), 0);
        }
    }

    private static String text(S3Storage s, String path) throws IOException {
        return new String(s.read(p(path)), UTF_8);
    }

    /** What S3 itself holds under {@code key} (below the test's prefix), or null. */
    private String inS3(String key) throws IOException {
        Path to = temp.resolve("get-" + System.nanoTime());
        Bucket.Head h = raw.get(prefix + "/" + key, to);
        return h == null ? null : Files.readString(to);
    }

    /**
     * A tester's rename of a directory of 1,000 files on host A deleted the lines host B wrote into 7
     * of them between A's check of the old names and its delete (0.3-0.7 s apart against s3proxy).
     * Where S3 takes conditional deletes (AWS, Ceph), each delete names the version A saw.
     */
    @Test
    void aDirectoryMovedAwayKeepsAFileAnotherHostRewroteBetweenTheCheckAndTheDelete() throws Exception {
        server.takeConditionalDeletes(true);
        try {
            S3Storage a = host(options("a").withFlushAfter(Duration.ZERO));
            for (int i = 0; i < 10; i++) {
                put(a, "/shared/d/f" + i, "base\n");
            }
            a.flushAll();
            String key = prefix + "/shared/d/f3";
            server.beforeDeleteObjects(() -> {
                try {
                    raw.put(key, "base\nb's edit\n".getBytes(UTF_8), Map.of(), raw.head(key).etag());
                } catch (IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            });
            a.rename(p("/shared/d"), p("/shared/d2"));
            a.flushAll();
            assertEquals("base\nb's edit\n", inS3("shared/d/f3"), "written after a's check: kept");
            assertEquals("base\n", inS3("shared/d2/f3"));
            assertNull(inS3("shared/d/f4"));
        } finally {
            server.beforeDeleteObjects(null);
            server.takeConditionalDeletes(false);
        }
    }

    @Test
    void anAttributeChangedElsewhereBeforeTheUploaderListedAgainShowsThere() throws Exception {
        // host a uploads and looks no more; b changes the attributes alone: a's first listing after
        // shows a time it never listed, later than its own upload
        S3Storage a = host(options("a").withFlushAfter(Duration.ZERO));
        S3Storage b = host(options("b").withFlushAfter(Duration.ZERO).withValidity(Duration.ZERO));
        put(a, "/shared/p/m.c", "int main(){return 0;}\n");
        a.flushAll();
        Instant uploaded = Instant.now();
        FileTime touched = FileTime.from(Instant.parse("2030-01-02T03:04:05Z"));
        assertEquals(0644, b.metadata(p("/shared/p/m.c")).mode() & 0777);
        // S3 lists the time to the second: b's put shows as later than a's upload from the second
        // after the one S3 answered the upload in (with half a second to spare)
        assertTrue(await(Duration.ofSeconds(5), () -> pastTheSecondAfter(uploaded.plusMillis(500))));
        b.setTimes(p("/shared/p/m.c"), null, touched);
        b.setExecutable(p("/shared/p/m.c"), 0755);
        b.flushAll();
        assertTrue(await(Duration.ofSeconds(5), () -> a.metadata(p("/shared/p/m.c")).modified().equals(touched)),
                "a sees b's touch: " + a.metadata(p("/shared/p/m.c")).modified());
        assertEquals(0755, a.metadata(p("/shared/p/m.c")).mode() & 0777);
    }

    @Test
    void anUploaderWhoseClockRunsAheadOfS3SeesAnotherHostsAttributeChange() throws Exception {
        // S3's clock ten minutes behind the hosts' (a host ten minutes ahead of S3): a's own upload
        // is judged by when S3 answered it, so b's chmod a few seconds later by S3's clock shows on a
        server.skewClock(Duration.ofMinutes(-10));
        try {
            S3Storage a = host(options("a").withFlushAfter(Duration.ZERO));
            S3Storage b = host(options("b").withFlushAfter(Duration.ZERO).withValidity(Duration.ZERO));
            put(a, "/shared/p/run.sh", "echo hi\n");
            a.flushAll();
            assertEquals(0644, b.metadata(p("/shared/p/run.sh")).mode() & 0777);
            server.skewClock(Duration.ofMinutes(-10).plusSeconds(5)); // five seconds pass on S3, none here
            b.setExecutable(p("/shared/p/run.sh"), 0755);
            b.flushAll();
            assertTrue(await(Duration.ofSeconds(5), () -> (a.metadata(p("/shared/p/run.sh")).mode() & 0777) == 0755),
                    "a sees b's chmod: " + Integer.toOctalString(a.metadata(p("/shared/p/run.sh")).mode()));
        } finally {
            server.skewClock(Duration.ZERO);
        }
    }

    /**
     * Whether an object put now gets a LastModified second later than {@code modified}'s. Not as soon
     * as the second turns: s3proxy takes the time from its file's mtime, which Linux stamps from a
     * coarse clock a tick behind (a put just past a second's start was stamped within the second
     * before: seen on CI), so with a margin of many ticks.
     */
    private static boolean pastTheSecondAfter(Instant modified) {
        return Instant.now().minusMillis(200).getEpochSecond() > modified.getEpochSecond();
    }

    /** Waits for {@code condition} until {@code limit}, looking every few milliseconds; false if it never held. */
    private static boolean await(Duration limit, Callable<Boolean> condition) throws Exception {
        long end = System.nanoTime() + limit.toNanos();
        while (System.nanoTime() < end) {
            if (condition.call()) {
                return true;
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(5));
        }
        return condition.call();
    }

    @Test
    void aFileStillOpenForWritingDoesNotGoUpHalfWritten() throws Exception {
        // a file made by its open (and one changed before it), written longer than the debounce:
        // its upload waits for the last close (S3MountTest's 70 MiB file went up twice on a loaded host)
        MutableClock clock = startClock();
        S3Storage a = host(options("a").withClock(clock, false));
        a.mkdir(p("/shared"));
        a.write(p("/shared/chmodded"), "old".getBytes(UTF_8));
        a.flushAll();
        a.setExecutable(p("/shared/chmodded"), 0755);
        for (String name : List.of("made", "chmodded")) {
            try (FileHandle h = a.open(p("/shared/" + name), EnumSet.of(OpenFlag.WRITE, OpenFlag.CREATE), 0644)) {
                h.write(ByteBuffer.wrap("first half ".getBytes(UTF_8)), 0);
                clock.advance(Duration.ofSeconds(30));
                a.flushDue();
                assertEquals(name.equals("made") ? null : "old", inS3("shared/" + name), name + " went up while open");
                h.write(ByteBuffer.wrap("second half".getBytes(UTF_8)), 11);
            }
            clock.advance(Duration.ofSeconds(2));
            a.flushDue();
            assertEquals("first half second half", inS3("shared/" + name), name);
        }
    }

    @Test
    void aFileClosedDirtyGoesUpTwoSecondsAfterItsLastCloseAndShowsHereAtOnce() throws Exception {
        MutableClock clock = startClock();
        S3Storage a = host(options("a").withClock(clock, false));
        a.mkdir(p("/shared"));
        put(a, "/shared/tasks.md", "- one\n");
        assertEquals(6, a.metadata(p("/shared/tasks.md")).size());
        assertEquals(List.of(new Entry("tasks.md", dev.chibifs.store.EntryKind.FILE)), a.list(p("/shared")));
        a.flushDue();
        assertNull(inS3("shared/tasks.md"), "uploaded before the debounce");
        assertEquals("", inS3("shared/"), "a new directory's marker goes up at once");

        clock.advance(Duration.ofMillis(1500));
        a.append(p("/shared/tasks.md"), "- two\n".getBytes(UTF_8)); // closed again: the debounce starts over
        clock.advance(Duration.ofMillis(1500));
        a.flushDue();
        assertNull(inS3("shared/tasks.md"), "uploaded before 2 s after the last close");
        clock.advance(Duration.ofMillis(500));
        a.flushDue();
        assertEquals("- one\n- two\n", inS3("shared/tasks.md"));
        assertEquals(0, a.pendingChanges());
    }

    @Test
    void anEtagIsComputedOncePerChangeAndTravelsWithTheObject() throws Exception {
        MutableClock clock = startClock();
        S3Options o = options("a").withClock(clock, false);
        S3Storage a = host(o);
        S3Options ob = options("b").withClock(clock, false);
        S3Storage b = host(ob);
        a.write(p("/shared/e"), "content".getBytes(UTF_8));
        String etag = a.etag(p("/shared/e"));
        assertEquals(ContentHash.of("content".getBytes(UTF_8)), etag);
        // the hash is remembered, not read again: content changed behind the store's back goes unseen
        try (java.util.stream.Stream<Path> files = Files.list(o.cacheDir().resolve("data"))) {
            for (Path f : files.toList()) {
                Files.writeString(f, "tampered");
            }
        }
        assertEquals(etag, a.etag(p("/shared/e")));
        // larger than what a listing fetches whole with its attributes (S3Options.DEFAULT_PREFETCH_BELOW)
        byte[] other = ("other" + "x".repeat((int) S3Options.DEFAULT_PREFETCH_BELOW)).getBytes(UTF_8);
        a.write(p("/shared/f"), other);
        a.flushAll();
        // another host learns it from the object's metadata, without the content
        assertEquals(ContentHash.of(other), b.etag(p("/shared/f")));
        try (java.util.stream.Stream<Path> files = Files.list(ob.cacheDir().resolve("data"))) {
            // (e, small, may have come with its attributes from b's listing)
            assertEquals(List.of(), files.filter(f -> f.toFile().length() == other.length).toList());
        }
    }

    @Test
    void fsyncUploadsAtOnce() throws Exception {
        MutableClock clock = startClock();
        S3Storage a = host(options("a").withClock(clock, false));
        a.mkdir(p("/shared/deep"));
        try (FileHandle h = a.open(p("/shared/deep/f"), EnumSet.of(OpenFlag.WRITE, OpenFlag.CREATE), 0644)) {
            h.write(ByteBuffer.wrap("synced".getBytes(UTF_8)), 0);
            h.sync(false);
            assertEquals("synced", inS3("shared/deep/f"));
        }
    }

    /** Runs {@code change} on a thread of its own; its future. */
    private static java.util.concurrent.CompletableFuture<Void> aside(Meanwhile change) {
        return java.util.concurrent.CompletableFuture.runAsync(() -> {
            try {
                change.run();
            } catch (Exception e) {
                throw new java.util.concurrent.CompletionException(e);
            }
        });
    }

    /** What a test checks while the pass is still held, once what ran beside it has ended. */
    @FunctionalInterface
    private interface WhileHeld {
        void check(java.util.concurrent.CompletableFuture<Void> pass) throws Exception;
    }

    /**
     * Holds a write-back pass of {@code a} at its PUT of {@code key} and runs {@code meanwhile} beside
     * it. With {@code whileHeld}, {@code meanwhile} must end while the PUT is held (bounded, no sleep:
     * had it to wait for that PUT, which only this thread lets go, it would time out), and then
     * {@code whileHeld} checks; without, the PUT is let go first. Waits for both.
     */
    private void besideAHeldPass(S3Storage a, String key, Meanwhile meanwhile, WhileHeld whileHeld) throws Exception {
        S3Server.HeldRequests held = holdPut(key, 1);
        try {
            var pass = aside(a::flushAll);
            assertTrue(held.reached().await(30, TimeUnit.SECONDS), "the pass's PUT of " + key + " came");
            var beside = aside(meanwhile);
            if (whileHeld != null) {
                beside.get(30, TimeUnit.SECONDS);
                whileHeld.check(pass);
            }
            held.release().countDown();
            beside.get(30, TimeUnit.SECONDS);
            pass.get(30, TimeUnit.SECONDS);
        } finally {
            held.release().countDown();
            server.holdPuts(n -> false, 0);
        }
    }

    private static void writeAndSync(S3Storage s, String path, String content) throws IOException {
        try (FileHandle h = s.open(p(path), EnumSet.of(OpenFlag.WRITE, OpenFlag.CREATE, OpenFlag.TRUNCATE), 0644)) {
            h.write(ByteBuffer.wrap(content.getBytes(UTF_8)), 0);
            h.sync(false);
        }
    }

    @Test
    void anFsyncDoesNotWaitForAnotherFilesUpload() throws Exception {
        // a tester's 2-byte fsync waited 70 s while a pass uploaded a 2 GiB file (a SQLite commit:
        // 10.9 s, not 0.39): the pass's PUT of the big file is held here for as long as the fsync takes
        S3Storage a = host(options("a").withClock(startClock(), false));
        a.mkdir(p("/shared"));
        a.flushAll();
        put(a, "/shared/big", "big");
        besideAHeldPass(a, "shared/big", () -> writeAndSync(a, "/shared/f", "x\n"),
                pass -> {
                    assertEquals("x\n", inS3("shared/f"));
                    assertFalse(pass.isDone(), "the big file is still going up");
                });
        assertEquals("big", inS3("shared/big"));
        assertEquals(0, a.pendingChanges());
    }

    @Test
    void anFsyncOfAFileGoingUpWaitsForThatUploadThenSendsItsOwn() throws Exception {
        // one upload of a file at a time: two at once, each conditional on the version before, and the
        // second meets the first's object (412) and keeps this host's own content as a conflict copy
        S3Storage a = host(options("a").withClock(startClock(), false));
        a.mkdir(p("/shared"));
        a.flushAll();
        put(a, "/shared/f", "one");
        besideAHeldPass(a, "shared/f", () -> writeAndSync(a, "/shared/f", "two"), null);
        assertEquals("two", inS3("shared/f"));
        a.flushAll();
        assertEquals("two", inS3("shared/f"));
        assertEquals(List.of("f"), a.list(p("/shared")).stream().map(Entry::name).toList(), "no conflict copy");
        assertEquals(0, a.pendingChanges());
    }

    @Test
    void anFsyncOfANameAnotherFileIsGoingUpUnderWaitsForThatUpload() throws Exception {
        // the pass sends x; meanwhile x is renamed to y and a new file made at x and fsynced: its PUT
        // and the pass's, both to key x, must not cross (the one behind meets the other's object)
        S3Storage a = host(options("a").withClock(startClock(), false));
        a.mkdir(p("/shared"));
        a.flushAll();
        put(a, "/shared/x", "old");
        besideAHeldPass(a, "shared/x", () -> {
            a.rename(p("/shared/x"), p("/shared/y"));
            writeAndSync(a, "/shared/x", "new");
        }, null);
        a.flushAll();
        assertEquals("new", inS3("shared/x"));
        assertEquals("old", inS3("shared/y"));
        assertEquals(List.of("x", "y"), a.list(p("/shared")).stream().map(Entry::name).sorted().toList(), "no conflict copy");
        assertEquals(0, a.pendingChanges());
    }

    @Test
    void theStoreSaysWhatWaitsToGoUpAndWhatWentForUmountToFollow() throws Exception {
        S3Storage a = host(options("a").withClock(startClock(), false));
        a.mkdir(p("/shared"));
        a.flushAll();
        long sentBefore = a.uploads().sentBytes();
        put(a, "/shared/f", "12345");
        put(a, "/shared/g", "123");
        a.mkdir(p("/shared/d"));
        long readBefore = a.uploads().readBytes();
        assertEquals(new dev.chibifs.store.Storage.Uploads(3, 8, sentBefore, readBefore), a.uploads(), "two files and a directory");
        a.flushAll();
        assertEquals(new dev.chibifs.store.Storage.Uploads(0, 0, sentBefore + 8, readBefore + 8), a.uploads(), "each read once, to hash it");
    }

    /**
     * A file written through a handle once its name is gone (a log removed while its writer runs on)
     * goes nowhere: it is not among what waits. It was, once written after its last upload: sync
     * returned 0, and stats said "to send: 1" with its bytes until a remount.
     */
    @Test
    void aFileWrittenAfterItsNameWentIsNothingToSendAndSyncLeavesNothingWaiting() throws Exception {
        MutableClock clock = startClock();
        S3Options o = options("a").withClock(clock, false);
        S3Storage a = host(o);
        a.mkdir(p("/shared"));
        a.write(p("/shared/log"), "line 1\n".getBytes(UTF_8));
        a.flushAll();
        dev.chibifs.store.Storage.Uploads none = a.uploads();
        try (FileHandle h = a.open(p("/shared/log"), EnumSet.of(OpenFlag.WRITE, OpenFlag.APPEND), 0644)) {
            a.removeFile(p("/shared/log"));
            a.flushAll();
            assertEquals(none, a.uploads());
            h.write(ByteBuffer.wrap("line 2\n".getBytes(UTF_8)), 7);
            assertEquals(0, a.pendingChanges(), "written after its name went");
            h.truncate(3);
            assertEquals(0, a.pendingChanges(), "cut short after its name went");
        }
        a.flushAll();
        assertEquals(none, a.uploads());
        assertTrue(a.state().contains("; to send: 0;"), a.state());
        assertNull(inS3("shared/log"));
        a.crash();
        assertEquals(0, host(o).pendingChanges(), "as the journal says");
    }

    @Test
    void anUploadThatLandedThoughItsEveryAttemptFailedIsNoConflictWithItself() throws Exception {
        // xfstests on an S3 store under load: an fsync's PUT landed though the client saw every
        // attempt fail; the next upload, of newer content, met this host's own object (412) and
        // kept its content as a conflict copy of itself
        MutableClock clock = startClock();
        S3Storage a = host(options("a").withClock(clock, false));
        a.write(p("/shared/log"), "one".getBytes(UTF_8));
        a.flushAll();
        server.failPuts(Integer.MAX_VALUE, true);
        try (FileHandle h = a.open(p("/shared/log"), EnumSet.of(OpenFlag.WRITE), 0644)) {
            h.write(ByteBuffer.wrap("two".getBytes(UTF_8)), 0);
            assertThrows(IOException.class, () -> h.sync(false), "every attempt failed, as far as the client knows");
        }
        server.failPuts(0, false);
        assertEquals("two", inS3("shared/log"), "though the first one landed");
        put(a, "/shared/log", "three");
        a.flushAll();
        assertEquals("three", inS3("shared/log"));
        assertEquals(List.of("log"), a.list(p("/shared")).stream().map(e -> e.name()).toList(), "no conflict copy");
        assertEquals(0, a.pendingChanges());
    }

    @Test
    void anUploadThatLandedWithItsAnswerLostCountsItsBytesAsGoneUp() throws Exception {
        // chibifs stats said 0.0 MiB up for a 2.4 MiB file whose PUT's answer was lost under load
        S3Storage a = host(options("a").withClock(startClock(), false));
        a.mkdir(p("/shared"));
        a.flushAll();
        a.write(p("/shared/model.bin"), randomBytes(1 << 20, 3));
        server.failPuts(Integer.MAX_VALUE, true);
        try {
            assertThrows(IOException.class, a::flushAll, "the PUT landed; the client saw it fail");
        } finally {
            server.failPuts(0, false);
        }
        a.flushAll(); // meets its own object: no conflict, and no second upload
        assertTrue(a.state().contains("put-answer-lost=1") && a.state().contains("content: 0.0 MiB down, 1.0 MiB up;"), a.state());
    }

    @Test
    void filesUploadedInPartsAreReadWholeOnTheOtherHostAndConflictAsOnePutWould() throws Exception {
        MutableClock clock = startClock();
        S3Storage a = hostUploadingInParts(options("a").withClock(clock, false));
        S3Storage b = hostUploadingInParts(options("b").withClock(clock, false));
        byte[] base = randomBytes(2 * Bucket.MIN_PART_BYTES + 777, 1);
        a.mkdir(p("/shared"));
        a.write(p("/shared/model.bin"), base);
        a.flushAll();
        assertArrayEquals(base, b.read(p("/shared/model.bin")));

        byte[] ours = randomBytes(Bucket.MIN_PART_BYTES + 1, 2);
        byte[] theirs = randomBytes(Bucket.MIN_PART_BYTES + 2, 3);
        a.write(p("/shared/model.bin"), theirs);
        b.write(p("/shared/model.bin"), ours);
        a.flushAll();
        b.flushAll(); // its completion finds S3 changed since b last looked

        String stamp = "20260102T030405Z";
        assertArrayEquals(theirs, inS3Bytes("shared/model.bin"));
        assertArrayEquals(ours, inS3Bytes("shared/model.bin.conflict-b-" + stamp));
        assertArrayEquals(theirs, b.read(p("/shared/model.bin")));
        assertEquals(0, a.pendingChanges());
        assertEquals(0, b.pendingChanges());
        assertEquals(0, raw.uploadsUnderway(prefix + "/"), "the refused upload's parts were given up");
    }

    @Test
    void opensOfAFileNotCachedYetWaitForOneDownload() throws Exception {
        S3Storage a = host(options("a"));
        byte[] content = randomBytes(S3Options.DEFAULT_PREFETCH_BELOW * 8, 4);
        a.mkdir(p("/shared"));
        a.write(p("/shared/data.bin"), content);
        a.flushAll();
        S3Storage b = host(options("b"));
        assertEquals(content.length, b.metadata(p("/shared/data.bin")).size()); // known here, not yet fetched
        long getsBefore = b.requests().getOrDefault("get", 0L);

        S3Server.HeldGet held = server.holdNextGet();
        int readers = 6;
        var pool = java.util.concurrent.Executors.newFixedThreadPool(readers);
        try {
            List<java.util.concurrent.Future<byte[]>> reads = new ArrayList<>();
            reads.add(pool.submit(() -> b.read(p("/shared/data.bin"))));
            held.reached().await();
            List<Thread> waiting = new ArrayList<>();
            for (int i = 1; i < readers; i++) {
                reads.add(pool.submit(() -> {
                    synchronized (waiting) {
                        waiting.add(Thread.currentThread());
                    }
                    return b.read(p("/shared/data.bin"));
                }));
            }
            // every other reader parks on the download under way, or sends a GET of its own
            await(Duration.ofSeconds(10), () -> {
                synchronized (waiting) {
                    return waiting.size() == readers - 1 && waiting.stream().allMatch(t -> t.getState() == Thread.State.WAITING);
                }
            });
            held.release().countDown();
            for (var r : reads) {
                assertArrayEquals(content, r.get());
            }
        } finally {
            held.release().countDown();
            pool.shutdownNow();
        }
        assertEquals(1, b.requests().getOrDefault("get", 0L) - getsBefore, b.requests().toString());
    }

    @Test
    void aLargeFileAnotherHostMadeIsReadFromItsStartWhileItsLaterRangesAreComing() throws Exception {
        S3Storage a = hostUploadingInParts(options("a"));
        byte[] content = randomBytes(3 * Bucket.MIN_PART_BYTES + 99, 5);
        a.mkdir(p("/shared"));
        a.write(p("/shared/weights.bin"), content);
        a.flushAll();
        S3Storage b = hostUploadingInParts(options("b"));
        assertEquals(content.length, b.metadata(p("/shared/weights.bin")).size());
        long getsBefore = b.requests().getOrDefault("get", 0L);

        S3Server.HeldGet second = server.holdGetAfter(1); // the open's own first range goes by
        try {
            FileHandle h = within20s(() -> b.open(p("/shared/weights.bin"), EnumSet.of(OpenFlag.READ), 0));
            try (h) {
                ByteBuffer start = ByteBuffer.allocate(4096);
                assertEquals(4096, h.read(start, 0), "the first range is in while the second is held");
                assertArrayEquals(java.util.Arrays.copyOf(content, 4096), start.array());
                assertEquals(content.length, h.size());
                second.release().countDown();
                assertArrayEquals(content, readWhole(h, content.length));
            }
        } finally {
            second.release().countDown();
        }
        // the download is kept (a read meanwhile waits for it): the next open asks S3 nothing
        assertArrayEquals(content, b.read(p("/shared/weights.bin")));
        assertEquals(4, b.requests().getOrDefault("get", 0L) - getsBefore, b.requests().toString());
    }

    @Test
    void aReadNearTheEndOfALargeFileTakesItsRangeBeforeThoseNoneHasAskedYet() throws Exception {
        // seven ranges: the open's own, five held in the server (four hold every task of the pool, the
        // fifth waits behind them), and the last, which the read near the end asks itself
        long part = Bucket.MIN_PART_BYTES;
        S3Storage a = hostUploadingInParts(options("a"));
        byte[] content = randomBytes(6 * part + 1000, 8);
        a.mkdir(p("/shared"));
        a.write(p("/shared/archive.zip"), content);
        a.flushAll();
        S3Storage b = hostUploadingInParts(options("b"));
        assertEquals(content.length, b.metadata(p("/shared/archive.zip")).size());

        S3Server.HeldRequests middle = server.holdRanges((name, from) -> from > 0 && from < 6 * part, 4);
        try (FileHandle h = b.open(p("/shared/archive.zip"), EnumSet.of(OpenFlag.READ), 0)) {
            middle.reached().await();
            ByteBuffer tail = ByteBuffer.allocate(100);
            int read = within20s(() -> h.read(tail, content.length - 100));
            assertEquals(100, read);
            assertArrayEquals(java.util.Arrays.copyOfRange(content, content.length - 100, content.length), tail.array());
            middle.release().countDown();
            assertArrayEquals(content, readWhole(h, content.length));
        } finally {
            middle.release().countDown();
        }
    }

    @Test
    void theDownloadsOfTwoLargeFilesTakeTurnsInThePool() throws Exception {
        long part = Bucket.MIN_PART_BYTES;
        S3Storage a = hostUploadingInParts(options("a"));
        byte[] large = randomBytes(10 * part + 1, 9);
        byte[] second = randomBytes(2 * part + 1, 10);
        a.mkdir(p("/shared"));
        a.write(p("/shared/large.bin"), large);
        a.write(p("/shared/second.bin"), second);
        a.flushAll();
        Bucket bucketB = Bucket.connect(S3Spec.parse(spec), server.env());
        bucketB.movedInParts(part, part);
        S3Storage b = S3Storage.open(S3Spec.parse(spec), bucketB, options("b"));
        ns.opened(b);
        assertEquals(large.length, b.metadata(p("/shared/large.bin")).size());
        assertEquals(second.length, b.metadata(p("/shared/second.bin")).size());

        // ranges 1-4 of the large file hold every thread of b's pool
        S3Server.HeldRequests held = server.holdRanges((name, from) -> name.endsWith("large.bin") && from > 0 && from < 5 * part, 4);
        try (FileHandle h = b.open(p("/shared/large.bin"), EnumSet.of(OpenFlag.READ), 0)) {
            held.reached().await();
            int waitingBefore = bucketB.partsWaiting();
            var read = java.util.concurrent.CompletableFuture.supplyAsync(() -> {
                try {
                    return b.read(p("/shared/second.bin"));
                } catch (IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            });
            // the second file's first range came in its reader's thread; its two others wait for the pool
            assertTrue(await(Duration.ofSeconds(10), () -> bucketB.partsWaiting() == waitingBefore + 2));
            held.release().countDown();
            assertArrayEquals(second, read.get(20, java.util.concurrent.TimeUnit.SECONDS));
            List<String> asked = server.rangesAsked();
            String lastOfSecond = prefix + "/shared/second.bin@" + 2 * part;
            String lastOfLarge = prefix + "/shared/large.bin@" + 10 * part;
            assertTrue(asked.contains(lastOfSecond) && (!asked.contains(lastOfLarge)
                    || asked.indexOf(lastOfSecond) < asked.indexOf(lastOfLarge)),
                    "the second file's ranges waited for all of the large one's: " + asked);
        } finally {
            held.release().countDown();
        }
    }

    @Test
    void aLargeFileReplacedOnS3WhileItIsReadSaysStaleAndTheNextOpenReadsTheNewVersion() throws Exception {
        S3Storage a = hostUploadingInParts(options("a"));
        // two ranges: the open's own, and the one held, which holds the end
        byte[] before = randomBytes(Bucket.MIN_PART_BYTES + 5000, 6);
        byte[] after = randomBytes(Bucket.MIN_PART_BYTES + 7000, 7);
        a.mkdir(p("/shared"));
        a.write(p("/shared/weights.bin"), before);
        a.flushAll();
        S3Storage b = hostUploadingInParts(options("b").withValidity(Duration.ZERO));
        assertEquals(before.length, b.metadata(p("/shared/weights.bin")).size());

        S3Server.HeldGet second = server.holdGetAfter(1);
        try (FileHandle h = within20s(() -> b.open(p("/shared/weights.bin"), EnumSet.of(OpenFlag.READ), 0))) {
            second.reached().await();
            a.write(p("/shared/weights.bin"), after);
            a.flushAll();
            second.release().countDown();
            ByteBuffer start = ByteBuffer.allocate(100);
            h.read(start, 0);
            assertArrayEquals(java.util.Arrays.copyOf(before, 100), start.array(), "what came before the change");
            IOException stale = assertThrows(IOException.class, () -> h.read(ByteBuffer.allocate(100), before.length - 100));
            assertEquals(Linux.ESTALE, Errors.errno(stale), stale.toString());
        } finally {
            second.release().countDown();
        }
        assertTrue(await(Duration.ofSeconds(10), () -> java.util.Arrays.equals(after, b.read(p("/shared/weights.bin")))));
    }

    @Test
    void anUploadInPartsAHostLeftADayAgoIsAbortedBeforeTheNextGoesUp() throws Exception {
        // s3proxy says every upload began when it did: the days pass on S3's clock (an upload's age)
        // and on the store's (how often it looks)
        MutableClock clock = new MutableClock(Instant.now());
        raw.beginUpload(prefix + "/shared/orphan.bin"); // a host that stopped mid-upload
        S3Storage a = hostUploadingInParts(options("a").withClock(clock, false));
        try {
            a.mkdir(p("/shared"));
            a.write(p("/shared/first.bin"), randomBytes(Bucket.MIN_PART_BYTES + 1, 11));
            a.flushAll();
            assertEquals(1, raw.uploadsUnderway(prefix + "/"), "begun less than a day ago: maybe another host's, under way");
            clock.advance(Duration.ofHours(12));
            server.skewClock(Duration.ofHours(12));
            a.write(p("/shared/second.bin"), randomBytes(Bucket.MIN_PART_BYTES + 1, 12));
            a.flushAll();
            assertEquals(1L, a.requests().get("list-uploads"), "looked for once a day: " + a.requests());
            clock.advance(Duration.ofHours(13));
            server.skewClock(Duration.ofHours(25));
            a.write(p("/shared/third.bin"), randomBytes(Bucket.MIN_PART_BYTES + 1, 13));
            a.flushAll();
            assertEquals(0, raw.uploadsUnderway(prefix + "/"));
            assertEquals(2L, a.requests().get("list-uploads"), a.requests().toString());
        } finally {
            server.skewClock(Duration.ZERO);
        }
    }

    @Test
    void aHostWhoseClockRunsADayAheadAbortsNoUploadUnderWay() throws Exception {
        // another host's upload in parts, begun a moment ago by S3's clock and still going: a host
        // whose clock is 25 hours ahead takes it for one left a day ago only if it judges by its own
        raw.beginUpload(prefix + "/shared/big.bin");
        S3Storage a = hostUploadingInParts(options("a").withClock(new MutableClock(Instant.now().plus(Duration.ofHours(25))), false));
        a.mkdir(p("/shared"));
        a.write(p("/shared/mine.bin"), randomBytes(Bucket.MIN_PART_BYTES + 1, 14));
        a.flushAll();
        assertEquals(1L, a.requests().get("list-uploads"), "looked for: " + a.requests());
        assertEquals(1, raw.uploadsUnderway(prefix + "/"), "the other host's upload under way is left alone");
    }

    /** What {@code task} returns, which must come within 20 s: a read that waits for what is held fails the test, not hangs it. */
    private static <T> T within20s(Callable<T> task) throws Exception {
        return java.util.concurrent.CompletableFuture.supplyAsync(() -> {
            try {
                return task.call();
            } catch (Exception e) {
                throw new java.util.concurrent.CompletionException(e);
            }
        }).get(20, java.util.concurrent.TimeUnit.SECONDS);
    }

    /**
     * A file that goes up in parts is read where it is, not copied first (a 6 GiB file would need
     * 6 GiB more of cache): a write while it goes up aborts that upload, which nobody saw, and the
     * next attempt sends the file as it is now.
     */
    @Test
    @Timeout(value = 120, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
    void aLargeFileWrittenToWhileItGoesUpIsSentAgainAsItIsNowWithoutACopy() throws Exception {
        long part = Bucket.MIN_PART_BYTES;
        S3Options o = options("a");
        S3Storage a = hostUploadingInParts(o);
        byte[] content = randomBytes(3 * part + 1, 11);
        whileItsSecondPartIsHeld(a, "/shared/big.bin", content, () -> {
            try (java.util.stream.Stream<Path> copies = Files.list(o.cacheDir().resolve("upload"))) {
                assertEquals(List.of(), copies.toList(), "no copy of the file in the cache while it goes up");
            }
            try (FileHandle h = a.open(p("/shared/big.bin"), EnumSet.of(OpenFlag.WRITE), 0)) {
                h.write(ByteBuffer.wrap("changed".getBytes(UTF_8)), 0);
            }
        });
        System.arraycopy("changed".getBytes(UTF_8), 0, content, 0, 7);
        assertArrayEquals(content, inS3Bytes("shared/big.bin"), "the file as it is now, whole");
        assertEquals(1L, a.requests().get("abort-upload"), "the upload read before the write was given up");
        assertEquals(1L, a.requests().get("complete-upload"));
    }

    @Test
    @Timeout(value = 120, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
    void aLargeFileRemovedWhileItGoesUpIsNeitherOnS3NorAFailure() throws Exception {
        S3Storage a = hostUploadingInParts(options("a"));
        whileItsSecondPartIsHeld(a, "/shared/gone.bin", randomBytes(3 * Bucket.MIN_PART_BYTES + 1, 12),
                () -> a.removeFile(p("/shared/gone.bin")));
        assertNull(raw.head(prefix + "/shared/gone.bin"), "the upload was given up before its completion");
        assertTrue(a.state().contains(": answers;"), a.state());
        assertEquals(1L, a.requests().get("abort-upload"));
    }

    /**
     * A truncate cuts a part's body short as it goes up (parts larger than the loopback's socket
     * buffers, so the held part's body is mostly unread): the upload starts over, and S3 is not
     * taken for away.
     */
    @Test
    @Timeout(value = 120, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
    void aLargeFileCutShortWhileItGoesUpIsSentAgainAndS3StillAnswers() throws Exception {
        long part = 16L << 20;
        S3Storage a = hostUploadingInParts(options("a"), part);
        byte[] content = randomBytes(2 * part + 1, 13);
        whileItsSecondPartIsHeld(a, "/shared/cut.bin", content, () -> {
            try (FileHandle h = a.open(p("/shared/cut.bin"), EnumSet.of(OpenFlag.WRITE), 0)) {
                h.truncate(part + 100);
            }
        });
        assertTrue(a.state().contains(": answers;"), a.state());
        assertArrayEquals(java.util.Arrays.copyOf(content, (int) (part + 100)), inS3Bytes("shared/cut.bin"));
    }

    @Test
    void anUploadInPartsAbortedByAnotherHostGoesUpAgainWithNoOutage() throws Exception {
        // another host takes this one's upload under way for one left behind (its clock a day ahead,
        // or S3's) and aborts it: S3 answers all along, so nothing says it was away
        S3Storage a = hostUploadingInParts(options("a"));
        byte[] content = randomBytes(2 * Bucket.MIN_PART_BYTES + 100, 16);
        whileItsSecondPartIsHeld(a, "/shared/aborted.bin", content, () -> {
            server.skewClock(Duration.ofDays(2));
            try {
                assertEquals(1, raw.abortUploadsOlderThan(prefix + "/", Duration.ofDays(1)));
            } finally {
                server.skewClock(Duration.ZERO);
            }
        });
        assertArrayEquals(content, inS3Bytes("shared/aborted.bin"));
        assertNull(a.unanswered(), "no outage");
        assertEquals(0, raw.uploadsUnderway(prefix + "/"));
    }

    /** What a test does while an upload waits in the server. */
    @FunctionalInterface
    private interface Meanwhile {
        void run() throws Exception;
    }

    /**
     * Writes {@code content} to {@code path} on {@code s} and flushes it on another thread, the second
     * part of its upload held in the server while {@code meanwhile} runs; returns once the flush has.
     */
    private void whileItsSecondPartIsHeld(S3Storage s, String path, byte[] content, Meanwhile meanwhile) throws Exception {
        s.mkdir(p("/shared"));
        s.write(p(path), content);
        S3Server.HeldRequests held = server.holdParts((name, number) -> name.endsWith(path) && number == 2, 1);
        java.util.concurrent.CompletableFuture<Void> flush = java.util.concurrent.CompletableFuture.runAsync(() -> {
            try {
                s.flushAll();
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        });
        try {
            assertTrue(held.reached().await(30, TimeUnit.SECONDS), "the second part reached the bucket");
            meanwhile.run();
        } finally {
            held.release().countDown();
        }
        flush.get(60, TimeUnit.SECONDS);
    }

    /** All {@code size} bytes of {@code h}: each read waits for the ranges it needs. */
    private static byte[] readWhole(FileHandle h, int size) throws IOException {
        ByteBuffer all = ByteBuffer.allocate(size);
        while (all.hasRemaining() && h.read(all, all.position()) > 0) {
            // the rest, as it comes
        }
        return all.array();
    }

    /** A host whose uploads of more than S3's smallest part go up in parts of that size. */
    private S3Storage hostUploadingInParts(S3Options o) throws IOException {
        return hostUploadingInParts(o, Bucket.MIN_PART_BYTES);
    }

    /** A host whose uploads of more than S3's smallest part go up in parts of {@code partBytes}. */
    private S3Storage hostUploadingInParts(S3Options o, long partBytes) throws IOException {
        Bucket bucket = Bucket.connect(S3Spec.parse(spec), server.env());
        bucket.movedInParts(Bucket.MIN_PART_BYTES, partBytes);
        return ns.opened(S3Storage.open(S3Spec.parse(spec), bucket, o));
    }

    private static byte[] randomBytes(long size, long seed) {
        byte[] b = new byte[(int) size];
        new java.util.Random(seed).nextBytes(b);
        return b;
    }

    private byte[] inS3Bytes(String key) throws IOException {
        Path to = temp.resolve("get-" + System.nanoTime());
        assertNotNull(raw.get(prefix + "/" + key, to), key);
        return Files.readAllBytes(to);
    }

    @Test
    void anotherHostsChangeShowsOnceTheValidityHasPassed() throws Exception {
        MutableClock clockB = startClock();
        S3Storage a = host(options("a").withFlushAfter(Duration.ZERO));
        S3Storage b = host(options("b").withClock(clockB, false));
        a.write(p("/shared/plan.md"), "v1".getBytes(UTF_8));
        a.flushAll();
        assertEquals("v1", text(b, "/shared/plan.md"));

        a.write(p("/shared/plan.md"), "version 2".getBytes(UTF_8));
        a.write(p("/shared/new.md"), "new".getBytes(UTF_8));
        a.removeFile(p("/shared/plan.md"));
        a.write(p("/shared/plan.md"), "version 3".getBytes(UTF_8));
        a.flushAll();
        // within the validity, B believes what it saw
        assertEquals(2, b.metadata(p("/shared/plan.md")).size());
        assertFalse(b.exists(p("/shared/new.md")));
        clockB.advance(S3Options.DEFAULT_VALIDITY);
        assertEquals(9, b.metadata(p("/shared/plan.md")).size());
        assertEquals("version 3", text(b, "/shared/plan.md"));
        assertEquals("new", text(b, "/shared/new.md"));
        assertEquals(ContentHash.of("version 3".getBytes(UTF_8)), b.etag(p("/shared/plan.md")));

        a.removeFile(p("/shared/new.md"));
        a.flushAll();
        clockB.advance(S3Options.DEFAULT_VALIDITY);
        assertFalse(b.exists(p("/shared/new.md")));
        assertThrows(NoSuchFileException.class, () -> b.read(p("/shared/new.md")));
    }

    @Test
    void anotherHostsChangeShowsAtOnceOnceHeldAnswersAreDropped() throws Exception {
        // chibifs sync on the reading host: no waiting for the validity
        MutableClock clockB = startClock();
        Duration ttl = Duration.ofSeconds(60);
        S3Storage a = host(options("a").withFlushAfter(Duration.ZERO));
        S3Storage b = host(options("b").withClock(clockB, false).withValidity(ttl));
        a.write(p("/shared/plan.md"), "v1".getBytes(UTF_8));
        a.write(p("/shared/notes/old.md"), "old".getBytes(UTF_8));
        a.flushAll();
        assertEquals("v1", text(b, "/shared/plan.md"));
        assertTrue(b.exists(p("/shared/notes/old.md")));
        assertEquals(Duration.ZERO, b.answersHeld(p("/shared/site")), "never listed");

        a.write(p("/shared/plan.md"), "version 2".getBytes(UTF_8));
        a.write(p("/shared/new.md"), "new".getBytes(UTF_8));
        a.removeFile(p("/shared/notes/old.md"));
        a.flushAll();
        clockB.advance(Duration.ofSeconds(20));
        assertEquals(2, b.metadata(p("/shared/plan.md")).size(), "within the validity, b believes what it listed");
        assertFalse(b.exists(p("/shared/new.md")));

        assertEquals(Duration.ofSeconds(40), b.answersHeld(p("/shared")));
        b.dropHeldAnswers();
        assertEquals(Duration.ZERO, b.answersHeld(p("/shared")));
        assertEquals(Duration.ZERO, b.answersHeld(p("/shared/notes")));
        assertEquals("version 2", text(b, "/shared/plan.md"));
        assertEquals("new", text(b, "/shared/new.md"));
        assertFalse(b.exists(p("/shared/notes/old.md")));
        assertEquals(ttl, b.answersHeld(p("/shared")), "listed again, held again");
    }

    @Test
    void aWallClockSteppedBackHoldsNeitherTheWriteBackNorTheListings() throws Exception {
        // durations go by the ticker, which never steps; the wall clock only stamps times
        MutableClock wall = startClock();
        java.util.concurrent.atomic.AtomicLong ticks = new java.util.concurrent.atomic.AtomicLong();
        Duration ttl = Duration.ofSeconds(60);
        S3Storage a = host(options("a").withClock(wall, false).withTicker(ticks::get).withValidity(ttl));
        a.mkdir(p("/shared"));
        a.flushDue();
        a.list(p("/shared"));
        assertEquals(ttl, a.answersHeld(p("/shared")));
        a.write(p("/shared/deb5"), "payload".getBytes(UTF_8));

        wall.advance(Duration.ofMinutes(-10)); // NTP steps the host's clock back
        ticks.addAndGet(S3Options.DEFAULT_FLUSH_AFTER.toMillis());
        a.flushDue();
        assertEquals("payload", inS3("shared/deb5"), "up after the debounce, whatever the wall clock says");
        assertEquals(ttl.minus(S3Options.DEFAULT_FLUSH_AFTER), a.answersHeld(p("/shared")), "held no longer than the validity");
        ticks.addAndGet(ttl.toMillis());
        assertEquals(Duration.ZERO, a.answersHeld(p("/shared")), "listed again after the validity");
    }

    /** docs/s3-store.md: an open handle keeps working through renames and unlinks made on its host. */
    @Test
    void aFileOpenedForWritingKeepsItsContentWhenItsNameGoesBeforeItsFirstRead() throws Exception {
        S3Storage a = host(options("a").withFlushAfter(Duration.ZERO));
        S3Storage b = host(options("b"));
        byte[] big = new byte[100_000]; // past what a listing brings with it
        java.util.Arrays.fill(big, (byte) 'x');
        a.write(p("/shared/removed"), big);
        a.write(p("/shared/replaced"), big);
        a.flushAll();
        for (String name : new String[] {"/shared/removed", "/shared/replaced"}) {
            try (FileHandle h = b.open(p(name), java.util.EnumSet.of(OpenFlag.READ, OpenFlag.WRITE), 0)) {
                if (name.endsWith("removed")) {
                    b.removeFile(p(name));
                } else {
                    b.write(p("/shared/new"), "new".getBytes(UTF_8));
                    b.rename(p("/shared/new"), p(name)); // an editor's save
                }
                java.nio.ByteBuffer head = java.nio.ByteBuffer.allocate(12);
                assertEquals(12, h.read(head, 0), name);
                assertEquals("xxxxxxxxxxxx", new String(head.array(), UTF_8));
                assertEquals(1, h.write(java.nio.ByteBuffer.wrap(new byte[] {'y'}), 5));
            }
        }
    }

    /**
     * A delete held back (the debounce, S3 away, a crash and the journal) went out unconditioned: it
     * removed what another host had written at that name since (a tester's append on B, synced, gone
     * 20 s later with A's rename). Only what this host last saw there is deleted now: by a HEAD for a
     * name alone, by a listing for a directory of several.
     */
    @Test
    void aDeleteHeldBackLeavesWhatAnotherHostWroteThereSince() throws Exception {
        MutableClock clock = startClock();
        S3Storage a = host(options("a").withClock(clock, false));
        S3Storage b = host(options("b"));
        put(a, "/shared/alone", "a's");
        put(a, "/shared/moved", "a's");
        for (int i = 0; i < WriteBack.LISTED_FROM + 1; i++) {
            put(a, "/shared/many/f" + i, "a's");
        }
        a.flushAll();
        a.removeFile(p("/shared/alone"));
        a.rename(p("/shared/moved"), p("/shared/done"));
        for (int i = 0; i < WriteBack.LISTED_FROM + 1; i++) {
            a.removeFile(p("/shared/many/f" + i));
        }
        // held back on a; host b writes three of the names meanwhile, and syncs
        put(b, "/shared/alone", "b's");
        put(b, "/shared/moved", "b's");
        put(b, "/shared/many/f3", "b's");
        b.flushAll();

        a.flushAll();
        assertEquals("b's", inS3("shared/alone"));
        assertEquals("b's", inS3("shared/moved"));
        assertEquals("a's", inS3("shared/done"));
        assertEquals("b's", inS3("shared/many/f3"));
        assertNull(inS3("shared/many/f2"), "what a saw there is deleted");
        assertEquals(0, a.pendingChanges());
    }

    @Test
    void aFileRenamedAgainBeforeItsNewNameWentUpKeepsItsOldObjectUntilTheNewOneIsThere() throws Exception {
        // docs/s3-store.md: another host may see both names for a moment, never neither. The second
        // rename finds the file dirty from the first, so the debounce puts its upload off: the old
        // name's delete must wait for it (it went at the next tick: none for 4-7 s, tester's loop)
        MutableClock clock = startClock();
        S3Storage a = host(options("a").withClock(clock, false));
        put(a, "/shared/a0", "content");
        a.flushAll();
        a.rename(p("/shared/a0"), p("/shared/a1"));
        a.rename(p("/shared/a1"), p("/shared/a2"));
        for (int tick = 0; tick < 25; tick++) {
            a.flushDue();
            String old = inS3("shared/a0");
            String now = inS3("shared/a2");
            assertTrue(old != null || now != null, "neither name on S3 at tick " + tick);
            assertNull(inS3("shared/a1"));
            clock.advance(Duration.ofMillis(100));
        }
        assertEquals("content", inS3("shared/a2"));
        assertNull(inS3("shared/a0"));
        assertEquals(0, a.pendingChanges());
    }

    @Test
    void aDirectoryRenamedAgainBeforeItsNewNameWentUpKeepsItsOldObjectsUntilTheNewOnesAreThere() throws Exception {
        MutableClock clock = startClock();
        S3Storage a = host(options("a").withClock(clock, false));
        put(a, "/shared/d0/f", "content");
        a.flushAll();
        a.rename(p("/shared/d0"), p("/shared/d1"));
        a.rename(p("/shared/d1"), p("/shared/d0"));
        a.rename(p("/shared/d0"), p("/shared/d1"));
        for (int tick = 0; tick < 25; tick++) {
            a.flushDue();
            assertTrue(inS3("shared/d0/f") != null || inS3("shared/d1/f") != null, "f under neither name at tick " + tick);
            assertTrue(inS3("shared/d0/") != null || inS3("shared/d1/") != null, "neither marker at tick " + tick);
            clock.advance(Duration.ofMillis(100));
        }
        assertEquals("content", inS3("shared/d1/f"));
        assertEquals("", inS3("shared/d1/"));
        assertNull(inS3("shared/d0/f"));
        assertNull(inS3("shared/d0/"));
    }

    @Test
    void aNameReplacedMoreOftenThanTheDebounceStillGoesUpWithinItsCap() throws Exception {
        // write a temporary file and rename it over the name, every 0.5 s (an atomic save, git's refs
        // and index): each replace is another file, but the cap on deferring the name's upload counts
        // from its first change not up yet (it never went up while the writer ran). Likewise write(),
        // which replaces the name's file as a whole
        for (boolean byRename : new boolean[] {true, false}) {
            MutableClock clock = startClock();
            S3Storage a = host(options("a" + byRename).withClock(clock, false));
            String name = "/shared/state-" + byRename + ".json";
            put(a, name, "v0");
            a.flushAll();
            long cap = Overlay.MAX_DEFERRALS * S3Options.DEFAULT_FLUSH_AFTER.toMillis();
            int n = 0;
            for (long elapsed = 0; elapsed <= cap; elapsed += 500) {
                n++;
                if (byRename) {
                    put(a, "/shared/.tmp" + n, "v" + n);
                    a.rename(p("/shared/.tmp" + n), p(name));
                } else {
                    a.write(p(name), ("v" + n).getBytes(UTF_8));
                }
                clock.advance(Duration.ofMillis(500));
                a.flushDue();
            }
            assertNotEquals("v0", inS3(name.substring(1)), "replaced " + n + " times over " + cap + " ms, by rename " + byRename);
        }
    }

    @Test
    void aNameForcedUpAtItsCapGoesAfterTheFilesClosedBeforeIt() throws Exception {
        // git commits every 0.5 s: each writes its objects (closed files, held back by the debounce)
        // and then moves the ref onto them. When the ref goes up at its cap, what it names is there
        MutableClock clock = startClock();
        S3Storage a = host(options("git").withClock(clock, false));
        put(a, "/shared/ref", "o0");
        put(a, "/shared/o0", "first");
        a.flushAll();
        long cap = Overlay.MAX_DEFERRALS * S3Options.DEFAULT_FLUSH_AFTER.toMillis();
        int n = 0;
        boolean refWentUp = false;
        for (long elapsed = 0; elapsed <= cap; elapsed += 500) {
            n++;
            put(a, "/shared/o" + n, "object " + n);
            put(a, "/shared/.ref.lock", "o" + n);
            a.rename(p("/shared/.ref.lock"), p("/shared/ref"));
            clock.advance(Duration.ofMillis(500));
            a.flushDue();
            String ref = inS3("shared/ref");
            if (!"o0".equals(ref)) {
                refWentUp = true;
                assertNotNull(inS3("shared/" + ref), "the ref names " + ref + ", which is not up");
            }
        }
        assertTrue(refWentUp, "the ref went up at its cap");
    }

    @Test
    void aDirectoryRemovedHereStaysRemovedWhileADeleteBelowItWaitsToGoUp() throws Exception {
        // its marker never went up (so it has no tombstone of its own), and an upload of a file in it
        // landed after the removal: S3 lists the directory until that file's delete is done
        S3Storage a = host(options("a").withClock(startClock(), false).withValidity(Duration.ZERO));
        a.mkdir(p("/shared/t/e"));
        a.removeDirectory(p("/shared/t/e"));
        raw.put(prefix + "/shared/t/e/f", "f".getBytes(UTF_8), Map.of(), null);
        synchronized (a) {
            a.overlay.tombstone(prefix + "/shared/t/e/f", null); // as the write-back does for an upload that lands removed
            a.journal.commit();
        }
        assertEquals(List.of(), a.list(p("/shared/t")), "removed here, whatever S3 still lists below it");
        a.removeDirectory(p("/shared/t"));
        a.flushAll();
        assertNull(inS3("shared/t/e/f"));
    }

    @Test
    void aWriteOnOneHostIsReadOnTheOtherWithinTwoSeconds() throws Exception {
        S3Storage a = host(options("a"));
        S3Storage b = host(options("b"));
        a.mkdir(p("/shared"));
        a.flushAll();
        assertEquals(List.of(), b.list(p("/shared")));
        try (FileHandle h = a.open(p("/shared/hello"), EnumSet.of(OpenFlag.WRITE, OpenFlag.CREATE), 0644)) {
            h.write(ByteBuffer.wrap("from a".getBytes(UTF_8)), 0);
            h.sync(false); // S3 has it from here on
        }
        long reached = System.nanoTime();
        assertTrue(await(Duration.ofSeconds(2), () -> b.exists(p("/shared/hello"))
                && "from a".equals(text(b, "/shared/hello"))), "not seen on b within 2 s");
        long seenAfter = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - reached);
        assertTrue(seenAfter < 2000, seenAfter + " ms");
    }

    /** Hosts a and b with {@code --exclusive-creates}, b having listed /shared without {@code name}. */
    private S3Storage[] twoHostsWithExclusiveCreatesThatListedShared(String name) throws IOException {
        S3Storage a = host(options("a").withClock(startClock(), false).withExclusiveCreates(true));
        S3Storage b = host(options("b").withClock(startClock(), false).withExclusiveCreates(true));
        a.mkdir(p("/shared"));
        a.flushAll();
        assertFalse(b.exists(p("/shared/" + name)));
        return new S3Storage[]{a, b};
    }

    @Test
    void withExclusiveCreatesAnExclusiveCreateOfANameAnotherHostMadeFirstFailsAndLeavesNoCopy() throws Exception {
        // two agents claim one task with `set -o noclobber; echo me > claim`: both hosts' listings
        // are fresh from before either made it, so only S3 can tell the second it came second
        S3Storage[] hosts = twoHostsWithExclusiveCreatesThatListedShared("task-7.claim");
        S3Storage a = hosts[0];
        S3Storage b = hosts[1];
        EnumSet<OpenFlag> exclusive = EnumSet.of(OpenFlag.WRITE, OpenFlag.CREATE_NEW);
        try (FileHandle h = a.open(p("/shared/task-7.claim"), exclusive, 0644)) {
            h.write(ByteBuffer.wrap("a\n".getBytes(UTF_8)), 0);
        }
        assertNotNull(inS3("shared/task-7.claim"), "on S3 as the create returned, before any write-back");
        Exception second = assertThrows(java.nio.file.FileAlreadyExistsException.class,
                () -> b.open(p("/shared/task-7.claim"), exclusive, 0644));
        assertEquals(Linux.EEXIST, Errors.errno(second));
        assertFalse(b.exists(p("/shared/task-7.claim.conflict-b-20260102T030405Z")));

        a.flushAll();
        b.flushAll();
        assertEquals("a\n", inS3("shared/task-7.claim"), "a's write goes up over the object its create made");
        assertEquals(List.of(prefix + "/shared/task-7.claim"),
                raw.list(prefix + "/shared/", false).objects().stream().map(Bucket.Listed::key).filter(k -> !k.endsWith("/")).toList(),
                "no conflict copy");
        // a name free on S3 is made by either host; without the option b's create would have made it too
        try (FileHandle h = b.open(p("/shared/task-8.claim"), exclusive, 0644)) {
            h.write(ByteBuffer.wrap("b\n".getBytes(UTF_8)), 0);
        }
        b.flushAll();
        assertEquals("b\n", inS3("shared/task-8.claim"));
        assertTrue(b.state().endsWith("; O_EXCL creates, mkdirs and symlinks made on S3 at once"), b.state());
    }

    @Test
    void withExclusiveCreatesAMkdirOfADirectoryAnotherHostMadeFirstFails() throws Exception {
        // `mkdir lock.d` as a lock, on two hosts whose listings are fresh from before either made it
        S3Storage[] hosts = twoHostsWithExclusiveCreatesThatListedShared("lock.d");
        S3Storage a = hosts[0];
        S3Storage b = hosts[1];
        a.createDirectory(p("/shared/lock.d"));
        assertNotNull(inS3("shared/lock.d/"), "the marker on S3 as mkdir returned, before any write-back");
        Exception second = assertThrows(java.nio.file.FileAlreadyExistsException.class,
                () -> b.createDirectory(p("/shared/lock.d")));
        assertEquals(Linux.EEXIST, Errors.errno(second));
        assertTrue(b.exists(p("/shared/lock.d")), "b lists the directory again after the refusal");
        // a directory free on S3 is made by either host
        b.createDirectory(p("/shared/other.d"));
        assertNotNull(inS3("shared/other.d/"));
        a.flushAll();
        b.flushAll();
        assertEquals(0, a.pendingChanges() + b.pendingChanges(), "nothing left to upload: the markers went up with the mkdirs");
    }

    /**
     * Host b made the lock directory /shared/lock.d and removed it; its write-back pass sends that
     * delete, which the server holds: with {@code removed} once S3 has done it (its answer not sent
     * yet), else before. While it is held, {@code meanwhile} runs, then b makes lock.d again on a
     * thread of its own, which either ends or waits (for the pass) before the delete is let go.
     * What b's second mkdir threw, or null.
     */
    private Throwable mkdirAgainWhileTheDeleteIsHeld(S3Storage b, boolean removed, Meanwhile meanwhile) throws Exception {
        b.createDirectory(p("/shared/lock.d"));
        b.removeDirectory(p("/shared/lock.d"));
        S3Server.HeldRequests held = server.holdDeletes(k -> k.equals(prefix + "/shared/lock.d/"), removed, 1);
        try {
            var pass = aside(b::flushDue);
            assertTrue(held.reached().await(30, TimeUnit.SECONDS), "the DELETE came");
            meanwhile.run();
            var again = new java.util.concurrent.FutureTask<Void>(() -> {
                b.createDirectory(p("/shared/lock.d"));
                return null;
            });
            Thread mkdir = new Thread(again, "mkdir-again");
            mkdir.start();
            assertTrue(await(Duration.ofSeconds(30), () -> again.isDone() || mkdir.getState() == Thread.State.WAITING),
                    "b's mkdir ended or waits");
            held.release().countDown();
            pass.get(30, TimeUnit.SECONDS);
            try {
                again.get(30, TimeUnit.SECONDS);
                return null;
            } catch (java.util.concurrent.ExecutionException e) {
                return e.getCause();
            }
        } finally {
            held.release().countDown();
            server.holdDeletes(k -> false, false, 0);
        }
    }

    @Test
    void withExclusiveCreatesAMkdirLockTakenElsewhereOnceS3DidThisHostsRmdirIsRefusedHereBeforeItHearsSo() throws Exception {
        // a mkdir lock handed on at once: S3 has done b's rmdir, a takes the lock, and b asks for it
        // again before the answer to its delete came (it made the lock here: two holders)
        S3Storage[] hosts = twoHostsWithExclusiveCreatesThatListedShared("lock.d");
        S3Storage a = hosts[0];
        S3Storage b = hosts[1];
        Throwable again = mkdirAgainWhileTheDeleteIsHeld(b, true, () -> {
            assertNull(inS3("shared/lock.d/"), "S3 did b's delete");
            a.createDirectory(p("/shared/lock.d"));
        });
        assertTrue(again instanceof java.nio.file.FileAlreadyExistsException, "b's mkdir: " + again);
        assertEquals(Linux.EEXIST, Errors.errno((Exception) again));
        assertNotNull(inS3("shared/lock.d/"), "a's marker stays");
    }

    @Test
    void withExclusiveCreatesAMkdirAgainWhileThisHostsDeleteOfTheNameIsUnderWayKeepsTheNameFromOtherHosts() throws Exception {
        // b takes its lock again while the delete of its last one is on its way to S3: that delete
        // must not take the new lock from under it (a then took the lock too)
        S3Storage[] hosts = twoHostsWithExclusiveCreatesThatListedShared("lock.d");
        S3Storage a = hosts[0];
        S3Storage b = hosts[1];
        assertNull(mkdirAgainWhileTheDeleteIsHeld(b, false, () -> { }));
        assertNotNull(inS3("shared/lock.d/"), "b's lock on S3");
        Exception second = assertThrows(java.nio.file.FileAlreadyExistsException.class,
                () -> a.createDirectory(p("/shared/lock.d")));
        assertEquals(Linux.EEXIST, Errors.errno(second));
        b.flushAll();
        assertNotNull(inS3("shared/lock.d/"), "b's lock stays on S3");
    }

    @Test
    void withExclusiveCreatesALockFileRenamedIntoPlaceIsMadeAgainWithoutWaitingForAPassUnderWay() throws Exception {
        // git: index.lock, made with O_EXCL, is renamed to index, and its delete waits for index's
        // upload (the debounce), which no pass sends now: git's next O_EXCL index.lock takes the
        // object over here at once, not after a pass uploading something else (a large file)
        MutableClock clock = startClock();
        S3Storage a = host(options("a").withClock(clock, false).withExclusiveCreates(true));
        a.mkdir(p("/shared/repo/.git"));
        a.flushAll();
        put(a, "/shared/big", "big");
        clock.advance(S3Options.DEFAULT_FLUSH_AFTER);
        writeExclusive(a, "/shared/repo/.git/index.lock", "one");
        a.rename(p("/shared/repo/.git/index.lock"), p("/shared/repo/.git/index"));
        S3Server.HeldRequests held = holdPut("shared/big", 1);
        try {
            var pass = aside(a::flushDue);
            assertTrue(held.reached().await(30, TimeUnit.SECONDS), "the pass's PUT of big came");
            aside(() -> writeExclusive(a, "/shared/repo/.git/index.lock", "two")).get(30, TimeUnit.SECONDS);
            assertFalse(pass.isDone(), "big is still going up");
            held.release().countDown();
            pass.get(30, TimeUnit.SECONDS);
        } finally {
            held.release().countDown();
            server.holdPuts(n -> false, 0);
        }
        a.rename(p("/shared/repo/.git/index.lock"), p("/shared/repo/.git/index"));
        a.flushAll();
        assertEquals("two", inS3("shared/repo/.git/index"));
        assertNull(inS3("shared/repo/.git/index.lock"));
    }

    @Test
    void withExclusiveCreatesALockDirectoryRemovedAndTakenAgainHereWaitsForNoUploadUnderWay() throws Exception {
        // `rmdir lock.d; mkdir lock.d` on one host while a pass sends a large file written before:
        // the release waits for that file, and the lock taken again here waited for the whole pass
        S3Storage[] hosts = twoHostsWithExclusiveCreatesThatListedShared("lock.d");
        S3Storage a = hosts[0];
        S3Storage b = hosts[1];
        put(a, "/shared/big", "big");
        a.createDirectory(p("/shared/lock.d"));
        a.removeDirectory(p("/shared/lock.d"));
        S3Server.HeldRequests held = holdPut("shared/big", 1);
        try {
            var pass = aside(a::flushDue);
            assertTrue(held.reached().await(30, TimeUnit.SECONDS), "the pass's PUT of big came");
            aside(() -> a.createDirectory(p("/shared/lock.d"))).get(30, TimeUnit.SECONDS);
            assertFalse(pass.isDone(), "big is still going up");
            held.release().countDown();
            pass.get(30, TimeUnit.SECONDS);
        } finally {
            held.release().countDown();
            server.holdPuts(n -> false, 0);
        }
        assertNotNull(inS3("shared/lock.d/"), "the lock never left a on S3");
        Exception second = assertThrows(java.nio.file.FileAlreadyExistsException.class,
                () -> b.createDirectory(p("/shared/lock.d")));
        assertEquals(Linux.EEXIST, Errors.errno(second));
        a.removeDirectory(p("/shared/lock.d"));
        a.flushDue();
        assertNull(inS3("shared/lock.d/"), "let go by its next remove");
        b.createDirectory(p("/shared/lock.d"));
        assertEquals("big", inS3("shared/big"));
    }

    @Test
    void withExclusiveCreatesAClaimOfANameRemovedHereSendsItsDeleteWithoutWaitingForAPassUnderWay() throws Exception {
        // a claim file left by an earlier run, removed and claimed again at once: its delete goes
        // with the claim, not after the pass that is sending a large file
        S3Storage[] hosts = twoHostsWithExclusiveCreatesThatListedShared("task.claim");
        S3Storage a = hosts[0];
        S3Storage b = hosts[1];
        put(a, "/shared/task.claim", "old run");
        a.flushAll();
        put(a, "/shared/big", "big");
        a.removeFile(p("/shared/task.claim"));
        S3Server.HeldRequests held = holdPut("shared/big", 1);
        try {
            var pass = aside(a::flushAll);
            assertTrue(held.reached().await(30, TimeUnit.SECONDS), "the pass's PUT of big came");
            aside(() -> writeExclusive(a, "/shared/task.claim", "a")).get(30, TimeUnit.SECONDS);
            assertEquals("", inS3("shared/task.claim"), "the claim's object, in place of the old one");
            assertFalse(pass.isDone(), "big is still going up");
            held.release().countDown();
            pass.get(30, TimeUnit.SECONDS);
        } finally {
            held.release().countDown();
            server.holdPuts(n -> false, 0);
        }
        Exception second = assertThrows(java.nio.file.FileAlreadyExistsException.class,
                () -> b.open(p("/shared/task.claim"), EnumSet.of(OpenFlag.WRITE, OpenFlag.CREATE_NEW), 0644));
        assertEquals(Linux.EEXIST, Errors.errno(second));
        a.flushAll();
        assertEquals("a", inS3("shared/task.claim"), "the pass deleted nothing of the new claim");
    }

    @Test
    void withExclusiveCreatesALockTakenAgainAfterItsDeleteWentUnansweredIsClaimedOnS3() throws Exception {
        // S3 did b's rmdir, but no answer came, nor to the HEAD that would have told: b cannot take
        // its lock over as still its own on S3
        S3Storage[] hosts = twoHostsWithExclusiveCreatesThatListedShared("lock.d");
        S3Storage a = hosts[0];
        S3Storage b = hosts[1];
        b.createDirectory(p("/shared/lock.d"));
        b.removeDirectory(p("/shared/lock.d"));
        java.util.concurrent.atomic.AtomicBoolean deleted = new java.util.concurrent.atomic.AtomicBoolean();
        server.loseDeleteAnswers(k -> k.equals(prefix + "/shared/lock.d/") && !deleted.getAndSet(true), -1);
        server.failHeads(k -> k.equals(prefix + "/shared/lock.d/") && deleted.get(), -1);
        try {
            assertThrows(IOException.class, b::flushDue);
        } finally {
            server.loseDeleteAnswers(k -> false, 0);
            server.failHeads(k -> false, 0);
        }
        assertNull(inS3("shared/lock.d/"), "S3 did the delete");
        b.createDirectory(p("/shared/lock.d"));
        assertNotNull(inS3("shared/lock.d/"), "b's lock claimed on S3 again");
        Exception second = assertThrows(java.nio.file.FileAlreadyExistsException.class,
                () -> a.createDirectory(p("/shared/lock.d")));
        assertEquals(Linux.EEXIST, Errors.errno(second));
    }

    @Test
    void withExclusiveCreatesALockDirectoryReleaseSentAgainLeavesTheClaimAnotherHostMadeMeanwhile() throws Exception {
        // S3 did b's rmdir, its answer was lost, and a took the lock before the DELETE went again:
        // the DELETE sent again took a's lock (two holders); the markers alike, with no ETag to tell
        S3Storage[] hosts = twoHostsWithExclusiveCreatesThatListedShared("lock.d");
        S3Storage a = hosts[0];
        S3Storage b = hosts[1];
        b.createDirectory(p("/shared/lock.d"));
        releaseSentAgainAfterAnotherHostClaimed(b, "shared/lock.d/", () -> b.removeDirectory(p("/shared/lock.d")),
                () -> a.createDirectory(p("/shared/lock.d")));
        Exception taken = assertThrows(java.nio.file.FileAlreadyExistsException.class, () -> b.createDirectory(p("/shared/lock.d")));
        assertEquals(Linux.EEXIST, Errors.errno(taken));
    }

    @Test
    void withExclusiveCreatesALockFileReleaseSentAgainLeavesTheClaimAnotherHostMadeMeanwhile() throws Exception {
        // `set -C; : > lock` on both hosts: the two empty objects have one ETag, the MD5 of nothing
        S3Storage[] hosts = twoHostsWithExclusiveCreatesThatListedShared("lock");
        S3Storage a = hosts[0];
        S3Storage b = hosts[1];
        EnumSet<OpenFlag> exclusive = EnumSet.of(OpenFlag.WRITE, OpenFlag.CREATE_NEW);
        b.open(p("/shared/lock"), exclusive, 0644).close();
        releaseSentAgainAfterAnotherHostClaimed(b, "shared/lock", () -> b.delete(p("/shared/lock")),
                () -> a.open(p("/shared/lock"), exclusive, 0644).close());
        Exception taken = assertThrows(java.nio.file.FileAlreadyExistsException.class, () -> b.open(p("/shared/lock"), exclusive, 0644));
        assertEquals(Linux.EEXIST, Errors.errno(taken));
    }

    @Test
    void withExclusiveCreatesALockFileWrittenAfterItsClaimIsStillLetGo() throws Exception {
        // `set -C; echo $$ > lock`: the upload of what was written carries no made-by, and the
        // release knows it for this host's by its ETag
        S3Storage[] hosts = twoHostsWithExclusiveCreatesThatListedShared("lock");
        S3Storage a = hosts[0];
        S3Storage b = hosts[1];
        writeExclusive(b, "/shared/lock", "4242\n");
        b.flushAll();
        assertEquals("4242\n", inS3("shared/lock"));
        assertNull(raw.head(prefix + "/shared/lock").meta().get(S3Storage.META_MADE_BY), "uploaded anew, no made-by");
        b.delete(p("/shared/lock"));
        b.flushAll();
        assertNull(inS3("shared/lock"), "the lock let go");
        writeExclusive(a, "/shared/lock", "1717\n"); // S3 lets a claim it
        a.flushAll();
        assertEquals("1717\n", inS3("shared/lock"));
    }

    @Test
    void withExclusiveCreatesALockReleaseWhoseConnectionIsCutLeavesTheClaimAnotherHostMadeMeanwhile() throws Exception {
        // S3 did b's rmdir and the connection broke before its answer: the JDK's HttpURLConnection
        // sent the DELETE again on its own, below the SDK (which saw one attempt), and took a's lock
        S3Storage[] hosts = twoHostsWithExclusiveCreatesThatListedShared("lock.d");
        S3Storage a = hosts[0];
        S3Storage b = hosts[1];
        b.createDirectory(p("/shared/lock.d"));
        releaseSentAgainAfterAnotherHostClaimed(b, "shared/lock.d/", () -> b.removeDirectory(p("/shared/lock.d")),
                () -> a.createDirectory(p("/shared/lock.d")), true);
        Exception taken = assertThrows(java.nio.file.FileAlreadyExistsException.class, () -> b.createDirectory(p("/shared/lock.d")));
        assertEquals(Linux.EEXIST, Errors.errno(taken));
    }

    @Test
    void withExclusiveCreatesALockDirectoryWhoseClaimAnswerWasLostIsLetGoOnS3() throws Exception {
        // the claim landed, its answer lost; the SDK's retry got 412 and a HEAD knew the marker as
        // this host's, with no ETag (s3proxy gives a marker none): the directory was taken for made
        // here only, its rmdir deleted nothing, and S3 kept the lock for ever
        S3Storage[] hosts = twoHostsWithExclusiveCreatesThatListedShared("lock.d");
        S3Storage a = hosts[0];
        S3Storage b = hosts[1];
        server.losePutAnswers(k -> k.equals(prefix + "/shared/lock.d/"), 1);
        try {
            b.createDirectory(p("/shared/lock.d"));
        } finally {
            server.losePutAnswers(k -> false, 0);
        }
        assertNotNull(inS3("shared/lock.d/"), "the claim landed");
        b.write(p("/shared/counter"), "1\n".getBytes(UTF_8));
        b.removeDirectory(p("/shared/lock.d"));
        b.flushDue();
        assertNull(inS3("shared/lock.d/"), "the lock is let go");
        assertEquals("1\n", inS3("shared/counter"), "after what was written under it");
        a.createDirectory(p("/shared/lock.d"));
    }

    @Test
    void withExclusiveCreatesALockDirectoryRemovedWhileItsMarkerGoesUpAgainIsStillALockLetGo() throws Exception {
        // rmdir; mkdir; rmdir on one host: the second mkdir takes the claim still on S3 over, its
        // marker goes up (412: the claim is there), and the last rmdir came while it went: the marker's
        // upload then put a plain delete in the release's place, sent at once, before the counter
        // written under the lock, and sent again by the SDK after a lost answer (a tester's two holders)
        S3Storage[] hosts = twoHostsWithExclusiveCreatesThatListedShared("lock.d");
        S3Storage b = hosts[1];
        b.createDirectory(p("/shared/lock.d"));
        b.removeDirectory(p("/shared/lock.d"));
        b.createDirectory(p("/shared/lock.d"));
        S3Server.HeldRequests held = server.holdPuts(k -> k.equals(prefix + "/shared/lock.d/"), 1);
        try {
            var pass = aside(b::flushDue);
            assertTrue(held.reached().await(30, TimeUnit.SECONDS), "the marker goes up again");
            b.write(p("/shared/counter"), "2\n".getBytes(UTF_8));
            b.removeDirectory(p("/shared/lock.d"));
            held.release().countDown();
            pass.get(30, TimeUnit.SECONDS);
        } finally {
            held.release().countDown();
            server.holdPuts(k -> false, 0);
        }
        b.flushDue(); // the counter's debounce has not passed: the release pushes it
        assertEquals("2\n", inS3("shared/counter"), "the counter is up before the lock goes");
        assertNull(inS3("shared/lock.d/"), "the lock is let go");
    }

    @Test
    void withExclusiveCreatesALockTakenBeforeACrashIsReleasedAfterTheRestartLookingFirst() throws Exception {
        // taken, then a kill -9, then removed after the remount: its delete was a plain one, which the
        // SDK sent again after a 500 and took the lock another host had taken meanwhile (coord4 finding 5)
        S3Storage[] hosts = twoHostsWithExclusiveCreatesThatListedShared("lock.d");
        S3Storage a = hosts[0];
        S3Storage b = hosts[1];
        b.createDirectory(p("/shared/lock.d"));
        b.crash();
        S3Storage again = host(options("b").withClock(startClock(), false).withExclusiveCreates(true));
        releaseSentAgainAfterAnotherHostClaimed(again, "shared/lock.d/", () -> again.removeDirectory(p("/shared/lock.d")),
                () -> a.createDirectory(p("/shared/lock.d")));
    }

    @Test
    void withExclusiveCreatesALockReleaseS3FailsSaysWhatS3Answered() throws Exception {
        // S3 answered each release DELETE 500: the message said "no answer said it done"
        S3Storage[] hosts = twoHostsWithExclusiveCreatesThatListedShared("lock.d");
        S3Storage b = hosts[1];
        b.createDirectory(p("/shared/lock.d"));
        b.removeDirectory(p("/shared/lock.d"));
        server.failDeletes(k -> k.equals(prefix + "/shared/lock.d/"), -1);
        IOException failed;
        try {
            failed = assertThrows(IOException.class, b::flushDue);
        } finally {
            server.failDeletes(k -> false, 0);
        }
        assertTrue(failed.getMessage().contains("S3 answered HTTP 500"), failed.getMessage());
        assertNotNull(inS3("shared/lock.d/"), "S3 did not do the delete");
        b.flushDue();
        assertNull(inS3("shared/lock.d/"), "let go once S3 takes it");
    }

    private void releaseSentAgainAfterAnotherHostClaimed(S3Storage b, String key, Meanwhile release, Meanwhile claim)
            throws Exception {
        releaseSentAgainAfterAnotherHostClaimed(b, key, release, claim, false);
    }

    /**
     * {@code b} lets go its lock at {@code key} ({@code release}); S3 does the DELETE, holds its answer
     * while the other host takes the lock ({@code claim}), then loses that answer (a 500; with
     * {@code cut}, the connection closed unanswered): the release ends with the other host's claim
     * on S3, made by it.
     */
    private void releaseSentAgainAfterAnotherHostClaimed(S3Storage b, String key, Meanwhile release, Meanwhile claim,
                                                         boolean cut) throws Exception {
        release.run();
        S3Server.HeldRequests held = server.holdDeletes(k -> k.equals(prefix + "/" + key), true, 1);
        if (cut) {
            server.cutDeleteAnswers(k -> k.equals(prefix + "/" + key), 1);
        } else {
            server.loseDeleteAnswers(k -> k.equals(prefix + "/" + key), 1);
        }
        try {
            var pass = aside(b::flushDue);
            assertTrue(held.reached().await(30, TimeUnit.SECONDS), "the DELETE came");
            assertNull(inS3(key), "S3 did b's delete");
            claim.run();
            held.release().countDown();
            pass.get(30, TimeUnit.SECONDS);
        } finally {
            held.release().countDown();
            server.holdDeletes(k -> false, false, 0);
            server.loseDeleteAnswers(k -> false, 0);
            server.cutDeleteAnswers(k -> false, 0);
        }
        Bucket.Head left = raw.head(prefix + "/" + key);
        assertNotNull(left, "the other host's claim stays");
        assertTrue(left.meta().get(S3Storage.META_MADE_BY).startsWith("a-"), "made by a: " + left.meta());
        assertEquals(0, b.pendingChanges(), "b's release is done");
    }

    private static void writeExclusive(S3Storage s, String path, String content) throws IOException {
        try (FileHandle h = s.open(p(path), EnumSet.of(OpenFlag.WRITE, OpenFlag.CREATE_NEW), 0644)) {
            h.write(ByteBuffer.wrap(content.getBytes(UTF_8)), 0);
        }
    }

    @Test
    void withExclusiveCreatesASymlinkOfANameAnotherHostLinkedFirstFails() throws Exception {
        // `ln -s me .#plan.md` (emacs's lock) on two hosts whose listings are fresh from before either made it
        S3Storage[] hosts = twoHostsWithExclusiveCreatesThatListedShared(".#plan.md");
        S3Storage a = hosts[0];
        S3Storage b = hosts[1];
        a.createSymlink(p("/shared/.#plan.md"), "agent@a.1234");
        assertEquals("agent@a.1234", inS3("shared/.#plan.md" + S3Storage.LINK_SUFFIX),
                "the link whole on S3 as symlink returned, before any write-back");
        Exception second = assertThrows(java.nio.file.FileAlreadyExistsException.class,
                () -> b.createSymlink(p("/shared/.#plan.md"), "agent@b.5678"));
        assertEquals(Linux.EEXIST, Errors.errno(second));
        assertEquals("agent@a.1234", b.readLink(p("/shared/.#plan.md")), "b lists the directory again after the refusal");
        // a name free on S3 is linked by either host
        b.createSymlink(p("/shared/.#notes.md"), "agent@b.5678");
        assertEquals("agent@b.5678", inS3("shared/.#notes.md" + S3Storage.LINK_SUFFIX));
        a.flushAll();
        b.flushAll();
        assertEquals(0, a.pendingChanges() + b.pendingChanges(), "nothing left to upload: the links went up with the symlinks");
        assertEquals(List.of(prefix + "/shared/.#notes.md" + S3Storage.LINK_SUFFIX, prefix + "/shared/.#plan.md" + S3Storage.LINK_SUFFIX),
                raw.list(prefix + "/shared/", false).objects().stream().map(Bucket.Listed::key).filter(k -> !k.endsWith("/")).sorted().toList(),
                "no conflict copy");
        assertEquals(EntryKind.SYMLINK, a.metadata(p("/shared/.#plan.md")).kind());
    }

    @Test
    void theSameFileWrittenOnBothHostsLeavesOneWinnerAndOneConflictCopy() throws Exception {
        TwoHosts hosts = onOneClock();
        MutableClock clock = hosts.clock();
        S3Storage a = hosts.a();
        S3Storage b = hosts.b();
        a.write(p("/shared/doc"), "base".getBytes(UTF_8));
        a.flushAll();
        assertEquals("base", text(b, "/shared/doc"));

        put(a, "/shared/doc", "a's edit");
        put(b, "/shared/doc", "b's edit");
        b.setXattr(p("/shared/doc"), "user.by", "b".getBytes(UTF_8), XattrMode.SET);
        put(a, "/shared/fresh", "a made it");
        put(b, "/shared/fresh", "b made it too");
        a.flushAll();
        b.flushAll(); // both uploads find S3 changed since b last looked

        assertEquals("a's edit", inS3("shared/doc"));
        assertEquals("a made it", inS3("shared/fresh"));
        String stamp = "20260102T030405Z";
        assertEquals("b's edit", inS3("shared/doc.conflict-b-" + stamp));
        assertEquals("b made it too", inS3("shared/fresh.conflict-b-" + stamp));
        // b shows the winner from the next open on, and its own version beside it
        assertEquals("a's edit", text(b, "/shared/doc"));
        assertEquals("b's edit", text(b, "/shared/doc.conflict-b-" + stamp));
        // the attributes go with the version they were set on
        assertEquals("b", new String(b.xattr(p("/shared/doc.conflict-b-" + stamp), "user.by"), UTF_8));
        assertEquals(List.of(), b.xattrNames(p("/shared/doc")));
        assertEquals("a made it", text(b, "/shared/fresh"));
        clock.advance(S3Options.DEFAULT_VALIDITY);
        assertTrue(a.exists(p("/shared/doc.conflict-b-" + stamp)));
        assertEquals(0, a.pendingChanges());
        assertEquals(0, b.pendingChanges());
    }

    /**
     * A process on b still writing a file whose upload met a's version: b's version keeps its inode
     * under the copy's name, and the writer writes on into it. Before, the node turned into a's
     * version: the `b2` written after the conflict went nowhere, and b had nothing left "to send".
     */
    @Test
    void aWriterHoldingAFileThroughAConflictWritesOnIntoItsCopy() throws Exception {
        S3Storage b = aEditedWhatBothHold().b();
        List<String> told = new java.util.concurrent.CopyOnWriteArrayList<>();
        b.tellOwnMoves((from, to) -> told.add(from + " -> " + to));
        String copy = DOC_COPY;
        long ino;
        try (FileHandle h = b.open(p("/shared/doc"), EnumSet.of(OpenFlag.WRITE, OpenFlag.TRUNCATE), 0644)) {
            h.write(ByteBuffer.wrap("b1\n".getBytes(UTF_8)), 0);
            b.flushAll(); // an fsync: it meets a's version
            assertEquals("b1\n", inS3(copy.substring(1)));
            ino = h.inode();
            assertEquals(ino, b.metadata(p(copy)).inode(), "b's version keeps its inode under the copy's name");
            assertNotEquals(ino, b.metadata(p("/shared/doc")).inode(), "a's version is another file");
            assertEquals(List.of("/shared/doc -> " + copy), told, "the mount is told, so that the kernel drops the name");
            h.write(ByteBuffer.wrap("b2\n".getBytes(UTF_8)), 3);
        }
        b.flushAll();
        assertEquals("a's edit", inS3("shared/doc"));
        assertEquals("b1\nb2\n", inS3(copy.substring(1)));
        assertEquals("a's edit", text(b, "/shared/doc"));
        assertEquals("b1\nb2\n", text(b, copy));
        assertEquals(0, b.pendingChanges());
        assertEquals(List.of(prefix + "/shared/doc", prefix + "/shared/doc.conflict-b-20260102T030405Z"),
                raw.list(prefix + "/shared/", false).objects().stream().map(Bucket.Listed::key).filter(k -> !k.endsWith("/")).sorted().toList(),
                "one copy, not a second one for b2");
    }

    /**
     * Two writers on b, each of one content, each meeting a's next version in the same second: the
     * second's copy takes the next number. putOnce took the first copy, of the same content, for
     * the second's own upload landed unanswered, and the second writer's later writes went nowhere.
     */
    @Test
    void twoConflictsOfOneNameInOneSecondKeepTwoCopiesThoughTheirContentIsOne() throws Exception {
        TwoHosts hosts = bothHolding("base", "/shared/sm2");
        S3Storage a = hosts.a();
        S3Storage b = hosts.b();
        String copy = "shared/sm2.conflict-b-20260102T030405Z";
        try (FileHandle first = b.open(p("/shared/sm2"), EnumSet.of(OpenFlag.WRITE, OpenFlag.TRUNCATE), 0644)) {
            first.write(ByteBuffer.wrap("X\n".getBytes(UTF_8)), 0);
            put(a, "/shared/sm2", "a1");
            a.flushAll();
            first.sync(false);
            try (FileHandle second = b.open(p("/shared/sm2"), EnumSet.of(OpenFlag.WRITE, OpenFlag.TRUNCATE), 0644)) {
                second.write(ByteBuffer.wrap("X\n".getBytes(UTF_8)), 0);
                put(a, "/shared/sm2", "a2");
                a.flushAll();
                second.sync(false);
                second.write(ByteBuffer.wrap("second\n".getBytes(UTF_8)), 2);
            }
            first.write(ByteBuffer.wrap("first\n".getBytes(UTF_8)), 2);
        }
        b.flushAll();
        assertEquals("a2", inS3("shared/sm2"));
        assertEquals("X\nfirst\n", inS3(copy));
        assertEquals("X\nsecond\n", inS3(copy + "-1"));
        assertEquals(0, b.pendingChanges());
    }

    /**
     * A file renamed, and another removed, on b while their conflict copies go up: this host's
     * version is at the new name, or removed, and the copy goes again. Before, a `mv` then left b's
     * content twice (150 MB each in a tester's run) and an `rm` brought it back as the copy.
     */
    @Test
    void aFileMovedOrRemovedWhileItsConflictCopyGoesUpLeavesNoCopy() throws Exception {
        TwoHosts hosts = bothHolding("base", "/shared/r1/big", "/shared/r3/big");
        S3Storage a = hosts.a();
        S3Storage b = hosts.b();
        put(b, "/shared/r1/big", "b's work");
        put(b, "/shared/r3/big", "b's too");
        put(a, "/shared/r1/big", "a's edit");
        put(a, "/shared/r3/big", "a's also");
        a.flushAll();
        S3Server.HeldRequests held = server.holdPuts(n -> n.contains(".conflict-"), 2);
        try {
            var pass = aside(b::flushAll);
            assertTrue(held.reached().await(30, TimeUnit.SECONDS), "both copies' PUTs came");
            b.rename(p("/shared/r1/big"), p("/shared/r1/big-renamed"));
            b.removeFile(p("/shared/r3/big"));
            held.release().countDown();
            pass.get(30, TimeUnit.SECONDS);
        } finally {
            held.release().countDown();
            server.holdPuts(n -> false, 0);
        }
        b.flushAll();
        assertEquals("a's edit", inS3("shared/r1/big"));
        assertEquals("b's work", inS3("shared/r1/big-renamed"));
        assertEquals(List.of(prefix + "/shared/r1/big", prefix + "/shared/r1/big-renamed"), keysIn("shared/r1/"), "no copy");
        assertEquals(List.of(prefix + "/shared/r3/big"), keysIn("shared/r3/"), "no copy: removed");
        assertEquals(0, b.pendingChanges());
        assertEquals(List.of("big", "big-renamed"), b.list(p("/shared/r1")).stream().map(Entry::name).sorted().toList());
    }

    private List<String> keysIn(String dir) throws IOException {
        return raw.list(prefix + "/" + dir, false).objects().stream().map(Bucket.Listed::key).filter(k -> !k.endsWith("/"))
                .sorted().toList();
    }

    /** The same, with b killed after the writer's `b2` and its close: the journal sends it onto the copy at the restart. */
    @Test
    void aWriteIntoAConflictCopyOutlivesACrash() throws Exception {
        TwoHosts hosts = aEditedWhatBothHold();
        S3Storage b = hosts.b();
        String copy = DOC_COPY;
        FileHandle h = b.open(p("/shared/doc"), EnumSet.of(OpenFlag.WRITE, OpenFlag.TRUNCATE), 0644);
        h.write(ByteBuffer.wrap("b1\n".getBytes(UTF_8)), 0);
        b.flushAll();
        h.write(ByteBuffer.wrap("b2\n".getBytes(UTF_8)), 3);
        h.close();
        b.crash(); // before the debounce sent b2: only the journal has it
        S3Storage again = host(hosts.bOptions());
        again.flushAll();
        assertEquals("a's edit", inS3("shared/doc"));
        assertEquals("b1\nb2\n", inS3(copy.substring(1)));
        assertEquals("a's edit", text(again, "/shared/doc"));
        assertEquals(0, again.pendingChanges());
    }

    /**
     * b killed after its upload met a's version and before its conflict copy was settled, started
     * again a minute later: the copy keeps the name the conflict gave it. The time in it was not
     * journaled, and a restart after the copy went up (the window of one HEAD) made a second copy
     * of the same content under the restart's time (a tester's kill -9).
     */
    @Test
    void aConflictCopyKeepsItsNameThroughACrash() throws Exception {
        TwoHosts hosts = aEditedWhatBothHold();
        S3Storage b = hosts.b();
        put(b, "/shared/doc", "b's edit");
        String copy = DOC_COPY.substring(1);
        server.refusePuts(k -> k.equals(prefix + "/" + copy), 1); // the copy's first PUT: b stops there
        assertThrows(IOException.class, b::flushAll);
        b.crash();
        hosts.clock().advance(Duration.ofMinutes(1));

        S3Storage again = host(hosts.bOptions());
        again.flushAll();

        assertEquals("b's edit", inS3(copy));
        assertEquals(List.of(prefix + "/shared/doc", prefix + "/" + copy), keysIn("shared/"), "one copy, of the conflict's time");
        assertEquals(0, again.pendingChanges());
    }

    /** The name b's conflict copy of /shared/doc takes at the standing clock's time ({@link #aEditedWhatBothHold}). */
    private static final String DOC_COPY = "/shared/doc.conflict-b-20260102T030405Z";

    /** Both hosts holding /shared/doc ("base"), then a's edit of it on S3: b's next upload of it meets a's version. */
    private TwoHosts aEditedWhatBothHold() throws IOException {
        TwoHosts hosts = bothHolding("base", "/shared/doc");
        put(hosts.a(), "/shared/doc", "a's edit");
        hosts.a().flushAll();
        return hosts;
    }

    /** Hosts a and b on one standing {@code clock}; {@code bOptions} starts b again after a crash. */
    private record TwoHosts(S3Storage a, S3Storage b, S3Options bOptions, MutableClock clock) {
    }

    /** Hosts a and b on one standing clock, neither writing back on its own. */
    private TwoHosts onOneClock() throws IOException {
        MutableClock clock = startClock();
        S3Options bOptions = options("b").withClock(clock, false);
        return new TwoHosts(host(options("a").withClock(clock, false)), host(bOptions), bOptions, clock);
    }

    /** Two hosts, both holding {@code paths} as a wrote them, each {@code content}. */
    private TwoHosts bothHolding(String content, String... paths) throws IOException {
        TwoHosts hosts = onOneClock();
        S3Storage a = hosts.a();
        S3Storage b = hosts.b();
        for (String path : paths) {
            a.write(p(path), content.getBytes(UTF_8));
        }
        a.flushAll();
        for (String path : paths) {
            assertEquals(content, text(b, path));
        }
        return hosts;
    }

    @Test
    void aReaderHoldingALogOpenOnAnotherHostReadsTheLinesAppendedThereButKeepsWhatItOpenedOfARewrite() throws Exception {
        String large = "x".repeat((int) S3Options.DEFAULT_PREFETCH_BELOW) + "\n"; // fetched at its open, not with its attributes
        TwoHosts hosts = bothHolding(large, "/shared/agent.log", "/shared/big.log", "/shared/plan.md");
        S3Storage a = hosts.a();
        S3Storage b = hosts.b();
        a.write(p("/shared/agent.log"), "one\n".getBytes(UTF_8));
        a.flushAll();
        hosts.clock().advance(S3Options.DEFAULT_VALIDITY);
        try (FileHandle log = b.open(p("/shared/agent.log"), EnumSet.of(OpenFlag.READ), 0);
             FileHandle big = b.open(p("/shared/big.log"), EnumSet.of(OpenFlag.READ), 0);
             FileHandle plan = b.open(p("/shared/plan.md"), EnumSet.of(OpenFlag.READ), 0)) {
            assertEquals("one\n", readFrom(log, 0));
            for (String line : List.of("two\n", "three\n")) {
                a.append(p("/shared/agent.log"), line.getBytes(UTF_8));
                a.append(p("/shared/big.log"), line.getBytes(UTF_8));
                a.flushAll();
                assertEquals("", readFrom(log, b.metadata(p("/shared/agent.log")).size()), "not before b lists it again");
                hosts.clock().advance(S3Options.DEFAULT_VALIDITY);
                b.metadata(p("/shared/agent.log"));
            }
            String rewritten = "# " + large + "more\n"; // longer, but what b read is not its start
            a.write(p("/shared/plan.md"), rewritten.getBytes(UTF_8));
            a.flushAll();
            hosts.clock().advance(S3Options.DEFAULT_VALIDITY);

            // tail -f: fstat shows it longer, and the read from where it was goes on with a's lines
            assertEquals(4 + 4 + 6, b.metadata(p("/shared/agent.log")).size());
            assertEquals("two\nthree\n", readFrom(log, 4));
            assertEquals("one\ntwo\nthree\n", readFrom(log, 0));
            // a file not cached here: only its new bytes come down, checked by the version's SHA-256
            assertEquals(large.length() + 4 + 6, b.metadata(p("/shared/big.log")).size());
            long down = b.bytesMoved()[0];
            assertEquals("two\nthree\n", readFrom(big, large.length()));
            assertEquals(4 + 6, b.bytesMoved()[0] - down);
            assertEquals(rewritten.length(), b.metadata(p("/shared/plan.md")).size());
            assertEquals(large, readFrom(plan, 0), "a rewrite is read from the next open on");
            assertEquals(rewritten, text(b, "/shared/plan.md"));
        }
    }

    @Test
    void aFileAnotherHostRewroteAsLongKnowsItsNewSha256FromTheHeadThatSettledIt() throws Exception {
        String before = "1".repeat((int) S3Options.DEFAULT_PREFETCH_BELOW) + "\n"; // not fetched with its attributes
        String after = "2".repeat((int) S3Options.DEFAULT_PREFETCH_BELOW) + "\n";
        TwoHosts hosts = bothHolding(before, "/shared/plan.md");
        hosts.a().write(p("/shared/plan.md"), after.getBytes(UTF_8));
        hosts.a().flushAll();
        hosts.clock().advance(S3Options.DEFAULT_VALIDITY);
        S3Storage b = hosts.b();
        // as long as b's copy: the listing doubts it, and the HEAD that asks settles it
        assertEquals(after.length(), b.metadata(p("/shared/plan.md")).size());
        Map<String, Long> asked = b.requests();
        assertEquals(ContentHash.of(after.getBytes(UTF_8)), b.etag(p("/shared/plan.md")));
        assertEquals(asked, b.requests(), "the HEAD's SHA-256 is the new version's");
        assertEquals(after, text(b, "/shared/plan.md"));
    }

    @Test
    @Timeout(60)
    void anAppendToALargeLogAnotherHostExtendedAsksS3ForItsVersionOnceAndFetchesOnlyItsNewBytes() throws Exception {
        String large = "x".repeat((int) Bucket.MIN_PART_BYTES) + "\n";
        TwoHosts hosts = bothHolding(large, "/shared/agent.log");
        S3Storage a = hosts.a();
        S3Storage b = hosts.b();
        a.append(p("/shared/agent.log"), "a's\n".getBytes(UTF_8));
        a.flushAll();
        hosts.clock().advance(S3Options.DEFAULT_VALIDITY);

        // echo line >> agent.log: the shell's lookup, then its open to append
        Map<String, Long> before = b.requests();
        long down = b.bytesMoved()[0];
        assertEquals(large.length() + 4, b.metadata(p("/shared/agent.log")).size());
        try (FileHandle log = b.open(p("/shared/agent.log"), EnumSet.of(OpenFlag.WRITE, OpenFlag.APPEND), 0)) {
            log.write(ByteBuffer.wrap("b's\n".getBytes(UTF_8)), 0);
        }
        Map<String, Long> made = Requests.since(before, b.requests());
        assertEquals(1L, made.getOrDefault("head", 0L), "the version's SHA-256 asked once: " + made);
        assertEquals(1L, made.getOrDefault("get", 0L), made.toString());
        assertEquals(4, b.bytesMoved()[0] - down, "only a's line came down");
        b.flushAll();
        hosts.clock().advance(S3Options.DEFAULT_VALIDITY);
        assertEquals(large + "a's\nb's\n", text(a, "/shared/agent.log"));
    }

    @Test
    void aReaderOfALargeLogReadAsItCameDownFollowsWhatAnotherHostAppendsOnceItIsAllThere() throws Exception {
        S3Storage a = hostUploadingInParts(options("a"));
        byte[] start = randomBytes(Bucket.MIN_PART_BYTES + 99, 8);
        a.mkdir(p("/shared"));
        a.write(p("/shared/huge.log"), start);
        a.flushAll();
        S3Storage b = hostUploadingInParts(options("b").withValidity(Duration.ZERO));
        try (FileHandle h = b.open(p("/shared/huge.log"), EnumSet.of(OpenFlag.READ), 0)) {
            assertArrayEquals(start, readWhole(h, start.length)); // its ranges, as they came
            a.append(p("/shared/huge.log"), "more\n".getBytes(UTF_8));
            a.flushAll();
            assertEquals(start.length + 5, b.metadata(p("/shared/huge.log")).size());
            assertEquals("more\n", readFrom(h, start.length));
        }
    }

    @Test
    void aLogRotatedOnAnotherHostIsAnotherFileHereUnlessItIsLockedHere() throws Exception {
        TwoHosts hosts = bothHolding("1\n2\n3\n", "/shared/agent.log", "/shared/jobs.db");
        S3Storage a = hosts.a();
        S3Storage b = hosts.b();
        long logInode = b.metadata(p("/shared/agent.log")).inode();
        long dbInode = b.metadata(p("/shared/jobs.db")).inode();
        try (FileHandle log = b.open(p("/shared/agent.log"), EnumSet.of(OpenFlag.READ), 0);
             FileHandle db = b.open(p("/shared/jobs.db"), EnumSet.of(OpenFlag.READ), 0)) {
            assertTrue(db.locks().tryFlock(1, dev.chibifs.store.LockType.READ));
            a.append(p("/shared/agent.log"), "4\n".getBytes(UTF_8));
            a.flushAll();
            hosts.clock().advance(S3Options.DEFAULT_VALIDITY);
            assertEquals(logInode, b.metadata(p("/shared/agent.log")).inode(), "appended to: the same file");
            assertEquals("4\n", readFrom(log, 6));

            // rotated: mv agent.log agent.log.1, and a new agent.log; the database rewritten shorter
            a.rename(p("/shared/agent.log"), p("/shared/agent.log.1"));
            a.write(p("/shared/agent.log"), "new\n".getBytes(UTF_8));
            a.write(p("/shared/jobs.db"), "v2\n".getBytes(UTF_8));
            a.flushAll();
            hosts.clock().advance(S3Options.DEFAULT_VALIDITY);
            assertNotEquals(logInode, b.metadata(p("/shared/agent.log")).inode(), "tail -F sees another file");
            assertEquals("new\n", text(b, "/shared/agent.log"));
            assertEquals("1\n2\n3\n4\n", text(b, "/shared/agent.log.1"));
            // the open handle keeps what it read, and says so
            assertEquals("1\n2\n3\n4\n", readFrom(log, 0));
            assertEquals(8, log.metadata().size());
            assertEquals(dbInode, b.metadata(p("/shared/jobs.db")).inode(), "locked here: the node the lock holders have");
            assertEquals("v2\n", text(b, "/shared/jobs.db"));
        }
    }

    /** What {@code h} reads from {@code position} to its end, as text. */
    private static String readFrom(FileHandle h, long position) throws IOException {
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
        ByteBuffer buf = ByteBuffer.allocate(8192);
        for (int n; (n = h.read(buf.clear(), position)) > 0; position += n) {
            out.write(buf.array(), 0, n);
        }
        return out.toString(UTF_8);
    }

    @Test
    void linesAppendedOnBothHostsBothStayInTheFileTheLaterUploadAtTheEnd() throws Exception {
        TwoHosts hosts = bothHolding("- plan\n", "/shared/tasks.md");
        S3Storage a = hosts.a();
        S3Storage b = hosts.b();

        a.append(p("/shared/tasks.md"), "- a's task\n".getBytes(UTF_8));
        b.append(p("/shared/tasks.md"), "- b's task\n".getBytes(UTF_8));
        b.append(p("/shared/tasks.md"), "- b's second\n".getBytes(UTF_8));
        a.append(p("/shared/fresh.log"), "a made it\n".getBytes(UTF_8));
        b.append(p("/shared/fresh.log"), "b made it too\n".getBytes(UTF_8));
        a.setExecutable(p("/shared/tasks.md"), 0755);
        a.flushAll();
        b.flushAll(); // both find S3 changed since b last looked: b's lines go at the end of a's

        assertEquals("- plan\n- a's task\n- b's task\n- b's second\n", inS3("shared/tasks.md"));
        assertEquals("a made it\nb made it too\n", inS3("shared/fresh.log"));
        assertEquals(List.of("fresh.log", "tasks.md"), b.list(p("/shared")).stream().map(Entry::name).sorted().toList(),
                "no conflict copies");
        assertEquals(0755, b.metadata(p("/shared/tasks.md")).mode() & 0777, "the merge keeps a's attributes");
        assertEquals(inS3("shared/tasks.md"), text(b, "/shared/tasks.md"), "b holds the merge");
        assertEquals(inS3("shared/fresh.log"), text(b, "/shared/fresh.log"));
        assertEquals(0, b.pendingChanges());
        assertEquals(ContentHash.of(inS3("shared/tasks.md").getBytes(UTF_8)), b.etag(p("/shared/tasks.md")));
    }

    @Test
    void linesAppendedToALogAnotherHostMovedAwayGoUpAloneAsTheLogAnew() throws Exception {
        // logrotate (`mv log log.1`) on b while a appends with `>>`: on one disk the next `>>` makes
        // log anew; a's upload put its whole file back under log, every rotated line in both files
        TwoHosts hosts = bothHolding("line 1\n", "/shared/log");
        S3Storage a = hosts.a();
        S3Storage b = hosts.b();
        a.append(p("/shared/log"), "line 2\n".getBytes(UTF_8));
        a.flushAll();
        hosts.clock().advance(S3Options.DEFAULT_VALIDITY);
        assertEquals("line 1\nline 2\n", text(b, "/shared/log"));

        a.append(p("/shared/log"), "line 3\n".getBytes(UTF_8));
        b.rename(p("/shared/log"), p("/shared/log.1"));
        b.flushAll();
        assertNull(inS3("shared/log"));
        a.append(p("/shared/log"), "line 4\n".getBytes(UTF_8));
        a.flushAll();
        assertEquals("line 1\nline 2\n", inS3("shared/log.1"));
        assertEquals("line 3\nline 4\n", inS3("shared/log"), "the appends alone, each line once");
        assertEquals("line 3\nline 4\n", text(a, "/shared/log"), "a holds what S3 has");
        a.append(p("/shared/log"), "line 5\n".getBytes(UTF_8));
        a.flushAll();
        assertEquals("line 3\nline 4\nline 5\n", inS3("shared/log"));
        assertEquals(0, a.pendingChanges());
    }

    @Test
    void anAppenderThatFsyncsAndWritesOnMergesAgainFromWhereItsLastMergeEnded() throws Exception {
        TwoHosts hosts = bothHolding("start\n", "/shared/run.log");
        S3Storage a = hosts.a();
        S3Storage b = hosts.b();
        a.append(p("/shared/run.log"), "a1\n".getBytes(UTF_8));
        a.flushAll();

        try (FileHandle h = b.open(p("/shared/run.log"), EnumSet.of(OpenFlag.WRITE, OpenFlag.APPEND), 0644)) {
            h.write(ByteBuffer.wrap("b1\n".getBytes(UTF_8)), 0);
            h.sync(false); // S3 has it, at the end of a's, though b's copy, open to write, lacks a's line
            assertEquals("start\na1\nb1\n", inS3("shared/run.log"));
            a.append(p("/shared/run.log"), "a2\n".getBytes(UTF_8));
            a.flushAll(); // a read its own upload as changed on S3 (a listing): b's line came with it
            h.write(ByteBuffer.wrap("b2\n".getBytes(UTF_8)), 0);
        }
        b.flushAll();

        assertEquals("start\na1\nb1\na2\nb2\n", inS3("shared/run.log"), "each line once, in the order it went up");
        assertEquals(inS3("shared/run.log"), text(b, "/shared/run.log"));
        assertEquals(List.of("run.log"), b.list(p("/shared")).stream().map(Entry::name).toList());
        assertEquals(0, b.pendingChanges());
    }

    /**
     * Holds the {@code nth} PUT (from 1) of the object at {@code path} from now on that reaches the
     * server's store (s3proxy refuses a PUT whose condition fails before that) until released.
     */
    private S3Server.HeldRequests holdPut(String path, int nth) {
        AtomicInteger puts = new AtomicInteger();
        String name = prefix + "/" + path;
        return server.holdPuts(n -> n.equals(name) && puts.incrementAndGet() == nth, 1);
    }

    /**
     * Runs {@code change} on a thread of its own, its {@code nth} PUT of {@code path} held (see
     * {@link #holdPut}) while {@code meanwhile} runs; then lets it go. What the change threw, or null.
     */
    private Throwable whilePutIsHeld(String path, int nth, Meanwhile change, Meanwhile meanwhile) throws Exception {
        S3Server.HeldRequests held = holdPut(path, nth);
        try {
            var done = java.util.concurrent.CompletableFuture.runAsync(() -> {
                try {
                    change.run();
                } catch (Exception e) {
                    throw new java.util.concurrent.CompletionException(e);
                }
            });
            assertTrue(held.reached().await(30, TimeUnit.SECONDS), "the PUT came");
            meanwhile.run();
            held.release().countDown();
            try {
                done.get(30, TimeUnit.SECONDS);
                return null;
            } catch (java.util.concurrent.ExecutionException e) {
                return e.getCause() instanceof java.util.concurrent.CompletionException c ? c.getCause() : e.getCause();
            }
        } finally {
            held.release().countDown();
            server.holdPuts(n -> false, 0);
        }
    }

    @Test
    @Timeout(60)
    void aMergeThatMeetsYetAnotherVersionGoesAtTheEndOfThatOne() throws Exception {
        TwoHosts hosts = bothHolding("base\n", "/shared/log");
        S3Storage a = hosts.a();
        S3Storage b = hosts.b();
        a.append(p("/shared/log"), "a1\n".getBytes(UTF_8));
        a.flushAll();
        b.append(p("/shared/log"), "b1\n".getBytes(UTF_8));
        // b's upload finds a's (412); its merge's PUT waits while a appends once more
        assertNull(whilePutIsHeld("shared/log", 1, b::flushAll, () -> {
            a.append(p("/shared/log"), "a2\n".getBytes(UTF_8));
            a.flushAll();
        }));
        assertEquals("base\na1\na2\nb1\n", inS3("shared/log"));
        assertEquals(List.of("log"), b.list(p("/shared")).stream().map(Entry::name).toList());
        assertEquals(inS3("shared/log"), text(b, "/shared/log"));
    }

    @Test
    @Timeout(60)
    void linesAppendedWhileTheirUploadIsUnderWayGoAtTheEndOfTheNextMergeOnce() throws Exception {
        TwoHosts hosts = bothHolding("base\n", "/shared/log");
        S3Storage a = hosts.a();
        S3Storage b = hosts.b();
        a.append(p("/shared/log"), "a1\n".getBytes(UTF_8));
        // appended to after the upload read the file
        assertNull(whilePutIsHeld("shared/log", 1, a::flushAll, () -> a.append(p("/shared/log"), "a2\n".getBytes(UTF_8))));
        assertEquals("base\na1\n", inS3("shared/log"));
        b.append(p("/shared/log"), "b1\n".getBytes(UTF_8));
        b.flushAll();
        a.flushAll();

        assertEquals("base\na1\nb1\na2\n", inS3("shared/log"), "a1 went up once");
        assertEquals(inS3("shared/log"), text(a, "/shared/log"));
    }

    @Test
    @Timeout(60)
    void aConditionalAppendThatLosesTheRaceToS3IsAConflictNotAMerge() throws Exception {
        TwoHosts hosts = bothHolding("base\n", "/shared/log");
        S3Storage a = hosts.a();
        S3Storage b = hosts.b();
        String seen = b.etag(p("/shared/log"));
        // b's check passes; its upload waits while a's append goes up
        Throwable failed = whilePutIsHeld("shared/log", 1,
                () -> b.append(p("/shared/log"), "b\n".getBytes(UTF_8), Precondition.matching(seen)), () -> {
                    a.append(p("/shared/log"), "a\n".getBytes(UTF_8));
                    a.flushAll();
                });
        assertTrue(failed instanceof EtagMismatchException, String.valueOf(failed));
        assertEquals("base\na\n", inS3("shared/log"), "checked against one version, it changes no other");
        assertEquals("base\nb\n", inS3("shared/log.conflict-b-20260102T030405Z"));
    }

    @Test
    void anAppendAfterAnotherChangeHereIsAConflictAndAnAppendOverAnotherHostsRewriteGoesAtItsEnd() throws Exception {
        TwoHosts hosts = bothHolding("v1\n", "/shared/notes", "/shared/plan", "/shared/ideas");
        S3Storage a = hosts.a();
        S3Storage b = hosts.b();

        put(a, "/shared/notes", "a rewrote it\n");
        a.append(p("/shared/plan"), "a's line\n".getBytes(UTF_8));
        b.append(p("/shared/notes"), "b's line\n".getBytes(UTF_8));
        try (FileHandle h = b.open(p("/shared/plan"), EnumSet.of(OpenFlag.WRITE), 0644)) {
            h.write(ByteBuffer.wrap("V".getBytes(UTF_8)), 0); // not an append: b's version is a version of its own
        }
        b.append(p("/shared/plan"), "b's line\n".getBytes(UTF_8));
        a.append(p("/shared/ideas"), "a's idea\n".getBytes(UTF_8));
        b.append(p("/shared/ideas"), "b's idea\n".getBytes(UTF_8));
        b.setExecutable(p("/shared/ideas"), 0755); // a merge would keep a's attributes: b's version is its own
        a.flushAll();
        b.flushAll();

        assertEquals("a rewrote it\nb's line\n", inS3("shared/notes"), "appended to the file as it is");
        assertEquals("v1\na's line\n", inS3("shared/plan"));
        assertEquals("V1\nb's line\n", inS3("shared/plan.conflict-b-20260102T030405Z"));
        assertEquals("v1\na's idea\n", inS3("shared/ideas"));
        assertEquals("v1\nb's idea\n", inS3("shared/ideas.conflict-b-20260102T030405Z"));
        assertEquals(0, b.pendingChanges());
    }

    @Test
    void appendsMadeBeforeAKillStillMergeAtTheNextStartAndAWriteAfterThemStillConflicts() throws Exception {
        TwoHosts hosts = bothHolding("base\n", "/shared/log", "/shared/plan");
        S3Storage a = hosts.a();
        S3Storage b = hosts.b();
        b.append(p("/shared/log"), "b's line\n".getBytes(UTF_8));
        b.append(p("/shared/plan"), "b's line\n".getBytes(UTF_8));
        FileHandle h = b.open(p("/shared/plan"), EnumSet.of(OpenFlag.WRITE), 0644);
        h.write(ByteBuffer.wrap("B".getBytes(UTF_8)), 0);
        b.crash(); // no flush, no compaction, the file still open: what a kill -9 leaves
        a.append(p("/shared/log"), "a's line\n".getBytes(UTF_8));
        a.append(p("/shared/plan"), "a's line\n".getBytes(UTF_8));
        a.flushAll();

        S3Storage again = host(hosts.bOptions());
        again.flushDue();
        assertEquals("base\na's line\nb's line\n", inS3("shared/log"));
        assertEquals("base\na's line\n", inS3("shared/plan"));
        assertEquals("Base\nb's line\n", inS3("shared/plan.conflict-b-20260102T030405Z"));
        assertEquals(0, again.pendingChanges());
    }

    /**
     * A crash tester's kill -9 just after {@code echo new > f} returned: the kernel's RELEASE had not
     * come, so the restart took f for half written, showed its old content and kept "new" only as a
     * conflict copy (a new file: only the copy). The close(2) (FUSE's FLUSH) is what the journal
     * records now; a write after it, through another descriptor of the open, records the writer again.
     */
    @Test
    void aFileWhoseCloseReturnedBeforeAKillGoesUpAsWrittenAndOneWrittenAfterIsKeptAside() throws Exception {
        S3Storage a = host(options("a"));
        a.write(p("/shared/g"), "old\n".getBytes(UTF_8));
        a.write(p("/shared/h"), "old\n".getBytes(UTF_8));
        a.flushAll();
        FileHandle g = a.open(p("/shared/g"), EnumSet.of(OpenFlag.WRITE, OpenFlag.TRUNCATE), 0644);
        g.write(ByteBuffer.wrap("new\n".getBytes(UTF_8)), 0);
        g.closedOnce(); // echo's close(2) returned; its release is on its way
        FileHandle made = a.open(p("/shared/p1"), EnumSet.of(OpenFlag.WRITE, OpenFlag.CREATE), 0644);
        made.write(ByteBuffer.wrap("x".getBytes(UTF_8)), 0);
        made.closedOnce();
        FileHandle h = a.open(p("/shared/h"), EnumSet.of(OpenFlag.WRITE, OpenFlag.TRUNCATE), 0644);
        h.write(ByteBuffer.wrap("half".getBytes(UTF_8)), 0);
        h.closedOnce(); // one descriptor closed ...
        h.write(ByteBuffer.wrap(" written".getBytes(UTF_8)), 4); // ... another of the same open writes on
        a.crash(); // no release, no flush: what a kill -9 leaves

        S3Storage again = host(options("a"));
        again.flushAll();
        assertEquals("new\n", inS3("shared/g"), "as its close left it");
        assertEquals("x", inS3("shared/p1"), "made, written and closed");
        assertEquals("old\n", inS3("shared/h"), "still being written: not over S3's");
        List<String> names = again.list(p("/shared")).stream().map(Entry::name).sorted().toList();
        assertEquals(4, names.size(), names.toString());
        assertTrue(names.containsAll(List.of("g", "h", "p1")) && names.stream().anyMatch(n -> n.startsWith("h.conflict-a-")),
                names.toString());
    }

    @Test
    void aFileOpenOnlyToAppendGoesUpEveryFewPeriodsWhileItStaysOpenAndOthersWaitForTheirClose() throws Exception {
        MutableClock clock = startClock();
        Duration every = Duration.ofSeconds(2);
        S3Storage a = host(options("a").withClock(clock, false).withFlushAfter(every));
        Duration fewPeriods = every.multipliedBy(Overlay.MAX_DEFERRALS);
        a.mkdir(p("/shared/logs"));
        try (FileHandle log = a.open(p("/shared/logs/agent.log"), EnumSet.of(OpenFlag.WRITE, OpenFlag.APPEND, OpenFlag.CREATE), 0644);
             FileHandle out = a.open(p("/shared/logs/out.bin"), EnumSet.of(OpenFlag.WRITE, OpenFlag.CREATE), 0644)) {
            log.write(ByteBuffer.wrap("one\n".getBytes(UTF_8)), 0);
            out.write(ByteBuffer.wrap("half".getBytes(UTF_8)), 0);
            clock.advance(fewPeriods.minusMillis(1));
            a.flushDue();
            assertNull(inS3("shared/logs/agent.log"), "not due yet");
            clock.advance(Duration.ofMillis(1));
            a.flushDue();
            assertEquals("one\n", inS3("shared/logs/agent.log"), "up though still open");

            clock.advance(fewPeriods); // nothing new meanwhile: nothing to upload
            log.write(ByteBuffer.wrap("two\n".getBytes(UTF_8)), 0);
            clock.advance(fewPeriods.minusMillis(1));
            a.flushDue();
            assertEquals("one\n", inS3("shared/logs/agent.log"), "due a few periods after its first change since");
            clock.advance(Duration.ofMillis(1));
            a.flushDue();
            assertEquals("one\ntwo\n", inS3("shared/logs/agent.log"));

            // another host appends meanwhile: the open log's next lines merge after its, each once
            S3Storage b = host(options("b").withClock(clock, false));
            b.append(p("/shared/logs/agent.log"), "b's\n".getBytes(UTF_8));
            b.flushAll();
            log.write(ByteBuffer.wrap("three\n".getBytes(UTF_8)), 0);
            clock.advance(fewPeriods);
            a.flushDue();
            assertEquals("one\ntwo\nb's\nthree\n", inS3("shared/logs/agent.log"));
            long requests = a.requests().values().stream().mapToLong(Long::longValue).sum();
            clock.advance(fewPeriods);
            a.flushDue();
            assertEquals(requests, a.requests().values().stream().mapToLong(Long::longValue).sum(),
                    "nothing new while it stays open: nothing asked of S3 " + a.requests());
            log.write(ByteBuffer.wrap("four\n".getBytes(UTF_8)), 0);
            clock.advance(fewPeriods);
            a.flushDue();
            assertEquals("one\ntwo\nb's\nthree\nfour\n", inS3("shared/logs/agent.log"));

            clock.advance(Duration.ofMinutes(5));
            a.flushDue();
            assertNull(inS3("shared/logs/out.bin"), "a file written otherwise goes up at its close");
        }
        clock.advance(every);
        a.flushDue();
        assertEquals("half", inS3("shared/logs/out.bin"));
        assertEquals("one\ntwo\nb's\nthree\nfour\n", text(a, "/shared/logs/agent.log"), "a holds the merge once closed");
        assertEquals(0, a.pendingChanges());
    }

    @Test
    @Timeout(60)
    void aLargeLogKeptOpenSendsOnlyItsNewLinesAndS3CopiesWhatItHasUnlessAnotherHostCameFirst() throws Exception {
        // no write-back of its own: each sync's requests are that sync's (a pass racing it for the
        // claim made this test's counts flaky)
        S3Storage a = host(options("a").withClock(startClock(), false));
        byte[] start = randomBytes(Bucket.MIN_PART_BYTES + 10, 3);
        a.mkdir(p("/shared"));
        try (FileHandle log = a.open(p("/shared/big.log"), EnumSet.of(OpenFlag.WRITE, OpenFlag.APPEND, OpenFlag.CREATE), 0644)) {
            log.write(ByteBuffer.wrap(start), 0);
            log.sync(false);
            Map<String, Long> before = a.requests();
            log.write(ByteBuffer.wrap("one\n".getBytes(UTF_8)), 0);
            log.sync(false);
            Map<String, Long> made = Requests.since(before, a.requests());
            assertEquals(1L, made.get("copy-part"), made.toString());
            assertEquals(1L, made.get("put-part"), made.toString());
            assertNull(made.get("put"), made.toString());

            // another host's line reached S3 first: the copy's version is gone, so a's line merges
            S3Storage b = host(options("b"));
            b.append(p("/shared/big.log"), "b's\n".getBytes(UTF_8));
            b.flushAll();
            log.write(ByteBuffer.wrap("two\n".getBytes(UTF_8)), 0);
            Map<String, Long> beforeMerge = a.requests();
            long down = a.bytesMoved()[0];
            long up = a.bytesMoved()[1];
            log.sync(false);
            // the merge: b's version is a's with b's line: only that line comes down (their hash
            // tells), and S3 copies their version into the merge
            made = Requests.since(beforeMerge, a.requests());
            assertEquals(1L, made.get("get"), made.toString());
            assertNull(made.get("put"), made.toString());
            assertEquals(4, a.bytesMoved()[0] - down, "only b's line came down");
            assertTrue(a.bytesMoved()[1] - up < 1024, "only a's line went up: " + (a.bytesMoved()[1] - up));
            java.io.ByteArrayOutputStream all = new java.io.ByteArrayOutputStream();
            all.write(start);
            all.write("one\nb's\ntwo\n".getBytes(UTF_8));
            assertArrayEquals(all.toByteArray(), inS3Bytes("shared/big.log"));

            // another host rewrites it, as long: a's next line goes at the end of that version, which
            // comes down whole
            S3Storage c = host(options("c"));
            byte[] rewritten = randomBytes(all.size(), 4);
            c.write(p("/shared/big.log"), rewritten);
            c.flushAll();
            log.write(ByteBuffer.wrap("three\n".getBytes(UTF_8)), 0);
            log.sync(false);
            all.reset();
            all.write(rewritten);
            all.write("three\n".getBytes(UTF_8));
            assertArrayEquals(all.toByteArray(), inS3Bytes("shared/big.log"));
            assertEquals(ContentHash.of(all.toByteArray()), raw.head(prefix + "/shared/big.log").meta().get(S3Storage.META_SHA),
                    "the hash every host trusts is the content's");
        }
        // closed with nothing appended since that merge: a takes S3's version, and sends nothing of its own
        Map<String, Long> beforeClose = a.requests();
        long up = a.bytesMoved()[1];
        a.flushAll();
        Map<String, Long> atClose = Requests.since(beforeClose, a.requests());
        assertNull(atClose.get("put"), atClose.toString());
        assertNull(atClose.get("create-upload"), atClose.toString());
        assertEquals(0, a.bytesMoved()[1] - up, "nothing went up: " + atClose);
        assertArrayEquals(inS3Bytes("shared/big.log"), a.read(p("/shared/big.log")), "a holds the merge once closed");
        assertEquals(0, a.pendingChanges());
        assertEquals(List.of("big.log"), a.list(p("/shared")).stream().map(e -> e.name()).toList(), "no conflict copy");
    }

    @Test
    @Timeout(60)
    void aLogKeptOpenAfterAMergeSendsItsNewLinesWithoutDownloadingAndTakesTheMergeAtItsClose() throws Exception {
        S3Options oa = options("a").withClock(startClock(), false);
        S3Storage a = host(oa);
        S3Storage b = host(options("b"));
        byte[] start = randomBytes(Bucket.MIN_PART_BYTES + 10, 5);
        java.io.ByteArrayOutputStream all = new java.io.ByteArrayOutputStream();
        all.write(start);
        a.mkdir(p("/shared"));
        try (FileHandle log = a.open(p("/shared/big.log"), EnumSet.of(OpenFlag.WRITE, OpenFlag.APPEND, OpenFlag.CREATE), 0644)) {
            log.write(ByteBuffer.wrap(start), 0);
            log.sync(false);
            b.append(p("/shared/big.log"), "b1\n".getBytes(UTF_8));
            b.flushAll();
            log.write(ByteBuffer.wrap("a1\n".getBytes(UTF_8)), 0);
            log.sync(false); // the merge: b's line comes down, S3 copies the rest
            all.write("b1\na1\n".getBytes(UTF_8));
            assertArrayEquals(all.toByteArray(), inS3Bytes("shared/big.log"));

            // nobody else wrote since: a's next line goes onto the merge, nothing comes down
            for (String line : List.of("a2\n", "a3\n")) {
                log.write(ByteBuffer.wrap(line.getBytes(UTF_8)), 0);
                Map<String, Long> before = a.requests();
                long down = a.bytesMoved()[0];
                long up = a.bytesMoved()[1];
                log.sync(false);
                Map<String, Long> made = Requests.since(before, a.requests());
                assertNull(made.get("get"), made.toString());
                assertNull(made.get("abort-upload"), made.toString());
                assertNull(made.get("put"), made.toString());
                assertEquals(1L, made.get("copy-part"), made.toString());
                assertEquals(1L, made.get("complete-upload"), made.toString());
                assertEquals(0, a.bytesMoved()[0] - down, "nothing came down: " + made);
                assertEquals(line.length(), a.bytesMoved()[1] - up, "only the line went up: " + made);
                all.write(line.getBytes(UTF_8));
                assertArrayEquals(all.toByteArray(), inS3Bytes("shared/big.log"));
                assertEquals(ContentHash.of(all.toByteArray()), raw.head(prefix + "/shared/big.log").meta().get(S3Storage.META_SHA),
                        "the hash of the merge with the line: only the line was hashed for it");
            }

            // b appends again: only its line comes down, a's goes at its end
            b.append(p("/shared/big.log"), "b2\n".getBytes(UTF_8));
            b.flushAll();
            log.write(ByteBuffer.wrap("a4\n".getBytes(UTF_8)), 0);
            long down = a.bytesMoved()[0];
            log.sync(false);
            assertEquals(3, a.bytesMoved()[0] - down, "only b's line came down");
            all.write("b2\na4\n".getBytes(UTF_8));
            assertArrayEquals(all.toByteArray(), inS3Bytes("shared/big.log"));
            assertEquals(ContentHash.of(all.toByteArray()), raw.head(prefix + "/shared/big.log").meta().get(S3Storage.META_SHA),
                    "the hash every host trusts is the content's");
        }
        // the close: S3 still has the last merge, which becomes a's copy; nothing moves but a HEAD
        Map<String, Long> beforeClose = a.requests();
        long[] moved = a.bytesMoved();
        a.flushAll();
        Map<String, Long> atClose = Requests.since(beforeClose, a.requests());
        assertNull(atClose.get("get"), atClose.toString());
        assertNull(atClose.get("put"), atClose.toString());
        assertNull(atClose.get("create-upload"), atClose.toString());
        assertArrayEquals(moved, a.bytesMoved(), "nothing moved: " + atClose);
        assertEquals(0, a.pendingChanges());
        assertArrayEquals(all.toByteArray(), a.read(p("/shared/big.log")), "a holds the merge once closed");
        assertEquals(List.of("big.log"), a.list(p("/shared")).stream().map(e -> e.name()).toList(), "no conflict copy");
        try (java.util.stream.Stream<Path> copies = Files.list(oa.cacheDir().resolve("upload"))) {
            assertEquals(List.of(), copies.toList(), "no copy left beside the cache");
        }
    }

    /**
     * A log held open on a, merged with b's lines: what a's writer did next, with b appending
     * again before it. Returns a's handle, after the merge, with a0, b1, a1 on S3.
     */
    private FileHandle logMergedWhileOpen(S3Storage a, S3Storage b, String name) throws IOException {
        a.mkdir(p("/shared"));
        FileHandle log = a.open(p("/shared/" + name), EnumSet.of(OpenFlag.WRITE, OpenFlag.APPEND, OpenFlag.CREATE), 0644);
        log.write(ByteBuffer.wrap("a0\n".getBytes(UTF_8)), 0);
        log.sync(false);
        b.append(p("/shared/" + name), "b1\n".getBytes(UTF_8));
        b.flushAll();
        log.write(ByteBuffer.wrap("a1\n".getBytes(UTF_8)), 0);
        log.sync(false); // the merge, kept beside a's copy while the writer stays open
        assertEquals("a0\nb1\na1\n", inS3("shared/" + name));
        return log;
    }

    private static void assertNoCopyLeft(S3Options o) throws IOException {
        try (java.util.stream.Stream<Path> copies = Files.list(o.cacheDir().resolve("upload"))) {
            assertEquals(List.of(), copies.toList(), "no copy left beside the cache");
        }
    }

    @Test
    @Timeout(60)
    void aLogClosedWithNothingNewAfterAnotherHostAppendedAgainTakesTheirVersionAndLeavesNoCopy() throws Exception {
        S3Options oa = options("a").withClock(startClock(), false);
        S3Storage a = host(oa);
        S3Storage b = host(options("b"));
        try (FileHandle log = logMergedWhileOpen(a, b, "agent.log")) {
            assertTrue(a.state().contains("; cache: 0.0 MiB in 1 file and 0.0 MiB beside them"), a.state());
            b.append(p("/shared/agent.log"), "b2\n".getBytes(UTF_8));
            b.flushAll();
        }
        a.flushAll(); // the close: S3 has more than the merge, and a nothing new to add
        assertTrue(a.state().contains("; cache: 0.0 MiB in 1 file;"), "the merge kept went: " + a.state());
        assertEquals("a0\nb1\na1\nb2\n", inS3("shared/agent.log"));
        assertEquals("a0\nb1\na1\nb2\n", new String(a.read(p("/shared/agent.log")), UTF_8));
        assertEquals(List.of("agent.log"), a.list(p("/shared")).stream().map(e -> e.name()).toList(), "no conflict copy");
        assertNoCopyLeft(oa);
    }

    @Test
    @Timeout(60)
    void aLogRemovedWhileOpenAfterAMergeGoesFromS3() throws Exception {
        S3Options oa = options("a").withClock(startClock(), false);
        S3Storage a = host(oa);
        S3Storage b = host(options("b").withValidity(Duration.ZERO));
        try (FileHandle log = logMergedWhileOpen(a, b, "agent.log")) {
            a.delete(p("/shared/agent.log")); // S3 has the merge, not the version a's copy was based on
            a.flushAll();
            assertNull(raw.head(prefix + "/shared/agent.log"), "the merge a made is a's to remove");
        }
        a.flushAll();
        assertNull(raw.head(prefix + "/shared/agent.log"));
        assertThrows(NoSuchFileException.class, () -> b.read(p("/shared/agent.log")));
        assertNoCopyLeft(oa);
    }

    @Test
    @Timeout(60)
    void aLogRenamedWhileOpenAfterAMergeKeepsTheOtherHostsLinesUnderItsNewName() throws Exception {
        S3Options oa = options("a").withClock(startClock(), false);
        S3Storage a = host(oa);
        S3Storage b = host(options("b").withValidity(Duration.ZERO));
        try (FileHandle log = logMergedWhileOpen(a, b, "agent.log")) {
            a.rename(p("/shared/agent.log"), p("/shared/agent.log.1")); // logrotate's move; the writer goes on
            log.write(ByteBuffer.wrap("a2\n".getBytes(UTF_8)), 0);
            log.sync(false);
            assertEquals("a0\nb1\na1\na2\n", inS3("shared/agent.log.1"), "the merge, and what a wrote after it");
            a.flushAll();
            assertNull(raw.head(prefix + "/shared/agent.log"), "the old name went: S3 had the merge a made there");
            log.write(ByteBuffer.wrap("a3\n".getBytes(UTF_8)), 0);
        }
        a.flushAll();
        assertEquals("a0\nb1\na1\na2\na3\n", inS3("shared/agent.log.1"));
        assertEquals("a0\nb1\na1\na2\na3\n", new String(a.read(p("/shared/agent.log.1")), UTF_8), "a holds it once closed");
        assertEquals("a0\nb1\na1\na2\na3\n", new String(b.read(p("/shared/agent.log.1")), UTF_8));
        assertThrows(NoSuchFileException.class, () -> b.read(p("/shared/agent.log")));
        assertNoCopyLeft(oa);
    }

    @Test
    @Timeout(60)
    void aLogRenamedAfterAMergeAndThenRemovedWhileOpenGoesFromS3() throws Exception {
        S3Options oa = options("a").withClock(startClock(), false);
        S3Storage a = host(oa);
        S3Storage b = host(options("b"));
        try (FileHandle log = logMergedWhileOpen(a, b, "agent.log")) {
            a.rename(p("/shared/agent.log"), p("/shared/agent.log.1"));
            log.write(ByteBuffer.wrap("a2\n".getBytes(UTF_8)), 0);
            log.sync(false);
            assertEquals("a0\nb1\na1\na2\n", inS3("shared/agent.log.1"));
            a.delete(p("/shared/agent.log.1")); // its copy here was never on S3 under that name: the merge was
            a.flushAll();
            assertNull(raw.head(prefix + "/shared/agent.log.1"));
        }
        a.flushAll();
        assertNull(raw.head(prefix + "/shared/agent.log.1"));
        assertNull(raw.head(prefix + "/shared/agent.log"));
        assertNoCopyLeft(oa);
    }

    @Test
    @Timeout(60)
    void aLogMovedAfterAMergeAndKilledBeforeItsUploadLosesNoLineAtTheNextStart() throws Exception {
        S3Options oa = options("a").withClock(startClock(), false);
        S3Storage a = host(oa);
        S3Storage b = host(options("b").withValidity(Duration.ZERO));
        FileHandle log = logMergedWhileOpen(a, b, "agent.log");
        a.rename(p("/shared/agent.log"), p("/shared/agent.log.1"));
        log.write(ByteBuffer.wrap("a2\n".getBytes(UTF_8)), 0);
        a.crash(); // the merge kept beside the copy is not journaled: a restart has only the copy here

        S3Storage again = host(oa);
        again.flushAll();
        // the copy here, without b's line, goes up whole under the new name (nothing of it was there),
        // and the old name, whose merge with b's line S3 still has, stays: no line is lost
        assertEquals("a0\na1\na2\n", inS3("shared/agent.log.1"));
        assertEquals("a0\nb1\na1\n", inS3("shared/agent.log"));
        assertEquals(0, again.pendingChanges());
        assertNoCopyLeft(oa);
    }

    @Test
    @Timeout(60)
    void aLogEmptiedThroughItsWriterAfterAMergeReplacesTheMergeWithoutAConflictCopy() throws Exception {
        S3Options oa = options("a").withClock(startClock(), false);
        S3Storage a = host(oa);
        S3Storage b = host(options("b"));
        try (FileHandle log = logMergedWhileOpen(a, b, "agent.log")) {
            log.truncate(0); // logrotate's copytruncate, after it copied the merge away
            log.write(ByteBuffer.wrap("a2\n".getBytes(UTF_8)), 0);
            log.sync(false);
            assertEquals("a2\n", inS3("shared/agent.log"));
        }
        a.flushAll();
        assertEquals("a2\n", inS3("shared/agent.log"));
        assertEquals(List.of("agent.log"), a.list(p("/shared")).stream().map(e -> e.name()).toList(), "no conflict copy");
        assertNoCopyLeft(oa);
    }

    @Test
    @Timeout(60)
    void aHostWhoseCopyOfALargeLogIsStaleDownloadsOnlyTheLinesAnotherHostAdded() throws Exception {
        S3Storage a = host(options("a").withFlushAfter(Duration.ZERO));
        S3Options ob = options("b").withFlushAfter(Duration.ZERO).withValidity(Duration.ZERO);
        S3Storage b = host(ob);
        byte[] start = randomBytes(Bucket.MIN_PART_BYTES + 10, 6);
        java.io.ByteArrayOutputStream all = new java.io.ByteArrayOutputStream();
        all.write(start);
        a.write(p("/shared/big.log"), start);
        a.flushAll();
        assertArrayEquals(start, b.read(p("/shared/big.log")));

        // a adds a line: b's next `>>` (an open to append, which needs the content) takes only it
        a.append(p("/shared/big.log"), "a1\n".getBytes(UTF_8));
        a.flushAll();
        Map<String, Long> before = b.requests();
        long down = b.bytesMoved()[0];
        b.append(p("/shared/big.log"), "b1\n".getBytes(UTF_8));
        Map<String, Long> made = Requests.since(before, b.requests());
        assertEquals(3, b.bytesMoved()[0] - down, "only a's line came down: " + made);
        assertEquals(1L, made.get("get"), made.toString());
        b.flushAll();
        all.write("a1\nb1\n".getBytes(UTF_8));
        assertArrayEquals(all.toByteArray(), inS3Bytes("shared/big.log"));

        // another host rewrites it, as long: no longer b's copy with bytes added, so it comes down whole
        S3Storage c = host(options("c"));
        byte[] rewritten = randomBytes(all.size(), 7);
        c.write(p("/shared/big.log"), rewritten);
        c.flushAll();
        down = b.bytesMoved()[0];
        assertArrayEquals(rewritten, b.read(p("/shared/big.log")));
        assertEquals(rewritten.length, b.bytesMoved()[0] - down, "the new version came down whole");
        try (java.util.stream.Stream<Path> copies = Files.list(ob.cacheDir().resolve("upload"))) {
            assertEquals(List.of(), copies.toList(), "no copy left beside the cache");
        }
    }

    @Test
    @Timeout(60)
    void linesAppendedToAnOpenLogWhileItGoesUpWaitAFewPeriodsForTheNextUpload() throws Exception {
        MutableClock clock = startClock();
        Duration fewPeriods = S3Options.DEFAULT_FLUSH_AFTER.multipliedBy(Overlay.MAX_DEFERRALS);
        S3Storage a = host(options("a").withClock(clock, false));
        a.mkdir(p("/shared/logs"));
        a.flushAll();
        try (FileHandle log = a.open(p("/shared/logs/agent.log"), EnumSet.of(OpenFlag.WRITE, OpenFlag.APPEND, OpenFlag.CREATE), 0644)) {
            log.write(ByteBuffer.wrap("one\n".getBytes(UTF_8)), 0);
            clock.advance(fewPeriods);
            assertNull(whilePutIsHeld("shared/logs/agent.log", 1, a::flushDue,
                    () -> log.write(ByteBuffer.wrap("two\n".getBytes(UTF_8)), 0)));
            assertEquals("one\n", inS3("shared/logs/agent.log"));
            a.flushDue();
            assertEquals("one\n", inS3("shared/logs/agent.log"), "not again at once: a few periods after that upload");
            clock.advance(fewPeriods);
            a.flushDue();
            assertEquals("one\ntwo\n", inS3("shared/logs/agent.log"));
        }
    }

    @Test
    @Timeout(60)
    void aFileAppendedToAndRemovedWhileItGoesUpIsGoneFromS3() throws Exception {
        S3Storage a = bothHolding("base\n", "/shared/log").a();
        a.append(p("/shared/log"), "one\n".getBytes(UTF_8));
        assertNull(whilePutIsHeld("shared/log", 1, a::flushAll, () -> {
            a.append(p("/shared/log"), "two\n".getBytes(UTF_8));
            a.removeFile(p("/shared/log"));
        }));
        a.flushAll();
        assertNull(inS3("shared/log"));
        assertEquals(0, a.pendingChanges());
    }

    @Test
    void aStoreKilledRightAfterCloseUploadsEverythingAtItsNextStart() throws Exception {
        MutableClock clock = startClock();
        S3Options o = options("a").withClock(clock, false);
        S3Storage a = host(o);
        a.write(p("/shared/gone"), "remove me".getBytes(UTF_8));
        a.flushAll();
        for (int i = 0; i < 100; i++) {
            put(a, "/shared/batch/f" + i, "content " + i);
        }
        a.removeFile(p("/shared/gone"));
        a.crash(); // no flush, no compaction: what a kill -9 leaves
        assertNull(inS3("shared/batch/f0"));
        assertEquals("remove me", inS3("shared/gone"));

        S3Storage again = host(o);
        assertEquals("content 7", text(again, "/shared/batch/f7"));
        assertEquals(100, again.list(p("/shared/batch")).size());
        again.flushDue(); // what was closed but not uploaded is due at once
        for (int i = 0; i < 100; i++) {
            assertEquals("content " + i, inS3("shared/batch/f" + i), "f" + i);
        }
        assertNull(inS3("shared/gone"));
        assertEquals(0, again.pendingChanges());
    }

    /** Twelve data files, then a READY marker, in /shared/run of {@code a}: their keys in that order. */
    private List<String> dataThenReady(S3Storage a) throws IOException {
        a.mkdir(p("/shared/run"));
        a.flushAll();
        List<String> made = new ArrayList<>();
        for (int i = 0; i < 12; i++) {
            put(a, "/shared/run/d" + i, "data " + i);
            made.add(prefix + "/shared/run/d" + i);
        }
        put(a, "/shared/run/READY", "x");
        made.add(prefix + "/shared/run/READY");
        return made;
    }

    /** The keys of {@code made} that S3 stored since {@code server.stored} was cleared, in the order it stored them. */
    private List<String> storedOf(List<String> made) {
        synchronized (server.stored) {
            return server.stored.stream().filter(made::contains).toList();
        }
    }

    /**
     * After a kill, what the journal held went up at once and several at a time: a READY marker
     * written after 30 data files was the 4th on S3, and another host waiting for it read 3 of them.
     * It goes up in the order of the changes.
     */
    @Test
    void aStoreKilledBeforeItsUploadsSendsThemAtItsNextStartInTheOrderTheyWereMade() throws Exception {
        MutableClock clock = startClock();
        S3Options o = options("a").withClock(clock, false);
        S3Storage a = host(o);
        List<String> made = dataThenReady(a); // READY sorts before the data: by name it went first
        a.crash();

        server.stored.clear();
        S3Storage again = host(o);
        again.flushDue();
        assertEquals(made, storedOf(made));
        assertEquals(0, again.pendingChanges());
    }

    /**
     * The journal's compaction (at every start, at a close with S3 away) wrote what waited in the
     * overlay's hash order, and the next start uploaded it so: a tester's READY went up 4.7 s
     * before the four data files written before it (session 67). It keeps the order of the changes.
     */
    @Test
    void whatWaitsInACompactedJournalGoesUpInTheOrderItWasMade() throws Exception {
        MutableClock clock = startClock();
        S3Options o = options("a").withClock(clock, false);
        S3Storage a = host(o);
        List<String> made = dataThenReady(a);
        put(a, "/shared/run/d0", "data 0, again"); // its last change is now the last of all
        made.remove(prefix + "/shared/run/d0");
        made.add(prefix + "/shared/run/d0");
        a.crash();
        host(o).crash(); // the start compacts the journal, and stops before its first pass
        host(o).crash(); // and the next compacts what that one wrote

        server.stored.clear();
        S3Storage again = host(o);
        again.flushDue();
        assertEquals(made, storedOf(made));
        assertEquals("data 0, again", inS3("shared/run/d0"));
        assertEquals(0, again.pendingChanges());
    }

    @Test
    void anAttributeChangeToAFileNotFetchedHereOutlivesAKill() throws Exception {
        S3Storage a = hostThatPut("a", "/shared/tool", "#!/bin/sh");
        MutableClock clock = startClock();
        S3Options o = options("b").withClock(clock, false).withPrefetchBelow(0);
        S3Storage b = host(o);
        FileTime mine = FileTime.from(Instant.parse("2024-05-06T07:08:09Z"));
        b.setExecutable(p("/shared/tool"), 0755);
        b.setTimes(p("/shared/tool"), null, mine);
        b.crash(); // before its upload: only the journal has the change
        assertEquals(0644, host(options("c")).metadata(p("/shared/tool")).mode() & 0777);

        S3Storage again = host(o);
        assertEquals(0755, again.metadata(p("/shared/tool")).mode() & 0777);
        again.flushDue();
        assertEquals(0, again.pendingChanges());
        assertEquals(0L, again.requests().getOrDefault("get", 0L), again.requests().toString());
        Metadata m = host(options("d")).metadata(p("/shared/tool"));
        assertEquals(0755, m.mode() & 0777);
        assertEquals(mine, m.modified());
        assertEquals("#!/bin/sh", text(again, "/shared/tool"));
    }

    @Test
    void extendedAttributesTravelWithTheObjectToOtherHostsAndThroughACrash() throws Exception {
        S3Options oa = options("a").withFlushAfter(Duration.ZERO);
        S3Storage a = host(oa);
        S3Storage b = host(options("b").withValidity(Duration.ZERO));
        byte[] big = new byte[(int) S3Options.DEFAULT_PREFETCH_BELOW + 1]; // listed, not fetched: a HEAD says its attributes
        a.write(p("/shared/page"), big);
        a.setXattr(p("/shared/page"), "user.xdg.origin.url", "https://example.org/page".getBytes(UTF_8), XattrMode.SET);
        a.flushAll();
        assertEquals(1, b.list(p("/shared")).size());
        assertEquals("https://example.org/page", new String(b.xattr(p("/shared/page"), "user.xdg.origin.url"), UTF_8));
        assertEquals(0L, b.requests().getOrDefault("get", 0L), "the attributes need no content: " + b.requests());

        // another host's change keeps the names it did not touch; the upload fetches the content it
        // had not, and what that GET says of the object's attributes is older than this change
        b.setXattr(p("/shared/page"), "user.tag", "read".getBytes(UTF_8), XattrMode.CREATE);
        b.setExecutable(p("/shared/page"), 0755);
        b.flushAll();
        S3Storage c = host(options("c"));
        assertEquals(List.of("user.tag", "user.xdg.origin.url"), c.xattrNames(p("/shared/page")));
        assertEquals(0755, c.metadata(p("/shared/page")).mode() & 0777);

        // an object's metadata holds 2 KiB: more is ENOSPC, and changes nothing
        IOException full = assertThrows(IOException.class,
                () -> c.setXattr(p("/shared/page"), "user.big", new byte[2048], XattrMode.SET));
        assertEquals(Linux.ENOSPC, dev.chibifs.sys.Errors.errno(full), full.getMessage());
        assertEquals(List.of("user.tag", "user.xdg.origin.url"), c.xattrNames(p("/shared/page")));

        // set, then killed before the upload: the journal keeps them for the next start to upload
        S3Options od = options("d").withFlushAfter(Duration.ofHours(1));
        S3Storage d = host(od);
        d.write(p("/shared/later"), "x".getBytes(UTF_8));
        d.setXattr(p("/shared/later"), "user.kept", "yes".getBytes(UTF_8), XattrMode.SET);
        d.crash();
        S3Storage again = host(od);
        assertEquals("yes", new String(again.xattr(p("/shared/later"), "user.kept"), UTF_8));
        again.flushAll();
        assertEquals("yes", new String(host(options("e")).xattr(p("/shared/later"), "user.kept"), UTF_8));
    }

    @Test
    void aDirectoryAnotherHostReplacedWithAFileIsTheFileHereAndTheReverse() throws Exception {
        TwoHosts hosts = onOneClock();
        MutableClock clock = hosts.clock();
        S3Storage a = hosts.a();
        S3Storage b = hosts.b();
        a.mkdir(p("/shared/ty"));
        a.write(p("/shared/tz"), "f".getBytes(UTF_8));
        a.flushAll();
        assertEquals(EntryKind.DIRECTORY, b.metadata(p("/shared/ty")).kind());
        assertEquals("f", text(b, "/shared/tz"));

        a.removeDirectory(p("/shared/ty"));
        a.removeFile(p("/shared/tz"));
        // in one pass: s3proxy's file backend cannot put ty while ty/ is there, nor tz/x while tz is
        // a file, so the deletes go first
        a.write(p("/shared/ty"), "file".getBytes(UTF_8));
        a.mkdir(p("/shared/tz"));
        a.write(p("/shared/tz/x"), "x".getBytes(UTF_8));
        a.flushAll();
        clock.advance(S3Options.DEFAULT_VALIDITY);
        assertEquals(List.of(new Entry("ty", EntryKind.FILE), new Entry("tz", EntryKind.DIRECTORY)), b.list(p("/shared")));
        assertEquals("file", text(b, "/shared/ty"));
        assertEquals(EntryKind.DIRECTORY, b.metadata(p("/shared/tz")).kind());
        assertEquals("x", text(b, "/shared/tz/x"));
    }

    /**
     * Host A turns directory c1 into a file ({@code rm -r c1; echo x > c1}) while host B writes in it.
     * S3 keeps the file c1 and c1/other apart; a server over a file system (s3proxy, MinIO's fs mode)
     * cannot, and answers 500 to every PUT, HEAD and GET of a key under the file. B's PUT was retried at
     * every pass for good, and every lookup under c1 on B failed EIO while A's file was there. Now a
     * lookup there answers as the namespace is (nothing under a file), and what B wrote in the directory
     * goes up as a conflict copy of that directory, {@code c1.conflict-b-<time>/}, under the same
     * relative names, beside A's file.
     */
    /**
     * The same, with a process on B holding its file in c1 open, writing and fsyncing after the copy
     * went up: its writes go on into the copy, as through a file's conflict. The node was left with
     * no name, and what it wrote after went nowhere though its fsync succeeded (a tester's `b2`); one
     * writing all along left a second copy of the directory.
     */
    @Test
    void aWriterHoldingAFileInADirectoryAnotherHostMadeAFileOfWritesOnIntoTheCopy() throws Exception {
        TwoHosts hosts = onOneClock();
        MutableClock clock = hosts.clock();
        S3Storage a = hosts.a();
        S3Storage b = hosts.b();
        a.mkdir(p("/shared/z1"));
        a.write(p("/shared/z1/in"), "in".getBytes(UTF_8));
        a.flushAll();
        assertEquals("in", text(b, "/shared/z1/in"));
        try (FileHandle h = b.open(p("/shared/z1/other"), EnumSet.of(OpenFlag.WRITE, OpenFlag.CREATE), 0644)) {
            h.write(ByteBuffer.wrap("b1\n".getBytes(UTF_8)), 0);
            a.removeFile(p("/shared/z1/in"));
            a.removeDirectory(p("/shared/z1"));
            a.write(p("/shared/z1"), "afile".getBytes(UTF_8));
            a.flushAll();
            h.sync(false); // meets a's file: b's goes up beside it
            List<String> copies = raw.list(prefix + "/shared/", true).prefixes().stream()
                    .filter(k -> k.startsWith(prefix + "/shared/z1.conflict-b-")).toList();
            assertEquals(1, copies.size(), copies.toString());
            String copy = copies.get(0).substring((prefix + "/").length()) + "other";
            assertEquals("b1\n", inS3(copy));
            assertEquals(h.inode(), b.metadata(p("/" + copy)).inode(), "b's file, at the copy");
            h.write(ByteBuffer.wrap("b2\n".getBytes(UTF_8)), 3);
            h.sync(false);
            assertEquals("b1\nb2\n", inS3(copy), "its fsync sent it");
        }
        b.flushAll();
        clock.advance(S3Options.DEFAULT_VALIDITY);
        assertEquals(1, raw.list(prefix + "/shared/", true).prefixes().stream()
                .filter(k -> k.startsWith(prefix + "/shared/z1.conflict-b-")).count(), "one copy");
        assertEquals("afile", inS3("shared/z1"));
        assertEquals(0, b.pendingChanges());
    }

    /**
     * Two clashes of one directory within the minute a copy's time stands for: the second's copy of
     * its directory `sub` met the first's copy of its file `sub`, and took the next number. It was sent
     * to the same copy, refused (500) at every pass for that minute, and an empty directory there was
     * reported kept where the first's file stayed (tester).
     */
    @Test
    void aSecondClashOfOneDirectoryWithinTheMinuteTakesTheNextCopyWhereTheFirstsFileStands() throws Exception {
        TwoHosts hosts = onOneClock();
        MutableClock clock = hosts.clock();
        S3Storage a = hosts.a();
        S3Storage b = hosts.b();
        a.mkdir(p("/shared/j"));
        a.write(p("/shared/j/in"), "in".getBytes(UTF_8));
        a.flushAll();
        assertEquals("in", text(b, "/shared/j/in"));
        a.removeFile(p("/shared/j/in"));
        a.removeDirectory(p("/shared/j"));
        a.write(p("/shared/j"), "afile".getBytes(UTF_8));
        a.flushAll();
        b.write(p("/shared/j/sub"), "f1".getBytes(UTF_8));
        b.flushAll();
        String copy = "shared/j.conflict-b-20260102T030405Z";
        assertEquals("f1", inS3(copy + "/sub"));

        a.removeFile(p("/shared/j"));
        a.mkdir(p("/shared/j"));
        a.write(p("/shared/j/in"), "x".getBytes(UTF_8));
        a.flushAll();
        clock.advance(S3Options.DEFAULT_VALIDITY);
        assertEquals("x", text(b, "/shared/j/in"));
        a.removeFile(p("/shared/j/in"));
        a.removeDirectory(p("/shared/j"));
        a.write(p("/shared/j"), "afile2".getBytes(UTF_8));
        a.flushAll();
        b.mkdir(p("/shared/j/sub"));
        b.write(p("/shared/j/sub/other"), "d1".getBytes(UTF_8));
        b.mkdir(p("/shared/j/empty"));
        b.flushAll();

        assertEquals(0, b.pendingChanges(), "nothing left to retry");
        assertEquals("d1", inS3(copy + "-1/sub/other"));
        assertEquals("f1", inS3(copy + "/sub"), "the first copy as it was");
        assertEquals("afile2", inS3("shared/j"));
    }

    @Test
    void whatAHostWroteInADirectoryAnotherHostMadeAFileOfGoesUpAsAConflictCopyOfTheDirectory() throws Exception {
        TwoHosts hosts = onOneClock();
        MutableClock clock = hosts.clock();
        S3Storage a = hosts.a();
        S3Storage b = hosts.b();
        a.mkdir(p("/shared/c1"));
        a.mkdir(p("/shared/c1/sub"));
        a.write(p("/shared/c1/base"), "base".getBytes(UTF_8));
        a.write(p("/shared/c1/sub/deep"), "deep".getBytes(UTF_8));
        a.flushAll();
        assertEquals("base", text(b, "/shared/c1/base"));
        assertEquals("deep", text(b, "/shared/c1/sub/deep"));

        a.removeFile(p("/shared/c1/sub/deep"));
        a.removeDirectory(p("/shared/c1/sub"));
        a.removeFile(p("/shared/c1/base"));
        a.removeDirectory(p("/shared/c1"));
        a.write(p("/shared/c1"), "x".getBytes(UTF_8));
        a.flushAll();
        b.write(p("/shared/c1/other"), "mine".getBytes(UTF_8));
        b.write(p("/shared/c1/sub/more"), "more".getBytes(UTF_8));
        b.mkdir(p("/shared/c1/made"));
        clock.advance(S3Options.DEFAULT_VALIDITY);

        // what is not B's own under c1 is gone, as A left it: not an I/O error
        for (String gone : List.of("/shared/c1/base", "/shared/c1/sub/deep")) {
            IOException e = assertThrows(IOException.class, () -> b.metadata(p(gone)));
            assertTrue(Errors.errno(e) == Linux.ENOENT || Errors.errno(e) == Linux.ENOTDIR, gone + ": " + e);
        }

        b.flushAll();
        assertEquals(0, b.pendingChanges(), "nothing left to retry");
        assertEquals("x", inS3("shared/c1"));
        List<String> copies = raw.list(prefix + "/shared/", true).prefixes().stream()
                .filter(k -> k.startsWith(prefix + "/shared/c1.conflict-b-")).toList();
        assertEquals(1, copies.size(), "one copy of the directory: " + copies);
        String copy = copies.get(0).substring((prefix + "/").length(), copies.get(0).length() - 1);
        assertEquals("mine", inS3(copy + "/other"));
        assertEquals("more", inS3(copy + "/sub/more"));

        clock.advance(S3Options.DEFAULT_VALIDITY);
        String copyName = copy.substring("shared/".length());
        for (S3Storage host : List.of(a, b)) {
            assertEquals(List.of(new Entry("c1", EntryKind.FILE), new Entry(copyName, EntryKind.DIRECTORY)),
                    host.list(p("/shared")));
            assertEquals("x", text(host, "/shared/c1"));
            assertEquals("mine", text(host, "/" + copy + "/other"));
            assertEquals("more", text(host, "/" + copy + "/sub/more"));
            assertEquals(List.of(new Entry("made", EntryKind.DIRECTORY), new Entry("other", EntryKind.FILE),
                    new Entry("sub", EntryKind.DIRECTORY)), host.list(p("/" + copy)));
            IOException e = assertThrows(IOException.class, () -> host.metadata(p("/shared/c1/other")));
            assertTrue(Errors.errno(e) == Linux.ENOENT || Errors.errno(e) == Linux.ENOTDIR, e.toString());
        }
    }

    /**
     * A directory and a file swapped by three renames on one host ({@code mv x1 tmp; mv y1 x1; mv tmp
     * y1}) within the debounce. S3 keeps {@code x1} and {@code x1/} apart; a server over a file system
     * (s3proxy, MinIO's fs mode) cannot hold a file where a directory is, nor the reverse, so each new
     * name's upload waits for the delete of what was there, and each delete for the upload of the
     * name it moved to: a ring.
     */
    @Test
    void aDirectoryAndAFileSwappedByThreeRenamesEndSwappedWithNoConflictCopy() throws Exception {
        TwoHosts hosts = onOneClock();
        MutableClock clock = hosts.clock();
        S3Storage a = hosts.a();
        S3Storage b = hosts.b();
        a.mkdir(p("/shared/x1"));
        a.write(p("/shared/x1/in"), "in dir".getBytes(UTF_8));
        a.write(p("/shared/y1"), "file".getBytes(UTF_8));
        a.flushAll();
        assertEquals("in dir", text(b, "/shared/x1/in"));
        assertEquals("file", text(b, "/shared/y1"));

        a.rename(p("/shared/x1"), p("/shared/tmp"));
        a.rename(p("/shared/y1"), p("/shared/x1"));
        a.rename(p("/shared/tmp"), p("/shared/y1"));
        // the write-back's own pass, as on a mount left alone: not only a sync or an umount
        clock.advance(S3Options.DEFAULT_FLUSH_AFTER.multipliedBy(2));
        a.flushDue();
        assertEquals(0, a.pendingChanges());
        assertEquals("file", inS3("shared/x1"));
        assertEquals("in dir", inS3("shared/y1/in"));
        assertEquals(List.of(prefix + "/shared/", prefix + "/shared/x1", prefix + "/shared/y1/", prefix + "/shared/y1/in"),
                raw.list(prefix + "/shared/", false).objects().stream().map(Bucket.Listed::key).sorted().toList());
        clock.advance(S3Options.DEFAULT_VALIDITY);
        for (S3Storage host : List.of(a, b)) {
            assertEquals(List.of(new Entry("x1", EntryKind.FILE), new Entry("y1", EntryKind.DIRECTORY)), host.list(p("/shared")));
            assertEquals("file", text(host, "/shared/x1"));
            assertEquals("in dir", text(host, "/shared/y1/in"));
        }
    }

    /** The same swap, then an fsync of the file at its new name: it sends the ring, as a pass does, not a conflict copy. */
    @Test
    void anFsyncOfAFileSwappedWithADirectorySendsTheSwapWithNoConflictCopy() throws Exception {
        TwoHosts hosts = onOneClock();
        S3Storage a = hosts.a();
        a.mkdir(p("/shared/x1"));
        a.write(p("/shared/x1/in"), "in dir".getBytes(UTF_8));
        a.write(p("/shared/y1"), "file".getBytes(UTF_8));
        a.flushAll();

        a.rename(p("/shared/x1"), p("/shared/tmp"));
        a.rename(p("/shared/y1"), p("/shared/x1"));
        a.rename(p("/shared/tmp"), p("/shared/y1"));
        try (FileHandle h = a.open(p("/shared/x1"), EnumSet.of(OpenFlag.WRITE), 0644)) {
            h.sync(false);
        }
        assertEquals("file", inS3("shared/x1"));
        assertEquals("in dir", inS3("shared/y1/in"));
        assertEquals(List.of(prefix + "/shared/", prefix + "/shared/x1", prefix + "/shared/y1/", prefix + "/shared/y1/in"),
                raw.list(prefix + "/shared/", false).objects().stream().map(Bucket.Listed::key).sorted().toList());
        assertEquals(0, a.pendingChanges());
        hosts.clock().advance(S3Options.DEFAULT_VALIDITY);
        assertEquals(List.of(new Entry("x1", EntryKind.FILE), new Entry("y1", EntryKind.DIRECTORY)), hosts.b().list(p("/shared")));
        assertEquals("in dir", text(hosts.b(), "/shared/y1/in"));
    }

    /**
     * The same swap with the write-back's pass between the renames, as a mount's flusher may run: the
     * directory moved aside goes up under its new name at once, and its file is still going up when
     * it moves on (its old name {@code x1/in} waits for the next), while the marker {@code x1/} goes.
     * The file's PUT at {@code x1} then met the directory {@code x1} that {@code x1/in} keeps on such
     * a server (a conflict copy, 2 of 10 on a mount): it waits for the deletes below the marker too.
     */
    @Test
    void aSwapWithAPassBetweenItsRenamesEndsSwappedWithNoConflictCopy() throws Exception {
        TwoHosts hosts = onOneClock();
        S3Storage a = hosts.a();
        a.mkdir(p("/shared/x1"));
        a.write(p("/shared/x1/in"), "in dir".getBytes(UTF_8));
        a.write(p("/shared/y1"), "file".getBytes(UTF_8));
        a.flushAll();

        a.rename(p("/shared/x1"), p("/shared/tmp"));
        S3Server.HeldRequests held = holdPut("shared/tmp/in", 1);
        try {
            var pass = aside(a::flushDue);
            assertTrue(held.reached().await(30, TimeUnit.SECONDS), "the pass's PUT of tmp/in came");
            a.rename(p("/shared/y1"), p("/shared/x1"));
            a.rename(p("/shared/tmp"), p("/shared/y1"));
            held.release().countDown();
            pass.get(30, TimeUnit.SECONDS);
        } finally {
            held.release().countDown();
            server.holdPuts(n -> false, 0);
        }
        hosts.clock().advance(S3Options.DEFAULT_FLUSH_AFTER.multipliedBy(2));
        a.flushDue();
        assertEquals(0, a.pendingChanges());
        assertEquals("file", inS3("shared/x1"));
        assertEquals("in dir", inS3("shared/y1/in"));
        assertEquals(List.of(prefix + "/shared/", prefix + "/shared/x1", prefix + "/shared/y1/", prefix + "/shared/y1/in"),
                raw.list(prefix + "/shared/", false).objects().stream().map(Bucket.Listed::key).sorted().toList());
        hosts.clock().advance(S3Options.DEFAULT_VALIDITY);
        assertEquals(List.of(new Entry("x1", EntryKind.FILE), new Entry("y1", EntryKind.DIRECTORY)), hosts.b().list(p("/shared")));
    }

    /**
     * {@code rmdir x; echo file > x} within the debounce: S3 keeps {@code x/} and {@code x} apart, but
     * a server over a file system (s3proxy, MinIO's fs mode) answers 412 to the PUT of {@code x} while
     * the directory {@code x/} is still there, and the file ended as a conflict copy beside nothing.
     */
    @Test
    void aFileMadeWhereADirectoryWasRemovedGoesUpAfterTheMarkersDelete() throws Exception {
        TwoHosts hosts = onOneClock();
        S3Storage a = hosts.a();
        a.mkdir(p("/shared/x"));
        a.mkdir(p("/shared/y"));
        a.write(p("/shared/y/in"), "gone".getBytes(UTF_8));
        a.flushAll();
        a.removeDirectory(p("/shared/x"));
        a.write(p("/shared/x"), "file".getBytes(UTF_8));
        a.removeFile(p("/shared/y/in")); // a marker whose directory held a file, which goes first
        a.removeDirectory(p("/shared/y"));
        a.write(p("/shared/y"), "file y".getBytes(UTF_8));
        a.flushAll();
        assertEquals("file", inS3("shared/x"));
        assertEquals("file y", inS3("shared/y"));
        assertEquals(List.of(new Entry("x", EntryKind.FILE), new Entry("y", EntryKind.FILE)), a.list(p("/shared")));
        assertEquals(0, a.pendingChanges());
        hosts.clock().advance(S3Options.DEFAULT_VALIDITY);
        assertEquals("file", text(hosts.b(), "/shared/x"));
        assertEquals(List.of(new Entry("x", EntryKind.FILE), new Entry("y", EntryKind.FILE)), hosts.b().list(p("/shared")));
    }

    /** An fsync of such a file sends the marker's delete (and those below it) first too, and then the file, not a conflict copy. */
    @Test
    void anFsyncOfAFileMadeWhereADirectoryWasRemovedSendsTheDeletesFirst() throws Exception {
        S3Storage a = host(options("a").withClock(startClock(), false));
        a.mkdir(p("/shared/x"));
        a.write(p("/shared/x/in"), "gone".getBytes(UTF_8));
        a.flushAll();
        a.removeFile(p("/shared/x/in"));
        a.removeDirectory(p("/shared/x"));
        try (FileHandle h = a.open(p("/shared/x"), EnumSet.of(OpenFlag.WRITE, OpenFlag.CREATE), 0644)) {
            h.write(ByteBuffer.wrap("synced".getBytes(UTF_8)), 0);
            h.sync(false);
            assertEquals("synced", inS3("shared/x"));
        }
        assertEquals(List.of(new Entry("x", EntryKind.FILE)), a.list(p("/shared")));
        a.flushAll();
        assertEquals(0, a.pendingChanges());
    }

    /**
     * A directory moved aside and a file made at its name, then fsynced: the move's copies go first,
     * then the old marker's delete, then the file (tester: the PUT met the marker, a conflict copy).
     */
    @Test
    void anFsyncOfAFileMadeWhereADirectoryWasMovedAsideSendsTheMoveFirst() throws Exception {
        S3Storage a = host(options("a").withClock(startClock(), false));
        a.mkdir(p("/shared/x"));
        a.mkdir(p("/shared/x/sub"));
        a.write(p("/shared/x/a"), "a".getBytes(UTF_8));
        a.write(p("/shared/x/sub/b"), "b".getBytes(UTF_8));
        a.flushAll();
        a.rename(p("/shared/x"), p("/shared/xz"));
        try (FileHandle h = a.open(p("/shared/x"), EnumSet.of(OpenFlag.WRITE, OpenFlag.CREATE), 0644)) {
            h.write(ByteBuffer.wrap("synced".getBytes(UTF_8)), 0);
            h.sync(false);
            assertEquals("synced", inS3("shared/x"));
        }
        assertEquals("a", inS3("shared/xz/a"));
        assertEquals("b", inS3("shared/xz/sub/b"));
        assertEquals(List.of(new Entry("x", EntryKind.FILE), new Entry("xz", EntryKind.DIRECTORY)), a.list(p("/shared")));
        a.flushAll();
        assertEquals(0, a.pendingChanges());
        assertEquals("synced", inS3("shared/x"));
    }

    /** A kill after the marker's delete and before the file's PUT: the file still goes up at the next start. */
    @Test
    void aFileMadeWhereADirectoryWasRemovedStillGoesUpAfterAKillBetweenTheDeleteAndItsPut() throws Exception {
        MutableClock clock = startClock();
        S3Options o = options("a").withClock(clock, false);
        S3Storage a = host(o);
        a.mkdir(p("/shared/x"));
        a.flushAll();
        a.removeDirectory(p("/shared/x"));
        a.write(p("/shared/x"), "file".getBytes(UTF_8));
        String key = prefix + "/shared/x";
        server.refusePuts(key::equals, 1);
        assertThrows(IOException.class, a::flushAll);
        assertNull(raw.head(key + "/"), "the marker went first");
        a.crash();

        S3Storage again = host(o);
        assertEquals("file", text(again, "/shared/x"));
        again.flushDue();
        assertEquals("file", inS3("shared/x"));
        assertEquals(0, again.pendingChanges());
        assertEquals(List.of(new Entry("x", EntryKind.FILE)), again.list(p("/shared")));
    }

    @Test
    void aDirectoryAndALinkMadeOfOneNameOnTwoHostsShowAsTheDirectoryOnBoth() throws Exception {
        TwoHosts hosts = onOneClock();
        MutableClock clock = hosts.clock();
        S3Storage a = hosts.a();
        S3Storage b = hosts.b();
        a.mkdir(p("/shared/r"));
        a.flushAll();
        assertEquals(List.of(), b.list(p("/shared/r")));
        // each before it hears of the other's: both win, their objects being r/x/ and r/x.rclonelink
        a.mkdir(p("/shared/r/x"));
        b.createSymlink(p("/shared/r/x"), "target");
        a.flushAll();
        b.flushAll();
        clock.advance(S3Options.DEFAULT_VALIDITY);
        // a directory of the name wins over a link, as a file does: on both hosts, not each its own
        assertEquals(List.of(new Entry("x", EntryKind.DIRECTORY)), a.list(p("/shared/r")));
        assertEquals(List.of(new Entry("x", EntryKind.DIRECTORY)), b.list(p("/shared/r")));
        assertEquals(EntryKind.DIRECTORY, b.metadata(p("/shared/r/x")).kind());
    }

    @Test
    void aSymbolicLinkIsTheObjectRcloneKeepsItAsAndEveryHostSeesALink() throws Exception {
        S3Storage a = host(options("a").withFlushAfter(Duration.ZERO));
        S3Storage b = host(options("b").withValidity(Duration.ZERO));
        a.mkdir(p("/shared/bin"));
        a.createSymlink(p("/shared/bin/tool"), "../lib/tool.js");
        a.flushAll();
        assertEquals("../lib/tool.js", inS3("shared/bin/tool.rclonelink"));
        assertNull(inS3("shared/bin/tool"));
        assertEquals(List.of(new Entry("tool", EntryKind.SYMLINK)), b.list(p("/shared/bin")));
        assertEquals("../lib/tool.js", b.readLink(p("/shared/bin/tool")));
        assertEquals(14, b.metadata(p("/shared/bin/tool")).size());

        // one put there by rclone --links, or any tool, is a link too
        raw.put(prefix + "/shared/bin/other.rclonelink", "tool".getBytes(UTF_8), Map.of(), null);
        assertEquals("tool", b.readLink(p("/shared/bin/other")));
        assertEquals(EntryKind.SYMLINK, b.metadata(p("/shared/bin/other")).kind());

        // another host pointing the name elsewhere is a new node: the kernel keeps a link's target by node
        long before = b.metadata(p("/shared/bin/tool")).inode();
        a.removeFile(p("/shared/bin/tool"));
        a.createSymlink(p("/shared/bin/tool"), "../lib/tool2.js");
        a.flushAll();
        assertEquals("../lib/tool2.js", b.readLink(p("/shared/bin/tool")));
        assertNotEquals(before, b.metadata(p("/shared/bin/tool")).inode());

        // renamed, and replaced by a file: the old object goes, as the link's name is not the file's key
        a.rename(p("/shared/bin/tool"), p("/shared/bin/moved"));
        a.flushAll();
        assertNull(inS3("shared/bin/tool.rclonelink"));
        assertEquals("../lib/tool2.js", inS3("shared/bin/moved.rclonelink"));
        a.write(p("/shared/bin/moved"), "a file now".getBytes(UTF_8));
        a.flushAll();
        assertNull(inS3("shared/bin/moved.rclonelink"));
        assertEquals("a file now", inS3("shared/bin/moved"));
        assertEquals(EntryKind.FILE, b.metadata(p("/shared/bin/moved")).kind());
        assertEquals("a file now", text(b, "/shared/bin/moved"));
        a.createSymlink(p("/shared/bin/over"), "moved");
        a.rename(p("/shared/bin/over"), p("/shared/bin/moved"));
        a.flushAll();
        assertNull(inS3("shared/bin/moved"));
        assertEquals("moved", b.readLink(p("/shared/bin/moved")));
        a.write(p("/shared/bin/moved"), "a file again".getBytes(UTF_8));

        // a file named as a link's object would read back as a link: refused, nothing made
        assertEquals(Linux.EINVAL, Errors.errno(assertThrows(IOException.class,
                () -> a.write(p("/shared/bin/x.rclonelink"), "x".getBytes(UTF_8)))));
        assertEquals(Linux.EINVAL, Errors.errno(assertThrows(IOException.class,
                () -> a.rename(p("/shared/bin/moved"), p("/shared/bin/moved.rclonelink")))));
        assertEquals(Linux.EINVAL, Errors.errno(assertThrows(IOException.class,
                () -> a.createSymlink(p("/shared/bin/l.rclonelink"), "x"))));
        a.mkdir(p("/shared/bin/dir.rclonelink")); // a directory's key ends in '/': no confusion
        a.flushAll();
        assertEquals(List.of(new Entry("dir.rclonelink", EntryKind.DIRECTORY), new Entry("moved", EntryKind.FILE),
                new Entry("other", EntryKind.SYMLINK)), b.list(p("/shared/bin")));
        assertEquals(0, a.pendingChanges());
    }

    @Test
    void theExecuteBitsAndMtimeAnotherHostGaveFilesShowBeforeTheyAreOpened() throws Exception {
        S3Storage a = host(options("a").withFlushAfter(Duration.ZERO));
        S3Storage b = host(options("b"));
        FileTime extracted = FileTime.from(Instant.parse("2024-05-06T07:08:09Z")); // as tar xf sets it
        int files = 40;
        for (int i = 0; i < files; i++) {
            put(a, "/shared/bin/tool" + i, "#!/bin/sh\necho " + i + "\n");
            if (i % 2 == 0) {
                a.setExecutable(p("/shared/bin/tool" + i), 0755);
            }
            a.setTimes(p("/shared/bin/tool" + i), null, extracted);
        }
        a.flushAll();

        long headsBefore = b.requests().getOrDefault("head", 0L);
        assertEquals(files, b.list(p("/shared/bin")).size());
        for (int i = 0; i < files; i++) {
            Metadata m = b.metadata(p("/shared/bin/tool" + i));
            assertEquals(i % 2 == 0 ? 0755 : 0644, m.mode() & 0777, "tool" + i); // else exec says EACCES
            assertEquals(extracted, m.modified(), "tool" + i); // else git and make see a change
        }
        // one request per file, once: asked in parallel when the listing showed them, not again at each
        // stat; small files are fetched whole (a GET), so reading them asks S3 nothing more
        b.metadata(p("/shared/bin/tool1"));
        assertEquals(headsBefore, b.requests().getOrDefault("head", 0L), b.requests().toString());
        assertEquals(files, b.requests().getOrDefault("get", 0L), b.requests().toString());
        for (int i = 0; i < files; i++) {
            assertEquals("#!/bin/sh\necho " + i + "\n", new String(b.read(p("/shared/bin/tool" + i)), UTF_8));
        }
        assertEquals(files, b.requests().getOrDefault("get", 0L), "no GET at the opens: " + b.requests());
    }

    @Test
    void filesReadWhileTheirListingsGetsAreUnderWayAreFetchedOnce() throws Exception {
        S3Storage a = host(options("a").withFlushAfter(Duration.ZERO));
        S3Storage b = host(options("b"));
        int files = 40;
        for (int i = 0; i < files; i++) {
            put(a, "/shared/notes/n" + i, "note " + i);
        }
        a.flushAll();
        assertEquals(files, b.list(p("/shared/notes")).size());
        // read at once, racing the listing's GETs: each file's open waits for its GET, or its GET is
        // the one the listing's ask waits for
        for (int i = 0; i < files; i++) {
            assertEquals("note " + i, new String(b.read(p("/shared/notes/n" + i)), UTF_8));
        }
        for (int i = 0; i < files; i++) {
            b.metadata(p("/shared/notes/n" + i)); // every ask has ended
        }
        assertEquals(files, b.requests().getOrDefault("get", 0L), b.requests().toString());
        assertEquals(0L, b.requests().getOrDefault("head", 0L), b.requests().toString());
    }

    @Test
    void aStoreToldToPrefetchNothingAsksAttributesOnlyAndFetchesAtTheOpen() throws Exception {
        S3Storage a = host(options("a").withFlushAfter(Duration.ZERO));
        S3Storage b = host(options("b").withPrefetchBelow(0));
        put(a, "/shared/small", "small");
        a.flushAll();
        assertEquals(1, b.list(p("/shared")).size());
        b.metadata(p("/shared/small"));
        assertEquals(List.of(1L, 0L), List.of(b.requests().getOrDefault("head", 0L), b.requests().getOrDefault("get", 0L)),
                b.requests().toString());
        assertEquals("small", new String(b.read(p("/shared/small")), UTF_8));
        assertEquals(1L, b.requests().getOrDefault("get", 0L), b.requests().toString());
    }

    @Test
    void aLinkAListingShowedComesWithItsTarget() throws Exception {
        S3Storage a = host(options("a").withFlushAfter(Duration.ZERO));
        S3Storage b = host(options("b"));
        a.mkdir(p("/shared/venv/bin"));
        a.createSymlink(p("/shared/venv/bin/python"), "python3");
        a.createSymlink(p("/shared/venv/bin/python3"), "/usr/bin/python3");
        a.flushAll();
        assertEquals(2, b.list(p("/shared/venv/bin")).size());
        for (String name : List.of("python", "python3")) {
            b.metadata(p("/shared/venv/bin/" + name)); // its ask has ended
        }
        Map<String, Long> asked = b.requests();
        assertEquals("python3", b.readLink(p("/shared/venv/bin/python")));
        assertEquals("/usr/bin/python3", b.readLink(p("/shared/venv/bin/python3")));
        assertEquals(asked, b.requests(), "readlink asked S3 again");
        assertEquals(2L, asked.getOrDefault("get", 0L), asked.toString());
        assertEquals(0L, asked.getOrDefault("head", 0L), asked.toString());
    }

    @Test
    void aLargerFileTheListingShowedHasItsAttributesAskedAndItsContentFetchedAtItsOpen() throws Exception {
        S3Storage a = host(options("a").withFlushAfter(Duration.ZERO));
        S3Storage b = host(options("b"));
        byte[] big = new byte[(int) S3Options.DEFAULT_PREFETCH_BELOW + 1];
        java.util.Arrays.fill(big, (byte) 'x');
        a.write(p("/shared/big"), big);
        a.setExecutable(p("/shared/big"), 0755);
        a.flushAll();
        assertEquals(1, b.list(p("/shared")).size());
        assertEquals(0755, b.metadata(p("/shared/big")).mode() & 0777);
        assertEquals(Map.of("head", 1L, "get", 0L), Map.of("head", b.requests().getOrDefault("head", 0L),
                "get", b.requests().getOrDefault("get", 0L)), "a HEAD, no content yet: " + b.requests());
        assertArrayEquals(big, b.read(p("/shared/big")));
        assertEquals(1L, b.requests().getOrDefault("get", 0L), b.requests().toString());
    }

    @Test
    void attributesChangedHereAreNeverUndoneByAnAnswerAboutTheObject() throws Exception {
        S3Storage a = host(options("a").withFlushAfter(Duration.ZERO));
        S3Storage b = host(options("b"));
        int files = 40;
        for (int i = 0; i < files; i++) {
            put(a, "/shared/f" + i, "f" + i);
        }
        a.flushAll();
        FileTime mine = FileTime.from(Instant.parse("2024-05-06T07:08:09Z"));
        // the listing sends a HEAD after each of these files; the changes race their answers
        assertEquals(files, b.list(p("/shared")).size());
        for (int i = 0; i < files; i++) {
            b.setExecutable(p("/shared/f" + i), 0755);
            b.setTimes(p("/shared/f" + i), null, mine);
        }
        for (int i = 0; i < files; i++) {
            Metadata m = b.metadata(p("/shared/f" + i));
            assertEquals(0755, m.mode() & 0777, "f" + i);
            assertEquals(mine, m.modified(), "f" + i);
        }
    }

    /**
     * A host killed -9 while S3 copied a tree another host made to its new name left the copies
     * there for good, the old name whole (a tester's 39 of 1,000 files), and moving again nested
     * the tree under them. The move's copies are journaled before they begin: the next start
     * removes those of a move that was not made.
     */
    @Test
    void theCopiesOfAMoveADaemonWasKilledInAreRemovedAtItsNextStart() throws Exception {
        S3Storage a = host(options("a").withFlushAfter(Duration.ZERO));
        S3Options bOptions = options("b").withFlushAfter(Duration.ZERO).withPrefetchBelow(0);
        S3Storage b = host(bOptions);
        int files = 12;
        for (int i = 0; i < files; i++) {
            put(a, "/shared/tree/f" + i, "f" + i);
        }
        a.flushAll();
        b.mkdir(p("/shared"));
        assertEquals(files, b.list(p("/shared/tree")).size());

        java.util.concurrent.CountDownLatch someCopied = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.CountDownLatch killed = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.atomic.AtomicInteger copies = new java.util.concurrent.atomic.AtomicInteger();
        server.beforeCopy(to -> {
            if (copies.incrementAndGet() == 5) {
                someCopied.countDown();
                try {
                    killed.await(20, java.util.concurrent.TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        });
        CompletableFuture<Void> move = CompletableFuture.runAsync(() -> {
            try {
                b.rename(p("/shared/tree"), p("/shared/moved"));
            } catch (IOException | RuntimeException e) {
                // the store is crashed under it: what its threads meet then (its S3 client closed) no daemon meets
            }
        });
        try {
            assertTrue(someCopied.await(20, java.util.concurrent.TimeUnit.SECONDS));
            b.crash();
        } finally {
            killed.countDown();
            server.beforeCopy(null);
        }
        move.get(20, java.util.concurrent.TimeUnit.SECONDS);
        assertTrue(raw.list(prefix + "/shared/moved/", false).objects().size() >= 4, "copies made before the kill");

        S3Storage again = host(bOptions);
        again.flushAll();
        assertEquals(List.of(), raw.list(prefix + "/shared/moved/", false).objects(), "no copy left");
        assertEquals(List.of("tree"), again.list(p("/shared")).stream().map(Entry::name).toList());
        for (int i = 0; i < files; i++) {
            assertEquals("f" + i, text(again, "/shared/tree/f" + i));
        }
        again.rename(p("/shared/tree"), p("/shared/moved"));
        again.flushAll();
        assertEquals(files, again.list(p("/shared/moved")).size(), "moved again, not nested");
        assertEquals("f3", inS3("shared/moved/f3"));
    }

    /**
     * The journal's record of a move whose copies S3 made and whose end alone was not journaled
     * (its end record comes after its names') leaves them: S3 has the old names' deletes to do, or
     * done.
     */
    @Test
    void theCopiesOfAMoveMadeStayThoughItsEndWasNotJournaled() throws Exception {
        S3Storage a = host(options("a").withFlushAfter(Duration.ZERO));
        S3Options bOptions = options("b").withFlushAfter(Duration.ZERO).withPrefetchBelow(0);
        S3Storage b = host(bOptions);
        for (int i = 0; i < 3; i++) {
            put(a, "/shared/tree/f" + i, "f" + i);
        }
        a.flushAll();
        b.mkdir(p("/shared"));
        assertEquals(3, b.list(p("/shared/tree")).size());
        b.rename(p("/shared/tree"), p("/shared/moved"));
        b.flushAll();
        // as a kill between the move's names and its end leaves the journal
        List<CopiesUnderWay.Copy> made = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            made.add(new CopiesUnderWay.Copy(prefix + "/shared/tree/f" + i,
                    raw.head(prefix + "/shared/moved/f" + i).etag(), prefix + "/shared/moved/f" + i));
        }
        synchronized (b) {
            b.copies.begin(made);
        }
        b.crash();
        S3Storage again = host(bOptions);
        again.flushAll();
        for (int i = 0; i < 3; i++) {
            assertEquals("f" + i, inS3("shared/moved/f" + i));
            assertEquals("f" + i, text(again, "/shared/moved/f" + i));
        }
        assertEquals(List.of("moved"), again.list(p("/shared")).stream().map(Entry::name).toList());
    }

    @Test
    void aTreeAnotherHostMadeIsRenamedHereByS3WithNothingComingDownOrGoingUp() throws Exception {
        S3Storage a = host(options("a").withFlushAfter(Duration.ZERO));
        // b fetches nothing a listing shows: every file moved is one it does not hold
        S3Storage b = host(options("b").withFlushAfter(Duration.ZERO).withPrefetchBelow(0));
        int files = 20;
        for (int i = 0; i < files; i++) {
            put(a, "/shared/tree/sub/f" + i, "f" + i);
        }
        a.setExecutable(p("/shared/tree/sub/f0"), 0755);
        a.flushAll();
        b.mkdir(p("/shared"));
        Map<String, Long> before = b.requests();
        b.rename(p("/shared/tree"), p("/shared/moved"));
        b.flushAll();
        Map<String, Long> after = b.requests();
        String spent = "before " + before + ", after " + after;
        assertEquals(files, after.getOrDefault("copy", 0L) - before.getOrDefault("copy", 0L), spent);
        assertEquals(0, after.getOrDefault("get", 0L) - before.getOrDefault("get", 0L), spent);
        // the two directories' markers, and no file
        assertEquals(2, after.getOrDefault("put", 0L) - before.getOrDefault("put", 0L), spent);
        for (int i = 0; i < files; i++) {
            assertEquals("f" + i, inS3("shared/moved/sub/f" + i));
            assertNull(inS3("shared/tree/sub/f" + i));
        }
        assertEquals("f7", text(b, "/shared/moved/sub/f7"));
        S3Storage c = host(options("c"));
        assertEquals(0755, c.metadata(p("/shared/moved/sub/f0")).mode() & 0777); // its attributes came with it
        assertEquals(0755, b.metadata(p("/shared/moved/sub/f0")).mode() & 0777);
        assertFalse(c.exists(p("/shared/tree")));
    }

    @Test
    void aFileLargerThanOneCopyIsRenamedAndChmoddedByS3InParts() throws Exception {
        S3Storage a = hostUploadingInParts(options("a").withFlushAfter(Duration.ZERO));
        byte[] big = randomBytes(2 * Bucket.MIN_PART_BYTES + 5, 16);
        a.mkdir(p("/shared"));
        a.write(p("/shared/big.bin"), big);
        a.flushAll();
        // b copies objects above S3's smallest part in parts, as every host does above 5 GiB
        Bucket bucketB = Bucket.connect(S3Spec.parse(spec), server.env());
        bucketB.movedInParts(Bucket.MIN_PART_BYTES, Bucket.MIN_PART_BYTES, Bucket.MIN_PART_BYTES);
        S3Storage b = S3Storage.open(S3Spec.parse(spec), bucketB, options("b").withFlushAfter(Duration.ZERO).withPrefetchBelow(0));
        ns.opened(b);
        assertEquals(big.length, b.metadata(p("/shared/big.bin")).size());
        Map<String, Long> before = b.requests();
        b.rename(p("/shared/big.bin"), p("/shared/moved.bin"));
        b.setExecutable(p("/shared/moved.bin"), 0755);
        b.flushAll();
        Map<String, Long> after = b.requests();
        String spent = "before " + before + ", after " + after;
        // three parts for the rename, three for the chmod in place
        assertEquals(6, after.getOrDefault("copy-part", 0L) - before.getOrDefault("copy-part", 0L), spent);
        assertEquals(0, after.getOrDefault("get", 0L) - before.getOrDefault("get", 0L), spent);
        assertEquals(0, after.getOrDefault("put-part", 0L) - before.getOrDefault("put-part", 0L), spent);
        assertTrue(b.state().contains("; content: 0.0 MiB down, 0.0 MiB up;"), b.state());
        assertMovedAndExecutableOnAnotherHost(big);
    }

    @Test
    void aFileCopiedWholeFromOneS3HasGoesUpAsS3sCopyUnlessWrittenSince() throws Exception {
        // uploads only at flushAll: the copies are judged as they stand then
        byte[] data = randomBytes(3L << 20, 21);
        S3Storage a = hostThatUploaded("a", "/shared/src.bin", data);
        Map<String, Long> before = a.requests();
        // as the daemon serves cp's copy_file_range: read one handle, write the other, say so
        copyThroughHandles(a, "/shared/src.bin", "/shared/copy.bin", 1 << 20);
        copyThroughHandles(a, "/shared/src.bin", "/shared/changed.bin", 1 << 20);
        try (FileHandle h = a.open(p("/shared/changed.bin"), EnumSet.of(OpenFlag.WRITE), 0644)) {
            h.write(ByteBuffer.wrap("changed".getBytes(UTF_8)), 5);
        }
        copyThroughHandles(a, "/shared/src.bin", "/shared/src.bin.partial", 2 << 20); // stopped short: not whole
        a.flushAll();
        Map<String, Long> after = a.requests();
        String spent = "before " + before + ", after " + after;
        assertEquals(1, after.getOrDefault("copy", 0L) - before.getOrDefault("copy", 0L), spent);
        assertEquals(2, after.getOrDefault("put", 0L) - before.getOrDefault("put", 0L), spent);
        assertArrayEquals(data, inS3Bytes("shared/copy.bin"));
        System.arraycopy("changed".getBytes(UTF_8), 0, data, 5, 7);
        assertArrayEquals(data, inS3Bytes("shared/changed.bin"));
        // the source up once, then the changed copy and the partial one: the whole copy moved no byte
        assertTrue(a.state().contains("; content: 0.0 MiB down, 8.0 MiB up;"), a.state());
        S3Storage b = host(options("b"));
        assertEquals(a.etag(p("/shared/copy.bin")), b.etag(p("/shared/copy.bin"))); // the SHA-256 the copy carries
    }

    /** A host that put {@code text} at {@code path} and uploaded it, as another host would have. */
    private S3Storage hostThatPut(String host, String path, String text) throws IOException {
        S3Storage s = host(options(host).withFlushAfter(Duration.ZERO));
        put(s, path, text);
        s.flushAll();
        return s;
    }

    /** A host on a stopped clock (it uploads only at flushAll) that wrote {@code data} at {@code path} and uploaded it. */
    private S3Storage hostThatUploaded(String host, String path, byte[] data) throws IOException {
        S3Storage s = host(options(host).withClock(startClock(), false));
        s.mkdir(p(path).parent());
        s.write(p(path), data);
        s.flushAll();
        return s;
    }

    /** What a third host sees of {@code big}, moved from /shared/big.bin to /shared/moved.bin and made executable. */
    private void assertMovedAndExecutableOnAnotherHost(byte[] big) throws IOException {
        assertNull(inS3("shared/big.bin"));
        S3Storage c = host(options("c"));
        assertEquals(0755, c.metadata(p("/shared/moved.bin")).mode() & 0777);
        assertArrayEquals(big, c.read(p("/shared/moved.bin")));
    }

    /** cp's copy_file_range as the daemon serves it between two handles of {@code s}, {@code chunk} bytes a call, the last short. */
    private static void copyThroughHandles(S3Storage s, String from, String to, int chunk) throws IOException {
        try (FileHandle in = s.open(p(from), EnumSet.of(OpenFlag.READ), 0);
             FileHandle out = s.open(p(to), EnumSet.of(OpenFlag.WRITE, OpenFlag.CREATE, OpenFlag.TRUNCATE), 0644)) {
            ByteBuffer b = ByteBuffer.allocate(chunk);
            for (long at = 0; ; ) {
                b.clear();
                int n = in.read(b, at);
                if (n <= 0) {
                    return;
                }
                out.write(b.flip(), at);
                out.copiedHere(in, at, at, n);
                at += n;
                if (to.endsWith(".partial")) {
                    return;
                }
            }
        }
    }

    @Test
    void aFileHeldHereIsRenamedByS3CopyingItUnlessItChangedSince() throws Exception {
        // uploads only at flushAll: a write-back between the rename and the write would copy that file too
        S3Storage a = host(options("a").withClock(startClock(), false));
        byte[] model = randomBytes(2L << 20, 11);
        byte[] other = randomBytes(2L << 20, 12);
        byte[] tool = randomBytes(2L << 20, 14);
        a.mkdir(p("/shared/out"));
        a.write(p("/shared/out/model.bin"), model);
        a.write(p("/shared/out/other.bin"), other);
        a.write(p("/shared/out/tool"), tool);
        a.flushAll();
        Map<String, Long> before = a.requests();
        a.rename(p("/shared/out/model.bin"), p("/shared/model.bin"));
        a.rename(p("/shared/out/other.bin"), p("/shared/other.bin"));
        a.rename(p("/shared/out/tool"), p("/shared/tool"));
        a.setExecutable(p("/shared/tool"), 0755); // mv, then chmod +x: still a copy, with its new mode
        try (FileHandle h = a.open(p("/shared/other.bin"), EnumSet.of(OpenFlag.WRITE), 0644)) {
            h.write(ByteBuffer.wrap("changed".getBytes(UTF_8)), 0);
        }
        a.flushAll();
        Map<String, Long> after = a.requests();
        String spent = "before " + before + ", after " + after;
        assertEquals(2, after.getOrDefault("copy", 0L) - before.getOrDefault("copy", 0L), spent);
        assertEquals(1, after.getOrDefault("put", 0L) - before.getOrDefault("put", 0L), spent); // the changed one
        assertArrayEquals(model, inS3Bytes("shared/model.bin"));
        assertArrayEquals(tool, inS3Bytes("shared/tool"));
        System.arraycopy("changed".getBytes(UTF_8), 0, other, 0, 7);
        assertArrayEquals(other, inS3Bytes("shared/other.bin"));
        assertNull(inS3("shared/out/model.bin"));
        assertNull(inS3("shared/out/other.bin"));
        assertEquals(0, a.pendingChanges());
        // each file up once, and the changed one again: the copies moved no byte from here
        assertTrue(a.state().contains("; content: 0.0 MiB down, 8.0 MiB up;"), a.state());
        S3Storage b = host(options("b"));
        assertEquals(0755, b.metadata(p("/shared/tool")).mode() & 0777);
        assertEquals(a.etag(p("/shared/tool")), b.etag(p("/shared/tool"))); // the SHA-256 the copy carries
        assertArrayEquals(model, b.read(p("/shared/model.bin")));
        assertTrue(b.state().contains("; content: 2.0 MiB down, 0.0 MiB up;"), b.state());
    }

    @Test
    void aFileReadInRangesHereThenMovedAndChmoddedGoesUpAsACopy() throws Exception {
        S3Storage a = hostUploadingInParts(options("a").withFlushAfter(Duration.ZERO));
        byte[] big = randomBytes(3 * Bucket.MIN_PART_BYTES, 15);
        a.mkdir(p("/shared"));
        a.write(p("/shared/big.bin"), big);
        a.flushAll();
        MutableClock clock = startClock();
        S3Storage b = hostUploadingInParts(options("b").withClock(clock, false));
        try (FileHandle h = b.open(p("/shared/big.bin"), EnumSet.of(OpenFlag.READ), 0)) {
            h.read(ByteBuffer.allocate(8), 0); // head -c 8: its download goes on in ranges
        }
        b.rename(p("/shared/big.bin"), p("/shared/moved.bin"));
        b.setExecutable(p("/shared/moved.bin"), 0755); // puts its upload off by the debounce
        Map<String, Long> before = b.requests();
        b.flushDue(); // what is due now: the old name's delete waits for the copy of it
        clock.advance(Duration.ofSeconds(3));
        b.flushDue();
        Map<String, Long> after = b.requests();
        assertEquals(1, after.getOrDefault("copy", 0L) - before.getOrDefault("copy", 0L), after.toString());
        assertEquals(null, after.get("put-part"), after.toString());
        assertEquals(0, b.pendingChanges());
        assertMovedAndExecutableOnAnotherHost(big);
    }

    @Test
    void aFileChangedElsewhereSinceItWasListedHereIsRenamedInItsNewVersion() throws Exception {
        S3Storage a = hostThatPut("a", "/shared/notes", "first");
        S3Storage b = hostHoldingItsListings("b");
        assertEquals(5, b.metadata(p("/shared/notes")).size());
        put(a, "/shared/notes", "second version");
        a.flushAll();
        // b's copy of the version it listed is refused: it moves the file as S3 has it now
        b.rename(p("/shared/notes"), p("/shared/moved"));
        b.flushAll();
        assertEquals("second version", inS3("shared/moved"));
        assertNull(inS3("shared/notes"));
        assertEquals(14, b.metadata(p("/shared/moved")).size());
        assertEquals("second version", text(b, "/shared/moved"));
    }

    @Test
    void aTreeIsRenamedWithoutAFileAnotherHostRemovedSinceItWasListedHere() throws Exception {
        S3Storage a = host(options("a").withFlushAfter(Duration.ZERO));
        for (int i = 0; i < 4; i++) {
            put(a, "/shared/tree/f" + i, "f" + i);
        }
        a.flushAll();
        S3Storage b = hostHoldingItsListings("b");
        assertEquals(4, b.entries(p("/shared/tree")).size());
        a.removeFile(p("/shared/tree/f2"));
        a.flushAll();
        // b still lists f2, holds none of the four, and S3 no longer has f2: the move goes on
        // without it, as if the delete had come first (it failed with ENOENT)
        b.rename(p("/shared/tree"), p("/shared/moved"));
        b.flushAll();
        assertEquals(List.of("f0", "f1", "f3"), b.entries(p("/shared/moved")).stream().map(Entry::name).sorted().toList());
        assertEquals("f3", text(b, "/shared/moved/f3"));
        assertEquals("f1", inS3("shared/moved/f1"));
        assertNull(inS3("shared/moved/f2"));
        assertNull(inS3("shared/tree/f0"));
    }

    @Test
    void aTreeRemovedGoesFromS3InBatches() throws Exception {
        S3Storage a = host(options("a").withClock(startClock(), false));
        int files = 30;
        for (int i = 0; i < files; i++) {
            put(a, "/shared/tree/d" + (i % 3) + "/f" + i, "f" + i);
        }
        a.flushAll();
        Map<String, Long> before = a.requests();
        a.delete(p("/shared/tree")); // rm -r
        a.flushAll();
        Map<String, Long> after = a.requests();
        String spent = "before " + before + ", after " + after;
        // one batch, sent again at once without its conditions, which s3proxy refuses (501) once per bucket
        assertEquals(2, after.getOrDefault("delete-batch", 0L) - before.getOrDefault("delete-batch", 0L), spent);
        // the directories' markers, deepest first, one at a time
        assertEquals(4, after.getOrDefault("delete", 0L) - before.getOrDefault("delete", 0L), spent);
        assertEquals(0, a.pendingChanges());
        assertEquals(List.of(), raw.list(prefix + "/shared/tree/", false).objects());
        assertFalse(host(options("b")).exists(p("/shared/tree")));
    }

    @Test
    void aRenameRefusedCopiesNothing() throws Exception {
        S3Storage a = host(options("a").withFlushAfter(Duration.ZERO));
        S3Storage b = host(options("b").withFlushAfter(Duration.ZERO).withPrefetchBelow(0));
        put(a, "/shared/tree/f", "f");
        put(a, "/shared/full/g", "g");
        a.flushAll();
        assertThrows(java.nio.file.DirectoryNotEmptyException.class, () -> b.rename(p("/shared/tree"), p("/shared/full")));
        assertEquals(0, b.requests().getOrDefault("copy", 0L), b.requests().toString());
        assertEquals("f", text(b, "/shared/tree/f"));
        assertNull(inS3("shared/full/f"));
    }

    @Test
    void attributesChangedOnAFileNotFetchedHereGoUpWithoutItsContent() throws Exception {
        S3Storage a = host(options("a").withFlushAfter(Duration.ZERO));
        // b uploads only at flushAll, so that its requests are counted whole
        S3Storage b = host(options("b").withClock(startClock(), false));
        byte[] big = new byte[(int) S3Options.DEFAULT_PREFETCH_BELOW + 1]; // listed and asked, not fetched
        new java.util.Random(7).nextBytes(big);
        a.write(p("/shared/tool"), big);
        a.setXattr(p("/shared/tool"), "user.origin", "a".getBytes(UTF_8), XattrMode.SET);
        a.flushAll();
        String sha = a.etag(p("/shared/tool"));
        FileTime mine = FileTime.from(Instant.parse("2024-05-06T07:08:09Z"));
        assertEquals(0644, b.metadata(p("/shared/tool")).mode() & 0777);
        b.setExecutable(p("/shared/tool"), 0755);
        b.setTimes(p("/shared/tool"), null, mine);
        b.flushAll();
        // S3 copied the object onto itself with the new metadata: nothing came down or went up
        assertEquals(0L, b.requests().getOrDefault("get", 0L), b.requests().toString());
        assertEquals(0L, b.requests().getOrDefault("put", 0L), b.requests().toString());
        assertEquals(1L, b.requests().getOrDefault("copy", 0L), b.requests().toString());
        assertEquals(0, b.pendingChanges());
        S3Storage c = host(options("c"));
        Metadata m = c.metadata(p("/shared/tool"));
        assertEquals(0755, m.mode() & 0777);
        assertEquals(mine, m.modified());
        assertArrayEquals(big, c.read(p("/shared/tool")));
        assertEquals(sha, c.etag(p("/shared/tool"))); // the metadata it kept
        assertArrayEquals("a".getBytes(UTF_8), c.xattr(p("/shared/tool"), "user.origin"));
        // and a later change of b's goes up over the copy the same way, not beside it as a conflict
        b.setExecutable(p("/shared/tool"), 0644);
        b.removeXattr(p("/shared/tool"), "user.origin");
        b.flushAll();
        assertEquals(0L, b.requests().getOrDefault("get", 0L), b.requests().toString());
        assertEquals(2L, b.requests().getOrDefault("copy", 0L), b.requests().toString());
        S3Storage d = host(options("d"));
        assertEquals(0644, d.metadata(p("/shared/tool")).mode() & 0777);
        assertEquals(List.of(), d.xattrNames(p("/shared/tool")));
        assertEquals(List.of("tool"), d.entries(p("/shared")).stream().map(Entry::name).toList());
    }

    @Test
    void anOpenForWritingFetchesAtItsFirstReadOrWrite() throws Exception {
        S3Storage a = host(options("a").withFlushAfter(Duration.ZERO));
        byte[] big = randomBytes(S3Options.DEFAULT_PREFETCH_BELOW * 4, 5);
        a.mkdir(p("/shared"));
        a.write(p("/shared/data.bin"), big);
        a.flushAll();
        S3Storage b = host(options("b").withFlushAfter(Duration.ZERO));
        FileTime mine = FileTime.from(Instant.parse("2024-05-06T07:08:09Z"));
        // what touch does: an open for writing, new times through it, a close
        try (FileHandle h = b.open(p("/shared/data.bin"), EnumSet.of(OpenFlag.WRITE, OpenFlag.CREATE), 0644)) {
            assertEquals(big.length, h.size());
            h.setTimes(null, mine);
        }
        b.flushAll();
        assertEquals(0L, b.requests().getOrDefault("get", 0L), b.requests().toString());
        assertEquals(mine, host(options("c")).metadata(p("/shared/data.bin")).modified());
        // a write in the middle keeps the rest: the content came first
        try (FileHandle h = b.open(p("/shared/data.bin"), EnumSet.of(OpenFlag.WRITE), 0644)) {
            h.write(ByteBuffer.wrap("xyz".getBytes(UTF_8)), 10);
        }
        b.flushAll();
        System.arraycopy("xyz".getBytes(UTF_8), 0, big, 10, 3);
        assertArrayEquals(big, host(options("d")).read(p("/shared/data.bin")));
        assertEquals(1L, b.requests().getOrDefault("get", 0L), b.requests().toString());
    }

    @Test
    void aFileCopiedOntoItselfElsewhereKeepsItsContentCachedHere() throws Exception {
        S3Storage a = hostUploadingInParts(options("a").withFlushAfter(Duration.ZERO));
        byte[] content = randomBytes(2 * Bucket.MIN_PART_BYTES + 1, 9); // in parts: S3's copy has another ETag
        a.mkdir(p("/shared"));
        a.write(p("/shared/model.bin"), content);
        a.flushAll();
        MutableClock clock = startClock();
        S3Storage b = host(options("b").withClock(clock, false));
        assertArrayEquals(content, b.read(p("/shared/model.bin")));
        long gets = b.requests().getOrDefault("get", 0L);
        S3Storage c = host(options("c").withFlushAfter(Duration.ZERO).withPrefetchBelow(0));
        c.setExecutable(p("/shared/model.bin"), 0755);
        c.flushAll();
        assertEquals(1L, c.requests().getOrDefault("copy", 0L), c.requests().toString());

        clock.advance(Duration.ofSeconds(2)); // past b's listing
        assertEquals(0755, b.metadata(p("/shared/model.bin")).mode() & 0777);
        assertArrayEquals(content, b.read(p("/shared/model.bin")));
        assertEquals(gets, b.requests().getOrDefault("get", 0L), "the same content is not fetched again: " + b.requests());
    }

    @Test
    void aFileReplacedElsewhereWithAsManyBytesIsFetchedAgain() throws Exception {
        S3Storage a = hostThatPut("a", "/shared/state", "aaaa");
        MutableClock clock = startClock();
        S3Storage b = host(options("b").withClock(clock, false));
        assertEquals("aaaa", text(b, "/shared/state"));
        put(a, "/shared/state", "bbbb");
        a.flushAll();
        clock.advance(Duration.ofSeconds(2));
        assertEquals("bbbb", text(b, "/shared/state"));
        assertEquals(4, b.metadata(p("/shared/state")).size());
    }

    @Test
    void attributesChangedOnALargeFileHeldHereGoUpWithoutItsContentUntilItChanges() throws Exception {
        // uploads only at flushAll, so that each change goes up as the test makes it
        byte[] model = randomBytes(2L << 20, 13);
        S3Storage a = hostThatUploaded("a", "/shared/model.bin", model);
        a.setExecutable(p("/shared/model.bin"), 0755);
        a.setXattr(p("/shared/model.bin"), "user.origin", "a".getBytes(UTF_8), XattrMode.SET);
        Map<String, Long> before = a.requests();
        a.flushAll();
        Map<String, Long> after = a.requests();
        assertEquals(1, after.getOrDefault("copy", 0L) - before.getOrDefault("copy", 0L), after.toString());
        assertEquals(before.getOrDefault("put", 0L), after.getOrDefault("put", 0L), after.toString());
        S3Storage b = host(options("b"));
        assertEquals(0755, b.metadata(p("/shared/model.bin")).mode() & 0777);
        assertArrayEquals("a".getBytes(UTF_8), b.xattr(p("/shared/model.bin"), "user.origin"));
        assertEquals(a.etag(p("/shared/model.bin")), b.etag(p("/shared/model.bin")));

        // once its content changed here, an attribute change goes up with it
        try (FileHandle h = a.open(p("/shared/model.bin"), EnumSet.of(OpenFlag.WRITE), 0644)) {
            h.write(ByteBuffer.wrap("new".getBytes(UTF_8)), 0);
        }
        a.flushAll();
        a.setExecutable(p("/shared/model.bin"), 0644);
        before = a.requests();
        a.flushAll();
        after = a.requests();
        assertEquals(1, after.getOrDefault("copy", 0L) - before.getOrDefault("copy", 0L), "its new content is known: " + after);
        System.arraycopy("new".getBytes(UTF_8), 0, model, 0, 3);
        assertArrayEquals(model, inS3Bytes("shared/model.bin"));
        assertEquals(0644, host(options("c")).metadata(p("/shared/model.bin")).mode() & 0777);
        // a change of content and of attributes together goes up as content
        try (FileHandle h = a.open(p("/shared/model.bin"), EnumSet.of(OpenFlag.WRITE), 0644)) {
            h.write(ByteBuffer.wrap("two".getBytes(UTF_8)), 0);
        }
        a.setExecutable(p("/shared/model.bin"), 0755);
        before = a.requests();
        a.flushAll();
        after = a.requests();
        assertEquals(before.getOrDefault("copy", 0L), after.getOrDefault("copy", 0L), after.toString());
        System.arraycopy("two".getBytes(UTF_8), 0, model, 0, 3);
        assertArrayEquals(model, inS3Bytes("shared/model.bin"));
        assertEquals(0755, host(options("d")).metadata(p("/shared/model.bin")).mode() & 0777);
    }

    @Test
    void attributesChangedHereOnAFileChangedElsewhereGoUpWithItsNewContent() throws Exception {
        S3Storage a = hostThatPut("a", "/shared/run.sh", "echo one");
        S3Storage b = hostHoldingItsListings("b");
        assertEquals(0644, b.metadata(p("/shared/run.sh")).mode() & 0777);
        put(a, "/shared/run.sh", "echo two");
        a.flushAll();
        // b's copy in place is refused (the object changed): its chmod goes up with what S3 has now
        b.setExecutable(p("/shared/run.sh"), 0755);
        b.flushAll();
        S3Storage c = host(options("c"));
        assertEquals("echo two", text(c, "/shared/run.sh"));
        assertEquals(0755, c.metadata(p("/shared/run.sh")).mode() & 0777);
        assertEquals(List.of("run.sh"), c.entries(p("/shared")).stream().map(Entry::name).toList());
    }

    @Test
    void attributesChangedOnAnotherHostShowHereThoughTheContentIsTheSame() throws Exception {
        S3Storage a = host(options("a").withFlushAfter(Duration.ZERO));
        S3Options ob = options("b").withValidity(Duration.ZERO);
        S3Storage b = host(ob);
        put(a, "/shared/deploy.sh", "echo deployed\n");
        a.flushAll();
        assertEquals(0644, b.metadata(p("/shared/deploy.sh")).mode() & 0777);
        assertEquals("echo deployed\n", text(b, "/shared/deploy.sh"));
        // the same content put again: the same ETag, a new LastModified
        // S3 lists LastModified to the second: a put again within the same second looks the same
        Instant first = raw.head(prefix + "/shared/deploy.sh").modified();
        assertTrue(await(Duration.ofSeconds(5), () -> pastTheSecondAfter(first)));
        a.setExecutable(p("/shared/deploy.sh"), 0755);
        a.setXattr(p("/shared/deploy.sh"), "user.reviewed", "yes".getBytes(UTF_8), XattrMode.SET);
        a.flushAll();
        assertEquals(0755, b.metadata(p("/shared/deploy.sh")).mode() & 0777, "else exec says EACCES on this host");
        assertEquals("yes", new String(b.xattr(p("/shared/deploy.sh"), "user.reviewed"), UTF_8));
        long gets = b.requests().getOrDefault("get", 0L);
        assertEquals("echo deployed\n", text(b, "/shared/deploy.sh"));
        assertEquals(gets, b.requests().getOrDefault("get", 0L), "the content here is still the object's: " + b.requests());

        // and one made while this host was down: its journal kept the time it had listed
        b.close();
        Instant second = raw.head(prefix + "/shared/deploy.sh").modified();
        assertTrue(await(Duration.ofSeconds(5), () -> pastTheSecondAfter(second)));
        a.setExecutable(p("/shared/deploy.sh"), 0644);
        a.flushAll();
        assertEquals(0644, host(ob).metadata(p("/shared/deploy.sh")).mode() & 0777);
    }

    @Test
    void aLinkMadeAgainOrTouchedOnAnotherHostShowsItsNewTimeHere() throws Exception {
        // the same target put again: the same ETag, a new LastModified and chibi-mtime (rm and ln -s
        // again, as python -m venv does over an old venv, or touch -h)
        S3Storage a = host(options("a").withFlushAfter(Duration.ZERO));
        S3Storage b = host(options("b").withValidity(Duration.ZERO));
        a.mkdir(p("/shared/venv"));
        a.createSymlink(p("/shared/venv/python"), "python3.11");
        a.createSymlink(p("/shared/venv/lib64"), "lib");
        a.flushAll();
        FileTime made = b.metadata(p("/shared/venv/python")).modified();
        assertEquals(a.metadata(p("/shared/venv/lib64")).modified().toMillis(), b.metadata(p("/shared/venv/lib64")).modified().toMillis());
        Instant first = raw.head(prefix + "/shared/venv/python.rclonelink").modified();
        assertTrue(await(Duration.ofSeconds(5), () -> pastTheSecondAfter(first)));
        a.removeFile(p("/shared/venv/python"));
        a.createSymlink(p("/shared/venv/python"), "python3.11");
        FileTime touched = FileTime.from(Instant.parse("2001-01-01T00:00:00Z"));
        a.setTimes(p("/shared/venv/lib64"), null, touched);
        a.flushAll();
        FileTime remade = a.metadata(p("/shared/venv/python")).modified();
        assertNotEquals(made.toMillis(), remade.toMillis());
        assertEquals(remade.toMillis(), b.metadata(p("/shared/venv/python")).modified().toMillis(),
                "b shows the new link's time, not the one it listed first");
        assertEquals(touched, b.metadata(p("/shared/venv/lib64")).modified(), "b shows the touch -h");
        assertEquals("python3.11", b.readLink(p("/shared/venv/python")));
        assertEquals(EntryKind.SYMLINK, b.metadata(p("/shared/venv/lib64")).kind());
    }

    @Test
    void aFileRewrittenWholeOnAnotherHostKeepsItsExecuteBits() throws Exception {
        S3Storage a = host(options("a").withFlushAfter(Duration.ZERO));
        S3Storage b = host(options("b").withFlushAfter(Duration.ZERO));
        S3Storage c = host(options("c"));
        put(a, "/shared/truncated.sh", "echo a");
        a.setExecutable(p("/shared/truncated.sh"), 0755);
        a.write(p("/shared/replaced.sh"), "echo a".getBytes(UTF_8));
        a.setExecutable(p("/shared/replaced.sh"), 0755);
        a.flushAll();
        // neither is fetched on b: an O_TRUNC open and a whole write (chibifs write) need no content
        put(b, "/shared/truncated.sh", "echo b");
        b.write(p("/shared/replaced.sh"), "echo b".getBytes(UTF_8));
        b.flushAll();
        assertEquals(0755, c.metadata(p("/shared/truncated.sh")).mode() & 0777);
        assertEquals(0755, c.metadata(p("/shared/replaced.sh")).mode() & 0777);
        assertEquals("echo b", text(c, "/shared/replaced.sh"));
    }

    @Test
    void aDirectorysAnswersAreHeldForWhatIsLeftOfItsListingUntilAConflictChangesThem() throws Exception {
        MutableClock clock = startClock();
        Duration ttl = Duration.ofSeconds(60);
        S3Storage a = host(options("a").withClock(clock, false).withValidity(ttl));
        S3Storage b = host(options("b").withClock(clock, false));
        b.write(p("/shared/doc"), "base".getBytes(UTF_8));
        b.flushAll();
        assertEquals(Duration.ZERO, a.answersHeld(p("/shared")), "never listed: nothing to hold");
        assertEquals(4, a.metadata(p("/shared/doc")).size());
        assertEquals(ttl, a.answersHeld(p("/shared")));
        clock.advance(Duration.ofSeconds(45));
        put(a, "/shared/doc", "a's edit");
        assertEquals(Duration.ofSeconds(15), a.answersHeld(p("/shared")), "a change asked here is seen where it was asked");
        clock.advance(Duration.ofSeconds(15));
        assertEquals(Duration.ZERO, a.answersHeld(p("/shared")), "expired: the next question lists again");

        assertEquals(8, a.metadata(p("/shared/doc")).size());
        assertEquals(ttl, a.answersHeld(p("/shared")));
        put(b, "/shared/doc", "b's edit, longer");
        b.flushAll();
        a.flushAll(); // loses: the name now shows b's, and a copy appears, both without a request here
        assertEquals(Duration.ZERO, a.answersHeld(p("/shared")));
        assertEquals(16, a.metadata(p("/shared/doc")).size());
        assertEquals(ttl, a.answersHeld(p("/shared")));
    }

    @Test
    void aDirectoryMadeHereIsNotListedUntilItsParentsListingExpires() throws Exception {
        MutableClock clock = startClock();
        S3Storage a = host(options("a").withClock(clock, false));
        a.mkdir(p("/shared"));
        long lists = a.requests().getOrDefault("list", 0L);
        // S3 had nothing below a name its parent's listing did not show: that listing stands for it
        a.write(p("/shared/new/deeper/f"), "f".getBytes(UTF_8));
        a.createDirectory(p("/shared/new/other"));
        a.write(p("/shared/new/other/g"), "g".getBytes(UTF_8));
        assertEquals(List.of(new Entry("f", EntryKind.FILE)), a.list(p("/shared/new/deeper")));
        assertEquals(lists, a.requests().getOrDefault("list", 0L), a.requests().toString());
        // and no longer: then S3 is asked what another host may have put there since
        clock.advance(S3Options.DEFAULT_VALIDITY);
        raw.put(prefix + "/shared/new/deeper/theirs", "t".getBytes(UTF_8), Map.of(), null);
        assertEquals(List.of(new Entry("f", EntryKind.FILE), new Entry("theirs", EntryKind.FILE)),
                a.list(p("/shared/new/deeper")));
    }

    @Test
    void theSameLinkMadeOnBothHostsLeavesTheirsAndAConflictCopyAsNewNodes() throws Exception {
        TwoHosts hosts = onOneClock();
        S3Storage a = hosts.a();
        S3Storage b = hosts.b();
        a.mkdir(p("/shared"));
        a.flushAll();
        assertEquals(List.of(), b.list(p("/shared")));
        a.createSymlink(p("/shared/current"), "v1");
        b.createSymlink(p("/shared/current"), "v2");
        long mine = b.metadata(p("/shared/current")).inode();
        a.flushAll();
        b.flushAll(); // If-None-Match: * finds a's link there

        assertEquals("v1", inS3("shared/current.rclonelink"));
        assertEquals("v2", inS3("shared/current.conflict-b-20260102T030405Z.rclonelink"));
        assertEquals("v1", b.readLink(p("/shared/current")));
        assertNotEquals(mine, b.metadata(p("/shared/current")).inode());
        assertEquals("v2", b.readLink(p("/shared/current.conflict-b-20260102T030405Z")));
        assertEquals(0, b.pendingChanges());
    }

    @Test
    void linksMadeAndRemovedJustBeforeAKillReachS3AtTheNextStart() throws Exception {
        MutableClock clock = startClock();
        S3Options o = options("a").withClock(clock, false);
        S3Storage a = host(o);
        a.mkdir(p("/shared"));
        a.createSymlink(p("/shared/old"), "gone/soon");
        a.flushAll();
        a.createSymlink(p("/shared/new"), "made/now");
        a.removeFile(p("/shared/old"));
        a.crash();
        assertEquals("gone/soon", inS3("shared/old.rclonelink"));

        S3Storage again = host(o);
        assertEquals("made/now", again.readLink(p("/shared/new")));
        again.flushDue();
        assertEquals("made/now", inS3("shared/new.rclonelink"));
        assertNull(inS3("shared/old.rclonelink"));
        assertEquals(List.of(new Entry("new", EntryKind.SYMLINK)), again.list(p("/shared")));
        assertEquals(0, again.pendingChanges());
    }

    @Test
    void aCorruptJournalRecordIsSkippedNeverApplied() throws Exception {
        MutableClock clock = startClock();
        S3Options o = options("a").withClock(clock, false);
        S3Storage a = host(o);
        put(a, "/shared/good", "good");
        put(a, "/shared/bad", "bad");
        a.crash();
        Path journal = o.cacheDir().resolve("journal");
        List<String> lines = new ArrayList<>(Files.readAllLines(journal));
        int bad = -1;
        for (int i = 0; i < lines.size(); i++) {
            if (lines.get(i).contains("\"/shared/bad\"")) {
                bad = i;
            }
        }
        assertTrue(bad >= 0, lines.toString());
        lines.set(bad, lines.get(bad).replace("\"/shared/bad\"", "\"/shared/bae\""));
        lines.add("not a record at all");
        Files.write(journal, lines);

        S3Storage again = host(o);
        again.flushAll();
        assertEquals("good", inS3("shared/good"));
        assertNull(inS3("shared/bae"));
        assertFalse(again.exists(p("/shared/bae")));
    }

    @Test
    void aRemovedFileNeverComesBackFromAStaleListing() throws Exception {
        MutableClock clock = startClock();
        S3Storage a = host(options("a").withClock(clock, false).withValidity(Duration.ZERO));
        a.write(p("/shared/x"), "x".getBytes(UTF_8));
        a.flushAll();
        a.removeFile(p("/shared/x"));
        assertEquals("x", inS3("shared/x"), "the delete waits for the write-back");
        assertFalse(a.exists(p("/shared/x")));
        assertEquals(List.of(), a.list(p("/shared")));
        a.flushDue();
        assertNull(inS3("shared/x"));
        assertEquals(List.of(), a.list(p("/shared")));
    }

    /**
     * No credentials, a bucket S3 says is not there, or credentials it refuses, stop the store's open with S3's
     * answer (a mount would otherwise serve a tree whose every operation fails EIO); an endpoint
     * that does not answer does not (the write-back's changes wait for it), and is known away at once.
     */
    @Test
    void aStoreOpensOverABucketS3AcceptsOrOneThatDoesNotAnswerButNotOverARefusal() throws Exception {
        IOException noBucket = assertThrows(IOException.class,
                () -> S3Storage.open("s3://no-such-bucket/" + prefix, options("a")));
        assertTrue(noBucket.getMessage().contains("HTTP 404 NoSuchBucket"), noBucket.getMessage());
        assertTrue(noBucket.getMessage().contains(server.endpoint().toString()), noBucket.getMessage());
        assertEquals(1, noBucket.getMessage().lines().count(), noBucket.getMessage());

        java.util.Map<String, String> wrongSecret = new java.util.HashMap<>(server.env());
        wrongSecret.put("AWS_SECRET_ACCESS_KEY", "not-the-secret");
        IOException refused = assertThrows(IOException.class,
                () -> S3Storage.open(spec, S3Options.defaults(temp.resolve(prefix + "-b"), wrongSecret)));
        assertTrue(refused.getMessage().contains("HTTP 403"), refused.getMessage());

        java.util.Map<String, String> noCredentials = new java.util.HashMap<>(server.env());
        noCredentials.keySet().removeIf(k -> k.startsWith("AWS_ACCESS") || k.startsWith("AWS_SECRET"));
        noCredentials.put("AWS_PROFILE", "no-such-profile");
        IOException none = assertThrows(IOException.class,
                () -> S3Storage.open(spec, S3Options.defaults(temp.resolve(prefix + "-d"), noCredentials)));
        assertTrue(none.getMessage().startsWith("no AWS credentials for " + server.endpoint()), none.getMessage());
        assertEquals(1, none.getMessage().lines().count(), none.getMessage());

        java.util.Map<String, String> nobodyThere = new java.util.HashMap<>(server.env());
        nobodyThere.put("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:1");
        S3Storage away = host(S3Options.defaults(temp.resolve(prefix + "-c"), nobodyThere));
        // what mount warns of, for a store at a prefix as for one at /
        assertTrue(String.valueOf(away.unanswered()).contains("cannot reach http://127.0.0.1:1"), away.unanswered());
        long asked = total(away.requests());
        IOException listing = assertThrows(IOException.class, () -> away.list(p("/shared")));
        assertTrue(listing.getMessage().contains("cannot reach http://127.0.0.1:1"), listing.getMessage());
        assertEquals(asked, total(away.requests()), "known away since the open: " + away.requests());
    }

    /**
     * Once a request found S3 unreachable, the next ones do not wait through the SDK's retries (a
     * FUSE request waiting on them holds up its program for seconds): they make no request at all
     * until the write-back's probe hears S3 again, and nothing is pending to make it probe.
     */
    @Test
    void whileS3IsKnownUnreachableNoRequestAsksItUntilTheWriteBackHearsItAgain() throws Exception {
        MutableClock clock = startClock();
        S3Storage a = host(options("a").withClock(clock, false));
        S3Storage b = host(options("b"));
        // larger than what a listing fetches whole with its attributes (S3Options.DEFAULT_PREFETCH_BELOW)
        String theirs = "uploaded by b, never fetched by a" + " ".repeat((int) S3Options.DEFAULT_PREFETCH_BELOW);
        b.write(p("/shared/theirs"), theirs.getBytes(UTF_8));
        b.flushAll();
        assertEquals(List.of(new Entry("theirs", dev.chibifs.store.EntryKind.FILE)), a.list(p("/shared")));
        server.stop();
        try {
            clock.advance(Duration.ofSeconds(2)); // past the listing's validity: the next list asks S3
            assertEquals(1, a.list(p("/shared")).size(), "what was last seen stands");
            long asked = total(a.requests());
            // found away by a listing, before the write-back backed off (it said 'in 9223372036827322.0 s')
            assertEquals("next try due now", a.nextTry());

            clock.advance(Duration.ofSeconds(2));
            assertEquals(1, a.list(p("/shared")).size(), "what was last seen stands");
            IOException read = assertThrows(IOException.class, () -> a.read(p("/shared/theirs")));
            assertTrue(read.getMessage().contains("cannot reach"), read.getMessage());
            assertEquals(1, read.getMessage().lines().count(), read.getMessage());
            try (FileHandle h = a.open(p("/shared/synced"), EnumSet.of(OpenFlag.WRITE, OpenFlag.CREATE), 0644)) {
                h.write(ByteBuffer.wrap("must reach S3".getBytes(UTF_8)), 0);
                IOException sync = assertThrows(IOException.class, () -> h.sync(false));
                assertTrue(sync.getMessage().contains("cannot reach"), sync.getMessage());
            }
            assertEquals(asked, total(a.requests()), "requests made while S3 was known to be away: " + a.requests());
            assertTrue(a.state().contains(": unreachable: cannot reach " + server.endpoint()), a.state());
            assertTrue(a.state().contains("; to send: 1;"), a.state());
        } finally {
            server.start();
        }
        long asked = total(a.requests());
        clock.advance(Duration.ofSeconds(2));
        assertEquals(2, a.list(p("/shared")).size(), "theirs, and synced made here");
        assertEquals(asked, total(a.requests()), "nothing has heard S3 since: " + a.requests());
        a.flushDue(); // the probe, then the upload of /shared/synced
        assertEquals(0, a.pendingChanges());
        assertEquals(theirs, text(a, "/shared/theirs"));
        assertEquals("must reach S3", inS3("shared/synced"));
        assertTrue(a.state().contains(": answers; to send: 0;"), a.state());
        assertEquals(null, a.unanswered());
    }

    /**
     * A tester's SIGSTOPped S3: each {@code chibifs sync} and each directory fsync waited the client's
     * 30 s for the question whether S3 was back, every call. The question goes in the background now,
     * waited for briefly; once S3 answers it, the next sync sends what waits.
     */
    @Test
    void whileS3HangsADirectoryFsyncFailsWithinSecondsAndSyncsOnceItAnswers() throws Exception {
        S3Storage a = host(options("a").withFlushAfter(Duration.ofHours(1)));
        put(a, "/shared/waits", "to go up");
        server.stop();
        try {
            IOException away = assertThrows(IOException.class, a::flushAll); // found away
            assertTrue(away.getMessage().contains("cannot reach"), away.getMessage());
        } finally {
            server.start();
        }
        S3Server.HeldRequests hung = server.holdLists(prefix -> true, 1); // every LIST held: S3 hangs
        try {
            for (int call = 0; call < 2; call++) {
                long t0 = System.nanoTime();
                IOException e = assertThrows(IOException.class, () -> a.syncDirectory(p("/shared")));
                long seconds = (System.nanoTime() - t0) / 1_000_000_000L;
                assertTrue(e.getMessage().contains("cannot reach"), e.getMessage());
                assertTrue(seconds < 10, "call " + call + " waited " + seconds + " s for a hung S3");
            }
        } finally {
            server.holdLists(prefix -> false, 0);
            hung.release().countDown();
        }
        assertTrue(await(Duration.ofSeconds(30), () -> {
            try {
                a.syncDirectory(p("/shared"));
                return true;
            } catch (IOException stillAway) {
                return false;
            }
        }), "S3 answers again: the sync goes through");
        assertEquals(0, a.pendingChanges());
        assertEquals("to go up", inS3("shared/waits"));
    }

    private static long total(java.util.Map<String, Long> requests) {
        return requests.values().stream().mapToLong(Long::longValue).sum();
    }

    @Test
    void aStoreRestartedWhileS3IsAwayServesWhatItsJournalKept() throws Exception {
        S3Options o = options("a");
        S3Storage a = host(o);
        a.write(p("/shared/notes/read.md"), "cached here".getBytes(UTF_8));
        a.flushAll();
        put(a, "/shared/notes/draft.md", "not uploaded yet");
        a.crash();
        server.stop();
        try {
            S3Storage again = host(o); // S3 does not answer: it opens all the same
            assertEquals("cached here", text(again, "/shared/notes/read.md"));
            assertEquals("not uploaded yet", text(again, "/shared/notes/draft.md"));
            put(again, "/shared/notes/draft.md", "changed while away");
            assertEquals(List.of(new Entry("draft.md", EntryKind.FILE), new Entry("read.md", EntryKind.FILE)),
                    again.list(p("/shared/notes")));
            // what the journal did not keep is not there until S3 answers, as in a directory listed before
            assertThrows(NoSuchFileException.class, () -> again.metadata(p("/shared/other")));
        } finally {
            server.start();
        }
        S3Storage again = ns.last();
        assertTrue(await(Duration.ofSeconds(30), () -> again.pendingChanges() == 0), "still pending: " + again.pendingChanges());
        assertEquals("changed while away", inS3("shared/notes/draft.md"));
    }

    @Test
    void whileS3IsUnreachableWritesGoOnFsyncFailsClearlyAndNothingClosedIsLost() throws Exception {
        S3Storage a = host(options("a").withFlushAfter(Duration.ofMillis(100)));
        S3Storage b = host(options("b"));
        a.write(p("/shared/before"), "before".getBytes(UTF_8));
        a.flushAll();
        server.stop();
        try {
            for (int i = 0; i < 10; i++) {
                put(a, "/shared/during" + i, "written while S3 was away " + i);
            }
            assertEquals("before", text(a, "/shared/before"));
            assertEquals("written while S3 was away 3", text(a, "/shared/during3"));
            try (FileHandle h = a.open(p("/shared/synced"), EnumSet.of(OpenFlag.WRITE, OpenFlag.CREATE), 0644)) {
                h.write(ByteBuffer.wrap("must reach S3".getBytes(UTF_8)), 0);
                IOException e = assertThrows(IOException.class, () -> h.sync(false));
                assertTrue(e.getMessage().contains("cannot reach"), e.getMessage());
                assertEquals(1, e.getMessage().lines().count(), e.getMessage());
            }
            assertTrue(a.pendingChanges() >= 11, "pending: " + a.pendingChanges());
        } finally {
            server.start();
        }
        assertTrue(await(Duration.ofSeconds(30), () -> a.pendingChanges() == 0), "still pending: " + a.pendingChanges());
        for (int i = 0; i < 10; i++) {
            assertEquals("written while S3 was away " + i, text(b, "/shared/during" + i));
        }
        assertEquals("must reach S3", text(b, "/shared/synced"));
    }
}
