package dev.chibifs.fuse;

import dev.chibifs.path.VfsPath;
import dev.chibifs.store.FileHandle;
import dev.chibifs.store.LockState;
import dev.chibifs.store.LockType;
import dev.chibifs.store.ReadOnlyStoreException;

import java.io.IOException;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Keeps SQLite's WAL index from being mapped twice over where a mount serves its pages.
 *
 * <p>In WAL mode SQLite keeps an index of the log in a shared mapping of the database's
 * {@code -shm} file, and every connection holds a read lock on its byte 128 (the "dead man
 * switch", DMS) while it is connected; the first to connect takes it as a write lock and rebuilds
 * the index. Through a served mount (no passthrough) a mapping is of the mount's own pages: the
 * connections of a second mount, or of a program on the store file, map other pages, the two
 * indexes part, and SQLite loses committed rows without an error. FUSE cannot share pages between
 * mounts; a passthrough open maps the store file itself and is not guarded.
 *
 * <p>So on a served open the DMS locks are this mount's own business: the owners' locks on byte 128
 * are kept here, deciding conflicts among them as the kernel would, and while any is held the
 * mount holds a write lock on that byte of the store file, through a handle of its own, under
 * {@link #MOUNT_OWNER}. To every other mount and program the mount's connections are one
 * exclusive holder: theirs wait (SQLite reopens the index and asks again, sleeping longer each
 * time, for about 10 s before it fails with "locking protocol", SQLITE_PROTOCOL; its busy timeout
 * plays no part there), and this mount's wait while they are connected. A store whose locks nobody
 * else sees (memory, S3) lets that write lock be taken at once: nothing changes there.
 *
 * <p>Locking: each index's state is guarded by its own monitor; the store's lock is taken and let
 * go under it, so two owners arriving at once take it once. An index leaves the map once it holds
 * nothing, under its monitor, marked dead, so a thread that fetched it just before fetches again.
 */
final class WalIndexGuard {

    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(WalIndexGuard.class);

    /** The DMS byte of a {@code -shm} file: UNIX_SHM_DMS in SQLite's os_unix.c (lock bytes 120-127, then it). */
    static final long DMS_BYTE = 128;
    /** What SQLite appends to a database's name for its WAL index. */
    static final String INDEX_SUFFIX = "-shm";
    /**
     * The lock owner the mount's own hold is taken under. The kernel's owners are scrambled
     * pointers (fuse_lock_owner_id), never this in practice, and its hold is on a handle no
     * kernel owner locks through.
     */
    static final long MOUNT_OWNER = 0x6368_6962_6966_73L; // "chibifs"

    /** Opens the guard's own handle of the index, for the mount's hold: read-write, or read-only. */
    interface Opener {
        FileHandle open(boolean writable) throws IOException;
    }

    /** One connection of this mount: its lock, and the open file it came through (its close ends it). */
    private record Holder(LockType type, long fh) {
    }

    /** One index's connections on this mount. Guarded by itself. */
    private static final class Index {
        final Map<Long, Holder> holders = new HashMap<>(4);
        /** Holds MOUNT_OWNER's write lock on the DMS byte while there are holders; null when none. */
        FileHandle hold;
        boolean dead;
    }

    /** By node: hard links of one file are one node, so one index. */
    private final ConcurrentHashMap<NodeTable.Node, Index> indexes = new ConcurrentHashMap<>();
    /** Files refused at least once: a refusal is logged once per file, not at each of SQLite's retries. */
    private final Set<VfsPath> warned = ConcurrentHashMap.newKeySet();
    /** How many files {@link #warned} remembers; past it, refusals go unlogged. */
    private static final int WARNED_MAX = 1024;

    /** Whether a record lock request on [start, end] reaches the DMS byte. */
    static boolean reaches(long start, long end) {
        return start <= DMS_BYTE && DMS_BYTE <= end;
    }

    /** Whether {@code file} is named as SQLite names a WAL index. */
    static boolean isIndex(VfsPath file) {
        return file.fileName() != null && file.fileName().endsWith(INDEX_SUFFIX);
    }

    /** Whether a lock of {@code type} on exactly [start, end] is the DMS lock itself (the guard keeps those). */
    static boolean keeps(LockType type, long start, long end) {
        return type != LockType.UNLOCK && start == DMS_BYTE && end == DMS_BYTE;
    }

    /**
     * F_GETLK of the DMS byte by {@code owner}: the lock of another connection of this mount, or
     * unlocked when only the owner's own are here, or null when this mount has none (the store
     * says, then: the mount holds nothing there).
     */
    LockState test(NodeTable.Node node, long owner, LockType type) {
        Index index = indexes.get(node);
        if (index == null) {
            return null;
        }
        synchronized (index) {
            if (index.dead || index.holders.isEmpty()) {
                return null;
            }
            Holder other = conflict(index, owner, type);
            return other == null ? LockState.unlocked(DMS_BYTE, DMS_BYTE) : new LockState(other.type(), DMS_BYTE, DMS_BYTE, 0);
        }
    }

    /**
     * F_SETLK of the DMS byte by {@code owner} through open file {@code fh}: false on a conflict with
     * another connection of this mount, or, for the first, while anyone outside it holds the byte.
     */
    boolean tryLock(NodeTable.Node node, VfsPath file, long owner, long fh, LockType type, Opener opener) throws IOException {
        while (true) {
            Index index = indexes.computeIfAbsent(node, k -> new Index());
            synchronized (index) {
                if (index.dead) {
                    continue;
                }
                if (conflict(index, owner, type) != null) {
                    return false;
                }
                if (index.hold == null && !takeHold(index, file, opener)) {
                    retireIfEmpty(node, index);
                    return false;
                }
                index.holders.put(owner, new Holder(type, fh));
                return true;
            }
        }
    }

    /** Another connection's lock that conflicts with {@code owner}'s of {@code type}, as the kernel decides; under the index's monitor. */
    private static Holder conflict(Index index, long owner, LockType type) {
        for (Map.Entry<Long, Holder> h : index.holders.entrySet()) {
            if (h.getKey() != owner && (type == LockType.WRITE || h.getValue().type() == LockType.WRITE)) {
                return h.getValue();
            }
        }
        return null;
    }

    /** The mount's write lock on the DMS byte, for the first connection; under the index's monitor. */
    private boolean takeHold(Index index, VfsPath file, Opener opener) throws IOException {
        FileHandle hold;
        LockType kind = LockType.WRITE;
        try {
            hold = opener.open(true);
        } catch (java.nio.file.AccessDeniedException | ReadOnlyStoreException readOnly) {
            // a caller who may only read (read-only connections, a read-only store): a write lock needs
            // a writable description. A read lock still keeps a first connection elsewhere from
            // rebuilding the index under this mount's readers, though not others from joining them
            hold = opener.open(false);
            kind = LockType.READ;
        }
        boolean taken = false;
        try {
            taken = hold.locks().tryLock(MOUNT_OWNER, kind, DMS_BYTE, DMS_BYTE);
        } finally {
            if (taken) {
                index.hold = hold;
            } else {
                closeQuietly(hold);
            }
        }
        if (!taken && warned.size() < WARNED_MAX && warned.add(file)) {
            LOG.warn("{}: SQLite's WAL index is in use through another mount or in the store; this mount serves"
                    + " its pages itself and would map a second copy of it, which loses rows, so its connections"
                    + " wait for the others to close (SQLite gives up after about 10 s: \"locking protocol\")."
                    + " To use the database from both at once, mount with passthrough (as root, Linux 6.9+) or"
                    + " keep SQLite's rollback journal", file);
        }
        return taken;
    }

    /** The owner's DMS lock goes (an unlock of a range with the byte in it, or its FLUSH). */
    void unlock(NodeTable.Node node, long owner) {
        end(node, h -> h.getKey() == owner);
    }

    /** Open file {@code fh} was released: the connections that locked through it are gone. */
    void released(NodeTable.Node node, long fh) {
        end(node, h -> h.getValue().fh() == fh);
    }

    private void end(NodeTable.Node node, java.util.function.Predicate<Map.Entry<Long, Holder>> which) {
        Index index = indexes.get(node);
        if (index == null) {
            return;
        }
        synchronized (index) {
            if (!index.dead && index.holders.entrySet().removeIf(which)) {
                retireIfEmpty(node, index);
            }
        }
    }

    /** With no connection left, the mount's hold goes and the index leaves the map; under its monitor. */
    private void retireIfEmpty(NodeTable.Node node, Index index) {
        if (!index.holders.isEmpty()) {
            return;
        }
        index.dead = true;
        indexes.remove(node, index);
        if (index.hold != null) {
            closeQuietly(index.hold); // its write lock goes with the handle's descriptions
            index.hold = null;
        }
    }

    private static void closeQuietly(FileHandle hold) {
        try {
            hold.close();
        } catch (IOException | RuntimeException e) {
            LOG.warn("closing the WAL index hold: {}", e.toString());
        }
    }
}
