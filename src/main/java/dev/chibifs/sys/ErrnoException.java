package dev.chibifs.sys;

import java.nio.file.FileSystemException;

/** A failed system call, keeping its errno, so callers read the number instead of matching strerror text. */
public class ErrnoException extends FileSystemException {

    private final int errno;

    public ErrnoException(int errno, String file, String reason) {
        super(file, null, reason);
        this.errno = errno;
    }

    public int errno() {
        return errno;
    }
}
