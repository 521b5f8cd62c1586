package dev.chibifs.fuse;

import dev.chibifs.store.FileLocks;
import dev.chibifs.sys.Linux;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.IntConsumer;

/**
 * Blocking lock requests (F_SETLKW, a blocking flock) that could not be granted at once: each is
 * tried again on a timer of its own instead of holding a worker thread, which would leave the
 * mount one worker short per waiter (a lock held for long would stop the mount). A waiter tries
 * again at once when this mount lets go of a lock on its file (an unlock, a close's RELEASE) or its
 * store tells of a let-go elsewhere (a local store hears another mount's or a program's close of
 * the store file: {@link FileLocks#whenLetGo}); in between, and where nothing tells (an S3 store's
 * other hosts), it polls: from 1 ms, doubling to 50 ms. An INTERRUPT (Ctrl-C, a signal) ends a wait
 * with EINTR at once.
 *
 * <p>Many waiters on one file (200 {@code flock} processes queued on one lock) are all woken at
 * every let-go, and one of them wins; each tries once. Let-gos told before the file's pass of
 * tries has begun (this mount's RELEASE, and the store's watch, which tells each close once per
 * waiter) are that one pass: each telling a pass over every waiter gave the timer thread some
 * 40,000 tasks per close with 200 waiters, millions for their 200 hand-overs. A waiter refused
 * at a let-go waits on at the pace its polls had reached, not from 1 ms again: the winner's own
 * let-go will wake it, and restarting the losers' polls kept 200 waiters polling every few
 * milliseconds while the lock went round, on the one thread that also hands it on.
 *
 * <p>A waiter's next try and its delay are touched on the timer thread only, so a try made at
 * once never leaves a second chain of tries behind it.
 */
final class LockWaits implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(LockWaits.class);
    private static final long FIRST_RETRY_MICROS = 1_000;
    private static final long LAST_RETRY_MICROS = 50_000;
    /** Interrupts that came before their request was waiting; kept for the request to find. */
    private static final int EARLY_INTERRUPTS = 1024;

    /** One try at the lock: true when granted; throws for a failure to report. */
    interface Attempt {
        boolean tryNow() throws IOException;

        /** What tells of a let-go elsewhere ({@link FileLocks#whenLetGo}); null: none, poll. */
        default AutoCloseable whenLetGo(Runnable letGo) {
            return null;
        }
    }

    private final ScheduledExecutorService timer;
    /** {@code replyTo}: where the answer goes (/dev/fuse, or the io_uring entry the request came in). */
    private static final class Waiter {
        final long node;
        final Attempt attempt;
        final java.util.function.Consumer<FuseReply> granted;
        final FuseChannel replyTo;
        final IntConsumer ended;
        /** The next try, and the delay it came after; on the timer thread only. */
        ScheduledFuture<?> next;
        long delayMicros;
        /** What tells of a let-go the mount cannot see; null if nothing does. Set before the first try. */
        volatile AutoCloseable letGoWatch;

        /** Ends the watch, once the wait has been answered. */
        void done() {
            AutoCloseable w = letGoWatch;
            letGoWatch = null;
            if (w != null) {
                try {
                    w.close();
                } catch (Exception e) {
                    LOG.debug("ending a lock wait's watch failed: {}", e.toString());
                }
            }
        }

        Waiter(long node, Attempt attempt, java.util.function.Consumer<FuseReply> granted, FuseChannel replyTo,
               IntConsumer ended) {
            this.node = node;
            this.attempt = attempt;
            this.granted = granted;
            this.replyTo = replyTo;
            this.ended = ended;
        }
    }

    private final ConcurrentMap<Long, Waiter> waiting = new ConcurrentHashMap<>();
    private final Set<Long> interruptedEarly = Collections.newSetFromMap(Collections.synchronizedMap(
            new LinkedHashMap<>() {
                @Override
                protected boolean removeEldestEntry(Map.Entry<Long, Boolean> eldest) {
                    return size() > EARLY_INTERRUPTS;
                }
            }));
    /** The timer thread's reply and notification buffers. */
    private final FuseReply reply = new FuseReply(FuseProtocol.OUT_HEADER + 64);
    private final FuseReply notice = new FuseReply(FuseProtocol.OUT_HEADER + 64);

    /** Nodes whose let-go pass is queued on the timer and has not begun ({@link #letGo}). */
    private final Set<Long> passesDue = ConcurrentHashMap.newKeySet();
    /** Let-gos seen ({@link #letGo}). */
    private final AtomicLong letGos = new AtomicLong();
    /** The first retry's delay and the longest (µs); changed by tests only. */
    private volatile long firstRetryMicros = FIRST_RETRY_MICROS;
    private volatile long lastRetryMicros = LAST_RETRY_MICROS;

    LockWaits() {
        this(timerThread());
    }

    /** Waits whose tries run on {@code timer}: one thread, or a test's clock. */
    LockWaits(ScheduledExecutorService timer) {
        this.timer = timer;
    }

    private static ScheduledExecutorService timerThread() {
        ScheduledThreadPoolExecutor timer = new ScheduledThreadPoolExecutor(1, r -> {
            Thread t = new Thread(r, "chibifs-lock-waits");
            t.setDaemon(true);
            return t;
        });
        // every let-go moves each waiter's next try: a cancelled one kept its place in the queue until
        // its time, up to 50 ms, and 200 waiters' hand-overs piled them up there
        timer.setRemoveOnCancelPolicy(true);
        return timer;
    }

    /** For tests: retries from {@code first}, doubling to {@code last}, so that only a let-go can answer soon. */
    void retryEvery(java.time.Duration first, java.time.Duration last) {
        firstRetryMicros = TimeUnit.NANOSECONDS.toMicros(first.toNanos());
        lastRetryMicros = TimeUnit.NANOSECONDS.toMicros(last.toNanos());
    }

    /**
     * Waits for request {@code unique}'s lock on node {@code node}, answering it when granted, failed
     * or interrupted; {@code granted} runs on the timer thread, with a notification buffer, before
     * the reply of a grant, and {@code ended} (may be null) after the answer, with its errno (0 for
     * the grant). {@code letGoBefore}: {@link #letGoCount} before the refused try.
     */
    void await(long unique, long node, Attempt attempt, java.util.function.Consumer<FuseReply> granted,
               FuseChannel replyTo, IntConsumer ended, long letGoBefore) {
        Waiter waiter = new Waiter(node, attempt, granted, replyTo, ended);
        // another mount's unlock, or a program's on the store file, tells us nothing: the store's watch does
        waiter.letGoWatch = attempt.whenLetGo(() -> letGo(node));
        waiting.put(unique, waiter);
        if (interruptedEarly.remove(unique)) {
            interrupt(unique);
            return;
        }
        long first = firstRetryMicros;
        // a let-go between the refused try and the put above found no waiter to try again: try now
        long in = letGos.get() != letGoBefore ? 0 : first;
        onTimer(() -> {
            if (waiter.next == null) { // else a let-go since the put has scheduled a try already
                schedule(unique, waiter, in, first);
            }
        });
    }

    /** How many let-gos this mount has seen: taken before a lock is tried, for {@link #await}. */
    long letGoCount() {
        return letGos.get();
    }

    /**
     * This mount let go of locks on node {@code node} (an unlock, a close): its waiters try again at
     * once. Costs a count and a look at an empty map where nobody waits.
     */
    void letGo(long node) {
        letGos.incrementAndGet(); // before the look: await puts, then reads the count
        if (waiting.isEmpty()) {
            return;
        }
        if (!passesDue.add(node)) {
            return; // the file's pass is queued and not begun: its tries come after this let-go too
        }
        onTimer(() -> {
            passesDue.remove(node); // before the tries: a let-go from now on needs a pass of its own
            waiting.forEach((unique, waiter) -> {
                if (waiter.node == node) {
                    wake(unique, waiter);
                }
            });
        });
    }

    /** On the timer thread: the waiter tries at once, and if refused waits on at the pace it had (see the class comment). */
    private void wake(long unique, Waiter waiter) {
        schedule(unique, waiter, 0, waiter.delayMicros);
    }

    private void onTimer(Runnable r) {
        try {
            timer.execute(r);
        } catch (java.util.concurrent.RejectedExecutionException stopping) {
            // unmounting: nobody waits for the reply any more
        }
    }

    /** On the timer thread: the waiter's next try in {@code inMicros}, which is to count as a wait of {@code delayMicros}. */
    private void schedule(long unique, Waiter waiter, long inMicros, long delayMicros) {
        if (waiter.next != null) {
            waiter.next.cancel(false);
        }
        waiter.delayMicros = delayMicros;
        try {
            waiter.next = timer.schedule(() -> retry(unique, waiter), inMicros, TimeUnit.MICROSECONDS);
        } catch (java.util.concurrent.RejectedExecutionException stopping) {
            // unmounting: nobody waits for the reply any more
        }
    }

    private void retry(long unique, Waiter expected) {
        Waiter waiter = waiting.get(unique);
        if (waiter != expected) {
            return; // interrupted meanwhile, and answered
        }
        waiter.next = null;
        int errno;
        try {
            if (!waiter.attempt.tryNow()) {
                long delay = Math.min(waiter.delayMicros * 2, lastRetryMicros);
                schedule(unique, waiter, delay, delay);
                return;
            }
            errno = 0;
        } catch (IOException | RuntimeException e) {
            int mapped = -Errno.of(e);
            errno = mapped > 0 ? mapped : Linux.EIO;
            if (mapped <= 0) {
                LOG.error("waiting for a lock failed unexpectedly", e);
            }
        }
        if (waiting.remove(unique, waiter)) {
            waiter.done();
            if (errno == 0) {
                waiter.granted.accept(notice);
            }
            answer(unique, errno, waiter);
        } else if (errno == 0) {
            // interrupted after the lock was taken: the caller gets EINTR, so the lock must not stay
            LOG.debug("a lock granted as its wait was interrupted stays until its owner unlocks or closes");
        }
    }

    /** The kernel interrupted request {@code unique}: a waiting lock request ends with EINTR. */
    void interrupt(long unique) {
        Waiter waiter = waiting.remove(unique);
        if (waiter != null) {
            onTimer(() -> {
                if (waiter.next != null) {
                    waiter.next.cancel(false);
                }
                waiter.done();
                answer(unique, Linux.EINTR, waiter);
            });
        } else {
            interruptedEarly.add(unique);
        }
    }

    /** On the timer thread only: it owns {@link #reply}. */
    private void answer(long unique, int errno, Waiter waiter) {
        try {
            FuseReply r = reply.begin(unique);
            if (errno != 0) {
                r.error(errno);
            }
            r.send(waiter.replyTo);
        } catch (IOException e) {
            LOG.debug("lock reply not delivered: {}", e.toString());
        }
        if (waiter.ended != null) {
            waiter.ended.accept(errno);
        }
    }

    int waiting() {
        return waiting.size();
    }

    /**
     * The mount is ending with its store files about to close: every wait ends now with
     * {@code errno}, on the timer thread, and returns once all are answered (null: the timer is gone).
     * Closing the files first let go of the holders' locks under the waiters, which the next retry
     * was then granted while the holder went on writing.
     */
    java.util.concurrent.Future<?> refuseAll(int errno) {
        try {
            return timer.submit(() -> {
                for (Long unique : List.copyOf(waiting.keySet())) {
                    Waiter waiter = waiting.remove(unique);
                    if (waiter != null) {
                        if (waiter.next != null) {
                            waiter.next.cancel(false);
                        }
                        waiter.done();
                        answer(unique, errno, waiter);
                    }
                }
            });
        } catch (java.util.concurrent.RejectedExecutionException stopped) {
            return null;
        }
    }

    @Override
    public void close() {
        timer.shutdownNow();
        waiting.values().forEach(Waiter::done);
    }
}
