package dev.chibifs.fuse;

import dev.chibifs.store.Metadata;

import java.nio.file.attribute.FileTime;

/**
 * A file's size, mtime and ctime when the kernel's pages of it were last made true to the store:
 * an open may let the kernel keep them while the file still has this stamp. chibi writes the store
 * directly, so a change the kernel did not see drops them at the next open (close-to-open, what
 * libfuse's {@code auto_cache} decides). The ctime also catches a rewrite of the same size whose
 * mtime was set back.
 */
record PageStamp(long size, FileTime modified, FileTime changed) {

    /** Pages true to a version of the file nobody stamped: equal to no stamp of a file. */
    static final PageStamp UNKNOWN = new PageStamp(-1, null, null);

    static PageStamp of(Metadata m) {
        return new PageStamp(m.size(), m.modified(), m.changed());
    }
}
