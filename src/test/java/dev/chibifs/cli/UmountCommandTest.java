package dev.chibifs.cli;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

class UmountCommandTest {

    @TempDir
    Path tmp;

    private final StringWriter err = new StringWriter();

    private int run(UmountCommand command, String... args) {
        CommandLine cl = new CommandLine(command);
        cl.setOut(new PrintWriter(new StringWriter()));
        cl.setErr(new PrintWriter(err, true));
        cl.setExecutionExceptionHandler(new ErrorHandler());
        return cl.execute(args);
    }

    /**
     * An agent's umount of root's mount failed with fusermount3's "entry for ... not found in /etc/mtab", which
     * said nothing of whose mount it is: now that, before fusermount3 is asked.
     */
    @Test
    void anotherUsersMountIsRefusedSayingWhoseItIs() throws Exception {
        Path mp = Files.createDirectories(tmp.resolve("m1")).toRealPath();
        Path table = Files.writeString(tmp.resolve("mounts"), "chibifs " + mp
                + " fuse.chibifs rw,nosuid,nodev,relatime,user_id=0,group_id=0,allow_other 0 0\n");
        assertEquals(ExitCodes.FAILURE, run(new UmountCommand(table, 4752L), mp.toString()));
        assertEquals("chibifs: " + mp + " is another user's mount (uid 0): only that user or root can unmount it\n",
                err.toString());
        assertEquals(1, err.toString().lines().count(), err.toString());
    }

    @Test
    void theMountersOwnAndRootsUmountAreNotRefusedSo() throws Exception {
        Path mp = Files.createDirectories(tmp.resolve("m2")).toRealPath();
        Path table = Files.writeString(tmp.resolve("mounts"), "chibifs " + mp
                + " fuse.chibifs rw,nosuid,nodev,relatime,user_id=4752,group_id=4752 0 0\n");
        // not really mounted: the unmount itself fails, but not as another user's
        run(new UmountCommand(table, 4752L), mp.toString());
        run(new UmountCommand(table, 0L), mp.toString());
        assertFalse(err.toString().contains("another user's"), err.toString());
    }

    @Test
    void theMounterIsTheUidOfTheUserIdOption() {
        assertEquals(1001, new dev.chibifs.fuse.MountTable.MountEntry("chibifs", java.nio.file.Path.of("/m"), "fuse.chibifs", "rw,nosuid,user_id=1001,group_id=1001,allow_other").mounter());
        assertEquals(-1, new dev.chibifs.fuse.MountTable.MountEntry("chibifs", java.nio.file.Path.of("/m"), "fuse.chibifs", "rw,nosuid").mounter());
        assertEquals(-1, new dev.chibifs.fuse.MountTable.MountEntry("chibifs", java.nio.file.Path.of("/m"), "fuse.chibifs", "user_id=x").mounter());
    }

    /** A process with a daemon's arguments for MP, ready once it has printed its first line; ended by the caller. */
    private static Process decoy(Path mp, boolean holdingFuse) throws Exception {
        String script = (holdingFuse ? "exec 3<>/dev/fuse; " : "") + "echo ready; read x";
        Process p = new ProcessBuilder("sh", "-c", script, Main.class.getName(), "mount", "--foreground", mp.toString())
                .redirectErrorStream(true).start();
        assertEquals("ready", new java.io.BufferedReader(new java.io.InputStreamReader(p.getInputStream())).readLine());
        return p;
    }

    /**
     * umount took any process whose arguments look like a daemon's for the daemon: another user's python
     * with "dev.chibifs.cli.Main mount --foreground M" in its argv was waited on (and --force would have
     * killed it), and the owner's umount said it was the lazily unmounted mount's daemon.
     */
    @Test
    void aProcessThatOnlyLooksLikeADaemonIsNotTakenForOne() throws Exception {
        Path mp = Files.createDirectories(tmp.resolve("m3")).toRealPath();
        Process planted = decoy(mp, false);
        try {
            Path table = Files.writeString(tmp.resolve("mounts"), "");
            assertEquals(ExitCodes.FAILURE, run(new UmountCommand(table, (long) MountRegistry.currentUid()), mp.toString()));
            assertEquals("chibifs: " + mp + " is not mounted\n", err.toString());
        } finally {
            planted.destroy();
        }
    }

    /**
     * A daemon no registry of this user's names (another user's, one that could not record itself) is
     * still found by its arguments, but only as a process of the mount's user_id= that holds /dev/fuse.
     */
    @Test
    void aDaemonFoundByItsArgumentsRunsAsTheMounterAndHoldsFuse() throws Exception {
        Path mp = Files.createDirectories(tmp.resolve("m4")).toRealPath();
        Process daemon = decoy(mp, false);
        try {
            int uid = MountRegistry.currentUid();
            assertEquals(daemon.pid(), UmountCommand.findDaemon(mp, uid, pid -> uid, pid -> pid == daemon.pid())
                    .orElseThrow().pid());
            assertFalse(UmountCommand.findDaemon(mp, uid + 1, pid -> uid, pid -> true).isPresent(), "another uid's process");
            assertFalse(UmountCommand.findDaemon(mp, uid, pid -> uid, pid -> false).isPresent(), "holds no /dev/fuse");
        } finally {
            daemon.destroy();
        }
    }

    /**
     * Root's umount of a user's live mount asked root's own registry for the daemon's stats socket,
     * where the user's daemon has none: none of the upload lines the user's own umount shows. The
     * socket is the one in the registry that records the daemon.
     */
    @Test
    void theDaemonsUploadsAreAskedInTheRegistryThatRecordsIt() throws Exception {
        Path mp = tmp.resolve("m");
        Path table = tmp.resolve("mounts");
        Files.writeString(table, "chibifs " + mp + " fuse.chibifs rw,nosuid,nodev,relatime,user_id=" + MountRegistry.currentUid()
                + ",group_id=0 0 0\n");
        MountRegistry own = new MountRegistry(tmp.resolve("own"), table, pid -> true);
        MountRegistry users = new MountRegistry(tmp.resolve("users"), table, pid -> true);
        own.prepare();
        users.prepare();
        long pid = 4242;
        users.write(new MountRecord(mp, pid, MountRecord.MODE_CONTEXT, "planner", "", null, tmp.resolve("home"),
                tmp.resolve("home/vfs"), java.time.Instant.now(), "", "stderr"));
        assertEquals(StatsSocket.pathFor(users, pid), UmountCommand.statsSocketOf(mp, pid, java.util.List.of(own, users)));
        assertEquals(StatsSocket.pathFor(MountRegistry.forCurrentUser(), 4243), UmountCommand.statsSocketOf(mp, 4243,
                java.util.List.of(own, users)), "another daemon's record is not this one's: this user's registry");
        assertEquals(StatsSocket.pathFor(MountRegistry.forCurrentUser(), pid), UmountCommand.statsSocketOf(tmp.resolve("other"), pid,
                java.util.List.of(own, users)), "another mountpoint's record neither");
    }
}
