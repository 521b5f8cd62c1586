package dev.chibifs.fuse;

import dev.chibifs.path.InvalidVfsPathException;
import dev.chibifs.router.CrossStoreException;
import dev.chibifs.router.MountPointBusyException;
import dev.chibifs.sys.IsDirectoryException;
import dev.chibifs.store.ReadOnlyStoreException;
import dev.chibifs.sys.Linux;

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
        if (t instanceof dev.chibifs.sys.ErrnoException e) {
            return -e.errno();
        }
        if (t instanceof AccessDeniedException) {
            return -Linux.EACCES;
        }
        // stores by prefix: one that cannot write, a rename or link across two, a store's mount point
        if (t instanceof ReadOnlyStoreException) {
            return -Linux.EROFS;
        }
        if (t instanceof CrossStoreException) {
            return -Linux.EXDEV;
        }
        if (t instanceof MountPointBusyException) {
            return -Linux.EBUSY;
        }
        if (t instanceof NoSuchFileException) {
            return -Linux.ENOENT;
        }
        if (t instanceof FileAlreadyExistsException) {
            return -Linux.EEXIST;
        }
        if (t instanceof DirectoryNotEmptyException) {
            return -Linux.ENOTEMPTY;
        }
        if (t instanceof NotDirectoryException) {
            return -Linux.ENOTDIR;
        }
        if (t instanceof IsDirectoryException) {
            return -Linux.EISDIR;
        }
        if (t instanceof NotLinkException) {
            return -Linux.EINVAL;
        }
        if (t instanceof InvalidVfsPathException) {
            return -Linux.EINVAL;
        }
        if (t instanceof NonWritableChannelException || t instanceof NonReadableChannelException
                || t instanceof ClosedChannelException) {
            return -Linux.EBADF;
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
            return -Linux.ENOSPC;
        }
        if (m.contains("disk quota")) {
            return -Linux.EDQUOT;
        }
        if (m.contains("read-only file system")) {
            return -Linux.EROFS;
        }
        if (m.contains("too many levels of symbolic links")) {
            return -Linux.ELOOP;
        }
        if (m.contains("file name too long")) {
            return -Linux.ENAMETOOLONG;
        }
        if (m.contains("cross-device link")) {
            return -Linux.EXDEV;
        }
        if (m.contains("operation not permitted")) {
            return -Linux.EPERM;
        }
        if (m.contains("permission denied")) {
            return -Linux.EACCES;
        }
        if (m.contains("is a directory")) {
            return -Linux.EISDIR;
        }
        if (m.contains("not a directory")) {
            return -Linux.ENOTDIR;
        }
        if (m.contains("directory not empty")) {
            return -Linux.ENOTEMPTY;
        }
        if (m.contains("file too large")) {
            return -Linux.EFBIG;
        }
        if (m.contains("resource busy")) {
            return -Linux.EBUSY;
        }
        if (m.contains("invalid argument")) {
            return -Linux.EINVAL;
        }
        if (m.contains("no such file")) {
            return -Linux.ENOENT;
        }
        if (m.contains("multibyte")) {
            return -Linux.EILSEQ;
        }
        if (m.contains("no such device")) {
            return -Linux.ENXIO;
        }
        if (m.contains("stale file handle")) {
            return -Linux.ESTALE;
        }
        if (m.contains("bad file descriptor")) {
            return -Linux.EBADF;
        }
        if (m.contains("operation not supported")) {
            return -Linux.EOPNOTSUPP;
        }
        if (m.contains("input/output error")) {
            return -Linux.EIO;
        }
        return 0;
    }
}
