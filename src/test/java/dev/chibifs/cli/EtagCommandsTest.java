package dev.chibifs.cli;

import static dev.chibifs.cli.Cli.assertExit;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.chibifs.store.ContentHash;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** ETags through the commands: info and cat --etag show them; write, append and edit check them. */
class EtagCommandsTest {

    @TempDir
    Path home;
    Cli cli;

    @BeforeEach
    void setUp() throws Exception {
        cli = new Cli(home);
        cli.put("/shared/tasks.md", "- review\n");
    }

    private static String etagOf(String content) {
        return ContentHash.of(content.getBytes(StandardCharsets.UTF_8));
    }

    @Test
    void infoAndCatShowTheEtag() {
        String etag = etagOf("- review\n");
        Cli.Result info = cli.run("info", "vfs:///shared/tasks.md");
        assertExit(0, info);
        assertTrue(info.out().contains("etag: " + etag + "\n"), info.out());
        Cli.Result json = cli.run("info", "--json", "vfs:///shared/tasks.md");
        assertTrue(json.out().contains("\"etag\" : \"" + etag + "\""), json.out());
        Cli.Result dir = cli.run("info", "vfs:///shared");
        assertTrue(!dir.out().contains("etag"), dir.out());

        Cli.Result cat = cli.run("cat", "--etag", "vfs:///shared/tasks.md");
        assertExit(0, cat);
        assertEquals("- review\n", cat.out());
        assertEquals("[etag: " + etag + "]\n", cat.err());
        Cli.Result catJson = cli.run("cat", "--etag", "--json", "vfs:///shared/tasks.md");
        assertTrue(catJson.out().contains("\"etag\" : \"" + etag + "\""), catJson.out());
    }

    /** A file too large to hash (over 16 GiB) has no ETag, but info still tells the rest of it. */
    @Test
    void infoOfAFileTooLargeToHashShowsItWithoutAnEtag() throws Exception {
        cli.put("/shared/huge", "");
        try (java.io.RandomAccessFile f = new java.io.RandomAccessFile(cli.file("/shared/huge").toFile(), "rw")) {
            f.setLength((16L << 30) + 1); // sparse
        }
        Cli.Result info = cli.run("info", "vfs:///shared/huge");
        assertExit(0, info);
        assertTrue(info.out().contains("size: " + ((16L << 30) + 1)) && !info.out().contains("etag"), info.out());
    }

    @Test
    void aStaleIfMatchExitsFourWithTheCurrentEtagAndChangesNothing() throws Exception {
        String first = etagOf("- review\n");
        assertExit(0, cli.run("write", "--as", "bob", "--if-match", first, "--content", "- merge\n", "vfs:///shared/tasks.md"));
        String second = etagOf("- merge\n");
        for (String[] args : new String[][] {
            {"write", "--as", "bob", "--if-match", first, "--content", "lost", "vfs:///shared/tasks.md"},
            {"append", "--as", "bob", "--if-match", first, "--content", "lost", "vfs:///shared/tasks.md"},
            {"edit", "--as", "bob", "--if-match", first, "--old", "merge", "--new", "lost", "vfs:///shared/tasks.md"}}) {
            Cli.Result r = cli.run(args);
            assertExit(4, r);
            assertEquals("chibifs: vfs:///shared/tasks.md has ETag " + second + " (--if-match " + first
                    + "); nothing changed\n", r.err());
            assertEquals("- merge\n", cli.read("/shared/tasks.md"));
        }
        assertExit(0, cli.run("append", "--as", "bob", "--if-match", second, "--content", "- ship\n", "vfs:///shared/tasks.md"));
        assertExit(0, cli.run("edit", "--as", "bob", "--if-match", etagOf("- merge\n- ship\n"), "--old", "ship",
                "--new", "release", "vfs:///shared/tasks.md"));
        assertEquals("- merge\n- release\n", cli.read("/shared/tasks.md"));
    }

    @Test
    void ifNoneMatchOnlyCreates() throws Exception {
        assertExit(0, cli.run("write", "--as", "bob", "--if-none-match", "*", "--content", "new", "vfs:///shared/lock"));
        Cli.Result again = cli.run("write", "--as", "bob", "--if-none-match", "*", "--content", "other", "vfs:///shared/lock");
        assertExit(4, again);
        assertTrue(again.err().contains("has ETag " + etagOf("new") + " (--if-none-match '*')"), again.err());
        assertEquals("new", cli.read("/shared/lock"));
    }

    @Test
    void malformedConditionsAreUsageErrors() {
        assertExit(2, cli.run("write", "--as", "bob", "--if-match", "abc", "--content", "x", "vfs:///shared/tasks.md"));
        assertExit(2, cli.run("write", "--as", "bob", "--if-none-match", "etag", "--content", "x", "vfs:///shared/tasks.md"));
        assertExit(2, cli.run("write", "--as", "bob", "--if-none-match", "*", "--if-match", etagOf("x"),
                "--content", "x", "vfs:///shared/tasks.md"));
        assertExit(2, cli.run("edit", "--as", "bob", "--if-none-match", "*", "--old", "a", "--new", "b", "vfs:///shared/tasks.md"));
    }
}
