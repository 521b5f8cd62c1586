package dev.chibifs.store;

import dev.chibifs.path.VfsPath;
import dev.chibifs.sys.Syscalls;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.ReentrantLock;

import static dev.chibifs.sys.Linux.*;

/**
 * {@link LocalStorage}'s change feed: one inotify instance of its own (not {@link HeldDirectories}'s,
 * whose queue is read at the start of operations), a watch per followed directory, and a thread
 * that reads the queue and tells the listener. The watch is the directory's inode, so it follows
 * the directory through renames; a removed directory's watch ends (IN_IGNORED).
 *
 * <p>Why two instances and not one, read by one thread: the two read the same records through the
 * one reader ({@link Syscalls#inotifyRead}), but sharing the instance would break what each needs.
 * <ul>
 *   <li>Watches are per inode per instance: {@code inotify_add_watch} on an inode already watched
 *       returns the same watch and replaces its mask (IN_MASK_ADD can only add), and
 *       {@code inotify_rm_watch} ends it for both. A directory held and followed at once would need
 *       a reference count per watch and a mask recomputed from both users at every change, under one
 *       lock shared by every operation and the feed.</li>
 *   <li>{@link HeldDirectories} must see a move or removal before the next operation starts (the
 *       kernel queues the event inside the rename, and the operation's own non-blocking poll reads
 *       it). With one queue, a feed thread that read the event first would have to hand it over
 *       before any operation ran, which is the same lock again; and the feed's file events
 *       (IN_MODIFY, IN_CLOSE_WRITE, IN_ATTRIB of every write) would make that poll find the queue
 *       ready on nearly every operation of a writing workload, where today it finds it empty and
 *       costs one poll(2).</li>
 * </ul>
 * The cost of two is one more descriptor and instance per store (of 128 per user by default).
 */
final class DirectoryChanges implements ChangeFeed {

    private static final Logger LOG = LoggerFactory.getLogger(DirectoryChanges.class);

    /**
     * Adds a watch on {@code directory} to {@code inotify}: the watch descriptor, or -errno;
     * -EXDEV for a directory on a file system inotify cannot follow (one mounted inside the store).
     */
    interface Watcher {
        int watch(int inotify, VfsPath directory, int mask) throws IOException;
    }

    private static final int NAMES = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO;
    private static final int FILES = IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE;
    /** What happened to a name in a batch: bits of the value {@link #readOnce} keeps per name. */
    private static final int RENAMED = 1;
    private static final int MODIFIED = 2;
    /** Came (created or moved in), besides {@link #RENAMED}: without it, a name that was only renamed went. */
    private static final int ARRIVED = 4;
    /**
     * Without IN_EXCL_UNLINK: a file written through a name removed meanwhile (an open descriptor,
     * on another mount) may live on under other names, or in descriptors open elsewhere, and its
     * event under the old name is the only one the store raises for the write.
     */
    private static final int MASK = NAMES | FILES | IN_ONLYDIR;
    /**
     * How long the reader lets events gather after it told a batch, while changes keep coming. A
     * file written through the mount raises several (create, writes, close, times) within
     * microseconds; read together they are told once, with one look at the store. 10 ms rather than 2
     * took the reader's CPU during tar xf down by about 40%, and longer saved little more. A change
     * after a quiet spell is told at once: chibi writing a file and an agent reading it through the
     * mount right after is the case this feed exists for.
     */
    private static final long GATHER_NANOS = TimeUnit.MILLISECONDS.toNanos(10);
    /** The reader's poll wakes this often to notice {@link #close}. */
    private static final int POLL_MILLIS = 500;

    private final ChangeListener listener;
    private final Watcher watcher;
    private final int inotify;
    private final Thread reader;
    private final AtomicBoolean warnedFull = new AtomicBoolean();
    private final AtomicBoolean warnedForeign = new AtomicBoolean();
    private volatile boolean closed;
    /** When the reader last told a batch (System.nanoTime); the reader's own. */
    private long lastTold = System.nanoTime() - GATHER_NANOS;
    /**
     * Held while events are read off the queue and told: {@link #catchUp} waits for a batch the
     * reader has read but not yet told, so none is left behind when it returns.
     */
    private final ReentrantLock telling = new ReentrantLock();

    private DirectoryChanges(ChangeListener listener, Watcher watcher, int inotify) {
        this.listener = listener;
        this.watcher = watcher;
        this.inotify = inotify;
        this.reader = new Thread(this::read, "chibifs-store-changes");
        reader.setDaemon(true);
        reader.start();
    }

    /** A running feed, or {@link ChangeFeed#NONE} when no inotify instance is to be had (max_user_instances). */
    static ChangeFeed start(ChangeListener listener, Watcher watcher) {
        int fd = Syscalls.inotifyInit();
        if (fd < 0) {
            LOG.warn("no inotify instance (errno {}; fs.inotify.max_user_instances): changes made to the store"
                    + " outside this mount show up within the kernel's 1 s timeouts", -fd);
            return NONE;
        }
        return new DirectoryChanges(listener, watcher, fd);
    }

    @Override
    public boolean active() {
        return !closed;
    }

    @Override
    public void unfollow(long key) {
        if (!closed) {
            Syscalls.inotifyUnwatch(inotify, (int) key);
        }
    }

    @Override
    public long follow(VfsPath directory) {
        if (closed) {
            return -1;
        }
        int wd;
        try {
            wd = watcher.watch(inotify, directory, MASK);
        } catch (IOException e) {
            return -1; // gone, or not a directory: nothing in it to cache
        }
        if (wd == -ENOSPC && warnedFull.compareAndSet(false, true)) {
            LOG.warn("out of inotify watches (fs.inotify.max_user_watches): changes made outside this mount in"
                    + " directories first listed from now on are not followed (a mount keeps what it caches of them for 1 s"
                    + " only); raise the limit");
        } else if (wd == -EXDEV && warnedForeign.compareAndSet(false, true)) {
            LOG.info("{} is on a file system whose changes inotify cannot see (NFS, FUSE, ...): directories there"
                    + " are not followed (a mount keeps what it caches of them for 1 s only)", directory);
        } else if (wd < 0 && wd != -ENOENT && wd != -ENOSPC) {
            LOG.debug("cannot follow {}: errno {}", directory, -wd);
        }
        return wd < 0 ? -1 : wd;
    }

    private void read() {
        Map<Event, Integer> batch = new LinkedHashMap<>();
        while (!closed) {
            try {
                readOnce(batch);
            } catch (RuntimeException | Error e) {
                // the thread must outlive a bug: without it every later change would go unheard
                LOG.error("reading the store's changes failed", e);
                batch.clear();
            }
        }
        Syscalls.close(inotify);
    }

    /** {@code batch}: each event once, in the order the first of it came, with what happened to a name (RENAMED, MODIFIED). */
    private void readOnce(Map<Event, Integer> batch) {
        if (!Syscalls.awaitReadable(inotify, POLL_MILLIS)) {
            return;
        }
        long wait = lastTold + GATHER_NANOS - System.nanoTime();
        if (wait > 0) {
            sleepNanos(wait); // changes are coming in a run: read them together, one batch per GATHER_NANOS
        }
        telling.lock();
        try {
            readAndTell(batch);
        } finally {
            telling.unlock();
        }
        lastTold = System.nanoTime();
    }

    @Override
    public void catchUp() {
        if (closed) {
            return;
        }
        telling.lock();
        try {
            readAndTell(new LinkedHashMap<>());
        } finally {
            telling.unlock();
        }
    }

    /** Reads what the queue holds now and tells it as one batch; the caller holds {@link #telling}. */
    private void readAndTell(Map<Event, Integer> batch) {
        Syscalls.InotifyBatch read;
        do {
            read = Syscalls.inotifyRead(inotify);
            for (Syscalls.InotifyEvent e : read.events()) {
                if ((e.mask() & IN_Q_OVERFLOW) != 0) {
                    batch.clear();
                    batch.put(Event.LOST, 0);
                } else if ((e.mask() & IN_IGNORED) != 0) {
                    batch.put(new Event(Kind.GONE, e.watch(), ""), 0);
                } else if (e.name().isEmpty()) {
                    if ((e.mask() & IN_ATTRIB) != 0) {
                        // the watched directory itself: a process working in it sees its attributes
                        // through "." and walks no name that its parent's event would have made stale
                        batch.put(new Event(Kind.SELF, e.watch(), ""), 0);
                    }
                } else if (!LocalStorage.isTemporaryName(e.name())) {
                    // a name's events in one batch are told once (a file written raises a create, writes, a
                    // close and times), so the listener looks at the store once for them all
                    int what = (e.mask() & (IN_CREATE | IN_MOVED_TO)) != 0 ? RENAMED | ARRIVED
                            : (e.mask() & NAMES) != 0 ? RENAMED : MODIFIED;
                    batch.merge(new Event(Kind.NAME, e.watch(), e.name()), what, (a, b) -> a | b);
                }
            }
        } while (!read.drained());
        if (!batch.isEmpty()) {
            tell(batch);
            batch.clear();
        }
    }

    private void tell(Map<Event, Integer> batch) {
        for (Map.Entry<Event, Integer> told : batch.entrySet()) {
            Event e = told.getKey();
            try {
                switch (e.kind) {
                    case NAME -> {
                        int what = told.getValue();
                        if (what == RENAMED) {
                            listener.removed(e.watch, e.name);
                        } else {
                            listener.changed(e.watch, e.name, (what & RENAMED) != 0, (what & MODIFIED) != 0);
                        }
                    }
                    case SELF -> listener.directoryChanged(e.watch);
                    case GONE -> listener.directoryGone(e.watch);
                    case LOST -> listener.eventsLost();
                }
            } catch (RuntimeException | Error t) {
                // the thread must go on: a listener's bug costs one event, not every later one
                LOG.error("a store change listener failed", t);
            }
        }
        try {
            listener.batchTold();
        } catch (RuntimeException | Error t) {
            LOG.error("a store change listener failed", t);
        }
    }

    private static void sleepNanos(long nanos) {
        try {
            TimeUnit.NANOSECONDS.sleep(nanos);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public void close() {
        closed = true;
        // the reader closes the instance when it leaves: closing it here could hand its number to another file mid-poll
        if (Thread.currentThread() != reader) {
            try {
                reader.join(TimeUnit.MILLISECONDS.toMillis(POLL_MILLIS * 4L));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    private enum Kind { NAME, SELF, GONE, LOST }

    private record Event(Kind kind, int watch, String name) {
        static final Event LOST = new Event(Kind.LOST, -1, "");
    }
}
