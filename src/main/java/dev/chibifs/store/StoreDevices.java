package dev.chibifs.store;

/**
 * Which file system inside a local store a file is on, and the inode number it is shown with.
 *
 * <p>A file system may be mounted inside the store (another disk at {@code shared/sub}, a snapshot
 * of the store mounted in it), and its inode numbers are its own: equal numbers there and on the
 * store's file system are two files. Shown under the mount's one device, they were taken for one
 * by tar (a hard link to the wrong file), du and find. The store's own file system keeps its
 * numbers unchanged (the docs promise them, and git's index and incremental tar compare them
 * across remounts); another's get bits 32 to 55 flipped by a hash of its device, where an inode
 * number of 32 bits (ext4's, tmpfs's by default) has none set.
 *
 * <p>Collisions remain possible, and are accepted: a file of another file system meets one of the
 * store's own only where the store's file system gives numbers past 2^32 (XFS, btrfs, overlayfs
 * with xino, tmpfs with inode64), or numbers past 2^32 on the inner one meet the flipped bits; two
 * inner file systems meet where the 24 bits of their hashes are equal (one pair in 16 million).
 * Sixty-four bits cannot hold a device and an inode number both, and the store's own numbers must
 * stay as they are. Only programs comparing st_ino are misled then: the daemon itself tells every
 * file apart by its device too ({@link Metadata#device}).
 */
final class StoreDevices {

    /** The bits an inner file system's numbers get flipped: above ext4's 32, below the router's store tag. */
    private static final long MIXED_BITS = 0x00ff_ffff_0000_0000L;

    /** The root {@link #own} is of: a generation and its device, read together. */
    private record Own(long generation, long device) {
    }

    private volatile Own own = new Own(-1, -1);

    /** The store's root is {@code root} now: call before any {@link #deviceOf} of the operation. */
    void rootIs(StoreRoot.InUse root) {
        if (root.generation() != own.generation()) {
            own = new Own(root.generation(), root.device());
        }
    }

    /** The generation of the root last given to {@link #rootIs}; -1 before any. */
    long rootGeneration() {
        return own.generation();
    }

    /** {@link Metadata#device} of a file on {@code device} ({@code st_dev}). */
    long deviceOf(long device) {
        return device == own.device() ? Metadata.OWN_DEVICE : device;
    }

    /** The inode number shown of file {@code inode} on a file system {@link #deviceOf} calls {@code device}. */
    static long shownInode(long inode, long device) {
        if (device == Metadata.OWN_DEVICE) {
            return inode;
        }
        long h = device * 0x9e37_79b9_7f4a_7c15L; // Fibonacci hashing: neighbouring minors land far apart
        h ^= h >>> 31;
        long mixed = h & MIXED_BITS;
        return inode ^ (mixed == 0 ? 1L << 32 : mixed);
    }
}
