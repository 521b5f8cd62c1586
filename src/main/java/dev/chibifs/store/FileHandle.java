package dev.chibifs.store;

import dev.chibifs.sys.ErrnoException;
import dev.chibifs.sys.Linux;

import java.io.Closeable;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.attribute.FileTime;
import java.util.Set;

import static dev.chibifs.sys.Linux.FALLOC_FL_KEEP_SIZE;
import static dev.chibifs.sys.Linux.FALLOC_FL_PUNCH_HOLE;
import static dev.chibifs.sys.Linux.FALLOC_FL_ZERO_RANGE;

/** An open file with positional I/O; stays valid after the file is renamed or unlinked. */
public interface FileHandle extends Closeable {

    /**
     * Reads into {@code dst} from {@code position}; returns the bytes read, fewer than {@code dst}
     * has room for only where the file ends (0 at or past the end).
     */
    int read(ByteBuffer dst, long position) throws IOException;

    /** Writes all of {@code src} at {@code position} (at the end for an APPEND handle); returns the bytes written. */
    int write(ByteBuffer src, long position) throws IOException;

    /**
     * Writes all of {@code src} at {@code position}, an APPEND handle too: the kernel writes an
     * mmap's dirty pages back through any handle open for writing, and a page goes where it is,
     * not at the end. A handle that never appends writes so already.
     */
    default int writeInPlace(ByteBuffer src, long position) throws IOException {
        return write(src, position);
    }

    /** Sets the file's size. */
    void truncate(long size) throws IOException;

    /**
     * fallocate(2): with {@code mode} 0 reserves {@code length} bytes from {@code offset} and grows
     * the file to their end; other modes are Linux's bits above. As the system call: a negative
     * offset or no length fails with "Invalid argument", and a mode the store cannot do, or one
     * Linux refuses (a hole punched without KEEP_SIZE), with "Operation not supported".
     */
    void allocate(int mode, long offset, long length) throws IOException;

    /**
     * The checks of vfs_fallocate, in its order, for stores that do fallocate themselves: EINVAL for
     * a negative offset or no length, EOPNOTSUPP for an unknown mode or a hole punched without KEEP_SIZE.
     */
    static void checkAllocate(int mode, long offset, long length) throws IOException {
        if (offset < 0 || length <= 0) {
            throw ErrnoException.of(Linux.EINVAL, null, null);
        }
        if ((mode & ~(FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE)) != 0
                || (mode & FALLOC_FL_PUNCH_HOLE) != 0
                && ((mode & FALLOC_FL_KEEP_SIZE) == 0 || (mode & FALLOC_FL_ZERO_RANGE) != 0)) {
            throw ErrnoException.of(Linux.EOPNOTSUPP, null, null);
        }
    }

    /** Flushes to stable storage; {@code metadata} also flushes attributes. */
    void sync(boolean metadata) throws IOException;

    /**
     * A close(2) of a descriptor of this open returned (FUSE's FLUSH): what was written through it
     * so far is what its close leaves, should the daemon stop before the open's release, which the
     * kernel sends later, on its own. No default, as for {@link #passthroughDescriptor}.
     */
    void closedOnce() throws IOException;

    /**
     * Whether {@link #closedOnce} matters to this handle: a mount then asks the kernel for a FLUSH
     * at each close(2), a round trip it otherwise saves. No default, as for {@link #closedOnce}.
     */
    boolean hearsCloses();

    /** The file's inode in the store: it stays with the handle through renames and unlinks. */
    long inode() throws IOException;

    /**
     * The file's metadata as the open found it, without another stat; null when the open created
     * the file, or the store does not say.
     */
    default Metadata opened() {
        return null;
    }

    /**
     * A new descriptor of this very file, which the caller owns: for the kernel to read and write
     * the store file directly (FUSE passthrough), which opens the file again from its path, with
     * each open's own flags, and for what the daemon asks the store's kernel of the file itself
     * (copy_file_range, SEEK_DATA). -1 where the store has no file descriptor to give (memory, S3,
     * read-only views). No default, as for {@link #locks}: a handle that wraps another must say
     * what it does (the router's wrapper once fell back to a default and hid the store's).
     */
    int passthroughDescriptor() throws IOException;

    /**
     * A new open of this very file with {@code flags} (TRUNCATE empties it), whatever names it has
     * now, or none: what an open of /proc/PID/fd/N is on a disk. Null where the store opens a file
     * by its name only. No default, as for {@link #passthroughDescriptor}.
     */
    FileHandle reopen(Set<OpenFlag> flags) throws IOException;

    /**
     * Tells this handle that the {@code length} bytes just written through it at {@code toOffset}
     * are those of {@code from} at {@code fromOffset}: a copy_file_range the daemon served by
     * reading one handle and writing the other. A store whose server can copy a whole object (S3)
     * may then upload the result as such a copy instead of its bytes. Nothing by default; a handle
     * that wraps another passes it on.
     */
    default void copiedHere(FileHandle from, long fromOffset, long toOffset, long length) throws IOException {
    }

    /** fstat: the file's current metadata, even after it was renamed or unlinked. */
    Metadata metadata() throws IOException;

    /** The current size. */
    long size() throws IOException;

    /** futimens: sets the access and modification times of this file; a null time is left alone. */
    void setTimes(FileTime accessed, FileTime modified) throws IOException;

    /** fchmod of the execute bits only, as {@link Storage#setExecutable} (a mode that changes none moves the ctime alone). */
    void setExecutable(int mode) throws IOException;

    /**
     * getxattr(2) of this open file, whatever names it has now (none, or another file's old one):
     * attribute {@code name}'s value, ENODATA where it has none. A store that reaches a file's
     * attributes only by a name says ESTALE: no name is sure to be this file's.
     */
    default byte[] xattr(String name) throws IOException {
        throw noXattrsByHandle();
    }

    /** listxattr(2) of this open file, as {@link #xattr}. */
    default java.util.List<String> xattrNames() throws IOException {
        throw noXattrsByHandle();
    }

    /** setxattr(2) of this open file, as {@link #xattr}. */
    default void setXattr(String name, byte[] value, XattrMode mode) throws IOException {
        throw noXattrsByHandle();
    }

    /** removexattr(2) of this open file, as {@link #xattr}. */
    default void removeXattr(String name) throws IOException {
        throw noXattrsByHandle();
    }

    private static IOException noXattrsByHandle() {
        return ErrnoException.of(Linux.ESTALE, null, null);
    }

    /**
     * The locks on this handle's file, taken through this handle ({@link FileLocks}): every handle of
     * the same file sees the same locks. Closing the handle removes every lock taken through it (the
     * record locks of each owner that locked through it, and its flock locks). A store that keeps no
     * locks throws {@link LocksUnavailableException} (ENOLCK).
     */
    FileLocks locks() throws IOException;
}
