package dev.chibifs.cli;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Every check against a host made of real temporary files, so each can be made to fail on its own. */
class DoctorCommandTest {

    @TempDir
    Path tmp;

    private final StringWriter out = new StringWriter();

    private Path home;
    private Path mountTable;
    private Path fuseConf;
    private Path binDir;
    private Path procStatus;

    /** A host on which every check passes: /dev/null stands in for the fuse device (both are character devices). */
    private DoctorCommand.Host healthyHost(int uid) throws Exception {
        home = Files.createDirectories(tmp.resolve("home"));
        Files.createDirectories(home.resolve("vfs"));
        mountTable = Files.writeString(tmp.resolve("mounts"), "/dev/vda / ext4 rw 0 0\n");
        fuseConf = Files.writeString(tmp.resolve("fuse.conf"), "# mount_max = 1000\nuser_allow_other\n");
        binDir = Files.createDirectories(tmp.resolve("bin"));
        Path fusermount = Files.writeString(binDir.resolve("fusermount3"), "#!/bin/sh\n");
        // the JDK cannot set the setuid bit
        assertEquals(0, new ProcessBuilder("chmod", "4755", fusermount.toString()).start().waitFor());
        // root's full capability set, as /proc/self/status shows it
        procStatus = Files.writeString(tmp.resolve("status"), "Name:\tjava\nCapInh:\t0000000000000000\n"
                + "CapEff:\t000001ffffffffff\nCapBnd:\t000001ffffffffff\n");
        return new DoctorCommand.Host(Path.of("/dev/null"), List.of(binDir), fuseConf, procStatus, mountTable,
                new MountRegistry(tmp.resolve("registry"), mountTable, pid -> true), uid, Map.of());
    }

    private int doctor(DoctorCommand.Host host, String... args) {
        List<String> all = new ArrayList<>(List.of("--home", home.toString()));
        all.addAll(List.of(args));
        CommandLine cl = new CommandLine(new DoctorCommand(host));
        cl.setOut(new PrintWriter(out));
        return cl.execute(all.toArray(String[]::new));
    }

    private DoctorCommand.Host withDevice(DoctorCommand.Host h, Path device) {
        return new DoctorCommand.Host(device, h.searchPath(), h.fuseConf(), h.procStatus(), h.mountTable(),
                h.registry(), h.uid(), h.env());
    }

    private void assertFailed(String check, String fixFragment) {
        String text = out.toString();
        int at = text.indexOf("FAIL " + check);
        assertTrue(at >= 0, "expected FAIL " + check + " in:\n" + text);
        String fixLine = text.substring(at).lines().skip(1).findFirst().orElse("");
        assertTrue(fixLine.startsWith("     fix: ") && fixLine.contains(fixFragment), fixLine);
    }

    /** doctor passed --uid-map abc ("OK subordinate uids: not checked") and -o bogus, which mount refuses. */
    @Test
    void aUidMapOrFuseOptionMountRefusesDoctorRefusesAlike() throws Exception {
        healthyHost(1000);
        Cli cli = new Cli(home);
        for (String[] bad : new String[][] {{"--uid-map", "abc"}, {"--uid-map", "1001=planner,"}, {"-o", "bogus"},
            {"-o", "entry_timeout=x"}}) {
            Cli.Result mount = bad[0].equals("-o")
                    ? cli.run("mount", "--context", "planner", bad[0], bad[1], tmp.resolve("mnt").toString())
                    : cli.run("mount", bad[0], bad[1], tmp.resolve("mnt").toString());
            assertEquals(ExitCodes.USAGE, mount.code(), mount.toString());
            Cli.Result doctor = cli.run("doctor", bad[0], bad[1]);
            assertEquals(ExitCodes.USAGE, doctor.code(), doctor.toString());
            assertEquals("", doctor.out(), "no checks run");
            assertEquals(1, doctor.err().lines().count(), doctor.err());
            assertEquals(mount.err(), doctor.err(), "mount's words");
        }
    }

    @Test
    void allChecksPassOnAHealthyHost() throws Exception {
        Path mp = Files.createDirectory(tmp.resolve("mnt"));
        assertEquals(0, doctor(healthyHost(1000), "--uid-map", "1001=planner", mp.toString()), out.toString());
        String text = out.toString();
        assertFalse(text.contains("FAIL"), text);
        assertTrue(text.contains("OK   user_allow_other: set in " + fuseConf), text);
        assertTrue(text.contains("OK   mount permission: uid 1000 mounts through the setuid " + binDir.resolve("fusermount3")), text);
        assertTrue(text.endsWith("14 checks, 0 failed\n"), text);
        try (var left = Files.list(home.resolve("vfs"))) {
            assertEquals(0, left.count(), "the store probes leave nothing behind");
        }
    }

    @Test
    void missingDeviceFails() throws Exception {
        DoctorCommand.Host host = withDevice(healthyHost(0), tmp.resolve("no-such-fuse"));
        assertEquals(1, doctor(host));
        assertFailed("fuse device " + tmp.resolve("no-such-fuse") + ": missing", "modprobe fuse");
        assertTrue(out.toString().endsWith("1 failed\n"), out.toString());
    }

    @Test
    void deviceThatIsAPlainFileFails() throws Exception {
        Path plain = Files.writeString(tmp.resolve("fuse"), "");
        assertEquals(1, doctor(withDevice(healthyHost(0), plain)));
        assertFailed("fuse device " + plain + ": not a character device", "mknod");
    }

    @Test
    void aUserWithoutFusermountFailsRootOnlyWhenAutoUnmountNeedsIt() throws Exception {
        Path empty = Files.createDirectory(tmp.resolve("empty"));
        DoctorCommand.Host user = healthyHost(1000);
        user = new DoctorCommand.Host(user.fuseDevice(), List.of(empty), user.fuseConf(), user.procStatus(),
                user.mountTable(), user.registry(), user.uid(), user.env());
        assertEquals(1, doctor(user));
        assertFailed("fusermount: neither fusermount3 nor fusermount on [" + empty + "], and uid 1000 mounts through it",
                "apt-get install fuse3");
        assertFalse(out.toString().contains("mount permission"), "one verdict, not an OK after the FAIL: " + out);

        out.getBuffer().setLength(0);
        DoctorCommand.Host root = new DoctorCommand.Host(user.fuseDevice(), List.of(empty), user.fuseConf(),
                user.procStatus(), user.mountTable(), user.registry(), 0, user.env());
        assertEquals(0, doctor(root), out.toString());
        assertTrue(out.toString().contains("OK   fusermount: none, and root mounts without it (mount(2))"), out.toString());
        assertTrue(out.toString().contains("OK   mount permission: uid 0 has CAP_SYS_ADMIN: mount(2)"), out.toString());

        out.getBuffer().setLength(0);
        assertEquals(1, doctor(root, "-o", "auto_unmount"));
        assertFailed("fusermount: neither fusermount3 nor fusermount on [" + empty + "], and auto_unmount needs it",
                "apt-get install fuse3");
    }

    @Test
    void theSearchPathListsEachDirectoryOnce() {
        assertEquals(List.of(Path.of("/opt/bin"), Path.of("/usr/bin"), Path.of("/bin"), Path.of("/usr/local/sbin"),
                        Path.of("/usr/local/bin"), Path.of("/usr/sbin"), Path.of("/sbin")),
                DoctorCommand.Host.searchPath("/opt/bin:/usr/bin::/bin:/usr/bin/"));
    }

    @Test
    void autoUnmountFailsWhereTheRootIsNoMountPoint() throws Exception {
        DoctorCommand.Host root = healthyHost(0);
        assertEquals(0, doctor(root, "-o", "auto_unmount"), out.toString());
        // a chroot into a directory: its mount table shows what was mounted inside it, never /
        Files.writeString(mountTable, "proc /proc proc rw 0 0\n");
        out.getBuffer().setLength(0);
        assertEquals(1, doctor(root, "-o", "auto_unmount"));
        assertFailed("fusermount: -o auto_unmount: " + binDir.resolve("fusermount3") + " cannot unmount here: / is not a mount point",
                "mount --rbind DIR DIR");
        out.getBuffer().setLength(0);
        assertEquals(0, doctor(root), "without auto_unmount nothing needs it:\n" + out);
    }

    @Test
    void fusermountOfFuse2IsFoundWhenThereIsNoFusermount3() throws Exception {
        DoctorCommand.Host host = healthyHost(1000);
        Files.move(binDir.resolve("fusermount3"), binDir.resolve("fusermount"));
        assertEquals(0, doctor(host), out.toString());
        assertTrue(out.toString().contains("OK   fusermount: " + binDir.resolve("fusermount") + "\n"), out.toString());
    }

    @Test
    void fusermountWithoutSetuidFailsForAUser() throws Exception {
        DoctorCommand.Host host = healthyHost(1000);
        Files.setPosixFilePermissions(binDir.resolve("fusermount3"), PosixFilePermissions.fromString("rwxr-xr-x"));
        assertEquals(1, doctor(host));
        assertFailed("fusermount", "chmod u+s");
    }

    @Test
    void rootWithoutCapSysAdminCannotMount() throws Exception {
        DoctorCommand.Host root = healthyHost(0);
        // Docker's default set: CAP_SYS_ADMIN (bit 21) is not in it
        Files.writeString(procStatus, "Name:\tjava\nCapEff:\t00000000a80425fb\n");
        assertEquals(1, doctor(root));
        assertFailed("mount permission: uid 0 lacks CAP_SYS_ADMIN (CapEff 00000000a80425fb), so mount(2) is refused",
                "--cap-add SYS_ADMIN");

        out.getBuffer().setLength(0);
        DoctorCommand.Host user = new DoctorCommand.Host(root.fuseDevice(), root.searchPath(), root.fuseConf(),
                root.procStatus(), root.mountTable(), root.registry(), 1000, root.env());
        assertEquals(0, doctor(user), "a user mounts through fusermount, whatever its own capabilities: " + out);
    }

    @Test
    void uidMapWithoutUserAllowOtherFailsForAUserOnly() throws Exception {
        DoctorCommand.Host user = healthyHost(1000);
        Files.writeString(fuseConf, "#user_allow_other\n");
        assertEquals(0, doctor(user), "no uid map, no need: " + out);
        assertEquals(1, doctor(user, "--uid-map", "1001=planner"));
        assertFailed("user_allow_other", "provision.sh --allow-other");

        out.getBuffer().setLength(0);
        DoctorCommand.Host root = new DoctorCommand.Host(user.fuseDevice(), user.searchPath(), user.fuseConf(),
                user.procStatus(), user.mountTable(), user.registry(), 0, user.env());
        assertEquals(0, doctor(root, "-o", "allow_other"), out.toString());
        assertTrue(out.toString().contains("OK   user_allow_other: not needed as root"), out.toString());
    }

    /** -o allow_other alone was blamed on "a uid map" no one gave: the line names what asked for it. */
    @Test
    void allowOtherWithoutUserAllowOtherNamesTheOption() throws Exception {
        DoctorCommand.Host user = healthyHost(1000);
        Files.writeString(fuseConf, "#user_allow_other\n");
        assertEquals(1, doctor(user, "-o", "ro,allow_other"));
        assertFailed("user_allow_other: -o allow_other needs user_allow_other, and " + fuseConf
                + " does not allow it for uid 1000", "provision.sh --allow-other");

        out.getBuffer().setLength(0);
        assertEquals(1, doctor(user, "--uid-map", "1001=planner"));
        assertFailed("user_allow_other: a uid map needs allow_other, and " + fuseConf, "provision.sh --allow-other");
    }

    @Test
    void aMissingStoreThatMountCanCreatePasses() throws Exception {
        DoctorCommand.Host host = healthyHost(0);
        Files.delete(home.resolve("vfs"));
        assertEquals(0, doctor(host), out.toString());
        assertTrue(out.toString().contains("OK   store " + home.resolve("vfs") + ": absent; chibifs mount creates it"),
                out.toString());
        assertFalse(Files.exists(home.resolve("vfs")), "doctor must not create the store itself");
    }

    @Test
    void aMissingStoreThatCannotBeCreatedFails() throws Exception {
        DoctorCommand.Host host = healthyHost(0);
        Path store = Path.of("/proc/chibifs-doctor-test/vfs");
        home = store.getParent();
        assertEquals(1, doctor(host));
        assertFailed("store " + store + ": absent, and cannot be created in /proc", "mkdir -p " + store);
    }

    /** A store on a read-only mount is said to be that, not blamed on the kind of its file system. */
    @Test
    void aStoreOnAReadOnlyMountFailsAsThat() throws Exception {
        dev.chibifs.testing.FuseSupport.requireRoot();
        DoctorCommand.Host host = healthyHost(0);
        Path store = home.resolve("vfs");
        dev.chibifs.testing.Sh.run("mount --bind '" + store + "' '" + store + "' && mount -o remount,bind,ro '" + store + "'").ok();
        try {
            assertEquals(1, doctor(host));
            assertTrue(out.toString().contains(store + " is on a read-only mount"), out.toString());
            assertFalse(out.toString().contains("put the store on ext4"), out.toString());
            assertFalse(out.toString().contains("chown"), "no owner makes a read-only mount writable: " + out);
        } finally {
            dev.chibifs.testing.Sh.run("umount -l '" + store + "'");
        }
    }

    @Test
    void unwritableStoreFails() throws Exception {
        DoctorCommand.Host host = healthyHost(0);
        Path store = home.resolve("vfs");
        if (MountRegistry.currentUid() == 0) {
            // root ignores permission bits; sysfs refuses new files even to root
            Files.delete(store);
            Files.createSymbolicLink(store, Path.of("/sys"));
        } else {
            Files.setPosixFilePermissions(store, PosixFilePermissions.fromString("r-xr-xr-x"));
        }
        assertEquals(1, doctor(host));
        assertFailed("store writable: cannot create a file in " + store, "choose a writable --home");
        if (Files.isSymbolicLink(store)) {
            Files.delete(store); // so the temp dir cleanup does not warn about a link leading out of it
        }
    }

    @Test
    void badConfigFails() throws Exception {
        DoctorCommand.Host host = healthyHost(0);
        Files.writeString(home.resolve("config.toml"), "[vfs]\nbackend = \"xmpp\"\n");
        assertEquals(1, doctor(host));
        assertFailed("config " + home.resolve("config.toml") + ": line 2: [vfs] backend: unknown VFS backend 'xmpp'",
                "move the file aside");

        out.getBuffer().setLength(0);
        Files.writeString(home.resolve("config.toml"), "[vfs\nbackend = \n");
        assertEquals(1, doctor(host));
        assertFailed("config " + home.resolve("config.toml") + ": line 1: malformed TOML", "fix what is named above");

        // what every other command refuses, doctor does not pass: a wrong type too
        out.getBuffer().setLength(0);
        Files.writeString(home.resolve("config.toml"), "tool_cache_max_age_days = \"seven\"\n");
        assertEquals(1, doctor(host));
        assertFailed("config " + home.resolve("config.toml") + ": line 1: tool_cache_max_age_days: expected a"
                + " non-negative integer", "move the file aside");
    }

    /** doctor hung on a fifo config.toml and ran out of memory on a link to /dev/zero. */
    @Test
    void aConfigThatIsNoRegularFileFailsAtOnceNamingTheRule() throws Exception {
        DoctorCommand.Host host = healthyHost(0);
        Path config = dev.chibifs.testing.OddFiles.fifo(home.resolve("config.toml"));
        assertEquals(1, (int) org.junit.jupiter.api.Assertions.assertTimeoutPreemptively(
                dev.chibifs.testing.OddFiles.PROMPTLY, () -> doctor(host)));
        assertFailed("config " + config + ": cannot read: " + dev.chibifs.config.HomeFile.NOT_REGULAR, "move the file aside");
        out.getBuffer().setLength(0);
        Files.delete(config);
        Files.createSymbolicLink(config, Path.of("/dev/zero"));
        assertEquals(1, (int) org.junit.jupiter.api.Assertions.assertTimeoutPreemptively(
                dev.chibifs.testing.OddFiles.PROMPTLY, () -> doctor(host)));
        assertFailed("config " + config + ": cannot read: " + dev.chibifs.config.HomeFile.NOT_REGULAR, "move the file aside");
        Files.delete(config); // so the temp dir cleanup does not warn about a link leading out of it
    }

    @Test
    void staleRegistryEntryFails() throws Exception {
        DoctorCommand.Host h = healthyHost(0);
        MountRegistry deadPids = new MountRegistry(tmp.resolve("registry"), mountTable, pid -> false);
        deadPids.write(new MountRecord(Path.of("/mnt/gone"), 77, MountRecord.MODE_CONTEXT, "planner", "", null,
                home, home.resolve("vfs"), Instant.now(), "", "stderr"));
        DoctorCommand.Host host = new DoctorCommand.Host(h.fuseDevice(), h.searchPath(), h.fuseConf(), h.procStatus(),
                h.mountTable(), deadPids, h.uid(), h.env());
        assertEquals(1, doctor(host));
        assertFailed("registry " + tmp.resolve("registry") + ": stale", "chibifs umount /mnt/gone");
    }

    /**
     * A mount status calls stale (its record's daemon gone, its mount still there) fails doctor too,
     * whatever the probe says: root's probe of a user's mount without allow_other met EACCES from
     * the kernel, dead daemon or not, and doctor said "stale mounts: none" beside status's "stale".
     */
    @Test
    void aMountStatusCallsStaleFailsTheStaleMountsCheck() throws Exception {
        DoctorCommand.Host h = healthyHost(0);
        Path mp = Files.createDirectory(tmp.resolve("killed"));
        long me = MountRegistry.currentUid();
        Files.writeString(mountTable, "chibifs " + mp + " fuse.chibifs rw,nosuid,nodev,user_id=" + me + ",group_id=0 0 0\n",
                java.nio.file.StandardOpenOption.APPEND);
        MountRegistry deadPids = new MountRegistry(tmp.resolve("registry"), mountTable, pid -> false);
        deadPids.write(new MountRecord(mp, 77, MountRecord.MODE_CONTEXT, "planner", "", null,
                home, home.resolve("vfs"), Instant.now(), "", "stderr"));

        DoctorCommand.Check check = DoctorCommand.staleMounts(h, List.of(deadPids));
        assertFalse(check.ok(), check.toString());
        assertEquals("not answering (daemon gone or hung): [" + mp + "]", check.detail());
        assertEquals("chibifs umount " + mp, check.fix());

        // no record says so, and the directory answers the probe: none
        assertTrue(DoctorCommand.staleMounts(h, List.of()).ok());
    }

    @Test
    void mountpointThatIsMountedOrNotEmptyFails() throws Exception {
        DoctorCommand.Host host = healthyHost(0);
        Path busy = Files.createDirectory(tmp.resolve("busy"));
        Files.writeString(busy.resolve("file"), "x");
        assertEquals(1, doctor(host, busy.toString()));
        assertFailed("mountpoint " + busy + ": not empty", "-o nonempty");

        out.getBuffer().setLength(0);
        Path file = Files.writeString(tmp.resolve("file"), "x");
        assertEquals(1, doctor(host, file.toString()));
        assertFailed("mountpoint " + file + ": not a directory", "move " + file + " aside");

        out.getBuffer().setLength(0);
        Path mounted = Files.createDirectory(tmp.resolve("mounted"));
        Files.writeString(mountTable, "chibifs " + mounted + " fuse.chibifs rw 0 0\n");
        assertEquals(1, doctor(host, mounted.toString()));
        assertFailed("mountpoint " + mounted + ": already a chibifs mount", "chibifs umount " + mounted);

        // what mount refuses, doctor does not pass: any mount point, an empty tmpfs one too
        out.getBuffer().setLength(0);
        Path tmpfs = Files.createDirectory(tmp.resolve("tmpfs"));
        Files.writeString(mountTable, "tmpfs " + tmpfs + " tmpfs rw 0 0\n");
        assertEquals(1, doctor(host, tmpfs.toString()));
        assertFailed("mountpoint " + tmpfs + ": already a tmpfs mount point", "umount " + tmpfs);
    }

    @Test
    void ioUringIsReportedAsOfferedOffOrAbsentAndNeverFails() throws Exception {
        Path param = tmp.resolve("enable_uring");
        DoctorCommand.Check absent = DoctorCommand.ioUring(param);
        assertTrue(absent.ok() && absent.detail().contains("Linux 6.14+"), absent.toString());
        Files.writeString(param, "N\n");
        DoctorCommand.Check off = DoctorCommand.ioUring(param);
        assertTrue(off.ok() && off.detail().contains("echo 1 > " + param), off.toString());
        Files.writeString(param, "Y\n");
        DoctorCommand.Check offered = DoctorCommand.ioUring(param);
        assertTrue(offered.ok() && offered.detail().startsWith("offered"), offered.toString());
    }

    /**
     * The root of a user namespace sees the host's directories above its home as another user's,
     * so a background mount logs to /var/log/chibifs, which it may not write: mount failed with a
     * bare "Permission denied" while doctor found nothing wrong.
     */
    @Test
    void aRootWithNowhereToLogFailsTheDaemonLogCheck() {
        Path homeLogs = tmp.resolve("h/chibifs/logs");
        Path rootLogs = tmp.resolve("var/log/chibifs");
        assertTrue(DoctorCommand.daemonLog(homeLogs, null, rootLogs, p -> false, p -> null).ok(),
                "the home's logs: not root's affair");
        assertTrue(DoctorCommand.daemonLog(homeLogs, "/tmp belongs to uid 65534", rootLogs, p -> p.equals(tmp), p -> null).ok(),
                "root may make /var/log/chibifs");
        DoctorCommand.Check c = DoctorCommand.daemonLog(homeLogs, "/tmp belongs to uid 65534", rootLogs, p -> false, p -> null);
        assertFalse(c.ok());
        assertTrue(c.detail().contains(homeLogs + " (/tmp belongs to uid 65534)") && c.detail().contains("/var/log/chibifs"),
                c.detail());
        assertTrue(c.fix().startsWith("mount with --foreground"), c.fix());
    }

    /**
     * A user's home that root owns: doctor called the unwritable logs directory fine, and the mount
     * then failed with a bare "Permission denied" naming the log file. The check names the directory,
     * the user and the owner, as the mount's failure does.
     */
    @Test
    void aHomeTheUserMayNotWriteFailsTheDaemonLogCheckNamingDirectoryAndUser() throws Exception {
        Path homeLogs = Files.createDirectories(tmp.resolve("h")).resolve("chibifs/logs");
        DoctorCommand.Check c = DoctorCommand.daemonLog(homeLogs, null, tmp.resolve("var/log/chibifs"), p -> true,
                p -> WriteAccess.denied(tmp.resolve("h"), 1001, "agent"));
        assertFalse(c.ok());
        assertEquals("a background mount cannot keep its log in " + homeLogs + ": permission denied: uid 1001 (agent) may not"
                + " write " + tmp.resolve("h") + " (owner root, mode 0755)", c.detail());
        assertTrue(c.fix().startsWith("mount with --foreground") && c.fix().contains("chown -R "
                + System.getProperty("user.name") + " " + tmp.resolve("h") + ")"), c.fix());
    }

    /**
     * A home root owns with no store in it yet: mount's fix was a chown of a store not there, and
     * doctor's a mkdir -p that left it root's. The fix chowns what is there, or makes what is not and
     * gives what it made, never a directory that was there before.
     */
    @Test
    void aFixGivesWhatIsThereAndMakesWhatIsNot() throws Exception {
        Path home = Files.createDirectories(tmp.resolve("h"));
        String me = WriteAccess.chownUser();
        assertEquals("chown -R " + me + " " + home, WriteAccess.giveCommand(home));
        assertEquals("mkdir -p " + home.resolve("vfs") + " && chown -R " + me + " " + home.resolve("vfs"),
                WriteAccess.giveCommand(home.resolve("vfs")));
        assertEquals("mkdir -p " + home.resolve("a/b/vfs") + " && chown -R " + me + " " + home.resolve("a"),
                WriteAccess.giveCommand(home.resolve("a/b/vfs")));
        // a home not there: its logs' fix makes it, not a chown of it
        String fix = MountCommand.homeLogsFix(home.resolve("new/chibifs/logs"));
        assertTrue(fix.contains("(as root, mkdir -p " + home.resolve("new") + " && chown -R " + me + " " + home.resolve("new")
                + ")"), fix);
    }

    /** The refusal names the nearest path there is: the file when it exists, else the directory it would be made in. */
    @Test
    void aRefusalNamesThePathThatRefused() throws Exception {
        Path dir = Files.createDirectories(tmp.resolve("d"));
        Files.setPosixFilePermissions(dir, java.nio.file.attribute.PosixFilePermissions.fromString("r-xr-x---"));
        String me = System.getProperty("user.name");
        assertTrue(WriteAccess.denied(dir.resolve("a/b/c.log")).endsWith(" may not write " + dir + " (owner " + me
                + ", mode 0550)"), WriteAccess.denied(dir.resolve("a/b/c.log")));
        assertTrue(WriteAccess.denied(dir.resolve("a/b/c.log")).startsWith("permission denied: uid "
                + MountRegistry.currentUid() + " (" + me + ")"));
        assertEquals(null, WriteAccess.whyNotMake(tmp.resolve("new/logs")), "a directory this user may write");
    }

    /** A mapped uid in a user's /etc/subuid range: newuidmap lets that user write as the agent in a user namespace. */
    @Test
    void aMappedUidInAUsersSubordinateRangeFails() throws Exception {
        Path subuid = Files.writeString(tmp.resolve("subuid"), "# ranges\nbob:100000:65536\ncarol:4311:1\n1007:200000:10\nodd\n");
        DoctorCommand.Check c = DoctorCommand.subordinateUids(List.of("4311=alice", "4312=bob", "100000=coder"), subuid);
        assertFalse(c.ok());
        assertEquals("uid 100000 (coder) is in bob's range 100000-165535; uid 4311 (alice) is in carol's range 4311-4311 ("
                + subuid + "): that user can act as the agent in a user namespace", c.detail());
        assertTrue(c.fix().startsWith("give agents uids outside every " + subuid + " range"), c.fix());
        assertFalse(DoctorCommand.subordinateUids(List.of("200009=x"), subuid).ok(), "a range's last uid");
        assertTrue(DoctorCommand.subordinateUids(List.of("200010=x", "4312=bob", "165536=y"), subuid).ok(), c.detail());
        assertTrue(DoctorCommand.subordinateUids(List.of("4311=alice"), tmp.resolve("none")).ok(), "no /etc/subuid");
    }
}
