package dev.chibifs.cli;

import dev.chibifs.testing.FuseSupport;
import dev.chibifs.testing.MountedFs;
import dev.chibifs.testing.Sh;
import dev.chibifs.testing.TestUsers;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The command line run as a test user, as the README's user runs it: a temp root holding a copy of
 * the classpath the user can read, a mountpoint the user owns and a home (the user's, or left
 * root's), and {@code scripts/chibifs} with no runtime directory of root's.
 */
record AsUser(TestUsers.User user, Path root, Path mnt, Path home, String chibifs) {

    /** {@link #prepare} for the test user chibit-stranger, where FUSE is there and the test runs as root; else skipped. */
    static AsUser stranger(boolean ownsHome) throws IOException {
        FuseSupport.requireFuse();
        FuseSupport.requireRoot();
        return prepare(TestUsers.ensure("chibit-stranger"), ownsHome);
    }

    static AsUser prepare(TestUsers.User user, boolean ownsHome) throws IOException {
        Path root = MountedFs.tempRoot();
        String classpath = MountedFs.readableClasspath(Files.createDirectory(root.resolve("classpath")));
        Path mnt = Files.createDirectory(root.resolve("mnt"));
        Path home = Files.createDirectory(root.resolve("home"));
        // the launcher's copy of the jar, where the user may not write target/: not in the user's
        // HOME (the test users have none, and theirs left /tmp/.cache behind)
        Path cache = Files.createDirectory(root.resolve("cache"));
        Sh.run("chown " + user.uid() + ":" + user.gid() + " " + Sh.quote(mnt.toString()) + " " + Sh.quote(cache.toString())
                + (ownsHome ? " " + Sh.quote(home.toString()) : "")).ok();
        String chibifs = "env -u CHIBIFS_RUNTIME_DIR XDG_RUNTIME_DIR= XDG_CACHE_HOME=" + Sh.quote(cache.toString())
                + " CHIBIFS_CLASSPATH=" + Sh.quote(classpath) + " " + Sh.quote(Path.of("scripts/chibifs").toAbsolutePath().toString());
        return new AsUser(user, root, mnt, home, chibifs);
    }

    /** {@code chibifs ARGS} as the user, in the temp root. */
    Sh.Result run(String args) {
        return Sh.as(user.uid(), user.gid(), root, chibifs + " " + args);
    }

    /** {@code chibifs mount} of the home at the mountpoint as the user, context planner, with {@code options} first. */
    Sh.Result mount(String options) {
        return run("mount " + options + " --context planner --home " + Sh.quote(home.toString()) + " "
                + Sh.quote(mnt.toString()));
    }

    /** Mounts as the user in the background; the daemon's pid, as the user's registry names it. */
    long mountedPid() throws IOException {
        mount("").ok();
        return Long.parseLong(java.nio.file.Files.readAllLines(registry().fileFor(mnt)).stream()
                .filter(l -> l.startsWith("pid=")).findFirst().orElseThrow().substring(4));
    }

    /** The user's own registry of mounts, where root's status and umount look for them. */
    MountRegistry registry() {
        return MountRegistry.of(Path.of("/tmp/chibifs-" + user.uid()), (int) user.uid());
    }

    /** What a test leaves: a mount still there, the classpath copy, the launcher's copy of the jar. */
    void cleanUp() {
        Sh.run("umount -l " + Sh.quote(mnt.toString()) + " 2>/dev/null; true");
        Sh.run("rm -rf " + Sh.quote(root.resolve("classpath").toString()) + " " + Sh.quote(root.resolve("cache").toString()));
    }
}
