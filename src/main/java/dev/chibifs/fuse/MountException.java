package dev.chibifs.fuse;

/** A mount that could not be made; the message is one line for the user. */
public final class MountException extends Exception {
    private static final long serialVersionUID = 1L;

    public MountException(String message) {
        super(message);
    }
}
