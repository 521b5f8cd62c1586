package dev.chibifs.fuse;

import dev.chibifs.sys.DaemonThreads;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.LongSupplier;

/**
 * Drops the listing the kernel keeps of a directory once the names and attributes its READDIRPLUS
 * gave have expired: a followed directory's after the mount's timeouts ({@link #listed}), one whose
 * store holds its answers for a while (S3) when they stop holding ({@link #dropIn}).
 *
 * <p>The kernel keeps such a listing (FOPEN_CACHE_DIR) until the directory changes, but every name
 * in it expires with the mount's timeouts. A walk after that (find, grep -r, ls -R after an agent's
 * pause) reads the kept listing without asking, then looks every name up again: a LOOKUP per file,
 * where the listing had brought a few hundred names to a request (100,000 files: 2.4 s the first
 * walk, 3.9 s again after 35 s). Dropped as its names expire, the listing is asked for again and
 * its reply renews them all. A listing that nobody reads again costs one notification. Only
 * listings of many names are dropped (below).
 */
final class ListingExpiry implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(ListingExpiry.class);
    /**
     * The fewest names a kept listing must have given for it to be dropped when they expire.
     * Reading it again costs two or three requests (the listing's two, and a GETATTR of the
     * directory, whose atime the kernel drops after each listing it reads) and a stat per name:
     * a walk that lists first (find, grep -r) saves a LOOKUP per name, but one that looks names
     * up first (git status, then its listings) pays it on top, and in small directories that is
     * most of what it pays (git status of a copy of /usr/include after a pause: +70% with every
     * listing dropped; 28 of its 1,091 directories have 64 names or more).
     */
    static final int MIN_NAMES = 64;

    /** Runs a task once, {@code nanos} from now. */
    interface Timer {
        void after(long nanos, Runnable task);
    }

    private final long validNanos;
    private final Consumer<NodeTable.Node> drop;
    private final Timer timer;
    private final LongSupplier clock;
    /** The executor behind {@link #timer} when this class made it; null when a test gave its own. */
    private final ScheduledExecutorService executor;
    /**
     * When the names of each directory's newest kept listing expire ({@link #clock} nanos). A
     * directory is in the map while a timer task is on its way for it: {@link #dropIn} schedules
     * when it adds the directory or brings its time forward, and a task due early for a newer
     * listing reschedules itself instead of dropping.
     */
    private final ConcurrentMap<NodeTable.Node, Long> expiring = new ConcurrentHashMap<>();

    ListingExpiry(long validNanos, Consumer<NodeTable.Node> drop, Timer timer, LongSupplier clock) {
        this(validNanos, drop, timer, clock, null);
    }

    private ListingExpiry(long validNanos, Consumer<NodeTable.Node> drop, Timer timer, LongSupplier clock,
                          ScheduledExecutorService executor) {
        this.validNanos = validNanos;
        this.drop = drop;
        this.timer = timer;
        this.clock = clock;
        this.executor = executor;
    }

    /** Listings whose names last {@code validNanos}, dropped by {@code drop} on a thread of its own. */
    static ListingExpiry start(long validNanos, Consumer<NodeTable.Node> drop) {
        ScheduledExecutorService executor = DaemonThreads.timer("chibifs-listing-expiry");
        Timer timer = (nanos, task) -> {
            try {
                executor.schedule(task, nanos, TimeUnit.NANOSECONDS);
            } catch (RejectedExecutionException unmounting) {
                // nobody lists any more
            }
        };
        return new ListingExpiry(validNanos, drop, timer, System::nanoTime, executor);
    }

    /** The kernel was given a listing of {@code dir} with {@code names} names, which expire {@code validNanos} from now. */
    void listed(NodeTable.Node dir, int names) {
        if (names >= MIN_NAMES && validNanos > 0) {
            dropIn(dir, validNanos);
        }
    }

    /** The kernel was given a listing of {@code dir} to keep for {@code nanos}: dropped then, unless listed again. */
    void dropIn(NodeTable.Node dir, long nanos) {
        long at = clock.getAsLong() + nanos;
        Long before = expiring.put(dir, at);
        if (before == null || at - before < 0) {
            // the task on its way is due later (a store whose answers now hold less): one more for
            // this time; the later one then finds nothing, or a newer listing's time to wait for
            timer.after(nanos, () -> due(dir));
        }
    }

    private void due(NodeTable.Node dir) {
        Long at = expiring.get(dir);
        if (at == null) {
            return;
        }
        long left = at - clock.getAsLong();
        if (left > 0) {
            // listed again since this task was set: wait for that listing's names
            timer.after(left, () -> due(dir));
        } else if (expiring.remove(dir, at)) {
            try {
                drop.accept(dir);
            } catch (RuntimeException e) {
                LOG.warn("could not drop the kept listing of node {}", NodeSlots.shown(dir.id), e);
            }
        } else {
            // listed again between the two reads: that listing's own time decides
            due(dir);
        }
    }

    @Override
    public void close() {
        if (executor != null) {
            executor.shutdownNow();
        }
    }
}
