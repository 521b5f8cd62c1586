package dev.chibifs.fuse;

import dev.chibifs.sys.Linux;
import dev.chibifs.sys.Syscalls;

import java.io.IOException;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
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
 * <p>A change is a new size or modification time since the last look. It is made heard by setting
 * an extended attribute of the store file and removing it at once: IN_ATTRIB, which the store
 * feeds take as a modification, and which leaves nothing of the file changed but its ctime. The
 * attribute is a trusted.* one, which no mount shows, and which needs the CAP_SYS_ADMIN that
 * passthrough needs anyway. Not IN_CLOSE_WRITE (an open for writing closed at once), which tools
 * take for "the writer is done" and a lock waiter for a close; nor a chmod or utimensat to the
 * values just read, which could undo a {@code cp}'s own, made between the read and the change.
 * Where the store's file system has no such attributes, IN_CLOSE_WRITE it is: a close that drops
 * no lock, since the daemon's are open file description locks (OfdLocks), never the classic POSIX
 * ones any close of the file by the process would let go.
 *
 * <p>A change a {@code write(2)} already told is told again, once per look. A shared mapping's
 * writes move the modification time only where they dirty a page written back since (the write
 * fault), so a mapping written over and over is told at its first write and at its unmap. A file
 * found unchanged is looked at half as often each time, down to once every
 * {@value #QUIET_LOOKS_AT_MOST} looks: 3,000 files held open for writing and left alone took 14%
 * of a core looked at every time.
 */
final class PassthroughWrites implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(PassthroughWrites.class);
    /** How often the watched files are looked at: another mount hears of a passed-through splice within this. */
    static final long LOOK_MILLIS = 50;
    /** A file found unchanged this many times running is looked at once in this many looks. */
    static final int QUIET_LOOKS_AT_MOST = 16;
    /** Set and removed to raise IN_ATTRIB: never shown through a mount (ExtendedAttributes shows user.* alone). */
    static final String CHANGE_ATTRIBUTE = "trusted.chibifs.changed";
    private static final byte[] NO_VALUE = new byte[0];

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
        /** Looks between two of this file's, 1 while it changes; and how many to pass before the next. */
        int every = 1;
        int passLeft;
        /** Set, under this object's monitor, when {@link #fd} is closed: a look must not use its number again. */
        boolean closed;

        Watched(int fd) {
            this.fd = fd;
        }
    }

    /** By node id. */
    private final Map<Long, Watched> watched = new ConcurrentHashMap<>();
    // its thread made at the first writer: most mounts are not passed through, or are only read
    private final PeriodicCheck looks;
    private boolean closed;

    PassthroughWrites() {
        this(LOOK_MILLIS);
    }

    PassthroughWrites(long lookMillis) {
        this.looks = new PeriodicCheck(this, "chibifs-passthrough-writes", lookMillis, this::lookAll, watched::isEmpty);
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
        looks.start();
    }

    /** A writer of node {@code node}, passed through, was released; the last one ends the watch. */
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
            // no last look: the writer's close raised IN_CLOSE_WRITE on the store file already (the
            // kernel's backing file of each open passed through is its own, closed with it)
            w.closed = true;
            Syscalls.close(w.fd);
        }
    }

    /** How many store files are watched (for tests). */
    int watching() {
        return watched.size();
    }

    private void lookAll() {
        for (Watched w : watched.values()) {
            synchronized (w) {
                if (w.passLeft > 0) {
                    w.passLeft--;
                } else {
                    w.every = look(w) ? 1 : Math.min(w.every * 2, QUIET_LOOKS_AT_MOST);
                    w.passLeft = w.every - 1;
                }
            }
        }
    }

    /** Tells a change of {@code w}'s file since the last look, if there is one (true); the caller holds w's monitor. */
    private boolean look(Watched w) {
        if (w.closed) {
            return false;
        }
        long size = w.size;
        long seconds = w.modifiedSeconds;
        int nanos = w.modifiedNanos;
        if (!stamp(w) || (size == w.size && seconds == w.modifiedSeconds && nanos == w.modifiedNanos)) {
            return false;
        }
        try {
            Syscalls.setxattrPath(w.fd, CHANGE_ATTRIBUTE, NO_VALUE, 0, null);
            Syscalls.removexattrPath(w.fd, CHANGE_ATTRIBUTE, null);
            return true;
        } catch (IOException noAttributes) {
            // a file system without trusted.* attributes (or a daemon without the capability)
        }
        try {
            Syscalls.close(Syscalls.reopen(w.fd, Linux.O_WRONLY, null));
        } catch (IOException e) {
            LOG.debug("cannot tell the store of a write passed through: {}", e.getMessage());
        }
        return true;
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
            looks.close();
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
