package dev.chibifs.store;

import dev.chibifs.sys.Linux;
import dev.chibifs.sys.Syscalls;

import java.io.IOException;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The locks of one {@link LocalStorage}, taken on the store files themselves, so that they hold
 * across every mount of the same store on this host (each mount is a daemon, or at least a
 * LocalStorage, of its own) and against programs locking the store files directly.
 *
 * <p>Each lock owner the kernel names gets an open file description of its own on the file: a
 * reopening of a handle's descriptor through /proc/self/fd (the very inode the handle has open,
 * even renamed or unlinked since; openat of the name on the held parent could find another file
 * there by now). Record locks are open file description locks (F_OFD_SETLK) on it, so the kernel
 * itself decides every conflict, with the owners of this mount, of other mounts, and with classic
 * POSIX locks and flock holders outside: no table of ours that another mount could not see. flock
 * locks go on a second description per owner (closing one must not drop the other kind).
 *
 * <p>Never a classic POSIX lock (fcntl F_SETLK, FileChannel.lock): those belong to the whole
 * process, so every owner of this daemon would share them, and any close of any descriptor of the
 * file by the daemon would drop them. OFD locks belong to the description and go only when it is
 * closed, which is how an owner's locks are let go all at once.
 *
 * <p>An owner's description is opened at its first lock and closed when it holds none any more
 * (after an UNLOCK that leaves nothing, at releaseOwner, or when the handle of the file that owner
 * last locked through closes); an flock owner's stays from its first try to its unlock or its
 * handle's close. A lock refused opens and closes nothing: waiters try again at each close of the
 * file, so a refusal that closed a description woke them all, itself too, at once, for ever.
 * Closing a description opened for writing raises IN_CLOSE_WRITE in the file's directory, which
 * every following mount takes for a possible change (an attribute invalidation, no more);
 * descriptions are opened with the handle's own access for that reason too: a reader's lock comes
 * and goes unnoticed.
 *
 * <p>Races. The kernel may send two requests of one owner at once (two threads of one process
 * locking the same file): an owner's open, lock, bookkeeping and close happen under that owner's
 * monitor, so one thread never locks on a description another is closing, nor on a recycled
 * descriptor number. An owner object that was closed is marked dead under its monitor and removed
 * from the map; a thread that fetched it just before finds it dead and fetches again. Conflicts
 * between different owners need no lock of ours: the kernel decides them on the descriptions.
 * A handle's close and its lock requests never overlap (FUSE sends RELEASE after the last request
 * on the handle); handles of one file come and go concurrently, counted per inode.
 */
final class OfdLocks {

    private record Key(long device, long inode) {
    }

    private final ConcurrentHashMap<Key, Inode> inodes = new ConcurrentHashMap<>();
    /** Every let-go elsewhere closes a description on the file: what tells this store's waiters. */
    private final CloseWatch closes = new CloseWatch();

    /** Stops telling waiters of closes (the store is closing). */
    void close() {
        closes.close();
    }

    /** The lock view of a handle whose descriptor is {@code fd}, opened with {@code access} (O_RDONLY, O_WRONLY, O_RDWR). */
    HandleLocks forHandle(int fd, int access) throws IOException {
        Syscalls.Statx s = Syscalls.stat(fd, null, null);
        Key key = new Key(s.device(), s.inode());
        Inode inode = inodes.compute(key, (k, i) -> {
            Inode held = i == null ? new Inode(k) : i;
            held.handles++;
            return held;
        });
        return new HandleLocks(inode, fd, access);
    }

    /** Files whose closes are watched for waiters, for tests. */
    int watchedForWaiters() {
        return closes.watched();
    }

    /** Locks held in all, for tests: descriptions open per kind. */
    int descriptionsOpen() {
        return inodes.values().stream().mapToInt(i -> i.posix.size() + i.flocks.size()).sum();
    }

    /** An owner's description on one file, and what it holds there. */
    private static final class Owner {
        int fd = -1;
        /** The access fd was opened with (O_RDONLY, O_WRONLY, O_RDWR). */
        int access;
        /** Record locks: the ranges held, to know when none are left. */
        final RangeLocks ranges = new RangeLocks();
        /** The handle it last took a record lock through: its locks go with that handle's close. */
        HandleLocks lockedThrough;
        /** The process that last took a record lock as this owner, for F_GETLK; -1 if none said. */
        volatile int pid = -1;
        /** Closed and out of the map: fetch again. Guarded by this. */
        boolean dead;
    }

    /** One file's owners; counted by the handles using it. */
    private final class Inode {
        final Key key;
        int handles; // changed only inside inodes.compute
        final ConcurrentHashMap<Long, Owner> posix = new ConcurrentHashMap<>();
        final ConcurrentHashMap<Long, Owner> flocks = new ConcurrentHashMap<>();

        Inode(Key key) {
            this.key = key;
        }

        /** Closes {@code o}'s description (dropping all it holds) and forgets it; the caller holds o's monitor. */
        void retire(Map<Long, Owner> owners, long owner, Owner o) {
            o.dead = true;
            if (o.fd >= 0) {
                Syscalls.close(o.fd);
                o.fd = -1;
            }
            owners.remove(owner, o);
        }

        /** Retires {@code owner} in {@code owners}, whatever it holds. */
        void release(Map<Long, Owner> owners, long owner) {
            Owner o = owners.get(owner);
            if (o != null) {
                synchronized (o) {
                    if (!o.dead) {
                        retire(owners, owner, o);
                    }
                }
            }
        }

        void handleClosed() {
            boolean[] last = {false};
            inodes.computeIfPresent(key, (k, i) -> {
                if (i != this) {
                    return i;
                }
                i.handles--;
                last[0] = i.handles == 0;
                return last[0] ? null : i;
            });
            if (last[0]) {
                // nobody has the file open through this storage: nothing can hold a lock any more
                for (Long owner : Set.copyOf(posix.keySet())) {
                    release(posix, owner);
                }
                for (Long owner : Set.copyOf(flocks.keySet())) {
                    release(flocks, owner);
                }
            }
        }
    }

    /** The locks as one handle sees them; remembers the owners that locked through it, for its close. */
    final class HandleLocks implements FileLocks {
        private final Inode inode;
        private final int fd;
        private final int access;
        private final Set<Long> flocksTaken = ConcurrentHashMap.newKeySet();

        HandleLocks(Inode inode, int fd, int access) {
            this.inode = inode;
            this.fd = fd;
            this.access = access;
        }

        /** The owner's live entry in {@code owners}, created when absent. */
        private Owner owner(Map<Long, Owner> owners, long owner) {
            return owners.computeIfAbsent(owner, k -> new Owner());
        }

        @Override
        public LockState testLock(long owner, LockType type, long start, long end) throws IOException {
            RangeLocks.checkRange(start, end);
            if (type == LockType.UNLOCK) {
                return LockState.unlocked(start, end);
            }
            LockState found = null;
            while (found == null) {
                Owner o = inode.posix.get(owner);
                if (o == null) {
                    // an owner without a description holds nothing here: any other lock is a conflict,
                    // and the handle's own description holds none (no lock is ever taken on it)
                    found = state(Syscalls.ofdTestLock(fd, lockType(type), start, end));
                    break;
                }
                synchronized (o) {
                    if (!o.dead) {
                        // on the owner's description, the owner's own locks do not count, as F_GETLK wants
                        found = state(Syscalls.ofdTestLock(o.fd, lockType(type), start, end));
                    }
                }
            }
            if (found.conflicts() && found.pid() < 0) {
                // the kernel names no process for a description's lock; where it is one of this
                // daemon's owners, the process that took it is known (the pid F_GETLK reports on a disk)
                int pid = pidOfHolder(owner, found);
                if (pid > 0) {
                    return new LockState(found.type(), found.start(), found.end(), pid);
                }
            }
            return found;
        }

        /**
         * The process that took the very lock {@code found} (its range and type), among this daemon's
         * owners other than {@code owner}; -1 where none holds it (another mount's, a program's). Two
         * holders overlapping the range must not give one's range with the other's process.
         */
        private int pidOfHolder(long owner, LockState found) {
            for (Map.Entry<Long, Owner> e : inode.posix.entrySet()) {
                Owner o = e.getValue();
                if (e.getKey() != owner && holdsExactly(o, found)) {
                    return o.pid;
                }
            }
            return -1;
        }

        @Override
        public boolean tryLock(long owner, int pid, LockType type, long start, long end) throws IOException {
            boolean done = tryLock(owner, type, start, end);
            if (done && type != LockType.UNLOCK) {
                Owner o = inode.posix.get(owner);
                if (o != null) {
                    o.pid = pid;
                }
            }
            return done;
        }

        @Override
        public boolean tryLock(long owner, LockType type, long start, long end) throws IOException {
            RangeLocks.checkRange(start, end);
            while (true) {
                Owner o = type == LockType.UNLOCK ? inode.posix.get(owner) : owner(inode.posix, owner);
                if (o == null) {
                    return true; // nothing held, nothing to remove
                }
                synchronized (o) {
                    if (o.dead) {
                        continue;
                    }
                    boolean done = true;
                    try {
                        if (type == LockType.UNLOCK) {
                            if (o.fd >= 0) {
                                Syscalls.ofdSetLock(o.fd, Linux.F_UNLCK, start, end);
                            }
                            o.ranges.set(LockType.UNLOCK, start, end);
                        } else {
                            if (o.fd < 0 && Syscalls.ofdTestLock(fd, lockType(type), start, end).type() != Linux.F_UNLCK) {
                                // held elsewhere: refused without a description of its own, whose close
                                // would wake every waiter on the file, this one too, to try again at once
                                // (one waiting lock spun a CPU). The handle's description holds no lock
                                return false;
                            }
                            if (o.fd < 0) {
                                o.fd = openFor(access);
                                o.access = access & Linux.O_ACCMODE;
                            } else if (!allows(o.access, type) && allows(access, type)) {
                                widen(o);
                            }
                            // a conflict changes nothing, as with F_SETLK: the owner keeps what it held
                            done = Syscalls.ofdSetLock(o.fd, lockType(type), start, end);
                            if (done) {
                                o.ranges.set(type, start, end);
                                o.lockedThrough = this;
                            }
                        }
                    } finally {
                        // an owner left holding nothing (also after a failure) lets its description go
                        if (o.ranges.isEmpty()) {
                            inode.retire(inode.posix, owner, o);
                        }
                    }
                    return done;
                }
            }
        }

        @Override
        public boolean tryFlock(long owner, LockType type) throws IOException {
            if (type == LockType.UNLOCK) {
                // closing the owner's own description is LOCK_UN, and lets the descriptor go too
                inode.release(inode.flocks, owner);
                return true;
            }
            while (true) {
                Owner o = owner(inode.flocks, owner);
                synchronized (o) {
                    if (o.dead) {
                        continue;
                    }
                    boolean done = false;
                    try {
                        if (o.fd < 0) {
                            // flock needs no write access: a read-only description raises no IN_CLOSE_WRITE
                            o.fd = openFor((access & Linux.O_ACCMODE) == Linux.O_WRONLY ? Linux.O_WRONLY : Linux.O_RDONLY);
                        }
                        done = Syscalls.flock(o.fd, type == LockType.READ ? Linux.LOCK_SH | Linux.LOCK_NB : Linux.LOCK_EX | Linux.LOCK_NB);
                    } finally {
                        // Linux lets a held lock go before it tries the new type: a failed conversion holds
                        // nothing. The description stays all the same, until the owner's unlock or the
                        // handle's close: a waiter tries again at every close of the file, and closing a
                        // description at each refusal raised the very close that woke it (no test lock
                        // tells an flock conflict before it is tried)
                        if (o.fd >= 0) {
                            flocksTaken.add(owner);
                        } else {
                            inode.retire(inode.flocks, owner, o);
                        }
                    }
                    return done;
                }
            }
        }

        @Override
        public void releaseOwner(long owner) {
            inode.release(inode.posix, owner);
        }

        /** Each close of the file by anyone: another mount's unlock closes its owner's description. */
        @Override
        public AutoCloseable whenLetGo(Runnable letGo) {
            return closes.watch(fd, letGo);
        }

        /**
         * The owner first locked through a handle whose access does not allow this lock (a read lock
         * through a read-only handle, then a write lock through a read-write one: SQLite, whose readers
         * and writer share one process's locks): the kernel would answer EBADF on its description, where
         * fcntl judges each lock by the descriptor it is given. Moves what the owner holds to a new
         * read-write description, holding it on both for a moment, so no other owner can take a range
         * in between. A description of one access can only hold locks of its kind, and read locks
         * there do not conflict with themselves; write locks (a write-only description) would, and then
         * the owner keeps its description and the lock is EBADF, as before. Under the owner's monitor.
         */
        private void widen(Owner o) throws IOException {
            int wide = openFor(Linux.O_RDWR);
            boolean moved = false;
            try {
                for (RangeLocks.Range r : o.ranges.ranges()) {
                    if (!Syscalls.ofdSetLock(wide, lockType(r.type()), r.start(), r.end())) {
                        return;
                    }
                }
                moved = true;
            } finally {
                if (moved) {
                    Syscalls.close(o.fd);
                    o.fd = wide;
                    o.access = Linux.O_RDWR;
                } else {
                    Syscalls.close(wide); // and what it took with it
                }
            }
        }

        /** A new open file description of the handle's file, for one owner. */
        private int openFor(int mode) throws IOException {
            return Syscalls.reopen(fd, mode & Linux.O_ACCMODE, null);
        }

        /**
         * The handle's close: what was taken through it goes, and the file's count of handles drops.
         * An owner that has locked through another handle since keeps its locks: the kernel releases
         * an open after its close(2) has returned, and the process may have opened and locked the
         * file again meanwhile (SQLite does, connection after connection). Dropping them here took a
         * new connection's WAL write lock from under it, and committed rows were lost.
         */
        void close() {
            for (Map.Entry<Long, Owner> e : inode.posix.entrySet()) {
                Owner o = e.getValue();
                synchronized (o) {
                    if (!o.dead && o.lockedThrough == this) {
                        inode.retire(inode.posix, e.getKey(), o);
                    }
                }
            }
            for (Long owner : flocksTaken) {
                inode.release(inode.flocks, owner);
            }
            inode.handleClosed();
        }
    }

    /** Whether {@code o} holds the lock {@code lock} as it is: its type, from its start to its end. */
    private static boolean holdsExactly(Owner o, LockState lock) {
        synchronized (o) {
            return !o.dead && o.ranges.ranges().contains(new RangeLocks.Range(lock.type(), lock.start(), lock.end()));
        }
    }

    /** Whether a description opened with {@code access} may hold a lock of {@code type} (F_RDLCK needs reading, F_WRLCK writing). */
    private static boolean allows(int access, LockType type) {
        int mode = access & Linux.O_ACCMODE;
        return type == LockType.READ ? mode != Linux.O_WRONLY : type != LockType.WRITE || mode != Linux.O_RDONLY;
    }

    /** fcntl's lock type for {@code type}. */
    private static int lockType(LockType type) {
        return switch (type) {
            case READ -> Linux.F_RDLCK;
            case WRITE -> Linux.F_WRLCK;
            case UNLOCK -> Linux.F_UNLCK;
        };
    }

    /** What F_OFD_GETLK found, as a {@link LockState}. */
    private static LockState state(Syscalls.RecordLock lock) {
        return switch (lock.type()) {
            case Linux.F_UNLCK -> LockState.unlocked(lock.start(), lock.end());
            case Linux.F_WRLCK -> new LockState(LockType.WRITE, lock.start(), lock.end(), lock.pid());
            default -> new LockState(LockType.READ, lock.start(), lock.end(), lock.pid());
        };
    }
}
