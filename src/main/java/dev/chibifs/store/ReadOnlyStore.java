package dev.chibifs.store;

import dev.chibifs.path.VfsPath;

import java.io.IOException;
import java.nio.file.attribute.FileTime;

/**
 * A store that cannot write at all, whatever the path: the router refuses a change there with
 * {@link ReadOnlyStoreException} naming the namespace path, before the store is asked.
 */
public interface ReadOnlyStore extends Storage {

    /** What the store is, for refusals ("readonly:/srv/docs", "virtual context metadata"). */
    String storeName();

    /** The refusal of a change at {@code path}; the router's own check names the namespace path first. */
    default ReadOnlyStoreException refused(VfsPath path) {
        return new ReadOnlyStoreException(path.toString(), storeName());
    }

    // ---- every change is refused ----

    @Override
    default void append(VfsPath path, byte[] data) throws IOException {
        throw refused(path);
    }

    @Override
    default void copy(VfsPath src, VfsPath dst) throws IOException {
        throw refused(dst);
    }

    @Override
    default void createDirectory(VfsPath path) throws IOException {
        throw refused(path);
    }

    @Override
    default void delete(VfsPath path) throws IOException {
        throw refused(path);
    }

    @Override
    default void link(VfsPath existing, VfsPath newName) throws IOException {
        throw refused(newName);
    }

    @Override
    default FileHandle openUnnamed(VfsPath directory, int mode) throws IOException {
        throw refused(directory);
    }

    @Override
    default void link(FileHandle handle, VfsPath newName) throws IOException {
        throw refused(newName);
    }

    @Override
    default void mkdir(VfsPath path) throws IOException {
        throw refused(path);
    }

    @Override
    default void removeDirectory(VfsPath path) throws IOException {
        throw refused(path);
    }

    @Override
    default void removeFile(VfsPath path) throws IOException {
        throw refused(path);
    }

    @Override
    default void rename(VfsPath src, VfsPath dst) throws IOException {
        throw refused(src);
    }

    @Override
    default void rename(VfsPath src, VfsPath dst, RenameMode mode) throws IOException {
        throw refused(src);
    }

    @Override
    default void setExecutable(VfsPath path, int mode) throws IOException {
        throw refused(path);
    }

    @Override
    default void setTimes(VfsPath path, FileTime accessed, FileTime modified) throws IOException {
        throw refused(path);
    }

    @Override
    default void setXattr(VfsPath path, String name, byte[] value, XattrMode mode) throws IOException {
        throw refused(path);
    }

    @Override
    default void removeXattr(VfsPath path, String name) throws IOException {
        throw refused(path);
    }

    @Override
    default void truncate(VfsPath path, long size) throws IOException {
        throw refused(path);
    }

    @Override
    default void write(VfsPath path, byte[] data) throws IOException {
        throw refused(path);
    }
}
