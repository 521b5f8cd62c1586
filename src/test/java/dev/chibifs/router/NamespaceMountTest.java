package dev.chibifs.router;

import dev.chibifs.testing.Chibi010Home;
import dev.chibifs.testing.FuseSupport;
import dev.chibifs.testing.MountedFs;
import dev.chibifs.testing.Sh;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * chibi 0.10's namespace through a per-context mount as planner (a member of flock team, not of
 * ops), over a home laid out as chibi 0.10 leaves it, with a memory and a readonly store.
 */
@Timeout(300)
class NamespaceMountTest {

    private static Path root;
    private static Path docs;
    private static MountedFs fs;

    @BeforeAll
    static void mount() throws IOException {
        FuseSupport.requireFuse();
        root = MountedFs.tempRoot();
        Chibi010Home.create(Files.createDirectories(root.resolve("home")));
        docs = Files.createDirectories(root.resolve("docs/sub")).getParent();
        Files.writeString(docs.resolve("sub/guide.md"), "read me\n");
        Files.createSymbolicLink(root.resolve("docs/escape"), Path.of("/etc/passwd"));
        fs = MountedFs.start(root, "--context", "planner", "--store", "/shared/scratch=memory:8M",
                "--store", "/shared/docs=readonly:" + root.resolve("docs"));
    }

    @AfterAll
    static void unmount() {
        if (fs != null) {
            fs.close();
        }
    }

    private static void denied(String script, String... leftNothingAt) {
        Sh.Result r = fs.sh(script);
        assertTrue(r.exitCode() != 0 && r.err().contains("Permission denied"), script + ": " + r.err());
        for (String p : leftNothingAt) {
            assertFalse(Files.exists(fs.stored(p)), script + " left " + p);
        }
    }

    @Test
    void everyZoneChibiLetsAContextWriteTakesTheWrite() throws IOException {
        fs.sh("echo s > site/s.md && echo t > flocks/team/t.md && echo ts > tools/shared/x.scm"
                + " && echo th > tools/home/planner/x.scm && mkdir -p tools/flocks/team/d && echo tf > tools/flocks/team/d/x.scm"
                + " && mv site/s.md site/s2.md && rm flocks/team/t.md").ok();
        assertEquals("s\n", Files.readString(fs.stored("/site/s2.md")));
        assertFalse(Files.exists(fs.stored("/flocks/team/t.md")));
        assertEquals("ts\n", Files.readString(fs.stored("/tools/shared/x.scm")));
        assertEquals("th\n", Files.readString(fs.stored("/tools/home/planner/x.scm")));
        assertEquals("tf\n", Files.readString(fs.stored("/tools/flocks/team/d/x.scm")));
        fs.sh("test -w site && test -w flocks/team && test -w tools/shared && test -w tools/home/planner"
                + " && test -w tools/flocks/team").ok();
    }

    @Test
    void everyOtherWriteIsDeniedAndLeavesNothing() {
        denied("echo x > flocks/ops/x.md", "/flocks/ops/x.md");
        denied("mkdir flocks/ops/d", "/flocks/ops/d");
        denied("rm flocks/ops/runbook.md");
        denied("echo '{}' > flocks/registry.json");
        denied("echo x > tools/home/coder/x.scm", "/tools/home/coder/x.scm");
        denied("echo x > tools/flocks/ops/x.scm", "/tools/flocks/ops/x.scm");
        denied("echo x > tools/sys/x.json");
        denied("mkdir flocks/newflock", "/flocks/newflock");
        denied("echo x > tools/x", "/tools/x");
        denied("rmdir site");
        denied("mv flocks/team flocks/team2", "/flocks/team2");
        assertTrue(Files.exists(fs.stored("/flocks/ops/runbook.md")));
        assertTrue(Files.exists(fs.stored("/flocks/team")));
        fs.sh("! test -w flocks/ops && ! test -w tools/sys && ! test -w tools/home/coder && ! test -w flocks").ok();
        String modes = fs.sh("stat -c '%n %A' site flocks/team flocks/ops tools/sys").ok().out();
        assertEquals("site drwxr-xr-x\nflocks/team drwxr-xr-x\nflocks/ops dr-xr-xr-x\ntools/sys dr-xr-xr-x\n", modes);
    }

    @Test
    void aRegistryChangeWhileMountedCountsAtTheNextRequest() throws IOException {
        try {
            denied("echo x > flocks/ops/joined.md", "/flocks/ops/joined.md");
            Chibi010Home.writeRegistry(fs.home(), "planner:ops", "coder:team", "coder:ops");
            fs.sh("echo x > flocks/ops/joined.md && test -w flocks/ops").ok();
            denied("echo x > flocks/team/left.md", "/flocks/team/left.md");
            Files.writeString(fs.stored("/flocks/registry.json"), "{\"flocks\": [{\"name\": \"team\"}]}");
            denied("echo x > flocks/ops/malformed.md", "/flocks/ops/malformed.md");
            assertTrue(fs.log().contains("is malformed"), fs.log());
        } finally {
            Chibi010Home.writeRegistry(fs.home(), "planner:team", "coder:team", "coder:ops");
        }
        fs.sh("echo x > flocks/team/back.md").ok();
    }

    /** The kernel keeps a file's pages while its size and mtime stay: a registry change must be a new mtime. */
    @Test
    void aGeneratedFileShowsANewVersionOfTheSameSizeAtOnce() throws IOException {
        String before = fs.sh("cat sys/contexts/coder/task-dirs").ok().out();
        assertTrue(before.contains("/flocks/ops/tasks"), before);
        try {
            Chibi010Home.writeRegistry(fs.home(), "planner:team", "coder:team", "coder:opz");
            assertEquals(before.replace("/flocks/ops/", "/flocks/opz/"), fs.sh("cat sys/contexts/coder/task-dirs").ok().out());
        } finally {
            Chibi010Home.writeRegistry(fs.home(), "planner:team", "coder:team", "coder:ops");
        }
        assertEquals(before, fs.sh("cat sys/contexts/coder/task-dirs").ok().out());
    }

    @Test
    void aMalformedStateFileShowsNoContextsAndSaysWhy() throws IOException {
        Path state = fs.home().resolve("state.json");
        byte[] good = Files.readAllBytes(state);
        try {
            Files.writeString(state, "{\"contexts\": [");
            assertEquals("", fs.sh("ls sys/contexts").ok().out());
            assertTrue(fs.log().contains("chibi's state file " + state + " is malformed"), fs.log());
        } finally {
            Files.write(state, good);
        }
        assertEquals("coder\nplanner\n", fs.sh("ls sys/contexts").ok().out());
    }

    /** Who may write a flock's files shows in their modes, which the kernel keeps for --kernel-cache (30 s). */
    @Test
    void aFlocksModesFollowTheRegistryAtOnce() throws IOException {
        Files.writeString(fs.stored("/flocks/ops/plan.md"), "ops\n");
        fs.sh("ls -l flocks/ops > /dev/null").ok();
        assertFalse(ownerWrites("flocks/ops/plan.md"), "planner is not in ops");
        try {
            Chibi010Home.writeRegistry(fs.home(), "planner:team", "planner:ops", "coder:team", "coder:ops");
            long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(10);
            while (!ownerWrites("flocks/ops/plan.md") && System.nanoTime() < deadline) {
                // a poll's interval, not a wait for the change: the kernel would keep the old modes 30 s
                java.util.concurrent.locks.LockSupport.parkNanos(java.util.concurrent.TimeUnit.MILLISECONDS.toNanos(20));
            }
            assertTrue(ownerWrites("flocks/ops/plan.md"), "the new membership within 10 s, not the kernel cache's 30");
        } finally {
            Chibi010Home.writeRegistry(fs.home(), "planner:team", "coder:team", "coder:ops");
            Files.deleteIfExists(fs.stored("/flocks/ops/plan.md"));
        }
    }

    private static boolean ownerWrites(String path) {
        return fs.sh("stat -c %A " + path).ok().out().charAt(2) == 'w';
    }

    @Test
    void sysContextsShowsChibisViews() {
        assertEquals("coder\nplanner\n", fs.sh("ls sys/contexts").ok().out());
        assertEquals("{\n  \"created_at\": 1700000000,\n  \"last_activity_at\": 1700000500,\n  \"prompt_count\": 3,\n"
                + "  \"auto_destroy_at\": null,\n  \"auto_destroy_after_inactive_secs\": null,\n  \"flocks\": [\n"
                + "    \"site:" + Chibi010Home.SITE_ID + "\",\n    \"team\"\n  ],\n  \"paths\": {\n"
                + "    \"tasks\": \"/home/planner/tasks\",\n    \"goals\": [\n      \"/site/goals.md\",\n"
                + "      \"/flocks/team/goals.md\"\n    ]\n  }\n}", fs.sh("cat sys/contexts/planner/state.json").ok().out());
        assertEquals("(\"/home/coder/tasks\" \"/flocks/site:" + Chibi010Home.SITE_ID
                + "/tasks\" \"/flocks/ops/tasks\" \"/flocks/team/tasks\")", fs.sh("cat sys/contexts/coder/task-dirs").ok().out());
        assertTrue(fs.sh("cat sys/contexts/planner/transcript/active.jsonl").ok().out().contains("\"third\""));
        assertEquals("1700000000-1700000300.jsonl\n", fs.sh("ls sys/contexts/planner/transcript/partitions").ok().out());
        denied("echo x > sys/contexts/planner/state.json");
    }

    @Test
    void aMemoryAndAReadonlyStoreWorkWithOrdinaryPrograms() throws IOException {
        fs.sh("mkdir -p shared/src/d && echo a > shared/src/d/a && ln shared/src/d/a shared/src/d/b"
                + " && cp -a shared/src shared/scratch/copy && tar -C shared/scratch -cf shared/scratch/t.tar copy"
                + " && mkdir shared/scratch/untar && tar -C shared/scratch/untar -xf shared/scratch/t.tar"
                + " && mv shared/scratch/untar shared/moved && cat shared/moved/copy/d/b").ok();
        assertEquals("a\n", Files.readString(fs.stored("/shared/moved/copy/d/b")));
        assertFalse(Files.exists(fs.stored("/shared/scratch")), "the memory store writes nothing to disk");
        assertEquals("2\n", fs.sh("stat -c %h shared/scratch/copy/d/a").ok().out(), "cp -a kept the hard link");
        fs.sh("cd shared/scratch && git init -q repo && cd repo && echo hi > f && git add f"
                + " && git -c user.name=t -c user.email=t@t commit -qm one && git status --porcelain && git log --oneline | wc -l")
                .ok();
        fs.sh("mv shared/scratch/repo home/planner/repo && cd home/planner/repo && git status --porcelain").ok();
        assertTrue(Files.exists(fs.stored("/home/planner/repo/.git/HEAD")));
        assertEquals("read me\n", fs.sh("cat shared/docs/sub/guide.md").ok().out());
        Sh.Result r = fs.sh("echo x > shared/docs/new.md");
        assertTrue(r.err().contains("Read-only file system"), r.err());
        // the daemon never follows it: the kernel is shown a link (which the reader's own kernel may follow)
        assertEquals("symbolic link\n", fs.sh("stat -c %F shared/docs/escape").ok().out());
        Sh.Result viaCli = MountedFs.cli("cat", "--home", fs.home().toString(), "--store",
                "/shared/docs=readonly:" + docs, "vfs:///shared/docs/escape");
        assertTrue(viaCli.exitCode() != 0 && !viaCli.out().contains("root:"), viaCli.out() + viaCli.err());
        fs.sh("cp -a shared/docs/sub shared/scratch/docs && cat shared/scratch/docs/guide.md").ok(); // symbolic links: issue 25
        r = fs.sh("mv shared/docs/sub/guide.md shared/x.md");
        assertTrue(r.exitCode() != 0 && Files.exists(root.resolve("docs/sub/guide.md")), r.err());
        fs.sh("dd if=/dev/zero of=shared/scratch/big bs=1M count=7 status=none").ok();
        r = fs.sh("dd if=/dev/zero of=shared/scratch/big2 bs=1M count=4 status=none");
        assertTrue(r.err().contains("No space left on device"), r.err());
        fs.sh("rm -f shared/scratch/big shared/scratch/big2 && dd if=/dev/zero of=shared/scratch/big3 bs=1M count=7 status=none")
                .ok();
        r = fs.sh("rmdir shared/scratch");
        assertTrue(r.exitCode() != 0, "a store's mount point stays: " + r.err());
        assertTrue(fs.sh("ls shared").ok().out().contains("scratch\n"));
    }
}
