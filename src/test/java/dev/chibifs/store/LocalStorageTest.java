package dev.chibifs.store;

import dev.chibifs.sys.IsDirectoryException;
import dev.chibifs.sys.Errors;
import dev.chibifs.sys.Linux;
import dev.chibifs.sys.Syscalls;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.chibifs.path.VfsPath;
import dev.chibifs.testing.Sh;
import dev.chibifs.testing.Tmpfs;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.api.io.TempDir;

/** The directory-tree store: the shared suite, plus byte compatibility with chibi and symbolic link safety. */
class LocalStorageTest extends StorageBehaviourSuite {

    @TempDir
    Path temp;

    private Path root;

    @Override
    protected Storage newStorage() throws IOException {
        root = temp.resolve("vfs");
        return new LocalStorage(root);
    }

    /** The tmpfs under {@link #newStorageOnASmallDisk}'s store, unmounted after the test. */
    private Tmpfs smallDisk;

    @Override
    protected Storage newStorageOnASmallDisk(long bytes) throws IOException {
        dev.chibifs.testing.FuseSupport.requireRoot();
        smallDisk = Tmpfs.mount(temp.resolve("small"), String.valueOf(bytes));
        return new LocalStorage(smallDisk.path());
    }

    @org.junit.jupiter.api.AfterEach
    void unmountSmallDisk() {
        if (smallDisk != null) {
            smallDisk.close();
        }
    }

    /**
     * A write that fills the disk failed with "No space left on device" and no file: pwrite's and
     * fsync's failures are a descriptor's. cache put's line then named nothing; now the file written.
     */
    @Test
    void aWriteThatFillsTheDiskNamesTheFileItWrote() throws IOException {
        try (Storage small = newStorageOnASmallDisk(1 << 20)) {
            byte[] more = new byte[2 << 20];
            VfsPath whole = p("/shared/whole");
            java.nio.file.FileSystemException full = assertThrows(java.nio.file.FileSystemException.class,
                    () -> small.write(whole, more));
            assertEquals(Linux.ENOSPC, Errors.errno(full), full.toString());
            assertEquals(whole.toString(), full.getFile());
            VfsPath streamed = p("/shared/streamed");
            full = assertThrows(java.nio.file.FileSystemException.class, () -> small.write(streamed,
                    new java.io.ByteArrayInputStream(more), Precondition.NONE, Storage.Guard.NONE));
            assertEquals(Linux.ENOSPC, Errors.errno(full), full.toString());
            assertEquals(streamed.toString(), full.getFile());
            assertEquals("No space left on device: /shared/streamed", Errors.describe(full));
        }
    }

    private LocalStorage local() {
        return (LocalStorage) storage;
    }

    /**
     * A file a write or an append makes gets the mode the store was told (the vfs commands: 0666
     * less their user's umask, as chibi's own writes and appends): append's were 0644 less the
     * process's umask, whatever it was told. An append makes its file owner-writable first, since
     * it opens it again to write, which a mode of 0400 (umask 277) refuses every user but root.
     */
    @Test
    void aFileAWriteOrAnAppendMakesGetsTheModeTheStoreWasTold() throws IOException {
        LocalStorage s = local();
        s.newFileMode(0400);
        s.write(p("/shared/w"), bytes("w"));
        s.append(p("/shared/a"), bytes("a"));
        s.newFileMode(0640);
        s.append(p("/shared/a"), bytes("b")); // an existing file keeps its own
        for (String name : List.of("w", "a")) {
            assertEquals(0400, (Integer) Files.getAttribute(root.resolve("shared/" + name), "unix:mode") & 07777, name);
        }
        assertArrayEquals(bytes("ab"), Files.readAllBytes(root.resolve("shared/a")));
    }

    /**
     * fsync of a directory opens that very directory, beneath the root and by no link, and syncs
     * it: before, it did nothing, so a rename followed by the directory's fsync (an atomic save)
     * was not made to last. strace shows the fsync; here what it opens tells.
     */
    @Test
    void aDirectorysFsyncOpensThatDirectoryAndNoOtherFile() throws IOException {
        LocalStorage s = local();
        s.mkdir(p("/shared/d"));
        s.write(p("/shared/f"), "x".getBytes(java.nio.charset.StandardCharsets.UTF_8));
        s.createSymlink(p("/shared/link"), "d");

        s.syncDirectory(p("/shared/d"));
        s.syncDirectory(VfsPath.root());

        Map<String, Integer> refused = Map.of("/shared/f", Linux.ENOTDIR, "/shared/link", Linux.ELOOP, "/shared/gone", Linux.ENOENT);
        refused.forEach((path, errno) -> {
            java.nio.file.FileSystemException e = assertThrows(java.nio.file.FileSystemException.class, () -> s.syncDirectory(p(path)));
            assertEquals(errno, dev.chibifs.sys.Errors.errno(e), path + ": " + e);
        });
    }

    /**
     * Session 67: a file system mounted inside the store (here a tmpfs in a tmpfs store, both
     * numbering their files from the same start) kept its inode numbers under the mount's one
     * st_dev, so tar stored a file of it as a hard link to an unrelated file of the store's. Its
     * files are now told apart by their device and shown with other numbers; the store's own keep
     * theirs, which backups and git compare across remounts.
     */
    @Test
    void aFileSystemMountedInsideTheStoreIsToldApartAndTheStoresOwnKeepTheirNumbers() throws IOException {
        dev.chibifs.testing.FuseSupport.requireRoot();
        try (Tmpfs outerDisk = Tmpfs.mount(temp.resolve("outer"), "1m");
             LocalStorage s = new LocalStorage(outerDisk.path())) {
            Path outer = outerDisk.path();
            s.mkdir(p("/shared/sub"));
            try (Tmpfs inner = Tmpfs.mount(outer.resolve("shared/sub"), "1m")) {
                Map<String, Long> raw = new TreeMap<>();
                for (String name : List.of("a", "b", "c", "d")) {
                    for (String dir : List.of("/shared/", "/shared/sub/")) {
                        s.write(p(dir + name), name.getBytes(java.nio.charset.StandardCharsets.UTF_8));
                        raw.put(dir + name, (Long) Files.getAttribute(outer.resolve((dir + name).substring(1)), "unix:ino"));
                    }
                }
                java.util.Set<Long> both = raw.entrySet().stream().filter(e -> e.getKey().startsWith("/shared/sub/"))
                        .map(Map.Entry::getValue).collect(Collectors.toCollection(java.util.HashSet::new));
                both.retainAll(raw.entrySet().stream().filter(e -> !e.getKey().startsWith("/shared/sub/"))
                        .map(Map.Entry::getValue).toList());
                assertFalse(both.isEmpty(), "the two tmpfs share a number, as the test needs: " + raw);

                Map<Long, String> shown = new java.util.HashMap<>();
                for (Map.Entry<String, Long> e : raw.entrySet()) {
                    Metadata m = s.metadata(p(e.getKey()));
                    boolean own = !e.getKey().startsWith("/shared/sub/");
                    assertEquals(own, m.device() == Metadata.OWN_DEVICE, e.getKey());
                    if (own) {
                        assertEquals(e.getValue(), m.inode(), e.getKey() + ": the store's own number, unchanged");
                    }
                    String other = shown.put(m.inode(), e.getKey());
                    assertTrue(other == null, e.getKey() + " and " + other + " show one inode number " + m.inode());
                    try (FileHandle h = s.open(p(e.getKey()), EnumSet.of(OpenFlag.READ), 0)) {
                        assertEquals(m.inode(), h.metadata().inode(), e.getKey() + ": an open file says what its name does");
                        assertEquals(m.device(), h.metadata().device(), e.getKey());
                    }
                }
            }
        }
    }

    /**
     * Session 67: chmod 600 on a read-only store answered 0 (ext4 answers EROFS): a chmod of no bit
     * the store keeps only moves the ctime, and a failure to was let pass. By name, through an open
     * file, and of a directory.
     */
    @Test
    void aChmodOfNoExecuteBitOnAReadOnlyStoreIsErofs() throws IOException {
        dev.chibifs.testing.FuseSupport.requireRoot();
        try (Tmpfs disk = Tmpfs.mount(temp.resolve("ro"), "1m"); LocalStorage s = new LocalStorage(disk.path())) {
            s.write(p("/shared/f"), "x".getBytes(java.nio.charset.StandardCharsets.UTF_8));
            s.setExecutable(p("/shared/f"), 0600);
            try (FileHandle h = s.open(p("/shared/f"), EnumSet.of(OpenFlag.READ), 0)) {
                disk.readOnly(true);
                List<Executable> chmods = List.of(() -> s.setExecutable(p("/shared/f"), 0600),
                        () -> s.setExecutable(p("/shared"), 0700), () -> h.setExecutable(0600),
                        () -> s.setExecutable(p("/shared/f"), 0755));
                for (Executable chmod : chmods) {
                    java.nio.file.FileSystemException e = assertThrows(java.nio.file.FileSystemException.class, chmod);
                    assertEquals(Linux.EROFS, dev.chibifs.sys.Errors.errno(e), e.toString());
                }
            }
        }
    }

    /**
     * Session 67: chown(f, -1, -1) on a read-only store answered 0 (ext4 answers EROFS): a chown stores
     * nothing, and only looked that the file was there. It moves the ctime, as on a disk, and a
     * read-only store refuses it.
     */
    @Test
    void aChownOnAReadOnlyStoreIsErofsAndElsewhereMovesTheCtime() throws Exception {
        dev.chibifs.testing.FuseSupport.requireRoot();
        try (Tmpfs disk = Tmpfs.mount(temp.resolve("ro"), "1m"); LocalStorage s = new LocalStorage(disk.path())) {
            Path dir = disk.path();
            s.write(p("/shared/f"), "x".getBytes(java.nio.charset.StandardCharsets.UTF_8));
            FileTime before = (FileTime) Files.getAttribute(dir.resolve("shared/f"), "unix:ctime");
            FileTime now = before;
            for (int i = 0; i < 1_000_000 && now.equals(before); i++) {
                s.ownerAsked(p("/shared/f")); // within one clock tick the ctime may stay: asked again
                now = (FileTime) Files.getAttribute(dir.resolve("shared/f"), "unix:ctime");
            }
            assertFalse(now.equals(before), "the ctime moves, as a chown moves it on a disk");
            assertThrows(java.nio.file.NoSuchFileException.class, () -> s.ownerAsked(p("/shared/none")));
            disk.readOnly(true);
            for (String path : List.of("/shared/f", "/shared")) {
                java.nio.file.FileSystemException e = assertThrows(java.nio.file.FileSystemException.class,
                        () -> s.ownerAsked(p(path)));
                assertEquals(Linux.EROFS, dev.chibifs.sys.Errors.errno(e), e.toString());
            }
        }
    }

    /** A write to a name the store refuses (not UTF-8) leaves nothing, not even the parents it would have made. */
    @Test
    void aWriteToANameTheStoreRefusesMakesNoParents() throws IOException {
        LocalStorage s = local();
        s.createDirectory(p("/shared"));
        java.nio.file.FileSystemException e = assertThrows(java.nio.file.FileSystemException.class,
                () -> s.write(p("/shared/n3/b\uFFFD"), "y".getBytes(java.nio.charset.StandardCharsets.UTF_8)));
        assertEquals(dev.chibifs.sys.Linux.EILSEQ, dev.chibifs.sys.Errors.errno(e), e.toString());
        assertFalse(java.nio.file.Files.exists(root.resolve("shared/n3")), "no parent left behind");
    }

    /** Three agents asking a large file's ETag at once hashed it three times, and the third met EBUSY. */
    @Test
    void callersAskingTheEtagOfOneVersionAtOnceShareOneHash() throws Exception {
        LocalStorage s = local();
        s.createDirectory(p("/shared"));
        try (java.io.RandomAccessFile f = new java.io.RandomAccessFile(root.resolve("shared/big").toFile(), "rw")) {
            f.setLength(ContentHash.LARGE * 2); // sparse: hashing it takes a good part of a second
        }
        long before = s.contentHashes();
        int callers = ContentHash.LARGE_AT_ONCE + 1;
        java.util.concurrent.CountDownLatch go = new java.util.concurrent.CountDownLatch(1);
        List<java.util.concurrent.Future<String>> asked = new ArrayList<>();
        java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(callers);
        try {
            for (int i = 0; i < callers; i++) {
                asked.add(pool.submit(() -> {
                    go.await();
                    return s.etag(p("/shared/big"));
                }));
            }
            go.countDown();
            String first = asked.get(0).get(60, java.util.concurrent.TimeUnit.SECONDS);
            for (java.util.concurrent.Future<String> a : asked) {
                assertEquals(first, a.get(60, java.util.concurrent.TimeUnit.SECONDS));
            }
        } finally {
            pool.shutdownNow();
        }
        assertTrue(s.contentHashes() - before < callers, (s.contentHashes() - before) + " hashes for " + callers + " callers");
    }

    /**
     * A listing of attributes takes one listxattrat(2) where the kernel has it; what it finds beside
     * user.* names (labels root put on the store files) goes the long way, which knows the file's
     * type: a link's labels are not its attributes (it can have no user.* ones), a file's are.
     */
    @Test
    void attributeNamesOfFilesAndLinksAsTheStoreHasThem() throws IOException {
        org.junit.jupiter.api.Assumptions.assumeTrue(Syscalls.geteuid() == 0, "only root sets trusted.* names");
        LocalStorage s = new LocalStorage(root);
        s.createDirectory(p("/shared"));
        s.write(p("/shared/f"), bytes("f"));
        s.createSymlink(p("/shared/l"), "f");
        s.setXattr(p("/shared/f"), "user.a", bytes("1"), XattrMode.SET);
        assertEquals(List.of("user.a"), s.xattrNames(p("/shared/f")));
        assertEquals(List.of(), s.xattrNames(p("/shared/l")));
        Sh.run("setfattr -n trusted.label -v x '" + root.resolve("shared/f") + "' && setfattr -h -n trusted.label -v x '"
                + root.resolve("shared/l") + "'").ok();
        assertEquals(List.of("trusted.label", "user.a"), s.xattrNames(p("/shared/f")).stream().sorted().toList());
        assertEquals(List.of(), s.xattrNames(p("/shared/l")), "a link's label is no attribute of it");
        assertEquals(List.of(), s.xattrNames(p("/shared")));
    }

    /**
     * A daemon run as root (systemd) over a user's CHIBI_HOME made everything root's: chibi, run as
     * that user, could then neither replace nor change what agents had made. What the store makes is
     * its owner's, the store's own directory too where the first mount makes it.
     */
    @Test
    void asRootWhatIsMadeInAUsersStoreIsTheUsers() throws IOException {
        org.junit.jupiter.api.Assumptions.assumeTrue(dev.chibifs.sys.Syscalls.geteuid() == 0, "only root gives files away");
        Path home = Files.createDirectories(temp.resolve("home"));
        Files.setAttribute(home, "unix:uid", 4242);
        Files.setAttribute(home, "unix:gid", 4243);
        LocalStorage s = new LocalStorage(home.resolve("vfs"));
        s.createDirectory(p("/shared"));
        s.mkdir(p("/home/alice/deep"));
        s.write(p("/shared/w"), bytes("written"));
        s.open(p("/shared/c"), EnumSet.of(OpenFlag.WRITE, OpenFlag.CREATE), 0644).close();
        s.createSymlink(p("/shared/l"), "w");
        s.createNode(p("/shared/fifo"), EntryKind.FIFO, 0644);
        s.copy(p("/shared/w"), p("/shared/copy"));
        try (FileHandle t = s.openUnnamed(p("/shared"), 0644)) {
            s.link(t, p("/shared/linked"));
        }
        for (String made : List.of("", "shared", "home", "home/alice", "home/alice/deep", "shared/w", "shared/c",
                "shared/l", "shared/fifo", "shared/copy", "shared/linked")) {
            Path q = home.resolve("vfs").resolve(made);
            assertEquals(4242, Files.getAttribute(q, "unix:uid", LinkOption.NOFOLLOW_LINKS), made);
            assertEquals(4243, Files.getAttribute(q, "unix:gid", LinkOption.NOFOLLOW_LINKS), made);
        }
    }

    /** Every path below {@code dir} with its content (files) or a marker (directories, links). */
    private static Map<String, String> snapshot(Path dir) throws IOException {
        Map<String, String> out = new TreeMap<>();
        try (Stream<Path> walk = Files.walk(dir)) {
            for (Path q : walk.collect(Collectors.toList())) {
                String key = dir.relativize(q).toString();
                if (Files.isSymbolicLink(q)) {
                    out.put(key, "-> " + Files.readSymbolicLink(q));
                } else if (Files.isDirectory(q)) {
                    out.put(key, "dir");
                } else {
                    out.put(key, Files.readString(q));
                }
            }
        }
        return out;
    }

    @Test
    void spaceIsTheStoreFileSystemsWithItsFileCounts() throws IOException {
        SpaceInfo s = storage.space();
        // stat -f, not the JDK's FileStore, which needs the mount in the mount table (a chroot's may lack it)
        String[] statfs = Sh.run("stat -f -c '%S %b' '" + root + "'").ok().out().strip().split(" ");
        long unit = Long.parseLong(statfs[0]);
        assertEquals(unit * Long.parseLong(statfs[1]), s.totalBytes());
        assertEquals(unit, s.blockSize());
        assertTrue(s.availableBytes() <= s.freeBytes() && s.freeBytes() <= s.totalBytes(), s.toString());
        assertEquals(255, s.maxNameLength());
        // btrfs counts no inodes (0, 0); stat -f says the same as statfs(2) whatever the file system
        assertEquals(Sh.run("stat -f -c %c '" + root + "'").ok().out().strip(), Long.toString(s.totalFiles()));
        assertTrue(s.freeFiles() <= s.totalFiles(), s.toString());
    }

    @Test
    void anUnchangedFileIsHashedOnceAndAChangeByAnyoneIsSeen() throws Exception {
        storage.write(p("/shared/e"), bytes("one"));
        String one = storage.etag(p("/shared/e"));
        // a file changed within the kernel clock's tick is hashed again (racy); wait until it is remembered
        long deadline = System.nanoTime() + Duration.ofSeconds(5).toNanos();
        long before;
        do {
            assertEquals(one, storage.etag(p("/shared/e")));
            before = local().contentHashes();
            assertEquals(one, storage.etag(p("/shared/e")));
        } while (local().contentHashes() != before && System.nanoTime() < deadline);
        for (int i = 0; i < 10; i++) {
            assertEquals(one, storage.etag(p("/shared/e")));
        }
        assertEquals(before, local().contentHashes(), "an unchanged file was hashed again");
        Files.writeString(root.resolve("shared/e"), "two"); // chibi, or anyone, writing the tree
        assertEquals(dev.chibifs.store.ContentHash.of(bytes("two")), storage.etag(p("/shared/e")));
    }

    @Test
    void aFileTakesTheBlocksItsFileSystemGivesItHolesLeftOut() throws IOException {
        storage.write(p("/shared/sparse"), bytes("x"));
        try (java.nio.channels.FileChannel f = java.nio.channels.FileChannel.open(root.resolve("shared/sparse"),
                java.nio.file.StandardOpenOption.WRITE)) {
            f.write(java.nio.ByteBuffer.wrap(bytes("y")), 1 << 20);
        }
        Metadata m = storage.metadata(p("/shared/sparse"));
        assertEquals((1 << 20) + 1, m.size());
        // as du sees it: stat(2)'s st_blocks, not the size rounded up
        assertEquals(Sh.run("stat -c %b '" + root.resolve("shared/sparse") + "'").ok().out().strip(), Long.toString(m.blocks()));
        assertTrue(m.blocks() < (1 << 20) / Metadata.BLOCK_UNIT, m.toString());
    }

    @Test
    void storeIsThePlainTreeWithNoSidecars() throws IOException {
        storage.write(p("/shared/x"), bytes("exact bytes\n"));
        assertArrayEquals(bytes("exact bytes\n"), Files.readAllBytes(root.resolve("shared/x")));

        storage.append(p("/shared/x"), bytes("more"));
        storage.copy(p("/shared/x"), p("/home/planner/y"));
        storage.rename(p("/home/planner/y"), p("/home/planner/z"));
        storage.link(p("/shared/x"), p("/shared/x2"));
        storage.setExecutable(p("/shared/x"), 0755);
        storage.setTimes(p("/shared/x"), null, FileTime.from(Instant.parse("2020-01-01T00:00:00Z")));
        storage.truncate(p("/shared/x2"), 4);
        storage.mkdir(p("/sys/tool_cache/planner"));
        storage.createDirectory(p("/sys/empty"));
        storage.write(p("/sys/tool_cache/planner/id"), bytes("out"));
        try (FileHandle h = storage.open(p("/shared/h"), EnumSet.of(OpenFlag.WRITE, OpenFlag.CREATE), 0644)) {
            h.write(java.nio.ByteBuffer.wrap(bytes("h")), 0);
        }
        storage.removeFile(p("/shared/h"));
        storage.removeDirectory(p("/sys/empty"));

        assertEquals(Map.of(
                "", "dir",
                "shared", "dir",
                "shared/x", "exac",
                "shared/x2", "exac",
                "home", "dir",
                "home/planner", "dir",
                "home/planner/z", "exact bytes\nmore",
                "sys", "dir",
                "sys/tool_cache", "dir",
                "sys/tool_cache/planner", "dir"),
                Map.copyOf(snapshotWith(root, "sys/tool_cache/planner/id")));
        assertEquals("out", Files.readString(root.resolve("sys/tool_cache/planner/id")));
    }

    /** The snapshot without one entry (Map.of holds at most ten pairs). */
    private static Map<String, String> snapshotWith(Path dir, String drop) throws IOException {
        Map<String, String> s = snapshot(dir);
        assertTrue(s.remove(drop) != null, drop);
        return s;
    }

    @Test
    void atomicWritesLeaveNoTemporaries() throws IOException {
        for (int i = 0; i < 20; i++) {
            storage.write(p("/shared/d/f" + (i % 3)), bytes("v" + i));
            storage.copy(p("/shared/d/f0"), p("/shared/d/c" + (i % 2)));
        }
        assertThrows(IOException.class, () -> storage.write(p("/shared/d"), bytes("over a directory")));
        try (Stream<Path> walk = Files.walk(root)) {
            assertEquals(List.of(), walk.filter(q -> q.getFileName().toString().startsWith(LocalStorage.TEMP_PREFIX))
                    .collect(Collectors.toList()));
        }
    }

    @Test
    void removeStaleTemporariesKeepsYoungOnes() throws IOException {
        storage.write(p("/shared/sub/real"), bytes("real"));
        Path old = root.resolve("shared/sub/" + LocalStorage.TEMP_PREFIX + "00000000deadbeef");
        Path young = root.resolve("shared/" + LocalStorage.TEMP_PREFIX + "0123456789abcdef");
        // a user's file that only looks like a temporary is the user's: never removed
        Path lookalike = root.resolve("shared/" + LocalStorage.TEMP_PREFIX + "notes");
        Files.writeString(old, "crash leftover");
        Files.writeString(young, "writer at work");
        Files.writeString(lookalike, "mine");
        Files.setLastModifiedTime(old, FileTime.from(Instant.now().minus(Duration.ofHours(2))));
        Files.setLastModifiedTime(lookalike, FileTime.from(Instant.now().minus(Duration.ofHours(2))));

        assertEquals(1, local().removeStaleTemporaries(Duration.ofMinutes(10)));
        assertFalse(Files.exists(old));
        assertTrue(Files.exists(young));
        assertTrue(Files.exists(lookalike));
        assertEquals("real", text("/shared/sub/real"));
    }

    /** A new-user tester's: a killed write's temporary, hidden from listings, made rm -r of its directory fail ENOTEMPTY. */
    @Test
    void aDirectoryHoldingOnlyTemporariesIsRemovedWithThem() throws IOException {
        storage.mkdir(p("/shared/tdir"));
        Path leftover = root.resolve("shared/tdir/" + LocalStorage.TEMP_PREFIX + "00000000000000aa");
        Files.writeString(leftover, "a killed write's");
        storage.removeDirectory(p("/shared/tdir"));
        assertFalse(Files.exists(root.resolve("shared/tdir")));

        // anything else there, a lookalike too, is the user's: the directory is not empty
        storage.mkdir(p("/shared/kept"));
        Path temporary = root.resolve("shared/kept/" + LocalStorage.TEMP_PREFIX + "00000000000000bb");
        Files.writeString(temporary, "x");
        Files.writeString(root.resolve("shared/kept/" + LocalStorage.TEMP_PREFIX + "notes"), "mine");
        IOException e = assertThrows(IOException.class, () -> storage.removeDirectory(p("/shared/kept")));
        assertEquals(Linux.ENOTEMPTY, Errors.errno(e), e.toString());
        assertTrue(Files.exists(temporary), "nothing removed from a directory that stays");
    }

    // ---- symbolic links planted in the store ----

    private Path plantParentLink() throws IOException {
        Path outside = Files.createDirectories(temp.resolve("outside"));
        Files.writeString(outside.resolve("victim"), "untouched");
        Files.createDirectories(outside.resolve("sub"));
        storage.mkdir(p("/shared"));
        storage.write(p("/shared/mine"), bytes("mine"));
        Files.createSymbolicLink(root.resolve("shared/evil"), outside);
        return outside;
    }

    @Test
    void linkAsParentIsNeverFollowed() throws IOException {
        Path outside = plantParentLink();
        Map<String, String> outsideBefore = snapshot(outside);
        Map<String, String> storeBefore = snapshot(root);

        List<Executable> attempts = List.of(
                () -> storage.open(p("/shared/evil/victim"), EnumSet.of(OpenFlag.READ), 0).close(),
                () -> storage.open(p("/shared/evil/victim"), EnumSet.of(OpenFlag.WRITE), 0).close(),
                () -> storage.open(p("/shared/evil/new"), EnumSet.of(OpenFlag.WRITE, OpenFlag.CREATE), 0644).close(),
                () -> storage.read(p("/shared/evil/victim")),
                () -> storage.write(p("/shared/evil/victim"), bytes("owned")),
                () -> storage.write(p("/shared/evil/new"), bytes("owned")),
                () -> storage.write(p("/shared/evil/sub/new"), bytes("owned")),
                () -> storage.write(p("/shared/evil/deeper/new"), bytes("owned")),
                () -> storage.append(p("/shared/evil/victim"), bytes("owned")),
                () -> storage.append(p("/shared/evil/new"), bytes("owned")),
                () -> storage.copy(p("/shared/mine"), p("/shared/evil/new")),
                () -> storage.copy(p("/shared/evil/victim"), p("/shared/stolen")),
                () -> storage.mkdir(p("/shared/evil/d")),
                () -> storage.mkdir(p("/shared/evil/sub/d")),
                () -> storage.createDirectory(p("/shared/evil/d")),
                () -> storage.removeFile(p("/shared/evil/victim")),
                () -> storage.removeDirectory(p("/shared/evil/sub")),
                () -> storage.delete(p("/shared/evil/victim")),
                () -> storage.delete(p("/shared/evil/sub")),
                () -> storage.rename(p("/shared/evil/victim"), p("/shared/stolen")),
                () -> storage.rename(p("/shared/mine"), p("/shared/evil/mine")),
                () -> storage.truncate(p("/shared/evil/victim"), 0),
                () -> storage.link(p("/shared/evil/victim"), p("/shared/stolen")),
                () -> storage.link(p("/shared/mine"), p("/shared/evil/mine")),
                () -> storage.setTimes(p("/shared/evil/victim"), null, FileTime.fromMillis(0)),
                () -> storage.setExecutable(p("/shared/evil/victim"), 0777),
                () -> storage.metadata(p("/shared/evil/victim")),
                () -> storage.list(p("/shared/evil")),
                () -> storage.list(p("/shared/evil/sub")),
                () -> storage.entries(p("/shared/evil")));
        for (int i = 0; i < attempts.size(); i++) {
            assertThrows(IOException.class, attempts.get(i), "attempt " + i);
        }
        assertFalse(storage.exists(p("/shared/evil/victim")));
        assertEquals(outsideBefore, snapshot(outside));
        assertEquals(storeBefore, snapshot(root));
    }

    @Test
    void linkAsLastNameIsReportedNotFollowed() throws IOException {
        Path outside = plantParentLink();
        Files.createSymbolicLink(root.resolve("shared/file-link"), outside.resolve("victim"));
        assertEquals(List.of(
                new Entry("evil", EntryKind.SYMLINK),
                new Entry("file-link", EntryKind.SYMLINK),
                new Entry("mine", EntryKind.FILE)), storage.list(p("/shared")));
        assertEquals(EntryKind.SYMLINK, storage.metadata(p("/shared/evil")).kind());
        assertEquals(EntryKind.SYMLINK, storage.metadata(p("/shared/file-link")).kind());
        assertTrue(storage.exists(p("/shared/file-link")));
        assertEquals(outside.resolve("victim").toString(), storage.readLink(p("/shared/file-link")));

        assertThrows(IOException.class,
                () -> storage.open(p("/shared/file-link"), EnumSet.of(OpenFlag.READ), 0).close());
        assertThrows(IOException.class,
                () -> storage.open(p("/shared/file-link"), EnumSet.of(OpenFlag.WRITE, OpenFlag.TRUNCATE), 0).close());
        assertThrows(IOException.class, () -> storage.read(p("/shared/file-link")));
        assertThrows(IOException.class, () -> storage.append(p("/shared/file-link"), bytes("owned")));
        assertThrows(IOException.class, () -> storage.truncate(p("/shared/file-link"), 0));
        assertEquals("untouched", Files.readString(outside.resolve("victim")));

        storage.delete(p("/shared"));
        assertFalse(Files.exists(root.resolve("shared"), LinkOption.NOFOLLOW_LINKS));
        assertEquals("untouched", Files.readString(outside.resolve("victim")));
        assertTrue(Files.isDirectory(outside.resolve("sub")));
    }

    /**
     * Recursive delete goes through descriptors only: a link swapped in for a directory while the
     * removal runs (the race a walk by path loses) is removed as a name, never followed.
     */
    @Test
    @org.junit.jupiter.api.Timeout(60)
    void recursiveDeleteNeverFollowsALinkPlantedDuringTheWalk() throws Exception {
        // the outside mirrors the tree: a removal by path through a swapped-in link finds every name
        Path outside = temp.resolve("outside");
        Files.createDirectories(outside.resolve("inner"));
        for (int i = 0; i < 20; i++) {
            Files.writeString(outside.resolve("inner/f" + i), "untouched");
        }
        for (int round = 0; round < 20; round++) {
            Path tree = root.resolve("shared/tree");
            for (int d = 0; d < 8; d++) {
                Path dir = Files.createDirectories(tree.resolve("d" + d + "/inner"));
                for (int f = 0; f < 20; f++) {
                    Files.writeString(dir.resolve("f" + f), "x");
                }
            }
            java.util.concurrent.atomic.AtomicBoolean stop = new java.util.concurrent.atomic.AtomicBoolean();
            Thread swapper = new Thread(() -> {
                // toggles each directory with a link to the outside, so a walk that looks at a name
                // (a directory) and then opens it by path finds the link there
                while (!stop.get()) {
                    for (int d = 0; d < 8 && !stop.get(); d++) {
                        Path victim = tree.resolve("d" + d);
                        Path aside = tree.resolve("aside" + d);
                        try {
                            Files.move(victim, aside);
                            Files.createSymbolicLink(victim, outside);
                            Thread.onSpinWait();
                            Files.delete(victim);
                            Files.move(aside, victim);
                        } catch (IOException raced) {
                            // the removal got there first: try the next one, and put back a name left aside
                            try {
                                if (Files.exists(aside, LinkOption.NOFOLLOW_LINKS) && !Files.exists(victim, LinkOption.NOFOLLOW_LINKS)) {
                                    Files.move(aside, victim);
                                }
                            } catch (IOException ignored) {
                                // the removal is there too
                            }
                        }
                    }
                }
            });
            swapper.start();
            try {
                storage.delete(p("/shared/tree"));
            } catch (IOException raced) {
                // ENOTEMPTY after names kept coming: fine, as long as nothing outside went
            } finally {
                stop.set(true);
                swapper.join();
            }
            for (int i = 0; i < 20; i++) {
                assertEquals("untouched", Files.readString(outside.resolve("inner/f" + i)), "round " + round);
            }
            if (Files.exists(tree, LinkOption.NOFOLLOW_LINKS)) {
                storage.delete(p("/shared/tree"));
            }
            assertFalse(Files.exists(tree, LinkOption.NOFOLLOW_LINKS));
        }
    }

    /**
     * openat2(RESOLVE_BENEATH) answers EXDEV when a rename moves the directory it resolves out from
     * under its starting point between the lookup and the final check: another mount moving a tree
     * back and forth made stat(2) of a file in it fail with EXDEV, which no disk answers to a stat.
     */
    @Test
    @org.junit.jupiter.api.Timeout(30)
    void aDirectoryMovedBackAndForthIsNeverAnsweredExdevWhileResolved() throws Exception {
        Path from = root.resolve("shared/m3e/tree");
        Path to = root.resolve("shared/m3f/tree");
        Files.createDirectories(from);
        Files.createDirectories(to.getParent());
        Files.writeString(from.resolve("f"), "x");
        java.util.concurrent.atomic.AtomicBoolean stop = new java.util.concurrent.atomic.AtomicBoolean();
        java.util.concurrent.atomic.AtomicReference<Throwable> moverFailed = new java.util.concurrent.atomic.AtomicReference<>();
        Thread mover = new Thread(() -> {
            try {
                while (!stop.get()) {
                    Files.move(from, to);
                    Files.move(to, from);
                }
            } catch (Throwable t) {
                moverFailed.set(t);
            }
        });
        mover.start();
        Map<Integer, Integer> answers = new TreeMap<>();
        try {
            long deadline = System.nanoTime() + Duration.ofSeconds(3).toNanos();
            while (System.nanoTime() < deadline && moverFailed.get() == null) {
                for (String where : List.of("/shared/m3e/tree/f", "/shared/m3f/tree/f")) {
                    int errno = 0;
                    try {
                        storage.metadata(p(where));
                    } catch (IOException e) {
                        errno = dev.chibifs.sys.Errors.errno(e);
                    }
                    answers.merge(errno, 1, Integer::sum);
                }
            }
        } finally {
            stop.set(true);
            mover.join();
        }
        assertEquals(null, moverFailed.get());
        String all = "errno -> count of the answers to a stat: " + answers;
        answers.remove(0);
        answers.remove(Linux.ENOENT); // the tree was at the other name then: as on a disk
        assertEquals(Map.of(), answers, all);
    }

    @Test
    @org.junit.jupiter.api.Timeout(10)
    void aPlantedFifoIsRefusedForEveryOpenWithoutWaitingForAPeer() throws Exception {
        storage.createDirectory(p("/shared"));
        Path fifo = root.resolve("shared/fifo");
        assertEquals(0, new ProcessBuilder("mkfifo", fifo.toString()).start().waitFor());
        for (EnumSet<OpenFlag> flags : List.of(EnumSet.of(OpenFlag.READ), EnumSet.of(OpenFlag.WRITE),
                EnumSet.of(OpenFlag.WRITE, OpenFlag.APPEND), EnumSet.of(OpenFlag.READ, OpenFlag.WRITE, OpenFlag.CREATE),
                EnumSet.of(OpenFlag.WRITE, OpenFlag.TRUNCATE))) {
            IOException e = assertThrows(IOException.class, () -> storage.open(p("/shared/fifo"), flags, 0).close());
            assertTrue(e.getMessage().contains("not a regular file"), flags + ": " + e.getMessage());
        }
        assertThrows(IsDirectoryException.class, () -> storage.open(p("/shared"), EnumSet.of(OpenFlag.READ), 0));
    }

    // ---- locks on the store file itself: across mounts, and against programs on the store ----

    private static final long END = Long.MAX_VALUE;

    private FileHandle openRw(Storage s, String path) throws IOException {
        return s.open(p(path), EnumSet.of(OpenFlag.READ, OpenFlag.WRITE), 0);
    }

    @Test
    void locksThroughOneStorageExcludeHoldersThroughASecondOverTheSameDirectory() throws IOException {
        storage.write(p("/shared/db"), bytes("data"));
        // a second LocalStorage over the same store: what a second mount is
        try (LocalStorage second = new LocalStorage(root);
             FileHandle mine = openRw(storage, "/shared/db");
             FileHandle theirs = openRw(second, "/shared/db")) {
            // the same owner number through two mounts is two owners: the kernel's ids are per mount
            assertTrue(mine.locks().tryLock(1, LockType.WRITE, 0, 99));
            assertFalse(theirs.locks().tryLock(1, LockType.READ, 50, 50));
            assertEquals(new LockState(LockType.WRITE, 0, 99, -1), theirs.locks().testLock(1, LockType.READ, 0, END));
            assertTrue(theirs.locks().tryLock(1, LockType.READ, 100, END));
            assertFalse(mine.locks().tryLock(2, LockType.WRITE, 200, 200));

            assertTrue(mine.locks().tryFlock(7, LockType.READ));
            assertTrue(theirs.locks().tryFlock(7, LockType.READ));
            assertFalse(theirs.locks().tryFlock(8, LockType.WRITE));
            assertTrue(mine.locks().tryFlock(7, LockType.UNLOCK));
            assertFalse(theirs.locks().tryFlock(8, LockType.WRITE)); // 7 of the second mount still shares it
            assertTrue(theirs.locks().tryFlock(7, LockType.UNLOCK));
            assertTrue(theirs.locks().tryFlock(8, LockType.WRITE));
            assertFalse(mine.locks().tryFlock(8, LockType.READ));

            mine.locks().releaseOwner(1);
            assertTrue(theirs.locks().tryLock(1, LockType.WRITE, 0, 99));
            assertEquals(1, local().lockDescriptionsOpen(), "flock owner 8, refused, keeps its description to its handle's close");
        }
        assertEquals(0, local().lockDescriptionsOpen());
    }

    /**
     * A lock waiter through one mount hears of another mount's unlock at once: that unlock closes a
     * description on the store file, which the waiter's watch sees; the watch goes when its wait does.
     */
    @Test
    @org.junit.jupiter.api.Timeout(60)
    void aWaiterThroughOneStorageIsToldWhenASecondLetsGoOfTheLock() throws Exception {
        storage.write(p("/shared/turns"), bytes(""));
        try (LocalStorage second = new LocalStorage(root);
             FileHandle waiter = openRw(storage, "/shared/turns");
             FileHandle holder = openRw(second, "/shared/turns")) {
            assertTrue(holder.locks().tryFlock(7, LockType.WRITE));
            assertTrue(holder.locks().tryLock(7, LockType.WRITE, 0, END));
            assertFalse(waiter.locks().tryFlock(8, LockType.WRITE));
            java.util.concurrent.Semaphore told = new java.util.concurrent.Semaphore(0);
            AutoCloseable watch = waiter.locks().whenLetGo(told::release);
            assertNotNull(watch);
            assertEquals(1, local().lockWatchesForWaiters());

            assertTrue(holder.locks().tryFlock(7, LockType.UNLOCK));
            assertTrue(told.tryAcquire(30, java.util.concurrent.TimeUnit.SECONDS), "the flock's unlock was heard");
            assertTrue(waiter.locks().tryFlock(8, LockType.WRITE));
            told.drainPermits();
            holder.locks().releaseOwner(7);
            assertTrue(told.tryAcquire(30, java.util.concurrent.TimeUnit.SECONDS), "the record lock's release was heard");

            watch.close();
            assertEquals(0, local().lockWatchesForWaiters());
        }
    }

    @Test
    @org.junit.jupiter.api.Timeout(60)
    void aFlockProgramOnTheStoreFileFailsWhileAnOwnerHoldsTheLock() throws IOException {
        storage.write(p("/shared/lock"), bytes(""));
        String file = root.resolve("shared/lock").toString();
        try (FileHandle h = storage.open(p("/shared/lock"), EnumSet.of(OpenFlag.READ), 0)) {
            assertEquals(0, Sh.run("flock -n '" + file + "' true").exitCode());
            assertTrue(h.locks().tryFlock(1, LockType.WRITE));
            assertEquals(1, Sh.run("flock -n '" + file + "' true").exitCode());
            assertEquals(1, Sh.run("flock -n -s '" + file + "' true").exitCode());
            assertTrue(h.locks().tryFlock(1, LockType.READ));
            assertEquals(0, Sh.run("flock -n -s '" + file + "' true").exitCode());
            assertEquals(1, Sh.run("flock -n '" + file + "' true").exitCode());
            assertTrue(h.locks().tryFlock(1, LockType.UNLOCK));
            assertEquals(0, Sh.run("flock -n '" + file + "' true").exitCode());
            assertTrue(h.locks().tryFlock(1, LockType.WRITE));
        }
        // closing the handle let it go
        assertEquals(0, Sh.run("flock -n '" + file + "' true").exitCode());
        assertEquals(0, local().lockDescriptionsOpen());
    }

    @Test
    void pathOfAnOpenFileWhoseOpenedNameWentWhileAnotherStaysIsNotKnown() throws IOException {
        // /proc/self/fd follows the name a descriptor was opened by, not the file: removed, it reads
        // "NAME (deleted)" while the file lives on by another name, wherever that went
        storage.mkdir(p("/shared/d"));
        storage.write(p("/shared/f"), bytes("x"));
        try (FileHandle h = storage.open(p("/shared/f"), EnumSet.of(OpenFlag.READ), 0)) {
            storage.link(p("/shared/f"), p("/shared/g"));
            storage.removeFile(p("/shared/f"));
            storage.rename(p("/shared/g"), p("/shared/d/h"));
            assertEquals(null, storage.pathOf(h));
            storage.removeFile(p("/shared/d/h"));
            assertEquals(p("/shared/f"), storage.pathOf(h), "no name left: the last the descriptor had");
        }
    }

    @Test
    @org.junit.jupiter.api.Timeout(60)
    void aLockRefusedClosesNothingOnTheFileSoItsWaitersAreNotWokenByTheirOwnTries() throws Exception {
        // waiters try again at every close of the file: a refusal that closed a description of its
        // own woke them (itself too) at once, and one waiting lock spun a CPU
        storage.write(p("/shared/l"), bytes("x"));
        String file = root.resolve("shared/l").toString();
        try (FileHandle holder = openRw(storage, "/shared/l");
             FileHandle waiter = storage.open(p("/shared/l"), EnumSet.of(OpenFlag.READ), 0)) {
            assertTrue(holder.locks().tryLock(1, LockType.WRITE, 0, END));
            assertTrue(holder.locks().tryFlock(2, LockType.WRITE));
            int watched = Syscalls.openat(Linux.AT_FDCWD, file, Linux.O_RDONLY, 0, file);
            int inotify = Syscalls.inotifyInit();
            try {
                assertTrue(Syscalls.inotifyWatchFile(inotify, watched, Linux.IN_CLOSE_WRITE | Linux.IN_CLOSE_NOWRITE
                        | Linux.IN_ATTRIB) >= 0);
                for (int i = 0; i < 3; i++) {
                    assertFalse(waiter.locks().tryLock(3, LockType.READ, 0, END));
                    assertFalse(waiter.locks().tryFlock(4, LockType.READ));
                }
                storage.setTimes(p("/shared/l"), Storage.NOW, Storage.NOW); // IN_ATTRIB: every event before it is in
                List<Integer> closes = new ArrayList<>();
                for (boolean marked = false; !marked; ) {
                    assertTrue(Syscalls.awaitReadable(inotify, 10_000));
                    for (Syscalls.InotifyEvent e : Syscalls.inotifyRead(inotify).events()) {
                        marked |= (e.mask() & Linux.IN_ATTRIB) != 0;
                        if (!marked && (e.mask() & (Linux.IN_CLOSE_WRITE | Linux.IN_CLOSE_NOWRITE)) != 0) {
                            closes.add(e.mask());
                        }
                    }
                }
                assertEquals(List.of(), closes, "closes raised by refused tries");
            } finally {
                Syscalls.close(inotify);
                Syscalls.close(watched);
            }
        }
        assertEquals(0, local().lockDescriptionsOpen());
    }

    @Test
    @org.junit.jupiter.api.Timeout(60)
    void recordLocksExcludeAndSeeAProgramsLockfOnTheStoreFile() throws Exception {
        storage.write(p("/shared/db"), bytes("0123456789"));
        String file = root.resolve("shared/db").toString();
        String lockf = "import fcntl, sys; f = open(sys.argv[1], 'r+'); "
                + "fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB, int(sys.argv[3]), int(sys.argv[2]))";
        try (FileHandle h = openRw(storage, "/shared/db")) {
            assertTrue(h.locks().tryLock(1, LockType.WRITE, 0, 9));
            // python's lockf is a classic POSIX lock (F_SETLK): the kernel weighs it against ours
            assertEquals(1, Sh.run("python3 -c \"" + lockf + "\" '" + file + "' 0 10 2>/dev/null").exitCode());
            assertEquals(0, Sh.run("python3 -c \"" + lockf + "\" '" + file + "' 10 5").exitCode());
            assertTrue(h.locks().tryLock(1, LockType.UNLOCK, 0, 9));
            assertEquals(0, Sh.run("python3 -c \"" + lockf + "\" '" + file + "' 0 10").exitCode());
        }
        // a process that holds a lock: the test names it, its range and pid
        Process holder = new ProcessBuilder("python3", "-c", "import fcntl, sys; f = open(sys.argv[1], 'r+'); "
                + "fcntl.lockf(f, fcntl.LOCK_EX, 4, 3); print('locked', flush=True); sys.stdin.read()", file)
                .redirectErrorStream(true).start();
        try (FileHandle h = openRw(storage, "/shared/db")) {
            assertEquals("locked", new java.io.BufferedReader(new java.io.InputStreamReader(holder.getInputStream())).readLine());
            assertFalse(h.locks().tryLock(1, LockType.READ, 0, END));
            assertEquals(new LockState(LockType.WRITE, 3, 6, (int) holder.pid()), h.locks().testLock(1, LockType.READ, 0, END));
            assertTrue(h.locks().tryLock(1, LockType.WRITE, 7, END));
        } finally {
            holder.getOutputStream().close();
            assertEquals(0, holder.waitFor());
        }
        assertEquals(0, local().lockDescriptionsOpen());
    }

    @Test
    @org.junit.jupiter.api.Timeout(60)
    void anAppendWaitsWhileAProgramHoldsTheFilesFlockAndLandsWhenItLetsGo() throws Exception {
        storage.write(p("/shared/tasks.md"), bytes("one\n"));
        String file = root.resolve("shared/tasks.md").toString();
        Process holder = new ProcessBuilder("flock", file, "sh", "-c", "echo held; cat >/dev/null").redirectErrorStream(true).start();
        java.util.concurrent.atomic.AtomicReference<IOException> failed = new java.util.concurrent.atomic.AtomicReference<>();
        Thread append = new Thread(() -> {
            try {
                storage.append(p("/shared/tasks.md"), bytes("two\n"));
            } catch (IOException e) {
                failed.set(e);
            }
        }, "appender");
        try {
            assertEquals("held", new java.io.BufferedReader(new java.io.InputStreamReader(holder.getInputStream())).readLine());
            append.start();
            // the event: the appender seen pausing between tries for the lock, with nothing written
            long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(10);
            while (!waitingForLock(append)) {
                assertTrue(append.isAlive() && System.nanoTime() < deadline, "the append never waited: " + failed.get());
                Thread.onSpinWait();
            }
            assertEquals("one\n", Files.readString(root.resolve("shared/tasks.md")));
        } finally {
            holder.getOutputStream().close();
            assertEquals(0, holder.waitFor());
        }
        append.join(10_000);
        assertFalse(append.isAlive());
        assertEquals(null, failed.get());
        assertEquals("one\ntwo\n", Files.readString(root.resolve("shared/tasks.md")));
    }

    /** Whether {@code t} is pausing in LocalStorage's wait for a lock another process holds. */
    private static boolean waitingForLock(Thread t) {
        if (t.getState() != Thread.State.TIMED_WAITING) {
            return false;
        }
        for (StackTraceElement e : t.getStackTrace()) {
            if (e.getMethodName().equals("lockForChange")) {
                return true;
            }
        }
        return false;
    }

    @Test
    @org.junit.jupiter.api.Timeout(60)
    void aWriteAppendOrCopyGivesUpAfterItsLockWaitWithEagainAndChangesNothing() throws Exception {
        storage.write(p("/shared/db"), bytes("before"));
        local().lockWait(Duration.ofMillis(200));
        // a classic POSIX record lock of another process (python's lockf), which an OFD lock is weighed against
        Process holder = new ProcessBuilder("python3", "-c", "import fcntl, sys; f = open(sys.argv[1], 'r+'); "
                + "fcntl.lockf(f, fcntl.LOCK_EX); print('locked', flush=True); sys.stdin.read()",
                root.resolve("shared/db").toString()).redirectErrorStream(true).start();
        try {
            assertEquals("locked", new java.io.BufferedReader(new java.io.InputStreamReader(holder.getInputStream())).readLine());
            java.nio.file.FileSystemException e = assertThrows(java.nio.file.FileSystemException.class,
                    () -> storage.write(p("/shared/db"), bytes("after")));
            assertEquals(Linux.EAGAIN, dev.chibifs.sys.Errors.errno(e), e.toString());
            assertTrue(e.getMessage().contains("holds a lock"), e.getMessage());
            assertThrows(java.nio.file.FileSystemException.class, () -> storage.append(p("/shared/db"), bytes("more")));
            storage.write(p("/shared/other"), bytes("copied"));
            assertThrows(java.nio.file.FileSystemException.class, () -> storage.copy(p("/shared/other"), p("/shared/db")));
            storage.delete(p("/shared/other"));
            assertEquals("before", Files.readString(root.resolve("shared/db")));
        } finally {
            holder.getOutputStream().close();
            assertEquals(0, holder.waitFor());
        }
        storage.write(p("/shared/db"), bytes("after"));
        assertEquals("after", Files.readString(root.resolve("shared/db")));
        try (Stream<Path> left = Files.list(root.resolve("shared"))) {
            assertEquals(List.of("db"), left.map(f -> f.getFileName().toString()).collect(Collectors.toList()),
                    "no temporary left behind");
        }
    }

    @Test
    void anOwnersDescriptionGoesWhenItHoldsNothingAndOnlyThen() throws IOException {
        storage.write(p("/shared/db"), bytes("x"));
        try (FileHandle h = openRw(storage, "/shared/db"); FileHandle other = openRw(storage, "/shared/db")) {
            assertTrue(h.locks().tryLock(1, LockType.READ, 0, 9));
            assertTrue(h.locks().tryLock(1, LockType.WRITE, 20, 29));
            assertTrue(h.locks().tryFlock(1, LockType.READ));
            assertEquals(2, local().lockDescriptionsOpen());
            assertTrue(h.locks().tryLock(1, LockType.UNLOCK, 0, 9));
            assertEquals(2, local().lockDescriptionsOpen());
            assertFalse(other.locks().tryLock(2, LockType.READ, 25, 25));
            assertTrue(h.locks().tryLock(1, LockType.UNLOCK, 15, 35));
            assertEquals(1, local().lockDescriptionsOpen());
            assertTrue(other.locks().tryLock(2, LockType.WRITE, 0, END));
            // a refused lock leaves no description behind
            assertFalse(h.locks().tryLock(3, LockType.READ, 0, 0));
            assertEquals(2, local().lockDescriptionsOpen());
            assertTrue(h.locks().tryFlock(1, LockType.UNLOCK));
            assertEquals(1, local().lockDescriptionsOpen());
        }
        assertEquals(0, local().lockDescriptionsOpen());
    }

    @Test
    void oneOwnerLockingFromManyThreadsLosesNoLockAndLeaksNoDescriptor() throws Exception {
        storage.write(p("/shared/db"), bytes("x"));
        int threads = 4;
        java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(threads);
        try (FileHandle h = openRw(storage, "/shared/db"); FileHandle other = openRw(storage, "/shared/db")) {
            List<java.util.concurrent.Future<?>> done = new java.util.ArrayList<>();
            for (int t = 0; t < threads; t++) {
                long at = t * 10L;
                done.add(pool.submit(() -> {
                    for (int i = 0; i < 500; i++) {
                        // the owner's last lock going (and its description closing) races the other threads' locks
                        assertTrue(h.locks().tryLock(1, LockType.WRITE, at, at + 4));
                        assertFalse(other.locks().tryLock(2, LockType.READ, at, at));
                        assertTrue(h.locks().tryLock(1, LockType.UNLOCK, at, at + 4));
                    }
                    return null;
                }));
            }
            for (java.util.concurrent.Future<?> f : done) {
                f.get(30, java.util.concurrent.TimeUnit.SECONDS);
            }
            assertEquals(0, local().lockDescriptionsOpen());
            assertTrue(other.locks().tryLock(2, LockType.WRITE, 0, END));
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void heapBuffersLargerThanTheBounceBufferAreReadAndWrittenWhole() throws IOException {
        byte[] data = new byte[200_000];
        new java.util.Random(7).nextBytes(data);
        storage.createDirectory(p("/shared"));
        try (FileHandle h = storage.open(p("/shared/big"), EnumSet.of(OpenFlag.READ, OpenFlag.WRITE, OpenFlag.CREATE), 0)) {
            assertEquals(data.length, h.write(java.nio.ByteBuffer.wrap(data), 0));
            java.nio.ByteBuffer back = java.nio.ByteBuffer.allocate(data.length + 10);
            assertEquals(data.length, h.read(back, 0));
            assertArrayEquals(data, java.util.Arrays.copyOf(back.array(), data.length));
            h.truncate(300_000);
            assertEquals(300_000, h.size());
        }
        assertArrayEquals(data, java.util.Arrays.copyOf(Files.readAllBytes(root.resolve("shared/big")), data.length));
    }

    /** The descriptors this process still has of {@code file}, removed: those LateCloses has yet to close. */
    private static long stillOpen(Path file) throws IOException {
        String removed = file + " (deleted)";
        long open = 0;
        try (java.nio.file.DirectoryStream<Path> fds = Files.newDirectoryStream(Path.of("/proc/self/fd"))) {
            for (Path fd : fds) {
                try {
                    open += Files.readSymbolicLink(fd).toString().equals(removed) ? 1 : 0;
                } catch (IOException closedMeanwhile) {
                    // another thread's descriptor, closed while we looked
                }
            }
        }
        return open;
    }

    /**
     * The storage again, its removed files' last descriptors closed only when it flushes them (no
     * closer thread), with {@code /shared} made; the store's root.
     */
    private Path storageClosingLateOnlyWhenFlushed() throws IOException {
        storage.close();
        storage = new LocalStorage(root, new LateCloses(false));
        storage.createDirectory(p("/shared"));
        return local().root();
    }

    @Test
    void removedAndReplacedFilesAreFreedByLateClosesAndCountedSpaceFlushesThem() throws IOException {
        Path store = storageClosingLateOnlyWhenFlushed();
        storage.write(p("/shared/removed"), new byte[64 * 1024]);
        storage.write(p("/shared/replaced"), bytes("old"));
        storage.write(p("/shared/new"), bytes("new"));
        storage.createDirectory(p("/shared/dir"));
        storage.write(p("/shared/dir/f"), bytes("f")); // held from now on
        storage.removeFile(p("/shared/removed"));
        storage.rename(p("/shared/new"), p("/shared/replaced"));
        storage.removeFile(p("/shared/dir/f"));
        storage.removeDirectory(p("/shared/dir"));
        storage.metadata(p("/shared")); // the next operation lets go of the directory removed
        assertFalse(Files.exists(store.resolve("shared/removed")));
        assertEquals("new", text("/shared/replaced"));
        assertEquals(1, stillOpen(store.resolve("shared/removed")));
        assertEquals(1, stillOpen(store.resolve("shared/replaced")));
        assertEquals(1, stillOpen(store.resolve("shared/dir")));

        storage.space(); // df right after rm sees the space back

        assertEquals(0, stillOpen(store.resolve("shared/removed")));
        assertEquals(0, stillOpen(store.resolve("shared/replaced")));
        assertEquals(0, stillOpen(store.resolve("shared/dir")));
    }

    @Test
    void onANearlyFullStoreWhatWasRemovedGivesItsSpaceBackBeforeAFileIsOpenedToWrite() throws IOException {
        dev.chibifs.testing.FuseSupport.requireRoot();
        try (Tmpfs disk = Tmpfs.mount(temp.resolve("small"), "1m");
             LocalStorage s = new LocalStorage(disk.path(), new LateCloses(false))) {
            s.createDirectory(p("/shared"));
            s.write(p("/shared/big"), new byte[768 * 1024]); // a quarter of the disk left: less than big holds
            s.removeFile(p("/shared/big"));
            try (FileHandle h = s.open(p("/shared/big"), EnumSet.of(OpenFlag.READ), 0)) {
                throw new AssertionError("removed, yet opened");
            } catch (java.nio.file.NoSuchFileException expected) {
                // a read-only open takes no space: the removed file may stay held
            }
            assertEquals(1, stillOpen(disk.path().resolve("shared/big")));
            // rm to make room on a full disk, then write: the room is there when the open returns
            s.open(p("/shared/after"), EnumSet.of(OpenFlag.WRITE, OpenFlag.CREATE), 0644).close();
            assertEquals(0, stillOpen(disk.path().resolve("shared/big")));
        }
    }

    /**
     * Session 68: with another agent's {@code rm -rf} running, every write-open on the mount closed
     * the removed files' last descriptors in its own worker (up to 1,024, each an inode freed with a
     * discard): {@code echo >> log} took up to 1.8 s. Where the disk has room, the closer frees them.
     */
    @Test
    void onARoomyStoreWhatWasRemovedIsLeftToTheCloserByWritesAndFreedForDf() throws IOException {
        dev.chibifs.testing.FuseSupport.requireRoot();
        try (Tmpfs disk = Tmpfs.mount(temp.resolve("roomy"), "64m");
             LocalStorage s = new LocalStorage(disk.path(), new LateCloses(false))) {
            s.createDirectory(p("/shared"));
            s.write(p("/shared/big"), new byte[768 * 1024]);
            s.removeFile(p("/shared/big"));
            s.open(p("/shared/log"), EnumSet.of(OpenFlag.WRITE, OpenFlag.APPEND, OpenFlag.CREATE), 0644).close();
            s.mkdir(p("/shared/made"));
            s.write(p("/shared/made/f"), bytes("f"));
            assertEquals(1, stillOpen(disk.path().resolve("shared/big")));

            s.space(); // df right after rm sees the space back

            assertEquals(0, stillOpen(disk.path().resolve("shared/big")));
        }
    }

    /** What {@link LateCloses#flushWhenShort} weighs, told by a stand-in for the store's file system. */
    @Test
    void lateClosesFlushesBeforeAWriteOnlyWhereTheFileSystemIsShortOfWhatWaits() throws IOException {
        long device = Syscalls.stat(Linux.AT_FDCWD, temp.toString(), null).device();
        long mib = 1024 * 1024;
        // a 1 GiB file system (4 KiB units, 65,536 inodes): a 64 MiB margin, 4,096 inodes
        java.util.function.BiFunction<Long, Long, LateCloses.Room> fs = (freeBytes, freeFiles) -> () ->
                new LateCloses.FileSystem(device, new Syscalls.Statfs(0, 4096, 262_144, freeBytes / 4096,
                        freeBytes / 4096, 65_536, freeFiles, 255, 0));
        Path f = Files.write(temp.resolve("removed"), new byte[4 * (int) mib]);
        LateCloses closes = new LateCloses(false);
        closes.flushWhenShort(fs.apply(0L, 0L)); // nothing waits: nothing asked
        closes.delete(f);

        closes.flushWhenShort(fs.apply(512 * mib, 60_000L));
        assertEquals(1, stillOpen(f), "roomy");
        closes.flushWhenShort(fs.apply(69 * mib, 60_000L));
        assertEquals(1, stillOpen(f), "room for what waits and the margin");
        closes.flushWhenShort(() -> new LateCloses.FileSystem(device + 1, fs.apply(512 * mib, 60_000L).now().statfs()));
        assertEquals(0, stillOpen(f), "the removed file is on another file system than the one asked");

        closes.delete(Files.write(f, new byte[4 * (int) mib]));
        closes.flushWhenShort(fs.apply(512 * mib, 4_096L));
        assertEquals(0, stillOpen(f), "short of inodes");

        closes.delete(Files.write(f, new byte[4 * (int) mib]));
        closes.flushWhenShort(fs.apply(69 * mib, 60_000L));
        assertEquals(1, stillOpen(f));
        closes.flushWhenShort(fs.apply(67 * mib, 60_000L));
        assertEquals(0, stillOpen(f), "short of room for what waits and the margin");

        closes.delete(Files.write(f, new byte[4 * (int) mib]));
        closes.flushWhenShort(() -> {
            throw new IOException("the store is gone");
        });
        assertEquals(0, stillOpen(f), "not told: flushed");
    }

    @Test
    void lateClosesDeletesAFileAndFreesItAtTheFlush() throws IOException {
        Path f = Files.writeString(temp.resolve("cached"), "content"); // a store's own file, as S3's cache
        LateCloses closes = new LateCloses(false);
        closes.delete(f);
        assertFalse(Files.exists(f));
        assertEquals(1, stillOpen(f));
        closes.delete(f); // gone already: fine
        closes.flush();
        assertEquals(0, stillOpen(f));
    }

    @Test
    void lateClosesClosesWhatWaitsBeforeItEnds() throws IOException {
        storage.createDirectory(p("/shared"));
        storage.write(p("/shared/f"), bytes("f"));
        Path f = local().root().resolve("shared/f");
        LateCloses closes = new LateCloses(true);
        int fd = Syscalls.tryOpenat(Linux.AT_FDCWD, f.toString(), Linux.O_PATH, 0);
        assertTrue(fd >= 0);
        Files.delete(f);
        closes.close(fd);
        closes.close(); // the thread closes what it was given before it ends
        assertEquals(0, stillOpen(f));
        int after = Syscalls.tryOpenat(Linux.AT_FDCWD, local().root().toString(), Linux.O_PATH, 0);
        closes.close(after); // ended: closed at once, here
        Path link = Path.of("/proc/self/fd/" + after);
        assertFalse(Files.exists(link, LinkOption.NOFOLLOW_LINKS) && Files.readSymbolicLink(link).equals(local().root()));
    }
    /**
     * The moves lock ({@link Storage#lockMoves}) is the store's, not this instance's: another mount
     * of the same directory (another LocalStorage) is held out by an exclusive one, shared ones go
     * together, and a closed one lets go.
     */
    @Test
    void aMovesLockHoldsOutEveryOtherUserOfTheSameDirectory() throws Exception {
        try (LocalStorage otherMount = new LocalStorage(root)) {
            try (Storage.MoveLock held = local().lockMoves(true)) {
                assertFalse(rootLockFree(Linux.LOCK_SH), "an exclusive one keeps a shared one out");
            }
            assertTrue(rootLockFree(Linux.LOCK_EX), "let go once closed");
            try (Storage.MoveLock one = local().lockMoves(false); Storage.MoveLock two = otherMount.lockMoves(false)) {
                assertFalse(rootLockFree(Linux.LOCK_EX), "two shared ones, held together");
            }
            assertTrue(rootLockFree(Linux.LOCK_EX));
        }
    }

    /** Whether a third process could take the store root's flock with {@code operation} now (without waiting). */
    private boolean rootLockFree(int operation) throws IOException {
        int fd = Syscalls.openat(Linux.AT_FDCWD, root.toString(),
                Linux.O_RDONLY | Linux.O_DIRECTORY, 0, root.toString());
        try {
            return Syscalls.flock(fd, operation | Linux.LOCK_NB);
        } finally {
            Syscalls.close(fd);
        }
    }

    /**
     * A store on a FUSE (or network) file system may hold a request for as long as its server does
     * not answer, and is served apart from the rest of the mount, as S3 is: a read-only store on a
     * stopped FUSE daemon held every worker, and a cat in an agent's own home waited 25 s.
     */
    @Test
    @org.junit.jupiter.api.Timeout(60)
    void aStoreOnAFuseFileSystemMayWaitLongAndOneOnALocalDiskDoesNot() throws Exception {
        assertFalse(storage.answersMayWaitLong(), "a local disk answers");
        dev.chibifs.testing.FuseSupport.requireFuse();
        try (dev.chibifs.testing.MountedFs fs = dev.chibifs.testing.MountedFs.start("--context", "planner")) {
            LocalStorage onFuse = new LocalStorage(fs.at("/shared/elsewhere"));
            assertTrue(onFuse.answersMayWaitLong());
            assertTrue(new ReadOnlyStorage(onFuse, "readonly:" + fs.at("/shared/elsewhere")).answersMayWaitLong(),
                    "as the store behind it");
        }
    }

    // ---- a change waiting for a lock another process holds ----

    /** Holds an exclusive flock on the store file, as flock(1) would, until closed. */
    /** Replaces the store file at {@code vfsPath} by a new one renamed over its name, as a writer that holds its lock may. */
    private void renameOverTheName(String vfsPath, String content) throws IOException {
        Path replacement = root.resolve(vfsPath.substring(1) + ".replacement");
        Files.write(replacement, bytes(content));
        Files.move(replacement, root.resolve(vfsPath.substring(1)), java.nio.file.StandardCopyOption.ATOMIC_MOVE);
    }

    private int flockHeld(String vfsPath) throws IOException {
        String file = root.resolve(vfsPath.substring(1)).toString();
        int fd = Syscalls.openat(Linux.AT_FDCWD, file, Linux.O_RDWR, 0, file);
        assertTrue(Syscalls.flock(fd, Linux.LOCK_EX | Linux.LOCK_NB));
        return fd;
    }

    /**
     * Runs {@code change} while the test holds the lock on {@code vfsPath}; once it waits,
     * {@code holder} acts on the file, then lets the lock go; returns when the change is done.
     */
    private void waitingWhileTheHolderActs(String vfsPath, Executable change, Executable holder) throws Throwable {
        int held = flockHeld(vfsPath);
        java.util.concurrent.CompletableFuture<Void> waiting;
        try {
            waiting = waitingForTheLock(change);
            holder.execute();
        } finally {
            Syscalls.close(held);
        }
        waiting.get(30, java.util.concurrent.TimeUnit.SECONDS);
    }

    /** Runs {@code change} on its own thread once; returns when it waits for a lock. */
    private java.util.concurrent.CompletableFuture<Void> waitingForTheLock(Executable change) throws InterruptedException {
        java.util.concurrent.CountDownLatch waiting = new java.util.concurrent.CountDownLatch(1);
        local().lockPause((path, millis) -> {
            waiting.countDown();
            java.util.concurrent.TimeUnit.MILLISECONDS.sleep(millis);
        });
        java.util.concurrent.CompletableFuture<Void> done = java.util.concurrent.CompletableFuture.runAsync(() -> {
            try {
                change.execute();
            } catch (Throwable e) {
                throw new java.util.concurrent.CompletionException(e);
            }
        });
        assertTrue(waiting.await(30, java.util.concurrent.TimeUnit.SECONDS), "the change waits for the lock");
        return done;
    }

    /**
     * The holder of the lock replaced the file (as `chibifs write` does, renaming a new one over
     * it) while an append waited for the lock on the old one: the append went into the unlinked
     * old file and was lost, and said nothing.
     */
    @Test
    @org.junit.jupiter.api.Timeout(60)
    void anAppendWaitingForALockGoesIntoTheFileRenamedOverTheName() throws Throwable {
        storage.write(p("/shared/f"), bytes("base\n"));
        waitingWhileTheHolderActs("/shared/f", () -> storage.append(p("/shared/f"), bytes("APPENDED\n")),
                () -> renameOverTheName("/shared/f", "WRITTEN\n"));
        assertEquals("WRITTEN\nAPPENDED\n", text("/shared/f"));
    }

    /**
     * The same for a write: the lock it waited for on the old file guards nothing, so it waits
     * again for the one on the file the holder renamed over the name; it went on at once.
     */
    @Test
    @org.junit.jupiter.api.Timeout(60)
    void aWriteWaitingForALockWaitsAgainForTheFileRenamedOverTheName() throws Exception {
        storage.write(p("/shared/f"), bytes("base"));
        int held = flockHeld("/shared/f");
        java.util.concurrent.atomic.AtomicBoolean oldLetGo = new java.util.concurrent.atomic.AtomicBoolean();
        java.util.concurrent.CountDownLatch waitingAgain = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.CompletableFuture<Void> write = waitingForTheLock(() -> storage.write(p("/shared/f"), bytes("WRITTEN")));
        local().lockPause((path, millis) -> {
            if (oldLetGo.get()) {
                waitingAgain.countDown();
            }
            java.util.concurrent.TimeUnit.MILLISECONDS.sleep(millis);
        });
        int heldAgain;
        try {
            renameOverTheName("/shared/f", "REPLACED");
            heldAgain = flockHeld("/shared/f");
        } finally {
            Syscalls.close(held);
            oldLetGo.set(true);
        }
        try {
            assertTrue(waitingAgain.await(30, java.util.concurrent.TimeUnit.SECONDS), "the write waits for the new file's lock");
            assertFalse(write.isDone());
            assertEquals("REPLACED", text("/shared/f"));
        } finally {
            Syscalls.close(heldAgain);
        }
        write.get(30, java.util.concurrent.TimeUnit.SECONDS);
        assertEquals("WRITTEN", text("/shared/f"));
    }

    /**
     * An edit (rewrite) reads the file under the lock it waited for: what the holder appended
     * while it waited is in the result. Read before the wait, the append was lost.
     */
    @Test
    @org.junit.jupiter.api.Timeout(60)
    void aRewriteReadsTheFileUnderTheLockItWaitedFor() throws Throwable {
        storage.write(p("/shared/f"), bytes("base\n"));
        waitingWhileTheHolderActs("/shared/f", () -> storage.rewrite(p("/shared/f"),
                        content -> new String(content, java.nio.charset.StandardCharsets.UTF_8).replace("base", "EDITED")
                                .getBytes(java.nio.charset.StandardCharsets.UTF_8), Precondition.NONE, Storage.Guard.NONE),
                () -> Files.write(root.resolve("shared/f"), bytes("APPENDED\n"), java.nio.file.StandardOpenOption.APPEND));
        assertEquals("EDITED\nAPPENDED\n", text("/shared/f"));
    }

    /**
     * A streamed write goes to the disk as it is read (a temporary holds what came so far),
     * so a content larger than the heap needs only a buffer; a failure, a refusal by the guard or
     * by the condition leaves no temporary behind on the disk (the suite sees only listings).
     */
    @Test
    void aStreamedWriteGoesToTheDiskAsItIsRead() throws IOException {
        LocalStorage s = local();
        // named, as where the file system refuses O_TMPFILE: what came so far is seen in its size
        s.stageInNamedTemporaries();
        s.write(p("/shared/s/f"), bytes("old"));
        Path dir = root.resolve("shared/s");
        byte[] content = numbered(8 * 65536);
        List<Long> onDisk = new ArrayList<>();
        java.io.InputStream watched = new java.io.FilterInputStream(failingAfter(content, -1)) {
            @Override
            public int read(byte[] b, int off, int len) throws IOException {
                try (Stream<Path> names = Files.list(dir)) {
                    onDisk.add(names.filter(n -> n.getFileName().toString().startsWith(LocalStorage.TEMP_PREFIX))
                            .mapToLong(n -> n.toFile().length()).sum());
                }
                return super.read(b, off, len);
            }
        };
        s.write(p("/shared/s/f"), watched, Precondition.NONE, Storage.Guard.NONE);
        assertArrayEquals(content, s.read(p("/shared/s/f")));
        // before the last reads, most of the content is in the temporary already
        assertTrue(onDisk.get(onDisk.size() - 1) >= content.length - 65536, onDisk.toString());

        assertThrows(IOException.class, () -> s.write(p("/shared/s/f"), failingAfter(content, 100_000),
                Precondition.NONE, Storage.Guard.NONE));
        assertThrows(EtagMismatchException.class, () -> s.write(p("/shared/s/f"), failingAfter(content, -1),
                Precondition.matching(ContentHash.of(bytes("other"))), Storage.Guard.NONE));
        assertThrows(IOException.class, () -> s.write(p("/shared/s/f"), failingAfter(content, -1),
                Precondition.NONE, () -> {
                    throw new IOException("refused");
                }));
        try (Stream<Path> names = Files.list(dir)) {
            assertEquals(List.of("f"), names.map(n -> n.getFileName().toString()).collect(Collectors.toList()));
        }
        assertArrayEquals(content, s.read(p("/shared/s/f")));
    }

    /** A refusal by the guard comes before anything is read or made: no parent directory, no byte taken. */
    @Test
    void aStreamedWriteRefusedByItsGuardReadsNothing() {
        java.io.InputStream untouchable = new java.io.InputStream() {
            @Override
            public int read() {
                throw new AssertionError("read before the guard was asked");
            }
        };
        IOException e = assertThrows(IOException.class, () -> local().write(p("/shared/new/f"), untouchable,
                Precondition.NONE, () -> {
                    throw new IOException("refused");
                }));
        assertEquals("refused", e.getMessage());
        assertFalse(Files.exists(root.resolve("shared/new")));
    }

    /** A stream that gives {@code content}, doing {@code midway} once before its end, as a slow stdin lets others act. */
    private static java.io.InputStream actingMidway(byte[] content, Executable midway) {
        return new java.io.FilterInputStream(new java.io.ByteArrayInputStream(content)) {
            private boolean acted;

            @Override
            public int read(byte[] b, int off, int len) throws IOException {
                int n = super.read(b, off, len);
                if (n < 0 && !acted) {
                    acted = true;
                    try {
                        midway.execute();
                    } catch (Throwable e) {
                        throw new AssertionError(e);
                    }
                }
                return n;
            }
        };
    }

    private void moveIntoBobsHome(String dir) throws IOException {
        Files.createDirectories(root.resolve("home/bob"));
        Files.move(root.resolve("shared/" + dir), root.resolve("home/bob/" + dir));
        Files.write(root.resolve("home/bob/" + dir + "/f"), bytes("bob-private"));
    }

    /**
     * vfscmd3 finding 1: the directory of a streamed write was moved into bob's home while stdin
     * was read, and bob wrote his own file there: the write's rename landed in the moved directory,
     * over bob's file, though the guard was asked about /shared. It now fails as a missing directory
     * does, or lands in the directory that is at the path by then; bob's file is untouched.
     */
    @Test
    void aStreamedWriteNeverLandsInItsDirectoryMovedAwayMeanwhile() throws IOException {
        storage.write(p("/shared/dd/f"), bytes("v1"));
        assertThrows(java.nio.file.NoSuchFileException.class, () -> storage.write(p("/shared/dd/f"),
                actingMidway(bytes("alice-data"), () -> moveIntoBobsHome("dd")), Precondition.NONE, Storage.Guard.NONE));
        assertEquals("bob-private", text("/home/bob/dd/f"));

        storage.write(p("/shared/d2/f"), bytes("v1"));
        storage.write(p("/shared/d2/f"), actingMidway(bytes("alice-data"), () -> {
            moveIntoBobsHome("d2");
            Files.createDirectories(root.resolve("shared/d2"));
        }), Precondition.NONE, Storage.Guard.NONE);
        assertEquals("bob-private", text("/home/bob/d2/f"));
        assertEquals("alice-data", text("/shared/d2/f"));
        try (Stream<Path> names = Files.list(root.resolve("home/bob/d2"))) {
            assertEquals(List.of("f"), names.map(n -> n.getFileName().toString()).collect(Collectors.toList()));
        }
    }

    /**
     * The directory of a streamed write swapped for a symbolic link (to a directory of the same
     * zone) while stdin was read: the store does not follow it, since the policy judged the path
     * as it was, and it says that the directory changed into a link, not "Too many levels of
     * symbolic links", which reads as a loop. Nothing lands at either end.
     */
    @Test
    void aStreamedWriteWhoseDirectoryBecameALinkMeanwhileSaysSo() throws IOException {
        storage.write(p("/shared/dl/f"), bytes("v1"));
        Files.createDirectories(root.resolve("shared/elsewhere"));
        IOException e = assertThrows(IOException.class, () -> storage.write(p("/shared/dl/f"),
                actingMidway(bytes("alice-data"), () -> {
                    moveIntoBobsHome("dl");
                    Files.createSymbolicLink(root.resolve("shared/dl"), Path.of("elsewhere"));
                }), Precondition.NONE, Storage.Guard.NONE));
        assertEquals(Linux.ELOOP, Errors.errno(e));
        assertEquals("a directory on its path changed into a symbolic link while the change was under way"
                + " (not followed: the path was judged as it was)", ((java.nio.file.FileSystemException) e).getReason());
        assertEquals("bob-private", text("/home/bob/dl/f"));
        try (Stream<Path> names = Files.list(root.resolve("shared/elsewhere"))) {
            assertEquals(0, names.count());
        }
    }

    /** The same across a write's wait for a lock: the lock it waited for is on a file that moved away with its directory. */
    @Test
    @org.junit.jupiter.api.Timeout(60)
    void aWriteWaitingForALockNeverLandsInItsDirectoryMovedAwayMeanwhile() throws Throwable {
        storage.write(p("/shared/dd/f"), bytes("v1"));
        landsAtItsPathAfterTheWait("dd", () -> storage.write(p("/shared/dd/f"), bytes("WRITTEN")), "WRITTEN");
    }

    /**
     * {@code change} of {@code /shared/DIR/f} waits for the file's lock while DIR moves into bob's
     * home (bob writing his own f there) and a new DIR is made at the path: it lands in the new one.
     */
    private void landsAtItsPathAfterTheWait(String dir, Executable change, String expected) throws Throwable {
        waitingWhileTheHolderActs("/shared/" + dir + "/f", change, () -> {
            moveIntoBobsHome(dir);
            Files.createDirectories(root.resolve("shared/" + dir));
        });
        assertEquals("bob-private", text("/home/bob/" + dir + "/f"));
        assertEquals(expected, text("/shared/" + dir + "/f"));
    }

    /** vfscmd4 finding 1: the same for cp, whose destination's directory was opened before its wait. */
    @Test
    @org.junit.jupiter.api.Timeout(60)
    void aCopyWaitingForALockNeverLandsInItsDirectoryMovedAwayMeanwhile() throws Throwable {
        storage.write(p("/shared/src"), bytes("COPIED"));
        storage.write(p("/shared/dd/f"), bytes("v1"));
        landsAtItsPathAfterTheWait("dd", () -> storage.copy(p("/shared/src"), p("/shared/dd/f")), "COPIED");
    }

    /**
     * vfscmd4 finding 3: the same for append, which kept the directory it opened before its wait
     * and checked only that the file was still named there: it appended to bob's file in his home.
     */
    @Test
    @org.junit.jupiter.api.Timeout(60)
    void anAppendWaitingForALockNeverLandsInItsDirectoryMovedAwayMeanwhile() throws Throwable {
        storage.write(p("/shared/dd/f"), bytes("v1"));
        java.util.concurrent.ExecutionException e = assertThrows(java.util.concurrent.ExecutionException.class,
                () -> waitingWhileTheHolderActs("/shared/dd/f", () -> storage.append(p("/shared/dd/f"), bytes("APPENDED")),
                        () -> moveIntoBobsHome("dd")));
        assertTrue(e.getCause() instanceof java.nio.file.NoSuchFileException, String.valueOf(e.getCause()));
        assertEquals("bob-private", text("/home/bob/dd/f"));
        assertFalse(Files.exists(root.resolve("shared/dd")), "nothing made at the path: its directory is gone");

        storage.write(p("/shared/de/f"), bytes("v1"));
        landsAtItsPathAfterTheWait("de", () -> storage.append(p("/shared/de/f"), bytes("APPENDED")), "APPENDED");
    }

    /**
     * vfscmd4 finding 2: cp was judged only before its wait for the destination's lock; a guard
     * that refuses by the time the lock is held (a context removed from a flock) now stops it.
     */
    @Test
    @org.junit.jupiter.api.Timeout(60)
    void aCopyRefusedByItsGuardAfterTheWaitChangesNothing() throws Throwable {
        storage.write(p("/shared/src"), bytes("COPIED"));
        storage.write(p("/shared/f"), bytes("kept"));
        java.util.concurrent.atomic.AtomicBoolean removed = new java.util.concurrent.atomic.AtomicBoolean();
        Storage.Guard stillMember = () -> {
            if (removed.get()) {
                throw new java.nio.file.AccessDeniedException("/shared/f", null, "not a member any more");
            }
        };
        java.util.concurrent.ExecutionException e = assertThrows(java.util.concurrent.ExecutionException.class,
                () -> waitingWhileTheHolderActs("/shared/f", () -> storage.copy(p("/shared/src"), p("/shared/f"), stillMember),
                        () -> removed.set(true)));
        assertTrue(e.getCause() instanceof java.nio.file.AccessDeniedException, String.valueOf(e.getCause()));
        assertEquals("kept", text("/shared/f"));
        assertEquals(List.of("f", "src"), names("shared"));
    }

    private List<String> names(String dir) throws IOException {
        try (Stream<Path> names = Files.list(root.resolve(dir))) {
            return names.map(n -> n.getFileName().toString()).sorted().collect(Collectors.toList());
        }
    }

    /**
     * vfscmd3 findings 2-4: the named temporary of a streamed write lived as long as stdin, so a
     * signal or kill -9 left it, the directory could not be removed (ENOTEMPTY, though it looked
     * empty), and others could open and rename it through a mount. The content now waits in a file
     * with no name: the directory shows only the file while it is read, and can be removed.
     */
    @Test
    void aStreamedWriteNamesNothingInTheStoreWhileItReads() throws IOException {
        storage.write(p("/shared/s/f"), bytes("old"));
        byte[] content = numbered(4 * 65536);
        List<List<String>> seen = new ArrayList<>();
        java.io.InputStream watched = new java.io.FilterInputStream(new java.io.ByteArrayInputStream(content)) {
            @Override
            public int read(byte[] b, int off, int len) throws IOException {
                seen.add(names("shared/s"));
                return super.read(b, off, len);
            }
        };
        storage.write(p("/shared/s/f"), watched, Precondition.NONE, Storage.Guard.NONE);
        assertArrayEquals(content, storage.read(p("/shared/s/f")));
        assertTrue(seen.size() > 4, seen.toString());
        assertTrue(seen.stream().allMatch(List.of("f")::equals), seen.toString());

        storage.mkdir(p("/shared/rd"));
        assertThrows(java.nio.file.NoSuchFileException.class, () -> storage.write(p("/shared/rd/f"),
                actingMidway(content, () -> Files.delete(root.resolve("shared/rd"))), Precondition.NONE, Storage.Guard.NONE));
        assertFalse(Files.exists(root.resolve("shared/rd")));
    }

    /**
     * Where the file system refuses O_TMPFILE the temporary has a name, and a signal (INT, TERM,
     * HUP) ends the JVM through its shutdown hooks without the write's finally: the hook's removal
     * (run here as it runs it) unlinks it, and the write fails without touching the file.
     */
    @Test
    void aNamedTemporaryIsRemovedByTheShutdownHook() throws IOException {
        local().stageInNamedTemporaries();
        storage.write(p("/shared/s/f"), bytes("old"));
        IOException e = assertThrows(IOException.class, () -> storage.write(p("/shared/s/f"),
                actingMidway(numbered(200_000), () -> {
                    assertEquals(2, names("shared/s").size(), "a named temporary beside f");
                    PendingTemporaries.removeAll();
                    assertEquals(List.of("f"), names("shared/s"));
                }), Precondition.NONE, Storage.Guard.NONE));
        assertEquals("/shared/s/f", e.getMessage().split(":")[0], e.toString());
        assertEquals(List.of("f"), names("shared/s"));
        assertEquals("old", text("/shared/s/f"));
        // a write that ends as usual takes its temporary off the hook's list
        storage.write(p("/shared/s/f"), actingMidway(bytes("new"), () -> { }), Precondition.NONE, Storage.Guard.NONE);
        assertEquals("new", text("/shared/s/f"));
    }
}
