package dev.chibifs.store;

import java.nio.file.FileSystemException;

/** A conditional write found the file other than it asked (HTTP's 412); nothing was changed. */
public final class EtagMismatchException extends FileSystemException {

    private final Precondition asked;
    private final String current;

    /** @param current the file's ETag now, null when there is no file */
    public EtagMismatchException(String file, Precondition asked, String current) {
        super(file, null, "Precondition failed: " + (current == null ? "no such file"
                : asked.ifNoneMatch() ? "it exists, ETag " + current : "its ETag is now " + current));
        this.asked = asked;
        this.current = current;
    }

    public Precondition asked() {
        return asked;
    }

    /** The file's ETag now; null when there is no file. */
    public String current() {
        return current;
    }
}
