package dev.chibifs.store;

import dev.chibifs.sys.Syscalls;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

import static dev.chibifs.sys.Linux.IN_CLOSE_NOWRITE;
import static dev.chibifs.sys.Linux.IN_CLOSE_WRITE;
import static dev.chibifs.sys.Linux.IN_IGNORED;
import static dev.chibifs.sys.Linux.IN_Q_OVERFLOW;

/**
 * Tells lock waiters when a store file they wait on is closed by anyone. Another mount's daemon
 * lets go of a lock by closing its description on the file ({@link OfdLocks}), as does the CLI,
 * and so, mostly, do programs locking the store file directly; each close raises IN_CLOSE_WRITE
 * or IN_CLOSE_NOWRITE on the file. Without this, a lock waiter learns of another mount's unlock
 * only at its next poll, up to 50 ms late.
 *
 * <p>One inotify instance of its own, made at the first wait: the change feed watches directories
 * and leaves out IN_CLOSE_NOWRITE, which every read raises. A watch per file waited on, held only
 * while someone waits on it (inotify gives one watch per inode, so the waiters on a file share it,
 * and the last one to go removes it), and a thread that reads the queue and runs the waiters'
 * callbacks outside this object's lock. A close may wake a waiter for nothing (a reader's close):
 * it tries again, and waits on.
 */
final class CloseWatch implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(CloseWatch.class);
    private static final int MASK = IN_CLOSE_WRITE | IN_CLOSE_NOWRITE;
    /** The reader's poll wakes this often to notice {@link #close}. */
    private static final int POLL_MILLIS = 1000;

    /** The instance, -1 until the first watch; guarded by this. */
    private int inotify = -1;
    /** The callbacks of each watch; guarded by this. */
    private final Map<Integer, List<Runnable>> byWatch = new HashMap<>();
    private volatile boolean closed;

    /**
     * Runs {@code onClose} (on the watch's thread) at each close of the file open as {@code fd},
     * until the returned watch is closed; null where that cannot be (no inotify instance to spare,
     * out of watches), and the waiter polls.
     */
    synchronized AutoCloseable watch(int fd, Runnable onClose) {
        if (closed) {
            return null;
        }
        if (inotify < 0) {
            int made = Syscalls.inotifyInit();
            if (made < 0) {
                LOG.debug("no inotify instance for lock waits (errno {}): they poll", -made);
                return null;
            }
            inotify = made;
            Thread reader = new Thread(() -> read(made), "chibifs-lock-closes");
            reader.setDaemon(true);
            reader.start();
        }
        int wd = Syscalls.inotifyWatchFile(inotify, fd, MASK);
        if (wd < 0) {
            LOG.debug("cannot watch a locked file for closes (errno {}): its waiters poll", -wd);
            return null;
        }
        byWatch.computeIfAbsent(wd, k -> new ArrayList<>()).add(onClose);
        return () -> unwatch(wd, onClose);
    }

    private synchronized void unwatch(int wd, Runnable onClose) {
        List<Runnable> callbacks = byWatch.get(wd);
        if (callbacks == null || !callbacks.removeIf(c -> c == onClose)) {
            return; // the file went (IN_IGNORED), and its watch with it
        }
        if (callbacks.isEmpty()) {
            byWatch.remove(wd);
            Syscalls.inotifyUnwatch(inotify, wd);
        }
    }

    /** Waiting on the watch's files, for tests. */
    synchronized int watched() {
        return byWatch.size();
    }

    private void read(int fd) {
        while (!closed) {
            try {
                if (!Syscalls.awaitReadable(fd, POLL_MILLIS)) {
                    continue;
                }
                Syscalls.InotifyBatch batch;
                do {
                    batch = Syscalls.inotifyRead(fd);
                    tell(batch.events());
                } while (!batch.drained());
            } catch (RuntimeException | Error e) {
                // the thread must outlive a bug: without it every wait would fall back to its polls
                LOG.error("reading the closes of locked files failed", e);
            }
        }
        Syscalls.close(fd);
    }

    private void tell(List<Syscalls.InotifyEvent> events) {
        Map<Runnable, Boolean> due = new IdentityHashMap<>();
        synchronized (this) {
            for (Syscalls.InotifyEvent e : events) {
                if ((e.mask() & IN_Q_OVERFLOW) != 0) {
                    byWatch.values().forEach(l -> l.forEach(c -> due.put(c, true)));
                    continue;
                }
                List<Runnable> callbacks = (e.mask() & IN_IGNORED) != 0 ? byWatch.remove(e.watch()) : byWatch.get(e.watch());
                if (callbacks != null) {
                    callbacks.forEach(c -> due.put(c, true));
                }
            }
        }
        for (Runnable c : due.keySet()) {
            c.run();
        }
    }

    /** Ends the watches; the reader closes the instance when it leaves (closing it here could hand its number to another file mid-poll). */
    @Override
    public void close() {
        closed = true;
    }
}
