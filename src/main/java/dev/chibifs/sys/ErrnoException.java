package dev.chibifs.sys;

import java.nio.file.FileSystemException;

/**
 * A system call's refusal, carrying its errno so callers compare numbers, not strerror text. The
 * message is libc's text for it, after the file when one is named ("/mnt/x: Device or resource busy").
 * Where the JDK has a type of its own for the number (NoSuchFileException, ...), {@link Errors#of}
 * gives that type carrying the number instead; this one is for the rest.
 */
public class ErrnoException extends FileSystemException implements HasErrno {
    private static final long serialVersionUID = 1L;

    private final int errno;

    public ErrnoException(int errno, String file, String reason) {
        this(errno, file, null, reason);
    }

    /** A failure about two files (a rename, a link). */
    public ErrnoException(int errno, String file, String other, String reason) {
        super(file, other, reason);
        this.errno = errno;
    }

    /** The exception for {@code errno} about {@code file} (null when no file is concerned), with libc's strerror text. */
    public static ErrnoException forErrno(int errno, String file) {
        return new ErrnoException(errno, file, LibC.strerror(errno));
    }

    /** The errno value, as the kernel returned it (positive). */
    @Override
    public int errno() {
        return errno;
    }
}
