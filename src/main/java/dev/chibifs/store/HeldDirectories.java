package dev.chibifs.store;

import dev.chibifs.path.VfsPath;

import java.io.IOException;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Directories of the store held open by their path below the root, so that an operation on a name
 * in one of them is a single call relative to its descriptor instead of a path walk, an open and a
 * close. Every directory held is watched with inotify, and so is its parent; each use first reads
 * the events the kernel has queued, and drops every directory that was moved, removed or replaced
 * since it was opened, together with everything held below it.
 *
 * <p>That keeps the guarantees of a fresh {@code openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS)}:
 * a directory is opened one name at a time inside a held (so already checked) parent, never
 * through a link; and a directory that has left its path is not used again, because the kernel
 * queues inotify events inside the rename or rmdir itself, before that call returns, so an
 * operation that starts after it reads them first. An operation that races a rename runs in the
 * directory as it was when the operation began, as it would with a fresh walk.
 *
 * <p>What inotify does not see, this does not use: a store on a file system where changes made
 * elsewhere raise no events (NFS, FUSE, ...) is walked every time, as is any store when inotify is
 * unavailable (its per-user instance limit, say). A file system mounted over a held directory is
 * not noticed until the directory is dropped.
 */
final class HeldDirectories {

    /** A directory in use: its descriptor stays open until {@link #close}. */
    interface Lease extends AutoCloseable {
        int fd();

        @Override
        void close();
    }

    private static final int IN_MOVED_FROM = 0x40;
    private static final int IN_MOVED_TO = 0x80;
    private static final int IN_DELETE = 0x200;
    private static final int IN_DELETE_SELF = 0x400;
    private static final int IN_MOVE_SELF = 0x800;
    private static final int IN_UNMOUNT = 0x2000;
    private static final int IN_Q_OVERFLOW = 0x4000;
    private static final int IN_IGNORED = 0x8000;
    private static final int IN_ONLYDIR = 0x1000000;
    private static final int IN_ISDIR = 0x40000000;
    /**
     * The held directory itself moved or deleted, or a directory in it removed, renamed or replaced.
     * A removed directory's own IN_DELETE_SELF waits until our descriptor closes, so the parent's
     * IN_DELETE is what tells. New names (IN_CREATE) need no event: a name can only start to mean
     * another directory after the old one left, which raised one of these.
     */
    private static final int WATCHED = IN_MOVE_SELF | IN_DELETE_SELF | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_ONLYDIR;
    private static final int SELF = IN_MOVE_SELF | IN_DELETE_SELF | IN_IGNORED | IN_UNMOUNT;

    /** File systems whose every change raises inotify events on this machine. */
    private static final long[] LOCAL_TYPES = {
            0xEF53L,      // ext2, ext3, ext4
            0x58465342L,  // xfs
            0x9123683EL,  // btrfs
            0x01021994L,  // tmpfs
            0xF2F52010L,  // f2fs
            0x2FC12FC1L,  // zfs
            0xCA451A4EL,  // bcachefs
    };

    /** A held directory. The map holds one reference; each lease another; the last one closes it. */
    private static final class Entry implements Lease {
        final String key;
        final int fd;
        final int wd;
        private final AtomicInteger refs = new AtomicInteger(1);
        volatile boolean dropped;

        Entry(String key, int fd, int wd) {
            this.key = key;
            this.fd = fd;
            this.wd = wd;
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
                Libc.close(fd);
            }
        }
    }

    /** A descriptor of our own, closed with the lease: what a walk opens when nothing is held. */
    private record Owned(int fd) implements Lease {
        @Override
        public void close() {
            Libc.close(fd);
        }
    }

    /** The root, which {@link StoreRoot} keeps open. */
    private record Root(int fd) implements Lease {
        @Override
        public void close() {
        }
    }

    private final int limit;
    private final Map<String, Entry> held = new ConcurrentHashMap<>();
    /** Guarded by {@code this}, as is every read of the inotify descriptor and every change to {@link #held}. */
    private final Map<Integer, String> keysByWatch = new HashMap<>();
    private int inotify = -1;
    /** The root descriptor the held directories were opened below; another one (a replaced store) drops them all. */
    private int rootFd = -1;
    private volatile boolean disabled;

    HeldDirectories(int limit) {
        this.limit = limit;
    }

    /**
     * The directory {@code relative} (names separated by '/', no leading '/') below {@code rootFd},
     * open until the lease closes. Links on the way are refused (ELOOP), as is anything but a
     * directory; {@code path} names the failure.
     */
    Lease open(int rootFd, String relative, VfsPath path) throws IOException {
        if (relative.isEmpty()) {
            return new Root(rootFd);
        }
        if (disabled || !sync(rootFd)) {
            return new Owned(Libc.openDirectoryBeneath(rootFd, relative, path));
        }
        Entry e = held.get(relative);
        if (e != null && e.retain()) {
            return e;
        }
        return hold(rootFd, relative, path);
    }

    /** Opens {@code relative} inside its (held) parent and holds it, when it is still there once watched. */
    private Lease hold(int rootFd, String relative, VfsPath path) throws IOException {
        int slash = relative.lastIndexOf('/');
        String name = relative.substring(slash + 1);
        try (Lease parent = slash < 0 ? new Root(rootFd) : open(rootFd, relative.substring(0, slash), path)) {
            int fd = Libc.openDirectoryBeneath(parent.fd(), name, path);
            Lease lease = watchAndHold(rootFd, relative, name, parent, fd);
            // null: the directory left its name while we opened it; walk from the root, as without holding
            return lease != null ? lease : new Owned(Libc.openDirectoryBeneath(rootFd, relative, path));
        }
    }

    private synchronized Lease watchAndHold(int rootFd, String relative, String name, Lease parent, int fd) {
        if (inotify < 0 || this.rootFd != rootFd || parent instanceof Entry p && p.dropped) {
            return new Owned(fd);
        }
        Entry existing = held.get(relative);
        if (existing != null && existing.retain()) {
            Libc.close(fd); // another thread held it meanwhile
            return existing;
        }
        if (held.size() >= limit) {
            restart(); // the next open holds it afresh, under a watched parent
            return new Owned(fd);
        }
        int wd = Libc.inotifyWatch(inotify, fd, WATCHED);
        if (wd < 0) {
            return new Owned(fd);
        }
        Entry e = new Entry(relative, fd, wd);
        keysByWatch.put(wd, relative);
        held.put(relative, e);
        // moved between the open and the watch: no event will say so, but its name no longer leads to it
        boolean there = Libc.sameInode(parent.fd(), name, fd);
        // moved since the watch: the event is queued, and reading it drops the entry
        drain();
        if (there && !e.dropped && !(parent instanceof Entry p && p.dropped) && inotify >= 0) {
            e.retain();
            return e;
        }
        if (!e.dropped) {
            held.remove(relative, e);
            drop(e); // closes fd
        }
        return null;
    }

    /**
     * Reads what inotify has queued and drops what it names; false when nothing can be held (then
     * every open walks). A new root descriptor means a replaced store: everything held goes.
     */
    private synchronized boolean sync(int rootFd) {
        if (this.rootFd != rootFd) {
            this.rootFd = rootFd;
            restart();
        }
        if (inotify < 0) {
            return false;
        }
        drain();
        return inotify >= 0;
    }

    /** Drops everything held and starts over with a fresh inotify instance watching the root. */
    private void restart() {
        if (inotify >= 0) {
            Libc.close(inotify); // removes every watch at once
            inotify = -1;
        }
        keysByWatch.clear();
        for (Entry e : held.values()) {
            drop(e);
        }
        held.clear();
        if (disabled || !followable(rootFd)) {
            disabled = true;
            return;
        }
        int fd = Libc.inotifyInit();
        if (fd < 0) {
            disabled = true; // out of instances (fs.inotify.max_user_instances): walk every time
            return;
        }
        int wd = Libc.inotifyWatch(fd, rootFd, WATCHED);
        if (wd < 0) {
            Libc.close(fd);
            disabled = true;
            return;
        }
        inotify = fd;
        keysByWatch.put(wd, "");
    }

    private void drain() {
        List<Libc.InotifyEvent> events;
        while ((events = Libc.inotifyRead(inotify)) != null) {
            for (Libc.InotifyEvent event : events) {
                if ((event.mask() & IN_Q_OVERFLOW) != 0) {
                    restart(); // events were lost: nothing held can be trusted
                    return;
                }
                String key = keysByWatch.get(event.watch());
                if (key == null) {
                    continue; // a watch we gave up, or a file's event
                }
                if ((event.mask() & SELF) != 0) {
                    if (key.isEmpty()) {
                        restart(); // the root itself: StoreRoot reopens it, and we start over
                        return;
                    }
                    dropTree(key);
                } else if ((event.mask() & IN_ISDIR) != 0) {
                    dropTree(key.isEmpty() ? event.name() : key + "/" + event.name());
                }
            }
        }
    }

    /** Drops {@code key} and everything held below it. Only directory events get here, so it is rare. */
    private void dropTree(String key) {
        String below = key + "/";
        held.values().removeIf(e -> {
            if (e.key.equals(key) || e.key.startsWith(below)) {
                drop(e);
                return true;
            }
            return false;
        });
    }

    private void drop(Entry e) {
        e.dropped = true;
        if (keysByWatch.remove(e.wd, e.key) && inotify >= 0) {
            Libc.inotifyUnwatch(inotify, e.wd);
        }
        e.close(); // the map's reference; leases still out keep the descriptor open
    }

    /** Lets go of everything and holds nothing more: every later open walks. */
    synchronized void close() {
        if (inotify >= 0) {
            Libc.close(inotify);
            inotify = -1;
        }
        keysByWatch.clear();
        for (Entry e : held.values()) {
            drop(e);
        }
        held.clear();
        disabled = true;
    }

    /** Whether inotify follows every change to the file system of {@code fd}, made on this machine. */
    static boolean followable(int fd) {
        return Libc.localFileSystem(fd, LOCAL_TYPES);
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
