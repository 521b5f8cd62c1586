package dev.chibifs.fuse;

import dev.chibifs.store.EntryKind;
import dev.chibifs.store.Metadata;

import java.nio.file.attribute.FileTime;
import java.util.concurrent.TimeUnit;

/**
 * A file's store metadata as last read, kept with its node so that a listing sends it again
 * instead of reading the store (a statx per entry was most of a READDIRPLUS). It is kept only
 * where the store's changes are told (its directory followed, under {@code followKey}), only for a
 * file with one name and no writer through this mount, and dropped at every change the daemon
 * makes or is told; see {@link NodeTable.Node#keep}. Its times are nanoseconds, as the kernel
 * takes them; {@code readAt} is when it was read ({@link System#nanoTime}), for its age.
 */
record KeptMetadata(long size, long blocks, long accessed, long modified, long changed, int mode, long followKey,
                    long readAt) {

    /** What is kept of {@code m}, read at {@code readAt} in a directory followed under {@code followKey}; null where nothing may be. */
    static KeptMetadata of(Metadata m, long followKey, long readAt) {
        if (!m.isFile() || m.links() != 1 || followKey < 0) {
            return null;
        }
        long accessed = nanos(m.accessed());
        long modified = nanos(m.modified());
        long changed = nanos(m.changed());
        if (!fits(accessed) || !fits(modified) || !fits(changed)) {
            return null;
        }
        return new KeptMetadata(m.size(), m.blocks(), accessed, modified, changed, m.mode(), followKey, readAt);
    }

    /** The metadata again, for the node of {@code identity} (its file system, inode and birth time); a kept file has one name. */
    Metadata metadata(NodeTable.Identity identity) {
        return new Metadata(EntryKind.FILE, size, identity.created(), time(modified), time(accessed), time(changed),
                1, mode, identity.inode(), blocks, identity.device());
    }

    /** Whether a time fits nanoseconds since 1970 (the years 1678 to 2262): FileTime gives the limits for those outside. */
    private static boolean fits(long nanos) {
        return nanos != Long.MIN_VALUE && nanos != Long.MAX_VALUE;
    }

    private static long nanos(FileTime t) {
        return t.to(TimeUnit.NANOSECONDS);
    }

    private static FileTime time(long nanos) {
        return FileTime.from(nanos, TimeUnit.NANOSECONDS);
    }
}
