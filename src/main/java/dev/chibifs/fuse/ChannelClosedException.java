package dev.chibifs.fuse;

import java.io.IOException;

/** The FUSE session is over: the mount is gone (the kernel said ENODEV), or the channel was closed here. */
final class ChannelClosedException extends IOException {
    private static final long serialVersionUID = 1L;

    public ChannelClosedException(String message) {
        super(message);
    }
}
