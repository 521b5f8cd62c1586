package dev.chibifs.fuse;

import dev.chibifs.testing.FuseSupport;
import dev.chibifs.testing.MountedFs;
import dev.chibifs.testing.Sh;
import dev.chibifs.testing.TestUsers;
import dev.chibifs.testing.TestUsers.User;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** One mount for several real users: the caller comes from the requesting uid. */
@Timeout(300)
class UidMapMountTest {

    private static User planner;
    private static User coder;
    private static User stranger;
    private static MountedFs fs;

    @BeforeAll
    static void mount() {
        FuseSupport.requireFuse();
        FuseSupport.requireRoot();
        planner = TestUsers.ensure("chibit-planner");
        coder = TestUsers.ensure("chibit-coder");
        stranger = TestUsers.ensure("chibit-stranger");
        fs = MountedFs.start("--uid-map", planner.uid() + "=planner", "--uid-map", coder.uid() + "=coder");
    }

    @AfterAll
    static void unmount() {
        if (fs != null) {
            fs.close();
        }
    }

    @Test
    void eachUidWritesItsOwnHomeAndShared() throws IOException {
        fs.shAs(planner, "echo p > home/planner/p.txt && echo shared-by-p > shared/p.txt").ok();
        fs.shAs(coder, "echo c > home/coder/c.txt && echo shared-by-c >> shared/p.txt").ok();
        assertEquals("p\n", Files.readString(fs.stored("/home/planner/p.txt")));
        assertEquals("shared-by-p\nshared-by-c\n", Files.readString(fs.stored("/shared/p.txt")));
    }

    @Test
    void noUidWritesAnothersHome() {
        fs.shAs(coder, "echo c > home/coder/mine.txt").ok();
        Sh.Result r = fs.shAs(planner, "echo x > home/coder/intrude.txt");
        assertTrue(r.err().contains("Permission denied"), r.err());
        r = fs.shAs(planner, "rm -f home/coder/mine.txt");
        assertTrue(r.err().contains("Permission denied"), r.err());
        assertFalse(Files.exists(fs.stored("/home/coder/intrude.txt")));
        assertTrue(Files.exists(fs.stored("/home/coder/mine.txt")));
        assertEquals("c\n", fs.shAs(planner, "cat home/coder/mine.txt").ok().out());
    }

    @Test
    void anUnnamedFileIsItsMakersToNameAndAnotherUidsIsRefusedInItsHome() throws IOException {
        // python's TemporaryFile is open(2) with O_TMPFILE; the name comes by linkat of /proc/self/fd/N
        java.util.function.BiFunction<String, String, String> run = (dir, name) -> "python3 - " + dir + " " + name + " <<'PY'\n"
                + "import ctypes, os, sys\n"
                + "fd = os.open(sys.argv[1], os.O_TMPFILE | os.O_RDWR, 0o600)\n"
                + "os.write(fd, b'by %d' % os.getuid())\n"
                + "libc = ctypes.CDLL(None, use_errno=True)\n"
                + "assert libc.linkat(-100, b'/proc/self/fd/%d' % fd, -100, sys.argv[2].encode(), 0x400) == 0, ctypes.get_errno()\n"
                + "PY";
        fs.shAs(planner, run.apply("home/planner", "home/planner/made")).ok();
        assertEquals("by " + planner.uid(), Files.readString(fs.stored("/home/planner/made")));
        Sh.Result refused = fs.shAs(coder, run.apply("home/planner", "home/planner/theirs"));
        assertTrue(refused.err().contains("PermissionError"), refused.err());
        assertFalse(Files.exists(fs.stored("/home/planner/theirs")));
    }

    /** {@code chibifs trace}: each request names the context its uid maps to, and the policy's refusals show as such. */
    @Test
    void aTraceNamesTheContextOfEachRequestAndThePolicysRefusals() throws Exception {
        fs.shAs(coder, "mkdir -p home/coder/traced").ok();
        Process trace = new ProcessBuilder("sh", "-c", MountedFs.cliScript("trace", "--path", "/home/coder/traced",
                "--opcode", "create", "--program", "touch,tee", "--count", "2", fs.mountpoint().toString())).start();
        try {
            // the first line comes once the daemon listens: every request from then on is traced
            String first = new BufferedReader(new InputStreamReader(trace.getErrorStream(), StandardCharsets.UTF_8)).readLine();
            assertEquals("chibifs: tracing " + fs.mountpoint() + " (interrupt to stop)", first);
            fs.shAs(planner, "touch home/coder/traced/intrude.txt 2>/dev/null; echo p > shared/untraced.txt").ok();
            fs.shAs(coder, "echo shell > home/coder/traced/by-the-shell.txt && echo c | tee home/coder/traced/mine.txt").ok();
            assertTrue(trace.waitFor(30, TimeUnit.SECONDS), "the trace did not stop at --count 2");
            String out = new String(trace.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            List<String> lines = out.lines().toList();
            assertEquals(2, lines.size(), out);
            String time = "\\d\\d:\\d\\d:\\d\\d\\.\\d{6} ";
            assertTrue(lines.get(0).matches(time + "planner pid \\d+ \\(touch\\) CREATE /home/coder/traced/intrude.txt O_WRONLY\\|O_CREAT: EACCES \\(policy\\) \\d+ us"), out);
            assertTrue(lines.get(1).matches(time + "coder pid \\d+ \\(tee\\) CREATE /home/coder/traced/mine.txt O_WRONLY\\|O_CREAT\\|O_TRUNC: ok \\d+ us"), out);
            assertEquals(0, trace.exitValue());
        } finally {
            trace.destroyForcibly();
        }
    }

    @Test
    void anUnmappedUidReadsButCannotWrite() {
        fs.shAs(planner, "echo readable > shared/r.txt").ok();
        assertEquals("readable\n", fs.shAs(stranger, "cat shared/r.txt").ok().out());
        for (String cmd : new String[] {"echo x > shared/s.txt", "echo x >> shared/r.txt", "mkdir shared/d",
                                        "rm shared/r.txt", "echo x > home/planner/s.txt"}) {
            Sh.Result r = fs.shAs(stranger, cmd);
            assertTrue(r.err().contains("Permission denied"), cmd + ": " + r.err());
        }
        assertFalse(Files.exists(fs.stored("/shared/s.txt")));
    }

    @Test
    void rootIsNotSystem() {
        Sh.Result r = fs.sh("echo x > sys/root-was-here");
        assertTrue(r.err().contains("Permission denied"), r.err());
        r = fs.sh("echo x > shared/root-was-here");
        assertTrue(r.err().contains("Permission denied"), "root is a guest here: " + r.err());
    }

    @Test
    void rootIsSystemWhenNamed() throws IOException {
        try (MountedFs sys = MountedFs.start("--uid-map", planner.uid() + "=planner", "--system-uid", "0")) {
            sys.sh("mkdir -p sys/tool_cache/planner && echo cached > sys/tool_cache/planner/t_1_abc").ok();
            assertEquals("cached\n", Files.readString(sys.stored("/sys/tool_cache/planner/t_1_abc")));
            Sh.Result r = sys.shAs(planner, "rm sys/tool_cache/planner/t_1_abc");
            assertTrue(r.err().contains("Permission denied"), r.err());
        }
    }

    @Test
    void ownersAndModesAgreeWithThePolicy() {
        String out = fs.shAs(planner, "stat -c '%U %A' home/planner home/coder shared sys").ok().out();
        assertEquals("chibit-planner drwxr-xr-x\nchibit-coder drwxr-xr-x\nchibit-planner drwxrwxrwx\nroot drwxr-xr-x\n", out,
                "a shared directory shows each user who writes it as its owner");
        assertEquals("chibit-coder\n", fs.shAs(coder, "stat -c %U shared").ok().out());
        assertEquals("root\n", fs.shAs(stranger, "stat -c %U shared").ok().out());
        fs.shAs(planner, "test -w shared && test -w home/planner && ! test -w home/coder && ! test -w sys").ok();
        fs.shAs(stranger, "! test -w shared").ok();
    }

    /**
     * git refuses a repository whose directory another user owns, and the kernel lets only a
     * file's owner set its ACL, which install, cp -p and mv from another file system do: in
     * /shared each user who writes it is shown as owner, so both work for every context.
     */
    @Test
    void programsThatCheckOwnershipWorkInSharedForEveryContext() throws IOException {
        fs.shAs(planner, "export HOME=/tmp; cd shared && git init -q repo && cd repo && echo a > a && git add a"
                + " && git -c user.email=p@x -c user.name=p commit -qm a").ok();
        assertEquals("1\n", fs.shAs(coder, "export HOME=/tmp; cd shared/repo && git status --short && git log --oneline | wc -l").ok().out());
        Path outside = Files.createTempDirectory("chibit-own");
        try {
            Files.writeString(outside.resolve("f"), "moved\n");
            Sh.run("chown -R " + coder.uid() + " " + outside + " && chmod 755 " + outside).ok();
            fs.shAs(coder, "install -m 644 /etc/hostname shared/installed && cp -p /etc/hostname shared/copied"
                    + " && mv " + outside.resolve("f") + " shared/moved").ok();
        } finally {
            Sh.run("rm -rf " + outside);
        }
        assertEquals("moved\n", Files.readString(fs.stored("/shared/moved")));
        assertTrue(Files.exists(fs.stored("/shared/installed")) && Files.exists(fs.stored("/shared/copied")));
    }

    /**
     * rsync -a sets each file's group: to a group the user is in (a project group's tree) it
     * succeeds, as on a disk, though nothing is stored; to one it is not in it is EPERM.
     */
    @Test
    void rsyncOfATreeOfAGroupTheUserIsInSucceeds() throws IOException {
        long team = TestUsers.ensureGroup("chibit-team");
        Path outside = Files.createTempDirectory("chibit-group");
        try {
            Files.writeString(outside.resolve("f"), "team\n");
            Sh.run("chgrp -R " + team + " " + outside + " && chmod -R a+rX " + outside).ok();
            fs.shAsMemberOf(planner, team, "rsync -a " + outside + "/ shared/team-copy/ && rsync -a " + outside
                    + "/ home/planner/team-copy/ && chgrp " + team + " home/planner/team-copy/f").ok();
            Sh.Result stranger = fs.shAs(planner, "chgrp " + team + " home/planner/team-copy/f");
            assertEquals(1, stranger.exitCode(), "not in the group: " + stranger.out());
            assertTrue(stranger.err().contains("Operation not permitted"), stranger.err());
        } finally {
            Sh.run("rm -rf " + outside);
        }
        assertEquals("team\n", Files.readString(fs.stored("/shared/team-copy/f")));
        assertEquals("team\n", Files.readString(fs.stored("/home/planner/team-copy/f")));
    }
}
