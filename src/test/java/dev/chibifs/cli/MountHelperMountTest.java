package dev.chibifs.cli;

import dev.chibifs.testing.FuseSupport;
import dev.chibifs.testing.MountedFs;
import dev.chibifs.testing.Sh;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code mount -t fuse.chibifs} and {@code umount}, through the helper that fstab and mount(8) use. */
@Timeout(180)
class MountHelperMountTest {

    private static final Path SBIN_HELPER = Path.of("/sbin/mount.fuse.chibifs");

    private Path root;
    private Path mnt;
    private Path previousLink;
    private String env;

    @BeforeEach
    void setUp() throws Exception {
        FuseSupport.requireFuse();
        FuseSupport.requireRoot();
        root = MountedFs.tempRoot();
        mnt = Files.createDirectories(root.resolve("mnt"));
        // mount(8) looks for helpers in /sbin only; test this checkout's helper, whatever is installed there
        if (Files.isSymbolicLink(SBIN_HELPER)) {
            previousLink = Files.readSymbolicLink(SBIN_HELPER);
        } else if (Files.exists(SBIN_HELPER)) {
            org.junit.jupiter.api.Assertions.fail(SBIN_HELPER + " is a file, not a link this test may swap");
        }
        Files.deleteIfExists(SBIN_HELPER);
        Files.createSymbolicLink(SBIN_HELPER, Path.of("scripts/mount.fuse.chibifs").toAbsolutePath());
        // the launcher runs from the test class path: the jar is not packaged yet while tests run
        env = "CHIBIFS_CLASSPATH='" + System.getProperty("java.class.path") + "' ";
    }

    @AfterEach
    void tearDown() throws Exception {
        Sh.run("fusermount -u -z " + mnt + " 2>/dev/null; true");
        Files.deleteIfExists(SBIN_HELPER);
        if (previousLink != null) {
            Files.createSymbolicLink(SBIN_HELPER, previousLink);
        }
    }

    @Test
    void mountDashTAndUmount() throws Exception {
        Path home = root.resolve("home");
        Sh.run(env + "mount -t fuse.chibifs chibifs " + mnt + " -o ctx=planner,home=" + home
                + ",_netdev,noauto,x-systemd.automount").ok();
        String line = Sh.run("grep ' " + mnt + " ' /proc/mounts").ok().out();
        assertTrue(line.startsWith("chibifs " + mnt + " fuse.chibifs "), line);
        Sh.run(mnt, "echo via-fstab > shared/x").ok();
        assertEquals("via-fstab\n", Files.readString(home.resolve("vfs/shared/x")));
        assertTrue(Sh.run(mnt, "echo no > home/coder/x").err().contains("Permission denied")
                || Sh.run(mnt, "mkdir home/coder").err().contains("Permission denied"));

        String status = Sh.run(env + "scripts/chibifs status").ok().out();
        assertTrue(status.contains(mnt.toString()) && status.contains("planner"), status);
        Path record = MountRegistry.forCurrentUser().fileFor(mnt);
        assertTrue(Files.exists(record), "no registry entry " + record);
        long pid = Long.parseLong(Files.readAllLines(record).stream().filter(l -> l.startsWith("pid="))
                .findFirst().orElseThrow().substring(4));

        Sh.run("umount " + mnt).ok();
        ProcessHandle.of(pid).ifPresent(p -> p.onExit().orTimeout(20, java.util.concurrent.TimeUnit.SECONDS).join());
        assertFalse(ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false), "daemon still running");
        assertFalse(Sh.run("grep -q ' " + mnt + " ' /proc/mounts").exitCode() == 0);
        assertFalse(Files.exists(record), "registry entry left behind");
    }

    /**
     * mount -o remount,ro of a mount whose daemon was killed exited 0 saying nothing, the mount as dead
     * as before; a live one's remount goes on as it did.
     */
    @Test
    void aRemountOfAKilledDaemonsMountFailsNamingTheMountAndTheFix() throws Exception {
        Sh.run(env + "mount -t fuse.chibifs chibifs " + mnt + " -o ctx=planner,home=" + root.resolve("home")).ok();
        Sh.run("mount -o remount,ro " + mnt).ok();
        assertTrue(Sh.run("grep ' " + mnt + " ' /proc/mounts").ok().out().contains(" fuse.chibifs ro,"), "remounted ro");
        Sh.run("mount -o remount,rw " + mnt).ok();

        long pid = Long.parseLong(Files.readAllLines(MountRegistry.forCurrentUser().fileFor(mnt)).stream()
                .filter(l -> l.startsWith("pid=")).findFirst().orElseThrow().substring(4));
        Sh.run("kill -9 " + pid).ok();
        ProcessHandle.of(pid).ifPresent(p -> p.onExit().orTimeout(20, java.util.concurrent.TimeUnit.SECONDS).join());
        Sh.Result r = Sh.run("mount -o remount,ro " + mnt);
        assertEquals(32, r.exitCode(), r.err());
        assertEquals("mount.fuse.chibifs: cannot remount " + mnt + ": its daemon is gone (Transport endpoint is not"
                + " connected): chibifs umount " + mnt + " clears it, then mount it again\n", r.err());
        assertTrue(Sh.run("grep ' " + mnt + " ' /proc/mounts").ok().out().contains(" fuse.chibifs rw,"), "left as it was");
        Sh.run(env + "scripts/chibifs umount " + mnt).ok(); // the fix it names; the record goes with it
    }

    /** mount(8)'s helper is quiet on success, but a store that did not answer is worth its line on stderr. */
    @Test
    void aStoreThatDoesNotAnswerIsWarnedOfThroughMountDashT() {
        Sh.Result r = Sh.run(env + "AWS_ACCESS_KEY_ID=k AWS_SECRET_ACCESS_KEY=s mount -t fuse.chibifs chibifs " + mnt
                + " -o ctx=planner,home=" + root.resolve("home") + ",store=/shared/aw=s3://chibi/aw?endpoint=http://127.0.0.1:1")
                .ok();
        assertTrue(r.err().contains("chibifs: warning: the store at /shared/aw did not answer"), r.err());
        assertEquals("", r.out());
    }

    @Test
    void aBadOptionMountsNothing() {
        Sh.Result r = Sh.run(env + "mount -t fuse.chibifs chibifs " + mnt + " -o uid_map=1:x");
        assertEquals(1, r.exitCode(), "mount(8)'s incorrect invocation: " + r.out());
        assertTrue(r.err().contains("uid_map"), r.err());
        assertFalse(Sh.run("grep -q ' " + mnt + " ' /proc/mounts").exitCode() == 0);
    }
}
