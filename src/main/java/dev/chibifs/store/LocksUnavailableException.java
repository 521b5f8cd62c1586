package dev.chibifs.store;

import java.nio.file.FileSystemException;

/** ENOLCK: a store that keeps no locks was asked for one. */
public final class LocksUnavailableException extends FileSystemException {
    private static final long serialVersionUID = 1L;

    public LocksUnavailableException(String why) {
        super(null, null, "No locks available: " + why);
    }

    @Override
    public String getMessage() {
        return getReason();
    }
}
