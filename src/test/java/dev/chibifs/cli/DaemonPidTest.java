package dev.chibifs.cli;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A daemon in a pid namespace of its own records a pid its registry's readers can use, or one they never act on. */
class DaemonPidTest {

    private static final String HOST = "pid:[4026531836]";
    private static final String INNER = "pid:[4026532999]";

    @TempDir
    Path tmp;

    /** /proc as a test has it: each pid's status text and pid namespace. */
    private static DaemonPid.Proc proc(Map<String, String> status, Map<String, String> namespace) {
        return new DaemonPid.Proc() {
            @Override
            public Optional<String> status(String pid) {
                return Optional.ofNullable(status.get(pid));
            }

            @Override
            public Optional<String> pidNamespace(String pid) {
                return Optional.ofNullable(namespace.get(pid));
            }
        };
    }

    private static String status(String nspid) {
        return "Name:\tjava\nState:\tS (sleeping)\nPid:\t1\nNSpid:\t" + nspid + "\nNSpgid:\t1\n";
    }

    @Test
    void nspidListsThePidOfEveryNamespaceOutermostFirst() {
        assertEquals(List.of(52311L, 1L), DaemonPid.nspid(status("52311\t1")));
        assertEquals(List.of(812L), DaemonPid.nspid(status("812")));
        assertEquals(List.of(9L, 4L, 1L), DaemonPid.nspid("NSpid:   9 4  1\n"));
        assertEquals(List.of(), DaemonPid.nspid("Name:\tjava\nPid:\t77\n"), "Linux before 4.1 has no NSpid");
        assertEquals(List.of(), DaemonPid.nspid("NSpid:\tx\n"));
    }

    /** unshare -p -f, the host's /proc kept: the daemon is 1 inside, 52311 on the host, and records 52311. */
    @Test
    void aDaemonInItsOwnPidNamespaceRecordsItsPidAsTheHostSeesIt() {
        DaemonPid.Identity me = DaemonPid.current(proc(Map.of("self", status("52311\t1")), Map.of("self", INNER)), 1);
        assertEquals(new DaemonPid.Identity(52311, INNER, 1), me);
        DaemonPid.Identity host = DaemonPid.current(proc(Map.of("self", status("812")), Map.of("self", HOST)), 812);
        assertEquals(new DaemonPid.Identity(812, HOST, 812), host);
        DaemonPid.Identity old = DaemonPid.current(proc(Map.of(), Map.of()), 812);
        assertEquals(new DaemonPid.Identity(812, null, 812), old);
    }

    private static MountRecord record(long pid, String namespace, long namespacePid) {
        return record(Path.of("/m"), pid, namespace, namespacePid);
    }

    private static MountRecord record(Path mp, long pid, String namespace, long namespacePid) {
        return new MountRecord(mp, pid, MountRecord.MODE_CONTEXT, "carol", "", null, Path.of("/h"),
                Path.of("/h/vfs"), Instant.parse("2026-01-02T03:04:05Z"), "", "stderr", null, null, namespace, namespacePid);
    }

    @Test
    void aPidIsBelievedOnlyInTheDaemonsNamespaceAsTheDaemon() {
        // the host reads the record of a daemon that kept the host's /proc: 52311 is 1 in INNER, as recorded
        DaemonPid.Proc host = proc(Map.of("52311", status("52311\t1"), "1", status("1")),
                Map.of("52311", INNER, "1", HOST));
        assertNull(DaemonPid.doubt(record(52311, INNER, 1), host));
        // a daemon with a /proc of its own could record only 1: on the host that is init, never the daemon
        String init = DaemonPid.doubt(record(1, INNER, 1), host);
        assertNotNull(init);
        assertTrue(init.contains(INNER) && init.contains(HOST), init);
        // the daemon's pid namespace, but its pid there is another process's now
        assertNotNull(DaemonPid.doubt(record(52311, INNER, 7), host));
        // a namespace link the reader may not read (another user's init) proves nothing
        assertNotNull(DaemonPid.doubt(record(1, INNER, 1), proc(Map.of("1", status("1")), Map.of())));
    }

    @Test
    void aGonePidOrAnOlderRecordIsLeftToTheLivenessCheck() {
        DaemonPid.Proc empty = proc(Map.of(), Map.of());
        assertNull(DaemonPid.doubt(record(52311, INNER, 1), empty), "no such process: stale, as before");
        MountRecord older = new MountRecord(Path.of("/m"), 1, MountRecord.MODE_CONTEXT, "carol", "", null, Path.of("/h"),
                Path.of("/h/vfs"), Instant.parse("2026-01-02T03:04:05Z"), "", "stderr");
        assertNull(DaemonPid.doubt(older, proc(Map.of("1", status("1")), Map.of("1", HOST))));
    }

    /** status and umount read the registry: a record whose pid cannot be vouched for is not believed, so nothing acts on it. */
    @Test
    void theRegistryBelievesNoRecordWhosePidItCannotVouchFor() throws Exception {
        Path mp = tmp.resolve("m4");
        Path table = tmp.resolve("mounts");
        Files.writeString(table, "chibifs " + mp + " fuse.chibifs rw,nosuid,nodev,user_id=0,group_id=0 0 0\n");
        DaemonPid.Proc host = proc(Map.of("52311", status("52311\t1"), "1", status("1")), Map.of("52311", INNER, "1", HOST));
        MountRegistry registry = new MountRegistry(tmp.resolve("reg"), table, pid -> true, host);

        registry.write(record(mp, 1, INNER, 1));
        MountRegistry.Entry entry = registry.list().get(0);
        assertEquals(MountRegistry.Health.UNREADABLE, entry.health());
        assertNull(entry.record(), "no pid for umount to wait on or kill");
        assertTrue(entry.detail().startsWith("not believed: pid 1 here is a process of " + HOST), entry.detail());

        registry.write(record(mp, 52311, INNER, 1));
        assertEquals(MountRegistry.Health.ACTIVE, registry.list().get(0).health());
        assertEquals(52311, registry.list().get(0).record().pid());
    }

    @Test
    void aRecordKeepsItsPidNamespace() {
        MountRecord r = record(52311, INNER, 1);
        assertEquals(r, MountRecord.fromProperties(r.toProperties()));
        MountRecord older = new MountRecord(Path.of("/m"), 77, MountRecord.MODE_CONTEXT, "carol", "", null, Path.of("/h"),
                Path.of("/h/vfs"), Instant.parse("2026-01-02T03:04:05Z"), "", "stderr");
        MountRecord read = MountRecord.fromProperties(older.toProperties());
        assertNull(read.pidNamespace());
        assertEquals(77, read.namespacePid());
    }
}
