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
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A file larger than the whole cache disk (a tester's 30 MiB object under a 20 MiB tmpfs cache),
 * read from S3 in ranges into bounded memory instead of failing ENOSPC: whole and in random
 * ranges, with the right bytes, a sequential read costing a GET per chunk (its read-ahead), and no
 * more chunk buffers than the bound. Over a real S3 server, on a real tmpfs (root). Chunks of 1 MiB
 * and four buffers here, so that 24 MiB shows the bound.
 */
@Timeout(120)
class S3LargerThanCacheDiskTest {

    private static final String BUCKET = "largerthandisk";
    private static final AtomicInteger PREFIXES = new AtomicInteger();
    private static final int MIB = 1 << 20;
    private static final int CHUNK = MIB;
    private static final int BUFFERS = 4;
    /** What the kernel asks a FUSE file system for at a time. */
    private static final int KERNEL_READ = 128 << 10;

    @TempDir
    static Path temp;
    @RegisterExtension
    static final S3Server server = S3Server.perClass(BUCKET);

    private final MutableClock clock = new MutableClock(Instant.parse("2026-12-04T08:00:00Z"));
    @RegisterExtension
    final Closer open = new Closer();

    private static final VfsPath LARGE = VfsPath.of("/d/large");

    /** {@code size} bytes no two chunks of which are alike. */
    private static byte[] content(int size, long seed) {
        byte[] b = new byte[size];
        new Random(seed).nextBytes(b);
        return b;
    }

    private S3Storage store(Path cacheDir, String prefix) throws IOException {
        S3Options o = S3Options.defaults(cacheDir, server.env()).withClock(clock, false).withFlushAfter(Duration.ofHours(1));
        S3Storage s = S3Storage.open("s3://" + BUCKET + "/" + prefix, o);
        open.add(s);
        return s;
    }

    /** Another host's store on {@code prefix}, which has put {@code bytes} at /d/large. */
    private S3Storage uploaded(String prefix, byte[] bytes) throws IOException {
        S3Storage other = store(temp.resolve(prefix + "-other"), prefix);
        other.mkdir(VfsPath.of("/d"));
        other.write(LARGE, bytes);
        other.flushAll();
        return other;
    }

    /** A store on {@code prefix} whose cache is on an 8 MiB tmpfs, reading in chunks of {@link #CHUNK}. */
    private S3Storage onSmallDisk(String prefix) throws IOException {
        FuseSupport.requireRoot();
        Tmpfs disk = Tmpfs.mount(temp.resolve(prefix + "-disk"), "8m");
        open.add(disk);
        S3Storage s = store(disk.path().resolve("cache"), prefix);
        s.rangeReads.shape(CHUNK, BUFFERS);
        return s;
    }

    private static long gets(S3Storage s) {
        return s.requests().getOrDefault("get", 0L);
    }

    private static long contentFiles(S3Storage s) throws IOException {
        try (Stream<Path> files = Files.list(s.dataDir)) {
            return files.count();
        }
    }

    /** Reads all of {@code h} as the kernel does, {@link #KERNEL_READ} at a time. */
    private static byte[] readAll(FileHandle h, int size) throws IOException {
        ByteBuffer got = ByteBuffer.allocate(size);
        while (got.hasRemaining()) {
            ByteBuffer piece = got.slice(got.position(), Math.min(KERNEL_READ, got.remaining()));
            int n = h.read(piece, got.position());
            assertTrue(n > 0, "ended early at " + got.position());
            got.position(got.position() + n);
        }
        assertEquals(0, h.read(ByteBuffer.allocate(1), size), "nothing past the end");
        return got.array();
    }

    @Test
    void aFileLargerThanTheDiskReadsWholeWithAGetPerChunkInBoundedMemory() throws Exception {
        String prefix = "whole" + PREFIXES.incrementAndGet();
        byte[] large = content(24 * MIB + 123, 1);
        uploaded(prefix, large);
        S3Storage s = onSmallDisk(prefix);
        long before = gets(s);

        try (FileHandle h = s.open(LARGE, EnumSet.of(OpenFlag.READ), 0)) {
            assertEquals(large.length, h.size());
            assertArrayEquals(large, readAll(h, large.length));
        }
        long chunks = (large.length + CHUNK - 1) / CHUNK;
        long asked = gets(s) - before;
        assertTrue(asked >= chunks && asked <= chunks + 1, asked + " GETs for " + chunks + " chunks");
        assertTrue(s.rangeReads.peakBuffers() <= BUFFERS, s.rangeReads.peakBuffers() + " buffers");
        assertEquals(0, s.rangeReads.buffers(), "the memory goes back once no such file is open");
        assertEquals(0, contentFiles(s), "nothing of it in the cache");
        assertNull(s.failing(), "the disk is not full: that file is read without it");
    }

    @Test
    void twoOpensReadingAtOnceShareTheBoundAndReadRight() throws Exception {
        String prefix = "two" + PREFIXES.incrementAndGet();
        byte[] large = content(16 * MIB, 2);
        uploaded(prefix, large);
        S3Storage s = onSmallDisk(prefix);
        try (FileHandle a = s.open(LARGE, EnumSet.of(OpenFlag.READ), 0);
             FileHandle b = s.open(LARGE, EnumSet.of(OpenFlag.READ), 0)) {
            CompletableFuture<byte[]> first = CompletableFuture.supplyAsync(() -> {
                try {
                    return readAll(a, large.length);
                } catch (IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            });
            byte[] second = readAll(b, large.length);
            assertArrayEquals(large, first.join());
            assertArrayEquals(large, second);
        }
        assertTrue(s.rangeReads.peakBuffers() <= BUFFERS, s.rangeReads.peakBuffers() + " buffers");
        assertEquals(0, s.rangeReads.buffers());
    }

    /** Each of {@code handles} read whole at once, one thread each, as {@code cat} of several files does; then closed. */
    private static void readAllAtOnce(FileHandle[] handles, byte[][] contents) throws IOException {
        CompletableFuture<?>[] reads = new CompletableFuture<?>[handles.length];
        for (int i = 0; i < handles.length; i++) {
            FileHandle h = handles[i];
            byte[] want = contents[i];
            reads[i] = CompletableFuture.runAsync(() -> {
                try {
                    assertArrayEquals(want, readAll(h, want.length));
                } catch (IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            });
        }
        try {
            CompletableFuture.allOf(reads).join();
        } finally {
            for (FileHandle h : handles) {
                h.close();
            }
        }
    }

    /** Files {@code /d/f0..} of {@code count} × {@code size} bytes another host put; returns their contents. */
    private byte[][] uploadedFiles(String prefix, int count, int size) throws IOException {
        S3Storage other = store(temp.resolve(prefix + "-other"), prefix);
        other.mkdir(VfsPath.of("/d"));
        byte[][] contents = new byte[count][];
        for (int i = 0; i < count; i++) {
            contents[i] = content(size, 100 + i);
            other.write(VfsPath.of("/d/f" + i), contents[i]);
        }
        other.flushAll();
        return contents;
    }

    private FileHandle[] openAll(S3Storage s, int count) throws IOException {
        FileHandle[] handles = new FileHandle[count];
        for (int i = 0; i < count; i++) {
            handles[i] = s.open(VfsPath.of("/d/f" + i), EnumSet.of(OpenFlag.READ), 0);
        }
        return handles;
    }

    /**
     * A tester's six {@code cat}s of files larger than the disk, at once: by recency alone each
     * reader's chunks were taken by the others before they were read through, 858 GETs and 6.6 GiB
     * for 317 MiB, and a daemon after it read two files 30 times over. Now more readers than buffers
     * share them: no byte is asked twice, and two readers after still read a GET a chunk.
     */
    @Test
    void moreReadersThanBuffersAskNoByteTwice() throws Exception {
        String prefix = "many" + PREFIXES.incrementAndGet();
        int files = 6;
        int size = 9 * MIB + 4321; // each larger than the 8 MiB disk
        byte[][] contents = uploadedFiles(prefix, files, size);
        S3Storage s = onSmallDisk(prefix);

        readAllAtOnce(openAll(s, files), contents);
        long total = (long) files * size;
        long fetched = s.rangeReads.fetchedBytes();
        assertTrue(fetched <= total + 2L * files * CHUNK, fetched + " bytes asked for " + total);
        assertTrue(s.rangeReads.peakBuffers() <= BUFFERS, s.rangeReads.peakBuffers() + " buffers");
        assertEquals(0, s.rangeReads.buffers(), "the memory goes back once no such file is open");

        long before = gets(s);
        readAllAtOnce(openAll(s, 2), Arrays.copyOf(contents, 2));
        long chunks = 2L * ((size + CHUNK - 1) / CHUNK);
        long asked = gets(s) - before;
        assertTrue(asked <= chunks + 4, asked + " GETs for " + chunks + " chunks, two readers after six");
    }

    @Test
    void randomRangesReadRightEachAskingOnlyItsChunks() throws Exception {
        String prefix = "random" + PREFIXES.incrementAndGet();
        byte[] large = content(20 * MIB + 7, 3);
        uploaded(prefix, large);
        S3Storage s = onSmallDisk(prefix);
        try (FileHandle h = s.open(LARGE, EnumSet.of(OpenFlag.READ), 0)) {
            // dd skip=: each far from the last, so nothing is read ahead
            long[][] ranges = {
                {15L * MIB + 100, 4096},          // inside one chunk
                {3L * MIB - 10, 20},              // across two
                {9L * MIB, KERNEL_READ},          // a chunk's start
                {large.length - 50, 50},          // the end
                {large.length - 10, 4096},        // short: the file ends
            };
            long before = gets(s);
            long chunksAsked = 0;
            for (long[] r : ranges) {
                ByteBuffer got = ByteBuffer.allocate((int) r[1]);
                int n = h.read(got, r[0]);
                int want = (int) Math.min(r[1], large.length - r[0]);
                assertEquals(want, n, "at " + r[0]);
                assertArrayEquals(Arrays.copyOfRange(large, (int) r[0], (int) r[0] + want),
                        Arrays.copyOf(got.array(), n), "at " + r[0]);
                chunksAsked += (r[0] + want - 1) / CHUNK - r[0] / CHUNK + 1;
            }
            // the last two share the file's last two chunks, asked once
            assertEquals(chunksAsked - 2, gets(s) - before, "a GET per chunk read, none ahead");
            assertEquals(0, h.read(ByteBuffer.allocate(10), large.length + 5L), "past the end");
        }
    }

    /**
     * A file that fits the disk's size but not the room left by what cannot leave (an open file
     * here; a tester's: the journal's files, ext4's reserve for a daemon not root): read in ranges.
     * By the disk's size it was fetched, failed ENOSPC, and the store was called failing.
     */
    @Test
    void aFileThatFitsTheDiskButNotItsRoomIsReadInRanges() throws Exception {
        String prefix = "room" + PREFIXES.incrementAndGet();
        S3Storage other = store(temp.resolve(prefix + "-other"), prefix);
        other.mkdir(VfsPath.of("/d"));
        byte[] held = content(3 * MIB, 8);
        byte[] large = content(6 * MIB, 9);
        other.write(VfsPath.of("/d/held"), held);
        other.write(LARGE, large);
        other.flushAll();
        S3Storage s = onSmallDisk(prefix);
        try (FileHandle h = s.open(VfsPath.of("/d/held"), EnumSet.of(OpenFlag.READ), 0)) {
            assertArrayEquals(held, readAll(h, held.length)); // cached, and open: it cannot leave
            long before = gets(s);
            try (FileHandle l = s.open(LARGE, EnumSet.of(OpenFlag.READ), 0)) {
                assertArrayEquals(large, readAll(l, large.length));
            }
            assertEquals(6, gets(s) - before, "a GET a chunk, from S3 in ranges");
        }
        assertEquals(1, contentFiles(s), "only the open file in the cache");
        assertNull(s.failing(), "the disk was not found full: that file was read without it");
    }

    /**
     * Opens at once of files that each fit the cache's room but not together: those the downloads
     * under way leave no room for are read in ranges. Each was asked before the others' downloads
     * began, fetched, and failed ENOSPC with the store said failing.
     */
    @Test
    void opensAtOnceOfFilesThatFitOnlyAloneAllRead() throws Exception {
        String prefix = "together" + PREFIXES.incrementAndGet();
        int files = 6;
        int size = 3 * MIB + 99; // two fit the 8 MiB disk with the journal's room, not six
        byte[][] contents = uploadedFiles(prefix, files, size);
        S3Storage s = onSmallDisk(prefix);
        CompletableFuture<?>[] opens = new CompletableFuture<?>[files];
        java.util.concurrent.ExecutorService threads = java.util.concurrent.Executors.newFixedThreadPool(files);
        open.add(threads::shutdownNow);
        java.util.concurrent.CountDownLatch start = new java.util.concurrent.CountDownLatch(1);
        for (int i = 0; i < files; i++) {
            int at = i;
            opens[i] = CompletableFuture.runAsync(() -> {
                try {
                    start.await();
                    try (FileHandle h = s.open(VfsPath.of("/d/f" + at), EnumSet.of(OpenFlag.READ), 0)) {
                        assertArrayEquals(contents[at], readAll(h, size));
                    }
                } catch (IOException | InterruptedException e) {
                    throw new AssertionError("f" + at + ": " + e, e);
                }
            }, threads);
        }
        start.countDown();
        CompletableFuture.allOf(opens).join();
        assertNull(s.failing(), "nothing failed: what had no room went in ranges");
        assertTrue(contentFiles(s) <= 2, contentFiles(s) + " files in the cache");
    }

    @Test
    void chibisWholeReadOfAFileLargerThanTheDiskComesFromS3Too() throws Exception {
        String prefix = "chibi" + PREFIXES.incrementAndGet();
        byte[] large = content(10 * MIB, 4);
        uploaded(prefix, large);
        S3Storage s = onSmallDisk(prefix);
        assertArrayEquals(large, s.read(LARGE)); // chibifs cat, the vfs commands: the store's own read
        assertEquals(0, s.rangeReads.buffers());
    }

    @Test
    void aWriteToAFileLargerThanTheDiskFailsEnospcSayingWhy() throws Exception {
        String prefix = "write" + PREFIXES.incrementAndGet();
        uploaded(prefix, content(10 * MIB, 5));
        S3Storage s = onSmallDisk(prefix);
        try (FileHandle h = s.open(LARGE, EnumSet.of(OpenFlag.READ, OpenFlag.WRITE), 0)) {
            IOException e = assertThrows(IOException.class, () -> h.write(ByteBuffer.wrap(new byte[] {'x'}), 0));
            assertEquals(Linux.ENOSPC, Errors.errno(e), e.toString());
            assertTrue(e.getMessage().contains("larger than the disk of its cache directory")
                    && e.getMessage().contains("cannot be changed"), e.getMessage());
        }
        assertEquals(0, s.pendingChanges(), "nothing changed");
    }

    /**
     * SQLite opens read-write to read: a database larger than the cache disk failed ENOSPC at its
     * first read, the writer fetching. Its reads come in ranges until it writes, as a reader's do.
     */
    @Test
    void aReadWriteOpenOfAFileLargerThanTheDiskReadsInRangesUntilItWrites() throws Exception {
        String prefix = "rw" + PREFIXES.incrementAndGet();
        byte[] large = content(10 * MIB, 7);
        uploaded(prefix, large);
        S3Storage s = onSmallDisk(prefix);
        try (FileHandle h = s.open(LARGE, EnumSet.of(OpenFlag.READ, OpenFlag.WRITE), 0)) {
            assertEquals(large.length, h.size());
            assertArrayEquals(large, readAll(h, large.length));
            assertEquals(0, contentFiles(s), "nothing of it in the cache");
            IOException e = assertThrows(IOException.class, () -> h.write(ByteBuffer.wrap(new byte[] {'x'}), 0));
            assertEquals(Linux.ENOSPC, Errors.errno(e), "its write still fetches, and says why: " + e);
            ByteBuffer first = ByteBuffer.allocate(16);
            assertEquals(16, h.read(first, 0), "read on after the refused write");
            assertArrayEquals(Arrays.copyOf(large, 16), first.array());
        }
        assertEquals(0, s.rangeReads.buffers(), "the memory goes back at the close");
        assertEquals(0, s.pendingChanges(), "nothing changed");
        assertNull(s.failing());
    }

    @Test
    void aChunkOfAVersionReplacedOnS3SinceTheOpenIsStale() throws Exception {
        String prefix = "stale" + PREFIXES.incrementAndGet();
        byte[] large = content(12 * MIB, 6);
        S3Storage other = uploaded(prefix, large);
        S3Storage s = onSmallDisk(prefix);
        try (FileHandle h = s.open(LARGE, EnumSet.of(OpenFlag.READ), 0)) {
            ByteBuffer head = ByteBuffer.allocate(100);
            h.read(head, 0);
            assertArrayEquals(Arrays.copyOf(large, 100), head.array());
            other.write(LARGE, content(12 * MIB, 7));
            other.flushAll();
            IOException e = assertThrows(IOException.class, () -> h.read(ByteBuffer.allocate(100), 8L * MIB));
            assertEquals(Linux.ESTALE, Errors.errno(e), e.toString());
            ByteBuffer again = ByteBuffer.allocate(100);
            h.read(again, 0);
            assertArrayEquals(Arrays.copyOf(large, 100), again.array(), "what came of the version opened stays readable");
        }
    }
}
