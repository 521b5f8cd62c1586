package dev.chibifs.fuse;

import dev.chibifs.store.WholeStoreFailure;

import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
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
 */
final class StoreLooks {

    /** The least time between two looks. */
    static final long INTERVAL_NANOS = TimeUnit.SECONDS.toNanos(1);

    private final LongSupplier clock;
    /** Looks at every store; true if one is in trouble. */
    private final BooleanSupplier look;
    private final Executor runner;
    private final AtomicBoolean looking = new AtomicBoolean();
    /** When the last look began; none yet while {@link #never}. */
    private final AtomicLong lastLook = new AtomicLong();
    private volatile boolean never = true;
    /** Whether the last look found a store in trouble: only then does an answered request look. */
    private volatile boolean troubled;

    StoreLooks(LongSupplier clock, BooleanSupplier look, Executor runner) {
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
        long now = clock.getAsLong();
        if (!never && now - lastLook.get() < INTERVAL_NANOS) {
            return;
        }
        if (!looking.compareAndSet(false, true)) {
            return;
        }
        never = false;
        lastLook.set(now);
        try {
            runner.execute(() -> {
                try {
                    troubled = look.getAsBoolean();
                } finally {
                    looking.set(false);
                }
            });
        } catch (RuntimeException e) {
            looking.set(false);
            throw e;
        }
    }
}
