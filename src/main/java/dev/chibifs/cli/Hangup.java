package dev.chibifs.cli;

import org.slf4j.Logger;

import java.io.IOException;
import java.nio.file.Path;

/**
 * SIGHUP reopens the daemon's log, as logrotate's {@code postrotate kill -HUP} expects; it never
 * unmounts. The JVM's own answer to SIGHUP is to exit, which unmounted every mount at the first
 * rotation. In the foreground the log is stderr, which the daemon did not open and cannot open
 * again: the signal is noted and ignored (a closed terminal leaves the mount served; {@code chibifs
 * umount} or Ctrl-C stops it, as for {@code nohup}).
 */
final class Hangup {

    /** Opens the log file again over the descriptors the log is written to. */
    interface Reopen {
        void reopen(Path logFile) throws IOException;
    }

    private Hangup() {
    }

    /** From now on, SIGHUP reopens {@code logFile} through {@code reopen}, or with no file (foreground) is ignored. */
    static void handle(Path logFile, Reopen reopen, Logger log) {
        try {
            sun.misc.Signal.handle(new sun.misc.Signal("HUP"), signal -> hungUp(logFile, reopen, log));
        } catch (IllegalArgumentException taken) {
            // -Xrs, or the signal is the JVM's own: SIGHUP then does what the JVM does
            log.warn("SIGHUP cannot be handled ({}): it will stop the daemon", taken.getMessage());
        }
    }

    static void hungUp(Path logFile, Reopen reopen, Logger log) {
        if (logFile == null) {
            log.info("SIGHUP: nothing to reopen (the log is stderr); the mount goes on");
            return;
        }
        try {
            reopen.reopen(logFile);
            log.info("SIGHUP: log reopened at {}", logFile);
        } catch (IOException | RuntimeException e) {
            log.warn("SIGHUP: cannot reopen the log at {} ({}): still writing to the one open", logFile, e.getMessage());
        }
    }
}
