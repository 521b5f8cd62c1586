package dev.chibifs.store;

import java.io.IOException;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

/**
 * One file's locks kept in this process, as the kernel keeps them: record locks per owner, one
 * flock type per owner ({@link FileLocks} says the rules). For the stores whose files no other
 * process can lock (in memory, in an object store): they exclude within this daemon only, which is
 * what a lock on a local file system does for the processes of one mount.
 *
 * <p>Guarded by the monitor given, the store's own, so that a lock and the file it locks change
 * under one lock.
 */
public final class InProcessLocks {

    private final Object monitor;
    private final Map<Long, RangeLocks> posix = new HashMap<>();
    /** The process that last took a record lock as each owner holding one, for F_GETLK. */
    private final Map<Long, Integer> pids = new HashMap<>();
    /** The view each owner last took a record lock through: its locks go with that handle's close. */
    private final Map<Long, View> lockedThrough = new HashMap<>();
    private final Map<Long, LockType> flocks = new HashMap<>();

    public InProcessLocks(Object monitor) {
        this.monitor = monitor;
    }

    /**
     * The strongest lock anyone holds on the file now, of either kind and on any bytes: WRITE, READ,
     * or UNLOCK when there is none. What a store whose locks reach other hosts must hold there.
     */
    public LockType strongest() {
        synchronized (monitor) {
            LockType held = LockType.UNLOCK;
            for (LockType t : flocks.values()) {
                if (t == LockType.WRITE) {
                    return t;
                }
                held = t;
            }
            for (RangeLocks r : posix.values()) {
                for (RangeLocks.Range range : r.ranges()) {
                    if (range.type() == LockType.WRITE) {
                        return LockType.WRITE;
                    }
                    held = LockType.READ;
                }
            }
            return held;
        }
    }

    /** Whether {@code owner} holds any lock on the file now, of either kind. */
    public boolean holds(long owner) {
        synchronized (monitor) {
            return flocks.containsKey(owner) || posix.containsKey(owner);
        }
    }

    /** Everything of {@code owner}'s record locks. Under the monitor. */
    private void forget(long owner) {
        posix.remove(owner);
        lockedThrough.remove(owner);
        pids.remove(owner);
    }

    /** The locks as one handle sees them; {@link View#close()} them with the handle. */
    public View view() {
        return new View();
    }

    /** One handle's view: remembers who locked through it, for its close. */
    public final class View implements FileLocks {
        private final Set<Long> flocksTaken = new HashSet<>();

        private View() {
        }

        @Override
        public LockState testLock(long owner, LockType type, long start, long end) throws IOException {
            RangeLocks.checkRange(start, end);
            synchronized (monitor) {
                Map.Entry<Long, RangeLocks> holder = type == LockType.UNLOCK ? null : holding(owner, type, start, end);
                if (holder == null) {
                    return LockState.unlocked(start, end);
                }
                RangeLocks.Range r = holder.getValue().conflict(type, start, end);
                // the process that took it, as on a disk; -1 where none was told, as for a description's lock
                return new LockState(r.type(), r.start(), r.end(), pids.getOrDefault(holder.getKey(), -1));
            }
        }

        /** Another owner's locks, one of which conflicts with {@code type} on [start, end]; null if none. Under the monitor. */
        private Map.Entry<Long, RangeLocks> holding(long owner, LockType type, long start, long end) {
            for (Map.Entry<Long, RangeLocks> e : posix.entrySet()) {
                if (e.getKey() != owner && e.getValue().conflict(type, start, end) != null) {
                    return e;
                }
            }
            return null;
        }

        @Override
        public boolean tryLock(long owner, LockType type, long start, long end) throws IOException {
            return tryLock(owner, -1, type, start, end);
        }

        @Override
        public boolean tryLock(long owner, int pid, LockType type, long start, long end) throws IOException {
            RangeLocks.checkRange(start, end);
            synchronized (monitor) {
                if (type != LockType.UNLOCK && holding(owner, type, start, end) != null) {
                    return false;
                }
                RangeLocks mine = posix.computeIfAbsent(owner, k -> new RangeLocks());
                mine.set(type, start, end);
                if (mine.isEmpty()) {
                    forget(owner);
                } else if (type != LockType.UNLOCK) {
                    lockedThrough.put(owner, this);
                    if (pid > 0) {
                        pids.put(owner, pid);
                    }
                }
                return true;
            }
        }

        @Override
        public boolean tryFlock(long owner, LockType type) {
            synchronized (monitor) {
                LockType held = flocks.get(owner);
                if (type == held) {
                    return true;
                }
                // as Linux: the held lock goes first, so a conversion that meets a conflict holds nothing
                flocks.remove(owner);
                if (type == LockType.UNLOCK) {
                    return true;
                }
                for (Map.Entry<Long, LockType> e : flocks.entrySet()) {
                    if (type == LockType.WRITE || e.getValue() == LockType.WRITE) {
                        return false;
                    }
                }
                flocks.put(owner, type);
                flocksTaken.add(owner);
                return true;
            }
        }

        @Override
        public void releaseOwner(long owner) {
            synchronized (monitor) {
                forget(owner);
            }
        }

        /**
         * What was taken through the handle goes with it: an owner's record locks, unless it has
         * locked through another handle since (the kernel's release of an open comes after its
         * close(2) returned, when the process may have locked the file again through a new open).
         */
        public void close() {
            synchronized (monitor) {
                lockedThrough.entrySet().removeIf(e -> {
                    if (e.getValue() != this) {
                        return false;
                    }
                    posix.remove(e.getKey());
                    pids.remove(e.getKey());
                    return true;
                });
                flocksTaken.forEach(flocks::remove);
            }
        }
    }
}
