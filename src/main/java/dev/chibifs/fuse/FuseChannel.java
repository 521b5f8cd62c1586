package dev.chibifs.fuse;

import java.io.Closeable;
import java.io.IOException;
import java.nio.ByteBuffer;

/** Where requests come from and replies go: /dev/fuse, or a test's fake. */
interface FuseChannel extends Closeable {
    /** Reads one whole request into dst (a direct buffer, from its position 0, limit set to the request's length); returns the length. Retries EINTR, EAGAIN and ENOENT (a request the kernel withdrew) itself; throws ChannelClosedException (an IOException) once the mount is gone (ENODEV). */
    int read(ByteBuffer dst) throws IOException;
    /** Writes one reply or notification: the remaining bytes of parts, in order, in one writev(2). A refused write throws ErrnoException with the errno (ENOENT: the request was interrupted and nobody waits for the reply). */
    void write(ByteBuffer... parts) throws IOException;
    /** Registers an open store file for FUSE passthrough (FUSE_DEV_IOC_BACKING_OPEN, Linux 6.9+); returns the backing id the kernel gave, or throws ErrnoException (EPERM without CAP_SYS_ADMIN, ENOTTY/EINVAL where the kernel lacks it). */
    int openBacking(int fd) throws IOException;
    /** FUSE_DEV_IOC_BACKING_CLOSE. */
    void closeBacking(int backingId) throws IOException;
}
