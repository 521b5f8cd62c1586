package dev.chibifs.fuse;

import dev.chibifs.sys.DaemonThreads;

import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A check run every period on a daemon thread of its own while its owner has something for it:
 * the thread is made at the first {@link #start} (most mounts never need one), and the runs end
 * after one that finds nothing left, until the next start.
 *
 * <p>Locking: {@link #start} and the test that ends the runs are both made under the owner's
 * monitor ({@code owner}), so a start right after the last thing went is never lost to a stop
 * decided before it.
 */
final class PeriodicCheck implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(PeriodicCheck.class);

    private final Object owner;
    private final String thread;
    private final long periodMillis;
    private final Runnable check;
    private final BooleanSupplier nothingLeft;
    /** Guarded by {@link #owner}. */
    private ScheduledExecutorService timer;
    private ScheduledFuture<?> runs;

    /**
     * {@code check} every {@code periodMillis} on thread {@code thread}, until {@code nothingLeft}
     * says so after one; both judged under {@code owner}'s monitor, which the owner holds at start.
     */
    PeriodicCheck(Object owner, String thread, long periodMillis, Runnable check, BooleanSupplier nothingLeft) {
        this.owner = owner;
        this.thread = thread;
        this.periodMillis = periodMillis;
        this.check = check;
        this.nothingLeft = nothingLeft;
    }

    /** Runs the check from now on, if it is not running; the caller holds the owner's monitor. */
    void start() {
        if (runs == null) {
            if (timer == null) {
                timer = DaemonThreads.timer(thread);
            }
            runs = timer.scheduleWithFixedDelay(this::run, periodMillis, periodMillis, TimeUnit.MILLISECONDS);
        }
    }

    private void run() {
        try {
            check.run();
        } catch (RuntimeException e) {
            // a scheduled task that throws is never run again; the next run may do better
            LOG.warn("the periodic check of thread {} failed: {}", thread, e.toString());
        }
        synchronized (owner) {
            if (runs != null && nothingLeft.getAsBoolean()) {
                runs.cancel(false);
                runs = null;
            }
        }
    }

    /** No run from now on; the caller holds the owner's monitor. */
    @Override
    public void close() {
        if (timer != null) {
            timer.shutdownNow();
        }
    }
}
