package dev.chibifs.cli;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;

import static dev.chibifs.cli.Cli.assertExit;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** cp, mv and edit against a real temp store, with their denials and conflicts. */
class CopyMoveEditTest {

    @TempDir
    Path home;
    Cli cli;

    @BeforeEach
    void setUp() throws Exception {
        cli = new Cli(home);
        cli.put("/shared/src.md", "data\n");
        cli.put("/sys/tool_cache/bob/out_1_00000000", "cached\n");
        cli.put("/home/alice/a.md", "alice\n");
        cli.put("/shared/dir/x", "x");
    }

    @Test
    void cpCopiesIntoNewParentsAndReplaces() throws Exception {
        assertExit(0, cli.run("cp", "--as", "bob", "vfs:///shared/src.md", "vfs:///home/bob/a/b/copy.md"));
        assertEquals("data\n", cli.read("/home/bob/a/b/copy.md"));
        cli.put("/shared/other", "old");
        assertExit(0, cli.run("cp", "--as", "bob", "vfs:///shared/src.md", "vfs:///shared/other"));
        assertEquals("data\n", cli.read("/shared/other"));
        assertEquals("data\n", cli.read("/shared/src.md"));
    }

    @Test
    void cpReadsAnywhereButWritesOnlyWhereAllowed() throws Exception {
        assertExit(0, cli.run("cp", "--as", "bob", "vfs:///sys/tool_cache/bob/out_1_00000000", "vfs:///shared/c"));
        assertEquals("cached\n", cli.read("/shared/c"));
        Cli.Result denied = cli.run("cp", "--as", "bob", "vfs:///shared/src.md", "vfs:///home/alice/b.md");
        assertExit(3, denied);
        assertEquals("chibifs: context 'bob' cannot write to '/home/alice/b.md' (writable zones: /shared/, /home/bob/, /site/, "
                + "/flocks/<joined-flock>/, /tools/shared/, /tools/home/bob/, /tools/flocks/<joined-flock>/)\n",
                denied.err());
        assertFalse(cli.exists("/home/alice/b.md"));
        assertExit(3, cli.run("cp", "--as", "bob", "vfs:///shared/src.md", "vfs:///sys/new/c"));
        assertFalse(cli.exists("/sys/new"));
    }

    @Test
    void cpConflictsAndNotFound() {
        Cli.Result dirSrc = cli.run("cp", "--as", "bob", "vfs:///shared/dir", "vfs:///shared/d2");
        assertExit(4, dirSrc);
        assertTrue(dirSrc.err().contains("cp copies files only"), dirSrc.err());
        Cli.Result dirDst = cli.run("cp", "--as", "bob", "vfs:///shared/src.md", "vfs:///shared/dir");
        assertExit(4, dirDst);
        assertTrue(dirDst.err().contains("e.g. vfs:///shared/dir/src.md"), dirDst.err());
        Cli.Result missing = cli.run("cp", "--as", "bob", "vfs:///shared/none", "vfs:///shared/n2");
        assertExit(1, missing);
        assertEquals("chibifs: no such file or directory: vfs:///shared/none\n", missing.err());
    }

    @Test
    void mvMovesFilesAndDirectoriesCreatingTheParent() throws Exception {
        assertExit(0, cli.run("mv", "--as", "bob", "vfs:///shared/src.md", "vfs:///home/bob/new/dst.md"));
        assertFalse(cli.exists("/shared/src.md"));
        assertEquals("data\n", cli.read("/home/bob/new/dst.md"));
        assertExit(0, cli.run("mv", "--as", "bob", "vfs:///shared/dir", "vfs:///shared/moved"));
        assertEquals("x", cli.read("/shared/moved/x"));
        cli.put("/shared/old", "old");
        cli.put("/shared/repl", "new");
        assertExit(0, cli.run("mv", "--as", "bob", "vfs:///shared/repl", "vfs:///shared/old"));
        assertEquals("new", cli.read("/shared/old"));
    }

    @Test
    void mvNeedsWriteOnBothEndsAndLeavesNothingWhenDenied() {
        Cli.Result from = cli.run("mv", "--as", "bob", "vfs:///sys/tool_cache/bob/out_1_00000000", "vfs:///shared/o");
        assertExit(3, from);
        assertTrue(from.err().contains("cannot write to '/sys/tool_cache/bob/out_1_00000000'"), from.err());
        Cli.Result to = cli.run("mv", "--as", "bob", "vfs:///shared/src.md", "vfs:///home/alice/new/s.md");
        assertExit(3, to);
        assertTrue(to.err().contains("cannot write to '/home/alice/new/s.md'"), to.err());
        assertFalse(cli.exists("/home/alice/new"));
        assertTrue(cli.exists("/shared/src.md") && cli.exists("/sys/tool_cache/bob/out_1_00000000"));
        Cli.Result root = cli.run("mv", "--as", "alice", "vfs:///home/alice", "vfs:///shared/alice");
        assertExit(3, root);
        assertTrue(root.err().contains("zone root '/home/alice'"), root.err());
    }

    /** A copy that fails once DST's parents are made (SRC a socket, which cannot be opened) removes them again. */
    @Test
    void cpThatFailsRemovesTheParentsItMade() throws Exception {
        Path socket = cli.file("/shared/sock");
        Process p = new ProcessBuilder("python3", "-c", "import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])",
                socket.toString()).redirectErrorStream(true).start();
        assertEquals(0, p.waitFor(), new String(p.getInputStream().readAllBytes()));
        Cli.Result r = cli.run("cp", "--as", "bob", "vfs:///shared/sock", "vfs:///shared/n/m/c");
        assertExit(5, r);
        assertFalse(cli.exists("/shared/n"), r.toString());
    }

    /** A copy that fills the disk names the file it was writing: a full disk's failure names none, and cp has two. */
    @Test
    void cpOntoAFullDiskNamesTheDestination(@TempDir Path temp) throws Exception {
        dev.chibifs.testing.FuseSupport.requireRoot();
        try (dev.chibifs.testing.Tmpfs disk = dev.chibifs.testing.Tmpfs.mount(temp.resolve("small"), "1m")) {
            Cli small = new Cli(disk.path());
            small.put("/shared/big", new byte[640 * 1024]);
            Cli.Result r = small.run("cp", "--as", "bob", "vfs:///shared/big", "vfs:///shared/copy");
            assertExit(5, r);
            assertEquals("chibifs: No space left on device: vfs:///shared/copy\n", r.err());
        }
    }

    /** In a store with no /home yet: bob may make it on the way to his own home, as write and mkdir do. */
    @Test
    void mvIntoAHomeNotMadeYet(@TempDir Path fresh) throws Exception {
        Cli empty = new Cli(fresh);
        empty.put("/shared/s", "s");
        assertExit(0, empty.run("mv", "--as", "bob", "vfs:///shared/s", "vfs:///home/bob/new/s"));
        assertEquals("s", empty.read("/home/bob/new/s"));
    }

    @Test
    void mvConflictsAndNotFound() throws Exception {
        assertExit(4, cli.run("mv", "--as", "bob", "vfs:///shared/src.md", "vfs:///shared/dir"));
        assertExit(4, cli.run("mv", "--as", "bob", "vfs:///shared/dir", "vfs:///shared/src.md"));
        Cli.Result into = cli.run("mv", "--as", "bob", "vfs:///shared/dir", "vfs:///shared/dir/sub");
        assertExit(4, into);
        assertTrue(into.err().contains("into itself"), into.err());
        assertExit(1, cli.run("mv", "--as", "bob", "vfs:///shared/none", "vfs:///shared/q/none"));
        assertFalse(cli.exists("/shared/q"));
        assertTrue(cli.exists("/shared/src.md") && cli.exists("/shared/dir/x"));
    }

    @Test
    void mvRefusedByTheLinkRuleIsDeniedAndLeavesNoNewParent() throws Exception {
        // ../../../../x from /shared/a/b/c/d stays in /shared; from /home/alice/np/q/d it climbs out of alice's home
        Files.createDirectories(cli.file("/shared/a/b/c/d"));
        Files.createSymbolicLink(cli.file("/shared/a/b/c/d/lnk"), Path.of("../../../../x"));
        Cli.Result r = cli.run("mv", "--as", "alice", "vfs:///shared/a/b/c/d", "vfs:///home/alice/np/q/d");
        assertExit(3, r);
        assertTrue(r.err().contains("is refused (--symlinks zone)") && r.err().endsWith("; nothing was moved\n")
                && !r.err().contains("cross-device"), r.err());
        assertFalse(cli.exists("/home/alice/np"), "the parents mv made are removed again");
        assertTrue(cli.exists("/home/alice/a.md") && Files.isSymbolicLink(cli.file("/shared/a/b/c/d/lnk")));
    }

    @Test
    void mvAcrossStoresIsRefusedBeforeAnyParentIsMade() throws Exception {
        Path docs = Files.createDirectories(home.resolve("docs"));
        Files.writeString(docs.resolve("d.md"), "doc");
        Cli.Result r = cli.run("mv", "--as", "bob", "--store", "/shared/docs=readonly:" + docs,
                "vfs:///shared/docs/d.md", "vfs:///shared/new/deep/d.md");
        assertExit(5, r);
        assertEquals("chibifs: '/shared/docs/d.md' and '/shared/new/deep/d.md' are in different stores (mv renames within"
                + " one store; copy a file with cp, then rm it) (Invalid cross-device link)\n", r.err());
        assertFalse(cli.exists("/shared/new"));
        assertTrue(Files.exists(docs.resolve("d.md")));
    }

    @Test
    void editReplacesExactlyOneOccurrence() throws Exception {
        cli.put("/home/bob/plan.md", "- [ ] write tests\n- [ ] docs\n");
        assertExit(0, cli.run("edit", "--as", "bob", "--old", "[ ] write", "--new", "[x] write", "vfs:///home/bob/plan.md"));
        assertEquals("- [x] write tests\n- [ ] docs\n", cli.read("/home/bob/plan.md"));
        assertExit(0, cli.run("edit", "--as", "bob", "--old", "- [ ] docs\n", "--new", "", "vfs:///home/bob/plan.md"));
        assertEquals("- [x] write tests\n", cli.read("/home/bob/plan.md"));
    }

    @Test
    void editRefusesZeroOrSeveralAndSaysWhich() throws Exception {
        cli.put("/shared/t", "aaa b b\n");
        Cli.Result none = cli.run("edit", "--as", "bob", "--old", "zzz", "--new", "y", "vfs:///shared/t");
        assertExit(4, none);
        assertEquals("chibifs: 'zzz' not found in vfs:///shared/t; nothing changed\n", none.err());
        Cli.Result several = cli.run("edit", "--as", "bob", "--old", "b", "--new", "y", "vfs:///shared/t");
        assertExit(4, several);
        assertTrue(several.err().contains("'b' occurs 2 times in vfs:///shared/t"), several.err());
        // overlapping occurrences are ambiguous too
        Cli.Result overlap = cli.run("edit", "--as", "bob", "--old", "aa", "--new", "y", "vfs:///shared/t");
        assertExit(4, overlap);
        assertTrue(overlap.err().contains("occurs 2 times"), overlap.err());
        assertEquals("aaa b b\n", cli.read("/shared/t"));
    }

    @Test
    void editDenialsAndBadInput() throws Exception {
        Cli.Result denied = cli.run("edit", "--as", "bob", "--old", "alice", "--new", "bob", "vfs:///home/alice/a.md");
        assertExit(3, denied);
        assertEquals("chibifs: context 'bob' cannot write to '/home/alice/a.md' (writable zones: /shared/, /home/bob/, /site/, "
                + "/flocks/<joined-flock>/, /tools/shared/, /tools/home/bob/, /tools/flocks/<joined-flock>/)\n",
                denied.err());
        assertEquals("alice\n", cli.read("/home/alice/a.md"));
        assertExit(3, cli.run("edit", "--as", "bob", "--old", "c", "--new", "d", "vfs:///sys/tool_cache/bob/out_1_00000000"));
        assertExit(2, cli.run("edit", "--as", "bob", "--old", "", "--new", "d", "vfs:///shared/src.md"));
        assertExit(2, cli.run("edit", "--as", "bob", "--new", "d", "vfs:///shared/src.md"));
        assertExit(1, cli.run("edit", "--as", "bob", "--old", "a", "--new", "d", "vfs:///shared/none"));
        assertExit(4, cli.run("edit", "--as", "bob", "--old", "a", "--new", "d", "vfs:///shared/dir"));
        assertExit(0, cli.run("edit", "--as-system", "--old", "cached", "--new", "c", "vfs:///sys/tool_cache/bob/out_1_00000000"));
    }

    /** edit has no stdin to fall back on: --old and --new take an option's name, in both forms. */
    @Test
    void editOldAndNewMayBeOptionsNames() throws Exception {
        cli.put("/shared/s.sh", "run -h\n");
        assertExit(0, cli.run("edit", "--as", "bob", "--old", "-h", "--new=--help", "vfs:///shared/s.sh"));
        assertEquals("run --help\n", cli.read("/shared/s.sh"));
        assertExit(0, cli.run("edit", "--as", "bob", "--old=--help", "--new", "-V", "vfs:///shared/s.sh"));
        assertEquals("run -V\n", cli.read("/shared/s.sh"));
    }
}
