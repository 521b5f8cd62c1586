package dev.chibifs.fuse;

import com.kenai.jffi.MemoryIO;
import dev.chibifs.sys.ErrnoException;
import dev.chibifs.sys.Errors;
import dev.chibifs.sys.LibC;
import dev.chibifs.sys.Syscalls;
import dev.chibifs.sys.Linux;

import java.io.Closeable;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * An open /dev/fuse descriptor, read and written by several threads at once. Plain read(2) and
 * writev(2) on direct buffers' memory: java.nio's FileChannel would serialise the two on one lock
 * and close the descriptor when a reader is interrupted.
 *
 * <p>{@link #close} never closes the descriptor under a call in flight: the number could be reused
 * by the next open(2) anywhere in the process, and a late reply would go to that file. It closes
 * once the last call returns; a reader blocked in read(2) returns when the kernel ends the session
 * (an unmount), so close after unmounting.
 */
final class FuseDevice implements FuseChannel {

    private static final String DEVICE = "/dev/fuse";
    // include/uapi/linux/fuse.h (7.40): _IOW(FUSE_DEV_IOC_MAGIC 229, 1, struct fuse_backing_map),
    // _IOW(229, 2, uint32_t); struct fuse_backing_map { int32_t fd; uint32_t flags; uint64_t padding; }
    static final long FUSE_DEV_IOC_BACKING_OPEN = ioctlWrite(229, 1, 16);
    static final long FUSE_DEV_IOC_BACKING_CLOSE = ioctlWrite(229, 2, 4);
    /** The kernel refuses a read into less (FUSE_MIN_READ_BUFFER). */
    static final int MIN_READ_BUFFER = 8192;
    /** UIO_MAXIOV: writev refuses more. */
    private static final int MAX_PARTS = 1024;
    private static final int IOVEC_SIZE = 16;

    /** Set in {@link #state} once closed; the bits below count the calls in flight. */
    private static final int CLOSED = 1 << 30;
    private static final MemoryIO MEMORY = MemoryIO.getInstance();
    private static final ThreadLocal<Scratch> SCRATCH = ThreadLocal.withInitial(Scratch::new);

    private final int fd;
    private final String mountpoint;
    /** What must outlive the session and go with it (fusermount's auto_unmount socket); null if nothing. */
    private final Closeable companion;
    private final AtomicInteger state = new AtomicInteger();

    FuseDevice(int fd, String mountpoint, Closeable companion) {
        this.fd = fd;
        this.mountpoint = mountpoint;
        this.companion = companion;
    }

    /** _IOC(_IOC_WRITE, type, nr, size) of asm-generic/ioctl.h, which x86-64 and arm64 both use. */
    static long ioctlWrite(int type, int nr, int size) {
        return (1L << 30) | ((long) size << 16) | ((long) type << 8) | nr;
    }

    /** The mount point this session serves, as given at mount. */
    String mountpoint() {
        return mountpoint;
    }

    /** The descriptor, for what this class does not wrap (poll, FUSE_DEV_IOC_CLONE); valid until closed. */
    int descriptor() {
        return fd;
    }

    @Override
    public int read(ByteBuffer dst) throws IOException {
        if (!dst.isDirect() || dst.capacity() < MIN_READ_BUFFER) {
            throw new IllegalArgumentException("a FUSE read needs a direct buffer of at least " + MIN_READ_BUFFER
                    + " bytes, not a " + (dst.isDirect() ? "direct" : "heap") + " one of " + dst.capacity());
        }
        long address = MEMORY.getDirectBufferAddress(dst);
        enter();
        try {
            while (true) {
                long n = LibC.read(fd, address, dst.capacity());
                if (n > 0) {
                    dst.limit((int) n).position(0);
                    return (int) n;
                }
                int err = n == 0 ? Linux.EIO : LibC.errno();
                switch (err) {
                    // ENOENT: the request was interrupted and withdrawn between poll and copy; take the next
                    case Linux.EINTR, Linux.EAGAIN, Linux.ENOENT -> {
                    }
                    case Linux.ENODEV -> throw new ChannelClosedException("the FUSE session of " + mountpoint + " has ended (unmounted)");
                    case Linux.EINVAL -> throw new ErrnoException(err, DEVICE, LibC.strerror(err) + " (a read buffer of "
                            + dst.capacity() + " bytes is smaller than the kernel's largest request: max_write plus a page)");
                    default -> throw ErrnoException.forErrno(err, DEVICE);
                }
            }
        } finally {
            leave();
        }
    }

    @Override
    public void write(ByteBuffer... parts) throws IOException {
        if (parts.length == 0 || parts.length > MAX_PARTS) {
            throw new IllegalArgumentException("a FUSE write takes 1 to " + MAX_PARTS + " buffers, not " + parts.length);
        }
        Scratch s = SCRATCH.get();
        long iov = s.iovecs(parts.length);
        long total = 0;
        int heapBytes = 0;
        for (ByteBuffer p : parts) {
            heapBytes += p.isDirect() ? 0 : p.remaining();
        }
        ByteBuffer bounce = heapBytes == 0 ? null : s.bounce(heapBytes);
        for (int i = 0; i < parts.length; i++) {
            ByteBuffer p = parts[i];
            long address;
            if (p.isDirect()) {
                address = MEMORY.getDirectBufferAddress(p) + p.position();
            } else {
                // tests and rare replies come in heap buffers: one copy, into this thread's direct memory
                address = MEMORY.getDirectBufferAddress(bounce) + bounce.position();
                bounce.put(p.duplicate());
            }
            MEMORY.putLong(iov + (long) i * IOVEC_SIZE, address);
            MEMORY.putLong(iov + (long) i * IOVEC_SIZE + 8, p.remaining());
            total += p.remaining();
        }
        enter();
        try {
            while (true) {
                long n = LibC.writev(fd, iov, parts.length);
                if (n >= 0) {
                    // the device takes a message whole or not at all
                    if (n != total) {
                        throw new IOException("/dev/fuse took " + n + " of " + total + " bytes of a reply");
                    }
                    for (ByteBuffer p : parts) {
                        p.position(p.limit());
                    }
                    return;
                }
                int err = LibC.errno();
                if (err == Linux.EINTR) {
                    continue;
                }
                if (err == Linux.ENODEV) {
                    throw new ChannelClosedException("the FUSE session of " + mountpoint + " has ended (unmounted)");
                }
                // ENOENT, the common refusal (a notification about a node or name the kernel no longer
                // holds, a reply to a withdrawn request), comes without a stack trace: about two per
                // directory `rm -r` empties, whose kept listing is dropped after the kernel forgot its names
                throw Errors.of(err, DEVICE);
            }
        } finally {
            leave();
        }
    }

    @Override
    public int openBacking(int backingFd) throws IOException {
        long map = SCRATCH.get().small();
        MEMORY.putInt(map, backingFd);
        MEMORY.putInt(map + 4, 0);
        MEMORY.putLong(map + 8, 0);
        enter();
        try {
            int id = LibC.ioctl(fd, FUSE_DEV_IOC_BACKING_OPEN, map);
            if (id < 0) {
                throw ErrnoException.forErrno(LibC.errno(), DEVICE);
            }
            return id;
        } finally {
            leave();
        }
    }

    @Override
    public void closeBacking(int backingId) throws IOException {
        long id = SCRATCH.get().small();
        MEMORY.putInt(id, backingId);
        enter();
        try {
            if (LibC.ioctl(fd, FUSE_DEV_IOC_BACKING_CLOSE, id) < 0) {
                throw ErrnoException.forErrno(LibC.errno(), DEVICE);
            }
        } finally {
            leave();
        }
    }

    /** Closes the descriptor now, or when the last call in flight returns; idempotent. */
    @Override
    public void close() {
        while (true) {
            int s = state.get();
            if ((s & CLOSED) != 0) {
                return;
            }
            if (state.compareAndSet(s, s | CLOSED)) {
                if (s == 0) {
                    release();
                }
                return;
            }
        }
    }

    /** Calls in flight now (for tests). */
    int callsInFlight() {
        return state.get() & ~CLOSED;
    }

    /** True once {@link #close} was called (the descriptor may still be open under a call in flight). */
    public boolean isClosed() {
        return (state.get() & CLOSED) != 0;
    }

    private void enter() throws ChannelClosedException {
        while (true) {
            int s = state.get();
            if ((s & CLOSED) != 0) {
                throw new ChannelClosedException("the FUSE device of " + mountpoint + " is closed");
            }
            if (state.compareAndSet(s, s + 1)) {
                return;
            }
        }
    }

    private void leave() {
        // no call enters once CLOSED is set, so the count reaches zero under it exactly once
        if (state.decrementAndGet() == CLOSED) {
            release();
        }
    }

    private void release() {
        Syscalls.close(fd);
        if (companion != null) {
            try {
                companion.close();
            } catch (IOException | RuntimeException e) {
                // the session is over either way; the companion's own close reports what matters
            }
        }
    }

    /** Native memory of one thread: its iovec array, a bounce buffer for heap parts, and 16 bytes for ioctl arguments. */
    private static final class Scratch {
        private ByteBuffer iovecs = ByteBuffer.allocateDirect(16 * IOVEC_SIZE);
        private ByteBuffer bounce;
        private final ByteBuffer small = ByteBuffer.allocateDirect(16);

        long iovecs(int count) {
            if (iovecs.capacity() < count * IOVEC_SIZE) {
                iovecs = ByteBuffer.allocateDirect(Integer.highestOneBit(count * IOVEC_SIZE - 1) << 1);
            }
            return MEMORY.getDirectBufferAddress(iovecs);
        }

        ByteBuffer bounce(int size) {
            if (bounce == null || bounce.capacity() < size) {
                bounce = ByteBuffer.allocateDirect(Math.max(8192, Integer.highestOneBit(size - 1) << 1));
            }
            return bounce.clear();
        }

        long small() {
            return MEMORY.getDirectBufferAddress(small);
        }
    }
}
