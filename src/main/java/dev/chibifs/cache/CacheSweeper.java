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
import java.util.function.Supplier;

/**
 * The mount daemon's cleanup thread: removes tool cache entries older than
 * {@code tool_cache_max_age_days} (+ 1 day) once at start and then every interval, in one named
 * daemon thread, until {@link #close()}. chibi reads config.toml at every command, so the settings
 * are read again at every sweep: a change to {@code tool_cache_max_age_days} or
 * {@code auto_cleanup_cache} counts from the next sweep, without a remount. A file that cannot be
 * read then leaves the last good settings in force, logged once per problem.
 */
public final class CacheSweeper implements AutoCloseable {

    /** The name of the sweeping thread, as thread dumps and logs show it. */
    public static final String THREAD_NAME = "chibifs-cache-sweeper";

    private static final Logger LOG = LoggerFactory.getLogger(CacheSweeper.class);

    private final ToolCache cache;
    private final Supplier<ChibiConfig> reload;
    private final Duration interval;
    private final CountDownLatch stop = new CountDownLatch(1);
    private Thread thread;
    /** The settings of the last sweep, or the mount's; only the sweeping thread changes them. */
    private volatile ChibiConfig settings;
    /** The last problem logged with the file, so a bad file is logged once, not every sweep. */
    private String problem;

    private CacheSweeper(ToolCache cache, ChibiConfig initial, Supplier<ChibiConfig> reload, Duration interval) {
        this.cache = cache;
        this.settings = initial;
        this.reload = reload;
        this.interval = interval;
    }

    /**
     * A sweeper over {@code router}'s {@code /sys/tool_cache} that starts with {@code initial}'s age
     * limit and switch and takes {@code reload}'s at each sweep ({@code reload} throws
     * {@link dev.chibifs.config.ConfigException} for a bad file); {@code clock} decides what has
     * expired. Call {@link #start()} to run it.
     */
    public static CacheSweeper create(Router router, ChibiConfig initial, Supplier<ChibiConfig> reload,
                                      Duration interval, Clock clock) {
        if (interval.isNegative() || interval.isZero()) {
            throw new IllegalArgumentException("the cache sweep interval must be positive, not " + interval);
        }
        return new CacheSweeper(new ToolCache(router, clock), initial, reload, interval);
    }

    /** A sweeper whose settings never change: {@code config}'s. */
    public static CacheSweeper create(Router router, ChibiConfig config, Duration interval, Clock clock) {
        return create(router, config, () -> config, interval, clock);
    }

    /** The settings in force: those the last sweep read. */
    public ChibiConfig settings() {
        return settings;
    }

    /** Starts the thread, which sweeps at once when auto cleanup is on. */
    public synchronized void start() {
        if (thread != null) {
            throw new IllegalStateException("the cache sweeper is already started");
        }
        thread = new Thread(this::run, THREAD_NAME);
        thread.setDaemon(true);
        thread.start();
    }

    /** What the sweeper logs as it starts: its interval as the command line takes it (2s, 1h), not PT2S. */
    String startLine() {
        return "sweeping " + ToolCache.ROOT + " every " + ToolCache.shown(interval)
                + " with the settings config.toml has at each sweep (now: " + describe(settings) + ")";
    }

    private void run() {
        LOG.info("{}", startLine());
        try {
            do {
                sweepOnce();
            } while (!stop.await(interval.toNanos(), TimeUnit.NANOSECONDS));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        LOG.debug("cache sweeper stopped");
    }

    /** One sweep with the settings read now; survives any error so the next sweep still happens. Returns how many entries went. */
    int sweepOnce() {
        ChibiConfig now = reread();
        if (!now.autoCleanupCache()) {
            return 0;
        }
        try {
            List<VfsPath> removed = cache.removeOlderThan(ToolCache.expiry(now.toolCacheMaxAgeDays()),
                    () -> stop.getCount() == 0);
            if (!removed.isEmpty()) {
                LOG.info("tool cache sweep removed {} entr{}", removed.size(), removed.size() == 1 ? "y" : "ies");
            }
            return removed.size();
        } catch (Exception e) {
            LOG.warn("tool cache sweep failed, will retry in {}: {}", ToolCache.shown(interval), ToolCache.describe(e));
            return 0;
        }
    }

    /** The settings for this sweep: config.toml's now, or the last good ones when it cannot be read. */
    private ChibiConfig reread() {
        ChibiConfig before = settings;
        ChibiConfig now;
        try {
            now = reload.get();
        } catch (RuntimeException e) {
            if (!String.valueOf(e.getMessage()).equals(problem)) {
                problem = String.valueOf(e.getMessage());
                LOG.warn("{}; the tool cache sweep keeps the settings read before ({})", problem, describe(before));
            }
            return before;
        }
        if (problem != null) {
            problem = null;
            LOG.info("config.toml reads again");
        }
        if (now.autoCleanupCache() != before.autoCleanupCache() || now.toolCacheMaxAgeDays() != before.toolCacheMaxAgeDays()) {
            LOG.info("tool cache sweep settings changed: {}", describe(now));
        }
        settings = now;
        return now;
    }

    private static String describe(ChibiConfig c) {
        return c.autoCleanupCache()
                ? "entries older than tool_cache_max_age_days " + c.toolCacheMaxAgeDays() + " + 1 days go"
                : "auto_cleanup_cache is false, nothing is swept";
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
