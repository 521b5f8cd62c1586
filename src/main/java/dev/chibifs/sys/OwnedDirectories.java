package dev.chibifs.sys;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;

/**
 * Directories made under a user's directory by a daemon or command run as root (systemd, sudo):
 * given to the owner of the directory they were made in, so that user (chibi run as the home's
 * owner) can still write and remove them. A tester's first root mount of a missing ~agent/.chibi
 * made it root's, and everything below stayed root's.
 *
 * <p>Made and given through descriptors, each new directory opened O_NOFOLLOW below the one made
 * before it, and given only while root's: that user may rename or replace what is being made (a
 * tester swapped ~/.chibi for a link to a directory of root's between a mkdir and a chown by path,
 * and root gave its directories away).
 */
public final class OwnedDirectories {

    private OwnedDirectories() {
    }

    /** {@code dir} (absolute), or the nearest directory leading to it that exists: what it would be made in. */
    private static Path nearestExisting(Path dir) {
        Path p = dir;
        while (p.getParent() != null && !Files.exists(p, LinkOption.NOFOLLOW_LINKS)) {
            p = p.getParent();
        }
        return p;
    }

    /**
     * Why what is in {@code dir} may have been put there by another user, or null when only this
     * process's user and root can have: {@code dir} (or, while it does not exist yet, the directory it
     * would be made in) and every directory leading to it must belong to this user or root, and none may
     * be written by others, except a directory with the sticky bit above {@code dir} (as {@code /tmp}),
     * where others make names but cannot rename or remove this user's. A link on the way is judged by
     * the directory it leads to. So a daemon trusts a directory before it acts on what it finds there (an
     * S3 store's journal, which it uploads), as sshd judges ~/.ssh.
     */
    public static String whyOthersMayWrite(Path dir) throws IOException {
        int me = Syscalls.geteuid();
        Path absolute = dir.toAbsolutePath().normalize();
        Path existing = nearestExisting(absolute);
        boolean exists = existing.equals(absolute); // a directory yet to be made is judged by where it would be
        // the path as written, then where its links lead: whoever owns a link on the way, or the
        // directory holding it, can point it elsewhere after this check
        String why = judge(existing, exists, me, LinkOption.NOFOLLOW_LINKS);
        if (why != null) {
            return why;
        }
        Path real;
        try {
            real = existing.toRealPath();
        } catch (java.nio.file.NoSuchFileException dangling) {
            return null; // a link to nothing: making the directory there fails, and says why
        }
        return judge(real, exists, me);
    }

    private static String judge(Path from, boolean first, int me, LinkOption... options) throws IOException {
        for (Path p = from; p != null; p = p.getParent(), first = false) {
            int owner = (Integer) Files.getAttribute(p, "unix:uid", options);
            if (owner != me && owner != 0) {
                return p + " belongs to uid " + owner;
            }
            if (Files.isSymbolicLink(p)) {
                continue; // a link's mode is always 0777: what it leads to is judged after
            }
            int mode = (Integer) Files.getAttribute(p, "unix:mode", options);
            int othersWrite = mode & 022;
            if ((othersWrite & 020) != 0 && privateGroup((Integer) Files.getAttribute(p, "unix:gid", options), owner)) {
                othersWrite &= ~020; // umask 002 with a group of the owner's own (Debian's and Fedora's users)
            }
            if (othersWrite != 0 && (first || (mode & STICKY) == 0)) {
                return String.format("%s may be written by other users (mode %04o): chmod go-w it, or choose another",
                        p, mode & 07777);
            }
        }
        return null;
    }

    private static final int STICKY = 01000;

    /**
     * Whether group {@code gid} is user {@code uid}'s own and holds no one else, as Debian's sshd
     * judges it: the user's primary group in /etc/passwd, nobody else's there, and no member named
     * in /etc/group but the user. An empty group that is not the user's own (setgid programs use
     * them; a process may hold one /etc/group does not list) is not; nor is one those files do not
     * name (LDAP).
     */
    public static boolean privateGroup(int gid, int uid) {
        try {
            return privateGroup(gid, uid, Files.readAllLines(Path.of("/etc/passwd")), Files.readAllLines(Path.of("/etc/group")));
        } catch (IOException | RuntimeException unknown) {
            return false;
        }
    }

    /** {@link #privateGroup(int, int)} by the lines of /etc/passwd and /etc/group given. */
    static boolean privateGroup(int gid, int uid, java.util.List<String> passwd, java.util.List<String> group) {
        {
            String user = null;
            boolean own = false;
            for (String line : passwd) {
                String[] f = line.split(":", -1);
                if (f.length < 4) {
                    continue;
                }
                boolean isUser = f[2].equals(Integer.toString(uid));
                if (isUser) {
                    user = f[0];
                    own = f[3].equals(Integer.toString(gid));
                } else if (f[3].equals(Integer.toString(gid))) {
                    return false;
                }
            }
            if (!own) {
                return false;
            }
            for (String line : group) {
                String[] f = line.split(":", -1);
                if (f.length >= 4 && f[2].equals(Integer.toString(gid))) {
                    for (String member : f[3].split(",")) {
                        if (!member.isBlank() && !member.equals(user)) {
                            return false;
                        }
                    }
                    return true;
                }
            }
            return false;
        }
    }

    /** Makes {@code dir} and the directories leading to it, as {@link Files#createDirectories}; returns it. */
    public static Path make(Path dir) throws IOException {
        Path absolute = dir.toAbsolutePath().normalize();
        Path existing = nearestExisting(absolute);
        int uid = Syscalls.geteuid() == 0 && !existing.equals(absolute) ? (Integer) Files.getAttribute(existing, "unix:uid") : 0;
        if (uid == 0) {
            MadeDirectories.createDirectories(absolute);
            return dir;
        }
        int gid = (Integer) Files.getAttribute(existing, "unix:gid");
        String where = existing.toString();
        int fd = Syscalls.openat(Linux.AT_FDCWD, where, Linux.O_RDONLY | Linux.O_DIRECTORY | Linux.O_CLOEXEC, 0, where);
        try {
            for (Path name : existing.relativize(absolute)) {
                String n = name.toString();
                int err = Syscalls.tryMkdirat(fd, n, 0755);
                if (err != 0 && err != -Linux.EEXIST) {
                    throw Errors.of(-err, where + "/" + n);
                }
                int next = Syscalls.openat(fd, n, Linux.O_RDONLY | Linux.O_DIRECTORY | Linux.O_NOFOLLOW | Linux.O_CLOEXEC, 0,
                        where + "/" + n);
                Syscalls.close(fd);
                fd = next;
                where = where + "/" + n;
                if (err == 0 && Syscalls.stat(fd, null, where).uid() == 0) {
                    Syscalls.tryFchown(fd, uid, gid);
                }
            }
        } finally {
            Syscalls.close(fd);
        }
        return dir;
    }
}
