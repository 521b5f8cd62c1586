package dev.chibifs.router;

import dev.chibifs.sys.ErrnoException;
import dev.chibifs.sys.Linux;

/** A remove or rename of the path a store is mounted at: EBUSY, as for a mount point. */
public final class MountPointBusyException extends ErrnoException {
    private static final long serialVersionUID = 1L;

    public MountPointBusyException(String path) {
        super(Linux.EBUSY, path, "Device or resource busy");
    }

    @Override
    public String getMessage() {
        return "'" + getFile() + "' is where a store is mounted (Device or resource busy)";
    }
}
