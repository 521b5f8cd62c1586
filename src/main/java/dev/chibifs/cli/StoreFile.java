package dev.chibifs.cli;

import dev.chibifs.store.FileHandle;

import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.util.Arrays;

/**
 * A file of the store read in chunks through one open handle, so cat, grep, head, tail and lines
 * take the same memory for a file of any size (a whole-file read held a 100 MiB file two to six
 * times over). The handle stays on the file it opened: a file replaced meanwhile (a write renames
 * a new one over it) is read as it was.
 */
final class StoreFile implements Closeable {

    /** How much is read at a time. */
    static final int CHUNK = 64 * 1024;

    /** grep's test for a binary file: a NUL in this many first bytes. */
    static final int BINARY_PROBE = 8192;

    /** A line: bytes {@code start..end} (exclusive), then a {@code \n} when {@code newline}. */
    record Line(long start, long end, boolean newline) {

        /** Where the next line starts. */
        long next() {
            return newline ? end + 1 : end;
        }
    }

    private final FileHandle handle;
    private final byte[] chunk = new byte[CHUNK];
    // the file's bytes chunkAt..chunkAt+chunkLength are in chunk
    private long chunkAt;
    private int chunkLength;

    StoreFile(FileHandle handle) {
        this.handle = handle;
    }

    /** Reads up to {@code length} bytes at {@code position} into {@code into}; fewer only where the file ends. */
    int read(long position, byte[] into, int offset, int length) throws IOException {
        ByteBuffer b = ByteBuffer.wrap(into, offset, length);
        while (b.hasRemaining()) {
            int n = handle.read(b, position + b.position() - offset);
            if (n <= 0) {
                break;
            }
        }
        return b.position() - offset;
    }

    /** Copies bytes {@code from..to} (exclusive; to the end of the file when it is shorter) to {@code out}. */
    void copy(long from, long to, OutputStream out) throws IOException {
        for (long at = from; at < to; ) {
            int n = read(at, chunk, 0, (int) Math.min(CHUNK, to - at));
            chunkLength = 0; // chunk now holds other bytes
            if (n == 0) {
                return;
            }
            out.write(chunk, 0, n);
            at += n;
        }
    }

    /** True when the file starts as a binary file does (a NUL in its first {@link #BINARY_PROBE} bytes). */
    boolean binary() throws IOException {
        byte[] probe = new byte[BINARY_PROBE];
        int n = read(0, probe, 0, probe.length);
        for (int i = 0; i < n; i++) {
            if (probe[i] == 0) {
                return true;
            }
        }
        return false;
    }

    /** The line that starts at {@code position}, or null at the end of the file. */
    Line line(long position) throws IOException {
        for (long at = position; ; ) {
            if (at < chunkAt || at >= chunkAt + chunkLength) {
                chunkAt = at;
                chunkLength = read(at, chunk, 0, CHUNK);
                if (chunkLength == 0) {
                    return at == position ? null : new Line(position, at, false);
                }
            }
            int from = (int) (at - chunkAt);
            for (int i = from; i < chunkLength; i++) {
                if (chunk[i] == '\n') {
                    return new Line(position, chunkAt + i, true);
                }
            }
            at = chunkAt + chunkLength;
        }
    }

    /** The bytes of {@code line}, without its newline, in an array of their size. */
    byte[] bytes(Line line) throws IOException {
        long size = line.end() - line.start();
        if (size > Integer.MAX_VALUE - 16) {
            throw new IOException("line too long: " + size + " bytes (at most " + (Integer.MAX_VALUE - 16) + ")");
        }
        if (line.start() >= chunkAt && line.end() <= chunkAt + chunkLength) {
            int from = (int) (line.start() - chunkAt);
            return Arrays.copyOfRange(chunk, from, from + (int) size);
        }
        byte[] out = new byte[(int) size];
        int n = read(line.start(), out, 0, out.length);
        return n == out.length ? out : Arrays.copyOf(out, n);
    }

    /** The number of lines from {@code position} to the end; a last line without a newline counts. */
    int count(long position) throws IOException {
        int n = 0;
        for (Line l = line(position); l != null; l = line(l.next())) {
            n++;
        }
        return n;
    }

    @Override
    public void close() throws IOException {
        handle.close();
    }

    /** Bytes {@code from..to} (exclusive; to the end of the file when it is shorter) as a stream. */
    Stream stream(long from, long to) {
        return new Stream(from, to);
    }

    /** A stream of the file's bytes that knows where it is. */
    final class Stream extends InputStream {
        private long at;
        private final long to;

        private Stream(long from, long to) {
            this.at = from;
            this.to = to;
        }

        /** Where the next byte comes from: past the last byte read. */
        long position() {
            return at;
        }

        @Override
        public int read() throws IOException {
            byte[] one = new byte[1];
            return read(one, 0, 1) <= 0 ? -1 : one[0] & 0xff;
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            if (len == 0) {
                return 0;
            }
            int n = StoreFile.this.read(at, b, off, (int) Math.min(len, to - at));
            if (n <= 0) {
                return -1;
            }
            at += n;
            return n;
        }
    }
}
