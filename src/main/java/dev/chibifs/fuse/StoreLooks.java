package dev.chibifs.fuse;

import dev.chibifs.store.WholeStoreFailure;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import java.util.function.LongSupplier;

/**
 * After a request fails as a whole store's failure would (its disk: EIO; a FUSE store's daemon
 * killed: ENOTCONN; a file system turned read-only after errors: EROFS), the stores are looked at
 * ({@code Storage#unanswered}), and a local store failing says so in the log, naming itself and
 * the errno: the failing request's own line named neither ("WRITE of node N: Input/output
 * error"), and ENOTCONN was not logged at all. Looked at off the request's thread (a store on a
 * server away may hold the look), one look at a time and at most one per {@link #INTERVAL_NANOS}:
 * a failing store fails tens of thousands of requests a second.
 *
 * <p>While the last look found a store in trouble, a request answered is a reason to look too
 * (as rarely): a failing period ends without a failing request to tell of it, and a store whose
 * trouble stayed remembered through a healthy spell said neither "answers again" nor, at its next
 * failure, anything (the trouble found equalled the one remembered). Nothing looks while every
 * store answered at the last look.
 *
 * <p>A look asked for before the interval has passed is not dropped but waits for the interval's
 * end (one waits at most): requests that stopped within a second of a look otherwise left the
 * trouble remembered, and the next failing period said nothing. A look asked for while one runs
 * follows it the same way, as the running one may have looked before the request's answer.
 */
final class StoreLooks {

    /** The least time between two looks. */
    static final long INTERVAL_NANOS = TimeUnit.SECONDS.toNanos(1);

    /** Runs a look off the request's thread, after {@code delayNanos} (0: at once). */
    interface Runner {
        void run(Runnable look, long delayNanos);
    }

    /** No look runs or waits. */
    private static final int IDLE = 0;
    /** A look waits for its time or runs; nothing asked for since it began. */
    private static final int BUSY = 1;
    /** A look runs, and another was asked for since it began: one follows it. */
    private static final int BUSY_ASKED_AGAIN = 2;

    private final LongSupplier clock;
    /** Looks at every store; true if one is in trouble. */
    private final BooleanSupplier look;
    private final Runner runner;
    private final AtomicInteger state = new AtomicInteger(IDLE);
    /** When the last look began; none yet while {@link #never}. */
    private volatile long lastLook;
    private volatile boolean never = true;
    /** Whether the last look found a store in trouble: only then does an answered request look. */
    private volatile boolean troubled;

    StoreLooks(LongSupplier clock, BooleanSupplier look, Runner runner) {
        this.clock = clock;
        this.look = look;
        this.runner = runner;
    }

    /** A request failed with {@code errno}: the stores are looked at if that may be a whole store failing. */
    void failed(int errno) {
        if (WholeStoreFailure.mayBe(errno)) {
            lookSoon();
        }
    }

    /** A request was answered: the stores are looked at if the last look found one in trouble (has it ended?). */
    void answered() {
        if (troubled) {
            lookSoon();
        }
    }

    private void lookSoon() {
        while (true) {
            int s = state.get();
            if (s == BUSY_ASKED_AGAIN || s == BUSY && state.compareAndSet(BUSY, BUSY_ASKED_AGAIN)) {
                return;
            }
            if (s == IDLE && state.compareAndSet(IDLE, BUSY)) {
                schedule();
                return;
            }
        }
    }

    /** Has the one look allowed run, at once or at the interval's end. */
    private void schedule() {
        long wait = never ? 0 : Math.max(0, lastLook + INTERVAL_NANOS - clock.getAsLong());
        try {
            runner.run(this::lookNow, wait);
        } catch (RuntimeException e) {
            state.set(IDLE);
            throw e;
        }
    }

    private void lookNow() {
        // what was asked for until now, this look answers; what is asked for from now on may have
        // been answered after the look, so it has another follow
        state.set(BUSY);
        lastLook = clock.getAsLong();
        never = false;
        try {
            troubled = look.getAsBoolean();
        } finally {
            if (!state.compareAndSet(BUSY, IDLE)) {
                state.set(BUSY);
                schedule();
            }
        }
    }
}
