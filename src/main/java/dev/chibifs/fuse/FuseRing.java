package dev.chibifs.fuse;

import com.kenai.jffi.MemoryIO;
import dev.chibifs.sys.ErrnoException;
import dev.chibifs.sys.IoUring;
import dev.chibifs.sys.LibC;
import dev.chibifs.sys.Linux;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

/**
 * FUSE over io_uring (Linux 6.14+, offered while the fuse module's {@code enable_uring} is on):
 * one queue per possible CPU, each a thread pinned to its CPU with an io_uring of its own, whose
 * entries the kernel fills with requests made on that CPU. The request is served where it was
 * made: the kernel wakes the queue's thread on the caller's own CPU, and the reply wakes the
 * caller there too, where a /dev/fuse read wakes whichever worker waited longest, often on the
 * other, idle CPU (on a VM, a wake-up of a halted vCPU costs tens of microseconds).
 *
 * <p>Each entry is a request buffer pair the kernel writes into (struct fuse_uring_req_header and
 * a payload of max_write) and a reply slot: {@link Entry#write} puts the reply there and commits it
 * with COMMIT_AND_FETCH, which also hands the entry back for the next request. A request whose
 * answer waits (a blocking lock) keeps its entry until answered, from another thread: submissions
 * take the ring's monitor. FORGET and INTERRUPT still come through /dev/fuse, as do notifications.
 *
 * <p>A queue's thread serves its requests one after another, so a request that may wait long (on a
 * store across a network, S3; an fsync) is handed to a thread of its own, which replies through
 * the same entry: the others made on that CPU go on meanwhile. Handed-off requests and lock waits
 * together keep {@link #LOCK_WAITS} entries at most, so the rest stay for requests served at once.
 */
final class FuseRing {

    private static final Logger LOG = LoggerFactory.getLogger(FuseRing.class);
    private static final MemoryIO MEMORY = MemoryIO.getInstance();
    /** Entries per queue: requests one CPU's processes may have with the daemon at once (waiting locks included). */
    static final int DEPTH = 32;
    /**
     * How many of a queue's entries requests answered off its thread (lock waits, handed-off
     * requests) may hold at once; the rest stay for requests served at once, the unlock that ends
     * the waits among them (it comes on the CPU its process runs on).
     */
    static final int LOCK_WAITS = DEPTH - 8;
    /** How long a thread that served a handed-off request waits for another before it ends. */
    private static final long WAITER_IDLE_SECONDS = 30;
    private static final int IOVEC = 16;
    /** The user data of the NOP that tells a queue's thread to end (entries are numbered from 0). */
    private static final long STOP = -1;

    private final FuseDevice device;
    private final Supplier<FuseSession.Worker> workers;
    private final SlowRequests slow;
    /** The threads handed-off requests are served on, each with a worker of its own; made at the first. */
    private ThreadPoolExecutor waiters;
    private final AtomicInteger waiterNames = new AtomicInteger();
    private final int payloadSize;
    private final Queue[] queues;
    private final AtomicInteger registeredQueues = new AtomicInteger();

    /** Which requests may wait long, so are served off their queue's thread. */
    interface SlowRequests {
        boolean mayWaitLong(int opcode, long nodeid);
    }

    private FuseRing(FuseDevice device, Supplier<FuseSession.Worker> workers, SlowRequests slow, int maxWrite) {
        this.device = device;
        this.workers = workers;
        this.slow = slow;
        // the kernel's max_payload_sz: max_write, and max_pages pages, which INIT made the same
        this.payloadSize = Math.max(maxWrite, FuseDevice.MIN_READ_BUFFER);
        this.queues = new Queue[possibleCpus()];
    }

    /**
     * Every queue's ring and entries, made before INIT is answered: once the kernel grants FUSE
     * over io_uring, every request waits until each CPU's queue has registered, so a queue that
     * could not be made then would hang the mount. Null (logged) when one cannot be made.
     */
    static FuseRing open(FuseDevice device, Supplier<FuseSession.Worker> workers, SlowRequests slow, int maxWrite) {
        FuseRing r = new FuseRing(device, workers, slow, maxWrite);
        try {
            for (int q = 0; q < r.queues.length; q++) {
                r.queues[q] = r.new Queue(q);
            }
            return r;
        } catch (IOException | RuntimeException e) {
            LOG.warn("FUSE over io_uring not used: {}; requests come through /dev/fuse", e.getMessage());
            for (Queue q : r.queues) {
                if (q != null) {
                    q.close();
                }
            }
            return null;
        }
    }

    /** How many queues (threads) serve: one per possible CPU, as the kernel has. */
    int queues() {
        return queues.length;
    }

    /** Whether every queue has its entries with the kernel (so the kernel sends requests through them). */
    boolean registered() {
        return registeredQueues.get() == queues.length;
    }

    /** Ends every queue's thread (the session is gone), whether or not its entries came back. */
    void stop() {
        for (Queue q : queues) {
            q.wake();
        }
        synchronized (this) {
            if (waiters != null) {
                waiters.shutdown();
            }
        }
    }

    /**
     * The pool handed-off requests run in: no thread kept idle past {@link #WAITER_IDLE_SECONDS}, and
     * as many as the queues may hold entries for, so a hand-off is refused only when the queue is full.
     */
    private synchronized ThreadPoolExecutor waiters() {
        if (waiters == null) {
            waiters = new ThreadPoolExecutor(0, queues.length * LOCK_WAITS, WAITER_IDLE_SECONDS, TimeUnit.SECONDS,
                    new SynchronousQueue<>(), task -> {
                        Thread t = new Thread(() -> {
                            FuseSession.Worker w = workers.get();
                            WAITER.set(w);
                            try {
                                task.run();
                            } finally {
                                WAITER.remove();
                                w.free();
                            }
                        }, "chibifs-ring-wait-" + waiterNames.incrementAndGet());
                        t.setDaemon(true);
                        return t;
                    });
        }
        return waiters;
    }

    /** The worker of a thread in {@link #waiters}: its request and reply buffers, freed when the thread ends. */
    private static final ThreadLocal<FuseSession.Worker> WAITER = new ThreadLocal<>();

    /** Starts the queues' threads; {@code ended} runs once for each when it stops. */
    void start(Runnable ended) {
        for (Queue queue : queues) {
            Thread t = new Thread(() -> {
                try {
                    queue.run();
                } finally {
                    ended.run();
                }
            }, "chibifs-ring-" + queue.qid);
            t.setDaemon(true);
            t.start();
        }
    }

    /** The kernel's possible CPUs ("0-1", "0,2-3"): queue ids run from 0 to the highest. */
    static int possibleCpus() {
        try {
            return highestCpu(Files.readString(Path.of("/sys/devices/system/cpu/possible")).trim()) + 1;
        } catch (IOException | RuntimeException e) {
            return Runtime.getRuntime().availableProcessors();
        }
    }

    static int highestCpu(String list) {
        int highest = 0;
        for (String part : list.split(",")) {
            String last = part.contains("-") ? part.substring(part.indexOf('-') + 1) : part;
            highest = Math.max(highest, Integer.parseInt(last.trim()));
        }
        return highest;
    }

    /** One CPU's queue: its thread, its io_uring and its entries. */
    private final class Queue {
        final int qid;
        final IoUring ring;
        final Entry[] entries = new Entry[DEPTH];
        int ended;
        /** Entries held by a lock wait; guarded by the ring's monitor. */
        int lockWaits;
        /** Entries whose request a waiter thread serves; guarded by the ring's monitor. */
        int handedOff;

        /** Under the ring's monitor: whether requests answered off this queue's thread hold {@link #LOCK_WAITS} entries. */
        boolean holdsAll() {
            return lockWaits + handedOff >= LOCK_WAITS;
        }

        /** A handed-off request's entry is no longer held by its waiter (answered, or never handed). */
        void handedBack() {
            synchronized (ring) {
                handedOff--;
            }
        }

        Queue(int qid) throws IOException {
            this.qid = qid;
            this.ring = IoUring.open(DEPTH, 2 * DEPTH);
            try {
                for (int i = 0; i < DEPTH; i++) {
                    entries[i] = new Entry(this, i);
                }
            } catch (IOException | RuntimeException e) {
                close();
                throw e;
            }
        }

        /** Under the ring's monitor: a reply from another thread (a lock wait) checks it before touching the buffers. */
        void close() {
            synchronized (ring) {
                if (ring.isClosed()) {
                    return;
                }
                ring.close();
                for (Entry e : entries) {
                    if (e != null) {
                        e.free();
                    }
                }
            }
        }

        /** A NOP that completes at once, so the thread finds {@link #STOP}; nothing when it has ended. */
        void wake() {
            synchronized (ring) {
                if (ring.isClosed()) {
                    return;
                }
                try {
                    IoUring.nop(ring.prepare(), STOP);
                    ring.submit();
                } catch (IOException e) {
                    LOG.debug("queue {} not woken to end: {}", qid, e.toString());
                }
            }
        }

        /** Registers the entries from this queue's own pinned thread (the kernel wakes the thread that submitted), then serves. */
        void run() {
            pin();
            FuseSession.Worker worker = workers.get();
            try {
                synchronized (ring) {
                    for (Entry e : entries) {
                        e.register();
                    }
                    ring.submit();
                }
                registeredQueues.incrementAndGet();
                serve(worker);
            } catch (IOException | RuntimeException e) {
                // requests made on this CPU would wait for this queue forever: fail them all instead
                LOG.error("FUSE over io_uring: queue {} stopped; aborting the session of {}", qid, device.mountpoint(), e);
                if (!FuseMount.abort(device.mountpoint())) {
                    LOG.error("cannot abort the FUSE connection of {}: umount -f it (as root)", device.mountpoint());
                }
            } finally {
                worker.free();
                close();
            }
        }

        /**
         * On its own CPU, so the kernel's wake-up of this thread stays there (best effort: a cpuset
         * may forbid it). Not at SCHED_IDLE, though that doubled the gain on an idle machine (the
         * reply wakes the caller while this thread still runs, so the scheduler counts the CPU busy
         * and moves the caller to the other one; a CPU running only SCHED_IDLE work counts as idle):
         * with both CPUs busy with other work, requests then waited minutes for their turn.
         */
        private void pin() {
            long mask = MEMORY.allocateMemory(128, true);
            try {
                MEMORY.putByte(mask + qid / 8, (byte) (1 << (qid % 8)));
                if (LibC.sched_setaffinity(0, 128, mask) != 0) {
                    LOG.debug("queue {} not pinned to its CPU: {}", qid, LibC.strerror(LibC.errno()));
                }
            } finally {
                MEMORY.freeMemory(mask);
            }
        }

        private void serve(FuseSession.Worker worker) throws IOException {
            IoUring.Completions completions = (userData, result) -> {
                if (userData == STOP) {
                    ended = DEPTH;
                } else {
                    completed(entries[(int) userData], result, worker);
                }
            };
            while (ended < DEPTH) {
                int r = ring.awaitCompletion();
                if (r == -Linux.EINTR) {
                    continue;
                }
                if (r < 0) {
                    throw new ErrnoException(-r, "io_uring_enter", LibC.strerror(-r));
                }
                ring.drain(completions);
            }
        }

        private void completed(Entry e, int result, FuseSession.Worker worker) throws IOException {
            if (result == 0) {
                if (!e.handOff()) {
                    e.serve(worker);
                }
                return;
            }
            switch (-result) {
                case Linux.EINTR, Linux.EAGAIN -> e.resubmit();
                // the session ended (unmounted, aborted): the kernel gives every entry back
                case Linux.ENOTCONN, Linux.ECONNABORTED, Linux.ENODEV -> ended++;
                default -> {
                    if (e.lastCommand == FuseProtocol.URING_CMD_REGISTER) {
                        // the kernel sends nothing anywhere until every queue is registered: a refused one hangs the mount
                        throw new ErrnoException(-result, "FUSE_IO_URING_CMD_REGISTER", LibC.strerror(-result));
                    }
                    LOG.warn("FUSE over io_uring: queue {} entry {}: {}", qid, e.index, LibC.strerror(-result));
                    ended++;
                }
            }
        }
    }

    /** One entry: the kernel's header and payload buffers, and the reply slot of the request in it. */
    final class Entry implements FuseChannel {
        final Queue queue;
        final int index;
        final long header;
        final long payload;
        final ByteBuffer payloadView;
        final long iovecs;
        long commitId;
        /** Held by a lock wait until its answer; guarded by the ring's monitor. */
        boolean waitingForLock;
        /** The last command sent, to send again when the kernel asks (EINTR, EAGAIN). */
        int lastCommand;

        Entry(Queue queue, int index) throws IOException {
            this.queue = queue;
            this.index = index;
            // unzeroed, as a worker's request buffer: only resident where the kernel or a reply writes
            this.header = MEMORY.allocateMemory(FuseProtocol.URING_HEADER, false);
            this.payload = MEMORY.allocateMemory(payloadSize, false);
            if (header == 0 || payload == 0) {
                free();
                throw new ErrnoException(Linux.ENOMEM, "ring entry", "Cannot allocate memory");
            }
            this.payloadView = MEMORY.newDirectByteBuffer(payload, payloadSize);
            this.iovecs = MEMORY.allocateMemory(2 * IOVEC, true);
            MEMORY.putLong(iovecs, header);
            MEMORY.putLong(iovecs + 8, FuseProtocol.URING_HEADER);
            MEMORY.putLong(iovecs + IOVEC, payload);
            MEMORY.putLong(iovecs + IOVEC + 8, payloadSize);
        }

        void free() {
            MEMORY.freeMemory(header);
            MEMORY.freeMemory(payload);
            MEMORY.freeMemory(iovecs); // 0 when the allocation above failed: free(NULL) does nothing
        }

        /** Queues this entry's REGISTER (under the ring's monitor): its buffers, waiting for a request. */
        void register() throws IOException {
            lastCommand = FuseProtocol.URING_CMD_REGISTER;
            long sqe = queue.ring.prepare();
            IoUring.uringCommand(sqe, device.descriptor(), FuseProtocol.URING_CMD_REGISTER, iovecs, 2, index);
            MEMORY.putShort(sqe + IoUring.SQE_CMD + FuseProtocol.URING_CMD_QID, (short) queue.qid);
        }

        /** Queues COMMIT_AND_FETCH (under the ring's monitor): the reply in the header and payload, and the next request. */
        private void commit() throws IOException {
            lastCommand = FuseProtocol.URING_CMD_COMMIT_AND_FETCH;
            long sqe = queue.ring.prepare();
            IoUring.uringCommand(sqe, device.descriptor(), FuseProtocol.URING_CMD_COMMIT_AND_FETCH, 0, 0, index);
            MEMORY.putLong(sqe + IoUring.SQE_CMD + FuseProtocol.URING_CMD_COMMIT_ID, commitId);
            MEMORY.putShort(sqe + IoUring.SQE_CMD + FuseProtocol.URING_CMD_QID, (short) queue.qid);
        }

        void resubmit() throws IOException {
            synchronized (queue.ring) {
                if (lastCommand == FuseProtocol.URING_CMD_REGISTER) {
                    register();
                } else {
                    commit();
                }
                queue.ring.submit();
            }
        }

        /**
         * The request the kernel put here, laid out as a /dev/fuse read gives it (header, the
         * opcode's struct, then names and data), served by {@code worker}, whose reply comes back
         * through {@link #write}.
         */
        void serve(FuseSession.Worker worker) throws IOException {
            if (take(worker)) {
                worker.serveWhatever();
            }
        }

        /** Copies the request here into {@code worker}; false when there is none to serve (one that does not add up is answered EIO). */
        private boolean take(FuseSession.Worker worker) throws IOException {
            long in = header + FuseProtocol.URING_IN_OUT;
            int length = MEMORY.getInt(in);
            int payloadBytes = MEMORY.getInt(header + FuseProtocol.URING_PAYLOAD_SIZE);
            commitId = MEMORY.getLong(header + FuseProtocol.URING_COMMIT_ID);
            int opBytes = length - FuseProtocol.IN_HEADER - payloadBytes;
            if (opBytes < 0 || opBytes > FuseProtocol.URING_OP_IN_SIZE
                    || length > worker.req.buffer.capacity() || payloadBytes > payloadSize) {
                LOG.error("FUSE over io_uring: a request of {} bytes with {} of payload does not add up; answered EIO",
                        length, payloadBytes);
                worker.reply.begin(MEMORY.getLong(in + FuseProtocol.IN_UNIQUE)).error(Linux.EIO).send(this);
                return false;
            }
            long dst = worker.requestAddress;
            MEMORY.copyMemory(in, dst, FuseProtocol.IN_HEADER);
            MEMORY.copyMemory(header + FuseProtocol.URING_OP_IN, dst + FuseProtocol.IN_HEADER, opBytes);
            MEMORY.copyMemory(payload, dst + FuseProtocol.IN_HEADER + opBytes, payloadBytes);
            if (!worker.req.decode(length)) {
                return false;
            }
            worker.req.buffer.limit(length).position(0);
            worker.replyTo = this;
            return true;
        }

        /**
         * Hands the request here to a waiter thread when it may wait long and the queue may hold one
         * more entry; false when this queue's thread is to serve it. The entry stays the kernel's
         * request's until the waiter's reply commits it, so the waiter reads the request from here.
         */
        boolean handOff() {
            long in = header + FuseProtocol.URING_IN_OUT;
            if (!slow.mayWaitLong(MEMORY.getInt(in + FuseProtocol.IN_OPCODE), MEMORY.getLong(in + FuseProtocol.IN_NODEID))) {
                return false;
            }
            synchronized (queue.ring) {
                if (queue.holdsAll()) {
                    return false;
                }
                queue.handedOff++;
            }
            try {
                waiters().execute(() -> {
                    try {
                        FuseSession.Worker w = WAITER.get();
                        boolean taken;
                        synchronized (queue.ring) {
                            // a queue frees its entries' memory when it closes (the session ended
                            // meanwhile): the request is read only while it is open
                            taken = !queue.ring.isClosed() && take(w);
                        }
                        if (taken) {
                            w.serveWhatever();
                        }
                    } catch (IOException | RuntimeException e) {
                        // the reply could not be committed: the session is ending, and its entries with it
                        LOG.debug("queue {} entry {}: a handed-off reply not committed: {}", queue.qid, index, e.toString());
                    } finally {
                        queue.handedBack();
                    }
                });
                return true;
            } catch (RejectedExecutionException stopped) {
                queue.handedBack();
                return false;
            }
        }

        /** Keeps this entry for a lock wait's later answer; false when the queue holds {@link #LOCK_WAITS} entries already. */
        boolean holdForLockWait() {
            synchronized (queue.ring) {
                if (queue.holdsAll()) {
                    return false;
                }
                queue.lockWaits++;
                waitingForLock = true;
                return true;
            }
        }

        /** A reply (header and body, as /dev/fuse takes it): the header's error and unique to the entry's header, the body to its payload, then committed. */
        @Override
        public void write(ByteBuffer... parts) throws IOException {
            ByteBuffer first = parts[0];
            int at = first.position();
            int error = first.getInt(at + 4);
            long unique = first.getLong(at + 8);
            synchronized (queue.ring) {
                if (queue.ring.isClosed()) {
                    throw new ErrnoException(Linux.ENOTCONN, "reply", "Transport endpoint is not connected: the session has ended");
                }
                if (waitingForLock) {
                    waitingForLock = false;
                    queue.lockWaits--;
                }
                payloadView.clear();
                ByteBuffer body = first.duplicate();
                body.position(at + FuseProtocol.OUT_HEADER);
                if (fits(parts, body.remaining())) {
                    payloadView.put(body);
                    for (int i = 1; i < parts.length; i++) {
                        payloadView.put(parts[i].duplicate());
                    }
                } else {
                    // cannot happen (replies are at most max_write); never leave the caller waiting
                    LOG.error("FUSE over io_uring: a reply larger than the ring's payload; answered EIO");
                    error = -Linux.EIO;
                }
                int bodyBytes = payloadView.position();
                long out = header + FuseProtocol.URING_IN_OUT;
                MEMORY.putInt(out, FuseProtocol.OUT_HEADER + bodyBytes);
                MEMORY.putInt(out + 4, error);
                MEMORY.putLong(out + 8, unique);
                MEMORY.putInt(header + FuseProtocol.URING_PAYLOAD_SIZE, bodyBytes);
                commit();
                queue.ring.submit();
            }
        }

        private boolean fits(ByteBuffer[] parts, int firstBody) {
            long total = firstBody;
            for (int i = 1; i < parts.length; i++) {
                total += parts[i].remaining();
            }
            return total <= payloadSize;
        }

        @Override
        public int read(ByteBuffer dst) {
            throw new UnsupportedOperationException("a ring entry is filled by the kernel, not read");
        }

        @Override
        public int openBacking(int fd) throws IOException {
            return device.openBacking(fd);
        }

        @Override
        public void closeBacking(int backingId) throws IOException {
            device.closeBacking(backingId);
        }

        @Override
        public void close() {
        }
    }
}
