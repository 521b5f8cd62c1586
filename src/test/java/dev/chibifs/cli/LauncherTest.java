package dev.chibifs.cli;

import dev.chibifs.testing.FuseSupport;
import dev.chibifs.testing.MountedFs;
import dev.chibifs.testing.Sh;
import dev.chibifs.testing.TestUsers;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.jar.Attributes;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.jar.Manifest;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code scripts/chibifs}, the launcher, run from a checkout with a packaged jar as a user runs it. */
@Timeout(180)
class LauncherTest {

    /**
     * What a running process has open, one "fd -> target" a line. Not `ls -l`: the daemon opens and
     * closes descriptors as it starts, and ls fails on one that closed between its listing and its stat.
     */
    private static String openFiles(long pid) throws IOException {
        StringBuilder out = new StringBuilder();
        try (Stream<Path> fds = Files.list(Path.of("/proc/" + pid + "/fd"))) {
            for (Path fd : fds.toList()) {
                try {
                    out.append(fd.getFileName()).append(" -> ").append(Files.readSymbolicLink(fd)).append('\n');
                } catch (java.nio.file.NoSuchFileException closedMeanwhile) {
                    // closed since the listing: not open
                }
            }
        }
        return out.toString();
    }

    @Test
    void aMountKeepsWorkingWhenTheJarIsRebuiltUnderIt() throws Exception {
        FuseSupport.requireFuse();
        Path root = MountedFs.tempRoot();
        Path checkout = root.resolve("checkout");
        Path launcher = Files.createDirectories(checkout.resolve("scripts")).resolve("chibifs");
        Files.copy(Path.of("scripts/chibifs"), launcher, StandardCopyOption.COPY_ATTRIBUTES);
        Path jar = checkout.resolve("target/chibifs.jar");
        packageJar(jar);
        Path mnt = Files.createDirectories(root.resolve("mnt"));
        try {
            Sh.run("'" + launcher + "' mount --context planner --home '" + root.resolve("home") + "' '" + mnt + "'").ok();
            long pid = daemonPid(mnt);
            String open = openFiles(pid);
            assertFalse(open.contains(jar.toString()), "the daemon holds the jar a rebuild rewrites:\n" + open);
            assertTrue(open.contains(checkout.resolve("target/daemon-jars") + "/chibifs-"), open);
            String maps = Files.readString(Path.of("/proc/" + pid + "/maps"));
            assertTrue(maps.contains(".jsa") && !maps.contains("-s3.jsa"), "a local daemon maps the archive without S3:\n" + maps);

            // the jar plugin rewrites target/chibifs.jar in place before shading replaces it
            Files.writeString(jar, "half-written by a rebuild");
            Sh.run(mnt, "mkdir shared/d && echo x > shared/d/f && ls -l shared/d && mv shared/d/f shared/d/g"
                    + " && cat shared/d/g && rm -r shared/d").ok();
            assertTrue(Sh.run(mnt, "echo no > sys/x").err().contains("Permission denied"));

            Sh.run("fusermount -u '" + mnt + "'").ok();
            ProcessHandle.of(pid).ifPresent(p -> p.onExit().orTimeout(20, TimeUnit.SECONDS).join());
            assertEquals(List.of(), Sh.run("ls " + mnt).ok().out().lines().toList(), "unmounted");
        } finally {
            Sh.run("fusermount -u -z '" + mnt + "' 2>/dev/null; true");
        }
    }

    /**
     * A JVM maps and relocates the whole of its class archive, every page resident: the S3 client's
     * classes, about half of an archive, go only into the one of commands that name an S3 store.
     */
    @Test
    void onlyACommandNamingAnS3StoreMapsAnArchiveWithTheS3Client() throws Exception {
        Path checkout = MountedFs.tempRoot().resolve("checkout");
        Path launcher = Files.createDirectories(checkout.resolve("scripts")).resolve("chibifs");
        Files.copy(Path.of("scripts/chibifs"), launcher, StandardCopyOption.COPY_ATTRIBUTES);
        packageJar(checkout.resolve("target/chibifs.jar"));

        Sh.run("'" + launcher + "' --version").ok();
        // refused at once (no such bucket name), but its JVM started with the S3 archive
        Sh.Result s3 = Sh.run("'" + launcher + "' ls --store '/x=s3://B/p' vfs:///");
        assertTrue(s3.err().contains("is not a bucket name"), s3.err());

        Path copies = checkout.resolve("target/daemon-jars");
        Path copy;
        try (Stream<Path> files = Files.list(copies)) {
            copy = files.filter(f -> f.toString().endsWith(".jar")).findFirst().orElseThrow();
        }
        String base = copy.toString().substring(0, copy.toString().length() - ".jar".length());
        String s3Client = "software.amazon.awssdk.services.s3.";
        assertFalse(archivedClasses(copy, base + ".jsa").contains(s3Client));
        assertTrue(archivedClasses(copy, base + "-s3.jsa").contains(s3Client));
    }

    /** The classes archive {@code jsa} of jar {@code jar} holds, as the JVM lists them. */
    private static String archivedClasses(Path jar, String jsa) throws IOException {
        assertTrue(Files.size(Path.of(jsa)) > 0, jsa);
        Sh.Result listed = Sh.run("'" + ProcessHandle.current().info().command().orElse("java") + "' -XX:SharedArchiveFile='" + jsa + "' -XX:+PrintSharedArchiveAndExit -cp '" + jar + "'");
        assertTrue(listed.out().contains("dev.chibifs.cli.Main"), listed.out() + listed.err());
        return listed.out();
    }

    @Test
    void aBackgroundMountsJvmBecomesItsDaemonAndLeavesTheTerminal() throws Exception {
        FuseSupport.requireFuse();
        Path root = MountedFs.tempRoot();
        Path mnt = Files.createDirectories(root.resolve("mnt"));
        Path home = root.resolve("home");
        try {
            Sh.Result r = Sh.run(launcherMount(home, mnt)).ok();
            assertTrue(r.out().startsWith("chibifs: mounted " + mnt + " (context planner, store "), r.out());
            assertEquals("", r.err());
            // the registry and the stats socket are there once mount returns, and name the pid it printed
            long pid = daemonPid(mnt);
            assertTrue(r.out().contains("daemon pid " + pid + ", log "), r.out());
            Sh.run(FROM_CLASSES + "scripts/chibifs stats '" + mnt + "'").ok();
            assertEquals("synced " + mnt + "\n", Sh.run(FROM_CLASSES + "scripts/chibifs sync '" + mnt + "'").ok().out());

            // the command's own JVM, not a second one it started with --foreground
            String cmdline = Files.readString(Path.of("/proc/" + pid + "/cmdline")).replace('\0', ' ');
            assertTrue(cmdline.contains(" mount ") && !cmdline.contains("--foreground"), cmdline);
            // a session of its own, stdin from /dev/null, stdout and stderr to its log, the launcher's pipe closed
            String stat = Files.readString(Path.of("/proc/" + pid + "/stat"));
            String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
            assertEquals(String.valueOf(pid), fields[3], "session id: " + stat);
            assertEquals(Path.of("/dev/null"), Files.readSymbolicLink(Path.of("/proc/" + pid + "/fd/0")));
            Path log = mountLog(home, mnt);
            assertEquals(log, Files.readSymbolicLink(Path.of("/proc/" + pid + "/fd/1")));
            assertEquals(log, Files.readSymbolicLink(Path.of("/proc/" + pid + "/fd/2")));
            String fds = openFiles(pid);
            assertFalse(fds.contains("pipe:") || fds.contains("/dev/pts") || fds.contains("/dev/tty"), fds);
            Sh.run(mnt, "echo x > shared/f && cat shared/f").ok();

            // SIGINT still unmounts cleanly, though a background job of a script starts with it ignored
            Sh.run("kill -INT " + pid).ok();
            ProcessHandle.of(pid).ifPresent(p -> p.onExit().orTimeout(20, TimeUnit.SECONDS).join());
            assertFalse(Sh.run("grep -q ' " + mnt + " ' /proc/mounts").exitCode() == 0, "still mounted");
            assertTrue(Files.readString(log).contains("signal received: unmounting " + mnt), Files.readString(log));
        } finally {
            Sh.run("fusermount -u -z '" + mnt + "' 2>/dev/null; true");
        }
    }

    /** systemd runs `mount --foreground`: that JVM is the daemon, so it must not keep the commands' C1-only flag. */
    @Test
    void aForegroundMountsJvmIsStartedAsADaemonAndACommandsAsACommand(@org.junit.jupiter.api.io.TempDir Path fake)
            throws Exception {
        fakeJava(fake);
        Path tmp = Files.createDirectories(fake.resolve("tmp"));
        // TMPDIR: where the class archive's training home goes, and must go again (a JVM that wrote no
        // archive failed the launcher's copy under set -e and left it there)
        String launcher = "JAVA_HOME='" + fake + "' TMPDIR='" + tmp + "' scripts/chibifs ";
        String daemon = Sh.run(launcher + "mount --foreground --context planner /nowhere").ok().out();
        assertTrue(daemon.contains(" mount --foreground ") && !daemon.contains("TieredStopAtLevel"), daemon);
        // a command keeps it, where the launcher gives it at all (not to a jar it could not copy)
        String command = Sh.run(launcher + "ls vfs:///").ok().out();
        assertTrue(command.contains("-XX:TieredStopAtLevel=1 ") || command.contains("-Dchibifs.cli-jvm-args= "), command);
        try (java.util.stream.Stream<Path> left = Files.list(tmp)) {
            assertEquals(List.of(), left.toList(), "what the launcher left in TMPDIR");
        }
    }

    /**
     * CHIBIFS_JAVA_OPTS replaced the launcher's flags, though the docs give it for java.io.tmpdir: a
     * user setting that lost the daemon's small heap and the rest. It comes after them now; a
     * collector or a heap of the user's replaces ours, where both would not start the JVM.
     */
    @Test
    void theUsersJavaOptionsComeAfterTheLaunchersAndReplaceOnlyWhatWouldClash(@org.junit.jupiter.api.io.TempDir Path fake)
            throws Exception {
        fakeJava(fake);
        String launcher = "JAVA_HOME='" + fake + "' CHIBIFS_CLASSPATH=/nowhere scripts/chibifs ls vfs:///";
        String tmpdir = Sh.run("CHIBIFS_JAVA_OPTS='-Djava.io.tmpdir=/t -Xss1m' " + launcher).ok().out();
        assertTrue(tmpdir.startsWith("-Xms16m -XX:MaxNewSize=16m -XX:+UseSerialGC -XX:MaxMetaspaceSize=64m -Xss512k "), tmpdir);
        assertTrue(tmpdir.contains(" -XX:PerfDataSamplingInterval=5000 -Djava.io.tmpdir=/t -Xss1m "), tmpdir);
        String own = Sh.run("CHIBIFS_JAVA_OPTS='-Xmx12m -XX:+UseG1GC' " + launcher).ok().out();
        assertTrue(own.startsWith("-XX:MaxMetaspaceSize=64m -Xss512k ") && own.contains(" -Xmx12m -XX:+UseG1GC "), own);
        assertEquals(Sh.run(launcher).ok().out().replaceAll("\\s+", " "),
                Sh.run("CHIBIFS_JAVA_OPTS= " + launcher).ok().out().replaceAll("\\s+", " "), "empty is unset");
    }

    @Test
    void aBackgroundMountThatFailsSaysWhyOnStderrAndExitsOne() throws Exception {
        FuseSupport.requireFuse();
        Path root = MountedFs.tempRoot();
        Path mnt = Files.createDirectories(root.resolve("mnt"));
        Files.writeString(mnt.resolve("occupied"), "not empty");
        Sh.Result r = Sh.run(FROM_CLASSES + "scripts/chibifs mount --context planner --home '" + root.resolve("home")
                + "' '" + mnt + "'");
        assertEquals(1, r.exitCode(), r.err());
        assertEquals("", r.out());
        // the log was the new home's, which the failed mount removed: the line names none
        assertEquals("chibifs: mountpoint " + mnt + " is not empty: choose an empty directory, or pass -o nonempty\n",
                r.err());
        assertEquals(1, r.err().strip().lines().count(), r.err());
        assertFalse(Sh.run("grep -q ' " + mnt + " ' /proc/mounts").exitCode() == 0);
        // a bad option is refused before anything detaches, with the usage exit code
        Sh.Result bad = Sh.run(FROM_CLASSES + "scripts/chibifs mount --context planner --kernel-cache 5ms '" + mnt + "'");
        assertEquals(2, bad.exitCode(), bad.err());
        assertTrue(bad.err().startsWith("chibifs: Invalid value for option '--kernel-cache': '5ms' is out of range"), bad.err());
    }

    /**
     * vfscmd3 finding 7: `write < /` said "I/O error: Is a directory", which reads as if the target
     * were a directory; the failure now says it was reading stdin, and nothing is written.
     */
    @Test
    void aWriteWhoseStdinCannotBeReadSaysSo(@org.junit.jupiter.api.io.TempDir Path home) throws Exception {
        Files.createDirectories(home.resolve("vfs/shared"));
        Sh.Result r = Sh.run(FROM_CLASSES + "scripts/chibifs write --as alice --home '" + home + "' vfs:///shared/s < /");
        assertEquals(5, r.exitCode(), r.err());
        assertEquals("chibifs: I/O error: reading standard input: Is a directory\n", r.err());
        assertFalse(Files.exists(home.resolve("vfs/shared/s")));
    }

    /** The same finding: with stdin closed the launcher gave the JVM /dev/null, and `write <&-` emptied the file, exit 0. */
    @Test
    void aWriteWithStdinClosedFailsAndKeepsTheFile(@org.junit.jupiter.api.io.TempDir Path home) throws Exception {
        Files.createDirectories(home.resolve("vfs/shared"));
        Files.writeString(home.resolve("vfs/shared/s"), "kept");
        Sh.Result r = Sh.run(FROM_CLASSES + "scripts/chibifs write --as alice --home '" + home + "' vfs:///shared/s <&-");
        assertEquals(5, r.exitCode(), r.err());
        assertEquals("chibifs: I/O error: reading standard input: Bad file descriptor\n", r.err());
        assertEquals("kept", Files.readString(home.resolve("vfs/shared/s")));
        Sh.run(FROM_CLASSES + "scripts/chibifs write --as alice --home '" + home + "' --content new vfs:///shared/s <&-").ok();
        assertEquals("new", Files.readString(home.resolve("vfs/shared/s")));
    }

    /** cache put said only "chibifs: Is a directory" (or "Bad file descriptor"), as write did before. */
    @Test
    void aCachePutWhoseStdinCannotBeReadSaysSo(@org.junit.jupiter.api.io.TempDir Path home) throws Exception {
        String put = FROM_CLASSES + "scripts/chibifs cache put --context coder --tool t --home '" + home + "'";
        Sh.Result dir = Sh.run(put + " < /");
        assertEquals(1, dir.exitCode(), dir.err());
        assertEquals("chibifs: reading standard input: Is a directory\n", dir.err());
        Sh.Result closed = Sh.run(put + " <&-");
        assertEquals(1, closed.exitCode(), closed.err());
        assertEquals("chibifs: reading standard input: Bad file descriptor\n", closed.err());
        assertFalse(Files.exists(home.resolve("vfs")), "nothing stored");
    }

    @Test
    void aBackgroundMountWithItsStandardDescriptorsClosedStillMounts() throws Exception {
        FuseSupport.requireFuse();
        Path root = MountedFs.tempRoot();
        Path mnt = Files.createDirectories(root.resolve("mnt"));
        try {
            // closed, stdout would be the first file the JVM opens, which the daemon's log then replaced
            Sh.run(FROM_CLASSES + "scripts/chibifs mount --context planner --home '" + root.resolve("home") + "' '" + mnt
                    + "' <&- >&- 2>&-").ok();
            Sh.run(mnt, "echo x > shared/f && cat shared/f").ok();
            Sh.run(FROM_CLASSES + "scripts/chibifs umount '" + mnt + "'").ok();
        } finally {
            Sh.run("fusermount -u -z '" + mnt + "' 2>/dev/null; true");
        }
    }

    /**
     * A daemon whose heap runs out (here a small one, walked over 100,000 files it must keep a node
     * for) exits, whatever JVM flags it was given: the walk ends with ENOTCONN instead of waiting
     * for ever on request threads the OutOfMemoryError killed, and the log says why.
     */
    @Test
    void aDaemonOutOfMemoryEndsItsMountInsteadOfHangingIt() throws Exception {
        FuseSupport.requireFuse();
        Path root = MountedFs.tempRoot();
        Path mnt = Files.createDirectories(root.resolve("mnt"));
        Path home = root.resolve("home");
        try {
            // 12 MiB of heap runs out about 20,000 names into the walk: 50,000 leave a margin, and
            // fewer files to make (ext4 here takes up to half a millisecond per create after many removals)
            Sh.run("CHIBIFS_JAVA_OPTS='-Xmx12m -XX:+UseSerialGC' " + launcherMount(home, mnt)).ok();
            long pid = daemonPid(mnt);
            // made in the store itself: only the walk through the mount costs the daemon memory
            Sh.run("cd '" + home.resolve("vfs/shared") + "' && mkdir many && cd many && python3 -c \"import os\n"
                    + "for d in range(50):\n    os.mkdir(f'd{d}')\n"
                    + "    for f in range(1000):\n        open(f'd{d}/f{f}', 'w').close()\"").ok();
            Sh.Result walk = Sh.run("timeout 120 find '" + mnt + "/shared/many' -printf x | wc -c");
            assertTrue(walk.err().contains("Transport endpoint is not connected")
                    || walk.err().contains("Software caused connection abort"), walk.err());
            ProcessHandle.of(pid).ifPresent(p -> p.onExit().orTimeout(30, TimeUnit.SECONDS).join());
            Path log = mountLog(home, mnt);
            assertTrue(Files.readString(log).contains("Terminating due to java.lang.OutOfMemoryError"), Files.readString(log));
            assertTrue(Sh.run("ls '" + mnt + "'").err().contains("Transport endpoint is not connected"));
        } finally {
            Sh.run("fusermount -u -z '" + mnt + "' 2>/dev/null; true");
        }
    }

    /**
     * A daemon started at umask 000 makes nothing others may write: its store directories were
     * 0777 (an unmapped user wrote another context's home in the store directly), and its sockets,
     * which drive and trace the mount, anyone's to connect to.
     */
    @Test
    void aDaemonStartedAtUmaskZeroMakesNothingOthersMayWrite() throws Exception {
        FuseSupport.requireFuse();
        Path root = MountedFs.tempRoot();
        Path mnt = Files.createDirectories(root.resolve("mnt"));
        Path home = root.resolve("home");
        try {
            Sh.run("umask 000 && " + launcherMount(home, mnt)).ok();
            long pid = daemonPid(mnt);
            Sh.run("timeout 30 mkdir -p '" + mnt + "/shared/made/here' && timeout 30 sh -c 'echo x > \"$1\"' sh '"
                    + mnt + "/shared/made/f'").ok();
            for (Path p : List.of(home.resolve("vfs/shared"), home.resolve("vfs/shared/made"), home.resolve("vfs/shared/made/here"),
                    home.resolve("vfs/shared/made/f"), mountLog(home, mnt), MountRegistry.forCurrentUser().dir(),
                    StatsSocket.pathFor(MountRegistry.forCurrentUser(), pid), TraceSocket.pathFor(MountRegistry.forCurrentUser(), pid))) {
                int mode = (Integer) Files.getAttribute(p, "unix:mode", java.nio.file.LinkOption.NOFOLLOW_LINKS);
                assertEquals(0, mode & 022, String.format("%s is %04o", p, mode & 07777));
            }
        } finally {
            Sh.run("fusermount -u -z '" + mnt + "' 2>/dev/null; true");
        }
    }

    /**
     * jffi unpacked its native stub with a mode the umask cut: at 277 (or 222, 377) its reopening
     * to write failed for any user but root, and every command, --version too, ended in a
     * StackOverflowError from the uncaught-exception handler. The directories it then made were
     * 0500, and the next step inside them failed.
     */
    @Test
    void aUserAtAUmaskWithoutOwnerWriteStillRunsCommands() throws Exception {
        TestUsers.User nobody = TestUsers.ensure("nobody");
        Path root = MountedFs.tempRoot();
        String classpath = MountedFs.readableClasspath(Files.createDirectory(root.resolve("classpath")));
        String launcher = Sh.quote(Path.of("scripts/chibifs").toAbsolutePath().toString());
        try {
            for (String umask : List.of("222", "277", "777")) {
                Sh.Result r = Sh.as(nobody.uid(), nobody.gid(), root, "umask " + umask + " && CHIBIFS_CLASSPATH="
                        + Sh.quote(classpath) + " " + launcher + " --version && CHIBIFS_CLASSPATH=" + Sh.quote(classpath)
                        + " " + launcher + " status");
                assertEquals(0, r.exitCode(), "umask " + umask + ": " + r.err());
                assertTrue(r.out().startsWith("chibifs "), r.out());
            }
            // its own directories keep the owner's bits (mkdir -p's rule): at 277 the store's came out
            // 0500, and write said the store was not writable (exit 3)
            Path home = Files.createDirectory(root.resolve("home"));
            Sh.run("chown nobody " + Sh.quote(home.toString())).ok();
            Sh.Result write = Sh.as(nobody.uid(), nobody.gid(), root, "umask 277 && CHIBIFS_CLASSPATH=" + Sh.quote(classpath)
                    + " " + launcher + " write --home " + Sh.quote(home.toString()) + " --as planner --content hi"
                    + " vfs:///home/planner/notes/today.md");
            assertEquals(0, write.exitCode(), write.err());
            for (String dir : List.of("vfs", "vfs/home", "vfs/home/planner", "vfs/home/planner/notes")) {
                assertEquals("rwx------", java.nio.file.attribute.PosixFilePermissions.toString(
                        Files.getPosixFilePermissions(home.resolve(dir))), dir);
            }
            assertEquals("hi", Files.readString(home.resolve("vfs/home/planner/notes/today.md")));
            // the file itself is the user's, as chibi writes it: 0666 less the whole umask (it was 0644)
            assertEquals("r--------", java.nio.file.attribute.PosixFilePermissions.toString(
                    Files.getPosixFilePermissions(home.resolve("vfs/home/planner/notes/today.md"))));
            // where it cannot unpack it at all: one line saying where and why
            Sh.Result r = Sh.as(nobody.uid(), nobody.gid(), root, "umask 277 && CHIBIFS_JAVA_OPTS=-Djava.io.tmpdir=/nonexistent"
                    + " CHIBIFS_CLASSPATH=" + Sh.quote(classpath) + " " + launcher + " --version");
            assertEquals(ExitCodes.FAILURE, r.exitCode(), r.err());
            assertEquals(List.of("chibifs: cannot unpack jffi's native stub into /nonexistent: No such file or directory"
                    + " (CHIBIFS_JAVA_OPTS=-Djava.io.tmpdir=DIR names another directory)"), r.err().lines().toList());
        } finally {
            Sh.run("rm -rf " + Sh.quote(root.resolve("classpath").toString())); // some 10 MB a run, else left in /tmp
        }
    }

    /**
     * What the launcher makes for its own use came out 0500 at umask 277 or 377 (mkdir -p spares the
     * owner's bits only on the way, mktemp -d not at all), and the next step in it failed: the copy of
     * the jar went nowhere, so every command ran from target/ without its class archive (and went on
     * so at every umask after), the archive's training home took no store, and a background mount's
     * fifo could not be made. And a copy another user made at umask 077, in a directory all may read,
     * was taken for ours: "Unable to access jarfile" at every command. No JVM starts: the java here
     * prints what it would run, and trains as ClassArchiveTraining does.
     */
    @Test
    void theLaunchersOwnFilesWorkAtAUmaskWithoutOwnerWrite() throws Exception {
        TestUsers.User nobody = TestUsers.ensure("nobody");
        Path root = MountedFs.tempRoot();
        Path jdk = root.resolve("jdk");
        Path printer = Files.createDirectories(jdk.resolve("bin")).resolve("java");
        Files.writeString(printer, """
                #!/bin/sh
                # a training run makes a store in its home, then the JVM writes the archive as it exits
                for a; do
                    case "$a" in -XX:ArchiveClassesAtExit=*) archive=${a#*=} ;; esac
                    [ "${prev-}" = dev.chibifs.cli.ClassArchiveTraining ] && home=$a
                    prev=$a
                done
                if [ -n "${archive-}" ]; then mkdir "$home/vfs" && echo archive > "$archive"; exit; fi
                echo "${CHIBIFS_READY_FD:+ready-fd=$CHIBIFS_READY_FD }$*"
                """);
        Files.setPosixFilePermissions(printer, java.nio.file.attribute.PosixFilePermissions.fromString("rwxr-xr-x"));
        String asNobody = "HOME=/nonexistent JAVA_HOME=" + Sh.quote(jdk.toString()) + " ";
        for (String umask : List.of("277", "377")) {
            Path checkout = checkoutWithAJar(root.resolve("checkout-" + umask));
            Sh.run("chown -R nobody " + Sh.quote(checkout.toString())).ok();
            String launcher = Sh.quote(checkout.resolve("scripts/chibifs").toString());
            Path copies = checkout.resolve("target/daemon-jars");
            String ran = Sh.as(nobody.uid(), nobody.gid(), root, "umask " + umask + " && " + asNobody + launcher
                    + " --version").ok().out();
            assertTrue(ran.contains(" -jar " + copies + "/chibifs-"), umask + ": " + ran);
            assertTrue(ran.contains(" -XX:SharedArchiveFile=" + copies + "/chibifs-"), umask + ": " + ran);
            assertEquals("rwx------", java.nio.file.attribute.PosixFilePermissions.toString(
                    Files.getPosixFilePermissions(copies)), umask);
            String mount = Sh.as(nobody.uid(), nobody.gid(), root, "umask " + umask + " && " + asNobody + launcher
                    + " mount --context planner /nowhere").ok().out();
            assertTrue(mount.startsWith("ready-fd=3 "), umask + ": " + mount);
        }
        Path shared = checkoutWithAJar(root.resolve("checkout-shared"));
        String launcher = Sh.quote(shared.resolve("scripts/chibifs").toString());
        Files.setPosixFilePermissions(Files.createDirectory(shared.resolve("target/daemon-jars")),
                java.nio.file.attribute.PosixFilePermissions.fromString("rwxr-xr-x"));
        Sh.run("umask 077 && JAVA_HOME=" + Sh.quote(jdk.toString()) + " " + launcher + " --version").ok();
        String ran = Sh.as(nobody.uid(), nobody.gid(), root, asNobody + launcher + " --version").ok().out();
        assertTrue(ran.contains(" -jar " + shared.resolve("target/chibifs.jar") + " "), ran);
    }

    /** A checkout at {@code dir}: the launcher, and a file where ./mvnw package puts the jar. */
    private static Path checkoutWithAJar(Path dir) throws IOException {
        Path launcher = Files.createDirectories(dir.resolve("scripts")).resolve("chibifs");
        Files.copy(Path.of("scripts/chibifs"), launcher, StandardCopyOption.COPY_ATTRIBUTES);
        Files.writeString(Files.createDirectories(dir.resolve("target")).resolve("chibifs.jar"), "a jar");
        return dir;
    }

    /** Whether every thread of process {@code pid} is stopped (state T in its /proc stat). */
    private static boolean allStopped(long pid) throws IOException {
        try (Stream<Path> tasks = Files.list(Path.of("/proc/" + pid + "/task"))) {
            for (Path task : tasks.toList()) {
                String stat;
                try {
                    stat = Files.readString(task.resolve("stat"));
                } catch (java.nio.file.NoSuchFileException exited) {
                    continue;
                }
                if (stat.charAt(stat.lastIndexOf(')') + 2) != 'T') {
                    return false;
                }
            }
        }
        return true;
    }

    /**
     * After kill -9, {@code umount --force} cleared the mount (exit 0) but left the record: status listed
     * it stale and doctor failed until it was removed by hand.
     */
    @Test
    void umountForceOfAKilledDaemonsMountRemovesItsRecord() throws Exception {
        FuseSupport.requireFuse();
        Path root = MountedFs.tempRoot();
        Path mnt = Files.createDirectories(root.resolve("mnt"));
        Path home = root.resolve("home");
        long pid = -1;
        try {
            Sh.run(launcherMount(home, mnt)).ok();
            pid = daemonPid(mnt);
            Sh.run("kill -9 " + pid).ok();
            Path stat = Path.of("/proc/" + pid + "/stat");
            long deadline = System.currentTimeMillis() + 20_000;
            while (Files.exists(stat) && !Files.readString(stat).substring(Files.readString(stat).lastIndexOf(')') + 2).startsWith("Z")) {
                assertTrue(System.currentTimeMillis() < deadline, "the daemon did not die");
                Thread.onSpinWait();
            }
            assertTrue(Files.exists(MountRegistry.forCurrentUser().fileFor(mnt)), "the killed daemon's record is there");
            Sh.Result r = Sh.run(FROM_CLASSES + "scripts/chibifs umount --force '" + mnt + "'");
            assertEquals(0, r.exitCode(), r.err() + r.out());
            assertFalse(Sh.run("grep -q ' " + mnt + " ' /proc/mounts").exitCode() == 0, "still mounted");
            assertFalse(Files.exists(MountRegistry.forCurrentUser().fileFor(mnt)), "the killed daemon's record stays");
            assertFalse(Files.exists(StatsSocket.pathFor(MountRegistry.forCurrentUser(), pid)), "its stats socket stays");
        } finally {
            if (pid > 0) {
                Sh.run("kill -9 " + pid);
            }
            Sh.run("fusermount -u -z '" + mnt + "' 2>/dev/null; true");
        }
    }

    /**
     * A mount that failed left the new home it made behind, a logs directory with the failure's log
     * in it, or (a home there was) the logs directory: it leaves nothing it made, and its line names
     * no log it removed.
     */
    @Test
    void aFailedMountLeavesNothingItMade() throws Exception {
        FuseSupport.requireFuse();
        Path root = MountedFs.tempRoot();
        Path full = Files.createDirectories(root.resolve("full"));
        Files.writeString(full.resolve("x"), "x");
        Path home = root.resolve("new-home");
        Sh.Result r = Sh.run(launcherMount(home, full));
        assertEquals(1, r.exitCode(), r.err() + r.out());
        assertTrue(r.err().contains("is not empty") && !r.err().contains("(log: "), r.err());
        assertFalse(Files.exists(home), "the new home stays");

        Path existing = Files.createDirectories(root.resolve("home/vfs")).getParent();
        Files.writeString(existing.resolve("config.toml"), "");
        r = Sh.run(launcherMount(existing, full));
        assertEquals(1, r.exitCode(), r.err() + r.out());
        assertFalse(Files.exists(existing.resolve("chibifs")), "the logs directory stays");
        assertTrue(Files.exists(existing.resolve("config.toml")), "what was there goes");
        // refused before the store is touched: the context's /home and /tools/home, /shared, ... stayed made
        try (java.util.stream.Stream<Path> store = Files.list(existing.resolve("vfs"))) {
            assertEquals(0, store.count(), "the store's directories stay");
        }

        // a mount that fails later, once the daemon made the store's directories (the kernel refuses an
        // SELinux label on a host without SELinux), removes them too
        Path empty = Files.createDirectories(root.resolve("empty"));
        r = Sh.run(launcherMount(existing, empty) + " -o context=system_u:object_r:tmp_t:s0");
        if (r.exitCode() == 0) {
            Sh.run("fusermount -u -z '" + empty + "'");
            org.junit.jupiter.api.Assumptions.abort("this kernel takes the SELinux label");
        }
        assertEquals(1, r.exitCode(), r.err() + r.out());
        assertTrue(r.err().contains("mount(2) said") || r.err().contains("fusermount"), r.err());
        try (java.util.stream.Stream<Path> store = Files.list(existing.resolve("vfs"))) {
            assertEquals(0, store.count(), "the store's directories stay");
        }
        // in a logs directory there was, the failure's log stays, and its line names it
        Files.createDirectories(existing.resolve("chibifs/logs"));
        r = Sh.run(launcherMount(existing, empty) + " -o context=system_u:object_r:tmp_t:s0");
        assertEquals(1, r.exitCode(), r.err() + r.out());
        Path log = existing.resolve("chibifs/logs").resolve(MountCommand.logName(empty));
        assertTrue(r.err().contains("(log: " + log + ")") && Files.exists(log), r.err());
    }

    /**
     * A plain umount of a stopped daemon's mount unmounts it and leaves the daemon stopped; --force
     * then said "not mounted (it was unmounted lazily ...)" and left it so. It ends the daemon and says how.
     */
    @Test
    void umountForceAfterAPlainUmountEndsTheStoppedDaemon() throws Exception {
        FuseSupport.requireFuse();
        Path root = MountedFs.tempRoot();
        Path mnt = Files.createDirectories(root.resolve("mnt"));
        Path home = root.resolve("home");
        long pid = -1;
        try {
            Sh.run(launcherMount(home, mnt)).ok();
            pid = daemonPid(mnt);
            Sh.run("kill -STOP " + pid).ok();
            long deadline = System.currentTimeMillis() + 20_000;
            while (!allStopped(pid)) {
                assertTrue(System.currentTimeMillis() < deadline, "the daemon's threads did not stop");
                Thread.onSpinWait();
            }
            Sh.Result plain = Sh.run(FROM_CLASSES + "scripts/chibifs umount '" + mnt + "'");
            assertEquals(1, plain.exitCode(), plain.err() + plain.out());
            assertTrue(plain.err().contains("is stopped") && plain.err().contains("chibifs umount --force " + mnt), plain.err());
            Sh.Result r = Sh.run(FROM_CLASSES + "scripts/chibifs umount --force '" + mnt + "'");
            assertEquals(0, r.exitCode(), r.err() + r.out());
            assertEquals("chibifs: " + mnt + " was unmounted already; ended its daemon (pid " + pid + ", it was stopped: SIGKILL)\n",
                    r.out());
            Path stat = Path.of("/proc/" + pid + "/stat");
            String state = Files.exists(stat) ? Files.readString(stat) : "";
            assertTrue(state.isEmpty() || state.substring(state.lastIndexOf(')') + 2).startsWith("Z"), "the daemon still runs: " + state);
            assertFalse(Files.exists(MountRegistry.forCurrentUser().fileFor(mnt)), "the killed daemon's record stays");
        } finally {
            if (pid > 0) {
                Sh.run("kill -9 " + pid);
            }
            Sh.run("fusermount -u -z '" + mnt + "' 2>/dev/null; true");
        }
    }

    @Test
    void umountForceEndsTheWaitsOnADaemonThatNoLongerAnswers() throws Exception {
        FuseSupport.requireFuse();
        Path root = MountedFs.tempRoot();
        Path mnt = Files.createDirectories(root.resolve("mnt"));
        Path home = root.resolve("home");
        Process waiting = null;
        long pid = -1;
        try {
            Sh.run(launcherMount(home, mnt)).ok();
            pid = daemonPid(mnt);
            Sh.run(mnt, "echo x > shared/w.txt").ok();
            Sh.run("kill -STOP " + pid).ok();
            long deadline = System.currentTimeMillis() + 20_000;
            // SIGSTOP is delivered to each thread as it is next scheduled: under load a worker could
            // still answer the lookup below. Start it once every thread of the daemon has stopped.
            while (!allStopped(pid)) {
                assertTrue(System.currentTimeMillis() < deadline, "the daemon's threads did not stop");
                Thread.onSpinWait();
            }
            waiting = new ProcessBuilder("cat", mnt.resolve("shared/never-looked-up.txt").toString())
                    .redirectErrorStream(true).start();
            Path wchan = Path.of("/proc/" + waiting.pid() + "/wchan");
            while (!Files.readString(wchan).contains("request_wait_answer") && System.currentTimeMillis() < deadline) {
                if (!waiting.isAlive()) {
                    throw new AssertionError("cat ended although the daemon is stopped: exit " + waiting.exitValue()
                            + ", " + new String(waiting.getInputStream().readAllBytes()));
                }
            }
            Sh.Result r = Sh.run(FROM_CLASSES + "scripts/chibifs umount --force '" + mnt + "'");
            assertEquals(0, r.exitCode(), r.err() + r.out());
            assertTrue(waiting.waitFor(10, TimeUnit.SECONDS), "cat still waits after the abort");
            assertTrue(waiting.exitValue() != 0);
            assertFalse(Sh.run("grep -q ' " + mnt + " ' /proc/mounts").exitCode() == 0, "still mounted");
            // exited: gone, or a zombie its parent (init) has yet to reap
            Path stat = Path.of("/proc/" + pid + "/stat");
            String state = Files.exists(stat) ? Files.readString(stat) : "";
            assertTrue(state.isEmpty() || state.substring(state.lastIndexOf(')') + 2).startsWith("Z"), "the daemon still runs: " + state);
            assertFalse(Files.exists(MountRegistry.forCurrentUser().fileFor(mnt)), "the killed daemon's record stays");
            assertFalse(Files.exists(StatsSocket.pathFor(MountRegistry.forCurrentUser(), pid)), "its stats socket stays");
            assertFalse(Files.exists(StatsSocket.syncPathFor(MountRegistry.forCurrentUser(), pid)), "its sync socket stays");
            assertFalse(Files.exists(TraceSocket.pathFor(MountRegistry.forCurrentUser(), pid)), "its trace socket stays");
        } finally {
            if (waiting != null) {
                waiting.destroyForcibly();
            }
            if (pid > 0) {
                Sh.run("kill -9 " + pid);
            }
            Sh.run("fusermount -u -z '" + mnt + "' 2>/dev/null; true");
        }
    }

    /** Where a background mount of {@code mnt} with chibi home {@code home} logs. */
    private static Path mountLog(Path home, Path mnt) {
        return home.resolve("chibifs/logs").resolve(MountCommand.logName(mnt));
    }

    /** The launcher run from the test class path, as the suite runs before the jar is packaged. */
    /** A JAVA_HOME at {@code home} whose java prints what it would run. */
    private static void fakeJava(Path home) throws IOException {
        Path printer = Files.createDirectories(home.resolve("bin")).resolve("java");
        Files.writeString(printer, "#!/bin/sh\necho \"$@\"\n");
        Files.setPosixFilePermissions(printer, java.nio.file.attribute.PosixFilePermissions.fromString("rwxr-xr-x"));
    }

    private static final String FROM_CLASSES = "CHIBIFS_CLASSPATH='" + System.getProperty("java.class.path") + "' ";

    /** The README's background mount of {@code mnt} as context planner, chibi home {@code home}, through the launcher. */
    private static String launcherMount(Path home, Path mnt) {
        return FROM_CLASSES + "scripts/chibifs mount --context planner --home '" + home + "' '" + mnt + "'";
    }

    /** The daemon's pid, from the registry a mount writes. */
    private static long daemonPid(Path mnt) throws IOException {
        return Long.parseLong(Files.readAllLines(MountRegistry.forCurrentUser().fileFor(mnt)).stream()
                .filter(l -> l.startsWith("pid=")).findFirst().orElseThrow().substring(4));
    }

    /**
     * A runnable jar as {@code ./mvnw package} makes, close enough for the launcher: chibifs's own
     * classes inside, the dependencies from the test class path by the manifest's Class-Path. The
     * entries are relative, to links in a {@code lib} beside the jar and beside the launcher's copies
     * of it: JDK 25 archives no class from a jar an absolute Class-Path entry names ("Unsupported
     * location"), where JDK 17 did.
     */
    private static void packageJar(Path jar) throws IOException {
        Path classes = null;
        List<String> others = new ArrayList<>();
        for (String element : System.getProperty("java.class.path").split(":")) {
            Path p = Path.of(element).toAbsolutePath();
            if (Files.exists(p.resolve(Main.class.getName().replace('.', '/') + ".class"))) {
                classes = p;
            } else if (element.endsWith(".jar")) {
                String name = "lib/" + others.size() + "-" + p.getFileName();
                for (Path beside : List.of(jar.getParent(), jar.getParent().resolve("daemon-jars"))) {
                    Path link = beside.resolve(name);
                    Files.createDirectories(link.getParent());
                    Files.createSymbolicLink(link, p);
                }
                others.add(name);
            }
        }
        Manifest manifest = new Manifest();
        manifest.getMainAttributes().put(Attributes.Name.MANIFEST_VERSION, "1.0");
        manifest.getMainAttributes().put(Attributes.Name.MAIN_CLASS, Main.class.getName());
        manifest.getMainAttributes().put(Attributes.Name.CLASS_PATH, String.join(" ", others));
        Files.createDirectories(jar.getParent());
        Path from = java.util.Objects.requireNonNull(classes, "no class path element holds chibifs's classes");
        try (OutputStream file = Files.newOutputStream(jar);
             JarOutputStream out = new JarOutputStream(file, manifest);
             Stream<Path> files = Files.walk(from)) {
            for (Path f : files.filter(Files::isRegularFile).sorted().toList()) {
                out.putNextEntry(new JarEntry(from.relativize(f).toString()));
                Files.copy(f, out);
                out.closeEntry();
            }
        }
    }
}
