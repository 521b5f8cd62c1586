package dev.chibifs.sys;

import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;

/** Threads of the daemon's own that must never keep the JVM from exiting once the mount ends. */
public final class DaemonThreads {

    private DaemonThreads() {
    }

    /** A scheduled executor with one daemon thread named {@code name}, made when its first task is. */
    public static ScheduledExecutorService timer(String name) {
        return Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, name);
            t.setDaemon(true);
            return t;
        });
    }
}
