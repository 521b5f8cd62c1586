package dev.chibifs.sys;

import com.kenai.jffi.MemoryIO;

import java.io.IOException;
import java.lang.invoke.VarHandle;

import static dev.chibifs.sys.Linux.*;

/**
 * One io_uring (io_uring_setup(2)) with 128-byte submission entries, driven by hand: the rings
 * are shared memory, mapped once, read and written with plain loads and stores between the fences
 * the kernel's protocol asks for (the consumer reads a tail with acquire, the producer publishes a
 * tail with release). Only what FUSE over io_uring needs: URING_CMD submissions and their
 * completions.
 *
 * <p>Threads: completions are for one thread (the one that waits in {@link #submitAndWait});
 * submissions may come from any thread, each holding this object's monitor from {@link #prepare}
 * to {@link #submit}, since several threads may answer requests of one ring (a lock wait's timer).
 */
public final class IoUring implements AutoCloseable {

    /** A submission entry with IORING_SETUP_SQE128. */
    public static final int SQE_SIZE = 128;
    /** Where a URING_CMD's command bytes (80 of them) start in its entry (sqe->cmd). */
    public static final int SQE_CMD = 48;
    private static final int CQE_SIZE = 16;
    private static final int PARAMS_SIZE = 120;
    private static final MemoryIO MEMORY = MemoryIO.getInstance();

    private final int fd;
    private final long sqRing;
    private final long sqRingSize;
    private final long cqRing;
    private final long cqRingSize;
    private final long sqes;
    private final long sqesSize;
    private final int sqEntries;
    private final int sqMask;
    private final long sqHead;
    private final long sqTail;
    private final int cqMask;
    private final long cqHead;
    private final long cqTail;
    private final long cqes;
    /** Entries prepared, published or not (ours alone: under the monitor). */
    private int sqLocalTail;
    private int sqPublished;
    private boolean closed;

    private IoUring(int fd, long sqRing, long sqRingSize, long cqRing, long cqRingSize, long sqes, long sqesSize,
                    long params) {
        this.fd = fd;
        this.sqRing = sqRing;
        this.sqRingSize = sqRingSize;
        this.cqRing = cqRing;
        this.cqRingSize = cqRingSize;
        this.sqes = sqes;
        this.sqesSize = sqesSize;
        // struct io_sqring_offsets at 40: head, tail, ring_mask, ring_entries, flags, dropped, array
        this.sqHead = sqRing + MEMORY.getInt(params + 40);
        this.sqTail = sqRing + MEMORY.getInt(params + 44);
        this.sqMask = MEMORY.getInt(sqRing + MEMORY.getInt(params + 48));
        this.sqEntries = MEMORY.getInt(sqRing + MEMORY.getInt(params + 52));
        long array = sqRing + MEMORY.getInt(params + 64);
        // struct io_cqring_offsets at 80: head, tail, ring_mask, ring_entries, overflow, cqes
        this.cqHead = cqRing + MEMORY.getInt(params + 80);
        this.cqTail = cqRing + MEMORY.getInt(params + 84);
        this.cqMask = MEMORY.getInt(cqRing + MEMORY.getInt(params + 88));
        this.cqes = cqRing + MEMORY.getInt(params + 100);
        // slot i of the submission array always names entry i: entries are used in ring order
        for (int i = 0; i < sqEntries; i++) {
            MEMORY.putInt(array + 4L * i, i);
        }
        this.sqLocalTail = MEMORY.getInt(sqTail);
        this.sqPublished = sqLocalTail;
    }

    /**
     * A ring of {@code entries} submissions (rounded up to a power of two by the kernel) and
     * {@code completions} completions; throws ErrnoException (ENOSYS before Linux 5.1, EPERM where
     * io_uring is disabled by kernel.io_uring_disabled).
     */
    public static IoUring open(int entries, int completions) throws IOException {
        long params = MEMORY.allocateMemory(PARAMS_SIZE, true);
        int fd = -1;
        long sq = 0;
        long cq = 0;
        long sqeMemory = 0;
        long sqSize = 0;
        long cqSize = 0;
        long sqesSize = 0;
        try {
            MEMORY.putInt(params + 4, completions);
            MEMORY.putInt(params + 8, IORING_SETUP_SQE128 | IORING_SETUP_CQSIZE);
            long r = Native.C.syscall(SYS_IO_URING_SETUP, entries, params, 0, 0, 0, 0);
            if (r < 0) {
                int errno = LibC.errno();
                throw ErrnoException.forErrno(errno, "io_uring_setup");
            }
            fd = (int) r;
            int sqCount = MEMORY.getInt(params);
            int cqCount = MEMORY.getInt(params + 4);
            int features = MEMORY.getInt(params + 20);
            sqSize = MEMORY.getInt(params + 64) + 4L * sqCount;
            cqSize = MEMORY.getInt(params + 100) + (long) CQE_SIZE * cqCount;
            if ((features & IORING_FEAT_SINGLE_MMAP) != 0) {
                sqSize = Math.max(sqSize, cqSize);
                cqSize = sqSize;
            }
            sq = map(fd, sqSize, IORING_OFF_SQ_RING);
            cq = (features & IORING_FEAT_SINGLE_MMAP) != 0 ? sq : map(fd, cqSize, IORING_OFF_CQ_RING);
            sqesSize = (long) SQE_SIZE * sqCount;
            sqeMemory = map(fd, sqesSize, IORING_OFF_SQES);
            IoUring ring = new IoUring(fd, sq, sqSize, cq, (features & IORING_FEAT_SINGLE_MMAP) != 0 ? 0 : cqSize,
                    sqeMemory, sqesSize, params);
            fd = -1;
            return ring;
        } finally {
            MEMORY.freeMemory(params);
            if (fd >= 0) {
                unmap(sqeMemory, sqesSize);
                if (cq != sq) {
                    unmap(cq, cqSize);
                }
                unmap(sq, sqSize);
                Syscalls.close(fd);
            }
        }
    }

    private static long map(int fd, long size, long offset) throws ErrnoException {
        long a = LibC.mmap(0, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, offset);
        if (a == MAP_FAILED) {
            int errno = LibC.errno();
            throw ErrnoException.forErrno(errno, "io_uring mmap");
        }
        return a;
    }

    private static void unmap(long address, long size) {
        if (address != 0 && size > 0) {
            LibC.munmap(address, size);
        }
    }

    /**
     * The next submission entry, zeroed, for the caller to fill and then {@link #submit}; the
     * caller holds this object's monitor throughout. Throws when every entry is still the
     * kernel's (a caller keeps fewer in flight than the ring has).
     */
    public long prepare() throws IOException {
        assert Thread.holdsLock(this);
        if (closed) {
            throw ErrnoException.of(EBADF, "io_uring", "the ring is closed");
        }
        int head = MEMORY.getInt(sqHead);
        VarHandle.acquireFence();
        if (sqLocalTail - head >= sqEntries) {
            throw ErrnoException.of(EBUSY, "io_uring", "the submission ring is full");
        }
        long sqe = sqes + (long) SQE_SIZE * (sqLocalTail & sqMask);
        MEMORY.setMemory(sqe, SQE_SIZE, (byte) 0);
        sqLocalTail++;
        return sqe;
    }

    /** Fills a NOP entry: it completes at once with {@code userData} (to wake the thread waiting for completions). */
    public static void nop(long sqe, long userData) {
        MEMORY.putByte(sqe, (byte) IORING_OP_NOP);
        MEMORY.putLong(sqe + 32, userData);
    }

    /** Fills a URING_CMD entry: {@code cmdOp} on descriptor {@code target}; the command bytes are the caller's. */
    public static void uringCommand(long sqe, int target, int cmdOp, long address, int length, long userData) {
        MEMORY.putByte(sqe, (byte) IORING_OP_URING_CMD);
        MEMORY.putInt(sqe + 4, target);
        MEMORY.putInt(sqe + 8, cmdOp);
        MEMORY.putLong(sqe + 16, address);
        MEMORY.putInt(sqe + 24, length);
        MEMORY.putLong(sqe + 32, userData);
    }

    /** Publishes what was prepared and has the kernel take it (without waiting for completions). */
    public void submit() throws IOException {
        assert Thread.holdsLock(this);
        int pending = publish();
        while (pending > 0) {
            long r = enter(pending, 0, 0);
            if (r == -EINTR) {
                continue;
            }
            if (r < 0) {
                throw ErrnoException.forErrno((int) -r, "io_uring_enter");
            }
            pending -= (int) r;
        }
    }

    private int publish() {
        int pending = sqLocalTail - sqPublished;
        if (pending > 0) {
            VarHandle.releaseFence(); // the entries before the tail that publishes them (io_uring_enter reads it)
            MEMORY.putInt(sqTail, sqLocalTail);
            sqPublished = sqLocalTail;
        }
        return pending;
    }

    /**
     * Waits until at least one completion is there; returns 0 or -errno (EINTR: a signal came
     * first; call again). Submissions are made by {@link #submit}, under the monitor.
     */
    public int awaitCompletion() {
        if (MEMORY.getInt(cqHead) != MEMORY.getInt(cqTail)) {
            return 0;
        }
        long r = enter(0, 1, IORING_ENTER_GETEVENTS);
        return r < 0 ? (int) r : 0;
    }

    private long enter(int submit, int wait, int flags) {
        long r = Native.C.syscall(SYS_IO_URING_ENTER, fd, submit, wait, flags, 0, 0);
        return r < 0 ? -LibC.errno() : r;
    }

    /** What a completion says: the submission's user data and its result (-errno on failure). */
    public interface Completions {
        void completed(long userData, int result) throws IOException;
    }

    /** Hands every completion there is to {@code to}, in order, and gives their slots back; returns how many. */
    public int drain(Completions to) throws IOException {
        int head = MEMORY.getInt(cqHead);
        int tail = MEMORY.getInt(cqTail);
        VarHandle.acquireFence();
        int n = 0;
        while (head != tail) {
            long cqe = cqes + (long) CQE_SIZE * (head & cqMask);
            long userData = MEMORY.getLong(cqe);
            int result = MEMORY.getInt(cqe + 8);
            head++;
            n++;
            VarHandle.releaseFence();
            MEMORY.putInt(cqHead, head);
            to.completed(userData, result);
        }
        return n;
    }

    /** Whether {@link #close} ran: the rings are gone (check under the monitor before touching memory shared with them). */
    public synchronized boolean isClosed() {
        return closed;
    }

    /** Unmaps the rings and closes the descriptor; the kernel cancels what is still in flight. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        unmap(sqes, sqesSize);
        if (cqRingSize > 0) {
            unmap(cqRing, cqRingSize);
        }
        unmap(sqRing, sqRingSize);
        Syscalls.close(fd);
    }
}
