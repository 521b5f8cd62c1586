package dev.chibifs.cache;

import dev.chibifs.config.ChibiConfig;
import dev.chibifs.path.VfsPath;
import dev.chibifs.router.Router;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * The mount daemon's cleanup thread: removes tool cache entries older than
 * {@code tool_cache_max_age_days} once at start and then every interval, in one named daemon
 * thread, until {@link #close()}. Does nothing when {@code auto_cleanup_cache} is false.
 */
public final class CacheSweeper implements AutoCloseable {

    /** The name of the sweeping thread, as thread dumps and logs show it. */
    public static final String THREAD_NAME = "chibifs-cache-sweeper";

    private static final Logger LOG = LoggerFactory.getLogger(CacheSweeper.class);

    private final ToolCache cache;
    private final Duration maxAge;
    private final Duration interval;
    private final boolean enabled;
    private final CountDownLatch stop = new CountDownLatch(1);
    private Thread thread;

    private CacheSweeper(ToolCache cache, Duration maxAge, Duration interval, boolean enabled) {
        this.cache = cache;
        this.maxAge = maxAge;
        this.interval = interval;
        this.enabled = enabled;
    }

    /**
     * A sweeper over {@code router}'s {@code /sys/tool_cache} with the age limit and switch from
     * {@code config}; {@code clock} decides what has expired. Call {@link #start()} to run it.
     */
    public static CacheSweeper create(Router router, ChibiConfig config, Duration interval, Clock clock) {
        if (interval.isNegative() || interval.isZero()) {
            throw new IllegalArgumentException("the cache sweep interval must be positive, not " + interval);
        }
        return new CacheSweeper(new ToolCache(router, clock), ToolCache.expiry(config.toolCacheMaxAgeDays()),
                interval, config.autoCleanupCache());
    }

    /** Starts the thread, which sweeps at once; a no-op when auto cleanup is off. */
    public synchronized void start() {
        if (thread != null) {
            throw new IllegalStateException("the cache sweeper is already started");
        }
        if (!enabled) {
            LOG.info("auto_cleanup_cache is false: the tool cache is not swept");
            return;
        }
        thread = new Thread(this::run, THREAD_NAME);
        thread.setDaemon(true);
        thread.start();
    }

    private void run() {
        LOG.info("sweeping {} every {}, removing entries older than {}", ToolCache.ROOT, interval, maxAge);
        try {
            do {
                sweepOnce();
            } while (!stop.await(interval.toNanos(), TimeUnit.NANOSECONDS));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        LOG.debug("cache sweeper stopped");
    }

    /** One sweep; survives any error so the next sweep still happens. Returns how many entries went. */
    int sweepOnce() {
        try {
            List<VfsPath> removed = cache.removeOlderThan(maxAge, () -> stop.getCount() == 0);
            if (!removed.isEmpty()) {
                LOG.info("tool cache sweep removed {} entr{}", removed.size(), removed.size() == 1 ? "y" : "ies");
            }
            return removed.size();
        } catch (Exception e) {
            LOG.warn("tool cache sweep failed, will retry in {}: {}", interval, e.toString());
            return 0;
        }
    }

    /**
     * Stops the thread and waits for it. It is not interrupted, because an interrupt closes a
     * file channel in the middle of its work; it notices the stop between entries instead.
     */
    @Override
    public void close() {
        stop.countDown();
        Thread t;
        synchronized (this) {
            t = thread;
        }
        if (t == null) {
            return;
        }
        boolean interrupted = false;
        while (true) {
            try {
                t.join();
                break;
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }
}
