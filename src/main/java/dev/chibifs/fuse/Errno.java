package dev.chibifs.fuse;

import dev.chibifs.path.InvalidVfsPathException;
import dev.chibifs.sys.Errors;
import dev.chibifs.sys.HasErrno;
import dev.chibifs.sys.Linux;

import java.nio.channels.ClosedChannelException;
import java.nio.channels.NonReadableChannelException;
import java.nio.channels.NonWritableChannelException;

/**
 * The one place Java exceptions become errno values (negated, as FUSE replies carry them). The
 * number a failure carries comes first ({@link HasErrno}: every system call's failure, and every
 * refusal of our own, from the store, the router and the policy); then the JDK's types that mean
 * one errno whoever threw them ({@link Errors#errno}). No message text is read: strerror's words
 * are for people.
 */
final class Errno {

    private Errno() {
    }

    /** The negative errno for {@code t}, or 0 when it is not an expected I/O failure (the caller logs and answers EIO). */
    static int of(Throwable t) {
        int errno = Errors.errno(t);
        if (errno > 0) {
            return -errno;
        }
        if (t instanceof InvalidVfsPathException) {
            return -Linux.EINVAL;
        }
        if (t instanceof NonWritableChannelException || t instanceof NonReadableChannelException
                || t instanceof ClosedChannelException) {
            return -Linux.EBADF;
        }
        return 0;
    }
}
