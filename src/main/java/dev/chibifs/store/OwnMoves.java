package dev.chibifs.store;

import dev.chibifs.path.VfsPath;

/**
 * Told of each file a store moves to another name by itself, not asked to by a request and not seen
 * by a {@link ChangeFeed} (a store that follows no directory has none): an S3 conflict keeps this
 * host's file, its inode and every handle open on it, under its copy's name.
 */
@FunctionalInterface
public interface OwnMoves {

    /** The file at {@code from} is at {@code to} now, the same file; {@code from} names another or none. */
    void moved(VfsPath from, VfsPath to);
}
