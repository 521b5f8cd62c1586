package dev.chibifs.router;

import dev.chibifs.sys.ErrnoException;
import dev.chibifs.sys.Linux;

/**
 * A remove or rename of the path a store is mounted at, or of a directory holding one: EBUSY, as
 * for a mount point. A prefix is fixed at mount, so what holds it cannot move or go.
 */
public final class MountPointBusyException extends ErrnoException {
    private static final long serialVersionUID = 1L;
    /** The store's mount point {@code path} holds; null where it is one. */
    private final String holds;
    /** What serves it: "a store is mounted", or another mount's words. */
    private final String servedBy;

    public MountPointBusyException(String path) {
        this(path, null);
    }

    /** {@code path} holds {@code mountPoint}, where a store is mounted. */
    public MountPointBusyException(String path, String mountPoint) {
        this(path, mountPoint, "a store is mounted");
    }

    /** {@code path} holds {@code mountPoint}, where {@code servedBy} (another mount's store, say). */
    public MountPointBusyException(String path, String mountPoint, String servedBy) {
        super(Linux.EBUSY, path, reason(Linux.EBUSY, null));
        this.holds = mountPoint;
        this.servedBy = servedBy;
    }

    @Override
    public String getMessage() {
        return holds == null
                ? "'" + getFile() + "' is where a store is mounted (Device or resource busy)"
                : "'" + getFile() + "' holds '" + holds + "', where " + servedBy + " (Device or resource busy)";
    }
}
