package dev.chibifs.fuse;

import dev.chibifs.sys.Linux;
import jnr.ffi.LibraryLoader;
import jnr.ffi.Platform;
import jnr.ffi.Pointer;
import jnr.ffi.Runtime;
import jnr.ffi.annotations.In;
import jnr.ffi.annotations.SaveError;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * An open {@code /dev/fuse} connection: reads requests and writes replies with read(2) and
 * writev(2) on direct buffers' addresses, so no byte is copied in Java. Not a FileChannel: it
 * serialises reads and writes on one lock (a reply would wait for the next request) and closes
 * itself when a thread is interrupted.
 */
final class FuseDevice implements FuseChannel {

    /** The libc calls the device needs. */
    public interface C {
        @SaveError
        int open(@In byte[] path, int flags);

        @SaveError
        long read(int fd, long buf, long count);

        @SaveError
        long writev(int fd, long iov, int iovcnt);

        @SaveError
        int ioctl(int fd, long request, long arg);

        int close(int fd);

        @SaveError
        int mount(@In byte[] source, @In byte[] target, @In byte[] type, long flags, @In byte[] data);

        @SaveError
        int umount2(@In byte[] target, int flags);

        String strerror(int errnum);
    }

    static final C LIBC = LibraryLoader.create(C.class).load("c");
    private static final Runtime RUNTIME = Runtime.getRuntime(LIBC);
    private static final int O_RDWR_CLOEXEC = Linux.O_RDWR | 02000000;
    /** _IOW(229, 1, struct fuse_backing_map) and _IOW(229, 2, uint32_t) (linux/fuse.h 7.40). */
    private static final long BACKING_OPEN = 0x4010e501L;
    private static final long BACKING_CLOSE = 0x4004e502L;
    private static final int MAX_PARTS = 4;
    private static final com.kenai.jffi.MemoryIO MEMORY = com.kenai.jffi.MemoryIO.getInstance();

    private final int fd;
    /** Per thread: an iovec array and a fuse_backing_map, in native memory. */
    private final ThreadLocal<Pointer> scratch = ThreadLocal.withInitial(
            () -> jnr.ffi.Memory.allocateDirect(RUNTIME, 16 * MAX_PARTS + 16, true));
    private volatile boolean closed;

    FuseDevice(int fd) {
        this.fd = fd;
    }

    /** Opens a new connection (a new fd of /dev/fuse, not yet mounted). */
    static FuseDevice open() throws IOException {
        int fd = LIBC.open(bytes("/dev/fuse"), O_RDWR_CLOEXEC);
        if (fd < 0) {
            throw failure("/dev/fuse", errno());
        }
        return new FuseDevice(fd);
    }

    int fd() {
        return fd;
    }

    static int errno() {
        return Platform.getNativePlatform().getOS() == Platform.OS.LINUX ? RUNTIME.getLastError() : Linux.EIO;
    }

    static byte[] bytes(String s) {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        byte[] z = new byte[b.length + 1];
        System.arraycopy(b, 0, z, 0, b.length);
        return z;
    }

    static IOException failure(String what, int errno) {
        return new dev.chibifs.sys.ErrnoException(errno, what, LIBC.strerror(errno));
    }

    @Override
    public int read(ByteBuffer dst) throws IOException {
        long address = MEMORY.getDirectBufferAddress(dst);
        while (true) {
            long n = LIBC.read(fd, address, dst.capacity());
            if (n >= 0) {
                dst.position(0).limit((int) n);
                return (int) n;
            }
            int errno = errno();
            if (errno == Linux.EINTR || errno == Linux.EAGAIN || errno == Linux.ENOENT) {
                continue; // ENOENT: the kernel withdrew the request (interrupted) before we read it
            }
            if (errno == Linux.ENODEV || closed) {
                throw new ChannelClosedException("the mount is gone");
            }
            throw failure("/dev/fuse read", errno);
        }
    }

    @Override
    public void write(ByteBuffer... parts) throws IOException {
        Pointer iov = scratch.get();
        for (int i = 0; i < parts.length; i++) {
            ByteBuffer b = parts[i];
            iov.putLong(16L * i, MEMORY.getDirectBufferAddress(b) + b.position());
            iov.putLong(16L * i + 8, b.remaining());
        }
        long n = LIBC.writev(fd, iov.address(), parts.length);
        if (n < 0) {
            int errno = errno();
            throw failure("/dev/fuse write", errno);
        }
    }

    @Override
    public int openBacking(int backingFd) throws IOException {
        Pointer map = scratch.get();
        long at = 16L * MAX_PARTS;
        map.putInt(at, backingFd);
        map.putInt(at + 4, 0);
        map.putLong(at + 8, 0);
        int id = LIBC.ioctl(fd, BACKING_OPEN, map.address() + at);
        if (id < 0) {
            throw failure("FUSE_DEV_IOC_BACKING_OPEN", errno());
        }
        return id;
    }

    @Override
    public void closeBacking(int backingId) throws IOException {
        Pointer p = scratch.get();
        long at = 16L * MAX_PARTS;
        p.putInt(at, backingId);
        if (LIBC.ioctl(fd, BACKING_CLOSE, p.address() + at) < 0) {
            throw failure("FUSE_DEV_IOC_BACKING_CLOSE", errno());
        }
    }

    @Override
    public void close() {
        closed = true;
        LIBC.close(fd);
    }
}
