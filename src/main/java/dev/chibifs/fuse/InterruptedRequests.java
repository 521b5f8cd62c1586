package dev.chibifs.fuse;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.IntPredicate;
import java.util.function.LongConsumer;
import java.util.function.LongToIntFunction;

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
    // its thread made at the first watch: most mounts never see a handled signal
    private final PeriodicCheck checks = new PeriodicCheck(this, "chibifs-interrupted", CHECK_MILLIS, this::check,
            watched::isEmpty);
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
        checks.start();
    }

    /** How many requests are watched (for tests). */
    int watching() {
        return watched.size();
    }

    private void check() {
        watched.forEach((unique, tid) -> {
            // the same thread still on it: a worker that moved on serves another request by now
            if (servingThread.applyAsInt(unique) != tid) {
                watched.remove(unique);
            } else if (dying.test(tid)) {
                watched.remove(unique);
                answer.accept(unique);
            }
        });
    }

    @Override
    public synchronized void close() {
        closed = true;
        watched.clear();
        checks.close();
    }
}
