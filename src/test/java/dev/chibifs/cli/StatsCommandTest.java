package dev.chibifs.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** {@code stats}'s arguments: {@code --watch} takes the next word as its interval unless it is the mountpoint. */
class StatsCommandTest {

    @TempDir
    Path mnt;

    private static StatsCommand parsed(String... args) {
        StatsCommand stats = new StatsCommand();
        new CommandLine(stats).parseArgs(args);
        return stats;
    }

    @Test
    void watchTakesTheWordAfterItUnlessItIsTheMountpoint() {
        String m = mnt.toString();
        StatsCommand s = parsed("--watch", m); // was refused: the mountpoint taken for a duration
        assertEquals(Duration.ofSeconds(1), s.watch);
        assertEquals(mnt, s.mountpoint);
        assertEquals(Duration.ofSeconds(2), parsed("--watch", "2", m).watch);
        assertEquals(Duration.ofMillis(500), parsed(m, "--watch=500ms").watch);
        assertEquals(Duration.ofSeconds(3), parsed(m, "--watch", "PT3S").watch);
        assertEquals(Duration.ofSeconds(1), parsed(m, "--watch").watch);
        assertEquals(Duration.ofSeconds(1), parsed(m, "--watch", "--json").watch);
        assertNull(parsed(m).watch);
        // a bad value is named, not taken as the mountpoint
        for (String bad : new String[] {"0", "5x", "abc", ""}) {
            CommandLine.ParameterException e = assertThrows(CommandLine.ParameterException.class,
                    () -> parsed("--watch=" + bad, m));
            assertTrue(e.getMessage().contains("invalid duration '" + bad + "'"), e.getMessage());
        }
    }

    /**
     * stats, trace and sync of another user's mount (an agent's of root's uid-mapped mount) said no
     * daemon was registered for it, which sent the agent looking for a dead daemon, while umount
     * said whose it is: now they say it in umount's words. A user's own unregistered mount, and
     * root's look at any, still say no daemon is registered.
     */
    @Test
    void anotherUsersMountIsSaidToBeTheirsAsUmountSaysIt() throws Exception {
        Path mp = java.nio.file.Files.createDirectories(mnt.resolve("m"));
        Path table = java.nio.file.Files.writeString(mnt.resolve("mounts"), "chibifs " + mp
                + " fuse.chibifs rw,nosuid,nodev,relatime,user_id=0,group_id=0,allow_other 0 0\n");
        java.util.List<MountRegistry> mine = java.util.List.of(new MountRegistry(mnt.resolve("registry"), table, pid -> true));
        for (String command : new String[] {"stats", "trace", "sync"}) {
            CommandFailure f = assertThrows(CommandFailure.class,
                    () -> StatsCommand.socketOf(mp, command, StatsSocket::pathFor, mine, table, 4752));
            assertEquals(mp + " is another user's mount (uid 0): only that user or root can run chibifs " + command
                    + " on it", f.getMessage());
            assertEquals(ExitCodes.FAILURE, f.exitCode());
        }
        // umount's words, from the same place
        assertEquals(mp + " is another user's mount (uid 0): only that user or root can unmount it",
                UmountCommand.anotherUsersMount(mp, dev.chibifs.fuse.MountTable.find(table, mp).orElseThrow(), 4752, "unmount it"));
        Path own = java.nio.file.Files.writeString(mnt.resolve("own"), "chibifs " + mp
                + " fuse.chibifs rw,nosuid,nodev,relatime,user_id=4752,group_id=4752 0 0\n");
        for (Object[] asked : new Object[][] {{own, 4752L}, {table, 0L}}) {
            CommandFailure f = assertThrows(CommandFailure.class,
                    () -> StatsCommand.socketOf(mp, "stats", StatsSocket::pathFor, mine, (Path) asked[0], (Long) asked[1]));
            assertEquals("no running chibifs daemon is registered for " + mp + " (chibifs status lists this host's mounts)",
                    f.getMessage());
        }
    }

    /** A daemon unmounted lazily with files open (status: detached) still answers stats, trace and sync. */
    @Test
    void aDetachedDaemonIsAskedAsAMountedOneIs() throws Exception {
        Path mp = mnt.resolve("lazy");
        Path table = java.nio.file.Files.writeString(mnt.resolve("no-mounts"), "");
        MountRegistry registry = new MountRegistry(mnt.resolve("registry"), table, pid -> true);
        registry.write(new MountRecord(mp, 2, MountRecord.MODE_CONTEXT, "planner", "", null, Path.of("/h"),
                Path.of("/h/vfs"), java.time.Instant.now(), "", "/h/chibifs/mount.log"));
        assertEquals(MountRegistry.Health.DETACHED, registry.list().get(0).health());
        assertEquals(StatsSocket.pathFor(registry, 2L),
                StatsCommand.socketOf(mp, "stats", StatsSocket::pathFor, java.util.List.of(registry), table, 0).socket());
    }

    /**
     * {@code chibifs sync ~/chibi/shared} (a path in the mount, as df and sync -f take one) said no daemon
     * was registered for it: it is the mount it is in that answers. The path is walked up as written,
     * never resolved through the mount, which would hang on a hung daemon. A path in another user's mount is
     * said to be theirs; one in no chibifs mount (the nearest mount is another file system) is not found.
     */
    @Test
    void aPathInAMountFindsItsDaemon() throws Exception {
        Path mp = mnt.resolve("chibi");
        Path table = java.nio.file.Files.writeString(mnt.resolve("mounts"), "chibifs " + mp
                + " fuse.chibifs rw,nosuid,nodev,relatime,user_id=0,group_id=0 0 0\n"
                + "tmpfs " + mp.resolve("shared/t") + " tmpfs rw 0 0\n"
                + "chibifs " + mnt.resolve("theirs") + " fuse.chibifs rw,nosuid,nodev,relatime,user_id=999,group_id=999 0 0\n");
        MountRegistry registry = new MountRegistry(mnt.resolve("registry"), table, pid -> true);
        registry.write(new MountRecord(mp, 2, MountRecord.MODE_CONTEXT, "planner", "", null, Path.of("/h"),
                Path.of("/h/vfs"), java.time.Instant.now(), "", "/h/chibifs/mount.log"));
        java.util.List<MountRegistry> mine = java.util.List.of(registry);
        StatsCommand.Served served = StatsCommand.socketOf(mp.resolve("shared/notes/x.md"), "sync",
                StatsSocket::syncPathFor, mine, table, 0);
        assertEquals(new StatsCommand.Served(mp, StatsSocket.syncPathFor(registry, 2L)), served);

        CommandFailure theirs = assertThrows(CommandFailure.class, () -> StatsCommand.socketOf(
                mnt.resolve("theirs/shared"), "stats", StatsSocket::pathFor, mine, table, 4752));
        assertEquals(mnt.resolve("theirs") + " is another user's mount (uid 999): only that user or root can run chibifs stats on it",
                theirs.getMessage());
        // through a link to the mountpoint (~/chibi -> /mnt/chibi), as status and umount take it
        java.nio.file.Files.createDirectories(mp.resolve("shared"));
        Path link = java.nio.file.Files.createSymbolicLink(mnt.resolve("link"), mp);
        assertEquals(mp, StatsCommand.socketOf(link, "stats", StatsSocket::pathFor, mine, table, 0).mountpoint());
        assertEquals(mp, StatsCommand.socketOf(link.resolve("shared"), "stats", StatsSocket::pathFor, mine, table, 0).mountpoint());
        Path inTmpfs = mp.resolve("shared/t/x");
        CommandFailure none = assertThrows(CommandFailure.class, () -> StatsCommand.socketOf(
                inTmpfs, "stats", StatsSocket::pathFor, mine, table, 0));
        assertEquals("no running chibifs daemon is registered for " + inTmpfs + " (chibifs status lists this host's mounts)",
                none.getMessage());
    }

    /** A killed daemon's mount: stats said no daemon was registered where status says stale; now as status, with its fix. */
    @Test
    void aKilledDaemonsMountIsStaleWithStatussFix() throws Exception {
        Path mp = mnt.resolve("killed");
        Path table = java.nio.file.Files.writeString(mnt.resolve("killed-mounts"), "chibifs " + mp
                + " fuse.chibifs rw,nosuid,nodev,relatime,user_id=0,group_id=0 0 0\n");
        MountRegistry registry = new MountRegistry(mnt.resolve("killed-registry"), table, pid -> false);
        registry.write(new MountRecord(mp, 77, MountRecord.MODE_CONTEXT, "planner", "", null, Path.of("/h"),
                Path.of("/h/vfs"), java.time.Instant.now(), "", "/h/chibifs/mount.log"));
        CommandFailure stale = assertThrows(CommandFailure.class, () -> StatsCommand.socketOf(mp.resolve("shared"), "stats",
                StatsSocket::pathFor, java.util.List.of(registry), table, 0));
        assertEquals(mp + " is stale: pid 77 is not running; its mount is left without a daemon: chibifs umount " + mp,
                stale.getMessage());
        assertEquals(ExitCodes.FAILURE, stale.exitCode());
    }

    /** A listener that takes connections (the kernel completes them) and never writes: a daemon under SIGSTOP. */
    static java.nio.channels.ServerSocketChannel silent(Path path) throws java.io.IOException {
        java.nio.channels.ServerSocketChannel server = java.nio.channels.ServerSocketChannel.open(java.net.StandardProtocolFamily.UNIX);
        server.bind(java.net.UnixDomainSocketAddress.of(path));
        return server;
    }

    /** Runs {@code command} as chibifs does; returns the exit code, and the output and errors in {@code out}, {@code err}. */
    private static int run(Object command, java.io.StringWriter out, java.io.StringWriter err, String... args) {
        CommandLine cl = new CommandLine(command);
        cl.setOut(new java.io.PrintWriter(out));
        cl.setErr(new java.io.PrintWriter(err));
        cl.setExecutionExceptionHandler(new ErrorHandler());
        return cl.execute(args);
    }

    /** A stopped daemon held stats (and a monitoring script) for ever: past the limit, one line and exit 5. */
    @Test
    void aDaemonThatDoesNotAnswerIsOneLineAndExitFiveAfterTheLimit() throws Exception {
        Path socket = mnt.resolve("stats-42.sock");
        try (var daemon = silent(socket)) {
            for (String[] args : new String[][] {{mnt.toString()}, {"--json", mnt.toString()}, {"--watch=100ms", mnt.toString()}}) {
                java.io.StringWriter out = new java.io.StringWriter();
                java.io.StringWriter err = new java.io.StringWriter();
                int code = org.junit.jupiter.api.Assertions.assertTimeoutPreemptively(Duration.ofSeconds(20),
                        () -> run(new StatsCommand(mp -> new StatsCommand.Daemon(socket, 42), Duration.ofMillis(300)), out, err, args));
                assertEquals(ExitCodes.IO_ERROR, code, String.join(" ", args) + ": " + err);
                assertEquals("chibifs: the daemon of " + mnt + " (pid 42) does not answer (stopped? hung?)\n", err.toString());
                assertEquals("", out.toString());
            }
        }
    }

    /** What a daemon's stats socket gives, the least a frame shows. */
    static java.util.Map<String, Object> snapshot(long lookups) {
        java.util.Map<String, Object> denials = new java.util.LinkedHashMap<>();
        denials.put("bob", 100);
        denials.put("GUEST", 110);
        return java.util.Map.of("session", "FUSE 7.38", "denials", denials,
                "requests", java.util.List.of(java.util.Map.of("opcode", "LOOKUP", "count", lookups, "errors", 0, "totalMicros", 10)));
    }

    /** The notifications the daemon wrote, by kind: how its own changes heard back through the store are seen. */
    @Test
    void theNotificationsWrittenAreShownByKind() throws Exception {
        Path socket = mnt.resolve("stats-42.sock");
        java.util.Map<String, Object> frame = new java.util.HashMap<>(snapshot(1));
        java.util.Map<String, Object> notices = new java.util.LinkedHashMap<>();
        notices.put("INVAL_INODE", 3);
        notices.put("INVAL_ENTRY", 1);
        frame.put("notices", notices);
        try (StatsSocket daemon = StatsSocket.serve(socket, () -> frame)) {
            java.io.StringWriter out = new java.io.StringWriter();
            java.io.StringWriter err = new java.io.StringWriter();
            assertEquals(ExitCodes.OK, run(new StatsCommand(mp -> new StatsCommand.Daemon(socket, 42), Duration.ofSeconds(5)),
                    out, err, mnt.toString()), err.toString());
            assertTrue(out.toString().contains("\nnotifications: INVAL_INODE 3, INVAL_ENTRY 1\n"), out.toString());
        }
    }

    /** {@code stats --watch | head} ran on for ever once head had gone: it ends at the first frame it cannot write. */
    @Test
    void aWatchWhoseReaderHasGoneEnds() throws Exception {
        Path socket = mnt.resolve("stats-42.sock");
        try (StatsSocket daemon = StatsSocket.serve(socket, () -> snapshot(1))) {
            CommandLine cl = new CommandLine(new StatsCommand(mp -> new StatsCommand.Daemon(socket, 42), Duration.ofSeconds(5)));
            cl.setOut(TraceSocketTest.brokenPipe());
            cl.setErr(new java.io.PrintWriter(new java.io.StringWriter()));
            cl.setExecutionExceptionHandler(new ErrorHandler());
            int code = org.junit.jupiter.api.Assertions.assertTimeoutPreemptively(Duration.ofSeconds(10),
                    () -> cl.execute("--watch=100ms", mnt.toString()));
            assertEquals(ExitCodes.READER_GONE, code);
        }
    }

    /** Polls {@code text} until it holds {@code wanted}; the command runs on another thread. */
    private static void awaitText(java.io.StringWriter text, String wanted) {
        long until = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(10);
        while (!text.toString().contains(wanted)) {
            assertTrue(System.nanoTime() < until, "no '" + wanted + "' in: " + text);
            java.util.concurrent.locks.LockSupport.parkNanos(5_000_000);
        }
    }

    /**
     * --watch=10s showed nothing for 12 s, and a gone mount ended it with "No such file or directory":
     * the first frame comes at once, and the end says the mount is no longer served, exit 0 as trace.
     */
    @Test
    void aWatchShowsItsFirstFrameAtOnceAndSaysWhenTheMountIsGone() throws Exception {
        Path socket = mnt.resolve("stats-42.sock");
        java.io.StringWriter out = new java.io.StringWriter();
        java.io.StringWriter err = new java.io.StringWriter();
        java.util.concurrent.atomic.AtomicLong lookups = new java.util.concurrent.atomic.AtomicLong();
        StatsSocket daemon = StatsSocket.serve(socket, () -> snapshot(lookups.addAndGet(10)));
        try {
            StatsCommand watching = new StatsCommand(mp -> new StatsCommand.Daemon(socket, 42), Duration.ofSeconds(5));
            Thread hour = new Thread(() -> run(watching, out, err, "--watch=1h", mnt.toString()));
            hour.start();
            awaitText(out, "denials: bob 100, unmapped uids 110");
            assertTrue(out.toString().contains("LOOKUP                     10"), out.toString());
            hour.interrupt(); // an hour's interval: the first frame came before it
            hour.join();

            out.getBuffer().setLength(0);
            java.util.concurrent.CompletableFuture<Integer> watch = java.util.concurrent.CompletableFuture.supplyAsync(
                    () -> run(new StatsCommand(mp -> new StatsCommand.Daemon(socket, 42), Duration.ofSeconds(5)), out, err,
                            "--watch=100ms", mnt.toString()));
            awaitText(out, "requests per second over the last");
            daemon.close(); // unmounted: the socket goes
            assertEquals(ExitCodes.OK, watch.get(10, java.util.concurrent.TimeUnit.SECONDS));
            assertTrue(err.toString().endsWith("chibifs: " + mnt + " is no longer served\n"), err.toString());
            assertTrue(out.toString().contains("denials: bob 100, unmapped uids 110"), out.toString());
        } finally {
            daemon.close();
        }
    }
}
