package dev.chibifs.store;

/**
 * What {@link FileLocks#testLock} found: the conflicting lock, or {@link LockType#UNLOCK} and the
 * range asked about when there is none (as F_GETLK answers).
 *
 * @param type  READ or WRITE for a conflicting lock; UNLOCK for none
 * @param start the first byte of the conflicting lock
 * @param end   its last byte, inclusive; {@link Long#MAX_VALUE} for "to the end, however far the file grows"
 * @param pid   the holder's process id as F_GETLK reports it: the process that took it, where the
 *              lock is one of this daemon's owners', or a process holding a classic POSIX lock on
 *              the store file directly; -1 where no one process is known (an open file description
 *              lock of another mount or program)
 */
public record LockState(LockType type, long start, long end, int pid) {

    /** No conflicting lock on [start, end]. */
    public static LockState unlocked(long start, long end) {
        return new LockState(LockType.UNLOCK, start, end, 0);
    }

    /** Whether a lock conflicts (type is not UNLOCK). */
    public boolean conflicts() {
        return type != LockType.UNLOCK;
    }
}
