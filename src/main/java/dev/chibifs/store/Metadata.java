package dev.chibifs.store;

import java.nio.file.attribute.FileTime;

/**
 * What the store knows of one entry.
 *
 * @param created the birth time; null where the store's file system does not keep or tell it
 * @param mode the permission bits as stored (only the execute bits mean anything to chibifs)
 * @param blocks what it takes in the store, in 512-byte units, as {@code st_blocks} (what {@code du}
 *               adds up): a file system's allocation, holes left out; the size rounded up where a
 *               store allocates nothing of its own
 * @param inode the store's number of the file: on the store's own file system its inode number; on
 *              another mounted inside the store, that one's number with bits of its device mixed in
 *              ({@link StoreDevices}), so the two rarely share one
 * @param device {@link #OWN_DEVICE} for the store's own file system (the one its root directory is
 *               on, and every store that has no other); else the device ({@code st_dev}) of another
 *               file system mounted inside the store, whose inode numbers are its own: with
 *               {@code inode} and the birth time it tells two files apart
 */
public record Metadata(EntryKind kind, long size, FileTime created, FileTime modified,
                       FileTime accessed, FileTime changed, long links, int mode, long inode, long blocks,
                       long device) {

    /** {@link #device} of what is on the store's own file system. */
    public static final long OWN_DEVICE = 0;

    /** The unit of {@link #blocks}, fixed by stat(2) whatever the file system's block size. */
    public static final int BLOCK_UNIT = 512;

    /** Metadata of a file on the store's own file system. */
    public Metadata(EntryKind kind, long size, FileTime created, FileTime modified,
                    FileTime accessed, FileTime changed, long links, int mode, long inode, long blocks) {
        this(kind, size, created, modified, accessed, changed, links, mode, inode, blocks, OWN_DEVICE);
    }

    /** Metadata of a store that allocates nothing of its own (memory, objects): its size in blocks, rounded up. */
    public Metadata(EntryKind kind, long size, FileTime created, FileTime modified,
                    FileTime accessed, FileTime changed, long links, int mode, long inode) {
        this(kind, size, created, modified, accessed, changed, links, mode, inode, (size + BLOCK_UNIT - 1) / BLOCK_UNIT);
    }

    public boolean isDirectory() {
        return kind == EntryKind.DIRECTORY;
    }

    public boolean isFile() {
        return kind == EntryKind.FILE;
    }

    /** Whether {@code other}, read of the same store, is of this very file: see {@link #isOf}. */
    public boolean sameFileAs(Metadata other) {
        return isOf(device, inode, bornNanos(), other);
    }

    /** The birth time in nanoseconds since the epoch, or {@link #NOT_BORN} where there is none: as the FUSE node table keeps it. */
    public long bornNanos() {
        return created == null ? NOT_BORN : created.to(java.util.concurrent.TimeUnit.NANOSECONDS);
    }

    /** {@link #bornNanos} of a file system that tells no birth time. */
    public static final long NOT_BORN = 0;

    /**
     * Whether {@code m}, read of the same store, is of the file known as {@code device}, {@code
     * inode} and {@code bornNanos}: its file system and inode number, and its birth time where
     * both have one (ext4 reuses a freed number at once). The one rule for the store
     * ({@link #sameFileAs}) and the FUSE node table, which keeps the numbers, not a Metadata.
     */
    public static boolean isOf(long device, long inode, long bornNanos, Metadata m) {
        if (m.device != device || m.inode != inode) {
            return false;
        }
        long born = m.bornNanos();
        return bornNanos == NOT_BORN || born == NOT_BORN || born == bornNanos;
    }
}
