package dev.chibifs.store;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.attribute.FileTime;

/**
 * A handle of a store that cannot write ({@link ReadOnlyStore}): reads and stats are its own,
 * every change is refused with {@link #refusal}, and a sync has nothing to do.
 */
interface ReadOnlyFileHandle extends FileHandle {

    /** The refusal of a change through this handle. */
    ReadOnlyStoreException refusal();

    /** A view is never passed through: the kernel would read the store file past it. */
    @Override
    default int passthroughDescriptor() {
        return -1;
    }

    /** A read-only view's files are opened by name only. */
    @Override
    default FileHandle reopen(java.util.Set<OpenFlag> flags) {
        return null;
    }

    @Override
    default int write(ByteBuffer src, long position) throws IOException {
        throw refusal();
    }

    @Override
    default void truncate(long size) throws IOException {
        throw refusal();
    }

    @Override
    default void allocate(int mode, long offset, long length) throws IOException {
        throw refusal();
    }

    @Override
    default void setTimes(FileTime accessed, FileTime modified) throws IOException {
        throw refusal();
    }

    @Override
    default void setExecutable(int mode) throws IOException {
        throw refusal();
    }

    @Override
    default void sync(boolean metadata) {
        // nothing was written
    }

    /** Nothing written: a close leaves what was there. */
    @Override
    default void closedOnce() {
    }

    @Override
    default boolean hearsCloses() {
        return false;
    }
}
