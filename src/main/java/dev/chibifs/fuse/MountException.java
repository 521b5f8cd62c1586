package dev.chibifs.fuse;

import java.util.Optional;

/** A mount that could not be made; the message is one line for the user. */
public final class MountException extends Exception {
    private static final long serialVersionUID = 1L;

    /** What was found mounted at the mountpoint, where that is why; null otherwise. */
    private final transient MountTable.MountEntry mountedThere;

    public MountException(String message) {
        this(message, null);
    }

    public MountException(String message, MountTable.MountEntry mountedThere) {
        super(message);
        this.mountedThere = mountedThere;
    }

    /** The mount that stood at the mountpoint (another mount won a race to it), if that is why this one failed. */
    public Optional<MountTable.MountEntry> mountedThere() {
        return Optional.ofNullable(mountedThere);
    }
}
