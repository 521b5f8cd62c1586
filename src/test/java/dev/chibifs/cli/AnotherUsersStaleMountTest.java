package dev.chibifs.cli;

import dev.chibifs.testing.Sh;
import dev.chibifs.testing.TestUsers;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import picocli.CommandLine;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Root and a user's mount whose daemon was killed: root's doctor said "stale mounts: none" while root's
 * status called it stale (the kernel refuses root's lookups on a mount without allow_other, EACCES,
 * before it asks the daemon, dead or alive), and root's umount left the user's record and sockets for a
 * second step by hand.
 */
@Timeout(180)
class AnotherUsersStaleMountTest {

    private final StringWriter out = new StringWriter();
    private final StringWriter err = new StringWriter();

    private int run(Object command, String... args) {
        out.getBuffer().setLength(0);
        err.getBuffer().setLength(0);
        CommandLine cl = new CommandLine(command);
        cl.setOut(new PrintWriter(out, true));
        cl.setErr(new PrintWriter(err, true));
        cl.setExecutionExceptionHandler(new ErrorHandler());
        return cl.execute(args);
    }

    /** Doctor's "stale mounts" line and the fix after it, if any. */
    private String staleMountsCheck(Path home) {
        run(new DoctorCommand(), "--home", home.toString());
        String text = out.toString();
        int at = text.indexOf("stale mounts: ");
        assertTrue(at >= 0, text);
        int end = text.indexOf('\n', at);
        String fix = text.substring(end + 1).startsWith("     fix: ") ? text.substring(end + 1).lines().findFirst().orElse("") : "";
        return text.substring(text.lastIndexOf('\n', at) + 1, end) + "\n" + fix;
    }

    /** Until process {@code pid} is gone or a zombie: dead, its device closed, its mount answering ENOTCONN. */
    private static void awaitDeath(long pid) {
        int exited = dev.chibifs.sys.Syscalls.pidfdOpen(pid);
        if (exited < 0) {
            return; // gone already (ESRCH)
        }
        try {
            assertTrue(dev.chibifs.sys.Syscalls.awaitReadable(exited, 20_000), "the daemon did not die");
        } finally {
            dev.chibifs.sys.Syscalls.close(exited);
        }
    }

    /**
     * Root's umount of a user's live background mount returned at once, its daemon still running: no
     * --foreground among a launcher daemon's arguments, so only the user's registry names it. Waited
     * for now, as for root's own: gone when umount returns, and its record with it.
     */
    @Test
    void rootsUmountOfAUsersMountWaitsForItsDaemon() throws Exception {
        AsUser as = AsUser.stranger(true);
        Path mnt = as.mnt();
        MountRegistry registry = as.registry();
        long pid = -1;
        try {
            pid = as.mountedPid();
            assertEquals(ExitCodes.OK, run(new UmountCommand(), mnt.toString()), err.toString());
            String state = Files.exists(Path.of("/proc/" + pid + "/stat")) ? Files.readString(Path.of("/proc/" + pid + "/stat")) : "";
            assertTrue(state.isEmpty() || state.substring(state.lastIndexOf(')') + 2).startsWith("Z"),
                    "the daemon still runs: " + state);
            assertFalse(Files.exists(registry.fileFor(mnt)), "its record stays");
        } finally {
            if (pid > 0) {
                Sh.run("kill -9 " + pid);
            }
            as.cleanUp();
            forget(registry, mnt, pid);
        }
    }

    /** What a daemon killed by a failing test leaves in the user's registry, which outlives the test's temp dir. */
    private static void forget(MountRegistry registry, Path mnt, long pid) throws IOException {
        if (pid > 0) {
            Files.deleteIfExists(registry.fileFor(mnt));
            for (String kind : new String[] {"stats", "sync", "trace"}) {
                Files.deleteIfExists(registry.dir().resolve(kind + "-" + pid + ".sock"));
            }
        }
    }

    @Test
    void rootsDoctorCallsAKilledDaemonsMountStaleAndRootsUmountClearsItAll() throws Exception {
        AsUser as = AsUser.stranger(true);
        TestUsers.User user = as.user();
        Path root = as.root();
        Path mnt = as.mnt();
        MountRegistry registry = as.registry();
        long pid = -1;
        try {
            pid = as.mountedPid();

            // alive, its daemon answers root's probe though root may not look inside
            assertFalse(staleMountsCheck(root).contains(mnt.toString()), out.toString());

            Sh.run("kill -9 " + pid).ok();
            awaitDeath(pid);
            assertEquals(ExitCodes.OK, run(new StatusCommand()), err.toString());
            assertTrue(out.toString().matches("(?s).*\n" + java.util.regex.Pattern.quote(mnt.toString()) + "\\s+stale\\s.*"),
                    out.toString());

            String check = staleMountsCheck(root);
            assertTrue(check.startsWith("FAIL stale mounts: ") && check.contains(mnt.toString()), out.toString());
            assertTrue(check.contains("fix: ") && check.contains("chibifs umount " + mnt), check);

            long dead = pid;
            assertEquals(ExitCodes.OK, run(new UmountCommand(), mnt.toString()), err.toString());
            assertEquals("chibifs: unmounted " + mnt + "; removed the record and sockets its daemon (pid " + dead
                    + ", gone) left in uid " + user.uid() + "'s registry " + registry.dir() + "\n", out.toString());
            assertFalse(Sh.run("grep -q ' " + mnt + " ' /proc/mounts").exitCode() == 0, "still mounted");
            assertFalse(Files.exists(registry.fileFor(mnt)), "the killed daemon's record stays");
            for (String kind : new String[] {"stats", "sync", "trace"}) {
                assertFalse(Files.exists(registry.dir().resolve(kind + "-" + dead + ".sock")), kind + " socket stays");
            }
            run(new StatusCommand());
            assertFalse(out.toString().contains(mnt.toString()), out.toString());
        } finally {
            if (pid > 0) {
                Sh.run("kill -9 " + pid);
            }
            as.cleanUp();
            forget(registry, mnt, pid);
        }
    }
}
