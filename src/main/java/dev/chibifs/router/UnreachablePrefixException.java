package dev.chibifs.router;

import dev.chibifs.path.VfsPath;

import java.io.IOException;

/** A store's prefix that runs through something other than a directory, which the mount cannot serve. */
public final class UnreachablePrefixException extends IOException {
    private static final long serialVersionUID = 1L;

    UnreachablePrefixException(VfsPath prefix, String why) {
        super("a store at " + prefix + " cannot be reached: " + why
                + "; a prefix must run through directories, which the stores above it have or can make");
    }
}
