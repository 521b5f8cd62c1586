package dev.chibifs.store;

/**
 * The kind of a file lock, for record locks (fcntl's F_RDLCK, F_WRLCK, F_UNLCK) and for flock(2)
 * (LOCK_SH, LOCK_EX, LOCK_UN) alike. The FUSE adapter maps the kernel's numbers to these.
 */
public enum LockType {
    /** A shared lock: F_RDLCK, LOCK_SH. Any number of owners may hold one on the same bytes. */
    READ,
    /** An exclusive lock: F_WRLCK, LOCK_EX. Conflicts with every other owner's lock on the same bytes. */
    WRITE,
    /** No lock: F_UNLCK, LOCK_UN. Asking for it removes the owner's lock; a test that finds no conflict answers it. */
    UNLOCK
}
