package dev.chibifs.store.s3;

import dev.chibifs.path.VfsPath;
import dev.chibifs.store.FileHandle;
import dev.chibifs.store.OpenFlag;
import dev.chibifs.sys.Errors;
import dev.chibifs.sys.Linux;
import dev.chibifs.testing.Closer;
import dev.chibifs.testing.FuseSupport;
import dev.chibifs.testing.MutableClock;
import dev.chibifs.testing.Tmpfs;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A cache directory on a disk that fills with no {@code --cache-size} (a tester's 20 MiB tmpfs):
 * content already on S3 leaves it, least recently used first, for a download or a write that found
 * no room, and the download or write is tried again; content not yet uploaded never leaves, and
 * where nothing can, status says the disk is full. Over a real S3 server, on a real tmpfs (root).
 */
@Timeout(120)
class S3FullCacheDiskTest {

    private static final String BUCKET = "fulldisk";
    private static final AtomicInteger PREFIXES = new AtomicInteger();
    private static final int MIB = 1 << 20;

    @TempDir
    static Path temp;
    @RegisterExtension
    static final S3Server server = S3Server.perClass(BUCKET);

    private final MutableClock clock = new MutableClock(Instant.parse("2026-12-04T08:00:00Z"));
    @RegisterExtension
    final Closer open = new Closer();

    private static VfsPath p(String s) {
        return VfsPath.of(s);
    }

    /** {@code size} bytes that say which file they are. */
    private static byte[] content(int file, int size) {
        byte[] b = new byte[size];
        Arrays.fill(b, (byte) ('a' + file));
        return b;
    }

    /** A store on {@code prefix} whose cache is on a tmpfs of {@code size} (mount's size=), changes kept for an hour. */
    private S3Storage onDisk(String prefix, String size) throws IOException {
        FuseSupport.requireRoot();
        Tmpfs disk = Tmpfs.mount(temp.resolve(prefix + "-disk"), size);
        open.add(disk);
        return store(disk.path().resolve("cache"), prefix);
    }

    private S3Storage store(Path cacheDir, String prefix) throws IOException {
        S3Options o = S3Options.defaults(cacheDir, server.env()).withClock(clock, false).withFlushAfter(Duration.ofHours(1));
        S3Storage s = S3Storage.open("s3://" + BUCKET + "/" + prefix, o);
        open.add(s);
        return s;
    }

    /** Files /d/f0... of {@code size} bytes each, put on S3 by another host. */
    private void uploaded(String prefix, int files, int size) throws IOException {
        S3Storage other = store(temp.resolve(prefix + "-other"), prefix);
        other.mkdir(p("/d"));
        for (int i = 0; i < files; i++) {
            other.write(p("/d/f" + i), content(i, size));
        }
        other.flushAll();
    }

    /** A store on an 8 MiB disk whose cache holds /d/f0 and /d/f1 (3 MiB each, on S3), f0 used first. */
    private S3Storage fullOfTwoFilesRead(String name) throws IOException {
        String prefix = name + PREFIXES.incrementAndGet();
        uploaded(prefix, 2, 3 * MIB);
        S3Storage s = onDisk(prefix, "8m");
        s.read(p("/d/f0"));
        clock.advance(Duration.ofSeconds(1));
        s.read(p("/d/f1"));
        return s;
    }

    private static long contentFiles(S3Storage s) throws IOException {
        try (Stream<Path> files = Files.list(s.dataDir)) {
            return files.count();
        }
    }

    @Test
    void contentAlreadyOnS3LeavesAFullDiskForADownloadLeastRecentlyUsedFirst() throws Exception {
        String prefix = "read" + PREFIXES.incrementAndGet();
        uploaded(prefix, 5, 3 * MIB);
        // the journal's 1 MiB and three files: the fourth finds no room
        S3Storage s = onDisk(prefix, "12m");
        for (int i = 0; i < 5; i++) {
            assertArrayEquals(content(i, 3 * MIB), s.read(p("/d/f" + i)), "f" + i);
            clock.advance(Duration.ofSeconds(1));
        }
        assertEquals(3, contentFiles(s), "f0 and f1 left for f3 and f4");
        assertNull(s.failing());
        long gets = s.requests().getOrDefault("get", 0L);
        assertArrayEquals(content(4, 3 * MIB), s.read(p("/d/f4")), "the latest stays");
        assertArrayEquals(content(0, 3 * MIB), s.read(p("/d/f0")), "what left is fetched again");
        assertEquals(gets + 1, s.requests().getOrDefault("get", 0L));
    }

    @Test
    void aLargeFileReadInRangesMakesRoomAsItComes() throws Exception {
        String prefix = "ranges" + PREFIXES.incrementAndGet();
        uploaded(prefix, 2, 4 * MIB);
        long part = Bucket.MIN_PART_BYTES;
        byte[] large = content(7, (int) (2 * part + 1));
        S3Storage other = store(temp.resolve(prefix + "-large"), prefix);
        other.write(p("/d/large"), large);
        other.flushAll();

        FuseSupport.requireRoot();
        Tmpfs disk = Tmpfs.mount(temp.resolve(prefix + "-disk"), "16m");
        open.add(disk);
        Bucket bucket = Bucket.connect(S3Spec.parse("s3://" + BUCKET + "/" + prefix), server.env());
        bucket.movedInParts(part, part);
        S3Storage s = S3Storage.open(S3Spec.parse("s3://" + BUCKET + "/" + prefix), bucket,
                S3Options.defaults(disk.path().resolve("cache"), server.env()).withClock(clock, false));
        open.add(s);
        s.read(p("/d/f0"));
        s.read(p("/d/f1"));
        clock.advance(Duration.ofSeconds(1));
        // 9 MiB held, 7 free: the ranges of 10 MiB come in as f0 and f1 leave
        try (FileHandle h = s.open(p("/d/large"), EnumSet.of(OpenFlag.READ), 0)) {
            ByteBuffer got = ByteBuffer.allocate(large.length);
            while (got.hasRemaining()) {
                int n = h.read(got, got.position());
                assertTrue(n > 0, "ended early at " + got.position());
            }
            assertArrayEquals(large, got.array());
        }
        assertNull(s.failing());
    }

    @Test
    void changesNotYetUploadedNeverLeaveAndAFullDiskIsSaid() throws Exception {
        String prefix = "dirty" + PREFIXES.incrementAndGet();
        uploaded(prefix, 1, 3 * MIB);
        S3Storage s = onDisk(prefix, "8m");
        s.write(p("/d/mine"), content(9, 5 * MIB)); // kept for an hour before it goes up

        // a read the cache has no room for is read from S3 without it (RangeReads), nothing leaving
        assertArrayEquals(content(0, 3 * MIB), s.read(p("/d/f0")));
        assertNull(s.failing(), "a read that went without the cache found no disk full");
        // a write needs the room
        IOException e = assertThrows(IOException.class, () -> s.write(p("/d/new"), content(10, 3 * MIB)));
        assertEquals(Linux.ENOSPC, Errors.errno(e), e.toString());
        String failing = s.failing();
        assertTrue(failing != null && failing.contains(s.dataDir.getParent().toString()) && failing.contains("is full")
                && failing.contains("5.0 MiB of changes not yet sent"), failing);
        assertTrue(s.state().contains("is full"), s.state());
        assertArrayEquals(content(9, 5 * MIB), s.read(p("/d/mine")), "what waits to go up stays");

        // once uploaded it may leave: the write-back's eviction pass makes the room wanted, and
        // status says the disk answers again
        s.flushAll();
        s.makeRoomWanted();
        assertNull(s.failing());
        assertTrue(s.state().contains(": answers;"), s.state());
        assertEquals(0, contentFiles(s), "mine left, uploaded");
        assertArrayEquals(content(0, 3 * MIB), s.read(p("/d/f0")));
        assertArrayEquals(content(9, 5 * MIB), s.read(p("/d/mine")), "fetched again, f0 leaving for it");
    }

    @Test
    void aWriteToAFullDiskMakesRoomFromContentAlreadyOnS3() throws Exception {
        S3Storage s = fullOfTwoFilesRead("write");
        byte[] mine = content(5, 2 * MIB);
        try (FileHandle h = s.open(p("/d/new"), EnumSet.of(OpenFlag.WRITE, OpenFlag.CREATE), 0644)) {
            for (int at = 0; at < mine.length; at += 64 << 10) {
                h.write(ByteBuffer.wrap(mine, at, 64 << 10), at);
            }
        }
        assertArrayEquals(mine, s.read(p("/d/new")));
        s.flushAll();
        assertEquals(0, s.pendingChanges());
        assertArrayEquals(content(0, 3 * MIB), s.read(p("/d/f0")));
    }

    @Test
    void aWholeWriteAndACopyToAFullDiskMakeRoomFromContentAlreadyOnS3() throws Exception {
        S3Storage s = fullOfTwoFilesRead("whole");
        byte[] mine = content(6, 2 * MIB);
        s.write(p("/d/whole"), mine); // chibi's write, the vfs:// commands': the store's own, no handle
        assertArrayEquals(mine, s.read(p("/d/whole")));
        s.flushAll();
        s.copy(p("/d/whole"), p("/d/copy"));
        assertArrayEquals(mine, s.read(p("/d/copy")));
    }

    /**
     * A store opened again on a cache disk something else filled: it makes room as a running one
     * does, and sends what it had not. It failed "No space left on device" at its start, naming
     * nothing, and left an empty journal.tmp (a tester's finding).
     */
    @Test
    void aStoreStartedOnAFullDiskMakesRoomAndSendsWhatItHadNot() throws Exception {
        String prefix = "start" + PREFIXES.incrementAndGet();
        uploaded(prefix, 2, 3 * MIB);
        FuseSupport.requireRoot();
        Tmpfs disk = Tmpfs.mount(temp.resolve(prefix + "-disk"), "8m");
        open.add(disk);
        Path cache = disk.path().resolve("cache");
        S3Storage s = store(cache, prefix);
        s.read(p("/d/f0"));
        s.read(p("/d/f1"));
        s.write(p("/d/mine"), content(7, 64 << 10)); // kept for an hour before it goes up
        s.crash();
        fill(disk.path().resolve("filler"));

        S3Storage again = store(cache, prefix);
        assertFalse(Files.exists(cache.resolve(S3Storage.JOURNAL_FILE + ".tmp")));
        assertArrayEquals(content(7, 64 << 10), again.read(p("/d/mine")));
        assertArrayEquals(content(1, 3 * MIB), again.read(p("/d/f1")));
        again.flushAll();
        assertEquals(0, again.pendingChanges());
    }

    /** S3 away, content already on S3 cannot leave (it could not be read again), and the full disk is said all the same. */
    @Test
    void aFullDiskWhileS3IsAwayIsSaid() throws Exception {
        S3Storage s = fullOfTwoFilesRead("away");
        server.stop();
        try {
            clock.advance(Duration.ofSeconds(5)); // past the listing's validity: the next list asks S3
            s.list(p("/d")); // finds it away; what was last seen stands
            IOException e = assertThrows(IOException.class, () -> s.write(p("/d/mine"), content(9, 4 * MIB)));
            assertEquals(Linux.ENOSPC, Errors.errno(e), e.toString());
            String failing = s.failing();
            assertTrue(failing != null && failing.contains("is full") && failing.contains("while S3 cannot be reached"),
                    String.valueOf(failing));
        } finally {
            server.start();
        }
    }

    /** Writes {@code file} until its disk has no room left. */
    private static void fill(Path file) throws IOException {
        byte[] block = new byte[64 << 10];
        try (java.io.OutputStream out = Files.newOutputStream(file)) {
            while (true) {
                out.write(block);
            }
        } catch (IOException full) {
            // the disk is full
        }
    }

    /** Read from S3 in ranges instead (S3LargerThanCacheDiskTest); until session 79 its read failed ENOSPC at once. */
    @Test
    void aFileLargerThanTheWholeDiskIsReadWithoutTheCacheAndTheCacheStays() throws Exception {
        String prefix = "larger" + PREFIXES.incrementAndGet();
        uploaded(prefix, 1, 3 * MIB);
        S3Storage other = store(temp.resolve(prefix + "-large"), prefix);
        other.write(p("/d/large"), content(8, 9 * MIB));
        other.flushAll();
        S3Storage s = onDisk(prefix, "8m");
        s.read(p("/d/f0"));

        assertArrayEquals(content(8, 9 * MIB), s.read(p("/d/large")));
        assertEquals(1, contentFiles(s), "nothing left the cache for it, nor went in");
        assertNull(s.failing(), "the disk is not full: that file is too large for it");
    }
}
