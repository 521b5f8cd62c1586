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
        return of(errno, file, null, null);
    }

    /**
     * The exception for {@code errno} about {@code file} (null when no file is concerned): its reason
     * is libc's text for the number, then {@code detail} where there is one ("Device or resource
     * busy: changed while it was read"), so no caller types strerror's words.
     */
    public static ErrnoException of(int errno, String file, String detail) {
        return of(errno, file, null, detail);
    }

    /** As {@link #of(int, String, String)}, about two files (a rename, a link). */
    public static ErrnoException of(int errno, String file, String other, String detail) {
        return new ErrnoException(errno, file, other, reason(errno, detail));
    }

    /** libc's text for {@code errno}, then {@code detail} where there is one: the reason every refusal carries. */
    public static String reason(int errno, String detail) {
        String text = LibC.strerror(errno);
        return detail == null ? text : text + ": " + detail;
    }

    /** The errno value, as the kernel returned it (positive). */
    @Override
    public int errno() {
        return errno;
    }
}
