package dev.chibifs.path;

/** A string that is not a valid VFS path or URI; the message names the value and the rule. */
public final class InvalidVfsPathException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    private final String value;

    public InvalidVfsPathException(String value, String rule) {
        super("invalid VFS path '" + value + "': " + rule);
        this.value = value;
    }

    /** The rejected input. */
    public String value() {
        return value;
    }
}
