package dev.chibifs.store.s3;

import dev.chibifs.path.VfsPath;
import dev.chibifs.store.FileHandle;
import dev.chibifs.store.OpenFlag;
import dev.chibifs.store.Storage;
import dev.chibifs.store.StorageBehaviourSuite;
import dev.chibifs.sys.Errors;
import dev.chibifs.sys.Linux;
import dev.chibifs.testing.Sh;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.EnumSet;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The S3 store against the shared behaviour suite, over a real S3 server. Uploads go at once and
 * every listing is asked of S3 again (no debounce, no validity), so that each case also runs through
 * the merge of the local layer with what S3 says while the write-back is at work.
 */
class S3StorageTest extends StorageBehaviourSuite {

    @TempDir
    static Path temp;
    @RegisterExtension
    static final S3Server server = S3Server.perClass("suite");
    private static final AtomicInteger STORES = new AtomicInteger();

    @Override
    protected Storage newStorage() throws IOException {
        int n = STORES.incrementAndGet();
        S3Options o = S3Options.defaults(temp.resolve("cache" + n), server.env())
                .withFlushAfter(Duration.ZERO).withValidity(Duration.ZERO);
        return S3Storage.open("s3://suite/store" + n, o);
    }

    /** The tmpfs under {@link #newStorageOnASmallDisk}'s cache, unmounted after the test. */
    private dev.chibifs.testing.Tmpfs smallDisk;

    /** The cache's own needs besides the content (the journal's 1 MiB): the disk has room for these too. */
    private static final long CACHE_OVERHEAD = 2 << 20;

    /** What fills is the cache's disk: a change is made there first, and uploaded from there. */
    @Override
    protected Storage newStorageOnASmallDisk(long bytes) throws IOException {
        dev.chibifs.testing.FuseSupport.requireRoot();
        int n = STORES.incrementAndGet();
        smallDisk = dev.chibifs.testing.Tmpfs.mount(temp.resolve("small" + n), String.valueOf(bytes + CACHE_OVERHEAD));
        S3Options o = S3Options.defaults(smallDisk.path().resolve("cache"), server.env())
                .withFlushAfter(Duration.ZERO).withValidity(Duration.ZERO);
        return S3Storage.open("s3://suite/store" + n, o);
    }

    @org.junit.jupiter.api.AfterEach
    void unmountSmallDisk() {
        if (smallDisk != null) {
            smallDisk.close();
        }
    }

    @Override
    protected boolean hardLinks() {
        return false;
    }

    @Override
    protected boolean reopens() {
        return false;
    }

    @Override
    protected boolean writesThroughHeldFiles() {
        return false;
    }

    @Override
    protected boolean exchanges() {
        return false;
    }

    /** An object is all S3 holds: a link is an object of its own (.rclonelink), but no fifos or sockets. */
    @Override
    protected boolean fifosAndSockets() {
        return false;
    }

    @Override
    protected boolean directoryXattrs() {
        return false;
    }

    /** The overlay holds a change at once and uploads it: one whose journal record cannot be written must not be made. */
    /**
     * A store at the bucket's top would hold the locks' leases as a directory: hidden from listings,
     * yet a tester made a lease there (every host kept out of the file) and removed a real one (two
     * hosts holding it at once). Those names are no file's; below a key prefix they are anyone's.
     */
    @Test
    void theLeasesAtTheBucketsTopAreNoStoresFiles() throws IOException {
        server.createBucket("top");
        try (S3Storage s = S3Storage.open("s3://top", S3Options.defaults(temp.resolve("top-cache"), server.env()))) {
            VfsPath leases = p("/.chibifs-locks");
            for (ThrowingRunnable change : java.util.List.<ThrowingRunnable>of(
                    () -> s.mkdir(leases.child("ns").child("foo")),
                    () -> s.createDirectory(leases),
                    () -> s.write(leases.child("ns").child("foo").child("evil-1.1.X"), "x".getBytes()),
                    () -> s.write(p("/.chibifs-locks"), "x".getBytes()),
                    () -> s.createSymlink(leases, "elsewhere"),
                    () -> s.metadata(leases.child("ns")),
                    () -> s.removeDirectory(leases))) {
                java.nio.file.FileSystemException e = assertThrows(java.nio.file.FileSystemException.class, change::run);
                assertEquals(Linux.EINVAL, Errors.errno(e), e.toString());
            }
            s.write(p("/shared/.chibifs-locks"), "mine".getBytes());
            assertEquals("mine", new String(s.read(p("/shared/.chibifs-locks"))), "below the top it is any name");
        }
    }

    /**
     * A name whose key S3 would refuse (over 1,024 bytes) is ENAMETOOLONG at once: made here, its
     * upload failed after the write had returned, and no other host ever saw it.
     */
    @Test
    void aNameWhoseKeyS3WouldRefuseIsTooLongHere() throws IOException {
        server.createBucket("keys");
        try (S3Storage s = S3Storage.open("s3://keys/ns", S3Options.defaults(temp.resolve("keys-cache"), server.env()))) {
            String deep = "/shared/" + "d".repeat(200) + "/" + "e".repeat(200) + "/" + "f".repeat(200) + "/" + "g".repeat(200);
            s.mkdir(p(deep));
            s.createSymlink(p("/shared/link"), "t");
            VfsPath fits = p(deep + "/" + "h".repeat(1024 - ("ns" + deep + "/").length()));
            s.write(fits, "x".getBytes());
            java.util.List<ThrowingRunnable> changes = java.util.List.of(
                    () -> s.write(p(fits + "i"), "x".getBytes()),
                    () -> s.mkdir(p(deep + "/" + "g".repeat(1024 - ("ns" + deep + "/").length()))), // its marker "...g/" is 1,025
                    () -> s.createDirectory(p(fits + "j")),
                    () -> s.rename(fits, p(fits + "k")),
                    // a link's object is its name and ".rclonelink": 11 bytes more than a file's
                    () -> s.createSymlink(p(deep + "/" + "l".repeat(1014 - ("ns" + deep + "/").length())), "t"),
                    () -> s.rename(p("/shared/link"), p(deep + "/" + "m".repeat(1014 - ("ns" + deep + "/").length()))),
                    () -> s.rename(p("/shared/" + "d".repeat(200)), p("/shared/" + "d".repeat(201))));
            for (int i = 0; i < changes.size(); i++) {
                java.nio.file.FileSystemException e = assertThrows(java.nio.file.FileSystemException.class, changes.get(i)::run,
                        "change " + i);
                assertEquals(Linux.ENAMETOOLONG, Errors.errno(e), e.toString());
            }
            s.flushAll();
            assertEquals("x", new String(s.read(fits)));
        }
    }

    /**
     * A cache directory removed while the store is open (by hand, by a cleaner of /tmp) is said, and
     * every change fails: writes went on into nothing and the store said all was well, while the
     * changes not yet up were lost without a word.
     */
    @Test
    void aCacheDirectoryRemovedUnderTheStoreFailsEveryChangeAndSaysSo() throws IOException {
        S3Storage s = withCacheTakenAway("gone", cache -> "rm -rf '" + cache + "'");
        assertTrue(s.state().contains("has gone"), s.state());
    }

    /** A cache directory replaced by another of its name while the store is open is gone too: its changes were lost unsaid. */
    @Test
    void aCacheDirectoryReplacedUnderTheStoreFailsEveryChange() throws IOException {
        withCacheTakenAway("replaced",
                cache -> "mv '" + cache + "' '" + cache + ".moved' && mkdir -p '" + cache + "/data' '" + cache + "/upload'");
    }

    /**
     * A store of bucket {@code name} with a change pending, whose cache directory the shell command
     * {@code takeAway} makes of it takes away: the next change is EIO. Returns the store, closed.
     */
    private S3Storage withCacheTakenAway(String name, java.util.function.Function<Path, String> takeAway) throws IOException {
        server.createBucket(name);
        Path cache = temp.resolve(name + "-cache");
        try (S3Storage s = S3Storage.open("s3://" + name + "/ns", S3Options.defaults(cache, server.env())
                .withFlushAfter(Duration.ofHours(1)))) {
            s.write(p("/shared/pending.txt"), "pend".getBytes());
            Sh.run(takeAway.apply(cache)).ok();
            java.nio.file.FileSystemException e = assertThrows(java.nio.file.FileSystemException.class,
                    () -> s.write(p("/shared/after.txt"), "x".getBytes()));
            assertEquals(Linux.EIO, Errors.errno(e), e.toString());
            return s;
        }
    }

    /** A file whose upload copy cannot be made, whatever the reason (inodes gone, here the copies' directory), goes up from where it is. */
    @Test
    void aFileWhoseUploadCopyCannotBeMadeGoesUpFromWhereItIs() throws IOException {
        server.createBucket("copyless");
        Path cache = temp.resolve("copyless-cache");
        try (S3Storage s = S3Storage.open("s3://copyless/ns", S3Options.defaults(cache, server.env())
                .withFlushAfter(Duration.ofHours(1)))) {
            s.write(p("/shared/small"), "13 bytes here".getBytes());
            Sh.run("rm -rf '" + cache + "/upload' && touch '" + cache + "/upload'").ok();
            s.flushAll();
            assertEquals(0, s.pendingChanges());
        }
        try (S3Storage other = S3Storage.open("s3://copyless/ns", S3Options.defaults(temp.resolve("copyless-other"), server.env()))) {
            assertEquals("13 bytes here", new String(other.read(p("/shared/small"))));
        }
    }

    /**
     * An fsync makes the journal durable without the store's monitor: under it, every other request
     * (a lookup, an open, a close) waited for the disk, tens to hundreds of ms an fsync on a loaded
     * machine. Here the journal's sync is held until a lookup of another file has been answered.
     */
    @Test
    void anFsyncsSyncOfTheJournalHoldsUpNoOtherRequest() throws Exception {
        server.createBucket("journalsync");
        try (S3Storage s = S3Storage.open("s3://journalsync/ns", S3Options.defaults(temp.resolve("journalsync-cache"), server.env())
                .withFlushAfter(Duration.ofHours(1)))) {
            s.write(p("/shared/other"), "other".getBytes(StandardCharsets.UTF_8));
            java.util.concurrent.CountDownLatch syncing = new java.util.concurrent.CountDownLatch(1);
            java.util.concurrent.CountDownLatch letGo = new java.util.concurrent.CountDownLatch(1);
            s.journal.beforeForce = () -> {
                syncing.countDown();
                try {
                    letGo.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            };
            try (FileHandle h = s.open(p("/shared/f"), EnumSet.of(OpenFlag.WRITE, OpenFlag.CREATE), 0644)) {
                h.write(ByteBuffer.wrap("v".getBytes(StandardCharsets.UTF_8)), 0);
                java.util.concurrent.CompletableFuture<Void> fsync = java.util.concurrent.CompletableFuture.runAsync(() -> {
                    try {
                        h.sync(false);
                    } catch (IOException e) {
                        throw new java.io.UncheckedIOException(e);
                    }
                });
                try {
                    assertTrue(syncing.await(30, java.util.concurrent.TimeUnit.SECONDS), "the fsync reached the journal's sync");
                    java.util.concurrent.CompletableFuture<Long> lookup = java.util.concurrent.CompletableFuture.supplyAsync(() -> {
                        try {
                            return s.metadata(p("/shared/other")).size();
                        } catch (IOException e) {
                            throw new java.io.UncheckedIOException(e);
                        }
                    });
                    assertEquals(5L, lookup.get(20, java.util.concurrent.TimeUnit.SECONDS));
                } finally {
                    letGo.countDown();
                }
                fsync.get(30, java.util.concurrent.TimeUnit.SECONDS);
            }
        }
    }

    /**
     * fsync of a directory after a rename in it (write, fsync, rename, fsync of the directory: an
     * atomic save) returns once S3 has the new name and no longer the old, as {@code chibifs sync}
     * would: before, the rename waited for the debounce, and a host that died meanwhile lost it.
     */
    @Test
    void aDirectorysFsyncReturnsOnceS3HasTheRenameInIt() throws IOException {
        server.createBucket("dirsync");
        try (S3Storage s = S3Storage.open("s3://dirsync/ns", S3Options.defaults(temp.resolve("dirsync-cache"), server.env())
                .withFlushAfter(Duration.ofHours(1)))) {
            s.mkdir(p("/shared/x"));
            try (FileHandle h = s.open(p("/shared/x/tmp"), EnumSet.of(OpenFlag.WRITE, OpenFlag.CREATE), 0644)) {
                h.write(ByteBuffer.wrap("v".getBytes(StandardCharsets.UTF_8)), 0);
                h.sync(true);
            }
            s.rename(p("/shared/x/tmp"), p("/shared/x/final"));

            s.syncDirectory(p("/shared/x"));

            assertEquals(0, s.pendingChanges());
            try (S3Storage other = S3Storage.open("s3://dirsync/ns", S3Options.defaults(temp.resolve("dirsync-other"), server.env()))) {
                assertEquals("v", new String(other.read(p("/shared/x/final")), StandardCharsets.UTF_8), "the new name is up");
                assertFalse(other.exists(p("/shared/x/tmp")), "the old one is gone");
            }
        }
    }

    /** A change that may fail. */
    private interface ThrowingRunnable {
        void run() throws IOException;
    }

    @Test
    void aFullCacheDiskRefusesAChangeBeforeItIsMade() throws IOException {
        dev.chibifs.testing.FuseSupport.requireRoot();
        Path disk = java.nio.file.Files.createDirectories(temp.resolve("full-disk"));
        Sh.run("mount -t tmpfs -o size=4m chibifs-test-cache '" + disk + "'").ok();
        try {
            S3Options o = S3Options.defaults(disk.resolve("cache"), server.env())
                    .withFlushAfter(Duration.ofHours(1)).withValidity(Duration.ZERO);
            try (S3Storage s = S3Storage.open("s3://suite/full", o)) {
                Sh.run("dd if=/dev/zero of='" + disk.resolve("filler") + "' bs=64k 2>/dev/null");
                for (Runnable change : java.util.List.<Runnable>of(
                        () -> expectNoSpace(() -> s.createDirectory(p("/d"))),
                        () -> expectNoSpace(() -> s.createSymlink(p("/l"), "target")),
                        () -> expectNoSpace(() -> s.open(p("/f"), EnumSet.of(OpenFlag.WRITE, OpenFlag.CREATE), 0644).close()))) {
                    change.run();
                }
                for (String name : new String[] {"/d", "/l", "/f"}) {
                    assertFalse(s.exists(p(name)), name + " was refused and must not be there");
                }
                java.nio.file.Files.delete(disk.resolve("filler"));
                s.createDirectory(p("/d"));
                s.createSymlink(p("/l"), "target");
                assertEquals("target", s.readLink(p("/l")));
            }
        } finally {
            Sh.run("umount -l '" + disk + "'");
        }
    }

    /**
     * A file whose upload copy finds no room on the cache's disk goes up from where it is, as a large
     * one does: the copy's failure held it back for good, every file after it too, and its fsync failed.
     */
    @Test
    void aFileWithNoRoomForItsUploadCopyGoesUpFromWhereItIs() throws IOException {
        dev.chibifs.testing.FuseSupport.requireRoot();
        server.createBucket("roomless");
        Path disk = java.nio.file.Files.createDirectories(temp.resolve("roomless-disk"));
        // room for the file and the journal's 1 MiB, not for a copy of the file besides
        Sh.run("mount -t tmpfs -o size=10m chibifs-test-cache '" + disk + "'").ok();
        try {
            S3Options o = S3Options.defaults(disk.resolve("cache"), server.env()).withFlushAfter(Duration.ofHours(1));
            byte[] big = new byte[6 << 20];
            new java.util.Random(3).nextBytes(big);
            try (S3Storage s = S3Storage.open("s3://roomless/ns", o)) {
                s.write(p("/shared/big"), big);
                s.write(p("/shared/small"), "13 bytes here".getBytes());
                s.flushAll();
                assertEquals(0, s.pendingChanges());
            }
            try (S3Storage other = S3Storage.open("s3://roomless/ns", S3Options.defaults(temp.resolve("roomless-other"), server.env()))) {
                assertArrayEquals(big, other.read(p("/shared/big")));
                assertEquals("13 bytes here", new String(other.read(p("/shared/small"))));
            }
        } finally {
            Sh.run("umount -l '" + disk + "'");
        }
    }

    private interface Change {
        void run() throws IOException;
    }

    private static void expectNoSpace(Change change) {
        IOException e = assertThrows(IOException.class, change::run);
        assertEquals(Linux.ENOSPC, Errors.errno(e), e.toString());
    }

    @Test
    void aFileCannotGrowPastWhatAnS3ObjectHolds() throws IOException {
        // else the cache file grows (or its disk says EFBIG, which reached the caller as EIO) and
        // the upload fails for good
        VfsPath f = VfsPath.of("/shared/big");
        storage.write(f, "abc".getBytes(StandardCharsets.UTF_8));
        long past = Bucket.MAX_OBJECT_BYTES + 1;
        try (FileHandle h = storage.open(f, EnumSet.of(OpenFlag.READ, OpenFlag.WRITE), 0644)) {
            assertEquals(Linux.EFBIG, Errors.errno(assertThrows(IOException.class, () -> h.truncate(past))));
            assertEquals(Linux.EFBIG, Errors.errno(assertThrows(IOException.class,
                    () -> h.write(ByteBuffer.wrap(new byte[2]), Bucket.MAX_OBJECT_BYTES - 1))));
            assertEquals(Linux.EFBIG, Errors.errno(assertThrows(IOException.class,
                    () -> h.allocate(0, Bucket.MAX_OBJECT_BYTES, 1))));
            assertEquals(3, h.size());
        }
        assertArrayEquals("abc".getBytes(StandardCharsets.UTF_8), storage.read(f));
    }
}
