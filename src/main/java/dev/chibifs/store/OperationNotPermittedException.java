package dev.chibifs.store;

import java.nio.file.FileSystemException;

/**
 * EPERM: an operation the store, or a rule above it, never does (a device node, a symbolic link
 * the link rule refuses, a lock on something that is not a regular file). The reason begins with
 * strerror's "Operation not permitted", so code that still maps by message agrees with the type.
 */
public class OperationNotPermittedException extends FileSystemException {
    private static final long serialVersionUID = 1L;

    public OperationNotPermittedException(String file, String why) {
        super(file, null, "Operation not permitted: " + why);
    }

    @Override
    public String getMessage() {
        return getFile() == null ? getReason() : getFile() + ": " + getReason();
    }
}
