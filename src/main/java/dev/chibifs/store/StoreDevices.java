package dev.chibifs.store;

import dev.chibifs.sys.Syscalls;

import java.io.IOException;

/**
 * Which file system inside a local store a file is on ({@link Metadata#device}). A file system
 * may be mounted inside the store (another disk at {@code shared/sub}, a snapshot of the store
 * mounted in it), and its inode numbers are its own: equal numbers there and on the store's file
 * system are two files.
 */
final class StoreDevices {

    /** The root descriptor {@link #own} was read of: a root reopened (replaced) comes with a new one. */
    private volatile int rootFd = -1;
    private volatile long own;

    /**
     * The store's root is {@code fd} now: call before any {@link #deviceOf} of the operation. Costs
     * a statx only when the root was reopened (held descriptors are never closed, so never reused).
     */
    void rootIs(int fd) throws IOException {
        if (fd != rootFd) {
            own = Syscalls.stat(fd, null, null).device();
            rootFd = fd;
        }
    }

    /** {@link Metadata#device} of a file on {@code device} ({@code st_dev}). */
    long deviceOf(long device) {
        return device == own ? Metadata.OWN_DEVICE : device;
    }
}
