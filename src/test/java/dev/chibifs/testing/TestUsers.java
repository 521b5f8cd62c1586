package dev.chibifs.testing;

/** Real users and groups for uid-mapped mount tests, created on first use (root only); they stay for later runs. */
public final class TestUsers {

    /** A user's name and ids. */
    public record User(String name, long uid, long gid) {
    }

    private TestUsers() {
    }

    /** The user {@code name}, created as a system user without a home if absent. */
    public static synchronized User ensure(String name) {
        if (Sh.run("id -u " + name).exitCode() != 0) {
            Sh.run("useradd --system --no-create-home --shell /usr/sbin/nologin " + name).ok();
        }
        long uid = Long.parseLong(Sh.run("id -u " + name).ok().out().trim());
        long gid = Long.parseLong(Sh.run("id -g " + name).ok().out().trim());
        return new User(name, uid, gid);
    }

    /** The gid of group {@code name}, created as a system group if absent. */
    public static synchronized long ensureGroup(String name) {
        if (Sh.run("getent group " + name).exitCode() != 0) {
            Sh.run("groupadd --system " + name).ok();
        }
        return Long.parseLong(Sh.run("getent group " + name).ok().out().split(":")[2]);
    }
}
