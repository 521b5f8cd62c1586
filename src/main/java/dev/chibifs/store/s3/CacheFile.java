package dev.chibifs.store.s3;

import dev.chibifs.sys.Linux;
import dev.chibifs.sys.Syscalls;

import java.io.Closeable;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.file.Path;

/**
 * A file of the cache directory, through a descriptor of our own: a failure keeps its errno. The
 * JDK's FileChannel reports a full cache disk as a plain IOException, which reached the caller as
 * EIO; this says ENOSPC, as the disk did. The caller closes it once, after its last use (a
 * descriptor number is reused at once by the next open).
 */
final class CacheFile implements Closeable {

    private static final int FILE_MODE = 0644;
    private static final int COPY_CHUNK = 1 << 16;

    private final int fd;
    private final String name;

    private CacheFile(int fd, String name) {
        this.fd = fd;
        this.name = name;
    }

    static CacheFile openForReading(Path file) throws IOException {
        return open(file, Linux.O_RDONLY);
    }

    static CacheFile openForWriting(Path file) throws IOException {
        return open(file, Linux.O_RDWR);
    }

    /** A new file, which must not exist yet. */
    static CacheFile create(Path file) throws IOException {
        return open(file, Linux.O_RDWR | Linux.O_CREAT | Linux.O_EXCL);
    }

    /** A file as it is, or made empty if missing. */
    static CacheFile openOrCreate(Path file) throws IOException {
        return open(file, Linux.O_RDWR | Linux.O_CREAT);
    }

    /** A file made empty, or made. */
    static CacheFile replace(Path file) throws IOException {
        return open(file, Linux.O_RDWR | Linux.O_CREAT | Linux.O_TRUNC);
    }

    private static CacheFile open(Path file, int flags) throws IOException {
        String name = file.toString();
        return new CacheFile(Syscalls.openat(Linux.AT_FDCWD, name, flags, FILE_MODE, name), name);
    }

    /** This same file opened again to read, whatever names it has now (none, once removed from the cache). */
    CacheFile reopenForReading() throws IOException {
        return new CacheFile(Syscalls.reopen(fd, Linux.O_RDONLY, name), name);
    }

    /** Reads into {@code dst} from {@code position} until it is full or the file ends; returns the bytes read. */
    int read(ByteBuffer dst, long position) throws IOException {
        int total = 0;
        while (dst.hasRemaining()) {
            int n = Syscalls.pread(fd, dst, position + total);
            if (n <= 0) {
                break;
            }
            total += n;
        }
        return total;
    }

    /**
     * The {@code length} bytes from {@code offset}, as a stream of their own (positional reads: several
     * streams of one file read side by side); closing it leaves this file open. A file shorter than
     * that ends the stream early, and the upload reading it fails on the length it promised.
     */
    InputStream range(long offset, long length) {
        return new InputStream() {
            private long at = offset;
            private final long end = offset + length;

            @Override
            public int read() throws IOException {
                byte[] one = new byte[1];
                return read(one, 0, 1) == 1 ? one[0] & 0xff : -1;
            }

            @Override
            public int read(byte[] b, int off, int len) throws IOException {
                if (len == 0) {
                    return 0;
                }
                int want = (int) Math.min(len, end - at);
                if (want <= 0) {
                    return -1;
                }
                int n = CacheFile.this.read(ByteBuffer.wrap(b, off, want), at);
                if (n <= 0) {
                    return -1;
                }
                at += n;
                return n;
            }
        };
    }

    /** Feeds {@code digest} the {@code length} bytes from {@code offset}. */
    void digest(java.security.MessageDigest digest, long offset, long length) throws IOException {
        ByteBuffer buf = ByteBuffer.allocate(COPY_CHUNK);
        for (long at = offset; at < offset + length; ) {
            buf.clear().limit((int) Math.min(COPY_CHUNK, offset + length - at));
            int n = read(buf, at);
            if (n <= 0) {
                throw new EOFException(name + ": ends at " + at + ", before " + (offset + length));
            }
            digest.update(buf.flip());
            at += n;
        }
    }

    /** Whether the first {@code length} bytes of this file and of {@code other} are the same. */
    boolean samePrefix(CacheFile other, long length) throws IOException {
        ByteBuffer mine = ByteBuffer.allocate(COPY_CHUNK);
        ByteBuffer theirs = ByteBuffer.allocate(COPY_CHUNK);
        for (long at = 0; at < length; at += mine.limit()) {
            int want = (int) Math.min(COPY_CHUNK, length - at);
            mine.clear().limit(want);
            theirs.clear().limit(want);
            if (read(mine, at) != want || other.read(theirs, at) != want || !mine.flip().equals(theirs.flip())) {
                return false;
            }
        }
        return true;
    }

    /** Writes all of {@code src} at {@code position}; returns how many bytes that was. */
    int write(ByteBuffer src, long position) throws IOException {
        int n = src.remaining();
        Syscalls.pwriteFully(fd, src, position);
        return n;
    }

    /**
     * Writes nothing at {@code position}: throws where the file system refuses every write (ext4
     * shut down, as a dying disk leaves it: EIO), which a write of nothing tells at the cost of one
     * system call, changing nothing.
     */
    void writesAnswer(long position) throws IOException {
        Syscalls.pwrite(fd, NOTHING, position);
    }

    private static final ByteBuffer NOTHING = ByteBuffer.allocateDirect(0);

    /** Appends everything {@code in} gives to this (new, empty) file; returns how many bytes that was. */
    long writeAll(InputStream in) throws IOException {
        return writeAll(in, 0);
    }

    /** Writes everything {@code in} gives from {@code position} on; returns how many bytes that was. */
    long writeAll(InputStream in, long position) throws IOException {
        byte[] chunk = new byte[COPY_CHUNK];
        ByteBuffer buf = ByteBuffer.wrap(chunk);
        long at = position;
        for (int n; (n = in.read(chunk)) != -1; ) {
            at += write(buf.clear().limit(n), at);
        }
        return at - position;
    }

    /** Allocates {@code length} bytes from {@code offset} without growing the file (FALLOC_FL_KEEP_SIZE). */
    void reserve(long offset, long length) throws IOException {
        Syscalls.fallocate(fd, Linux.FALLOC_FL_KEEP_SIZE, offset, length);
    }

    long size() throws IOException {
        return Syscalls.stat(fd, null, name).size();
    }

    /** Shrinks, or grows with a hole. */
    void truncate(long size) throws IOException {
        Syscalls.ftruncate(fd, size);
    }

    void force(boolean metadata) throws IOException {
        Syscalls.fsync(fd, metadata);
    }

    /** Copies all of {@code from} into this (new, empty) file. */
    void copyFrom(CacheFile from) throws IOException {
        Syscalls.copy(from.fd, fd, from.size());
    }

    @Override
    public void close() {
        Syscalls.close(fd);
    }
}
