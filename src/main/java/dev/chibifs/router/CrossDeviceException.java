package dev.chibifs.router;

import dev.chibifs.sys.ErrnoException;
import dev.chibifs.sys.Linux;

/**
 * EXDEV: a rename or link that cannot be done in one step: between two stores, across zones, or a
 * move that would carry a symbolic link to where its target leaves the zone. mv then copies and
 * removes, and the copy meets the rules name by name; ln says why. The reason begins with
 * strerror's text; the message is the why, for a person.
 */
public final class CrossDeviceException extends ErrnoException {
    private static final long serialVersionUID = 1L;

    private final String why;

    public CrossDeviceException(String from, String to, String why) {
        super(Linux.EXDEV, from, to, reason(Linux.EXDEV, why));
        this.why = why;
    }

    /** A rename or hard link whose two names are served by different stores, as between two file systems. */
    static CrossDeviceException betweenStores(String from, String to) {
        return new CrossDeviceException(from, to, "'" + from + "' and '" + to + "' are in different stores");
    }

    /** Why the rename or link was refused, without strerror's text: for a caller that reports it as a refusal. */
    public String why() {
        return why;
    }

    @Override
    public String getMessage() {
        return why + " (" + reason(Linux.EXDEV, null) + ")";
    }
}
