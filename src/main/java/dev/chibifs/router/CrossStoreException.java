package dev.chibifs.router;

import dev.chibifs.sys.ErrnoException;
import dev.chibifs.sys.Linux;

/**
 * A rename or hard link whose two names are served by different stores: EXDEV, as between two
 * file systems, so {@code mv} copies and removes instead, and {@code ln} says why.
 */
public final class CrossStoreException extends ErrnoException {
    private static final long serialVersionUID = 1L;

    public CrossStoreException(String from, String to) {
        super(Linux.EXDEV, from, to, "Invalid cross-device link");
    }

    @Override
    public String getMessage() {
        return "'" + getFile() + "' and '" + getOtherFile() + "' are in different stores (Invalid cross-device link)";
    }
}
