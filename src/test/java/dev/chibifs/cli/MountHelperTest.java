package dev.chibifs.cli;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The fstab helper's option translation: the real script, run as mount(8) runs it, with a stand-in launcher
 * beside it that prints the arguments it was given, one per line.
 */
class MountHelperTest {

    private static final Path HELPER = Path.of("scripts", "mount.fuse.chibifs");

    @TempDir
    Path tmp;

    private Path helper;
    /** A directory put first on the helper's PATH, for stand-ins of the tools it runs; null: none. */
    private Path extraPath;
    /** What the stand-in launcher is told: FAKE_ERR, a line for its stderr; FAKE_CLEARED, say a stale mount was cleared. */
    private final java.util.Map<String, String> launcherEnv = new java.util.HashMap<>();

    /** What the helper did: its exit code, the arguments the stand-in launcher got, its stdout and stderr. */
    record Result(int code, List<String> launcherArgs, String stdout, String stderr) {
    }

    @BeforeEach
    void installBesideAStandInLauncher() throws IOException {
        helper = Files.copy(HELPER, tmp.resolve("mount.fuse.chibifs"), StandardCopyOption.COPY_ATTRIBUTES);
        // it notes its arguments and says what the real launcher says on success
        Path launcher = Files.writeString(tmp.resolve("chibifs"), "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done"
                + " > \"$(dirname \"$0\")/launcher-args\"\n[ -z \"$FAKE_ERR\" ] || echo \"$FAKE_ERR\" >&2\n"
                + "[ -z \"$FAKE_EXIT\" ] || exit \"$FAKE_EXIT\"\n"
                + "[ -z \"$FAKE_CLEARED\" ] || echo 'chibifs: cleared a stale mount at /mnt/planner left by a daemon that died'\n"
                + "echo 'chibifs: mounted'\n");
        Files.setPosixFilePermissions(launcher, PosixFilePermissions.fromString("rwxr-xr-x"));
    }

    private Result run(String... args) throws Exception {
        return runWithLauncherExit(null, args);
    }

    /** {@link #run}, the stand-in launcher exiting with EXIT (null: mounted, 0). */
    private Result runWithLauncherExit(Integer exit, String... args) throws Exception {
        List<String> command = new ArrayList<>(List.of(helper.toString()));
        command.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(command);
        if (extraPath != null) {
            pb.environment().put("PATH", extraPath + ":" + System.getenv("PATH"));
        }
        if (exit != null) {
            pb.environment().put("FAKE_EXIT", exit.toString());
        }
        pb.environment().putAll(launcherEnv);
        Process p = pb.start();
        p.getOutputStream().close();
        assertTrue(p.waitFor(20, TimeUnit.SECONDS), "helper did not finish");
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
        Path noted = tmp.resolve("launcher-args");
        List<String> launched = Files.exists(noted) ? Files.readAllLines(noted) : List.of();
        Files.deleteIfExists(noted);
        return new Result(p.exitValue(), launched, out, err);
    }

    @Test
    void translatesWhatMountPassesForAUidMappedFstabLine() throws Exception {
        // what util-linux 2.38 hands a helper for: uidmap=...,home=/srv/chibi,_netdev,nofail,user,allow_other
        Result r = run("chibifs", "/mnt/chibi", "-o",
                "rw,noexec,nosuid,nodev,uidmap=1001:planner,uidmap=1002:coder,home=/srv/chibi,system_uid=0,"
                        + "allow_other,_netdev,nofail,user,x-systemd.automount,comment=agents");
        assertEquals(0, r.code(), r.stderr());
        assertEquals(List.of("mount", "--uid-map", "1001=planner", "--uid-map", "1002=coder", "--home", "/srv/chibi",
                "--system-uid", "0", "-o", "noexec,nosuid,nodev,allow_other", "/mnt/chibi"), r.launcherArgs());
    }

    @Test
    void theSourceBecomesTheMountsNameUnlessAnFsnameIsGiven() throws Exception {
        // as mount.fuse does: df, findmnt and xfstests find a mount by the source it was mounted from
        assertEquals(List.of("mount", "--context", "planner", "-o", "fsname=team-share", "/mnt/planner"),
                run("team-share", "/mnt/planner", "-o", "ctx=planner").launcherArgs());
        assertEquals(List.of("mount", "--context", "planner", "-o", "fsname=mine", "/mnt/planner"),
                run("team-share", "/mnt/planner", "-o", "ctx=planner,fsname=mine").launcherArgs());
        assertEquals(List.of("mount", "--context", "planner", "/mnt/planner"),
                run("a,b", "/mnt/planner", "-o", "ctx=planner").launcherArgs(), "a comma cannot ride in -o");
    }

    @Test
    void aMountIsQuietOnSuccessUnlessVerbose() throws Exception {
        // mount(8) and its helpers print nothing when all went well (xfstests compares their output)
        Result quiet = run("chibifs", "/mnt/planner", "-o", "ctx=planner");
        assertEquals(0, quiet.code(), quiet.stderr());
        assertEquals("", quiet.stdout());
        assertEquals("chibifs: mounted\n", run("chibifs", "/mnt/planner", "-v", "-o", "ctx=planner").stdout());
    }

    /** A stale mount cleared before mounting is news, not a failure: quiet too, shown with -v. */
    @Test
    void aClearedStaleMountIsQuietUnlessVerbose() throws Exception {
        launcherEnv.put("FAKE_CLEARED", "1");
        Result quiet = run("chibifs", "/mnt/planner", "-o", "ctx=planner");
        assertEquals(0, quiet.code(), quiet.stderr());
        assertEquals("", quiet.stdout() + quiet.stderr());
        Result verbose = run("chibifs", "/mnt/planner", "-v", "-o", "ctx=planner");
        assertEquals("chibifs: cleared a stale mount at /mnt/planner left by a daemon that died\nchibifs: mounted\n",
                verbose.stdout());
    }

    /** The launcher's errors name its own options; the user wrote the mount's, so those are named. */
    @Test
    void anErrorNamesTheOptionAsTheUserWroteIt() throws Exception {
        launcherEnv.put("FAKE_ERR", "chibifs: Invalid value for option '--kernel-cache': invalid duration '5x'"
                + " (see 'chibifs mount --help')");
        Result r = runWithLauncherExit(2, "chibifs", "/mnt/planner", "-o", "ctx=planner,kcache=5x");
        assertEquals(1, r.code());
        assertEquals("chibifs: Invalid value for option 'kcache=': invalid duration '5x' (see 'chibifs mount --help')\n",
                r.stderr());
        launcherEnv.put("FAKE_ERR", "chibifs: invalid --store '/x=nothing': unknown store; choose a --home of your own");
        assertEquals("chibifs: invalid store='/x=nothing': unknown store; choose a home= of your own\n",
                runWithLauncherExit(2, "chibifs", "/mnt/planner", "-o", "ctx=planner,store=/x=nothing").stderr());
    }

    @Test
    void aRemountChangesOnlyTheMountsFlagsWithoutTheDaemon() throws Exception {
        // mount -o remount,ro /mnt/planner hands the helper the fstab options again, remount among them
        Result r = run("chibifs", "/mnt/planner", "-f", "-o", "ctx=planner,home=/srv/chibi,remount,ro,noatime,allow_other");
        assertEquals(0, r.code(), r.stderr());
        assertEquals(List.of(), r.launcherArgs(), "no second daemon");
        assertEquals("mount.fuse.chibifs: mount -i -o remount,ro,noatime chibifs /mnt/planner\n", r.stderr());
    }

    /**
     * mount(8) hands a helper an fstab mount's fstab line, which lacks the nosuid,nodev every chibifs
     * mount has: remounted with those flags alone, the mount became suid and dev. The mount's own
     * (findmnt, stood in for here) are kept; a remount may add them, and changes every other flag.
     */
    @Test
    void aRemountKeepsTheMountsNosuidAndNodev() throws Exception {
        Path bin = Files.createDirectory(tmp.resolve("bin"));
        Path findmnt = Files.writeString(bin.resolve("findmnt"), "#!/bin/sh\necho rw,nosuid,nodev,noexec,relatime\n");
        Files.setPosixFilePermissions(findmnt, PosixFilePermissions.fromString("rwxr-xr-x"));
        extraPath = bin;
        Result r = run("chibifs", "/mnt/planner", "-f", "-o", "rw,remount,ctx=planner,home=/srv/chibi,ro");
        assertEquals(0, r.code(), r.stderr());
        assertEquals("mount.fuse.chibifs: mount -i -o remount,rw,ro,nosuid,nodev chibifs /mnt/planner\n", r.stderr(),
                "noexec is the fstab line's to say: mount(8) hands a helper no exec, only the flags that are set");
        assertEquals("mount.fuse.chibifs: mount -i -o remount,ro,nodev,nosuid team /mnt/planner\n",
                run("team", "/mnt/planner", "-f", "-o", "ro,nodev,remount,nosuid").stderr(), "each once");
    }

    /**
     * A remount of a mount whose daemon is gone exited 0 saying nothing (the kernel changes a dead
     * mount's flags as well): one line naming the mount and the fix, mount(8)'s failure, no remount.
     */
    @Test
    void aRemountOfAMountWhoseDaemonIsGoneFailsSayingWhatToDo() throws Exception {
        Path bin = Files.createDirectory(tmp.resolve("bin"));
        Path stat = Files.writeString(bin.resolve("stat"), "#!/bin/sh\necho \"stat: cannot statx '$2': Transport endpoint"
                + " is not connected\" >&2\nexit 1\n");
        Files.setPosixFilePermissions(stat, PosixFilePermissions.fromString("rwxr-xr-x"));
        extraPath = bin;
        Result r = run("chibifs", "/mnt/planner", "-f", "-o", "ctx=planner,home=/srv/chibi,remount,ro");
        assertEquals(32, r.code(), r.stderr());
        assertEquals(List.of(), r.launcherArgs());
        assertEquals("mount.fuse.chibifs: cannot remount /mnt/planner: its daemon is gone (Transport endpoint is not"
                + " connected): chibifs umount /mnt/planner clears it, then mount it again\n", r.stderr());
    }

    @Test
    void acceptsASemicolonListOfUidMaps() throws Exception {
        Result r = run("chibifs", "/mnt/chibi", "-o", "uidmap=1001:planner;1002:coder");
        assertEquals(List.of("mount", "--uid-map", "1001=planner", "--uid-map", "1002=coder", "/mnt/chibi"),
                r.launcherArgs());
    }

    @Test
    void perContextMountWithCtxOrContext() throws Exception {
        assertEquals(List.of("mount", "--context", "planner", "-o", "ro,big_writes", "/mnt/planner"),
                run("chibifs", "/mnt/planner", "-n", "-o", "ctx=planner,defaults,noauto,ro,big_writes").launcherArgs());
        assertEquals(List.of("mount", "--context", "coder", "/mnt/coder"),
                run("chibifs", "/mnt/coder", "-ocontext=coder").launcherArgs());
    }

    @Test
    void kcacheSetsTheKernelCache() throws Exception {
        assertEquals(List.of("mount", "--context", "planner", "--kernel-cache", "off", "/mnt/planner"),
                run("chibifs", "/mnt/planner", "-o", "ctx=planner,kcache=off").launcherArgs());
        assertEquals(List.of("mount", "--kernel-cache", "5s", "--context", "planner", "/mnt/planner"),
                run("chibifs", "/mnt/planner", "-o", "kcache=5s,ctx=planner").launcherArgs());
        assertRefused("ctx=a,kcache=", "kcache= needs a duration or off");
    }

    @Test
    void symlinksChoosesTheLinkRule() throws Exception {
        assertEquals(List.of("mount", "--context", "planner", "--symlinks", "any", "/mnt/planner"),
                run("chibifs", "/mnt/planner", "-o", "ctx=planner,symlinks=any").launcherArgs());
        assertEquals(List.of("mount", "--symlinks", "none", "--context", "planner", "/mnt/planner"),
                run("chibifs", "/mnt/planner", "-o", "symlinks=none,ctx=planner").launcherArgs());
        assertRefused("ctx=a,symlinks=all", "symlinks='all' is not zone, any or none");
        assertRefused("ctx=a,symlinks=", "symlinks='' is not zone, any or none");
    }

    @Test
    void noreaddirplusTurnsListingAttributesOff() throws Exception {
        assertEquals(List.of("mount", "--context", "planner", "--no-readdirplus", "/mnt/planner"),
                run("chibifs", "/mnt/planner", "-o", "ctx=planner,noreaddirplus").launcherArgs());
        assertEquals(List.of("mount", "--readdirplus", "--context", "planner", "/mnt/planner"),
                run("chibifs", "/mnt/planner", "-o", "readdirplus,ctx=planner").launcherArgs());
        assertRefused("ctx=a,noreaddirplus=1", "noreaddirplus takes no value");
    }

    @Test
    void ioUringTurnsRequestsThroughIoUringOn() throws Exception {
        assertEquals(List.of("mount", "--context", "planner", "--io-uring", "/mnt/planner"),
                run("chibifs", "/mnt/planner", "-o", "ctx=planner,io_uring").launcherArgs());
        assertEquals(List.of("mount", "--no-io-uring", "--context", "planner", "/mnt/planner"),
                run("chibifs", "/mnt/planner", "-o", "noio_uring,ctx=planner").launcherArgs());
        assertRefused("ctx=a,io_uring=1", "io_uring takes no value");
        assertRefused("ctx=a,iouring", "unknown option 'iouring'");
    }

    @Test
    void storeAndToolsSysPassThroughAsMountOptions() throws Exception {
        assertEquals(List.of("mount", "--context", "planner", "--store", "/shared/scratch=memory:64M", "--store",
                        "/shared/docs=readonly:/srv/docs", "--tools-sys", "/srv/tools", "/mnt/planner"),
                run("chibifs", "/mnt/planner", "-o", "ctx=planner,store=/shared/scratch=memory:64M,"
                        + "store=/shared/docs=readonly:/srv/docs,tools_sys=/srv/tools").launcherArgs());
        assertRefused("ctx=a,store=memory", "store='memory' is not PREFIX=SPEC");
        assertRefused("ctx=a,store=/x=", "store='/x=' is not PREFIX=SPEC");
        assertRefused("ctx=a,tools_sys=srv", "tools_sys='srv' must be an absolute directory");
        // chibifs refuses a password in an endpoint (the same parser as --store); this script shows none either
        assertRefused("ctx=a,store=s3://b/p?endpoint=http://AKIA:s3cret@h",
                "store='s3://b/p?endpoint=http://***@h' is not PREFIX=SPEC");
        Result fake = run("chibifs", "/mnt/a", "-f", "-o", "ctx=a,store=/=s3://b/p?endpoint=http://AKIA:s3cret@h");
        assertTrue(fake.stderr().contains("--store /=s3://b/p?endpoint=http://***@h /mnt/a")
                && !fake.stderr().contains("s3cret"), fake.stderr());
        // a token alone, and userinfo %-escaped, go whole (a second tester round saw both in clear)
        fake = run("chibifs", "/mnt/a", "-f", "-o", "ctx=a,store=/=s3://b/p?endpoint=https://t0kenSECRET@h");
        assertTrue(fake.stderr().contains("--store /=s3://b/p?endpoint=https://***@h /mnt/a"), fake.stderr());
        fake = run("chibifs", "/mnt/a", "-f", "-o", "ctx=a,store=/=s3://b/p?endpoint=http%3A%2F%2FAKIA%3As3cretPW%40h");
        assertTrue(fake.stderr().contains("--store /=s3://b/p?endpoint=http%3A%2F%2F***%40h /mnt/a")
                && !fake.stderr().contains("s3cretPW"), fake.stderr());
        // a third round: escaped slashes with a plain @, and a password holding an @
        fake = run("chibifs", "/mnt/a", "-f", "-o", "ctx=a,store=/=s3://b/p?endpoint=http%3A%2F%2Fuser%3Apw@h");
        assertTrue(fake.stderr().contains("endpoint=http%3A%2F%2F***@h /mnt/a"), fake.stderr());
        fake = run("chibifs", "/mnt/a", "-f", "-o", "ctx=a,store=/=s3://b/p?endpoint=https://user:p@ss@h");
        assertTrue(fake.stderr().contains("endpoint=https://***@h /mnt/a"), fake.stderr());
    }

    @Test
    void anS3StoreItsCacheDirFlushAfterMetadataTtlAndCacheSizePassThrough() throws Exception {
        assertEquals(List.of("mount", "--context", "planner", "--store",
                        "/shared/team=s3://team-bucket/chibi?endpoint=http://minio:9000", "--cache-dir", "/var/cache/chibi",
                        "--flush-after", "500ms", "--metadata-ttl", "10s", "--cache-size", "20G", "--prefetch-below", "0",
                        "--lock-lease", "10s", "/mnt/planner"),
                run("chibifs", "/mnt/planner", "-o", "ctx=planner,store=/shared/team=s3://team-bucket/chibi"
                        + "?endpoint=http://minio:9000,cache_dir=/var/cache/chibi,flush_after=500ms,metadata_ttl=10s,"
                        + "cache_size=20G,prefetch_below=0,lock_lease=10s").launcherArgs());
        assertEquals(List.of("mount", "--context", "a", "--store", "/=s3://b", "--local-locks", "/mnt/a"),
                run("chibifs", "/mnt/a", "-o", "ctx=a,store=/=s3://b,local_locks").launcherArgs());
        assertEquals(List.of("mount", "--context", "a", "--store", "/=s3://b", "--exclusive-creates", "/mnt/a"),
                run("chibifs", "/mnt/a", "-o", "ctx=a,store=/=s3://b,exclusive_creates").launcherArgs());
        assertRefused("ctx=a,metadata_ttl=", "metadata_ttl= needs a duration");
        assertRefused("ctx=a,cache_dir=cache", "cache_dir='cache' must be an absolute directory");
        assertRefused("ctx=a,flush_after=", "flush_after= needs a duration");
        assertRefused("ctx=a,cache_size=", "cache_size= needs a size");
        assertRefused("ctx=a,prefetch_below=", "prefetch_below= needs a size");
        assertRefused("ctx=a,lock_lease=", "lock_lease= needs a duration");
        assertRefused("ctx=a,local_locks=yes", "local_locks takes no value");
        assertRefused("ctx=a,exclusive_creates=1", "exclusive_creates takes no value");
        assertRefused("ctx=a,cache-dir=/c", "unknown option 'cache-dir=/c'");
    }

    /** mount(8) passes a helper's status on: 1 incorrect invocation, 32 mount failure. */
    @Test
    void theLaunchersFailuresBecomeMountsExitStatuses() throws Exception {
        assertEquals(1, runWithLauncherExit(2, "chibifs", "/mnt/p", "-o", "ctx=planner").code(), "a bad value");
        assertEquals(32, runWithLauncherExit(1, "chibifs", "/mnt/p", "-o", "ctx=planner").code(), "a mount that failed");
        assertEquals(0, run("chibifs", "/mnt/p", "-o", "ctx=planner").code());
        Result quiet = run("chibifs", "/mnt/p", "-o", "ctx=planner");
        assertEquals("", quiet.stdout(), "quiet on success, as mount(8)'s helpers are");
        assertEquals("chibifs: mounted\n", run("chibifs", "/mnt/p", "-v", "-o", "ctx=planner").stdout());
    }

    @Test
    void fakeMountPrintsTheCommandAndRunsNothing() throws Exception {
        Result r = run("chibifs", "/mnt/planner", "-f", "-v", "-o", "ctx=planner");
        assertEquals(0, r.code(), r.stderr());
        assertEquals(List.of(), r.launcherArgs());
        assertTrue(r.stderr().contains("chibifs mount --context planner /mnt/planner"), r.stderr());
    }

    private void assertRefused(String options, String message) throws Exception {
        Result r = run("chibifs", "/mnt/x", "-o", options);
        assertEquals(1, r.code(), "should refuse " + options + " as mount(8) has it: incorrect invocation");
        assertEquals(List.of(), r.launcherArgs(), "nothing may be mounted after a refusal");
        assertTrue(r.stderr().startsWith("mount.fuse.chibifs: ") && r.stderr().contains(message), r.stderr());
        assertEquals(1, r.stderr().lines().count(), r.stderr());
    }

    @Test
    void refusesOptionsThatLookOursButAreNot() throws Exception {
        assertRefused("ctx=a,uid_map=1001:planner", "unknown option 'uid_map=1001:planner'");
        assertRefused("ctx=a,chibi_home=/srv", "unknown option 'chibi_home=/srv'");
        assertRefused("ctx=a,system-uid=0", "unknown option 'system-uid=0'");
    }

    @Test
    void refusesBadValues() throws Exception {
        assertRefused("uidmap=1001=planner", "uidmap entry '1001=planner' is not UID:NAME");
        assertRefused("uidmap=abc:planner", "uidmap entry 'abc:planner' is not UID:NAME");
        assertRefused("uidmap=1001:", "uidmap entry '1001:' is not UID:NAME");
        assertRefused("ctx=a,system_uid=root", "system_uid='root' is not a uid");
        assertRefused("ctx=a,home=srv", "home='srv' must be an absolute directory");
        assertRefused("ctx=", "ctx= needs a context name");
    }

    @Test
    void refusesAmbiguousOrMissingCallers() throws Exception {
        assertRefused("ctx=a,uidmap=1001:planner", "per context or by uid map, not both");
        assertRefused("ctx=a,ctx=b", "only one context per mount");
        assertRefused("allow_other", "write ctx=");
    }
}
