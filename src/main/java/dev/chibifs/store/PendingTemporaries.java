package dev.chibifs.store;

import dev.chibifs.sys.Syscalls;

import java.util.HashSet;
import java.util.Set;

/**
 * The named temporaries of streamed writes still reading their content, removed by a shutdown
 * hook: SIGINT, SIGTERM and SIGHUP (Ctrl-C, {@code timeout}, a closed terminal) end the JVM through
 * its shutdown hooks without running the writes' {@code finally}, which left everything read so
 * far hidden in the store until a mount's sweep. Only where the store's file system refuses
 * O_TMPFILE is there a name to remove; kill -9 runs nothing, and leaves it to that sweep.
 */
final class PendingTemporaries {

    /** One temporary: its name in a directory the write holds open until it {@link #remove}s it. */
    static final class Pending {
        private final int dir;
        private final String name;

        private Pending(int dir, String name) {
            this.dir = dir;
            this.name = name;
        }
    }

    private static final Set<Pending> PENDING = new HashSet<>();
    private static boolean hooked;

    private PendingTemporaries() {
    }

    /** Registers {@code name} in {@code dir}; the caller removes it (and the registration) before it lets go of {@code dir}. */
    static synchronized Pending add(int dir, String name) {
        if (!hooked) {
            try {
                Runtime.getRuntime().addShutdownHook(new Thread(PendingTemporaries::removeAll, "chibifs-temporaries"));
                hooked = true;
            } catch (IllegalStateException exiting) {
                // the JVM is already on its way out: the write's own finally, if it runs, removes it
            }
        }
        Pending p = new Pending(dir, name);
        PENDING.add(p);
        return p;
    }

    /** Forgets {@code p}: from now on its directory descriptor may be closed, and its number reused. */
    static synchronized void remove(Pending p) {
        PENDING.remove(p);
    }

    /** Unlinks every temporary still registered, as the shutdown hook does. */
    static synchronized void removeAll() {
        for (Pending p : PENDING) {
            Syscalls.tryUnlinkat(p.dir, p.name, false);
        }
        PENDING.clear();
    }
}
