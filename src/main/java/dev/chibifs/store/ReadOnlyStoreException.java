package dev.chibifs.store;

import dev.chibifs.sys.ErrnoException;
import dev.chibifs.sys.Linux;

/**
 * A change asked of a store that cannot write (a {@code readonly:} store, chibi's views): EROFS,
 * with chibi's words, "'PATH' is read-only (STORE)".
 */
public final class ReadOnlyStoreException extends ErrnoException {
    private static final long serialVersionUID = 1L;

    private final String store;

    public ReadOnlyStoreException(String path, String store) {
        super(Linux.EROFS, path, reason(Linux.EROFS, null));
        this.store = store;
    }

    /** What the store is, as its spec or view names it. */
    public String store() {
        return store;
    }

    @Override
    public String getMessage() {
        return "'" + getFile() + "' is read-only (" + store + ")";
    }
}
