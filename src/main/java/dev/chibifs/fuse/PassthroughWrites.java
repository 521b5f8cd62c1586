package dev.chibifs.fuse;

import dev.chibifs.sys.DaemonThreads;
import dev.chibifs.sys.Linux;
import dev.chibifs.sys.Syscalls;

import java.io.IOException;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Store files open for writing through passthrough, looked at every {@link #LOOK_MILLIS} so that
 * every change to them reaches the other mounts of the store.
 *
 * <p>Why: other mounts learn of a change from the store's inotify events. A {@code write(2)}
 * passed through raises IN_MODIFY on the store file, but the kernel's passthrough splice
 * ({@code sendfile}, {@code splice}, a {@code copy_file_range} between mounts) notifies only the
 * mount's own file, and a shared mapping's writes raise nothing anywhere; no request reaches the
 * daemon either. Unseen, the other mounts kept the old size until the close, or for their
 * kernel cache time (30 s).
 *
 * <p>A change is a new size or modification time since the last look. It is made heard by opening
 * the store file for writing and closing it: IN_CLOSE_WRITE, which the store feeds take as a
 * modification, and which changes nothing of the file. Not a chmod or utimensat to the values just
 * read, the other ways to raise an event: a {@code cp} setting the mode or times right after its
 * copy could be undone by one made between the read and the change. That close drops no lock: the
 * daemon's are open file description locks (OfdLocks), never the classic POSIX ones any close of
 * the file by the process would let go. A change a {@code write(2)}
 * already told is told once more, once per look: a few events more in a stream of IN_MODIFY.
 */
final class PassthroughWrites implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(PassthroughWrites.class);
    /** How often the watched files are looked at: another mount hears of a passed-through splice within this. */
    static final long LOOK_MILLIS = 50;

    /** A store file watched while open for writing on the mount. */
    private static final class Watched {
        /**
         * Our own O_PATH descriptor of the store file, closed with the last writer. Not a dup of a
         * writer's: that would keep its open file description, and with it the description's locks
         * and the IN_CLOSE_WRITE of its close, until the node's last writer is released.
         */
        final int fd;
        /** Open writers of the node, passed through; guarded by the {@link PassthroughWrites} monitor. */
        int writers = 1;
        /** What the last look saw; the looking thread's own, and read under this object's monitor. */
        long size;
        long modifiedSeconds;
        int modifiedNanos;
        /** Set, under this object's monitor, when {@link #fd} is closed: a look must not use its number again. */
        boolean closed;

        Watched(int fd) {
            this.fd = fd;
        }
    }

    /** By node id. */
    private final Map<Long, Watched> watched = new ConcurrentHashMap<>();
    private final long lookMillis;
    // made at the first writer: most mounts are not passed through, or are only read
    private ScheduledExecutorService timer;
    private ScheduledFuture<?> looks;
    private boolean closed;

    PassthroughWrites() {
        this(LOOK_MILLIS);
    }

    PassthroughWrites(long lookMillis) {
        this.lookMillis = lookMillis;
    }

    /** Where a watched file's descriptor comes from: {@code FileHandle::passthroughDescriptor}. */
    interface Descriptor {
        /** A descriptor of the store file the caller owns, or -1 where there is none. */
        int open() throws IOException;
    }

    /**
     * Node {@code node}'s store file was opened for writing, passed through. At the node's first
     * writer, a descriptor of it is taken from {@code file} (and closed), and one of our own kept
     * until the last is released.
     */
    synchronized void opened(long node, Descriptor file) throws IOException {
        Watched had = watched.get(node);
        if (had != null) {
            had.writers++;
            return;
        }
        int opened = closed ? -1 : file.open();
        if (opened < 0) {
            return;
        }
        int fd;
        try {
            fd = Syscalls.reopen(opened, Linux.O_PATH, null);
        } finally {
            Syscalls.close(opened);
        }
        Watched w = new Watched(fd);
        stamp(w); // what the opener found is no change; read before a look can see it
        watched.put(node, w);
        if (looks == null) {
            if (timer == null) {
                timer = DaemonThreads.timer("chibifs-passthrough-writes");
            }
            looks = timer.scheduleWithFixedDelay(this::lookAll, lookMillis, lookMillis, TimeUnit.MILLISECONDS);
        }
    }

    /** A writer of node {@code node}, passed through, was released; the last one ends the watch, with a last look. */
    void released(long node) {
        Watched w;
        synchronized (this) {
            w = watched.get(node);
            if (w == null || --w.writers > 0) {
                return;
            }
            watched.remove(node);
        }
        synchronized (w) {
            // the close of the kernel's own backing file raises IN_CLOSE_WRITE too, but only once every
            // open of the node is released, and a reader may keep one for long
            look(w);
            w.closed = true;
            Syscalls.close(w.fd);
        }
    }

    /** How many store files are watched (for tests). */
    int watching() {
        return watched.size();
    }

    private void lookAll() {
        try {
            for (Watched w : watched.values()) {
                synchronized (w) {
                    look(w);
                }
            }
        } catch (RuntimeException e) {
            // a scheduled task that throws is never run again; the next look may do better
            LOG.warn("looking at store files written through passthrough failed: {}", e.toString());
        }
        synchronized (this) {
            if (watched.isEmpty() && looks != null) {
                looks.cancel(false);
                looks = null;
            }
        }
    }

    /** Tells a change of {@code w}'s file since the last look; the caller holds w's monitor. */
    private void look(Watched w) {
        if (w.closed) {
            return;
        }
        long size = w.size;
        long seconds = w.modifiedSeconds;
        int nanos = w.modifiedNanos;
        if (!stamp(w) || (size == w.size && seconds == w.modifiedSeconds && nanos == w.modifiedNanos)) {
            return;
        }
        try {
            Syscalls.close(Syscalls.reopen(w.fd, Linux.O_WRONLY, null));
        } catch (IOException e) {
            LOG.debug("cannot tell the store of a write passed through: {}", e.getMessage());
        }
    }

    /** Reads {@code w}'s size and modification time into it: false when its file cannot be read. */
    private static boolean stamp(Watched w) {
        try {
            Syscalls.Statx s = Syscalls.statAside(w.fd);
            w.size = s.size();
            w.modifiedSeconds = s.modifiedSeconds();
            w.modifiedNanos = s.modifiedNanos();
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    @Override
    public void close() {
        synchronized (this) {
            closed = true;
            if (timer != null) {
                timer.shutdownNow();
            }
        }
        for (Long node : watched.keySet()) {
            Watched w = watched.remove(node);
            if (w != null) {
                synchronized (w) {
                    w.closed = true;
                    Syscalls.close(w.fd);
                }
            }
        }
    }
}
