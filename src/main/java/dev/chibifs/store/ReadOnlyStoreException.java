package dev.chibifs.store;

import java.nio.file.FileSystemException;

/**
 * A change asked of a store that cannot write (a {@code readonly:} store, chibi's views): EROFS,
 * with chibi's words, "'PATH' is read-only (STORE)".
 */
public final class ReadOnlyStoreException extends FileSystemException {
    private static final long serialVersionUID = 1L;

    private final String store;

    public ReadOnlyStoreException(String path, String store) {
        super(path, null, "Read-only file system");
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
