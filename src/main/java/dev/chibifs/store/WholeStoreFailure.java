package dev.chibifs.store;

import dev.chibifs.sys.LibC;
import dev.chibifs.sys.Linux;
import dev.chibifs.sys.Syscalls;

import java.nio.file.Path;

/**
 * The errnos a file system answers every request with when it fails as a whole (its disk: EIO; a
 * FUSE store's daemon killed: ENOTCONN; turned read-only after its errors: EROFS; an NFS handle
 * gone: ESTALE; corrupt: EUCLEAN), and a look at a directory that finds one: a file with no name
 * (O_TMPFILE) made in it and closed, as a write would, leaving nothing behind. A refusal of one
 * file (ENOENT, EACCES) or a file system without O_TMPFILE (vfat, FUSE, NFS) is no such failure.
 */
public final class WholeStoreFailure {

    private static final int[] ERRNOS = {Linux.EIO, Linux.ENOTCONN, Linux.EROFS, Linux.ESTALE, Linux.EUCLEAN};

    /**
     * How long a look at a store that may stall (NFS, FUSE: its server away, its daemon stopped) is
     * waited for before it is said not to answer: the daemon's look and {@code chibifs status}'s own.
     */
    public static final long LOOK_WAIT_MILLIS = 300;

    private WholeStoreFailure() {
    }

    /** Whether {@code errno} may be a whole file system failing. */
    public static boolean mayBe(int errno) {
        for (int e : ERRNOS) {
            if (e == errno) {
                return true;
            }
        }
        return false;
    }

    /** The errno the directory open as {@code dirFd} answers a write with where its file system fails as a whole; else 0. */
    public static int of(int dirFd) {
        return ofOpen(Syscalls.tryOpenat(dirFd, ".", Linux.O_TMPFILE | Linux.O_RDWR, 0600));
    }

    /** {@link #of(int)} of the directory at {@code dir}. */
    public static int of(Path dir) {
        return ofOpen(Syscalls.tryOpenat(Linux.AT_FDCWD, dir.toString(), Linux.O_TMPFILE | Linux.O_RDWR, 0600));
    }

    private static int ofOpen(int fd) {
        if (fd >= 0) {
            Syscalls.close(fd);
            return 0;
        }
        return mayBe(-fd) ? -fd : 0;
    }

    /** Why a look at the store directory {@code dir} found nothing within {@link #LOOK_WAIT_MILLIS}. */
    public static String doesNotAnswer(Path dir) {
        return "its directory " + dir + " does not answer within " + LOOK_WAIT_MILLIS
                + " ms (its server or FUSE daemon away or stopped?): requests there wait";
    }

    /** How a store read-only since the mount began is told, and not as failing: "is read-only: ...". */
    private static final String READ_ONLY_FROM_START = "is read-only: ";

    /**
     * What a store whose file system was read-only from the mount's start is (a disk mounted ro on
     * purpose): said after the store's name ("the store at / is read-only: ..."), not as failing.
     */
    public static String readOnlyFromStart(Path dir) {
        return READ_ONLY_FROM_START + "its directory " + dir + " is on a read-only file system, as it was when"
                + " the mount began: reads are served, every change there " + answers(Linux.EROFS);
    }

    /** Whether {@code why} is {@link #readOnlyFromStart}'s: a store read-only on purpose, not failing. */
    public static boolean isReadOnlyFromStart(String why) {
        return why.startsWith(READ_ONLY_FROM_START);
    }

    /** "answers EIO (Input/output error)": {@code errno} as people and scripts both read it. */
    public static String answers(int errno) {
        return "answers " + Linux.errnoName(errno) + " (" + LibC.strerror(errno) + ")";
    }
}
