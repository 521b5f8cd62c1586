package dev.chibifs.fuse;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * Says an expected failure once per cause: a store whose directory has gone fails every request,
 * and a line per request (tens of thousands a second) once filled the very disk the store was on.
 * The first failure of a cause is a warning; its repeats within {@link #WINDOW_NANOS} are counted
 * (each one only at debug) and summed up in one warning when the window is over, seen at the next
 * failure or the next {@link #tick} (any request), whichever comes first, or at {@link #close}.
 * A cause is the failure's reason without the file it names: one per store and kind of trouble.
 */
final class RepeatedFailures {

    /** How long repeats of one cause are only counted. */
    static final long WINDOW_NANOS = TimeUnit.SECONDS.toNanos(60);

    /** Where the lines go: the session's log, or a test's list. */
    interface Lines {
        void warn(String line);

        void debug(String line);

        boolean debugEnabled();
    }

    private static final class Window {
        final long start;
        long repeats;

        Window(long start) {
            this.start = start;
        }
    }

    private final LongSupplier clock;
    private final Lines lines;
    private final Map<String, Window> windows = new HashMap<>();
    /** Read without the lock by {@link #tick}, on every request: no work while nothing failed. */
    private volatile boolean anyOpen;

    RepeatedFailures(LongSupplier clock, Lines lines) {
        this.clock = clock;
        this.lines = lines;
    }

    /**
     * One failure of {@code cause}; {@code detail} is the whole line (operation, node, file), written
     * for the first of a window and, at debug, for every repeat.
     */
    void failed(String cause, String detail) {
        List<String> summaries;
        boolean first;
        synchronized (this) {
            long now = clock.getAsLong();
            summaries = endedBy(now);
            Window w = windows.get(cause);
            first = w == null;
            if (first) {
                windows.put(cause, new Window(now));
                anyOpen = true;
            } else {
                w.repeats++;
            }
        }
        summaries.forEach(lines::warn);
        if (first) {
            lines.warn(detail);
        } else if (lines.debugEnabled()) {
            lines.debug(detail);
        }
    }

    /** Ends the windows that are over: called as requests are served, cheap while nothing failed. */
    void tick() {
        if (!anyOpen) {
            return;
        }
        List<String> summaries;
        synchronized (this) {
            summaries = endedBy(clock.getAsLong());
        }
        summaries.forEach(lines::warn);
    }

    /** Sums up every open window, over or not: the session ends. */
    void close() {
        List<String> summaries;
        synchronized (this) {
            summaries = endedBy(Long.MAX_VALUE);
        }
        summaries.forEach(lines::warn);
    }

    private List<String> endedBy(long now) {
        List<String> summaries = new ArrayList<>(0);
        var it = windows.entrySet().iterator();
        while (it.hasNext()) {
            var e = it.next();
            Window w = e.getValue();
            long age = now == Long.MAX_VALUE ? WINDOW_NANOS : now - w.start;
            if (age >= WINDOW_NANOS) {
                it.remove();
                if (w.repeats > 0) {
                    long seconds = TimeUnit.NANOSECONDS.toSeconds(
                            now == Long.MAX_VALUE ? clock.getAsLong() - w.start : age);
                    summaries.add(e.getKey() + ": " + w.repeats + " more time" + (w.repeats == 1 ? "" : "s")
                            + " in " + Math.max(1, seconds) + " s");
                }
            }
        }
        anyOpen = !windows.isEmpty();
        return summaries;
    }
}
