package dev.chibifs.cache;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;

/**
 * A tool's output as {@code cache put} read it: in memory up to a limit, and past it in a
 * temporary file with no name (removed as soon as it is open, so a killed command leaves none), so
 * an output larger than the heap is held by a buffer and the disk. It can be read again from its
 * start as often as needed (the id's hash, the stub's counts, the store's write, a pass-through).
 */
public final class ToolOutput implements Closeable {

    /** How much of an output is held in memory; past it the output goes to a temporary file. */
    public static final int MEMORY_LIMIT = 4 << 20;

    private static final int BUFFER = 1 << 16;

    private final byte[] head;
    private final FileChannel spill;
    private final long size;
    private final IOException failure;

    private ToolOutput(byte[] head, FileChannel spill, long size, IOException failure) {
        this.head = head;
        this.spill = spill;
        this.size = size;
        this.failure = failure;
    }

    /** An output held whole in memory. */
    public static ToolOutput of(byte[] output) {
        return new ToolOutput(output, null, output.length, null);
    }

    /**
     * Reads {@code in} to its end, holding at most {@code memoryLimit} bytes in memory. Where the
     * temporary file cannot be made or written, reading stops there: {@link #failure()} says why,
     * this holds what was read, and the rest is still in {@code in}. A failure to read {@code in}
     * itself is thrown.
     */
    public static ToolOutput read(InputStream in, int memoryLimit) throws IOException {
        return read(in, memoryLimit, ToolOutput::unnamedTemporary);
    }

    /** Makes the temporary file an output past the memory limit goes to. */
    @FunctionalInterface
    interface Temporaries {
        FileChannel open() throws IOException;
    }

    static ToolOutput read(InputStream in, int memoryLimit, Temporaries temporaries) throws IOException {
        byte[] head = in.readNBytes(memoryLimit);
        if (head.length < memoryLimit) {
            return of(head);
        }
        byte[] buffer = new byte[BUFFER];
        // exactly the limit is an output that fits: only a byte past it needs the temporary file
        int n = in.read(buffer);
        if (n < 0) {
            return of(head);
        }
        FileChannel spill;
        try {
            spill = temporaries.open();
        } catch (IOException e) {
            return new ToolOutput(head, null, head.length, new Unkept(e, Arrays.copyOf(buffer, n)));
        }
        long size;
        try {
            size = writeFully(spill, ByteBuffer.wrap(head), 0);
        } catch (IOException e) {
            spill.close();
            return new ToolOutput(head, null, head.length, new Unkept(e, Arrays.copyOf(buffer, n)));
        }
        do {
            try {
                size += writeFully(spill, ByteBuffer.wrap(buffer, 0, n), size);
            } catch (IOException e) {
                // read and not kept: it must not be lost, so it is handed out after what was kept
                return new ToolOutput(head, spill, size, new Unkept(e, Arrays.copyOf(buffer, n)));
            }
        } while ((n = in.read(buffer)) >= 0);
        return new ToolOutput(head, spill, size, null);
    }

    private static FileChannel unnamedTemporary() throws IOException {
        Path file = Files.createTempFile("chibifs-cache-put-", ".tmp");
        try {
            return FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE);
        } finally {
            Files.deleteIfExists(file);
        }
    }

    private static long writeFully(FileChannel to, ByteBuffer b, long at) throws IOException {
        long n = 0;
        while (b.hasRemaining()) {
            n += to.write(b, at + n);
        }
        return n;
    }

    /** The bytes of the output. */
    public long size() {
        return size;
    }

    /** True when the output is in memory whole ({@link #bytes()}). */
    public boolean inMemory() {
        return spill == null;
    }

    /** The whole output, when {@link #inMemory()}. */
    public byte[] bytes() {
        if (spill != null) {
            throw new IllegalStateException("the output is in a temporary file");
        }
        return head;
    }

    /** The first bytes of the output, all of it when {@link #inMemory()}, else the first memory limit's worth. */
    public byte[] head() {
        return head;
    }

    /** The output from its start (then, where reading stopped short, what was read but not kept). */
    public InputStream open() {
        InputStream kept = spill == null ? new ByteArrayInputStream(head) : new java.io.BufferedInputStream(
                Channels.newInputStream(new PositionedReads(spill, size)), BUFFER);
        return failure instanceof Unkept u ? new java.io.SequenceInputStream(kept, new ByteArrayInputStream(u.piece)) : kept;
    }

    /** Why reading stopped before the input's end (the temporary file could not be made or written), or null. */
    public IOException failure() {
        return failure instanceof Unkept u ? (IOException) u.getCause() : failure;
    }

    @Override
    public void close() throws IOException {
        if (spill != null) {
            spill.close();
        }
    }

    /** A write to the temporary file failed after {@code piece} was read: it is part of the output all the same. */
    private static final class Unkept extends IOException {
        private static final long serialVersionUID = 1L;
        private final transient byte[] piece;

        Unkept(IOException cause, byte[] piece) {
            super(cause.getMessage(), cause);
            this.piece = piece;
        }
    }

    /** Reads {@code size} bytes of a channel from its start, by position, so several readers may take turns. */
    private static final class PositionedReads implements java.nio.channels.ReadableByteChannel {
        private final FileChannel file;
        private final long size;
        private long at;

        PositionedReads(FileChannel file, long size) {
            this.file = file;
            this.size = size;
        }

        @Override
        public int read(ByteBuffer dst) throws IOException {
            if (at >= size) {
                return -1;
            }
            if (dst.remaining() > size - at) {
                dst.limit(dst.position() + (int) (size - at));
            }
            int n = file.read(dst, at);
            if (n > 0) {
                at += n;
            }
            return n;
        }

        @Override
        public boolean isOpen() {
            return file.isOpen();
        }

        @Override
        public void close() {
            // the output stays readable until ToolOutput itself is closed
        }
    }
}
