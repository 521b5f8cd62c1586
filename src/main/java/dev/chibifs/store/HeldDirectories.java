package dev.chibifs.store;

import dev.chibifs.path.VfsPath;
import dev.chibifs.sys.Syscalls;

import java.io.IOException;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.IntSupplier;
import java.util.function.LongSupplier;

import static dev.chibifs.sys.Linux.*;

/**
 * Directories of the store held open by their path below the root, so that an operation on a name
 * in one of them is a single call relative to its descriptor instead of a path walk, an open and a
 * close. Every directory held is watched with inotify, and so is its parent; at the start of each
 * operation ({@link #refresh}) one poll(2) tells whether the kernel queued events, and those drop
 * every directory that was moved, removed or replaced since it was opened, together with
 * everything held below it. The same poll watches the root's parent directory and the mount
 * table, so that {@link StoreRoot} checks the root only when something may have happened to it.
 *
 * <p>That keeps the guarantees of a fresh {@code openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS)}:
 * a directory is opened one name at a time inside a held (so already checked) parent, never
 * through a link; and a directory that has left its path is not used again, because the kernel
 * queues inotify events inside the rename or rmdir itself, before that call returns, so an
 * operation that starts after it sees them. An operation that races a rename runs in the directory
 * as it was when the operation began, as it would with a fresh walk. A mount or unmount anywhere
 * drops everything held, so a file system mounted over a held directory is served from then on.
 *
 * <p>A directory on another mount than its parent's (a file system mounted inside the store) is
 * not held, nor anything below it, but opened per operation: held, it kept that file system busy
 * (its {@code umount} EBUSY) until some other mount or unmount on the host happened to drop it,
 * for ever on a quiet host, as a failed umount changes no mount table. That costs a statx per
 * directory held, when it is first held.
 *
 * <p>What inotify does not see, this does not use: a store on a file system where changes made
 * elsewhere raise no events (NFS, FUSE, ...) is walked every time, and its root checked at every
 * operation, as is any store when inotify is unavailable (its per-user instance limit, say).
 */
final class HeldDirectories {

    /** A directory in use: its descriptor stays open until {@link #close}. */
    interface Lease extends AutoCloseable {
        int fd();

        @Override
        void close();
    }

    /**
     * The held directory itself moved or deleted, or a directory in it removed, renamed or replaced.
     * A removed directory's own IN_DELETE_SELF waits until our descriptor closes, so the parent's
     * IN_DELETE is what tells. New names (IN_CREATE) need no event: a name can only start to mean
     * another directory after the old one left, which raised one of these.
     */
    private static final int WATCHED = IN_MOVE_SELF | IN_DELETE_SELF | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_ONLYDIR;
    /** In the root's parent, any name coming or going may be the root's: a link put in its place, say. */
    private static final int ROOT_PARENT_WATCHED = WATCHED | IN_CREATE;
    private static final int SELF = IN_MOVE_SELF | IN_DELETE_SELF | IN_IGNORED | IN_UNMOUNT;
    /** The keys of the root's own watch and of its parent's, beside the held directories' paths. */
    private static final String ROOT = "";
    private static final String ROOT_PARENT = "..";

    /** File systems whose every change raises inotify events on this machine. */
    private static final long[] LOCAL_TYPES = {
            EXT4_SUPER_MAGIC, XFS_SUPER_MAGIC, BTRFS_SUPER_MAGIC, TMPFS_MAGIC,
            F2FS_SUPER_MAGIC, ZFS_SUPER_MAGIC, BCACHEFS_SUPER_MAGIC,
    };

    /** A held directory. The map holds one reference; each lease another; the last one closes it. */
    private final class Entry implements Lease {
        final String key;
        final int fd;
        final int wd;
        /** The mount it was reached through ({@link Syscalls#mountOf}), which its children must share to be held. */
        final long mount;
        private final AtomicInteger refs = new AtomicInteger(1);
        volatile boolean dropped;

        Entry(String key, int fd, int wd, long mount) {
            this.key = key;
            this.fd = fd;
            this.wd = wd;
            this.mount = mount;
        }

        boolean retain() {
            for (int r = refs.get(); r > 0; r = refs.get()) {
                if (refs.compareAndSet(r, r + 1)) {
                    return true;
                }
            }
            return false;
        }

        @Override
        public int fd() {
            return fd;
        }

        @Override
        public void close() {
            if (refs.decrementAndGet() == 0) {
                // dropped: moved or, mostly, removed, and then this is the inode's last reference
                lateCloses.close(fd);
            }
        }
    }

    /** A descriptor of our own, closed with the lease: what a walk opens when nothing is held. */
    private record Owned(int fd) implements Lease {
        @Override
        public void close() {
            Syscalls.close(fd);
        }
    }

    /** The root, which {@link StoreRoot} keeps open. */
    private record Root(int fd) implements Lease {
        @Override
        public void close() {
        }
    }

    /** At most how many directories are held; follows {@link #limitNow}. Guarded by this. */
    private int limit;
    /** What {@link #limit} should be now (a share of the descriptor limit, which prlimit may change under us). */
    /** Where mounts and unmounts are seen: the mount table, which polls POLLPRI at each. */
    static final Path MOUNT_TABLE = Path.of("/proc/self/mountinfo");
    private final Path mountTable;
    private final IntSupplier limitNow;
    /** The clock of {@link #limitAskedAt}: System.nanoTime, a test's own. */
    private final LongSupplier nanoTime;
    /** When {@link #limitNow} was last asked. */
    private volatile long limitAskedAt;
    /** How often {@link #refresh} asks {@link #limitNow} again: a clock read per operation, a system call per second. */
    private static final long LIMIT_ASKED_EVERY_NANOS = java.util.concurrent.TimeUnit.SECONDS.toNanos(1);
    private final LateCloses lateCloses;
    private final Map<String, Entry> held = new ConcurrentHashMap<>();
    /** Moves on whenever something may have happened to the root; see {@link #refresh}. */
    private final AtomicLong rootEpoch = new AtomicLong();
    /** Guarded by {@code this}, as is every read of the inotify descriptor and every change to {@link #held}. */
    private final Map<Integer, String> keysByWatch = new HashMap<>();
    /**
     * The held directories in the order of their paths, so that those below one are a range of it.
     * Guarded by {@code this}. {@code rm -r} of a tree raises an event per directory; this keeps each
     * drop to the directories it drops, where a scan of {@link #held} cost every event the whole map,
     * under the lock that every operation after an event waits for (rm -r of 4,000 directories: 15%
     * of the daemon's CPU in the scan). An index by every ancestor did that too, but cost each held
     * directory its depth in entries and its depth squared in bytes: a tree 3,000 deep took 15 s per
     * 500 levels made, and 500 MB.
     */
    private final java.util.NavigableMap<String, Entry> inPathOrder = new java.util.TreeMap<>();
    /**
     * Created with the first root and kept until {@link #close}: a poll on another thread may be
     * using the number, which a close could hand to some other file.
     */
    private volatile int inotify = -1;
    private int mountinfo = -1;
    /**
     * The generation of the root the held directories were opened below ({@link StoreRoot.InUse}); another
     * (a replaced store) drops them all. Not the root's descriptor: a replaced root's is closed, and may
     * be handed to the next root opened.
     */
    private volatile long rootGeneration = -1;
    /** The mount of the root of {@link #rootGeneration}. */
    private volatile long rootMount;
    private volatile boolean disabled;
    /** True while a thread, holding the lock, reads and applies events; see {@link #refresh}. */
    private volatile boolean draining;

    /** The fewest directories held, however low the descriptor limit. */
    static final int MIN_HELD = 16;
    /** The most directories held, however high the descriptor limit. */
    static final int MAX_HELD = 4096;
    /** The share of the descriptor limit held directories may take: a quarter, the rest for open files. */
    static final int SHARE_DIVISOR = 4;

    /** How many directories to hold under a descriptor limit of {@code openFileLimit}. */
    static int limitFor(long openFileLimit) {
        return (int) Math.max(MIN_HELD, Math.min(MAX_HELD, openFileLimit / SHARE_DIVISOR));
    }

    /** {@link #limitFor} the process's descriptor limit now. */
    static int limitNow() {
        return limitFor(Syscalls.openFileLimit());
    }

    HeldDirectories(int limit, LateCloses lateCloses) {
        this(() -> limit, System::nanoTime, lateCloses);
    }

    /** Holds at most {@code limitNow} directories, asked again every second of {@code nanoTime} (see {@link #refresh}). */
    HeldDirectories(IntSupplier limitNow, LongSupplier nanoTime, LateCloses lateCloses) {
        this(limitNow, nanoTime, lateCloses, MOUNT_TABLE);
    }

    /**
     * As above, watching {@code mountTable} for mounts and unmounts: tests that count what is held
     * give a file that never polls POLLPRI, as the host's mounts (another test JVM's) would drop it all.
     */
    HeldDirectories(IntSupplier limitNow, LongSupplier nanoTime, LateCloses lateCloses, Path mountTable) {
        this.mountTable = mountTable;
        this.limitNow = limitNow;
        this.limit = limitNow.getAsInt();
        this.nanoTime = nanoTime;
        this.limitAskedAt = nanoTime.getAsLong();
        this.lateCloses = lateCloses;
    }

    /**
     * A descriptor limit lowered under the daemon (prlimit) made every listing fail with EMFILE for
     * as long as it ran, the held directories having taken the room: they follow the limit.
     */
    private void followLimit() {
        long now = nanoTime.getAsLong();
        if (now - limitAskedAt < LIMIT_ASKED_EVERY_NANOS) {
            return;
        }
        limitAskedAt = now;
        int wanted = limitNow.getAsInt();
        synchronized (this) {
            if (wanted != limit) {
                limit = wanted;
                if (held.size() > limit) {
                    dropAll(); // the next opens hold afresh, under watched parents
                }
            }
        }
    }

    /**
     * Catches up with what changed in the store since the last call, at the start of an operation,
     * and returns the root epoch: a number that stays the same for as long as nothing happened to
     * the root's name in its parent and no file system was mounted or unmounted, so the root needs
     * no check. Where nothing is watched, it is a new number at every call.
     */
    long refresh() {
        followLimit();
        int fd = inotify;
        if (disabled || fd < 0) {
            return rootEpoch.incrementAndGet();
        }
        int ready = Syscalls.pollReady(fd, mountinfo);
        // draining: another thread has read events off the queue (so our poll saw none) and may not
        // have dropped what they name yet; waiting for it keeps "read the queue first" true
        if (ready != 0 || draining) {
            if ((ready & Syscalls.POLL_SECOND) != 0) {
                rootEpoch.incrementAndGet(); // before anyone can see the held directories still there
            }
            synchronized (this) {
                if ((ready & Syscalls.POLL_SECOND) != 0) {
                    dropAll();
                }
                drain();
            }
        }
        return rootEpoch.get();
    }

    /**
     * The directory {@code relative} (names separated by '/', no leading '/') below {@code rootFd}
     * (the root of {@code generation}), open until the lease closes. Links on the way are refused (ELOOP), as is anything but a
     * directory; {@code path} names the failure. {@link #refresh} comes first in every operation.
     */
    Lease open(int rootFd, long generation, String relative, VfsPath path) throws IOException {
        if (generation != this.rootGeneration && !disabled) {
            adopt(rootFd, generation);
        }
        if (relative.isEmpty()) {
            return new Root(rootFd);
        }
        if (disabled) {
            return new Owned(Syscalls.openDirectoryBeneath(rootFd, relative, path.toString()));
        }
        Entry e = held.get(relative);
        if (e != null && e.retain()) {
            return e;
        }
        return hold(rootFd, generation, relative, path);
    }

    /** Opens {@code relative} inside its (held) parent and holds it, when it is still there once watched. */
    private Lease hold(int rootFd, long generation, String relative, VfsPath path) throws IOException {
        int slash = relative.lastIndexOf('/');
        String name = relative.substring(slash + 1);
        try (Lease parent = slash < 0 ? new Root(rootFd) : open(rootFd, generation, relative.substring(0, slash), path)) {
            int fd = Syscalls.openDirectoryBeneath(parent.fd(), name, path.toString());
            if (parent instanceof Owned || !onTheMountOf(parent, fd)) {
                return new Owned(fd);
            }
            Lease lease = watchAndHold(generation, relative, name, parent, fd);
            // null: the directory left its name while we opened it; walk from the root, as without holding
            return lease != null ? lease : new Owned(Syscalls.openDirectoryBeneath(rootFd, relative, path.toString()));
        }
    }

    /** Whether {@code fd} was reached through its parent's mount: not a file system mounted inside the store. */
    private boolean onTheMountOf(Lease parent, int fd) {
        try {
            long mount = parent instanceof Entry e ? e.mount : rootMount;
            return Syscalls.mountOf(fd) == mount;
        } catch (IOException e) {
            return false; // not held: walked each time, as where nothing is held
        }
    }

    /**
     * Watches {@code fd}, then checks that {@code name} in the parent still leads to it, and only then
     * puts it where lock-free readers find it. Moved before the watch: the check fails. Moved after
     * it: the event is queued on its watch, and the next reader of the queue drops it. Null when the
     * check fails (the caller walks instead).
     *
     * <p>Only below a held parent (or the root): a directory's own watch does not tell of its
     * ancestors moving, so every directory above a held one must be held, and watched, too. A parent
     * walked instead (the limit met while holding it, or out of watches) would let a move above it
     * go unseen, and this path serve the directory at its new place, where the policy never judged it.
     */
    private synchronized Lease watchAndHold(long generation, String relative, String name, Lease parent, int fd) {
        boolean parentWatched = parent instanceof Root || parent instanceof Entry p && !p.dropped;
        if (disabled || this.rootGeneration != generation || !parentWatched) {
            return new Owned(fd);
        }
        Entry existing = held.get(relative);
        if (existing != null && existing.retain()) {
            Syscalls.close(fd); // another thread held it meanwhile
            return existing;
        }
        if (held.size() >= limit) {
            dropAll(); // the next open holds it afresh, under a watched parent
            return new Owned(fd);
        }
        int wd = Syscalls.inotifyWatch(inotify, fd, ".", WATCHED);
        if (wd < 0) {
            return new Owned(fd);
        }
        String other = keysByWatch.putIfAbsent(wd, relative);
        if (other != null && !other.equals(relative)) {
            // the same directory is held under another path, which its queued events will drop: leave both alone
            Syscalls.close(fd);
            return null;
        }
        if (!Syscalls.isDirectory(parent.fd(), name, fd)) {
            if (other == null && keysByWatch.remove(wd, relative)) {
                Syscalls.inotifyUnwatch(inotify, wd);
            }
            Syscalls.close(fd);
            return null;
        }
        Entry e = new Entry(relative, fd, wd, parent instanceof Entry p ? p.mount : rootMount);
        e.retain();
        Entry old = held.put(relative, e);
        index(e);
        if (old != null) {
            // not expected (inserts happen under this lock, after the look above); never unwatch our own inode
            unindex(old);
            old.dropped = true;
            if (old.wd != wd && keysByWatch.remove(old.wd, old.key)) {
                Syscalls.inotifyUnwatch(inotify, old.wd);
            }
            old.close();
        }
        return e;
    }

    /**
     * A new root descriptor: the first, or a replaced store's. Everything held goes, and the root and
     * its parent are watched. Where inotify cannot follow the store, nothing is held from now on.
     */
    private synchronized void adopt(int rootFd, long generation) {
        if (this.rootGeneration == generation || disabled) {
            return;
        }
        dropAll();
        for (Integer wd : keysByWatch.keySet()) {
            Syscalls.inotifyUnwatch(inotify, wd);
        }
        keysByWatch.clear();
        rootEpoch.incrementAndGet();
        if (!followable(rootFd) || !start()) {
            disabled = true;
            return;
        }
        try {
            rootMount = Syscalls.mountOf(rootFd);
        } catch (IOException e) {
            disabled = true; // nothing to tell an inner file system by: walk every time
            return;
        }
        int rootWd = Syscalls.inotifyWatch(inotify, rootFd, ".", WATCHED);
        int parentWd = Syscalls.inotifyWatch(inotify, rootFd, "..", ROOT_PARENT_WATCHED);
        if (rootWd < 0 || parentWd < 0) {
            disabled = true;
            return;
        }
        keysByWatch.put(parentWd, ROOT_PARENT);
        keysByWatch.put(rootWd, ROOT);
        drain(); // what the new watches saw while being set up
        this.rootGeneration = generation;
    }

    /** The inotify instance and the mount table, once; false when either is out of reach. */
    private boolean start() {
        if (inotify >= 0) {
            return true;
        }
        int fd = Syscalls.inotifyInit();
        if (fd < 0) {
            return false; // out of instances (fs.inotify.max_user_instances): walk every time
        }
        // poll(2) on the mount table reports each mount or unmount once (POLLPRI)
        int mounts = Syscalls.tryOpenat(AT_FDCWD, mountTable.toString(), O_RDONLY, 0);
        if (mounts < 0) {
            Syscalls.close(fd);
            return false;
        }
        mountinfo = mounts;
        inotify = fd;
        return true;
    }

    private void drain() {
        draining = true; // before the read: see refresh
        try {
            drainQueue();
        } finally {
            draining = false;
        }
    }

    private void drainQueue() {
        Syscalls.InotifyBatch read;
        do {
            read = Syscalls.inotifyRead(inotify);
            for (Syscalls.InotifyEvent event : read.events()) {
                if ((event.mask() & IN_Q_OVERFLOW) != 0) {
                    rootEpoch.incrementAndGet();
                    dropAll(); // events were lost: nothing held can be trusted
                    continue;
                }
                String key = keysByWatch.get(event.watch());
                if (key == null) {
                    continue; // a watch we gave up, or before it was mapped
                }
                if (key.equals(ROOT_PARENT) || key.equals(ROOT) && (event.mask() & SELF) != 0) {
                    rootEpoch.incrementAndGet(); // StoreRoot checks the root's name at the next operation
                    if ((event.mask() & IN_IGNORED) != 0) {
                        // the watch itself is gone (its directory deleted, its file system unmounted):
                        // nothing tells of the root any more, so it is checked, and every path walked, from now on
                        disabled = true;
                        dropAll();
                    } else if (key.equals(ROOT)) {
                        dropAll();
                    }
                } else if ((event.mask() & SELF) != 0) {
                    dropTree(key);
                } else if ((event.mask() & IN_ISDIR) != 0) {
                    dropTree(key.isEmpty() ? event.name() : key + "/" + event.name());
                }
            }
        } while (!read.drained());
    }

    /** Lets go of every held directory; the root's watches stay. */
    private void dropAll() {
        for (Entry e : held.values()) {
            drop(e);
        }
        held.clear();
        inPathOrder.clear();
    }

    /** Drops {@code key} and everything held below it: one event per directory moved or removed. */
    private void dropTree(String key) {
        // the keys below "a/b" begin "a/b/", which sort from it up to "a/b0": '0' follows '/'
        for (Entry below : List.copyOf(inPathOrder.subMap(key + "/", key + "0").values())) {
            release(below);
        }
        Entry e = held.get(key);
        if (e != null) {
            release(e);
        }
    }

    /** Takes {@code e} out of the map and the index, and drops it. */
    private void release(Entry e) {
        if (held.remove(e.key, e)) {
            unindex(e);
            drop(e);
        }
    }

    private void index(Entry e) {
        inPathOrder.put(e.key, e);
    }

    private void unindex(Entry e) {
        inPathOrder.remove(e.key, e);
    }

    private void drop(Entry e) {
        e.dropped = true;
        if (keysByWatch.remove(e.wd, e.key)) {
            Syscalls.inotifyUnwatch(inotify, e.wd);
        }
        e.close(); // the map's reference; leases still out keep the descriptor open
    }

    /** Lets go of everything and holds nothing more: every later open walks, every root is checked. */
    synchronized void close() {
        disabled = true;
        dropAll();
        keysByWatch.clear();
        if (inotify >= 0) {
            Syscalls.close(inotify);
            Syscalls.close(mountinfo);
            inotify = -1;
            mountinfo = -1;
        }
    }

    /** Whether inotify follows every change to the file system of {@code fd}, made on this machine. */
    static boolean followable(int fd) {
        return Syscalls.fileSystemIs(fd, LOCAL_TYPES);
    }

    /** How many directories are held (tests). */
    int size() {
        return held.size();
    }

    /** Whether directories are held at all (tests): false on file systems inotify cannot follow. */
    boolean enabled() {
        return !disabled;
    }
}
