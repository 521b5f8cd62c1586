package dev.chibifs.cli;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;

import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The mount command's own parsing, without a mount. */
class MountCommandTest {

    @Test
    void theDaemonIsToldTheRootBucketsListingValidityForItsLogLine() {
        assertEquals(java.time.Duration.ofSeconds(1), rootValidity("--store", "/=s3://team-bucket/chibi"), "the default");
        assertEquals(java.time.Duration.ofSeconds(60), rootValidity("--store", "/=s3://team-bucket/chibi", "--metadata-ttl", "60s"));
        assertEquals(null, rootValidity("--store", "/shared/team=s3://team-bucket/chibi", "--metadata-ttl", "60s"), "the root is local");
        assertEquals(null, rootValidity());
    }

    private static java.time.Duration rootValidity(String... args) {
        MountCommand m = new MountCommand();
        List<String> all = new java.util.ArrayList<>(List.of(args));
        all.add("/mnt");
        new picocli.CommandLine(m).parseArgs(all.toArray(String[]::new));
        return m.stores.rootListingValidity();
    }

    @Test
    void aUidMapTakesTheListStatusShowsAsWellAsRepeats() {
        MountCommand m = new MountCommand();
        // status shows uidmap=998=alice,997=bob: a context name has no comma, so the list is one
        new picocli.CommandLine(m).parseArgs("--uid-map", "998=alice,997=bob", "--uid-map", "996=carol", "/mnt");
        assertEquals(Map.of(998L, "alice", 997L, "bob", 996L, "carol"), MountCommand.parseUidMaps(m.uidMaps, null));
    }

    /** {@code --uid-map 1001=planner,} passed without a word: picocli's split dropped the empty entry. */
    @Test
    void aUidMapListWithAnEmptyEntryIsRefusedNamingTheValue(@TempDir Path home) {
        for (String bad : List.of("1001=planner,", ",1001=planner", "1001=planner,,1002=coder", ",")) {
            UsageException e = assertThrows(UsageException.class, () -> MountCommand.parseUidMaps(List.of(bad), null));
            assertEquals("invalid --uid-map '" + bad + "': an empty entry (a comma too many): the form is UID=NAME or"
                    + " UID=NAME,UID=NAME..., e.g. 1001=planner,1002=coder", e.getMessage());
            Cli.Result r = new Cli(home).run("mount", "--uid-map", bad, home.resolve("mnt").toString());
            assertEquals(ExitCodes.USAGE, r.code(), r.toString());
            assertEquals("chibifs: " + e.getMessage() + "\n", r.err());
        }
        UsageException e = assertThrows(UsageException.class, () -> MountCommand.parseUidMaps(List.of(""), null));
        assertEquals("invalid --uid-map '': the form is UID=NAME, e.g. 1001=planner", e.getMessage());
    }

    @Test
    void aUidMapNamesUidsAKernelHas() {
        for (String bad : List.of("99999999999=alice", "4294967295=alice", "-1=alice")) {
            UsageException e = assertThrows(UsageException.class, () -> MountCommand.parseUidMaps(List.of(bad), null));
            assertTrue(e.getMessage().contains("'" + bad + "'") && e.getMessage().contains("0 to 4294967294"), e.getMessage());
        }
        assertEquals(Map.of(4294967294L, "alice"), MountCommand.parseUidMaps(List.of("4294967294=alice"), null));
    }

    @Test
    void anEmptyHomeIsRefusedNotTakenAsTheWorkingDirectory(@TempDir Path home) {
        Cli cli = new Cli(home);
        String[][] runs = {{"mount", "--home", "", home.resolve("mnt").toString()}, {"ls", "--home", "", "vfs:///"},
            {"cache", "ls", "--home", ""}, {"doctor", "--home", ""}};
        for (String[] args : runs) {
            Cli.Result r = cli.run(args);
            assertEquals(ExitCodes.USAGE, r.code(), r.toString());
            assertTrue(r.err().startsWith("chibifs: Invalid value for option '--home': '' is empty: name CHIBI_HOME's"
                    + " directory, or leave --home out for $CHIBI_HOME, else ~/.chibi (see 'chibifs " + args[0]), r.err());
            assertTrue(r.err().endsWith(" --help')\n") && r.err().lines().count() == 1, "one line: " + r.err());
        }
    }

    /** {@code --home '~/x'} from fstab or a unit's file, where no shell expands it, made a directory named '~' here. */
    @Test
    void aHomeOrCacheDirStartingWithALiteralTildeIsRefused(@TempDir Path home) {
        Cli cli = new Cli(home);
        for (String tilde : List.of("~/x", "~", "~planner/x")) {
            String[][] runs = {{"mount", "--context", "planner", "--home", tilde, home.resolve("mnt").toString()},
                {"ls", "--home", tilde, "vfs:///"}, {"doctor", "--home", tilde}};
            for (String[] args : runs) {
                Cli.Result r = cli.run(args);
                assertEquals(ExitCodes.USAGE, r.code(), r.toString());
                assertTrue(r.err().startsWith("chibifs: Invalid value for option '--home': '" + tilde + "' starts with a"
                        + " literal " + tilde.split("/")[0] + ", which no shell expanded (as in fstab or a unit's file): give an"
                        + " absolute path"), r.err());
                assertEquals(1, r.err().lines().count(), r.err());
            }
            Cli.Result r = cli.run("mount", "--context", "planner", "--store", "/shared/team=s3://bucket/team",
                    "--cache-dir", tilde, home.resolve("mnt").toString());
            assertEquals(ExitCodes.USAGE, r.code(), r.toString());
            assertEquals("chibifs: invalid --cache-dir '" + tilde + "': starts with a literal " + tilde.split("/")[0]
                    + ", which no shell expanded (as in fstab or a unit's file): give an absolute path\n", r.err());
        }
        assertFalse(java.nio.file.Files.exists(Path.of("~")), "made ~ in the working directory");
    }

    /** HostileInputTest runs the real command, in its own JVM, with two of these. */
    @ParameterizedTest
    @ValueSource(strings = {"../x", "/", "", "system", "SYSTEM", "System", "a/b", "-", ".", "..", "x y", "x\ny"})
    void contextNamesThatImpersonateOrEscapeAreRefusedBeforeAnythingIsMade(String name, @TempDir Path root) {
        Path home = root.resolve("home");
        for (String[] naming : new String[][] {{"--context", name}, {"--uid-map", "4242=" + name}}) {
            Cli.Result r = new Cli(home).run("mount", "--foreground", "--home", home.toString(), naming[0], naming[1],
                    root.resolve("mnt").toString());
            assertEquals(ExitCodes.USAGE, r.code(), r.toString());
            assertEquals(1, r.err().lines().count(), "one line, the name escaped: " + r.err());
        }
        assertFalse(java.nio.file.Files.exists(home), "made " + home);
    }

    @Test
    void aSystemUidThatIsNoNumberGetsTheUidRule(@TempDir Path home) {
        for (String bad : List.of("abc", "-1", "4294967295", "99999999999999999999")) {
            Cli.Result r = new Cli(home).run("mount", "--uid-map", "1001=alice", "--system-uid", bad,
                    home.resolve("mnt").toString());
            assertEquals(ExitCodes.USAGE, r.code(), r.toString());
            assertTrue(r.err().startsWith("chibifs: Invalid value for option '--system-uid': '" + bad
                    + "': UID must be a number from 0 to 4294967294 (see 'chibifs mount --help')\n"), r.err());
        }
    }

    /** A foreground mount of {@code context} over {@code home} on {@code mnt}, a file put in it first. */
    private static Cli.Result mountOnNotEmpty(Path home, String context, Path mnt) throws Exception {
        java.nio.file.Files.writeString(mnt.resolve("x"), "x");
        return new Cli(home).run("mount", "--foreground", "--context", context, "--home", home.toString(), mnt.toString());
    }

    /**
     * A mount on a mountpoint that was not empty failed, exit 1, but left the store directories of the
     * (mistyped) context it named, and on an empty store, shared, sys, site, ...: refused before the store is touched.
     */
    @Test
    void aMountpointThatIsNotEmptyIsRefusedBeforeTheStoreIsTouched(@TempDir Path dir) throws Exception {
        Path home = java.nio.file.Files.createDirectories(dir.resolve("home/vfs")).getParent();
        Path mnt = java.nio.file.Files.createDirectories(dir.resolve("mnt"));
        Cli.Result r = mountOnNotEmpty(home, "plannr-typo", mnt);
        assertEquals(ExitCodes.FAILURE, r.code(), r.toString());
        assertEquals("chibifs: mountpoint " + mnt + " is not empty: choose an empty directory, or pass -o nonempty\n", r.err());
        try (java.util.stream.Stream<Path> made = java.nio.file.Files.list(home)) {
            assertEquals(List.of(home.resolve("vfs")), made.toList(), "nothing made in the home");
        }
        try (java.util.stream.Stream<Path> made = java.nio.file.Files.list(home.resolve("vfs"))) {
            assertEquals(0, made.count(), "nothing made in the store");
        }
    }

    /** A mountpoint named with a newline printed it raw, splitting the one line in two, and put it in the log's name. */
    @Test
    void aMountpointWithControlCharactersIsShownEscapedAndLogsUnderASafeName(@TempDir Path dir) throws Exception {
        Path home = java.nio.file.Files.createDirectories(dir.resolve("home/vfs")).getParent();
        Path mnt = java.nio.file.Files.createDirectories(dir.resolve("a\nb\tc"));
        Cli.Result r = mountOnNotEmpty(home, "planner", mnt);
        assertEquals(ExitCodes.FAILURE, r.code(), r.toString());
        assertEquals("chibifs: mountpoint " + dir + "/a\\nb\\tc is not empty: choose an empty directory, or pass -o"
                + " nonempty\n", r.err());
        assertEquals("mount-tmp_x_a_b_c-842cf71e.log", MountCommand.logName(Path.of("/tmp/x/a\nb\tc")));
        assertEquals("mount-tmp_x_a_b-f1b5c666.log", MountCommand.logName(Path.of("/tmp/x/a\u009bb")));
        assertEquals("mount-srv_ünï cödé.log", MountCommand.logName(Path.of("/srv/ünï cödé")));
        Path newline = Path.of("/mnt/a\nb");
        assertEquals("/mnt/a\\nb is already a mount point (chibifs umount /mnt/a\\nb first)", MountCommand.alreadyMounted(
                new dev.chibifs.fuse.MountTable.MountEntry("chibifs", newline, "fuse.chibifs", "rw,user_id=0"), newline));
    }

    /**
     * /a/b, /a_b and /a<newline>b all logged to mount-a_b.log, their daemons writing one file; a long
     * mountpoint's name passed the 255 bytes of a file name. The common name stays as it was.
     */
    @Test
    void logNamesOfMountpointsOneNameStoodForDifferAndStayShort() {
        assertEquals("mount-mnt_chibi.log", MountCommand.logName(Path.of("/mnt/chibi")));
        assertEquals("mount-a_b.log", MountCommand.logName(Path.of("/a/b")));
        assertEquals("mount-a_b-328ff01f.log", MountCommand.logName(Path.of("/a_b")));
        assertEquals("mount-a_b-6f30f36c.log", MountCommand.logName(Path.of("/a\nb")));
        assertEquals("mount-root.log", MountCommand.logName(Path.of("/root")));
        assertEquals("mount-root-8a5edab2.log", MountCommand.logName(Path.of("/")));
        // a name that looks hashed is hashed: no readable name is another's hashed one
        assertEquals("mount-x_y-0123abcd-3e30d2b1.log", MountCommand.logName(Path.of("/x/y-0123abcd")));
        assertEquals("mount-x_y-0123abc.log", MountCommand.logName(Path.of("/x/y-0123abc")));

        Path deep = Path.of("/srv/" + "agents/".repeat(40) + "planner");
        String name = MountCommand.logName(deep);
        assertTrue(name.length() <= MountCommand.LOG_NAME_LIMIT, name);
        assertTrue(name.matches("mount-.*agents_planner-[0-9a-f]{8}\\.log"), name);
        assertTrue(!name.equals(MountCommand.logName(Path.of("/srv/" + "agents/".repeat(41) + "planner"))),
                "two long paths with one end differ");
        // cut between characters, never inside one: 2 bytes each
        String wide = MountCommand.logName(Path.of("/" + "ü".repeat(200)));
        assertTrue(wide.getBytes(java.nio.charset.StandardCharsets.UTF_8).length <= MountCommand.LOG_NAME_LIMIT, wide);
        assertTrue(wide.matches("mount-ü+-[0-9a-f]{8}\\.log"), wide);
        String ascii = "/" + "x".repeat(MountCommand.LOG_NAME_LIMIT - "mount-.log".length());
        assertEquals("mount-" + ascii.substring(1) + ".log", MountCommand.logName(Path.of(ascii)), "the longest that stays as it was");
        assertTrue(MountCommand.logName(Path.of(ascii + "x")).matches("mount-x+-[0-9a-f]{8}\\.log"));
    }

    /** What a mount that fails after it made the store's directories leaves: what was there, and only that. */
    @Test
    void aFailedMountRemovesTheDirectoriesItMadeInAStoreThereWas(@TempDir Path dir) throws Exception {
        Path store = java.nio.file.Files.createDirectories(dir.resolve("home/vfs"));
        java.nio.file.Files.createDirectories(store.resolve("home/planner"));
        Path logs = dir.resolve("home/chibifs/logs");
        List<Path> dirs = new java.util.ArrayList<>(List.of(dir.resolve("home"), logs, store));
        dev.chibifs.router.Router.namespaceDirectories(List.of("plannr-typo"))
                .forEach(d -> dirs.add(store.resolve(d.substring(1))));
        java.util.Set<dev.chibifs.sys.MadeDirectories.Identity> ours = java.util.concurrent.ConcurrentHashMap.newKeySet();
        MountCommand.MadeByThisMount made = new MountCommand.MadeByThisMount(dirs, List.of(logs), "mount-m.log", ours);
        for (Path d : dirs) {
            if (d.equals(store.resolve("tools/home"))) {
                // another mount of the store, starting meanwhile, made it (and serves a context's tools home there):
                // empty, it was removed from under that mount
                java.nio.file.Files.createDirectories(d);
                continue;
            }
            java.util.Set<dev.chibifs.sys.MadeDirectories.Identity> now = dev.chibifs.sys.MadeDirectories.record();
            try {
                dev.chibifs.sys.MadeDirectories.createDirectories(d);
            } finally {
                dev.chibifs.sys.MadeDirectories.stop();
            }
            ours.addAll(now);
        }
        java.nio.file.Files.writeString(logs.resolve("mount-m.log"), "failed");
        java.nio.file.Files.writeString(store.resolve("shared/meanwhile"), "someone else's"); // made meanwhile: stays
        java.nio.file.Files.writeString(store.resolve("site/mount-m.log"), "not a log"); // a log's name outside the logs: stays
        assertEquals(logs.resolve("mount-m.log"), made.removeAll());
        try (java.util.stream.Stream<Path> left = java.nio.file.Files.walk(dir.resolve("home"))) {
            assertEquals(java.util.Set.of(dir.resolve("home"), store, store.resolve("home"), store.resolve("home/planner"),
                    store.resolve("shared"), store.resolve("shared/meanwhile"), store.resolve("site"),
                    store.resolve("site/mount-m.log"), store.resolve("tools"), store.resolve("tools/home")),
                    left.collect(java.util.stream.Collectors.toSet()));
        }
    }

    /** On a bind mount, mount advised "chibifs umount ... first", which then refused: "is a ext4 mount, not chibifs". */
    @Test
    void aMountpointAnotherFileSystemIsMountedOnGetsAdviceThatFits() {
        Path mp = Path.of("/mnt/m");
        assertEquals("/mnt/m is already a mount point (a ext4 mount, not chibifs: umount /mnt/m first, or choose another"
                + " directory)", MountCommand.alreadyMounted(new dev.chibifs.fuse.MountTable.MountEntry("/dev/vda", mp, "ext4",
                        "rw"), mp));
        assertEquals("/mnt/m is already a mount point (chibifs umount /mnt/m first)", MountCommand.alreadyMounted(
                new dev.chibifs.fuse.MountTable.MountEntry("chibifs", mp, "fuse.chibifs", "rw,user_id=0"), mp));
    }

    /** The loser of two mounts racing to one empty directory said "not empty, or pass -o nonempty". */
    @Test
    void aMountpointAnotherMountTookMeanwhileIsSaidToBeOne() {
        Path mp = Path.of("/mnt/m");
        dev.chibifs.fuse.MountTable.MountEntry chibifs = new dev.chibifs.fuse.MountTable.MountEntry("chibifs", mp,
                "fuse.chibifs", "rw,user_id=0");
        assertEquals("/mnt/m is already a mount point: another chibifs mount took it while this one started (chibifs"
                + " status shows it; chibifs umount /mnt/m first, or choose another directory)", MountCommand.mountFailure(
                        new dev.chibifs.fuse.MountException("mountpoint /mnt/m is already a mount point", chibifs), mp)
                .getMessage());
        assertEquals("/mnt/m is already a mount point: a tmpfs mount came there while this one started (umount /mnt/m"
                + " first, or choose another directory)", MountCommand.mountFailure(new dev.chibifs.fuse.MountException(
                        "x", new dev.chibifs.fuse.MountTable.MountEntry("tmpfs", mp, "tmpfs", "rw")), mp).getMessage());
        // any other failure is said as it was
        assertEquals("mountpoint /mnt/m is not empty: choose an empty directory, or pass -o nonempty",
                MountCommand.mountFailure(new dev.chibifs.fuse.MountException(
                        "mountpoint /mnt/m is not empty: choose an empty directory, or pass -o nonempty"), mp).getMessage());
    }

    /** Only doctor warned of a mapped uid in a user's /etc/subuid range; mount made it without a word. */
    @Test
    void aMappedUidInAUsersSubordinateRangeIsWarnedOfAsDoctorDoes(@TempDir Path dir) throws Exception {
        Path subuid = java.nio.file.Files.writeString(dir.resolve("subuid"), "alice:100000:65536\n");
        List<String> maps = List.of("100001=planner", "1001=coder");
        DoctorCommand.Check doctor = DoctorCommand.subordinateUids(maps, subuid);
        assertEquals(java.util.Optional.of("subordinate uids: uid 100001 (planner) is in alice's range 100000-165535 ("
                + subuid + "): that user can act as the agent in a user namespace; " + doctor.fix()),
                MountCommand.subordinateUidWarning(maps, subuid));
        assertEquals(java.util.Optional.empty(), MountCommand.subordinateUidWarning(List.of("1001=coder"), subuid));
        assertEquals(java.util.Optional.empty(), MountCommand.subordinateUidWarning(List.of(), subuid), "a per-context mount");
        assertEquals(java.util.Optional.empty(), MountCommand.subordinateUidWarning(maps, dir.resolve("none")));
    }

    @Test
    void aMountpointThatIsAFileIsNotADirectoryNotOneToMake(@TempDir Path dir) throws Exception {
        Path file = java.nio.file.Files.writeString(dir.resolve("file"), "x");
        MountFailure e = assertThrows(MountFailure.class, () -> MountCommand.requireDirectory(file));
        assertEquals("mountpoint " + file + " is not a directory: choose a directory, or move it aside", e.getMessage());
        e = assertThrows(MountFailure.class, () -> MountCommand.requireDirectory(dir.resolve("none")));
        assertEquals("mountpoint " + dir.resolve("none") + " is not an existing directory (mkdir -p "
                + dir.resolve("none") + ")", e.getMessage());
        MountCommand.requireDirectory(dir);
    }
    /**
     * {@code mount --home M M}: the home made in the mountpoint made it not empty, so every retry
     * failed, and with -o nonempty the mount hid its own store and log (a tester's finding). Refused
     * before anything is made.
     */
    @Test
    void aHomeInsideTheMountpointIsRefusedBeforeAnythingIsMade(@TempDir Path dir) throws Exception {
        Path mnt = java.nio.file.Files.createDirectories(dir.resolve("m"));
        for (Path home : new Path[] {mnt, mnt.resolve("home")}) {
            Cli.Result r = new Cli(dir).run("mount", "--home", home.toString(), "--context", "alice", mnt.toString());
            assertEquals(ExitCodes.USAGE, r.code(), r.toString());
            assertTrue(r.err().contains("chibi home " + home + " is inside the mountpoint " + mnt + ", which the mount"
                    + " would hide"), r.err());
            try (java.util.stream.Stream<Path> made = java.nio.file.Files.list(mnt)) {
                assertEquals(0, made.count(), "nothing made in the mountpoint");
            }
        }
    }

    /** A tester's nested mount: coder's namespace at /shared/nest of planner's mount handed coder's rights to planner's. */
    @Test
    void aMountpointInsideAChibifsMountIsRefused() {
        List<dev.chibifs.fuse.MountTable.MountEntry> mounts = List.of(
                new dev.chibifs.fuse.MountTable.MountEntry("/dev/sda1", Path.of("/"), "ext4", "rw"),
                new dev.chibifs.fuse.MountTable.MountEntry("chibifs", Path.of("/mnt/chibi"), "fuse.chibifs", "rw,user_id=0"),
                new dev.chibifs.fuse.MountTable.MountEntry("tmpfs", Path.of("/mnt/chibi2"), "tmpfs", "rw"));
        UsageException e = assertThrows(UsageException.class,
                () -> MountCommand.requireOutsideChibifsMounts(mounts, Path.of("/mnt/chibi/shared/nest")));
        assertEquals("mountpoint /mnt/chibi/shared/nest is inside the chibifs mount /mnt/chibi, whose users would reach"
                + " it with this mount's rights: choose a directory outside it", e.getMessage());
        MountCommand.requireOutsideChibifsMounts(mounts, Path.of("/mnt/chibi2/x")); // beside it, by name
        MountCommand.requireOutsideChibifsMounts(mounts, Path.of("/mnt/other"));
        MountCommand.requireOutsideChibifsMounts(mounts, Path.of("/mnt/chibi")); // at it: "already a mount point"
        List<dev.chibifs.fuse.MountTable.MountEntry> over = new java.util.ArrayList<>(mounts);
        over.add(new dev.chibifs.fuse.MountTable.MountEntry("tmpfs", Path.of("/mnt/chibi/shared"), "tmpfs", "rw"));
        MountCommand.requireOutsideChibifsMounts(over, Path.of("/mnt/chibi/shared/nest")); // a tmpfs over it, deeper
    }

    /**
     * A mountpoint inside a directory the mount shows was served by its own daemon: stat ESTALE, and no
     * umount, -z or SIGTERM ended it. A cache directory inside the store was every context's to write.
     */
    @Test
    void aMountpointInsideADirectoryTheMountShowsAndACacheInsideTheStoreAreRefused(@TempDir Path dir) throws Exception {
        Path ro = java.nio.file.Files.createDirectories(dir.resolve("ro/mp"));
        Path tools = java.nio.file.Files.createDirectories(dir.resolve("tools/mp"));
        String home = dir.resolve("home").toString();
        Cli cli = new Cli(dir);
        Cli.Result r = cli.run("mount", "--home", home, "--context", "alice", "--store",
                "/shared/ro=readonly:" + ro.getParent(), ro.toString());
        assertEquals(ExitCodes.USAGE, r.code(), r.toString());
        assertTrue(r.err().contains("mountpoint " + ro + " is inside " + ro.getParent() + ", which the mount would show"),
                r.err());
        r = cli.run("mount", "--home", home, "--context", "alice", "--tools-sys", tools.getParent().toString(),
                tools.toString());
        assertEquals(ExitCodes.USAGE, r.code(), r.toString());
        assertTrue(r.err().contains("(--tools-sys)"), r.err());
        r = cli.run("mount", "--home", home, "--context", "alice", "--store", "/shared/b=s3://bkt/k?endpoint=http://127.0.0.1:1",
                "--cache-dir", home + "/vfs/shared/cache", dir.resolve("mnt").toString());
        assertEquals(ExitCodes.USAGE, r.code(), r.toString());
        assertTrue(r.err().contains("invalid --cache-dir") && r.err().contains("inside the store"), r.err());
        Path mnt = java.nio.file.Files.createDirectories(dir.resolve("m4"));
        r = cli.run("mount", "--home", home, "--context", "alice", "--store", "/shared/b=s3://bkt/k?endpoint=http://127.0.0.1:1",
                "--cache-dir", mnt.resolve("c").toString(), mnt.toString());
        assertEquals(ExitCodes.USAGE, r.code(), r.toString());
        assertTrue(r.err().contains("inside the mountpoint"), r.err());
        assertTrue(!java.nio.file.Files.exists(mnt.resolve("c")), "the cache was made in the mountpoint");
        r = cli.run("write", "--home", home, "--as", "alice", "--store", "/shared/b=s3://bkt/k?endpoint=http://127.0.0.1:1",
                "--cache-dir", home + "/vfs/shared/cc", "--content", "x", "vfs:///shared/b/x");
        assertEquals(ExitCodes.USAGE, r.code(), r.toString()); // the vfs commands as the mount
        assertTrue(r.err().contains("inside the store"), r.err());
        for (String option : List.of("--tools-sys", "--cache-dir")) {
            r = cli.run("ls", "--store", "/shared/b=s3://bkt/k?endpoint=http://127.0.0.1:1", option, "", "vfs:///");
            assertEquals(ExitCodes.USAGE, r.code(), r.toString());
            assertTrue(r.err().contains("invalid " + option + " ''"), r.err());
        }
    }
    /** One object behind two caches in one daemon: a write through one store was not seen by the other. */
    @Test
    void twoS3StoresOverOneBucketsObjectsAreRefused(@TempDir Path dir) {
        String at = "?endpoint=http://127.0.0.1:1";
        for (String[] pair : new String[][] {{"ov", "ov"}, {"ov", "ov/q"}, {"ov/q", "ov"}, {"", "x"}}) {
            Cli.Result r = new Cli(dir).run("ls", "--store", "/shared/a=s3://bkt/" + pair[0] + at,
                    "--store", "/shared/b=s3://bkt/" + pair[1] + at, "vfs:///");
            assertEquals(ExitCodes.USAGE, r.code(), r.toString());
            assertTrue(r.err().contains("one object behind two caches"), r.err());
        }
        Cli.Result r = new Cli(dir).run("ls", "--store", "/shared/a=s3://bkt/ov" + at, "--store",
                "/shared/b=s3://bkt/ov2" + at, "vfs:///");
        assertTrue(!r.err().contains("two caches"), r.err()); // a sibling prefix is other objects
    }
    /**
     * A root daemon on a home another user owns wrote its log by a path that user controls (a link
     * there had root append to a file of root's), and the log, root's, kept that user's own mount
     * from opening its own. Such a daemon logs to /var/log/chibifs.
     */
    @Test
    void aRootDaemonOnAnotherUsersHomeLogsWhereRootKeepsLogs(@TempDir Path dir) throws Exception {
        org.junit.jupiter.api.Assumptions.assumeTrue(dev.chibifs.sys.Syscalls.geteuid() == 0, "only root");
        Path users = java.nio.file.Files.createDirectories(dir.resolve("agent"));
        java.nio.file.Files.setAttribute(users, "unix:uid", 4242);
        Path log = MountCommand.logFile(new dev.chibifs.config.ChibiHome(users.resolve(".chibi")), Path.of("/mnt/chibi"));
        assertEquals(MountCommand.ROOT_LOGS.resolve("mount-mnt_chibi.log"), log);
        assertTrue(!java.nio.file.Files.exists(users.resolve(".chibi")), "nothing made in the user's home");
        Path roots = MountCommand.logFile(new dev.chibifs.config.ChibiHome(dir.resolve("srv")), Path.of("/mnt/chibi"));
        assertEquals(dir.resolve("srv/chibifs/logs/mount-mnt_chibi.log"), roots);
        // root's, but a team's to write (root:team 2775): a member's link at its logs directory had
        // root make its log in a directory of root's
        Path team = java.nio.file.Files.createDirectories(dir.resolve("team"));
        java.nio.file.Files.setPosixFilePermissions(team, java.nio.file.attribute.PosixFilePermissions.fromString("rwxrwxr-x"));
        java.nio.file.Files.setAttribute(team, "unix:gid", 4242); // a group no file names: not known to be root's alone
        assertEquals(MountCommand.ROOT_LOGS.resolve("mount-mnt_chibi.log"),
                MountCommand.logFile(new dev.chibifs.config.ChibiHome(team), Path.of("/mnt/chibi")));
    }

    /** In unshare -U -r, a background mount said only "Permission denied: /var/log/chibifs/mount-....log". */
    @Test
    void aRootWithNowhereToLogIsToldWhyAndWhatToDo() {
        String m = MountCommand.rootLogsRefused(Path.of("/tmp/x/h/chibifs/logs"), "/tmp belongs to uid 65534");
        assertEquals("cannot keep the daemon's log: root keeps it out of /tmp/x/h/chibifs/logs (/tmp belongs to uid"
                + " 65534) and may not write /var/log/chibifs (the root of a user namespace?): mount with --foreground (it"
                + " logs to stderr), or use a --home on a path no other user owns", m);
    }

    /** A mistyped home became a new CHIBI_HOME, made by a command that only reads, and listed empty with exit 0. */
    @Test
    void aCommandThatReadsAHomeWithNoStoreSaysSoAndMakesNothing(@TempDir Path dir) throws Exception {
        Path typo = dir.resolve("typo");
        Cli.Result r = new Cli(dir).run("ls", "--home", typo.toString(), "vfs:///");
        assertEquals(ExitCodes.NOT_FOUND, r.code(), r.toString());
        assertTrue(r.err().startsWith("chibifs: no store at " + typo.resolve("vfs")), r.err());
        assertTrue(!java.nio.file.Files.exists(typo), "made " + typo);
        // a path another store serves needs no local store
        java.nio.file.Path docs = java.nio.file.Files.createDirectories(dir.resolve("docs"));
        java.nio.file.Files.writeString(docs.resolve("hi"), "hi\n");
        r = new Cli(dir).run("cat", "--home", typo.toString(), "--store", "/site=readonly:" + docs, "vfs:///site/hi");
        assertEquals("hi\n", r.out(), r.toString());
        assertTrue(!java.nio.file.Files.exists(typo), "made " + typo + " (the namespace opens the local store)");
        java.nio.file.Path file = java.nio.file.Files.writeString(dir.resolve("file"), "x");
        r = new Cli(dir).run("ls", "--home", file.toString(), "vfs:///");
        assertEquals(ExitCodes.USAGE, r.code(), r.toString());
        assertTrue(r.err().contains("'" + file + "' is not a directory"), r.err());
    }

    /**
     * A mistyped --home was made by a write, and written, exit 0, where a read (and cache ls) said it
     * was not there; ~/.chibi, which nobody types, a first write still makes, as chibi's first run does.
     */
    @Test
    void aCommandThatWritesAHomeNamedThatIsNotThereSaysSoAndMakesNothing(@TempDir Path dir) throws Exception {
        Path typo = dir.resolve("typo");
        String refused = "chibifs: no chibi home at " + typo + " (no such directory: is --home or $CHIBI_HOME right?)\n";
        Cli.Result r = new Cli(dir).run("write", "--as", "bob", "--home", typo.toString(), "--content", "x",
                "vfs:///shared/x");
        assertEquals(ExitCodes.NOT_FOUND, r.code(), r.toString());
        assertEquals(refused, r.err());
        assertTrue(!java.nio.file.Files.exists(typo), "made " + typo);
        r = new Cli(typo).run("mkdir", "--as", "bob", "vfs:///shared/d");
        assertEquals(ExitCodes.NOT_FOUND, r.code(), r.toString());
        assertEquals(refused, r.err(), "named by $CHIBI_HOME");
        assertTrue(!java.nio.file.Files.exists(typo), "made " + typo);
        // a home that is there, with no store yet, gets one
        r = new Cli(dir).run("write", "--as", "bob", "--content", "x", "vfs:///shared/x");
        assertEquals(ExitCodes.OK, r.code(), r.toString());
        assertEquals("x", java.nio.file.Files.readString(dir.resolve("vfs/shared/x")));
        // the default home a first write makes
        r = new Cli(typo).runWithEnv(java.util.Map.of("CHIBI_HOME", "", "HOME", dir.resolve("user").toString()),
                "write", "--as", "bob", "--content", "y", "vfs:///shared/y");
        assertEquals(ExitCodes.OK, r.code(), r.toString());
        assertEquals("y", java.nio.file.Files.readString(dir.resolve("user/.chibi/vfs/shared/y")));
    }

    /** A fifo at the log hung mount in open(2), waiting for a reader; a link there was followed. */
    @Test
    void aLogThatIsAFifoOrALinkIsRefusedAtOnceNamingTheRule(@TempDir Path dir) throws Exception {
        Path log = dev.chibifs.testing.OddFiles.fifo(dir.resolve("mount-mnt.log"));
        assertEquals("the daemon's log " + log + " is " + dev.chibifs.config.HomeFile.NOT_REGULAR + ": move it aside",
                refusedLog(log), "no reader");
        // with a reader the open succeeds: the type on the descriptor refuses it
        int reader = dev.chibifs.sys.Syscalls.openat(dev.chibifs.sys.Linux.AT_FDCWD, log.toString(),
                dev.chibifs.sys.Linux.O_RDONLY | dev.chibifs.sys.Linux.O_NONBLOCK, 0, log.toString());
        try {
            assertEquals("the daemon's log " + log + " is " + dev.chibifs.config.HomeFile.NOT_REGULAR + ": move it aside",
                    refusedLog(log), "a reader");
        } finally {
            dev.chibifs.sys.Syscalls.close(reader);
        }
        Path target = java.nio.file.Files.writeString(dir.resolve("precious"), "x");
        Path link = java.nio.file.Files.createSymbolicLink(dir.resolve("mount-link.log"), target);
        assertEquals("the daemon's log " + link + " is " + dev.chibifs.config.HomeFile.LINKED_LOG + ": move it aside",
                refusedLog(link));
        assertEquals("x", java.nio.file.Files.readString(target));
        int fd = MountCommand.openLog(dir.resolve("mount-ok.log"));
        dev.chibifs.sys.Syscalls.close(fd);
        assertTrue(java.nio.file.Files.isRegularFile(dir.resolve("mount-ok.log")));
    }

    private static String refusedLog(Path log) {
        return org.junit.jupiter.api.Assertions.assertTimeoutPreemptively(dev.chibifs.testing.OddFiles.PROMPTLY,
                () -> assertThrows(MountFailure.class, () -> MountCommand.openLog(log)).getMessage());
    }

    /** <home>/chibifs a dangling link: mount said only "File exists: <home>/chibifs". */
    @Test
    void aLinkWhereTheLogsGoSaysWhatItIs(@TempDir Path dir) throws Exception {
        Path home = java.nio.file.Files.createDirectories(dir.resolve("h"));
        java.nio.file.Files.createSymbolicLink(home.resolve("chibifs"), dir.resolve("gone"));
        MountFailure e = assertThrows(MountFailure.class,
                () -> MountCommand.logFile(new dev.chibifs.config.ChibiHome(home), Path.of("/mnt/chibi")));
        assertEquals("cannot keep the daemon's log in " + home.resolve("chibifs/logs") + ": " + home.resolve("chibifs")
                + " is a symbolic link to " + dir.resolve("gone") + ", which does not exist: make " + dir.resolve("gone")
                + " a directory, or remove the link", e.getMessage());
        java.nio.file.Files.delete(home.resolve("chibifs"));
        java.nio.file.Files.writeString(home.resolve("chibifs"), "");
        e = assertThrows(MountFailure.class,
                () -> MountCommand.logFile(new dev.chibifs.config.ChibiHome(home), Path.of("/mnt/chibi")));
        assertEquals("cannot keep the daemon's log in " + home.resolve("chibifs/logs") + ": " + home.resolve("chibifs")
                + " is a file, not a directory: move it aside", e.getMessage());
    }
}
