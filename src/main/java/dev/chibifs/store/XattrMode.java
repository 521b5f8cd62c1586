package dev.chibifs.store;

import dev.chibifs.path.VfsPath;

import java.io.IOException;
import java.nio.file.FileAlreadyExistsException;

/** What setting an extended attribute does to one already there: setxattr(2)'s flags. */
public enum XattrMode {
    /** No flag: creates the attribute, or replaces its value. */
    SET,
    /** XATTR_CREATE: fails with EEXIST when the attribute exists. */
    CREATE,
    /** XATTR_REPLACE: fails with ENODATA when the attribute does not exist. */
    REPLACE;

    /**
     * For a store that keeps attributes itself: throws what setxattr(2) says when this mode refuses
     * to set attribute {@code name} of {@code path}, which {@code exists} or not.
     */
    public void check(VfsPath path, String name, boolean exists) throws IOException {
        if (this == CREATE && exists) {
            throw new FileAlreadyExistsException(path.toString(), null, "attribute " + name + " exists");
        }
        if (this == REPLACE && !exists) {
            throw Storage.noXattr(path, name);
        }
    }
}
