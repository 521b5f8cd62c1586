package dev.chibifs.router;

import dev.chibifs.sys.ErrnoException;
import dev.chibifs.sys.Linux;

/**
 * EXDEV: a rename or link that cannot be done in one step: across stores, or a move that would
 * carry a symbolic link to where its target leaves the zone. mv then copies and removes, and the
 * copy meets the rules name by name. The reason begins with strerror's text.
 */
public final class CrossDeviceException extends ErrnoException {
    private static final long serialVersionUID = 1L;

    public CrossDeviceException(String from, String to, String why) {
        super(Linux.EXDEV, from, to, "Invalid cross-device link" + (why == null ? "" : ": " + why));
    }
}
