package dev.chibifs.cli;

import dev.chibifs.path.Names;
import dev.chibifs.store.Storage.Uploads;

import java.nio.file.Path;
import java.util.Locale;
import java.util.function.Consumer;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * How long {@code chibifs umount} waits for a daemon to exit once its mount is gone. One with
 * nothing to upload gets {@link #QUIET_SECONDS}. One that uploads what is pending to S3 before it
 * exits is waited for as long as bytes keep going up (a tester's 1.5 GiB file took 50 s on
 * loopback, and the command gave up at 30 s with no word of why), with a line on stderr every
 * {@link #SAY_EVERY_MILLIS}; only {@link #STALL_SECONDS} without a byte sent or a change done
 * end the wait.
 */
final class DaemonExitWait {

    /** How long a daemon with nothing to upload has to exit. */
    static final long QUIET_SECONDS = 30;
    /**
     * Nothing sent for this long while changes wait: the upload is taken for stalled. Long, as a
     * large file is hashed whole before its first part goes (4 GiB: 16 s; 20 GiB: over a minute).
     */
    static final long STALL_SECONDS = 120;
    /** At most one progress line this often. */
    static final long SAY_EVERY_MILLIS = 5_000;
    /** How long each wait for the exit lasts before the daemon is asked how its uploads go. */
    static final long LOOK_EVERY_MILLIS = 1_000;

    /** Waits up to {@code millis} for the daemon's exit: whether it exited. */
    @FunctionalInterface
    interface Exit {
        boolean within(long millis);
    }

    /** What the daemon says waits to go up now, or null when it does not answer. */
    @FunctionalInterface
    interface Progress {
        Uploads now();
    }

    private final Exit exit;
    private final Progress progress;
    private final LongSupplier monotonicMillis;
    private final Consumer<String> say;
    /** Why a store of the daemon fails until someone acts, as it said with its last progress, or null. */
    private final Supplier<String> failing;
    /**
     * Why a store's last write-back failed (S3 refusing an object, S3 away), as the daemon said with
     * its last progress, or null: what still fails at its close stays journaled, and "uploads 1
     * change before it exits" was all umount said of a change S3 refused for good.
     */
    private final Supplier<String> troubled;

    DaemonExitWait(Exit exit, Progress progress, LongSupplier monotonicMillis, Consumer<String> say) {
        this(exit, progress, () -> null, monotonicMillis, say);
    }

    DaemonExitWait(Exit exit, Progress progress, Supplier<String> failing, LongSupplier monotonicMillis, Consumer<String> say) {
        this(exit, progress, failing, () -> null, monotonicMillis, say);
    }

    DaemonExitWait(Exit exit, Progress progress, Supplier<String> failing, Supplier<String> troubled,
                   LongSupplier monotonicMillis, Consumer<String> say) {
        this.exit = exit;
        this.progress = progress;
        this.failing = failing;
        this.troubled = troubled;
        this.monotonicMillis = monotonicMillis;
        this.say = say;
    }

    /** Null once the daemon of {@code mp} (pid {@code pid}) has exited; else why the wait ended without it. */
    String await(Path mp, long pid) {
        return await(mp, pid, null);
    }

    /**
     * {@link #await(Path, long)}, where {@code before} is what the daemon said waits to go up before
     * its unmount (null: it did not answer), with {@link #failing} and {@link #troubled} as it said
     * then. A daemon that exits before it is first asked (its cache directory's file system failing,
     * its close giving up at once) kept its changes journaled, and umount exited 0 saying nothing.
     */
    String await(Path mp, long pid, Uploads before) {
        long start = monotonicMillis.getAsLong();
        long lastMove = start;
        long lastSaid = Long.MIN_VALUE;
        String lastLine = null;
        Uploads first = before;
        Uploads last = before;
        String fails = before == null ? null : failing.get();
        String trouble = before == null ? null : troubled.get();
        while (true) {
            if (exit.within(LOOK_EVERY_MILLIS)) {
                if (last != null && last.changes() > 0 && fails != null) {
                    // the daemon gives up at close and keeps them journaled; only its log said so
                    say.accept(ErrorHandler.PREFIX + Names.shown(mp) + " is unmounted, but its daemon (pid " + pid + ") exited with "
                            + what(last) + " not sent to S3, kept in its cache directory for the next mount of the store: " + fails);
                } else if (last != null && last.changes() > 0 && trouble != null) {
                    // its close tried once more; what failed then is journaled, and only its log names it
                    say.accept(ErrorHandler.PREFIX + Names.shown(mp) + " is unmounted; its daemon (pid " + pid + ") exited with "
                            + what(last) + " to send to S3 when last asked, its last write-back having failed: what"
                            + " failed again at its close is kept in its cache directory for the next mount of the store"
                            + " (its log says): " + trouble);
                }
                return null;
            }
            long now = monotonicMillis.getAsLong();
            Uploads u = progress.now();
            if (u != null) {
                fails = failing.get();
                trouble = troubled.get();
                if (first == null) {
                    first = u;
                } else if (u.sentBytes() > last.sentBytes() || u.readBytes() > last.readBytes() || u.changes() < last.changes()) {
                    // bytes read count: a large file is read whole and hashed before its first byte goes
                    lastMove = now;
                }
                last = u;
            }
            boolean uploading = u != null && u.changes() > 0;
            if (uploading && (lastSaid == Long.MIN_VALUE || now - lastSaid >= SAY_EVERY_MILLIS)) {
                String line = ErrorHandler.PREFIX + Names.shown(mp) + " is unmounted; its daemon (pid " + pid + ") " + (fails != null
                        ? "cannot send " + what(u) + " to S3" + " before it exits: " + fails
                        : trouble != null
                        ? "tries to send " + what(u) + " to S3 before it exits, but its last write-back failed (" + trouble
                        + "): what fails again stays in its cache directory for the next mount"
                        : "sends " + what(u) + " to S3 before it exits: " + sentSince(first, u));
                lastSaid = now;
                // progress is news every time; a failure said once is not (a tester's S3 hang: the same
                // line 12 times in a minute)
                if (!line.equals(lastLine) || (fails == null && trouble == null)) {
                    say.accept(line);
                    lastLine = line;
                }
            }
            if (uploading && now - lastMove >= STALL_SECONDS * 1000) {
                return "unmounted " + Names.shown(mp) + ", but its daemon (pid " + pid + ") has sent nothing for " + STALL_SECONDS
                        + " s with " + what(u) + " still to send: the upload has stalled (S3 too slow?)."
                        + " The daemon goes on: it exits once all is up, or once S3 fails, keeping what did not go up"
                        + " in its cache directory for the next mount (its log says); killed, it keeps them there too";
            }
            if (!uploading && now - lastMove >= QUIET_SECONDS * 1000) {
                return "unmounted " + Names.shown(mp) + ", but its daemon (pid " + pid + ") has not exited after " + QUIET_SECONDS + " s"
                        + (last == null ? "" : " with nothing left to send");
            }
        }
    }

    /** What went since {@code first}, with what was read and hashed to send it where that is more. */
    private static String sentSince(Uploads first, Uploads u) {
        long sent = u.sentBytes() - first.sentBytes();
        long read = u.readBytes() - first.readBytes();
        return size(sent) + " sent since the unmount" + (read > sent ? " (" + size(read) + " read and hashed)" : "");
    }

    private static String what(Uploads u) {
        return u.changes() + (u.changes() == 1 ? " change" : " changes") + " (" + size(u.bytes()) + ")";
    }

    static String size(long bytes) {
        return bytes >= 1L << 30 ? String.format(Locale.ROOT, "%.1f GiB", bytes / (double) (1L << 30))
                : String.format(Locale.ROOT, "%.1f MiB", bytes / (double) (1L << 20));
    }
}
