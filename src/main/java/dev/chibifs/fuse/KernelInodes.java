package dev.chibifs.fuse;

import java.util.Arrays;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.function.LongToIntFunction;

/**
 * Which kernel inodes show a store file, so their cached attributes can be dropped when the
 * file's link count changes. libfuse 2's high-level API gives every name of a hard-linked file a
 * kernel inode (node id) of its own; after a link or unlink through one name the kernel corrects
 * that inode only, and the others kept the old count until attr_timeout. When a file's links
 * or attributes change we ask the kernel to forget the other inodes' attributes
 * (FUSE_NOTIFY_INVAL_INODE, attributes only: that takes no inode lock, so it is safe from inside
 * any request). Node ids come from the requests that carry them (getattr, setattr, open) and
 * from libfuse's entry replies, which {@link ReplyWatch} reads on their way to the kernel
 * (lookup, link, create, mknod) of files with more than one link.
 */
final class KernelInodes {

    private static final int ENOENT = 2;

    /** More store files than this and the table starts over: staleness falls back to attr_timeout. */
    private static final int LIMIT = 65_536;

    /** Store inode -> node ids; an array, as nearly every file has one name (small: one entry per file looked up). */
    private final ConcurrentMap<Long, long[]> nodesByInode = new ConcurrentHashMap<>();
    /** Node id -> the store inode it was seen showing: what a FORGET of it ({@link #forgotten}) takes out. */
    private final ConcurrentMap<Long, Long> inodeByNode = new ConcurrentHashMap<>();
    /** Whether any file has been seen under two kernel inodes (names, or a name and a hidden handle). */
    private volatile boolean anyShared;
    private volatile LongToIntFunction invalidate = nodeid -> 0;

    /**
     * Where invalidations go: the mounted session's notify call, which returns 0 or -errno, or
     * nowhere before mount and after unmount.
     */
    void invalidateWith(LongToIntFunction notifier) {
        this.invalidate = notifier;
    }

    /** Kernel inode {@code nodeid} shows the store file {@code storeInode}. */
    void seen(long storeInode, long nodeid) {
        if (nodeid <= 1 || storeInode < 0) {
            return; // 0: not in a request; 1: the root, never a file; no inode: nothing to show
        }
        long[] known = nodesByInode.get(storeInode);
        if (known != null && contains(known, nodeid)) {
            return;
        }
        if (known == null && nodesByInode.size() >= LIMIT) {
            nodesByInode.clear();
            inodeByNode.clear();
        }
        if (known != null && !stillShown(storeInode, known)) {
            known = null;
        }
        if (known != null) {
            anyShared = true;
        }
        nodesByInode.compute(storeInode, (k, nodes) -> {
            if (nodes == null) {
                return new long[] {nodeid};
            }
            if (contains(nodes, nodeid)) {
                return nodes;
            }
            long[] more = Arrays.copyOf(nodes, nodes.length + 1);
            more[nodes.length] = nodeid;
            return more;
        });
        inodeByNode.put(nodeid, storeInode);
    }

    /**
     * The kernel sent FORGET for {@code nodeid}: it evicted the inode, and libfuse never gives the
     * node id out again. Taken out here, so that a new file the store gives a removed one's inode
     * number (ext4 does, for tar after rm -r) finds nothing left of the removed one.
     */
    void forgotten(long nodeid) {
        Long storeInode = inodeByNode.remove(nodeid);
        if (storeInode != null) {
            dropNode(storeInode, nodeid);
        }
    }

    /**
     * Whether the kernel still has one of {@code nodes}, the node ids known for {@code storeInode},
     * now that another shows it. A file system gives a new file the inode number of one removed
     * (ext4 does, for tar after rm -r): a node id the kernel has forgotten showed that removed file,
     * not another name of this one. Without asking, every such reuse marked files {@link #anyShared},
     * and each write and setattr of the new file sent the kernel an invalidation for the old node
     * id (over 9,000 in a round of 5,000 small files). Asked once here, with an attribute
     * invalidation, which costs a node the kernel still has only a fetch of its attributes. Rare
     * since node ids are taken out at their FORGET ({@link #forgotten}); this covers one the kernel
     * never took (an entry reply to an interrupted request, which libfuse forgets itself and no
     * FORGET names).
     */
    private boolean stillShown(long storeInode, long[] nodes) {
        LongToIntFunction notifier = invalidate;
        boolean shown = false;
        for (long other : nodes) {
            if (notifier.applyAsInt(other) == -ENOENT) {
                forget(storeInode, other);
            } else {
                shown = true;
            }
        }
        return shown;
    }

    private static boolean contains(long[] nodes, long nodeid) {
        for (long n : nodes) {
            if (n == nodeid) {
                return true;
            }
        }
        return false;
    }

    /**
     * False while no file has shown up under two kernel inodes: then a link, unlink or rename
     * changes only the inode the kernel itself corrects, and callers can skip finding the store
     * inode at all (a stat per unlink, in the common case of no hard links).
     */
    boolean anyShared() {
        return anyShared;
    }

    /** The link count of {@code storeInode} changed: every kernel inode that shows it fetches attributes again. */
    void linksChanged(long storeInode) {
        changedThrough(storeInode, 0);
    }

    /**
     * {@code storeInode} changed in the store, not through this mount: every kernel inode that shows
     * it fetches attributes again. False when the kernel still has none of those known.
     */
    boolean changedElsewhere(long storeInode) {
        return changedThrough(storeInode, 0);
    }

    /**
     * {@code storeInode} changed through kernel inode {@code nodeid} (a setattr or a write, which the
     * kernel applies to that inode itself): the other kernel inodes that show it fetch attributes again.
     * True when the kernel still had one of them.
     */
    boolean changedThrough(long storeInode, long nodeid) {
        long[] nodes = nodesByInode.get(storeInode);
        boolean told = false;
        if (nodes != null) {
            LongToIntFunction notifier = invalidate;
            for (long other : nodes) {
                if (other == nodeid) {
                    continue;
                }
                if (notifier.applyAsInt(other) == -ENOENT) {
                    forget(storeInode, other);
                } else {
                    told = true;
                }
            }
        }
        return told;
    }

    /** The kernel fetches the attributes of inode {@code nodeid} again before it uses them. */
    void invalidate(long nodeid) {
        if (nodeid > 1) {
            invalidate.applyAsInt(nodeid); // -ENOENT: the kernel has forgotten it, and caches nothing of it
        }
    }

    /**
     * The kernel no longer has inode {@code nodeid} (it answered ENOENT: the inode was evicted, and
     * libfuse never gives a node id out twice). Without this, a store inode number the file system
     * reused for a new file (after an rm -r, say) kept the old file's node ids, and every write and
     * setattr of the new file sent the kernel an invalidation it refused: over 100,000 in one tar xf.
     */
    private void forget(long storeInode, long nodeid) {
        inodeByNode.remove(nodeid, storeInode);
        dropNode(storeInode, nodeid);
    }

    /** Takes {@code nodeid} out of the node ids known for {@code storeInode} (not out of {@link #inodeByNode}). */
    private void dropNode(long storeInode, long nodeid) {
        nodesByInode.computeIfPresent(storeInode, (k, nodes) -> {
            if (!contains(nodes, nodeid)) {
                return nodes;
            }
            if (nodes.length == 1) {
                return null;
            }
            long[] left = new long[nodes.length - 1];
            int i = 0;
            for (long n : nodes) {
                if (n != nodeid) {
                    left[i++] = n;
                }
            }
            return left;
        });
    }
}
