package dev.chibifs.router;

import dev.chibifs.sys.HasErrno;
import dev.chibifs.sys.Linux;

import java.nio.file.AccessDeniedException;

/** A write the zone policy refuses (EACCES); the message names the caller, the path and the writable zones. */
public final class PolicyDeniedException extends AccessDeniedException implements HasErrno {
    private static final long serialVersionUID = 1L;

    public PolicyDeniedException(String path, String reason) {
        super(path, null, reason);
    }

    @Override
    public int errno() {
        return Linux.EACCES;
    }

    @Override
    public String getMessage() {
        return getReason();
    }
}
