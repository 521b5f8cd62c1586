package dev.chibifs.fuse;

import com.kenai.jffi.MemoryIO;
import dev.chibifs.path.VfsPath;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * READDIRPLUS beside libfuse 2's high-level API, which has none: a listing that carries each
 * name's attributes, so {@code find -printf}, {@code ls -l} or {@code stat *} after the files
 * changed ask nothing more per file (the kernel drops a file's size and mtime after every write
 * through the mount, and a GETATTR per file followed). libfuse still lists: the request reaches
 * it as a READDIR with room for a fifth of the bytes, and its reply is widened here, entry by
 * entry, before it goes to the kernel ({@link ReplyWatch}).
 *
 * <p>An entry may name a kernel inode only by libfuse's node id for that name, which the
 * high-level API never tells; the entry replies do ({@link #learn}, once the kernel took the
 * reply: libfuse forgets the node of a reply it could not deliver), and the node ids are kept
 * per (directory node id, name) until libfuse could move or drop them: an unlink, rmdir or rename
 * naming the name, or a FORGET of the node. A name with none goes out with node id 0, which the
 * kernel takes as a plain directory entry. A FORGET of the node, or an unlink or rename of the
 * name, may land between the kernel taking an entry reply and its node being learned here: what
 * left lately is kept ({@link #departures}), and such a name is not learned.
 *
 * <p>The race with FORGET: every entry with a node id counts one lookup in the kernel (linked, or
 * forgotten again by the kernel itself when it cannot link it), which libfuse never counted. So
 * each one sent is counted here ({@link #grant}), and taken out of the kernel's FORGETs before
 * libfuse sees them ({@link #forgetting}): libfuse's count never falls below what the kernel
 * holds of its own lookups, and never to 0 while an entry of ours is in flight, whose node id it
 * would then no longer know (libfuse 2.9 aborts on a node id it does not know). Counting happens
 * before the reply is sent and under the same lock as FORGETs, so a FORGET that came first has
 * already taken the node id out of the table.
 */
final class DirectoryPlus {

    private static final MemoryIO MEMORY = MemoryIO.getInstance();

    /** sizeof(struct fuse_entry_out): nodeid, generation, entry_valid, attr_valid, 2 x nsec, struct fuse_attr. */
    static final int ENTRY_OUT = 128;
    /** struct fuse_dirent before its name: ino, off, namelen, type. */
    static final int DIRENT = 24;
    /**
     * How much of the kernel's room libfuse may fill with plain entries: a plain entry takes at least
     * 32 bytes, and its READDIRPLUS form 128 more, at most 5 times as much.
     */
    static final int SHRINK = 5;
    /** More names than this and the table starts over: names then go out plain until looked up again. */
    private static final int LIMIT = 65_536;

    /** Where a widened entry's attributes come from. */
    interface Attributes {
        /** {@link #fill}: the name is gone, or is not to go out with attributes. */
        int NONE = -1;
        /** A bit of {@link #fill}'s answer: keep the name for libfuse's 1 s only ({@link KernelEntries#brief}). */
        int BRIEF_ENTRY = 1;
        /** A bit of {@link #fill}'s answer: keep the attributes for libfuse's 1 s only. */
        int BRIEF_ATTRIBUTES = 2;

        /**
         * Fills the zeroed struct stat at {@code stat} for {@code path}, kernel inode {@code nodeid},
         * as a GETATTR of it would; returns {@link #NONE} or the BRIEF bits that apply.
         */
        int fill(VfsPath path, long nodeid, long stat);
    }

    private record Name(long parent, String name) {
    }

    /** A listing libfuse filled: the directory's path then, and {@link #renames} then. */
    private record Listing(VfsPath path, long renames) {
    }

    private final long entrySeconds;
    private final int entryNanos;
    private final long attrSeconds;
    private final int attrNanos;
    private volatile Attributes attributes;

    /**
     * What left lately, the {@link #departures}'th at {@code departures % length}: a node id
     * (Long) a FORGET named, or a name (Name) an unlink, rmdir or rename named.
     */
    private final Object[] departed = new Object[4096];
    /** Node ids forgotten and names unlearned so far. */
    private long departures;

    /** Guards {@link #nodes}, {@link #names}, {@link #granted}, {@link #departed} and {@link #departures}. */
    private final Object lock = new Object();
    /** (directory node id, name) -> {node id, generation}, as libfuse's last entry reply gave them. */
    private final Map<Name, long[]> nodes = new HashMap<>();
    /** Node id -> the names it is kept under, for a FORGET. */
    private final Map<Long, List<Name>> names = new HashMap<>();
    /** Node id -> lookups the kernel holds through our entries, which libfuse does not count. */
    private final Map<Long, Long> granted = new HashMap<>();

    /** libfuse's directory handle -> what it listed; until RELEASEDIR. */
    private final ConcurrentMap<Long, Listing> listings = new ConcurrentHashMap<>();
    /** Renames through the mount so far: a directory renamed after libfuse listed it is not where it was. */
    private final AtomicLong renames = new AtomicLong();

    /** For a mount whose kernel keeps names for {@code entryTimeout} and attributes for {@code attrTimeout} seconds. */
    DirectoryPlus(double entryTimeout, double attrTimeout) {
        this.entrySeconds = (long) entryTimeout;
        this.entryNanos = (int) Math.round((entryTimeout - entrySeconds) * 1e9);
        this.attrSeconds = (long) attrTimeout;
        this.attrNanos = (int) Math.round((attrTimeout - attrSeconds) * 1e9);
    }

    /** Where attributes come from (the file system, once it exists). */
    void attributesFrom(Attributes source) {
        this.attributes = source;
    }

    /** How many node ids and names have left so far: read before an entry reply is sent, for {@link #learn}. */
    long departuresSoFar() {
        synchronized (lock) {
            return departures;
        }
    }

    /**
     * The kernel took libfuse's reply to a lookup (create, mkdir, ...) of {@code name} in directory
     * {@code parent}: this node. {@code before} is {@link #departuresSoFar} from before the reply was
     * sent: a FORGET of the node since then may have ended it in libfuse, and an unlink or rename of
     * the name may have taken it from the node.
     */
    void learn(long parent, String name, long nodeid, long generation, long before) {
        if (nodeid == 0 || name == null) {
            return;
        }
        Name key = new Name(parent, name);
        synchronized (lock) {
            if (departures - before > departed.length) {
                return; // too many to tell
            }
            for (long i = before; i < departures; i++) {
                Object gone = departed[(int) (i % departed.length)];
                if (gone.equals(nodeid) || gone.equals(key)) {
                    return;
                }
            }
            if (nodes.size() >= LIMIT && !nodes.containsKey(key)) {
                nodes.clear();
                names.clear();
            }
            long[] old = nodes.put(key, new long[] {nodeid, generation});
            if (old != null && old[0] != nodeid) {
                unname(old[0], key);
            }
            if (old == null || old[0] != nodeid) {
                names.computeIfAbsent(nodeid, n -> new ArrayList<>(1)).add(key);
            }
        }
    }

    /** Before libfuse sees an unlink, rmdir or rename of {@code name} in {@code parent}: the name may leave its node. */
    void unlearn(long parent, String name) {
        Name key = new Name(parent, name);
        synchronized (lock) {
            departed[(int) (departures++ % departed.length)] = key;
            long[] old = nodes.remove(key);
            if (old != null) {
                unname(old[0], key);
            }
        }
    }

    /** Before libfuse sees a rename: listings filled earlier may name a directory no longer at its path. */
    void renaming() {
        renames.incrementAndGet();
    }

    private void unname(long nodeid, Name key) {
        List<Name> l = names.get(nodeid);
        if (l != null) {
            l.remove(key);
            if (l.isEmpty()) {
                names.remove(nodeid);
            }
        }
    }

    /**
     * The kernel forgets {@code count} lookups of {@code nodeid}: the node id leaves the table, and
     * the lookups our entries gave are taken out first. Returns the count libfuse is to see.
     */
    long forgetting(long nodeid, long count) {
        synchronized (lock) {
            departed[(int) (departures++ % departed.length)] = nodeid;
            List<Name> l = names.remove(nodeid);
            if (l != null) {
                for (Name key : l) {
                    nodes.remove(key);
                }
            }
            Long ours = granted.get(nodeid);
            if (ours == null) {
                return count;
            }
            long taken = Math.min(ours, count);
            if (ours == taken) {
                granted.remove(nodeid);
            } else {
                granted.put(nodeid, ours - taken);
            }
            return count - taken;
        }
    }

    /** The node of {@code name} in {@code parent}, counted as one lookup more in the kernel; null when unknown. */
    long[] grant(long parent, String name) {
        synchronized (lock) {
            long[] node = nodes.get(new Name(parent, name));
            if (node != null) {
                granted.merge(node[0], 1L, Long::sum);
            }
            return node;
        }
    }

    /** Takes back a {@link #grant} whose entry is not sent after all. */
    void ungrant(long nodeid) {
        synchronized (lock) {
            granted.computeIfPresent(nodeid, (n, c) -> c == 1 ? null : c - 1);
        }
    }

    /** Lookups the kernel holds of {@code nodeid} through our entries (for tests). */
    long granted(long nodeid) {
        synchronized (lock) {
            return granted.getOrDefault(nodeid, 0L);
        }
    }

    /** libfuse is filling directory handle {@code fh} with the listing of {@code path}. */
    void listing(long fh, VfsPath path) {
        listings.put(fh, new Listing(path, renames.get()));
    }

    /** Directory handle {@code fh} was released. */
    void released(long fh) {
        listings.remove(fh);
    }

    /**
     * Widens libfuse's plain READDIR reply, {@code length} bytes at {@code plain}, into READDIRPLUS
     * entries at {@code out} (room for {@code room} bytes) for directory {@code dir} (kernel inode)
     * through handle {@code fh}. Each entry gets the node and attributes of its name where both are
     * known, else node id 0. Returns the bytes written; {@code sent} collects the paths of the names
     * that went out with a node and {@code nodes} their node ids (each {@link #grant}ed), {@code stat}
     * is room for a struct stat.
     */
    int widen(long dir, long fh, long plain, int length, long out, int room, long stat, List<VfsPath> sent,
              List<Long> nodes) {
        Listing listing = listings.get(fh);
        // a rename since libfuse listed: the directory may not be at that path any more
        VfsPath path = listing != null && listing.renames == renames.get() ? listing.path : null;
        Attributes source = attributes;
        int in = 0;
        int written = 0;
        while (in + DIRENT <= length) {
            int nameLength = MEMORY.getInt(plain + in + 16);
            int reclen = align(DIRENT + nameLength);
            if (in + reclen > length || written + ENTRY_OUT + reclen > room) {
                break; // libfuse's slice may cut its last entry; the kernel asks from the last whole one on
            }
            long entry = out + written;
            MEMORY.setMemory(entry, ENTRY_OUT, (byte) 0);
            MEMORY.copyMemory(plain + in, entry + ENTRY_OUT, reclen);
            if (path != null && source != null) {
                String name = name(plain + in + DIRENT, nameLength);
                if (name != null) {
                    fillEntry(entry, dir, path, name, source, stat, sent, nodes);
                }
            }
            in += reclen;
            written += ENTRY_OUT + reclen;
        }
        return written;
    }

    private void fillEntry(long entry, long dir, VfsPath path, String name, Attributes source, long stat,
                           List<VfsPath> sent, List<Long> nodes) {
        long[] node = grant(dir, name);
        if (node == null) {
            return;
        }
        VfsPath child = path.child(name);
        int brief = Attributes.NONE;
        try {
            MEMORY.setMemory(stat, StatLayout.BYTES, (byte) 0);
            brief = source.fill(child, node[0], stat);
        } finally {
            if (brief == Attributes.NONE) {
                ungrant(node[0]);
            }
        }
        if (brief == Attributes.NONE) {
            return;
        }
        sent.add(child);
        nodes.add(node[0]);
        MEMORY.putLong(entry, node[0]);
        MEMORY.putLong(entry + 8, node[1]);
        boolean briefEntry = (brief & Attributes.BRIEF_ENTRY) != 0;
        boolean briefAttributes = (brief & Attributes.BRIEF_ATTRIBUTES) != 0;
        MEMORY.putLong(entry + 16, briefEntry ? Math.min(1, entrySeconds) : entrySeconds);
        MEMORY.putLong(entry + 24, briefAttributes ? Math.min(1, attrSeconds) : attrSeconds);
        MEMORY.putInt(entry + 32, briefEntry && entrySeconds >= 1 ? 0 : entryNanos);
        MEMORY.putInt(entry + 36, briefAttributes && attrSeconds >= 1 ? 0 : attrNanos);
        attr(stat, entry + 40);
        // the dirent's ino as the attributes' (libfuse's plain entry may carry FUSE_UNKNOWN_INO)
        MEMORY.putLong(entry + ENTRY_OUT, MEMORY.getLong(entry + 40));
    }

    /**
     * struct stat -> struct fuse_attr {ino, size, blocks, atime, mtime, ctime; atimensec, mtimensec,
     * ctimensec, mode, nlink, uid, gid, rdev, blksize, flags}, as libfuse's convert_stat.
     */
    private static void attr(long stat, long attr) {
        MEMORY.putLong(attr, StatLayout.INO.get(stat));
        MEMORY.putLong(attr + 8, StatLayout.SIZE.get(stat));
        MEMORY.putLong(attr + 16, StatLayout.BLOCKS.get(stat));
        MEMORY.putLong(attr + 24, StatLayout.ATIME_SEC.get(stat));
        MEMORY.putLong(attr + 32, StatLayout.MTIME_SEC.get(stat));
        MEMORY.putLong(attr + 40, StatLayout.CTIME_SEC.get(stat));
        MEMORY.putInt(attr + 48, (int) StatLayout.ATIME_NSEC.get(stat));
        MEMORY.putInt(attr + 52, (int) StatLayout.MTIME_NSEC.get(stat));
        MEMORY.putInt(attr + 56, (int) StatLayout.CTIME_NSEC.get(stat));
        MEMORY.putInt(attr + 60, (int) StatLayout.MODE.get(stat));
        MEMORY.putInt(attr + 64, (int) StatLayout.NLINK.get(stat));
        MEMORY.putInt(attr + 68, (int) StatLayout.UID.get(stat));
        MEMORY.putInt(attr + 72, (int) StatLayout.GID.get(stat));
        MEMORY.putInt(attr + 80, (int) StatLayout.BLKSIZE.get(stat));
    }

    /** The entry's name, or null for "." and ".." (the kernel links neither). */
    private static String name(long address, int length) {
        if (length <= 0) {
            return null;
        }
        byte[] bytes = new byte[length];
        MEMORY.getByteArray(address, bytes, 0, length);
        if (length <= 2 && bytes[0] == '.' && (length == 1 || bytes[1] == '.')) {
            return null;
        }
        return new String(bytes, StandardCharsets.UTF_8);
    }

    static int align(int n) {
        return (n + 7) & ~7;
    }
}
