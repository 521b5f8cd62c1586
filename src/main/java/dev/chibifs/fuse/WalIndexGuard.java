package dev.chibifs.fuse;

import dev.chibifs.path.VfsPath;
import dev.chibifs.store.FileLocks;
import dev.chibifs.store.LockType;

import java.io.IOException;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Keeps SQLite's WAL index from being mapped twice over through a served mount.
 *
 * <p>In WAL mode SQLite keeps an index of the log in a shared mapping of the database's
 * {@code -shm} file, and every connection holds a read lock on its byte 128 (the "dead man
 * switch", DMS) while it is connected; the first to connect takes it as a write lock and rebuilds
 * the index. Through a served mount (no passthrough) a mapping is of the mount's own pages: the
 * connections of a second mount, or of a program on the store file, map other pages, the two
 * indexes part, and SQLite loses committed rows without an error and corrupts the database. FUSE
 * cannot share pages between mounts; a passthrough open maps the store file itself and needs no
 * guard.
 *
 * <p>So a served open's DMS lock is granted only while nobody outside this mount holds one: a
 * connection that would join another mount's is refused (EAGAIN), and SQLite reopens the index and
 * asks again, sleeping longer each time, for about 10 s before it fails with "locking protocol"
 * (SQLITE_PROTOCOL; its busy timeout plays no part there). What this cannot stop is the other way
 * round: a program or passthrough mount that connects after this mount's connections never asks
 * this daemon.
 */
final class WalIndexGuard {

    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(WalIndexGuard.class);

    /** The DMS byte of a {@code -shm} file: UNIX_SHM_DMS in SQLite's os_unix.c (lock bytes 120-127, then it). */
    static final long DMS_BYTE = 128;
    /** What SQLite appends to a database's name for its WAL index. */
    static final String INDEX_SUFFIX = "-shm";

    /** Files refused since last granted: a refusal is logged once, not at each of SQLite's retries. */
    private final Set<VfsPath> refused = ConcurrentHashMap.newKeySet();

    /** Whether a record lock request is SQLite taking the DMS lock of a WAL index. */
    static boolean guards(VfsPath file, LockType type, long start, long end) {
        return type != LockType.UNLOCK && start == DMS_BYTE && end == DMS_BYTE
                && file.fileName() != null && file.fileName().endsWith(INDEX_SUFFIX);
    }

    /** Whether the DMS lock of {@code file} may be tried now: not while only others hold it. */
    boolean mayTry(FileLocks locks, VfsPath file) throws IOException {
        if (!locks.heldOnlyElsewhere(DMS_BYTE, DMS_BYTE)) {
            refused.remove(file);
            return true;
        }
        if (refused.add(file)) {
            LOG.warn("{}: SQLite's WAL index is in use through another mount or in the store; this mount serves"
                    + " its pages itself and would map a second copy of it, which loses rows, so its connections"
                    + " wait for the others to close (SQLite gives up after about 10 s: \"locking protocol\")."
                    + " To use the database from both at once, mount with passthrough (as root, Linux 6.9+) or"
                    + " keep SQLite's rollback journal", file);
        }
        return false;
    }
}
