package dev.chibifs.cli;

import dev.chibifs.sys.Syscalls;

import java.io.IOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;

/**
 * Says who may not write where, when the kernel said only "Permission denied": a user's doctor of a
 * home root owns blamed the file system ("ext4 lacks atomic rename, symbolic links"), and the mount
 * named only a log file, not the directory that refused it nor whom.
 */
final class WriteAccess {

    private WriteAccess() {
    }

    /**
     * This user as a fix's {@code chown} names them: their name, or their uid where it has none (a
     * container's uid without a passwd entry, which the JDK calls "?").
     */
    static String chownUser() {
        String name = System.getProperty("user.name");
        return name == null || name.isBlank() || "?".equals(name) ? Long.toString(Syscalls.geteuid()) : name;
    }

    /**
     * The command root runs to give {@code dir} to this user: {@code chown -R} of it where it exists;
     * where it does not, its making and the chown of what that makes (the first directory missing on
     * the way, and all below it), so nothing that is there already changes hands. A chown of a
     * directory not there was the fix for a store a home root owns had no room for, and doctor's
     * {@code mkdir -p} left one root owned, which the user could no more write.
     */
    static String giveCommand(Path dir) {
        Path target = dir.toAbsolutePath().normalize();
        if (Files.exists(target, LinkOption.NOFOLLOW_LINKS)) {
            return "chown -R " + chownUser() + " " + target;
        }
        Path first = target;
        while (first.getParent() != null && !Files.exists(first.getParent(), LinkOption.NOFOLLOW_LINKS)) {
            first = first.getParent();
        }
        return "mkdir -p " + target + " && chown -R " + chownUser() + " " + first;
    }

    /** How each refusal this class words begins. */
    private static final String DENIED = "permission denied: uid ";

    /** Whether {@code text} holds a refusal worded here. */
    static boolean says(String text) {
        return text.contains(DENIED);
    }

    /**
     * Why this process may not make {@code target}, or write it where it exists: the file itself
     * when it is there, else the nearest directory leading to it that is; in words naming that
     * path, this user and the path's owner and mode.
     */
    static String denied(Path target) {
        Path at = target.toAbsolutePath().normalize();
        if (!Files.exists(at)) {
            at = at.getParent();
            while (at != null && at.getParent() != null && !Files.exists(at)) {
                at = at.getParent();
            }
        }
        return denied(at, Syscalls.geteuid(), System.getProperty("user.name", "?"));
    }

    /** {@link #denied(Path)} of the path that refused, as uid {@code uid} named {@code user}. */
    static String denied(Path refusing, long uid, String user) {
        String owner;
        int mode;
        try {
            owner = Files.getOwner(refusing, LinkOption.NOFOLLOW_LINKS).getName();
            mode = (Integer) Files.getAttribute(refusing, "unix:mode") & 07777;
        } catch (IOException | RuntimeException unknown) {
            return DENIED + uid + " (" + user + ") may not write " + refusing;
        }
        return String.format(DENIED + "%d (%s) may not write %s (owner %s, mode %04o)", uid, user, refusing, owner, mode);
    }

    /**
     * Null when this process may make a directory in {@code dir}, or, while {@code dir} does not
     * exist, in the nearest directory leading to it; else {@link #denied(Path)} of it. A real
     * directory made and removed, as the mount would: permission bits say nothing of root, of
     * ACLs or of a read-only mount, whose failure is not this one's to name.
     */
    static String whyNotMake(Path dir) {
        Path at = dir.toAbsolutePath().normalize();
        while (at.getParent() != null && !Files.exists(at)) {
            at = at.getParent();
        }
        try {
            Files.delete(Files.createTempDirectory(at, dev.chibifs.store.LocalStorage.TEMP_PREFIX + "doctor-"));
            return null;
        } catch (AccessDeniedException e) {
            return denied(at.resolve("probe"));
        } catch (IOException | RuntimeException other) {
            return null; // not a permission: what the mount meets says itself
        }
    }
}
