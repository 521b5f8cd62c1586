package dev.chibifs.sys;

/** A file operation (unlink, open for write) aimed at a directory: EISDIR, which the JDK has no type for. */
public final class IsDirectoryException extends ErrnoException {
    private static final long serialVersionUID = 1L;

    public IsDirectoryException(String file) {
        super(Linux.EISDIR, file, reason(Linux.EISDIR, null));
    }
}
