package dev.chibifs.sys;

import java.nio.file.AccessDeniedException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;
import java.nio.file.NotLinkException;

/**
 * The exception for an errno: the JDK's own type where it has one (so {@code catch
 * (NoSuchFileException e)} keeps working), each a subclass here that carries the number
 * ({@link HasErrno}); {@link IsDirectoryException} for EISDIR; an {@link ErrnoException} for the rest.
 * The JDK's types are classes, not interfaces, so one exception class cannot be all of them: a
 * small subclass per type is what keeps both the type and the number.
 */
public final class Errors {

    private Errors() {
    }

    /**
     * An I/O failure as one line for a person: what the system said (by its errno, where it carries
     * one) and the file, never Java's class names ("Permission denied: /srv/chibi/vfs/sys/tool_cache/t1");
     * a newline in a file name does not split the line.
     */
    public static String describe(java.io.IOException e) {
        String file = e instanceof FileSystemException f ? f.getFile() : null;
        String reason = e instanceof FileSystemException f ? f.getReason() : e.getMessage();
        int errno = errno(e);
        if (e instanceof FileSystemException && reason == null && errno > 0) {
            reason = LibC.strerror(errno); // the JDK's own (AccessDeniedException, ...) carry none
        }
        String line = reason == null ? e.getClass().getSimpleName() : reason;
        if (file != null && !line.contains(file)) {
            line = line + ": " + file;
        }
        return line.replace('\n', ' ').replace('\r', ' ');
    }

    /** The exception for {@code errno} about {@code file} (null when no file is concerned); it implements {@link HasErrno}. */
    public static FileSystemException of(int errno, String file) {
        return switch (errno) {
            case Linux.ENOENT -> new NoSuchFile(file, null);
            case Linux.EEXIST -> new AlreadyExists(file);
            case Linux.EACCES -> new AccessDenied(file);
            case Linux.ENOTDIR -> new NotDirectory(file);
            case Linux.EISDIR -> new IsDirectoryException(file);
            case Linux.ENOTEMPTY -> new NotEmpty(file);
            default -> ErrnoException.forErrno(errno, file);
        };
    }

    /**
     * The errno {@code t} stands for: the number it carries ({@link HasErrno}), else the one the
     * JDK's type means whoever threw it (java.nio's own failures: NoSuchFileException is ENOENT),
     * else 0. Never read from message text.
     */
    public static int errno(Throwable t) {
        if (t instanceof HasErrno h) {
            return h.errno();
        }
        if (t instanceof AccessDeniedException) {
            return Linux.EACCES;
        }
        if (t instanceof NoSuchFileException) {
            return Linux.ENOENT;
        }
        if (t instanceof FileAlreadyExistsException) {
            return Linux.EEXIST;
        }
        if (t instanceof DirectoryNotEmptyException) {
            return Linux.ENOTEMPTY;
        }
        if (t instanceof NotDirectoryException) {
            return Linux.ENOTDIR;
        }
        if (t instanceof NotLinkException) {
            return Linux.EINVAL;
        }
        return 0;
    }

    /**
     * ENOENT, without a stack trace. A missing name is an answer, not a fault, and a busy mount asks
     * for many (git looks for a .gitignore in every directory, shells walk PATH, python probes its
     * import path): filling in the stack of each cost about a microsecond per lookup.
     */
    public static final class NoSuchFile extends NoSuchFileException implements HasErrno {
        private static final long serialVersionUID = 1L;

        /** {@code reason}: why, when it is more than "no such file" (null otherwise). */
        public NoSuchFile(String file, String reason) {
            super(file, null, reason);
        }

        @Override
        public int errno() {
            return Linux.ENOENT;
        }

        @Override
        public synchronized Throwable fillInStackTrace() {
            return this;
        }
    }

    /** EEXIST. */
    public static final class AlreadyExists extends FileAlreadyExistsException implements HasErrno {
        private static final long serialVersionUID = 1L;

        public AlreadyExists(String file) {
            super(file);
        }

        @Override
        public int errno() {
            return Linux.EEXIST;
        }
    }

    /** EACCES. */
    public static final class AccessDenied extends AccessDeniedException implements HasErrno {
        private static final long serialVersionUID = 1L;

        public AccessDenied(String file) {
            super(file);
        }

        @Override
        public int errno() {
            return Linux.EACCES;
        }
    }

    /** ENOTDIR. */
    public static final class NotDirectory extends NotDirectoryException implements HasErrno {
        private static final long serialVersionUID = 1L;

        public NotDirectory(String file) {
            super(file);
        }

        @Override
        public int errno() {
            return Linux.ENOTDIR;
        }
    }

    /** ENOTEMPTY. */
    public static final class NotEmpty extends DirectoryNotEmptyException implements HasErrno {
        private static final long serialVersionUID = 1L;

        public NotEmpty(String file) {
            super(file);
        }

        @Override
        public int errno() {
            return Linux.ENOTEMPTY;
        }
    }

    /** EINVAL from readlink(2): the name is there but is no symbolic link. */
    public static final class NotLink extends NotLinkException implements HasErrno {
        private static final long serialVersionUID = 1L;

        public NotLink(String file) {
            super(file);
        }

        @Override
        public int errno() {
            return Linux.EINVAL;
        }
    }
}
