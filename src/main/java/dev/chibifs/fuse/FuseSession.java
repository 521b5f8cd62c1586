package dev.chibifs.fuse;

import com.kenai.jffi.MemoryIO;
import dev.chibifs.router.PolicyDeniedException;
import dev.chibifs.router.SymlinkDeniedException;
import dev.chibifs.sys.Linux;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * One FUSE connection: answers INIT with what was negotiated, then serves requests on worker
 * threads of its own, each reading /dev/fuse into its own buffers and dispatching by opcode to
 * {@link FuseFileSystem}. No exception escapes a request: the last catch answers EIO and logs.
 *
 * <p>The workers are a pool that grows while requests wait in the store (an S3 GET over a slow
 * link, a disk that stalls), as libfuse's multi-threaded loop does: a worker that takes a request
 * with every other worker busy starts one more, up to {@link Settings#maxWorkers}, so the rest of
 * the mount keeps answering; those waiting on a store across a network count apart ({@link #asides}),
 * so that a store that stalls leaves that many for the others; one that finishes a request while
 * many others are free retires, down to {@link Settings#workers}.
 */
final class FuseSession {

    private static final Logger LOG = LoggerFactory.getLogger(FuseSession.class);
    private static final MemoryIO MEMORY = MemoryIO.getInstance();
    /**
     * How long a grant answered off the workers (a lock wait's timer) waits for the kernel to take
     * its invalidations. They are written in microseconds unless one waits for a process's lock (a
     * directory's, a page's) that it holds while it waits for a reply; then the grant is answered
     * anyway, so that the timer goes on with the other waits.
     */
    private static final long LOCK_GRANT_WAIT_NANOS = TimeUnit.MILLISECONDS.toNanos(200);
    /**
     * A worker's reply buffer. READ data goes from a buffer of its own; the largest other reply is a
     * listing, which may be shorter than the kernel asked (it asks again), so 64 KiB, not max_write.
     */
    static final int REPLY_CAPACITY = 64 * 1024;

    /** What the daemon asks of the kernel at INIT (the kernel grants what it offers). */
    record Settings(int maxWrite, int workers, int maxWorkers, boolean readdirplus, boolean passthrough, boolean debug,
                    boolean xattr, boolean ioUring) {
        static final int DEFAULT_MAX_WRITE = 1 << 20;
        /** The kernel's page: the unit of INIT's max_pages (4 KiB on x86-64 and on arm64 as Debian builds it). */
        static final int PAGE_SIZE = 4096;
        /** max_write's range, which -o max_write is held to as well: a page at least, a worker's buffer of 16 MiB at most. */
        static final int MIN_MAX_WRITE = PAGE_SIZE;
        static final int MAX_MAX_WRITE = 16 << 20;
        /** Workers kept reading /dev/fuse: more than the requests a few busy processes have in flight. */
        static final int DEFAULT_WORKERS = 8;
        /**
         * Workers at most, while requests wait in the store: each holds a request buffer of max_write
         * (resident once a WRITE fills it) and, once it serves a READ, a data buffer as large.
         */
        static final int DEFAULT_MAX_WORKERS = 64;

        /** A fixed pool of {@code workers}, with extended attributes, through /dev/fuse. */
        Settings(int maxWrite, int workers, boolean readdirplus, boolean passthrough, boolean debug) {
            this(maxWrite, workers, workers, readdirplus, passthrough, debug, true, false);
        }

        Settings {
            if (maxWrite < MIN_MAX_WRITE || maxWrite > MAX_MAX_WRITE) {
                throw new IllegalArgumentException("max_write=" + maxWrite + ": it must be from " + MIN_MAX_WRITE
                        + " to " + (MAX_MAX_WRITE >> 20) + " MiB");
            }
            if (workers < 1 || maxWorkers < workers) {
                throw new IllegalArgumentException("workers=" + workers + ", maxWorkers=" + maxWorkers
                        + ": at least one worker, and no fewer at most than at least");
            }
        }
    }

    /** What INIT settled: the kernel's protocol version and the flags both sides agreed on. */
    record Negotiated(int kernelMinor, long offered, long granted, int maxWrite, int maxPages) {
        boolean has(long flag) {
            return (granted & flag) != 0;
        }

        boolean kernelOffers(long flag) {
            return (offered & flag) != 0;
        }

        /**
         * Whether directories are opened without a round trip: the kernel offers zero-message
         * opendir, and then is told to use it. An offer, not a grant: the kernel does not read the
         * flag back from our INIT reply, it waits for an OPENDIR answered ENOSYS.
         */
        boolean opensWithoutAsking() {
            return kernelOffers(FuseProtocol.NO_OPENDIR_SUPPORT);
        }

        /** Whether an INVAL_ENTRY may only stale a name (EXPIRE_ONLY, 7.38), not unhash it. */
        boolean namesExpireOnly() {
            return kernelMinor >= 38 && kernelOffers(FuseProtocol.HAS_EXPIRE_ONLY);
        }
    }

    private final FuseChannel channel;
    private final FuseFileSystem fs;
    private final Settings settings;
    private final RequestStats stats;
    private final CompletableFuture<Integer> ended = new CompletableFuture<>();
    private final AtomicInteger running = new AtomicInteger();
    /**
     * The /dev/fuse workers now: from {@link Settings#workers} to {@link Settings#maxWorkers}, and
     * none once the kernel ended the session (a retiring worker never takes the count below the kept).
     */
    private final AtomicInteger workers = new AtomicInteger();
    /**
     * Workers serving a request. All of them busy means the next request would wait in the kernel.
     * Busy ones are counted, not idle ones: a worker just started is not reading yet, and counting
     * it as neither would start another at the first request.
     */
    private final AtomicInteger busy = new AtomicInteger();
    /**
     * Workers serving a request that may wait long ({@link FuseFileSystem#waitsLongOn}: a store across
     * a network, a directory on NFS or FUSE, an fsync), in all. They count for {@link Settings#maxWorkers}
     * no more: with an S3 server paused, 64 lookups under its prefix held every worker for 28 s, and
     * the requests of agents that never touched it (a cat in their own home) waited behind them.
     */
    private final AtomicInteger aside = new AtomicInteger();
    /**
     * The same, by the store they wait on: up to {@link #maxAside} each; past that a store's requests
     * queue for the first of its own to finish (300 such froze a mount), never behind another store's
     * (a healthy store's waited 10 s behind a stalled one's).
     */
    private final java.util.concurrent.ConcurrentHashMap<Object, Aside> asides = new java.util.concurrent.ConcurrentHashMap<>();
    /** Workers waiting long on one store, at most, for each of {@link Settings#maxWorkers}: each holds a thread and its buffers. */
    static final int ASIDE_PER_WORKER = 3;
    /** Stores that may all stall at once before the pool stops growing: the threads' ceiling. */
    private static final int STALLED_STORES = 2;

    /** One store's workers aside and its queue. */
    private static final class Aside {
        final AtomicInteger count = new AtomicInteger();
        final AsideQueue queue = new AsideQueue();
    }
    /** Names the workers started after the first ones. */
    private final AtomicInteger workerNames = new AtomicInteger();
    private final LockWaits lockWaits;
    private final ReleasesUnderWay releases = new ReleasesUnderWay();
    /** Notifications that may wait in the kernel; see {@link NoticeWriter}. */
    private final NoticeWriter notices;
    /** The channel, for notifications: each counted by kind as it is written. */
    private final NoticeCount noticed;
    private volatile Negotiated negotiated;
    /** The io_uring queues while requests come through them (null: all through /dev/fuse). */
    private volatile FuseRing ring;
    /** Set when the mount ends with files still open: every request is refused (see {@link #refuseAll}). */
    private volatile boolean refusing;
    /** Every worker with its memory, for an INTERRUPT to find the one serving a request ({@link Worker#answerIfDying}). */
    private final Set<Worker> live = java.util.concurrent.ConcurrentHashMap.newKeySet();
    /** Whether a thread is being killed; /proc's answer but in tests. */
    private volatile java.util.function.LongPredicate dying = dev.chibifs.sys.ProcStatus::dying;
    /** Requests interrupted while their caller lived on, in case it is killed before they end. */
    private final InterruptedRequests interrupted =
            new InterruptedRequests(this::servingThread, tid -> dying.test(tid), this::answerInterrupted);
    /** Expected I/O failures (EIO), said once per cause: see {@link RepeatedFailures}. */
    private volatile RepeatedFailures failures = new RepeatedFailures(System::nanoTime, new RepeatedFailures.Lines() {
        @Override
        public void warn(String line) {
            LOG.warn(line);
        }

        @Override
        public void debug(String line) {
            LOG.debug(line);
        }

        @Override
        public boolean debugEnabled() {
            return LOG.isDebugEnabled();
        }
    });

    /** Looks at the stores after a request failed as a whole store's failure would: see {@link StoreLooks}. */
    private final StoreLooks storeLooks;

    FuseSession(FuseChannel channel, FuseFileSystem fs, Settings settings, RequestStats stats) {
        this.channel = channel;
        this.fs = fs;
        this.storeLooks = new StoreLooks(System::nanoTime, () -> lookAtStores(fs), (look, delayNanos) -> {
            Thread t = new Thread(() -> {
                try {
                    TimeUnit.NANOSECONDS.sleep(delayNanos);
                } catch (InterruptedException e) {
                    // looks early, the flag left clear for the look's I/O: a look never run would stop all later ones
                }
                look.run();
            }, "chibifs-store-look");
            t.setDaemon(true); // a look held by a server away must not keep the daemon from exiting
            t.start();
        });
        this.settings = settings;
        this.stats = stats;
        this.lockWaits = new LockWaits();
        this.noticed = new NoticeCount(channel, stats);
        this.notices = new NoticeWriter(noticed);
    }

    /**
     * Asks every store whether it fails as a whole; each that does says so in the log, once per
     * change. True if one is in trouble (or could not be looked at).
     */
    private static boolean lookAtStores(FuseFileSystem fs) {
        dev.chibifs.router.Router router = fs.router();
        boolean troubled = false;
        for (dev.chibifs.path.VfsPath prefix : router.prefixes()) {
            try {
                troubled |= router.resolve(prefix).storage().unanswered() != null;
            } catch (RuntimeException e) {
                troubled = true;
                LOG.debug("looking at the store at {} failed: {}", prefix, e.toString());
            }
        }
        return troubled;
    }

    /** For tests: where expected failures are said, and by which clock. */
    void failuresTo(RepeatedFailures to) {
        failures = to;
    }

    /** For tests: which threads count as being killed. */
    void dyingWhen(java.util.function.LongPredicate killed) {
        dying = killed;
    }

    /** The requests interrupted and watched (for tests). */
    InterruptedRequests interrupted() {
        return interrupted;
    }

    /** Lock requests waiting for a close of their file to end, for tests. */
    int releasesAwaited() {
        return releases.waiters();
    }

    /** The blocking lock requests waiting (for tests: their retry delays). */
    LockWaits lockWaits() {
        return lockWaits;
    }

    /** Where notifications that may wait in the kernel go. */
    NoticeWriter notices() {
        return notices;
    }

    Negotiated negotiated() {
        return negotiated;
    }

    /** Whether requests come through io_uring queues (every CPU's queue registered), not /dev/fuse reads. */
    boolean overIoUring() {
        FuseRing r = ring;
        return r != null && r.registered();
    }

    /**
     * The mount is ending while processes still use it (an unmount that waited for them in vain):
     * every request from now on, and every lock wait, is answered ECONNABORTED, as an aborted
     * connection's are; returns whether the requests being served finished within {@code waitMillis}.
     * Only then may the store files close: closed under a live session, they let go of the
     * holders' locks, which a waiting lock's next try was granted while its holder wrote on, and a
     * write in flight met a closed handle (EBADF). An abort through fusectl would end them in the
     * kernel, but the mount is detached by now and fusectl is often not mounted.
     */
    boolean refuseAll(long waitMillis) {
        refusing = true;
        java.util.concurrent.Future<?> answered = lockWaits.refuseAll(Linux.ECONNABORTED);
        long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(waitMillis);
        try {
            if (answered != null) {
                answered.get(waitMillis, TimeUnit.MILLISECONDS);
            }
            // through /dev/fuse: an io_uring queue's request may still be under way
            while (busy.get() > 0 && System.nanoTime() < until) {
                Thread.sleep(10);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
            LOG.warn("lock waits not all answered as the mount ends: {}", e.toString());
            return false;
        }
        return busy.get() == 0;
    }

    /** Completes with 0 once the mount is gone and every worker has stopped; 1 when INIT failed. */
    CompletableFuture<Integer> ended() {
        return ended;
    }

    /** Starts serving: one thread answers INIT, then the workers start. */
    void start() {
        Thread t = new Thread(this::run, "chibifs-fuse-init");
        t.setDaemon(true);
        t.start();
    }

    private void run() {
        Worker first = new Worker();
        try {
            if (!first.init()) {
                first.free();
                notices.close();
                ended.complete(1);
                return;
            }
        } catch (IOException e) {
            LOG.error("FUSE INIT failed: {}", e.toString());
            first.free();
            notices.close();
            ended.complete(1);
            return;
        }
        List<Thread> threads = new ArrayList<>();
        running.set(settings.workers());
        workers.set(settings.workers());
        workerNames.set(settings.workers());
        stats.workersKept(settings.workers());
        FuseRing r = ring;
        if (r != null) {
            // FORGET and INTERRUPT still come through /dev/fuse, so its workers stay
            running.addAndGet(r.queues());
            r.start(this::workerEnded);
        }
        for (int i = 0; i < settings.workers(); i++) {
            Worker w = i == 0 ? first : new Worker();
            Thread t = new Thread(w::loop, "chibifs-fuse-" + i);
            t.setDaemon(true);
            threads.add(t);
            stats.workerStarted();
        }
        threads.forEach(Thread::start);
    }

    /**
     * A lock was granted on node {@code nodeid}: the kernel drops the file's cached pages and
     * attributes, so what the lock holder reads next is what other mounts wrote under the lock
     * before (as NFS revalidates at a lock). Without it, two SQLite processes on two mounts of one
     * store read stale pages and overwrite each other's rows. First the store's queued changes are
     * told, so names another mount made or removed before it unlocked are stale here too (SQLite
     * looks for a hot journal under the lock; the change feed alone lags by up to 10 ms). The grant
     * is answered once the kernel has taken them all: queued after them, the reply goes out from
     * {@link NoticeWriter}'s thread, and no worker waits (one of them may wait in the kernel for a
     * reply a worker has to give). Returns false when the caller answers now: an unlock; a worker
     * that wrote the invalidations itself; an io_uring queue with no entry to spare, after a
     * bounded wait.
     */
    private boolean grantAfterInvalidating(long unique, long nodeid, int type, FuseReply buffer, FuseChannel replyTo) {
        if (type == Linux.F_UNLCK) {
            return false;
        }
        if (replyTo instanceof FuseRing.Entry entry && !entry.holdForLockWait()) {
            grantedOffWorker(nodeid, type, buffer);
            return false;
        }
        fs.catchUpWithStore();
        dropPagesBeside(nodeid, buffer);
        FuseReply invalidation = pagesDropped(buffer, nodeid);
        if (replyTo == channel && settings.workers() > 1) {
            if (notices.writeNow(invalidation)) {
                return false; // written by this worker, which answers now
            }
        } else {
            // an io_uring queue's one thread, or a session's one worker, must never wait in the kernel
            notices.post(invalidation);
        }
        notices.postReply(unique, replyTo);
        return true;
    }

    /** Queues the notifications that drop the pages of the files open beside {@code nodeid} where nothing follows them ({@link FuseFileSystem#openBesideUnfollowed}). */
    private void dropPagesBeside(long nodeid, FuseReply buffer) {
        for (long beside : fs.openBesideUnfollowed(nodeid)) {
            notices.post(pagesDropped(buffer, beside));
        }
    }

    /** The notification that drops the cached pages and attributes of node {@code nodeid}, built in {@code buffer}. */
    private static FuseReply pagesDropped(FuseReply buffer, long nodeid) {
        return buffer.invalInode(nodeid, 0, 0);
    }

    /**
     * As {@link #grantAfterInvalidating}, for a grant answered by its caller right after (a lock
     * wait's timer, an io_uring queue with no entry to spare): waits for the invalidations
     * {@link #LOCK_GRANT_WAIT_NANOS} at most, so that a notification waiting for a reply cannot
     * hold the caller for good.
     */
    private void grantedOffWorker(long nodeid, int type, FuseReply buffer) {
        if (type == Linux.F_UNLCK) {
            return;
        }
        fs.catchUpWithStore();
        dropPagesBeside(nodeid, buffer);
        long last = notices.post(pagesDropped(buffer, nodeid));
        try {
            if (!notices.awaitWritten(last, LOCK_GRANT_WAIT_NANOS)) {
                LOG.debug("lock on node {} granted before its invalidations were taken: a notification waits for a reply",
                        NodeSlots.shown(nodeid));
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * Starts one more worker, unless there are {@link Settings#maxWorkers} already. Called by a
     * worker that is itself counted in {@link #workers} and {@link #running}, so neither count can
     * have reached zero (the session's end) meanwhile.
     */
    private void addWorker() {
        int now;
        do {
            now = workers.get();
            if (now - aside.get() >= settings.maxWorkers() || now >= settings.maxWorkers() + STALLED_STORES * maxAside()) {
                return;
            }
        } while (!workers.compareAndSet(now, now + 1));
        running.incrementAndGet();
        stats.workerStarted();
        Thread t = new Thread(new Worker()::loop, "chibifs-fuse-" + workerNames.getAndIncrement());
        t.setDaemon(true);
        t.start();
        LOG.debug("every worker was busy: {} now", now + 1);
    }

    /**
     * Whether a worker that finished a request ends, the pool being larger than it needs to be: more
     * than {@link Settings#workers}, and half as many as those free already. Half, not one: a pool that
     * shrank as soon as one worker was free would start a thread again at the next burst of requests.
     */
    private boolean retire() {
        int now;
        do {
            now = workers.get();
            if (now <= settings.workers() || now - 1 - busy.get() < Math.max(1, settings.workers() / 2)) {
                return false;
            }
        } while (!workers.compareAndSet(now, now - 1));
        return true;
    }

    private int maxAside() {
        return ASIDE_PER_WORKER * settings.maxWorkers();
    }

    /** Takes a place among the workers waiting long on {@code store}; false when {@link #maxAside} have them all. */
    private boolean reserveAside(Aside store) {
        int now;
        do {
            now = store.count.get();
            if (now >= maxAside()) {
                return false;
            }
        } while (!store.count.compareAndSet(now, now + 1));
        aside.incrementAndGet();
        return true;
    }

    private void releaseAside(Aside store) {
        store.count.decrementAndGet();
        aside.decrementAndGet();
    }

    /**
     * Copies of requests that may wait long, waiting for a place among the workers aside: at most
     * {@link #MOST} of them and {@link #MOST_BYTES} in all (a WRITE is up to max_write); past that a
     * request is answered EIO at once, as the store's own timeout would answer it later.
     */
    private static final class AsideQueue {
        static final int MOST = 4096;
        static final long MOST_BYTES = 64L << 20;
        /** A request waiting, with its unique and its caller's thread, for an INTERRUPT to find. */
        private record Waiting(long unique, int tid, int opcode, byte[] bytes) {
        }

        private final java.util.ArrayDeque<Waiting> waiting = new java.util.ArrayDeque<>();
        private long bytes;

        synchronized boolean offer(FuseRequest req, int length) {
            if (waiting.size() >= MOST || bytes + length > MOST_BYTES) {
                return false;
            }
            byte[] copy = new byte[length];
            req.buffer.get(0, copy);
            waiting.add(new Waiting(req.unique, req.pid, req.opcode, copy));
            bytes += length;
            return true;
        }

        /** The oldest waiting request, into {@code req}'s buffer, decoded; false when none waits. */
        synchronized boolean takeInto(FuseRequest req) {
            Waiting next = waiting.poll();
            if (next == null) {
                return false;
            }
            bytes -= next.bytes().length;
            req.buffer.clear();
            req.buffer.put(0, next.bytes());
            req.buffer.limit(next.bytes().length).position(0);
            return req.decode(next.bytes().length);
        }

        synchronized boolean any() {
            return !waiting.isEmpty();
        }

        /** The thread that made waiting request {@code unique}, where it may be answered early; 0 otherwise. */
        synchronized int threadOf(long unique) {
            for (Waiting w : waiting) {
                if (w.unique() == unique) {
                    return Worker.answerableEarly(w.opcode()) ? w.tid() : 0;
                }
            }
            return 0;
        }

        /** Takes request {@code unique} out, answered elsewhere (its caller killed); whether it waited here. */
        synchronized boolean remove(long unique) {
            for (java.util.Iterator<Waiting> i = waiting.iterator(); i.hasNext(); ) {
                Waiting w = i.next();
                if (w.unique() == unique) {
                    i.remove();
                    bytes -= w.bytes().length;
                    return true;
                }
            }
            return false;
        }
    }

    /** The /dev/fuse workers now (tests watch the pool grow and shrink). */
    int workers() {
        return workers.get();
    }

    private void workerEnded() {
        if (running.decrementAndGet() == 0) {
            fs.heldAnswers.stopDroppingListings();
            lockWaits.close();
            interrupted.close();
            fs.backingFiles.close();
            notices.close();
            failures.close();
            ended.complete(0);
        }
    }

    /**
     * The thread whose request {@code unique} a worker serves now, or that queues for a worker aside
     * (0: none does, or it cannot be answered early).
     */
    private int servingThread(long unique) {
        for (Worker w : live) {
            if (w.servingUnique == unique) {
                return w.servingTid;
            }
        }
        for (Aside a : asides.values()) {
            int tid = a.queue.threadOf(unique);
            if (tid != 0) {
                return tid;
            }
        }
        return 0;
    }

    /**
     * Answers request {@code unique} EINTR, its caller being killed; its own reply, later, is refused.
     * One still queued is taken out: a killed caller's queued request kept it unkillable until the
     * stalled store answered.
     */
    private void answerInterrupted(long unique) {
        for (Aside a : asides.values()) {
            a.queue.remove(unique);
        }
        try {
            new FuseReply(FuseProtocol.OUT_HEADER).begin(unique).error(Linux.EINTR).send(channel);
            LOG.debug("request {} of a dying thread: answered EINTR", unique);
        } catch (IOException answeredMeanwhile) {
            // its own reply went first
        }
    }

    /** One worker: its own request buffer, reply buffer and data buffer; serves requests until the mount goes. */
    final class Worker {
        final FuseRequest req;
        final FuseReply reply;
        /** Where replies go: /dev/fuse, or the io_uring entry the request came in (set per request). */
        FuseChannel replyTo = channel;
        /** READ's data, made at the first READ this worker serves: with passthrough none comes. */
        private ByteBuffer data;
        /** {@link #data}'s address, freed with the worker (a worker that retires gives it back at once, not at a GC). */
        private long dataAddress;
        /** Whether this worker is counted in {@link #busy} (an io_uring queue's worker never is). */
        private boolean countedBusy;
        /** What refused the request being served, for its trace: "policy", "--symlinks", or "". */
        private String refusedBy = "";
        /** The request being served as its trace shows it; null while nobody listens. */
        private RequestTrace.Asked asked;
        /** Whether the request being served went to wait for a lock (its end is traced when it comes). */
        private boolean waits;
        /** For notifications sent while the request's reply is being written (lock grants). */
        final FuseReply notice = new FuseReply(FuseProtocol.OUT_HEADER + 64);
        /** The request buffer's address (io_uring entries copy their request there). */
        final long requestAddress;
        /**
         * The request read from /dev/fuse this worker serves now (0: none), and the thread that made
         * it: what an INTERRUPT of a dying process's request answers at once. Two writes per
         * request, where a map of requests in flight cost an entry (and boxes) each.
         */
        private volatile long servingUnique;
        private volatile int servingTid;

        Worker() {
            // the kernel refuses a read of /dev/fuse into less than max_write and the headers, but only a
            // WRITE fills that much: memory left unzeroed stays untouched, so not resident, until one does
            // (allocateDirect would zero, and so touch, 1 MiB per worker)
            int size = settings.maxWrite() + FuseProtocol.REQUEST_OVERHEAD;
            requestAddress = MEMORY.allocateMemory(size, false);
            req = new FuseRequest(MEMORY.newDirectByteBuffer(requestAddress, size));
            reply = new FuseReply(REPLY_CAPACITY);
            live.add(this);
        }

        private ByteBuffer data() {
            if (data == null) {
                dataAddress = MEMORY.allocateMemory(settings.maxWrite(), false);
                data = MEMORY.newDirectByteBuffer(dataAddress, settings.maxWrite());
            }
            return data;
        }

        /**
         * Counts this worker as free from now, before its reply goes out: the caller's next request
         * may come at once, and finding this worker still busy it would start another for nothing.
         */
        private void notBusy() {
            if (countedBusy) {
                countedBusy = false;
                busy.decrementAndGet();
            }
        }

        /** Gives back the request and data memory, once this worker reads no more. */
        void free() {
            live.remove(this);
            MEMORY.freeMemory(requestAddress);
            if (dataAddress != 0) {
                data = null;
                MEMORY.freeMemory(dataAddress);
                dataAddress = 0;
            }
        }

        /** Reads and answers INIT; false when the kernel's protocol is one we cannot speak. */
        boolean init() throws IOException {
            while (true) {
                int n = channel.read(req.buffer.clear());
                if (!req.decode(n)) {
                    continue;
                }
                if (req.opcode != FuseProtocol.INIT) {
                    // nothing but INIT comes first; answer anything else as not ready
                    reply.begin(req.unique).error(Linux.EIO).send(channel);
                    continue;
                }
                int major = req.int32(0);
                int minor = req.int32(4);
                int readahead = req.int32(8);
                if (major != FuseProtocol.MAJOR || minor < FuseProtocol.MIN_MINOR) {
                    LOG.error("the kernel speaks FUSE {}.{}; chibifs needs 7.{} or later", major, minor, FuseProtocol.MIN_MINOR);
                    reply.begin(req.unique).error(Linux.EPROTO).send(channel);
                    return false;
                }
                long offered = req.initFlags();
                if (settings.ioUring() && (offered & FuseProtocol.OVER_IO_URING) == 0) {
                    LOG.warn("--io-uring: the kernel does not offer FUSE over io_uring (Linux 6.14+, with the fuse"
                            + " module's enable_uring on); requests come through /dev/fuse");
                } else if (settings.ioUring() && channel instanceof FuseDevice device) {
                    ring = FuseRing.open(device, Worker::new, fs::mayWaitLong, settings.maxWrite());
                }
                // HANDLE_KILLPRIV(_V2): the store never holds set-user-ID or set-group-ID bits nor
                // security.capability (only execute bits reach it), so the killing they ask of us is done.
                // V1 spares a GETATTR before each chown; V2 makes the kernel mark the superblock SB_NOSEC,
                // so it asks for security.capability once per inode instead of before every write (with
                // passthrough too), which costs a round trip per write while extended attributes are served.
                // CACHE_SYMLINKS: a link's target never changes (a new target is a new inode, so a new node),
                // so the kernel may keep it instead of asking at every walk through the link (lib64 -> lib)
                // DIRECT_IO_ALLOW_MMAP: a file read with FOPEN_DIRECT_IO (see FuseFileSystem.open) can still be
                // mapped shared, as Python's mmap(ACCESS_READ) does; without it such opens stay in the page cache
                long wanted = FuseProtocol.ASYNC_READ | FuseProtocol.BIG_WRITES | FuseProtocol.MAX_PAGES
                        | FuseProtocol.PARALLEL_DIROPS | FuseProtocol.HANDLE_KILLPRIV | FuseProtocol.HANDLE_KILLPRIV_V2
                        | FuseProtocol.ATOMIC_O_TRUNC | FuseProtocol.CACHE_SYMLINKS
                        | FuseProtocol.INIT_EXT | FuseProtocol.POSIX_LOCKS | FuseProtocol.FLOCK_LOCKS
                        | FuseProtocol.DIRECT_IO_ALLOW_MMAP
                        | (settings.readdirplus() ? FuseProtocol.DO_READDIRPLUS : 0)
                        | (settings.passthrough() ? FuseProtocol.PASSTHROUGH : 0)
                        | (ring != null ? FuseProtocol.OVER_IO_URING : 0);
                long granted = wanted & offered;
                int maxPages = settings.maxWrite() / Settings.PAGE_SIZE;
                negotiated = new Negotiated(minor, offered, granted, settings.maxWrite(), maxPages);
                reply.begin(req.unique).init(Math.min(minor, FuseProtocol.MINOR), readahead, granted,
                        64, 48, settings.maxWrite(), maxPages, (granted & FuseProtocol.PASSTHROUGH) != 0 ? 1 : 0);
                reply.send(channel);
                fs.storeAtOpen(noticed);
                if ((granted & FuseProtocol.DIRECT_IO_ALLOW_MMAP) != 0) {
                    fs.allowDirectIo();
                }
                if ((granted & FuseProtocol.PASSTHROUGH) != 0) {
                    fs.backingFiles.passthrough(channel);
                }
                if (negotiated.opensWithoutAsking()) {
                    fs.directories.listWithoutOpening();
                }
                fs.heldAnswers.noticesThrough(notices, negotiated.namesExpireOnly());
                LOG.debug("INIT: kernel 7.{}, offered {}, granted {}", minor, Long.toHexString(offered), Long.toHexString(granted));
                return true;
            }
        }

        void loop() {
            boolean retired = false;
            try {
                while (true) {
                    int n;
                    try {
                        n = channel.read(req.buffer.clear());
                    } catch (ChannelClosedException gone) {
                        return;
                    } catch (IOException e) {
                        LOG.error("reading /dev/fuse failed; this worker stops", e);
                        return;
                    }
                    countedBusy = true;
                    if (busy.incrementAndGet() >= workers.get()) {
                        // this request may wait (in the store, for S3): a request that comes meanwhile
                        // must find a reader, or it waits in the kernel with its caller behind it
                        addWorker();
                    }
                    if (req.decode(n)) {
                        Object store = fs.waitsLongOn(req);
                        if (store != null) {
                            serveAside(asides.computeIfAbsent(store, s -> new Aside()), n);
                        } else {
                            serveWhatever();
                        }
                    }
                    notBusy();
                    if (retire()) {
                        retired = true;
                        return;
                    }
                }
            } finally {
                stats.workerEnded();
                free();
                if (!retired && workers.decrementAndGet() == 0) {
                    // the kernel ended the session (ENODEV): a ring entry still holding a request (a
                    // lock wait) would never come back, so the queues are told to end too
                    FuseRing r = ring;
                    if (r != null) {
                        r.stop();
                    }
                }
                workerEnded();
            }
        }

        /**
         * Serves a request that may wait long: as one of the workers aside, or, with {@link #maxAside}
         * of them waiting already, queued for the first to finish; this worker then goes back to
         * reading /dev/fuse for the rest of the mount.
         */
        private void serveAside(Aside store, int length) {
            if (!reserveAside(store)) {
                if (!store.queue.offer(req, length)) {
                    LOG.warn("{} of node {}: {} requests wait on stores across a network already: EIO",
                            FuseProtocol.opcodeName(req.opcode), NodeSlots.shown(req.nodeid), maxAside() + AsideQueue.MOST);
                    answer(Linux.EIO);
                    return;
                }
                // queued; a place may have come free since the try above, its worker gone before the queue
                // had this one: then this worker serves what waits, or nobody might
                if (!reserveAside(store)) {
                    return;
                }
                notBusy();
                serveQueuedAside(store);
                return;
            }
            if (busy.get() >= workers.get()) {
                addWorker(); // refused when this one was read, counting for the most
            }
            serveWhatever();
            notBusy();
            serveQueuedAside(store);
        }

        /** Holding a place aside: serves what waits for one, then lets the place go, looking once more after. */
        private void serveQueuedAside(Aside store) {
            do {
                while (store.queue.takeInto(req)) {
                    countedBusy = true;
                    if (busy.incrementAndGet() >= workers.get()) {
                        addWorker();
                    }
                    serveWhatever();
                    notBusy();
                }
                releaseAside(store);
            } while (store.queue.any() && reserveAside(store));
        }

        /** Answers the request in the buffer {@code errno} without serving it. */
        private void answer(int errno) {
            try {
                reply.begin(req.unique);
                reply.error(errno);
                reply.send(replyTo);
            } catch (IOException notDelivered) {
                LOG.debug("reply to {} not delivered: {}", FuseProtocol.opcodeName(req.opcode), notDelivered.toString());
            }
        }

        /**
         * {@link #serve}, and should even its last catch fail (an Error thrown while it answers: a
         * class the JVM cannot load when the daemon is out of descriptors), EIO all the same: a
         * request never answered hangs its caller for as long as the mount lives, and a worker that
         * ended here would take the next ones with it.
         */
        void serveWhatever() {
            try {
                serve();
            } catch (Throwable escaped) {
                try {
                    LOG.error("{} of node {}: the answer itself failed", FuseProtocol.opcodeName(req.opcode), NodeSlots.shown(req.nodeid),
                            escaped);
                } catch (Throwable cannotEvenLog) {
                    // the reply below matters more than the line
                }
                try {
                    // answered twice if it failed after its reply went: the kernel refuses the second (ENOENT)
                    reply.begin(req.unique);
                    reply.error(Linux.EIO);
                    reply.send(replyTo);
                } catch (Throwable lost) {
                    // the channel is gone, or nothing at all works: the session's end answers for it
                }
            }
        }

        /** Serves the request in the buffer. The last catch: nothing escapes, anything unexpected is EIO. */
        void serve() {
            long start = System.nanoTime();
            int opcode = req.opcode;
            stats.started(opcode);
            RequestTrace trace = stats.trace();
            // described before the operation runs: an UNLINK or a RENAME changes the names it would show
            asked = trace.listened() && RequestTrace.traces(opcode)
                    ? new RequestTrace.Asked(fs.tracedCaller(req), req.pid, RequestTrace.programOf(req.pid),
                            FuseProtocol.opcodeName(opcode), fs.describe(req))
                    : null;
            refusedBy = "";
            waits = false;
            boolean release = opcode == FuseProtocol.RELEASE;
            releases.read(req.unique, release, req.nodeid);
            boolean tracked = replyTo == channel && answerableEarly(opcode);
            if (tracked) {
                servingTid = req.pid;
                servingUnique = req.unique; // after the thread: a reader that finds the unique finds its thread
            }
            try {
                reply.begin(req.unique);
                if (!dispatch()) {
                    return; // no reply (FORGET, BATCH_FORGET, INTERRUPT), or one another thread sends
                }
            } catch (Throwable t) {
                int errno;
                try {
                    errno = errnoOf(t);
                } catch (Throwable worse) {
                    errno = Linux.EIO; // the judging itself failed; see serveWhatever
                }
                reply.error(errno);
            } finally {
                if (tracked) {
                    servingUnique = 0;
                }
                if (letsGoOfLocks(opcode)) {
                    lockWaits.letGo(req.nodeid); // counted before the RELEASE ends: see closesFirst
                }
                if (release) {
                    releases.end(req.unique);
                }
                long elapsed = System.nanoTime() - start;
                stats.served(opcode, elapsed, reply.isError() ? reply.errno() : 0);
                failures.tick();
                if (!reply.isError()) {
                    storeLooks.answered();
                }
                if (asked != null && !waits) {
                    trace.served(asked.answered(reply.isError() ? reply.errno() : reply.isNegative() ? Linux.ENOENT : 0,
                            refusedBy, elapsed / 1000));
                }
                notBusy();
            }
            if (settings.debug()) {
                LOG.info("{} node {} unique {}: {}", FuseProtocol.opcodeName(opcode), NodeSlots.shown(req.nodeid), req.unique,
                        reply.isError() ? "error " + reply.errno() : "ok");
            }
            try {
                reply.send(replyTo);
            } catch (IOException notDelivered) {
                // an interrupted request's reply goes nowhere (ENOENT): the kernel counts none of its
                // lookups, and will send no RELEASE for a handle it never got
                if (reply.rememberedNode != null) {
                    fs.forget(reply.rememberedNode.id, 1);
                }
                for (NodeTable.Node n : reply.plusNodes) {
                    fs.forget(n.id, 1);
                }
                if (reply.openedHandle != 0 && !reply.isError()) {
                    try {
                        fs.releaseUndelivered(reply.openedHandle, opcode == FuseProtocol.OPENDIR);
                    } catch (IOException | RuntimeException e) {
                        LOG.debug("releasing an undelivered handle failed: {}", e.toString());
                    }
                }
                LOG.debug("reply to {} not delivered: {}", FuseProtocol.opcodeName(opcode), notDelivered.toString());
            }
        }

        private int errnoOf(Throwable t) {
            int errno = -Errno.of(t);
            if (errno > 0) {
                storeLooks.failed(errno);
                if (errno == Linux.EIO) {
                    // an expected I/O failure (a store's disk or S3 away): the line that says why, once
                    // per cause, as a store that has gone fails every request alike
                    failures.failed(causeOf(t), FuseProtocol.opcodeName(req.opcode) + " of node " + NodeSlots.shown(req.nodeid) + ": "
                            + t.getMessage());
                }
                if (t instanceof SymlinkDeniedException) {
                    refusedBy = RequestTrace.SYMLINK_RULE;
                }
                if (t instanceof PolicyDeniedException) {
                    refusedBy = RequestTrace.POLICY;
                    stats.denied(String.valueOf(fs.caller(req)));
                    LOG.debug("{} denied: {}", FuseProtocol.opcodeName(req.opcode), t.getMessage());
                }
                return errno;
            }
            LOG.error("{} of node {} failed unexpectedly", FuseProtocol.opcodeName(req.opcode), NodeSlots.shown(req.nodeid), t);
            return Linux.EIO;
        }

        /** What makes failures alike: their reason without the file each names. */
        private static String causeOf(Throwable t) {
            return t instanceof java.nio.file.FileSystemException f && f.getReason() != null ? f.getReason()
                    : String.valueOf(t.getMessage());
        }

        /**
         * While someone listens, traces that the request being served goes to wait for a lock, and
         * returns what traces the wait's end; null otherwise. Traced here, before the wait begins,
         * so its end (on the wait's own thread) can never come first.
         */
        private java.util.function.IntConsumer tracedWait() {
            if (asked == null) {
                return null;
            }
            RequestTrace trace = stats.trace();
            trace.served(asked.waiting());
            long began = System.nanoTime();
            RequestTrace.Asked waited = asked.detailed("after waiting");
            return errno -> trace.served(waited.answered(errno, "", (System.nanoTime() - began) / 1000));
        }

        /** Whether the kernel waits for no reply to a request of this opcode. */
        private static boolean takesNoReply(int opcode) {
            return opcode == FuseProtocol.FORGET || opcode == FuseProtocol.BATCH_FORGET || opcode == FuseProtocol.INTERRUPT;
        }

        /**
         * Whether a request may be answered before it is done ({@link #answerIfDying}): not one with
         * no reply, and not a lock request or a FLUSH, whose owner's locks the kernel lets go at the
         * RELEASE that an early answer lets come first: a lock taken after it stayed held for good.
         */
        static boolean answerableEarly(int opcode) {
            return !takesNoReply(opcode) && opcode != FuseProtocol.SETLK && opcode != FuseProtocol.SETLKW
                    && opcode != FuseProtocol.GETLK && opcode != FuseProtocol.FLUSH;
        }

        /**
         * Request {@code unique}, being served, was interrupted: where its caller is being killed,
         * it is answered EINTR now. The kernel waits for a request it has sent uninterruptibly, even
         * for a killed process, so one that waits in a store (an S3 endpoint that does not answer:
         * 30 s) held `kill -9`, `timeout` and Ctrl-C as long. Nobody reads that answer; the request
         * goes on, and its own reply, which the kernel then refuses, gives back what it held (see
         * {@link #serve}). A caller that handles the signal is left to the request's own answer,
         * since EINTR from stat or open is not what most programs expect, but is watched
         * ({@link InterruptedRequests}): a kill may follow, and the kernel tells of no second signal.
         */
        private void answerIfDying(long unique) {
            int tid = servingThread(unique);
            if (tid == 0) {
                return;
            }
            if (dying.test(tid)) {
                answerInterrupted(unique);
            } else {
                interrupted.watch(unique, tid);
            }
        }

        /** Whether the request being served let go of locks on its node (an unlock, a close) that a waiter may want. */
        private boolean letsGoOfLocks(int opcode) {
            return opcode == FuseProtocol.RELEASE || opcode == FuseProtocol.FLUSH
                    || (opcode == FuseProtocol.SETLK || opcode == FuseProtocol.SETLKW) && req.lockType() == Linux.F_UNLCK;
        }

        /**
         * Before a lock request is tried: waits for the closes of its file queued before it
         * ({@link ReleasesUnderWay}), so that it meets what a disk would, and returns
         * {@link LockWaits#letGoCount} as it is tried: where it changed by the time a try was refused,
         * something was let go meanwhile (a RELEASE counts its let-go before it ends), and another try
         * may succeed. Through io_uring each CPU's queue delivers on its own, and a request numbered
         * below this one may wait in this very thread's queue: there only the RELEASEs already under
         * way are waited for.
         */
        private long closesFirst() {
            releases.awaitEarlier(req.unique, req.nodeid, !(replyTo instanceof FuseRing.Entry));
            return lockWaits.letGoCount();
        }

        /**
         * Tries the lock: true when granted. A refused try is made once more where something was let
         * go since {@code letGo} ({@link #closesFirst}), perhaps between the try and its refusal.
         */
        private boolean tried(LockWaits.Attempt attempt, long letGo) throws IOException {
            return attempt.tryNow() || lockWaits.letGoCount() != letGo && attempt.tryNow();
        }

        /** Runs the request's operation into the reply; false when the opcode takes no reply. */
        private boolean dispatch() throws IOException {
            if (refusing && !takesNoReply(req.opcode)) {
                throw new dev.chibifs.sys.ErrnoException(Linux.ECONNABORTED, null, "the mount is ending");
            }
            switch (req.opcode) {
                case FuseProtocol.LOOKUP -> fs.lookup(req, reply);
                case FuseProtocol.FORGET -> {
                    fs.forget(req.nodeid, req.forgetCount());
                    return false;
                }
                case FuseProtocol.BATCH_FORGET -> {
                    int count = req.batchCount();
                    for (int i = 0; i < count; i++) {
                        fs.forget(req.int64(8 + 16 * i), req.int64(16 + 16 * i));
                    }
                    return false;
                }
                case FuseProtocol.INTERRUPT -> {
                    // a lock wait ends with EINTR; other requests are short, but for a dying process's
                    lockWaits.interrupt(req.interrupted());
                    answerIfDying(req.interrupted());
                    return false;
                }
                // a close lets go of its locks before it returns, but its RELEASE may still be under way
                // (see ReleasesUnderWay): a lock request waits for the RELEASEs of its file queued before it
                case FuseProtocol.GETLK -> {
                    closesFirst();
                    fs.locks.getlk(req, reply);
                }
                case FuseProtocol.SETLK -> {
                    LockWaits.Attempt attempt = fs.locks.setlk(req);
                    if (!tried(attempt, closesFirst())) {
                        reply.error(Linux.EAGAIN);
                    } else if (grantAfterInvalidating(req.unique, req.nodeid, req.lockType(), notice, replyTo)) {
                        return false; // answered by the notice writer
                    }
                }
                case FuseProtocol.SETLKW -> {
                    LockWaits.Attempt attempt = fs.locks.setlk(req);
                    long letGo = closesFirst();
                    if (!tried(attempt, letGo)) {
                        if (replyTo instanceof FuseRing.Entry entry && !entry.holdForLockWait()) {
                            // nearly every entry of this CPU's io_uring queue waits for a lock already: with
                            // all of them waiting, the unlock that would end the waits could find no entry
                            reply.error(Linux.EDEADLK);
                            return true;
                        }
                        long node = req.nodeid;
                        int type = req.lockType();
                        waits = true;
                        lockWaits.await(req.unique, node, attempt, waitNotice -> grantedOffWorker(node, type, waitNotice), replyTo,
                                tracedWait(), letGo);
                        return false; // answered by the wait, on its own thread
                    }
                    if (grantAfterInvalidating(req.unique, req.nodeid, req.lockType(), notice, replyTo)) {
                        return false; // answered by the notice writer
                    }
                }
                case FuseProtocol.FLUSH -> fs.flush(req, reply);
                case FuseProtocol.GETATTR -> fs.getattr(req, reply);
                case FuseProtocol.STATX -> fs.statx(req, reply);
                case FuseProtocol.SETATTR -> fs.attributeChanges.setattr(req, reply);
                case FuseProtocol.READLINK -> fs.readlink(req, reply);
                case FuseProtocol.SYMLINK -> fs.followingMoves(() -> fs.symlink(req, reply));
                case FuseProtocol.MKNOD -> fs.followingMoves(() -> fs.mknod(req, reply));
                case FuseProtocol.MKDIR -> fs.followingMoves(() -> fs.mkdir(req, reply));
                case FuseProtocol.UNLINK -> fs.followingMoves(() -> fs.unlink(req, reply));
                case FuseProtocol.RMDIR -> fs.followingMoves(() -> fs.rmdir(req, reply));
                case FuseProtocol.RENAME, FuseProtocol.RENAME2 -> fs.followingMoves(() -> fs.rename(req, reply));
                case FuseProtocol.LINK -> fs.followingMoves(() -> fs.link(req, reply));
                case FuseProtocol.OPEN -> fs.open(req, reply, data());
                case FuseProtocol.READ -> fs.io.read(req, reply, data());
                case FuseProtocol.WRITE -> fs.io.write(req, reply);
                case FuseProtocol.STATFS -> fs.statfs(req, reply);
                case FuseProtocol.RELEASE -> fs.release(req, reply);
                case FuseProtocol.FSYNC -> fs.io.fsync(req, reply);
                // without xattrs, ENOSYS once each: the kernel stops asking, even for security.capability
                // before each write it serves (one round trip less per write(2)), and answers
                // EOPNOTSUPP itself to setfattr
                case FuseProtocol.SETXATTR, FuseProtocol.REMOVEXATTR, FuseProtocol.GETXATTR, FuseProtocol.LISTXATTR -> {
                    if (!settings.xattr()) {
                        reply.error(Linux.ENOSYS);
                    } else if (req.opcode == FuseProtocol.SETXATTR) {
                        fs.xattrs.setxattr(req, reply);
                    } else if (req.opcode == FuseProtocol.REMOVEXATTR) {
                        fs.xattrs.removexattr(req, reply);
                    } else if (req.opcode == FuseProtocol.GETXATTR) {
                        fs.xattrs.getxattr(req, reply);
                    } else {
                        fs.xattrs.listxattr(req, reply);
                    }
                }
                case FuseProtocol.OPENDIR -> fs.directories.opendir(req, reply);
                case FuseProtocol.READDIR -> fs.directories.readdir(req, reply, false);
                case FuseProtocol.READDIRPLUS -> fs.directories.readdir(req, reply, true);
                case FuseProtocol.RELEASEDIR -> fs.directories.releasedir(req, reply);
                case FuseProtocol.FSYNCDIR -> fs.fsyncdir(req, reply);
                case FuseProtocol.ACCESS -> fs.access(req, reply);
                case FuseProtocol.CREATE -> fs.followingMoves(() -> fs.create(req, reply));
                case FuseProtocol.TMPFILE -> fs.tmpfile(req, reply);
                case FuseProtocol.FALLOCATE -> fs.io.fallocate(req, reply);
                case FuseProtocol.LSEEK -> fs.io.lseek(req, reply);
                case FuseProtocol.COPY_FILE_RANGE -> fs.io.copyFileRange(req, reply, data(), false);
                case FuseProtocol.COPY_FILE_RANGE_64 -> fs.io.copyFileRange(req, reply, data(), true);
                // isatty() and the like ask every open file: nothing here is a terminal or a device
                case FuseProtocol.IOCTL -> reply.error(Linux.ENOTTY);
                case FuseProtocol.DESTROY -> {
                    // the kernel is done with this connection; the reads end with ENODEV
                }
                // ENOSYS makes the kernel stop asking for the rest of the mount
                default -> reply.error(Linux.ENOSYS);
            }
            return true;
        }
    }
}
