package dev.chibifs.store;

import dev.chibifs.sys.ErrnoException;
import dev.chibifs.sys.Linux;

/**
 * EPERM: an operation the store, or a rule above it, never does (a device node, a symbolic link
 * the link rule refuses, a lock on something that is not a regular file). The reason begins with
 * strerror's "Operation not permitted", for people; code reads {@link #errno()}.
 */
public class OperationNotPermittedException extends ErrnoException {
    private static final long serialVersionUID = 1L;

    public OperationNotPermittedException(String file, String why) {
        super(Linux.EPERM, file, reason(Linux.EPERM, why));
    }

    @Override
    public String getMessage() {
        return getFile() == null ? getReason() : getFile() + ": " + getReason();
    }
}
