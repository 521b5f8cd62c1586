package dev.chibifs.cli;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static dev.chibifs.cli.Cli.assertExit;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The vfs commands follow symbolic links as a mount does, judging the policy on where they lead. */
class SymlinkCommandsTest {

    @TempDir
    Path home;
    Cli cli;

    @BeforeEach
    void setUp() throws Exception {
        cli = new Cli(home);
        cli.put("/shared/file", "hi\n");
        cli.put("/shared/d/in", "inside\n");
        cli.put("/home/bob/secret", "bob's\n");
        Files.createSymbolicLink(cli.file("/shared/lnk"), Path.of("file"));
        Files.createSymbolicLink(cli.file("/shared/dl"), Path.of("d"));
        // placed in the store by hand (the --symlinks rule refuses to make it): it leads into bob's home
        Files.createSymbolicLink(cli.file("/shared/tobob"), Path.of("../home/bob/secret"));
        Files.createSymbolicLink(cli.file("/shared/abs"), Path.of("/etc/hostname"));
        Files.createSymbolicLink(cli.file("/shared/up"), Path.of("../../x"));
    }

    @Test
    void readCommandsReadThroughLinks() {
        assertEquals("hi\n", cli.run("cat", "vfs:///shared/lnk").out());
        assertEquals("hi\n", cli.run("head", "vfs:///shared/lnk").out());
        assertEquals("inside\n", cli.run("cat", "vfs:///shared/dl/in").out());
        assertEquals("bob's\n", cli.run("lines", "vfs:///shared/tobob", "1", "1").out());
        Cli.Result grep = cli.run("grep", "in", "vfs:///shared/dl");
        assertExit(0, grep);
        Cli.Result ls = cli.run("ls", "vfs:///shared/lnk");
        assertExit(0, ls);
        assertTrue(ls.out().contains("-> file"), "ls shows the link itself: " + ls.out());
    }

    @Test
    void writesGoThroughTheLinkAndTheTargetIsJudged() throws Exception {
        assertExit(0, cli.run("write", "--as", "alice", "--content", "new\n", "vfs:///shared/lnk"));
        assertTrue(Files.isSymbolicLink(cli.file("/shared/lnk")), "the link stays a link");
        assertEquals("new\n", cli.read("/shared/file"));
        assertExit(0, cli.run("append", "--as", "alice", "--content", "more\n", "vfs:///shared/lnk"));
        assertExit(0, cli.run("edit", "--as", "alice", "--old", "more", "--new", "most", "vfs:///shared/lnk"));
        assertEquals("new\nmost\n", cli.read("/shared/file"));
        assertExit(0, cli.run("write", "--as", "alice", "--content", "x", "vfs:///shared/dl/x"));
        assertEquals("x", cli.read("/shared/d/x"));
        Cli.Result denied = cli.run("write", "--as", "alice", "--content", "mine", "vfs:///shared/tobob");
        assertExit(3, denied);
        assertTrue(denied.err().contains("cannot write to '/home/bob/secret'"), denied.err());
        assertEquals("bob's\n", cli.read("/home/bob/secret"));
        assertExit(0, cli.run("rm", "--as", "alice", "vfs:///shared/lnk"));
        assertFalse(Files.exists(cli.file("/shared/lnk"), java.nio.file.LinkOption.NOFOLLOW_LINKS));
        assertTrue(cli.exists("/shared/file"), "rm removes the link, not its target");
    }

    /**
     * {@code echo x > link} whose target's directory is missing is ENOENT, natively and in chibi; write
     * made the target's directories and wrote there. Through a link to a directory, the parents of
     * the path as named are still made, as chibi's create_dir_all makes them.
     */
    @Test
    void aLinkToAMissingDirectoryIsWrittenThroughByNothing() throws Exception {
        Files.createSymbolicLink(cli.file("/shared/dangling"), Path.of("a/b/f"));
        for (String command : List.of("write", "append")) {
            Cli.Result r = cli.run(command, "--as", "alice", "--content", "x", "vfs:///shared/dangling");
            assertExit(ExitCodes.NOT_FOUND, r);
            assertEquals("chibifs: no such file or directory: vfs:///shared/dangling is a symbolic link to"
                    + " vfs:///shared/a/b/f, whose directory is not there; nothing written\n", r.err());
        }
        // cp too: it made a/b and copied there (GNU cp: "not writing through dangling symlink")
        cli.put("/shared/src", "s");
        Cli.Result cp = cli.run("cp", "--as", "alice", "vfs:///shared/src", "vfs:///shared/dangling");
        assertExit(ExitCodes.NOT_FOUND, cp);
        assertEquals("chibifs: no such file or directory: vfs:///shared/dangling is a symbolic link to"
                + " vfs:///shared/a/b/f, whose directory is not there; nothing written\n", cp.err());
        assertFalse(cli.exists("/shared/a"), "made the link's target's directory");
        assertExit(0, cli.run("write", "--as", "alice", "--content", "x", "vfs:///shared/dl/new/f"));
        assertEquals("x", cli.read("/shared/d/new/f"));
    }

    /**
     * A tester's (vfscmd2): {@code x/../../bob/secret} with x missing, or x a file, read bob's file and
     * wrote through {@code x/../e/w}, where the kernel, through a mount, answers ENOENT and ENOTDIR:
     * it goes up from a directory it reached, not by name.
     */
    @Test
    void aDotDotGoesUpOnlyFromADirectoryThere() throws Exception {
        Files.createSymbolicLink(cli.file("/shared/dotdot"), Path.of("x/../file"));
        Files.createSymbolicLink(cli.file("/shared/viafile"), Path.of("file/../d/in"));
        Files.createSymbolicLink(cli.file("/shared/fine"), Path.of("d/../file"));
        assertExit(1, cli.run("cat", "vfs:///shared/dotdot"));
        assertExit(1, cli.run("cat", "vfs:///shared/viafile")); // as cat(1): Not a directory is its exit 1
        Cli.Result write = cli.run("write", "--as", "alice", "--content", "CLI", "vfs:///shared/viafile");
        assertFalse(write.code() == 0, write.toString());
        assertEquals("inside\n", cli.read("/shared/d/in"));
        assertEquals("hi\n", cli.run("cat", "vfs:///shared/fine").out());
    }

    @Test
    void linksOutOfTheStoreAreNotFollowed() {
        Cli.Result abs = cli.run("cat", "vfs:///shared/abs");
        assertExit(5, abs);
        assertTrue(abs.err().contains("vfs:///shared/abs is a symbolic link to the absolute path '/etc/hostname', not followed"),
                abs.err());
        Cli.Result up = cli.run("write", "--as", "alice", "--content", "x", "vfs:///shared/up");
        assertExit(5, up);
        assertTrue(up.err().contains("climbs above vfs:///, out of the store: not followed"), up.err());
        assertFalse(Files.exists(home.resolve("x")));
    }
}
