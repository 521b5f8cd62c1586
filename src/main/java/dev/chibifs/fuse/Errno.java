package dev.chibifs.fuse;

import dev.chibifs.path.InvalidVfsPathException;
import dev.chibifs.router.CrossStoreException;
import dev.chibifs.router.MountPointBusyException;
import dev.chibifs.store.IsDirectoryException;
import dev.chibifs.store.ReadOnlyStoreException;
import ru.serce.jnrfuse.ErrorCodes;

import java.io.IOException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.NonReadableChannelException;
import java.nio.channels.NonWritableChannelException;
import java.nio.file.AccessDeniedException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;
import java.nio.file.NotLinkException;
import java.util.Locale;

/** The one place Java exceptions become errno values (negated, as FUSE callbacks return them). */
final class Errno {

    private Errno() {
    }

    /** The negative errno for {@code t}, or 0 when it is not an expected I/O failure (the caller logs and answers EIO). */
    static int of(Throwable t) {
        if (t instanceof AccessDeniedException) {
            return -ErrorCodes.EACCES();
        }
        // stores by prefix: one that cannot write, a rename or link across two, a store's mount point
        if (t instanceof ReadOnlyStoreException) {
            return -ErrorCodes.EROFS();
        }
        if (t instanceof CrossStoreException) {
            return -ErrorCodes.EXDEV();
        }
        if (t instanceof MountPointBusyException) {
            return -ErrorCodes.EBUSY();
        }
        if (t instanceof NoSuchFileException) {
            return -ErrorCodes.ENOENT();
        }
        if (t instanceof FileAlreadyExistsException) {
            return -ErrorCodes.EEXIST();
        }
        if (t instanceof DirectoryNotEmptyException) {
            return -ErrorCodes.ENOTEMPTY();
        }
        if (t instanceof NotDirectoryException) {
            return -ErrorCodes.ENOTDIR();
        }
        if (t instanceof IsDirectoryException) {
            return -ErrorCodes.EISDIR();
        }
        if (t instanceof NotLinkException) {
            return -ErrorCodes.EINVAL();
        }
        if (t instanceof InvalidVfsPathException) {
            return -ErrorCodes.EINVAL();
        }
        if (t instanceof NonWritableChannelException || t instanceof NonReadableChannelException
                || t instanceof ClosedChannelException) {
            return -ErrorCodes.EBADF();
        }
        if (t instanceof FileSystemException) {
            int byReason = byMessage(((FileSystemException) t).getReason());
            if (byReason != 0) {
                return byReason;
            }
        }
        if (t instanceof IOException) {
            return byMessage(t.getMessage());
        }
        return 0;
    }

    /** The JDK reports most errno values only as strerror text; match on it. */
    private static int byMessage(String message) {
        if (message == null) {
            return 0;
        }
        String m = message.toLowerCase(Locale.ROOT);
        if (m.contains("no space left")) {
            return -ErrorCodes.ENOSPC();
        }
        if (m.contains("disk quota")) {
            return -ErrorCodes.EDQUOT();
        }
        if (m.contains("read-only file system")) {
            return -ErrorCodes.EROFS();
        }
        if (m.contains("too many levels of symbolic links")) {
            return -ErrorCodes.ELOOP();
        }
        if (m.contains("file name too long")) {
            return -ErrorCodes.ENAMETOOLONG();
        }
        if (m.contains("cross-device link")) {
            return -ErrorCodes.EXDEV();
        }
        if (m.contains("operation not permitted")) {
            return -ErrorCodes.EPERM();
        }
        if (m.contains("permission denied")) {
            return -ErrorCodes.EACCES();
        }
        if (m.contains("is a directory")) {
            return -ErrorCodes.EISDIR();
        }
        if (m.contains("not a directory")) {
            return -ErrorCodes.ENOTDIR();
        }
        if (m.contains("directory not empty")) {
            return -ErrorCodes.ENOTEMPTY();
        }
        if (m.contains("file too large")) {
            return -ErrorCodes.EFBIG();
        }
        if (m.contains("resource busy")) {
            return -ErrorCodes.EBUSY();
        }
        if (m.contains("invalid argument")) {
            return -ErrorCodes.EINVAL();
        }
        if (m.contains("no such file")) {
            return -ErrorCodes.ENOENT();
        }
        if (m.contains("multibyte")) {
            return -ErrorCodes.EILSEQ();
        }
        if (m.contains("no such device")) {
            return -ErrorCodes.ENXIO();
        }
        if (m.contains("stale file handle")) {
            return -ErrorCodes.ESTALE();
        }
        if (m.contains("bad file descriptor")) {
            return -ErrorCodes.EBADF();
        }
        if (m.contains("operation not supported")) {
            return -ErrorCodes.EOPNOTSUPP();
        }
        if (m.contains("input/output error")) {
            return -ErrorCodes.EIO();
        }
        return 0;
    }
}
