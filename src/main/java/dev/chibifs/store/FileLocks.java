package dev.chibifs.store;

import java.io.IOException;

/**
 * The locks on one store file, as the FUSE lock requests need them: POSIX record locks (fcntl
 * F_SETLK/F_GETLK, and so lockf and SQLite), open file description locks and flock(2), each held
 * for a 64-bit lock owner the kernel names in the request. Obtained from {@link FileHandle#locks()}
 * of the handle the request came through; every handle of the same file sees the same locks.
 *
 * <p>Record locks (testLock, tryLock, releaseOwner) follow POSIX per owner: an owner's locks never
 * conflict with its own, a new lock replaces, splits or merges the owner's locks on the range it
 * covers (upgrade and downgrade included), and UNLOCK removes them from that range. flock locks
 * (tryFlock) are a separate set, one whole-file lock per owner, as on Linux; the two kinds never
 * conflict with each other.
 *
 * <p>Nothing here waits: a conflict is answered at once (false), so a waiting F_SETLKW or
 * blocking flock ties up no thread; the caller retries when it chooses (the adapter on a timer,
 * answering EINTR when the waiter is interrupted). Ranges are FUSE's: start and end are byte
 * offsets, end inclusive, {@link Long#MAX_VALUE} for "to the end, however far the file grows";
 * a negative start or an end before it is refused ("Invalid argument", EINVAL).
 *
 * <p>How far a lock reaches is the store's: {@link LocalStorage} takes every lock on the store
 * file itself, so it excludes holders through every other mount of the same store on this host,
 * and programs locking the store file directly; {@link MemoryStorage}'s exclude within its own
 * process only.
 */
public interface FileLocks {

    /**
     * F_GETLK: the first lock another owner holds that conflicts with {@code type} on [start, end],
     * or {@link LockState#unlocked} when {@code owner} could take it now. The owner's own locks never
     * conflict. {@code type} is READ or WRITE.
     */
    LockState testLock(long owner, LockType type, long start, long end) throws IOException;

    /**
     * F_SETLK: sets {@code owner}'s lock of {@code type} on [start, end], or removes its locks there
     * with UNLOCK (which always succeeds, also where it holds none). True when done; false when
     * another owner holds a conflicting lock, in which case the owner's locks are as they were.
     */
    boolean tryLock(long owner, LockType type, long start, long end) throws IOException;

    /**
     * flock(2) with LOCK_NB: READ is LOCK_SH, WRITE is LOCK_EX, UNLOCK is LOCK_UN. True when done,
     * false on a conflict. As on Linux, changing a held lock's type is not atomic: a conversion that
     * meets a conflict has already let the old lock go.
     */
    boolean tryFlock(long owner, LockType type) throws IOException;

    /**
     * {@link #tryLock(long, LockType, long, long)} asked for process {@code pid}. Where every try
     * costs requests (an S3 store's leases), a process refused a moment ago may be told "not now"
     * again without asking; any other process is answered afresh. The owner alone cannot tell them
     * apart: a POSIX lock's owner is the process's file table, which a new process may reuse.
     */
    default boolean tryLock(long owner, int pid, LockType type, long start, long end) throws IOException {
        return tryLock(owner, type, start, end);
    }

    /** {@link #tryFlock(long, LockType)} asked for process {@code pid}, as {@link #tryLock(long, int, LockType, long, long)}. */
    default boolean tryFlock(long owner, int pid, LockType type) throws IOException {
        return tryFlock(owner, type);
    }

    /**
     * Runs {@code letGo}, on a thread of the store's, whenever a lock on this file may have been let
     * go where this handle's mount cannot see it (another mount, a program locking the store file),
     * until the returned watch is closed; null where the store cannot tell, and a waiter polls. It
     * may run when nothing was let go.
     */
    default AutoCloseable whenLetGo(Runnable letGo) {
        return null;
    }

    /**
     * Removes every record lock {@code owner} holds on this file (the kernel's FLUSH at close(2)
     * names the owner: POSIX drops a process's locks on a file when it closes any descriptor of it).
     * flock locks stay: they go with UNLOCK or when the handle that took them closes.
     */
    void releaseOwner(long owner) throws IOException;
}
