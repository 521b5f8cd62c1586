package dev.chibifs.router;

import java.nio.file.AccessDeniedException;

/** A write the zone policy refuses (EACCES); the message names the caller, the path and the writable zones. */
public final class PolicyDeniedException extends AccessDeniedException {
    private static final long serialVersionUID = 1L;

    public PolicyDeniedException(String path, String reason) {
        super(path, null, reason);
    }

    @Override
    public String getMessage() {
        return getReason();
    }
}
