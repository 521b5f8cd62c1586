package dev.chibifs.sys;

/**
 * A failure that carries the errno it stands for. {@link ErrnoException} and the JDK-typed
 * failures of {@link Errors} implement it, so code that needs the number (the FUSE reply, the
 * CLI's exit code) reads it instead of matching strerror text, and code that catches
 * {@code NoSuchFileException} and the like still catches them.
 */
public interface HasErrno {

    /** The errno value (positive). */
    int errno();

    /** The errno {@code t} carries, or 0 when it carries none. */
    static int of(Throwable t) {
        return t instanceof HasErrno h ? h.errno() : 0;
    }
}
