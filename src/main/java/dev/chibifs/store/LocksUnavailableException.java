package dev.chibifs.store;

import dev.chibifs.sys.ErrnoException;
import dev.chibifs.sys.Linux;

/** ENOLCK: a store that keeps no locks was asked for one. */
public final class LocksUnavailableException extends ErrnoException {
    private static final long serialVersionUID = 1L;

    public LocksUnavailableException(String why) {
        super(Linux.ENOLCK, null, reason(Linux.ENOLCK, why));
    }

    @Override
    public String getMessage() {
        return getReason();
    }
}
