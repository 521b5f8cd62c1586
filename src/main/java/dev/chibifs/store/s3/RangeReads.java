package dev.chibifs.store.s3;

import dev.chibifs.sys.ErrnoException;
import dev.chibifs.sys.Linux;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/**
 * Files larger than the whole cache disk, read from S3 without the cache: in chunks of
 * {@link #CHUNK_BYTES} held in memory, each one ranged GET of the version the open saw (If-Match
 * its ETag, where S3 lists one), shared by every open of that version, and let go least recently used first. The
 * cache could never hold such a file, so its read failed ENOSPC at once (a 30 MiB object under a
 * 20 MiB tmpfs cache), where rclone mount and mountpoint-s3 read it so.
 *
 * <p>Memory is bounded store-wide: at most {@link #SLOTS} chunk buffers, reused (no 8 MiB array
 * per GET for the collector), and dropped once no such file is open. A read reading on from where
 * the last one ended (cat, sha256sum, cp) has the next chunks asked in the background, where
 * buffers are free, once it has read {@link #SEQUENTIAL_BEFORE_AHEAD}: the kernel's reads of 128 KiB
 * each cost no GET of their own, and a random read ({@code dd skip=}, a zip's directory) costs the
 * one chunk it falls in, not a read-ahead it would never use.
 *
 * <p>Several readers share the buffers without taking from one another what they are reading: the
 * chunk a reader reads in ({@link Reader#current}) is never let go for another's, and the chunks
 * read ahead shrink with the readers, from {@link #READ_AHEAD_CHUNKS} for one to none once each
 * has only its own. By recency alone six readers of six buffers took one another's chunks before
 * they were read through and read each one 20-40 times (a tester: 6 {@code cat}s of 317 MiB in
 * all, 858 GETs, 6.6 GiB). A reader finding every buffer held by others reads just the range the
 * kernel asked, straight from S3 (a GET per read, but no byte twice), until one is let go.
 *
 * <p>Locking: this object's monitor guards the chunks, the buffers and the counts; it is never held
 * over a request to S3 or a copy out of a chunk (a chunk being copied from is pinned instead, so
 * its buffer is not reused under the reader).
 */
final class RangeReads {

    static final int CHUNK_BYTES = 8 << 20;
    /**
     * 48 MiB: one file read with its read-ahead and the chunk behind it, or two side by side with
     * less ahead. 64 MiB (two ahead) read 200 MiB no faster over loopback, the daemon's RSS 180-203
     * MiB against 154-166.
     */
    static final int SLOTS = 6;
    private static final int READ_AHEAD_CHUNKS = 3;
    private static final long SEQUENTIAL_BEFORE_AHEAD = 1 << 20;
    /**
     * How far a read may begin from where the last one ended and still read on from it: the kernel
     * sends its read-ahead as several READs at once, which workers answer in any order.
     */
    private static final long SEQUENTIAL_SLACK = 4 << 20;

    private final Bucket bucket;
    private int chunkBytes = CHUNK_BYTES;
    private int slots = SLOTS;

    /** The chunks held or coming, least recently used first. */
    private final LinkedHashMap<ChunkId, Chunk> chunks = new LinkedHashMap<>(16, 0.75f, true);
    /** Buffers no chunk holds, kept while a reader is open. */
    private final ArrayDeque<byte[]> free = new ArrayDeque<>();
    /** Buffers in existence: free, or a chunk's. */
    private int buffers;
    private int peakBuffers;
    private int readersOpen;
    /** Readers that have read and are open: each holds its {@link Reader#current} chunk. */
    private final Set<Reader> reading = new HashSet<>();
    /** Bytes asked of S3, in chunks and in ranges read straight (tests). */
    private long fetchedBytes;

    RangeReads(Bucket bucket) {
        this.bucket = bucket;
    }

    /** Smaller chunks and fewer buffers, so that a test sees the bound with small files; before any read. */
    synchronized void shape(int chunkBytes, int slots) {
        if (chunkBytes <= 0 || slots < 2) {
            throw new IllegalArgumentException("chunks of " + chunkBytes + " bytes, " + slots
                    + " buffers: a chunk needs bytes, and a read two buffers (it may span two chunks)");
        }
        this.chunkBytes = chunkBytes;
        this.slots = slots;
    }

    /** The most chunk buffers that were in memory at once (tests). */
    synchronized int peakBuffers() {
        return peakBuffers;
    }

    /** The chunk buffers in memory now (tests): none once no reader is open. */
    synchronized int buffers() {
        return buffers;
    }

    /** The bytes asked of S3 so far (tests): a sequential read asks each byte once. */
    synchronized long fetchedBytes() {
        return fetchedBytes;
    }

    /** A reader of version {@code etag} of object {@code key}, {@code size} bytes; closed once. */
    Reader open(String key, String etag, long size) {
        synchronized (this) {
            readersOpen++;
        }
        return new Reader(key, etag, size);
    }

    /** Chunk {@code index} of version {@code etag} (null: S3 listed none) of {@code key}, {@code size} bytes. */
    private record ChunkId(String key, String etag, long size, long index) {
    }

    /**
     * One chunk: its buffer, filled once {@link #filled} completes; {@link #pins} readers copy out of
     * it; {@link #consumed} once its last byte was read (a reader reading on is past it).
     */
    private static final class Chunk {
        final byte[] buffer;
        final int length;
        final CompletableFuture<Void> filled = new CompletableFuture<>();
        int pins;
        boolean consumed;

        Chunk(byte[] buffer, int length) {
            this.buffer = buffer;
            this.length = length;
        }
    }

    final class Reader {
        private final String key;
        private final String etag;
        private final long size;
        /** Where the last read ended, and how far reads have gone on from one another since; guarded by the reader. */
        private long lastEnd;
        private long sequential;
        private boolean closed;
        /** The chunk this reader reads in, which no other's may take; null before its first read. Guarded by RangeReads. */
        private ChunkId current;

        private Reader(String key, String etag, long size) {
            this.key = key;
            this.etag = etag;
            this.size = size;
        }

        long size() {
            return size;
        }

        /** Reads into {@code dst} from {@code position} until it is full or the object ends; returns the bytes read. */
        int read(ByteBuffer dst, long position) throws IOException {
            long end = Math.min(size, position + dst.remaining());
            int total = 0;
            for (long at = position; at < end; ) {
                long index = at / chunkBytes;
                int n = copy(new ChunkId(key, etag, size, index), (int) (at - index * chunkBytes), dst,
                        (int) Math.min(end - at, Integer.MAX_VALUE));
                at += n;
                total += n;
            }
            if (total > 0 && readsOn(position, position + total)) {
                long next = (position + total - 1) / chunkBytes + 1;
                for (long i = next; i < next + aheadChunks() && i * chunkBytes < size; i++) {
                    ahead(new ChunkId(key, etag, size, i));
                }
            }
            return total;
        }

        /** How many chunks each reader may read ahead: what is left once each reader has its own, shared. */
        private int aheadChunks() {
            synchronized (RangeReads.this) {
                int readers = Math.max(1, reading.size());
                return Math.max(0, Math.min(READ_AHEAD_CHUNKS, (slots - readers) / readers));
            }
        }

        /** Whether this read, from {@code from} to {@code to}, reads on from the last ones far enough to read ahead. */
        private synchronized boolean readsOn(long from, long to) {
            boolean on = Math.abs(from - lastEnd) <= SEQUENTIAL_SLACK;
            sequential = on ? sequential + (to - from) : to - from;
            lastEnd = on ? Math.max(lastEnd, to) : to;
            return sequential >= SEQUENTIAL_BEFORE_AHEAD && !closed;
        }

        /** Copies up to {@code most} bytes of chunk {@code id} from {@code offset} into {@code dst}; returns how many (at least one). */
        private int copy(ChunkId id, int offset, ByteBuffer dst, int most) throws IOException {
            for (;;) {
                Chunk c = demand(id);
                if (c == null) {
                    return readStraight(id, offset, dst, most);
                }
                try {
                    c.filled.join();
                } catch (CompletionException e) {
                    throw failure(e.getCause());
                }
                synchronized (RangeReads.this) {
                    if (chunks.get(id) != c) {
                        continue; // let go meanwhile, its buffer taken by another: asked again
                    }
                    c.pins++;
                }
                try {
                    int n = Math.min(Math.min(most, dst.remaining()), c.length - offset);
                    if (n <= 0) {
                        // the object ends before the size it was opened with said: S3 is another version
                        throw ErrnoException.of(Linux.ESTALE, key, "shorter on S3 than when it was opened");
                    }
                    dst.put(c.buffer, offset, n);
                    if (offset + n == c.length) {
                        c.consumed = true;
                    }
                    return n;
                } finally {
                    synchronized (RangeReads.this) {
                        c.pins--;
                        RangeReads.this.notifyAll();
                    }
                }
            }
        }

        /**
         * Chunk {@code id}, now this reader's current: held, coming, or asked now in this thread
         * (waiting for a buffer where one is about to be free); null where every buffer is another
         * reader's current chunk.
         */
        private Chunk demand(ChunkId id) throws IOException {
            Chunk c;
            synchronized (RangeReads.this) {
                if (!closed) {
                    current = id;
                    reading.add(this);
                }
                c = chunks.get(id);
                if (c != null) {
                    return c;
                }
                byte[] buffer = takeBuffer();
                if (buffer == null) {
                    return null;
                }
                c = new Chunk(buffer, chunkLength(id));
                chunks.put(id, c);
            }
            fill(id, c);
            return c;
        }

        /** Up to {@code most} bytes of chunk {@code id} from {@code offset}, asked of S3 alone: no buffer is to be had. */
        private int readStraight(ChunkId id, int offset, ByteBuffer dst, int most) throws IOException {
            int n = Math.min(Math.min(most, dst.remaining()), chunkLength(id) - offset);
            if (n <= 0) {
                throw ErrnoException.of(Linux.ESTALE, key, "shorter on S3 than when it was opened");
            }
            byte[] bytes = new byte[n]; // the kernel's read, 128 KiB to 1 MiB, while others read chunks
            synchronized (RangeReads.this) {
                fetchedBytes += n;
            }
            sizeIs(id, bucket.getInto(key, etag, id.index() * chunkBytes + offset, n, bytes));
            dst.put(bytes);
            return n;
        }

        /** Chunk {@code id} asked in the background, where it is neither held nor coming and a buffer is free. */
        private void ahead(ChunkId id) {
            Chunk c;
            synchronized (RangeReads.this) {
                if (chunks.containsKey(id)) {
                    return;
                }
                byte[] buffer = bufferAhead();
                if (buffer == null) {
                    return; // all in use: the reader asks it itself when it gets there
                }
                c = new Chunk(buffer, chunkLength(id));
                chunks.put(id, c);
            }
            Chunk chunk = c;
            if (!bucket.readAhead(() -> fill(id, chunk))) {
                // the store closing: its reader asks it itself, and fails as the store says
                synchronized (RangeReads.this) {
                    letGo(id, chunk);
                }
                chunk.filled.completeExceptionally(new IOException("S3 get " + bucket.uriOf(id.key()) + ": the store is closing"));
            }
        }

        private int chunkLength(ChunkId id) {
            return (int) Math.min(chunkBytes, size - id.index() * chunkBytes);
        }

        void close() {
            synchronized (RangeReads.this) {
                if (closed) {
                    return;
                }
                closed = true;
                readersOpen--;
                reading.remove(this);
                current = null;
                RangeReads.this.notifyAll(); // its chunk may go to a reader waiting
                if (readersOpen == 0) {
                    // nothing reads so any more: the memory goes back (those still coming go as they come)
                    for (Iterator<Chunk> it = chunks.values().iterator(); it.hasNext(); ) {
                        Chunk c = it.next();
                        if (c.filled.isDone() && c.pins == 0) {
                            it.remove();
                            buffers--;
                        }
                    }
                    buffers -= free.size();
                    free.clear();
                }
            }
        }
    }

    /** GETs chunk {@code id} into {@code c}; a failure completes it so, and it is let go (the next read asks again). */
    private void fill(ChunkId id, Chunk c) {
        try {
            synchronized (this) {
                fetchedBytes += c.length;
            }
            sizeIs(id, bucket.getInto(id.key(), id.etag(), id.index() * chunkBytes, c.length, c.buffer));
            c.filled.complete(null);
            synchronized (this) {
                if (readersOpen == 0) {
                    letGo(id, c);
                }
                notifyAll(); // a read waiting for a buffer may take this one's once it is read
            }
        } catch (IOException | RuntimeException e) {
            synchronized (this) {
                letGo(id, c);
            }
            c.filled.completeExceptionally(e);
        }
    }

    /** ESTALE where S3's answer {@code h} is of another size than the version opened, where no ETag pinned it. */
    private static void sizeIs(ChunkId id, Bucket.Head h) throws IOException {
        if (h.size() != id.size()) {
            throw ErrnoException.of(Linux.ESTALE, id.key(), "now " + h.size() + " bytes on S3, " + id.size()
                    + " when it was opened");
        }
    }

    /**
     * Drops chunk {@code c} of {@code id}, its buffer free again (or gone, no reader being open),
     * unless it was dropped already: a chunk read in after the last reader closed may meet the close
     * letting it go, and its buffer must be counted out once. Under the monitor.
     */
    private void letGo(ChunkId id, Chunk c) {
        if (chunks.get(id) != c) {
            return;
        }
        chunks.remove(id);
        if (readersOpen > 0) {
            free.push(c.buffer);
        } else {
            buffers--;
        }
        notifyAll();
    }

    /** A free buffer, or a new one while fewer than {@link #slots} exist; null where neither. Under the monitor. */
    private byte[] spareBuffer() {
        while (!free.isEmpty()) {
            byte[] b = free.pop();
            if (b.length == chunkBytes) {
                return b;
            }
            buffers--; // of another shape (tests)
        }
        if (buffers < slots) {
            buffers++;
            peakBuffers = Math.max(peakBuffers, buffers);
            return new byte[chunkBytes];
        }
        return null;
    }

    /**
     * A buffer to read ahead into: a spare one, else that of the least recently used chunk read to
     * its end that no reader reads in; null where none. By recency alone it took the buffer of a
     * chunk read ahead and not read yet (the chunk being read is the most recently used), and a
     * sequential read asked twice as many GETs as chunks. Under the monitor.
     */
    private byte[] bufferAhead() {
        byte[] b = spareBuffer();
        return b != null ? b : evict(true);
    }

    /**
     * A buffer for a chunk a reader needs now: a spare one, else that of the least recently used
     * chunk no reader reads in (by recency alone: a random reader's last chunk read to its end is
     * as likely read again as any). Where every chunk in is
     * some reader's, null: the reader reads its range straight. Where some chunk is coming or being
     * copied from, it waits for it (within S3's timeouts). Under the monitor.
     */
    private byte[] takeBuffer() throws IOException {
        for (;;) {
            byte[] b = spareBuffer();
            if (b == null) {
                b = evict(false);
            }
            if (b != null || allHeld()) {
                return b;
            }
            try {
                wait();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new InterruptedIOException("a read from S3 interrupted while it waited for memory");
            }
        }
    }

    /** Whether a reader reads in chunk {@code id}. Under the monitor. */
    private boolean held(ChunkId id) {
        for (Reader r : reading) {
            if (id.equals(r.current)) {
                return true;
            }
        }
        return false;
    }

    /** Whether every chunk in memory or coming is some reader's current one: none will be let go soon. Under the monitor. */
    private boolean allHeld() {
        for (ChunkId id : chunks.keySet()) {
            if (!held(id)) {
                return false;
            }
        }
        return true;
    }

    /**
     * The buffer of the least recently used chunk in, not being copied from and no reader's current
     * ({@code consumed}: and read to its end), or null. Under the monitor.
     */
    private byte[] evict(boolean consumed) {
        for (Iterator<Map.Entry<ChunkId, Chunk>> it = chunks.entrySet().iterator(); it.hasNext(); ) {
            Map.Entry<ChunkId, Chunk> e = it.next();
            Chunk c = e.getValue();
            if (c.filled.isDone() && c.pins == 0 && (c.consumed || !consumed) && !held(e.getKey())) {
                it.remove();
                return c.buffer;
            }
        }
        return null;
    }

    private static IOException failure(Throwable e) {
        if (e instanceof IOException io) {
            return io;
        }
        if (e instanceof UncheckedIOException u) {
            return u.getCause();
        }
        return new IOException(String.valueOf(e), e);
    }
}
