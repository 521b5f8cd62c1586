package dev.chibifs.fuse;

import java.io.IOException;

/** The mount is gone: reads of /dev/fuse fail with ENODEV once it is unmounted. */
final class ChannelClosedException extends IOException {
    ChannelClosedException(String message) {
        super(message);
    }
}
