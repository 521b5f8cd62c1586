package dev.chibifs.router;

import java.io.IOException;

/** Some of the namespace's directories were not made: their store, across a network, did not answer. */
public final class StoreAwayException extends IOException {
    private static final long serialVersionUID = 1L;

    StoreAwayException(IOException first) {
        super(first.getMessage(), first);
    }
}
