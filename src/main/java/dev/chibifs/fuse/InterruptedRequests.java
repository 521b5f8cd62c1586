package dev.chibifs.fuse;

import dev.chibifs.sys.DaemonThreads;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.IntPredicate;
import java.util.function.LongConsumer;
import java.util.function.LongToIntFunction;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Requests interrupted while their caller lived on, looked at again until they end. The kernel
 * sends one INTERRUPT per request, at the first signal: of a process that handles that signal
 * (Python's SIGINT, a program that traps SIGTERM to clean up) and is then killed, the daemon heard
 * nothing more, and its request, waiting on an S3 endpoint that does not answer, held the kill for
 * the store's 30 s.
 * Each watched request is looked at every {@link #CHECK_MILLIS} while it is served; once its thread
 * is being killed it is answered, as {@link FuseSession} answers an INTERRUPT of a dying thread.
 */
final class InterruptedRequests implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(InterruptedRequests.class);
    /** How often a watched request's caller is looked at: a killed process goes within this. */
    static final long CHECK_MILLIS = 100;

    /** The thread whose request (by unique) a worker serves now; 0 when none does. */
    private final LongToIntFunction servingThread;
    /** Whether a thread is being killed. */
    private final IntPredicate dying;
    /** Answers a request EINTR (by unique). */
    private final LongConsumer answer;
    /** Watched requests by unique, with the thread that made them. */
    private final Map<Long, Integer> watched = new ConcurrentHashMap<>();
    // made at the first watch: most mounts never see a handled signal
    private ScheduledExecutorService timer;
    private ScheduledFuture<?> checks;
    private boolean closed;

    InterruptedRequests(LongToIntFunction servingThread, IntPredicate dying, LongConsumer answer) {
        this.servingThread = servingThread;
        this.dying = dying;
        this.answer = answer;
    }

    /** Watches request {@code unique} of thread {@code tid}, interrupted while that thread was not being killed. */
    synchronized void watch(long unique, int tid) {
        if (closed) {
            return;
        }
        watched.put(unique, tid);
        if (checks == null) {
            if (timer == null) {
                timer = DaemonThreads.timer("chibifs-interrupted");
            }
            checks = timer.scheduleWithFixedDelay(this::check, CHECK_MILLIS, CHECK_MILLIS, TimeUnit.MILLISECONDS);
        }
    }

    /** How many requests are watched (for tests). */
    int watching() {
        return watched.size();
    }

    private void check() {
        try {
            watched.forEach((unique, tid) -> {
                // the same thread still on it: a worker that moved on serves another request by now
                if (servingThread.applyAsInt(unique) != tid) {
                    watched.remove(unique);
                } else if (dying.test(tid)) {
                    watched.remove(unique);
                    answer.accept(unique);
                }
            });
        } catch (RuntimeException e) {
            // a scheduled task that throws is never run again; the next check may do better
            LOG.warn("looking at interrupted requests failed: {}", e.toString());
        }
        synchronized (this) {
            if (watched.isEmpty() && checks != null) {
                checks.cancel(false);
                checks = null;
            }
        }
    }

    @Override
    public synchronized void close() {
        closed = true;
        watched.clear();
        if (timer != null) {
            timer.shutdownNow();
        }
    }
}
