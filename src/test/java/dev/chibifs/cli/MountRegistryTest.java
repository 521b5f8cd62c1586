package dev.chibifs.cli;

import dev.chibifs.fuse.MountTable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class MountRegistryTest {

    @TempDir
    Path tmp;

    private static MountRecord uidMapped(Path mountpoint, long pid) {
        return uidMapped(mountpoint, pid, Instant.parse("2025-01-02T03:04:05Z"));
    }

    private static MountRecord uidMapped(Path mountpoint, long pid, Instant started) {
        return new MountRecord(mountpoint, pid, MountRecord.MODE_UIDMAP, null, "1001=planner,1002=coder", 0,
                Path.of("/srv/chibi"), Path.of("/srv/chibi/vfs"), started, "allow_other,big_writes", "stderr");
    }

    private Path mountTable(Path... chibifsMountpoints) throws Exception {
        StringBuilder sb = new StringBuilder("/dev/vda / ext4 rw,relatime 0 0\n");
        for (Path mp : chibifsMountpoints) {
            sb.append("chibifs ").append(mp.toString().replace(" ", "\\040"))
                    .append(" fuse.chibifs rw,nosuid,nodev,relatime,user_id=0,group_id=0 0 0\n");
        }
        Path table = tmp.resolve("mounts");
        Files.writeString(table, sb);
        return table;
    }

    @Test
    void directoryFollowsTheRule() {
        assertEquals(Path.of("/run/chibifs"), MountRegistry.defaultDir(0, Map.of("XDG_RUNTIME_DIR", "/run/user/0")));
        assertEquals(Path.of("/run/user/1000/chibifs"),
                MountRegistry.defaultDir(1000, Map.of("XDG_RUNTIME_DIR", "/run/user/1000")));
        assertEquals(Path.of("/tmp/chibifs-1000"), MountRegistry.defaultDir(1000, Map.of()));
        assertEquals(Path.of("/srv/records"), MountRegistry.defaultDir(0, Map.of("CHIBIFS_RUNTIME_DIR", "/srv/records")));
        assertEquals(Path.of("/srv/records"), MountRegistry.defaultDir(1000,
                Map.of("CHIBIFS_RUNTIME_DIR", "/srv/records", "XDG_RUNTIME_DIR", "/run/user/1000")));
    }

    /**
     * Root's umount of a user's mount whose daemon was killed clears that user's record and the dead
     * daemon's sockets, nothing else: not a live daemon's record or sockets, not another mountpoint's.
     */
    @Test
    void removeStaleTakesOnlyTheDeadDaemonsRecordAndSockets() throws Exception {
        Path killed = tmp.resolve("killed");
        Path detached = tmp.resolve("detached");
        java.util.Set<Long> running = java.util.Set.of(4343L);
        MountRegistry registry = new MountRegistry(tmp.resolve("reg"), mountTable(), running::contains);
        registry.write(uidMapped(killed, 4242));
        registry.write(uidMapped(detached, 4343));
        for (String socket : List.of("stats-4242.sock", "sync-4242.sock", "trace-4242.sock", "stats-4343.sock")) {
            Files.writeString(registry.dir().resolve(socket), "");
        }

        assertEquals(4242L, registry.removeStale(killed));

        try (var files = Files.list(registry.dir())) {
            assertEquals(java.util.Set.of(registry.fileFor(detached).getFileName().toString(), "stats-4343.sock"),
                    files.map(f -> f.getFileName().toString()).collect(java.util.stream.Collectors.toSet()));
        }
        assertNull(registry.removeStale(detached), "a daemon that runs is no stale one");
        assertNull(registry.removeStale(killed), "nothing left");
    }

    @Test
    void keyIsTheStartOfTheSha256OfTheAbsolutePath() {
        // printf %s /mnt/chibi | sha256sum: the lead's daemon and any shell tool agree on it
        assertEquals("592c7ad843e0dc11", MountRegistry.key(Path.of("/mnt/chibi")));
        assertEquals(MountRegistry.key(Path.of("/mnt/chibi")), MountRegistry.key(Path.of("/mnt/x/../chibi")));
    }

    @Test
    void aRecordRemovedBetweenListingAndReadingIsLeftOutNotAFailure() throws Exception {
        Path mp = tmp.resolve("mnt");
        MountRegistry registry = new MountRegistry(tmp.resolve("reg"), mountTable(mp), pid -> true);
        registry.write(uidMapped(mp, 4242));
        // another mount's daemon exited after the directory was listed: its record is gone
        Path gone = registry.dir().resolve("0123456789abcdef" + ".properties");

        List<MountRegistry.Entry> entries = registry.entriesOf(List.of(gone, registry.fileFor(mp)));

        assertEquals(1, entries.size());
        assertEquals(mp, entries.get(0).record().mountpoint());
    }

    @Test
    void writtenRecordReadsBackActiveWhileMountedAndAlive() throws Exception {
        Path mp = tmp.resolve("mnt with space");
        MountRegistry registry = new MountRegistry(tmp.resolve("reg"), mountTable(mp), pid -> true);
        MountRecord record = uidMapped(mp, 4242);
        registry.write(record);

        List<MountRegistry.Entry> entries = registry.list();
        assertEquals(1, entries.size());
        assertEquals(MountRegistry.Health.ACTIVE, entries.get(0).health());
        assertEquals(record, entries.get(0).record());
        assertEquals(registry.fileFor(mp), entries.get(0).file());
        try (var files = Files.list(registry.dir())) {
            assertEquals(1, files.count(), "no temporary file is left beside the record");
        }

        registry.remove(mp, 4242);
        assertTrue(registry.list().isEmpty());
        registry.remove(mp, 4242);
    }

    /**
     * A daemon unmounted lazily (detached, serving the files open on it) and a new mount of its
     * mountpoint: the new record wrote over the detached one, which status then hid, and the detached
     * daemon's exit removed the new mount's record, so status, stats and sync lost it (a tester's
     * finding). Both are kept, and each daemon removes its own.
     */
    @Test
    void aNewMountBesideADetachedDaemonOfItsMountpointKeepsBothRecords() throws Exception {
        Path mp = tmp.resolve("m");
        java.util.Set<Long> running = new java.util.HashSet<>(List.of(4242L, 4343L));
        MountRegistry registry = new MountRegistry(tmp.resolve("reg"), mountTable(mp), running::contains);
        registry.write(uidMapped(mp, 4242));
        registry.write(uidMapped(mp, 4343));
        assertEquals(List.of(4242L, 4343L), registry.list().stream().map(e -> e.record().pid()).sorted().toList());

        registry.remove(mp, 4242); // the detached daemon exits
        assertEquals(List.of(4343L), registry.list().stream().map(e -> e.record().pid()).toList());
        running.remove(4343L);
        running.add(4444L);
        registry.write(uidMapped(mp, 4444)); // a dead daemon's record is written over, as before
        registry.removeDead(mp);
        assertEquals(List.of(4444L), registry.list().stream().map(e -> e.record().pid()).toList());
    }

    /** A fifo among the records hung chibifs status in open(2). */
    @Test
    void aRecordThatIsNoRegularFileIsUnreadableAtOnce() throws Exception {
        MountRegistry registry = new MountRegistry(tmp.resolve("reg"), mountTable(tmp.resolve("m")), pid -> true);
        registry.write(uidMapped(tmp.resolve("m"), 4242));
        Files.delete(registry.fileFor(tmp.resolve("m")));
        dev.chibifs.testing.OddFiles.fifo(registry.fileFor(tmp.resolve("m")));
        List<MountRegistry.Entry> entries = org.junit.jupiter.api.Assertions.assertTimeoutPreemptively(
                dev.chibifs.testing.OddFiles.PROMPTLY, registry::list);
        assertEquals(MountRegistry.Health.UNREADABLE, entries.get(0).health());
    }

    @Test
    void deadPidIsStaleAndALiveDaemonWithoutItsMountIsDetached() throws Exception {
        Path mounted = tmp.resolve("a");
        Path notMounted = tmp.resolve("b");
        MountRegistry registry = new MountRegistry(tmp.resolve("reg"), mountTable(mounted), pid -> pid != 1);
        registry.write(uidMapped(mounted, 1));
        registry.write(new MountRecord(notMounted, 2, MountRecord.MODE_CONTEXT, "planner", "", null,
                Path.of("/h"), Path.of("/h/vfs"), Instant.now(), "", "/h/chibifs/mount.log"));

        List<MountRegistry.Entry> entries = registry.list();
        assertEquals(MountRegistry.Health.STALE, entries.get(0).health());
        assertEquals("pid 1 is not running", entries.get(0).detail());
        assertEquals(MountRegistry.Health.DETACHED, entries.get(1).health(), "umount --lazy with files open");
        assertEquals(notMounted + " is unmounted; pid 2 still serves the files open on it and exits when the last"
                + " is closed", entries.get(1).detail());
    }

    /** A stopped daemon whose mount a plain umount took serves nothing: status said it did. */
    @Test
    void aStoppedDaemonWithoutItsMountIsSaidStoppedWithItsFixes() throws Exception {
        Path notMounted = tmp.resolve("b");
        Process sleeper = new ProcessBuilder("sleep", "60").start();
        try {
            new ProcessBuilder("kill", "-STOP", Long.toString(sleeper.pid())).start().waitFor();
            // the signal is queued when kill returns; the process stops when next scheduled
            long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(10);
            while (!dev.chibifs.sys.ProcStatus.stopped(sleeper.pid()) && System.nanoTime() < deadline) {
                Thread.onSpinWait();
            }
            MountRegistry registry = new MountRegistry(tmp.resolve("reg"), mountTable(tmp.resolve("a")), pid -> true);
            registry.write(new MountRecord(notMounted, sleeper.pid(), MountRecord.MODE_CONTEXT, "planner", "", null,
                    Path.of("/h"), Path.of("/h/vfs"), Instant.now(), "", "/h/chibifs/mount.log"));
            MountRegistry.Entry e = registry.list().get(0);
            assertEquals(MountRegistry.Health.DETACHED, e.health());
            assertEquals(notMounted + " is unmounted; pid " + sleeper.pid() + " is stopped (SIGSTOP, or a debugger), the files"
                    + " open on it waiting: kill -CONT " + sleeper.pid() + ", or chibifs umount --force " + notMounted
                    + " ends it", e.detail());
        } finally {
            sleeper.destroyForcibly();
        }
    }

    /** A killed daemon's pid given to a later process must not make its record look alive. */
    @Test
    void aPidRunsTheDaemonOfARecordOnlyIfItsProcessStartedBeforeTheRecord() {
        ProcessHandle self = ProcessHandle.current();
        Instant started = self.info().startInstant().orElseThrow();
        assertTrue(MountRegistry.runsDaemonOf(uidMapped(tmp, self.pid(), started.plusSeconds(1))));
        assertFalse(MountRegistry.runsDaemonOf(uidMapped(tmp, self.pid(), started.minusSeconds(60))),
                "this process started a minute after the record was written: its pid was reused");
    }

    @Test
    void unreadableFileIsReportedNotThrown() throws Exception {
        MountRegistry registry = new MountRegistry(tmp.resolve("reg"), mountTable(), pid -> true);
        Files.createDirectories(registry.dir());
        Files.writeString(registry.dir().resolve("0123456789abcdef.properties"), "mountpoint=/x\npid=oops\n");

        MountRegistry.Entry entry = registry.list().get(0);
        assertEquals(MountRegistry.Health.UNREADABLE, entry.health());
        assertNull(entry.record());
        assertEquals("pid: not a number: oops", entry.detail());
    }

    /**
     * A registry directory others may write, or another user made, is believed in nothing: a tester
     * made /tmp/chibifs-<uid> of another user's first and planted records and sockets, which that
     * user's status, sync, stats, trace and umount then believed. A mount refuses to use it.
     */
    @Test
    void aRegistryOthersMayWriteIsNotBelievedAndAMountRefusesAnotherUsers() throws Exception {
        Path mp = tmp.resolve("m");
        MountRegistry registry = new MountRegistry(tmp.resolve("reg"), mountTable(mp), pid -> true);
        registry.write(uidMapped(mp, 4242));
        assertEquals("rwx------", java.nio.file.attribute.PosixFilePermissions.toString(
                Files.getPosixFilePermissions(registry.dir())), "the owner's alone, whatever the umask");
        Files.setPosixFilePermissions(registry.dir(), java.nio.file.attribute.PosixFilePermissions.fromString("rwxrwxrwx"));
        List<MountRegistry.Entry> entries = registry.list();
        assertEquals(1, entries.size());
        assertEquals(MountRegistry.Health.UNREADABLE, entries.get(0).health());
        assertNull(entries.get(0).record());
        assertEquals("not believed: " + registry.dir() + " may be written by other users (mode 0777)", entries.get(0).detail());
        registry.prepare(); // its own: made the owner's alone again
        assertEquals(MountRegistry.Health.ACTIVE, registry.list().get(0).health());

        org.junit.jupiter.api.Assumptions.assumeTrue(MountRegistry.currentUid() == 0, "chown needs root");
        Files.setAttribute(registry.fileFor(mp), "unix:uid", 4242);
        assertEquals("not believed: written by uid 4242, not by the registry's owner, uid 0", registry.list().get(0).detail());
        Files.setAttribute(registry.dir(), "unix:uid", 4242);
        assertTrue(registry.list().get(0).detail().startsWith("not believed: " + registry.dir() + " belongs to uid 4242"));
        java.io.IOException refused = assertThrows(java.io.IOException.class, registry::prepare);
        assertTrue(refused.getMessage().startsWith("registry " + registry.dir() + " belongs to uid 4242, not to this user"
                + " (uid 0): another user made it"), refused.getMessage());
    }

    /**
     * A record is believed only for a mount its registry's owner made, and never through a link: a
     * tester's record in their own registry named another user's mountpoint, and root's sync, stats
     * and trace of it asked the tester's program; a link as a record had root read any file.
     */
    @Test
    void aRecordOfAnotherUsersMountOrALinkedOneIsNotBelieved() throws Exception {
        Path mine = tmp.resolve("mine");
        Path theirs = tmp.resolve("theirs");
        Path table = tmp.resolve("mounts");
        Files.writeString(table, "chibifs " + mine + " fuse.chibifs rw,user_id=" + MountRegistry.currentUid() + ",group_id=0 0 0\n"
                + "chibifs " + theirs + " fuse.chibifs rw,user_id=4242,group_id=4242 0 0\n");
        MountRegistry registry = new MountRegistry(tmp.resolve("reg"), table, pid -> true);
        registry.write(uidMapped(mine, 1));
        registry.write(uidMapped(theirs, 2));
        Path secret = Files.writeString(tmp.resolve("secret"), "mode=uidmap\n");
        Files.createSymbolicLink(registry.dir().resolve("0000000000000000.properties"), secret);
        List<MountRegistry.Entry> entries = registry.list();
        assertEquals(3, entries.size(), entries.toString());
        MountRegistry.Entry link = entries.stream().filter(e -> e.file().getFileName().toString().startsWith("0000")).findFirst().orElseThrow();
        assertEquals("not believed: a symbolic link", link.detail());
        assertEquals(MountRegistry.Health.ACTIVE, entries.stream().filter(e -> e.record() != null
                && e.record().mountpoint().equals(mine)).findFirst().orElseThrow().health());
        MountRegistry.Entry other = entries.stream().filter(e -> e.file().equals(registry.fileFor(theirs))).findFirst().orElseThrow();
        assertEquals(MountRegistry.Health.UNREADABLE, other.health());
        assertNull(other.record());
        assertEquals("not believed: " + theirs + " is uid 4242's mount, not uid " + MountRegistry.currentUid() + "'s", other.detail());
    }

    @Test
    void refusesARegistryDirectoryThatIsALink() throws Exception {
        Path real = Files.createDirectory(tmp.resolve("real"));
        Path link = Files.createSymbolicLink(tmp.resolve("reg"), real);
        MountRegistry registry = new MountRegistry(link, mountTable(), pid -> true);
        assertThrows(java.io.IOException.class, () -> registry.write(uidMapped(tmp.resolve("m"), 1)));
    }

    @Test
    void mountTableEscapesAreUndone() {
        assertEquals("/mnt/a b\\c", MountTable.unescape("/mnt/a\\040b\\134c"));
        assertEquals("/mnt/plain", MountTable.unescape("/mnt/plain"));
    }
    @Test
    void aStartingMountRemovesTheSocketsOfDaemonsThatAreGone() throws Exception {
        Path reg = tmp.resolve("reg");
        Files.createDirectories(reg);
        for (String name : List.of("stats-11.sock", "sync-11.sock", "trace-11.sock", "stats-22.sock", "other-11.sock")) {
            Files.createFile(reg.resolve(name));
        }
        StatsSocket.removeDeadDaemons(new MountRegistry(reg, mountTable(), pid -> pid == 22));
        try (var left = Files.list(reg)) {
            assertEquals(List.of("other-11.sock", "stats-22.sock"), left.map(p -> p.getFileName().toString()).sorted().toList(),
                    "killed daemon 11's three go; live 22's and what is not a daemon's stay");
        }
    }
    /** A killed daemon nobody reaps (a container's init) is a zombie: not running, whatever isAlive says. */
    @Test
    @org.junit.jupiter.api.Timeout(20)
    void aZombieIsNotRunning() throws Exception {
        // The child exits at once and its parent never waits for it. Perl (essential on Debian)
        // rather than sh: a shell may reap its background job before it execs the sleeper.
        Process parent = new ProcessBuilder("perl", "-e",
                "$| = 1; my $child = fork(); exit 0 if $child == 0; print \"$child\\n\"; sleep 5").start();
        try {
            long zombie = Long.parseLong(new java.io.BufferedReader(
                    new java.io.InputStreamReader(parent.getInputStream())).readLine().trim());
            Path stat = Path.of("/proc", Long.toString(zombie), "stat");
            while (!Files.readString(stat).contains(") Z ")) {
                Thread.onSpinWait(); // it exits within moments of its start
            }
            assertTrue(ProcessHandle.of(zombie).map(ProcessHandle::isAlive).orElse(false), "the JDK counts it alive");
            assertFalse(MountRegistry.running(zombie));
            assertTrue(MountRegistry.running(ProcessHandle.current().pid()));
        } finally {
            parent.destroy();
        }
    }
}
