package dev.chibifs.cli;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

import static dev.chibifs.cli.Cli.assertExit;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** write, append, mkdir and rm against a real temp store, with their denials. */
class WriteCommandsTest {

    @TempDir
    Path home;
    Cli cli;

    @BeforeEach
    void setUp() {
        cli = new Cli(home);
    }

    @Test
    void writeFromContentAndStdinReplacesAtomically() throws Exception {
        Cli.Result r = cli.run("write", "--as", "bob", "--content", "first", "vfs:///shared/deep/new.md");
        assertExit(0, r);
        assertEquals("", r.out());
        assertEquals("first", cli.read("/shared/deep/new.md"));
        byte[] bytes = {0, (byte) 0xfe, '\n'};
        assertExit(0, cli.runWithStdin(bytes, "write", "--as", "bob", "vfs:///shared/deep/new.md"));
        assertArrayEquals(bytes, Files.readAllBytes(cli.file("/shared/deep/new.md")));
        try (var names = Files.list(cli.file("/shared/deep"))) {
            assertEquals(1, names.count(), "no temporary file left behind");
        }
    }

    @Test
    void writeUsesChibiContext() throws Exception {
        assertExit(0, cli.runWithEnv(Map.of("CHIBI_CONTEXT", "bob"), "write", "--content", "x", "vfs:///home/bob/n"));
        assertEquals("x", cli.read("/home/bob/n"));
    }

    @Test
    void writeDenialsLeaveNothing() {
        Cli.Result sys = cli.run("write", "--as", "bob", "--content", "x", "vfs:///sys/x");
        assertExit(3, sys);
        assertEquals("chibifs: context 'bob' cannot write to '/sys/x' (writable zones: /shared/, /home/bob/, /site/, "
                + "/flocks/<joined-flock>/, /tools/shared/, /tools/home/bob/, /tools/flocks/<joined-flock>/)\n",
                sys.err());
        assertExit(3, cli.run("write", "--as", "bob", "--content", "x", "vfs:///home/alice/x"));
        assertExit(3, cli.run("write", "--as", "bob", "--content", "x", "vfs:///top.txt"));
        assertExit(3, cli.run("mkdir", "--as", "bob", "vfs:///sys/d"));
        assertFalse(cli.exists("/sys/x") || cli.exists("/home/alice") || cli.exists("/top.txt"));
        // nor the store itself, which opening it made: a fresh home stays as it was
        assertFalse(java.nio.file.Files.exists(cli.home.resolve("vfs")), "a denied write made the store");
        assertExit(0, cli.run("write", "--as-system", "--content", "x", "vfs:///sys/x"));
    }

    @Test
    void writeOverDirectoryOrThroughFileIsConflict() throws Exception {
        cli.put("/shared/d/f", "f");
        Cli.Result dir = cli.run("write", "--as", "bob", "--content", "x", "vfs:///shared/d");
        assertExit(4, dir);
        assertEquals("chibifs: is a directory: vfs:///shared/d\n", dir.err());
        assertExit(4, cli.run("write", "--as", "bob", "--content", "x", "vfs:///shared/d/f/g"));
    }

    @Test
    void appendAppendsAndCreates() throws Exception {
        assertExit(0, cli.run("append", "--as", "bob", "--content", "a\n", "vfs:///home/bob/log"));
        assertExit(0, cli.runWithStdin("b\n".getBytes(StandardCharsets.UTF_8), "append", "--as", "bob",
                "vfs:///home/bob/log"));
        assertEquals("a\nb\n", cli.read("/home/bob/log"));
        assertExit(3, cli.run("append", "--as", "alice", "--content", "x", "vfs:///home/bob/log"));
        assertEquals("a\nb\n", cli.read("/home/bob/log"));
        assertExit(3, cli.run("append", "--as", "alice", "--content", "x", "vfs:///sys/log"));
        assertExit(4, cli.run("append", "--as", "bob", "--content", "x", "vfs:///home/bob"));
    }

    /**
     * A write that fails after it made its parents (its stdin failing, its condition refused under
     * the lock) removes them again: they stayed, empty, where nothing was written.
     */
    @Test
    void aFailedWriteRemovesTheParentsItMade() throws Exception {
        cli.put("/shared/a/kept", "k");
        for (String command : new String[] {"write", "append"}) {
            Cli.Result r = cli.run(Map.of(), failingAfter("xy", () -> { }), command, "--as", "bob", "vfs:///shared/a/b/c/f");
            assertExit(5, r);
            assertEquals("chibifs: I/O error: reading standard input: Bad file descriptor\n", r.err());
            assertFalse(cli.exists("/shared/a/b"), command + " left the parents it made");
            assertEquals("k", cli.read("/shared/a/kept"));
        }
        Cli.Result refused = cli.run("write", "--as", "bob", "--if-match", "0".repeat(64), "--content", "x",
                "vfs:///shared/n/m/f");
        assertExit(4, refused);
        assertFalse(cli.exists("/shared/n"));
        // a fresh store: what a first write makes above the file goes with it, but the zone roots
        // stay (a mount started meanwhile took /home/bob for its own: removed, it lost its home)
        Files.delete(cli.file("/shared/a/kept"));
        Files.delete(cli.file("/shared/a"));
        Files.delete(cli.file("/shared"));
        assertExit(5, cli.run(Map.of(), failingAfter("", () -> { }), "write", "--as", "bob", "vfs:///home/bob/d/f"));
        try (var names = Files.list(cli.home.resolve("vfs"))) {
            assertEquals(java.util.List.of(cli.file("/home")), names.toList());
        }
        try (var names = Files.list(cli.file("/home/bob"))) {
            assertEquals(java.util.List.of(), names.toList());
        }
        assertExit(5, cli.run(Map.of(), failingAfter("", () -> { }), "write", "--as", "bob", "vfs:///shared/d/f"));
        assertTrue(Files.isDirectory(cli.file("/shared")));
        assertFalse(cli.exists("/shared/d"));
    }

    /** append --if-match on a missing file is refused as write refuses it: no empty file made, nor its parents. */
    @Test
    void appendIfMatchOnAMissingFileMakesNothing() throws Exception {
        String empty = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
        for (String etag : new String[] {"0".repeat(64), empty}) {
            Cli.Result r = cli.run("append", "--as", "bob", "--if-match", etag, "--content", "y", "vfs:///shared/a7/b/f");
            assertExit(4, r);
            assertEquals("chibifs: no such file: vfs:///shared/a7/b/f (--if-match " + etag + "); nothing changed\n", r.err());
            assertFalse(cli.exists("/shared/a7"));
        }
    }

    /** Only the parents still empty go: one another process put a file in meanwhile stays, and what is above it. */
    @Test
    void aFailedWriteKeepsAParentItMadeThatIsNoLongerEmpty() throws Exception {
        Cli.Result r = cli.run(Map.of(), failingAfter("x", () -> cli.put("/shared/a/b/theirs", "t")),
                "write", "--as", "bob", "vfs:///shared/a/b/c/f");
        assertExit(5, r);
        assertFalse(cli.exists("/shared/a/b/c"));
        assertEquals("t", cli.read("/shared/a/b/theirs"));
    }

    /**
     * Cleanup removes only the directories this write made: another agent that moved them away and
     * made its own at the same names meanwhile (mv r r.old && mkdir -p r/a/b) keeps its own. By path
     * alone, theirs went and ours stayed.
     */
    @Test
    void aFailedWriteLeavesDirectoriesMadeInPlaceOfItsOwn() throws Exception {
        Path shared = cli.file("/shared");
        Cli.Result r = cli.run(Map.of(), failingAfter("x", () -> {
            Files.move(shared.resolve("r"), shared.resolve("r.old"));
            Files.createDirectories(shared.resolve("r/a/b"));
        }), "write", "--as", "bob", "vfs:///shared/r/a/b/f");
        assertExit(5, r);
        assertTrue(Files.isDirectory(shared.resolve("r/a/b")), "their r/a/b was removed");
        assertTrue(Files.isDirectory(shared.resolve("r.old/a/b")), "the cleanup stops at the first name not ours");
    }

    /** What a test does while a command runs. */
    private interface Step {
        void run() throws java.io.IOException;
    }

    /** Standard input that gives {@code first}, runs {@code meanwhile}, then fails as a closed descriptor does. */
    private static java.io.InputStream failingAfter(String first, Step meanwhile) {
        return new java.io.SequenceInputStream(new java.io.ByteArrayInputStream(first.getBytes(StandardCharsets.UTF_8)),
                new java.io.InputStream() {
                    @Override
                    public int read() throws java.io.IOException {
                        meanwhile.run();
                        throw new java.io.IOException("Bad file descriptor");
                    }
                });
    }

    @Test
    void mkdirIsMkdirP() {
        assertExit(0, cli.run("mkdir", "--as", "bob", "vfs:///shared/a/b/c"));
        assertTrue(Files.isDirectory(cli.file("/shared/a/b/c")));
        assertExit(0, cli.run("mkdir", "--as", "bob", "vfs:///shared/a/b/c"));
    }

    @Test
    void mkdirDenialsAndConflicts() throws Exception {
        Cli.Result r = cli.run("mkdir", "--as", "bob", "vfs:///sys/d");
        assertExit(3, r);
        assertTrue(r.err().contains("context 'bob' cannot write to '/sys/d'"), r.err());
        assertExit(3, cli.run("mkdir", "--as", "bob", "vfs:///home/alice/d"));
        assertFalse(cli.exists("/sys") || cli.exists("/home"));
        cli.put("/shared/file", "x");
        Cli.Result over = cli.run("mkdir", "--as", "bob", "vfs:///shared/file");
        assertExit(4, over);
        assertTrue(over.err().contains("vfs:///shared/file"), over.err());
        assertExit(4, cli.run("mkdir", "--as", "bob", "vfs:///shared/file/sub"));
    }

    @Test
    void rmRemovesFilesAndDirectoriesWithWhatIsInThem() throws Exception {
        // chibi's vfs_delete removes a directory and everything below it, without asking for more
        cli.put("/shared/d/sub/f", "f");
        cli.put("/shared/e/f", "f");
        cli.put("/shared/g", "g");
        assertExit(0, cli.run("rm", "--as", "bob", "vfs:///shared/g"));
        assertFalse(cli.exists("/shared/g"));
        assertExit(0, cli.run("rm", "--as", "bob", "vfs:///shared/d"));
        assertFalse(cli.exists("/shared/d"));
        assertExit(1, cli.run("rm", "--as", "bob", "vfs:///shared/d"));
        assertExit(0, cli.run("rm", "--as", "bob", "-r", "vfs:///shared/e")); // -r is still accepted
        assertFalse(cli.exists("/shared/e"));
    }

    @Test
    void rmDenials() throws Exception {
        cli.put("/home/alice/f", "f");
        cli.put("/sys/tool_cache/bob/x", "x");
        Cli.Result other = cli.run("rm", "--as", "bob", "vfs:///home/alice/f");
        assertExit(3, other);
        assertEquals("chibifs: context 'bob' cannot write to '/home/alice/f' (writable zones: /shared/, /home/bob/, /site/, "
                + "/flocks/<joined-flock>/, /tools/shared/, /tools/home/bob/, /tools/flocks/<joined-flock>/)\n",
                other.err());
        assertExit(3, cli.run("rm", "--as", "bob", "vfs:///sys/tool_cache/bob/x"));
        Cli.Result root = cli.run("rm", "--as", "alice", "-r", "vfs:///home/alice");
        assertExit(3, root);
        assertTrue(root.err().contains("cannot remove or rename the zone root '/home/alice'"), root.err());
        assertExit(3, cli.run("rm", "--as", "bob", "-r", "vfs:///shared"));
        assertTrue(cli.exists("/home/alice/f") && cli.exists("/sys/tool_cache/bob/x"));
        assertExit(0, cli.run("rm", "--as-system", "-r", "vfs:///sys/tool_cache/bob"));
    }

    @Test
    @org.junit.jupiter.api.Timeout(60)
    void lockWaitZeroTriesTheLockOnceAsFlockDashWZero() throws Exception {
        cli.put("/shared/db", "before");
        assertExit(0, cli.run("append", "--as", "bob", "--lock-wait", "0", "--content", "+free", "vfs:///shared/db"));
        Process holder = new ProcessBuilder("python3", "-c", "import fcntl, sys; f = open(sys.argv[1], 'r+'); "
                + "fcntl.lockf(f, fcntl.LOCK_EX); print('locked', flush=True); sys.stdin.read()",
                cli.file("/shared/db").toString()).redirectErrorStream(true).start();
        try {
            assertEquals("locked", new java.io.BufferedReader(new java.io.InputStreamReader(holder.getInputStream())).readLine());
            for (String zero : new String[] {"0", "0s", "0ms", "PT0S"}) {
                Cli.Result r = cli.run("write", "--as", "bob", "--lock-wait", zero, "--content", "after", "vfs:///shared/db");
                assertExit(5, r);
                assertTrue(r.err().contains("holds a lock"), r.err());
            }
        } finally {
            holder.getOutputStream().close();
            holder.waitFor();
        }
        assertEquals("before+free", cli.read("/shared/db"));
        Cli.Result negative = cli.run("write", "--as", "bob", "--lock-wait", "-1s", "--content", "x", "vfs:///shared/db");
        assertExit(2, negative);
        assertTrue(negative.err().contains("0 (do not wait)"), negative.err());
    }

    @Test
    void rmRemovesATreeHoldingNamesThatAreNotUtf8() throws Exception {
        cli.put("/shared/tree/plain", "x");
        // made by another program in the store: java.nio cannot name them, the shell can
        Process p = new ProcessBuilder("python3", "-c", "import os, sys; d = os.fsencode(sys.argv[1]);"
                + " open(d + b'/\\xff', 'w'); os.mkdir(d + b'/\\xfe'); open(d + b'/\\xfe/\\xfd', 'w')",
                cli.file("/shared/tree").toString()).redirectErrorStream(true).start();
        assertEquals(0, p.waitFor(), new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8));
        Cli.Result r = cli.run("rm", "--as", "bob", "-r", "vfs:///shared/tree");
        assertExit(0, r);
        assertFalse(cli.exists("/shared/tree"));
    }

    /** A value that is an option's name is the value: text such as "--help" is what some files hold. */
    @Test
    void contentMayBeAnOptionsName() throws Exception {
        assertExit(0, cli.run("write", "--as", "bob", "--content=--help", "vfs:///shared/o"));
        assertEquals("--help", cli.read("/shared/o"));
        assertExit(0, cli.run("write", "--as", "bob", "--content", "-h", "vfs:///shared/o"));
        assertEquals("-h", cli.read("/shared/o"));
        assertExit(0, cli.run("append", "--as", "bob", "--content", "--as", "vfs:///shared/o"));
        assertEquals("-h--as", cli.read("/shared/o"));
    }
}
