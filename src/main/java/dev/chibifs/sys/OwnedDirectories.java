package dev.chibifs.sys;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;

/**
 * Directories made under a user's directory by a daemon or command run as root (systemd, sudo):
 * given to the owner of the directory they were made in, so that user (chibi run as the home's
 * owner) can still write and remove them. A tester's first root mount of a missing ~agent/.chibi
 * made it root's for the log, and everything below stayed root's.
 */
public final class OwnedDirectories {

    private OwnedDirectories() {
    }

    /** Makes {@code dir} and the directories leading to it, as {@link java.nio.file.Files#createDirectories}; returns it. */
    public static Path make(Path dir) throws IOException {
        Path absolute = dir.toAbsolutePath().normalize();
        Path existing = absolute;
        while (existing.getParent() != null && !Files.exists(existing, LinkOption.NOFOLLOW_LINKS)) {
            existing = existing.getParent();
        }
        Files.createDirectories(absolute);
        if (LibC.c().geteuid() != 0 || existing.equals(absolute)) {
            return dir;
        }
        int uid = (Integer) Files.getAttribute(existing, "unix:uid");
        int gid = (Integer) Files.getAttribute(existing, "unix:gid");
        if (uid != 0) {
            for (Path d = absolute; d != null && !d.equals(existing); d = d.getParent()) {
                Files.setAttribute(d, "unix:uid", uid, LinkOption.NOFOLLOW_LINKS);
                Files.setAttribute(d, "unix:gid", gid, LinkOption.NOFOLLOW_LINKS);
            }
        }
        return dir;
    }
}
