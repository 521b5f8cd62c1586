package dev.chibifs.testing;

/** Real users and groups for uid-mapped mount tests, created on first use (root only); they stay for later runs. */
public final class TestUsers {

    /** A user's name and ids. */
    public record User(String name, long uid, long gid) {
    }

    /** useradd and groupadd wait a while for a locked /etc/passwd themselves: a few tries are plenty. */
    private static final int CREATE_ATTEMPTS = 5;

    private TestUsers() {
    }

    /**
     * Tries to make what {@code exists} checks for, until it does: the suite's two test JVMs may both
     * find a user absent and both run useradd, and the loser fails ("already exists", or /etc/passwd
     * locked by the winner), which is no failure once the user is there.
     */
    private static void createUnlessPresent(String exists, String create) {
        Sh.Result last = null;
        for (int attempt = 0; attempt < CREATE_ATTEMPTS; attempt++) {
            if (Sh.run(exists).exitCode() == 0) {
                return;
            }
            last = Sh.run(create);
        }
        if (Sh.run(exists).exitCode() != 0) {
            throw new AssertionError(create + " failed " + CREATE_ATTEMPTS + " times: " + last.err());
        }
    }

    /** The user {@code name}, created as a system user without a home if absent. */
    public static synchronized User ensure(String name) {
        createUnlessPresent("id -u " + name, "useradd --system --no-create-home --shell /usr/sbin/nologin " + name);
        long uid = Long.parseLong(Sh.run("id -u " + name).ok().out().trim());
        long gid = Long.parseLong(Sh.run("id -g " + name).ok().out().trim());
        return new User(name, uid, gid);
    }

    /** The gid of group {@code name}, created as a system group if absent. */
    public static synchronized long ensureGroup(String name) {
        createUnlessPresent("getent group " + name, "groupadd --system " + name);
        return Long.parseLong(Sh.run("getent group " + name).ok().out().split(":")[2]);
    }
}
