package dev.chibifs.fuse;

import dev.chibifs.testing.MountedFs;
import dev.chibifs.testing.Sh;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Mounting and unmounting as users do it: umount, signals, a killed daemon, the background mode. */
@Timeout(300)
class LifecycleTest {

    @Test
    void umountUnmountsAndTheDaemonExits() throws Exception {
        MountedFs fs = MountedFs.start("--context", "planner");
        try {
            fs.sh("echo kept > shared/k.txt").ok();
            MountedFs.cli("umount", fs.mountpoint().toString()).ok();
            assertFalse(fs.isMounted());
            assertTrue(fs.process().waitFor(10, TimeUnit.SECONDS), "daemon still running after umount");
            assertEquals(0, fs.process().exitValue());
            assertEquals("kept\n", Files.readString(fs.stored("/shared/k.txt")));
        } finally {
            fs.close();
        }
    }

    @Test
    void umountOfABusyMountFailsClearlyAndLazyDetachesIt() throws Exception {
        MountedFs fs = MountedFs.start("--context", "planner");
        // holds the mount busy until the finally below, however long the steps take on a loaded machine
        Process holder = new ProcessBuilder("sleep", "600").directory(fs.at("/shared").toFile()).start();
        try {
            Sh.Result r = MountedFs.cli("umount", fs.mountpoint().toString());
            assertEquals(1, r.exitCode(), r.err());
            assertTrue(r.err().contains("busy") && r.err().contains("--lazy"), r.err());
            assertTrue(fs.isMounted(), "a failed umount must leave the mount in place");
            MountedFs.cli("umount", "--lazy", fs.mountpoint().toString()).ok();
            assertFalse(fs.isMounted());

            // the daemon serves the holder's directory until it goes: said as such, not as a stale leftover
            long pid = fs.process().pid();
            Sh.Result again = MountedFs.cli("umount", fs.mountpoint().toString());
            assertEquals(1, again.exitCode(), again.err());
            assertTrue(again.err().contains("unmounted lazily: its daemon, pid " + pid + ", exits when"), again.err());
            String status = MountedFs.cli("status").ok().out();
            assertTrue(status.matches("(?s).*\n" + java.util.regex.Pattern.quote(fs.mountpoint().toString())
                    + "\\s+detached\\s+" + pid + "\\s.*"), status);
        } finally {
            holder.destroyForcibly();
            fs.close();
        }
    }

    @Test
    void sigtermUnmountsAndExitsZero() throws Exception {
        MountedFs fs = MountedFs.start("--context", "planner");
        try {
            fs.process().destroy(); // SIGTERM
            assertTrue(fs.process().waitFor(20, TimeUnit.SECONDS), "daemon still running after SIGTERM:\n" + fs.log()
                    + Sh.run("grep -E '^(State|Sig)' /proc/" + fs.process().pid() + "/status; timeout 5 jstack " + fs.process().pid() + " | head -50").out());
            assertEquals(0, fs.process().exitValue(), fs.log());
            assertFalse(fs.isMounted());
            assertTrue(fs.log().contains("stopped"), fs.log());
        } finally {
            fs.close();
        }
    }

    @Test
    void aKilledDaemonsStaleMountIsClearedByTheNextMount() throws Exception {
        Path root = MountedFs.tempRoot();
        MountedFs first = MountedFs.start(root, "--context", "planner");
        first.sh("echo survived > shared/s.txt").ok();
        first.process().destroyForcibly(); // kill -9
        first.process().waitFor(10, TimeUnit.SECONDS);
        assertTrue(first.isMounted(), "the kernel keeps a dead daemon's mount");
        assertEquals("survived\n", Files.readString(first.stored("/shared/s.txt")), "the store keeps what it wrote");
        try (MountedFs second = MountedFs.start(root, "--context", "planner")) {
            assertEquals("survived\n", second.sh("cat shared/s.txt").ok().out());
            assertTrue(second.log().contains("stale"), second.log());
        } finally {
            first.close();
        }
    }

    @Test
    void backgroundMountReturnsOnceMountedAndNamesItsLog() throws IOException {
        Path root = MountedFs.tempRoot();
        Path mnt = Files.createDirectories(root.resolve("mnt"));
        Path home = root.resolve("home");
        Sh.Result r = MountedFs.cli("mount", "--context", "planner", "--home", home.toString(), mnt.toString());
        try {
            r.ok();
            assertTrue(r.out().contains("mounted " + mnt), r.out());
            assertTrue(r.out().contains(home.resolve("chibifs/logs").toString()), r.out());
            Sh.run(mnt, "echo bg > shared/bg.txt && cat shared/bg.txt").ok();
        } finally {
            MountedFs.cli("umount", mnt.toString());
            Sh.run("fusermount -u -z " + mnt + " 2>/dev/null; true");
        }
        assertFalse(Sh.run("grep -q ' " + mnt + " ' /proc/mounts").exitCode() == 0);
    }

    @Test
    void aFailedMountSaysWhyAndLeavesNothingMounted() throws IOException {
        Path root = MountedFs.tempRoot();
        Path mnt = Files.createDirectories(root.resolve("mnt"));
        Files.writeString(mnt.resolve("occupied"), "not empty");
        Sh.Result r = MountedFs.cli("mount", "--context", "planner", "--home", root.resolve("home").toString(),
                "-o", "default_permissions", root.resolve("missing").toString());
        assertEquals(1, r.exitCode(), r.err());
        assertTrue(r.err().startsWith("chibifs: mountpoint "), r.err());
        assertEquals(1, r.err().strip().lines().count(), r.err());
    }

    @Test
    void aMountLibfuseRefusesExitsOneWithLibfusesReasonInBothModes() throws IOException {
        Path root = MountedFs.tempRoot();
        Path mnt = Files.createDirectories(root.resolve("mnt"));
        Files.writeString(mnt.resolve("occupied"), "not empty");
        String home = root.resolve("home").toString();
        Sh.Result bg = MountedFs.cli("mount", "--context", "planner", "--home", home, mnt.toString());
        assertEquals(1, bg.exitCode(), bg.err());
        assertTrue(bg.err().startsWith("chibifs: mountpoint " + mnt + " is not empty: choose an empty directory,"
                + " or pass -o nonempty"), bg.err());
        assertEquals(1, bg.err().strip().lines().count(), bg.err());
        Sh.Result fg = MountedFs.cli("mount", "--foreground", "--context", "planner", "--home", home, mnt.toString());
        assertEquals(1, fg.exitCode(), fg.err());
        assertTrue(fg.err().contains("mountpoint " + mnt + " is not empty"), fg.err());
        assertFalse(fg.err().contains("signal received"), fg.err());
        assertFalse(Sh.run("grep -q ' " + mnt + " ' /proc/mounts").exitCode() == 0);
    }

    @Test
    void badArgumentsExitTwoNamingTheValueAndTheRule() {
        Sh.Result r = MountedFs.cli("mount", "--context", "SyStEm", "/tmp");
        assertEquals(2, r.exitCode());
        assertTrue(r.err().contains("'SyStEm'") && r.err().contains("never 'system'"), r.err());
        r = MountedFs.cli("mount", "--uid-map", "abc=planner", "/tmp");
        assertEquals(2, r.exitCode());
        assertTrue(r.err().contains("'abc=planner'") && r.err().contains("UID"), r.err());
        r = MountedFs.cli("mount", "--uid-map", "1001=../x", "/tmp");
        assertEquals(2, r.exitCode());
        assertTrue(r.err().contains("'1001=../x'"), r.err());
        r = MountedFs.cli("mount", "--context", "planner", "-o", "no_such_option", "/tmp");
        assertEquals(2, r.exitCode());
        assertTrue(r.err().contains("'no_such_option'"), r.err());
        r = MountedFs.cli("mount", "--context", "a", "--uid-map", "1=b", "/tmp");
        assertEquals(2, r.exitCode());
    }
}
