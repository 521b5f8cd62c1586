package dev.chibifs.store;

import java.nio.file.FileSystemException;

/** A file operation (unlink, open for write) aimed at a directory: EISDIR. */
public final class IsDirectoryException extends FileSystemException {
    private static final long serialVersionUID = 1L;

    public IsDirectoryException(String file) {
        super(file, null, "Is a directory");
    }
}
