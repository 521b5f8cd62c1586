package dev.chibifs.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Base64;

import static dev.chibifs.cli.Cli.assertExit;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** ls, info, cat, head, tail and lines against a real temp store. */
class ReadCommandsTest {

    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    Path home;
    Cli cli;

    @BeforeEach
    void setUp() throws Exception {
        cli = new Cli(home);
        cli.put("/shared/notes.md", "one\ntwo\nthree\nfour\n");
        cli.put("/shared/.hidden", "h");
        cli.put("/shared/sub/deep.txt", "d");
    }

    @Test
    void lsListsSortedAndHidesDotfilesUnlessAll() {
        Cli.Result r = cli.run("ls", "vfs:///shared");
        assertExit(0, r);
        assertEquals("notes.md\nsub/\n", r.out());
        assertEquals(".hidden\nnotes.md\nsub/\n", cli.run("ls", "-a", "vfs:///shared").out());
    }

    @Test
    void lsDefaultsToRootAndListsAFileAsItself() {
        assertEquals("shared/\n", cli.run("ls").out());
        assertEquals("notes.md\n", cli.run("ls", "vfs:///shared/notes.md").out());
    }

    @Test
    void lsLongAndJsonGiveKindSizeAndTime() throws Exception {
        Cli.Result l = cli.run("ls", "-l", "vfs:///shared");
        assertExit(0, l);
        assertTrue(l.out().matches("(?s)file +19  \\d{4}-.*Z  notes.md\ndirectory +\\d+  .*  sub/\n"), l.out());
        JsonNode j = JSON.readTree(cli.run("ls", "--json", "-a", "vfs:///shared").outBytes());
        assertEquals("vfs:///shared", j.get("uri").asText());
        assertEquals(3, j.get("entries").size());
        JsonNode notes = j.get("entries").get(1);
        assertEquals("notes.md", notes.get("name").asText());
        assertEquals("vfs:///shared/notes.md", notes.get("uri").asText());
        assertEquals("file", notes.get("kind").asText());
        assertEquals(19, notes.get("size").asLong());
        assertTrue(notes.get("modified").asText().endsWith("Z"));
    }

    @Test
    void lsMissingIsNotFound() {
        Cli.Result r = cli.run("ls", "vfs:///shared/nope");
        assertExit(1, r);
        assertEquals("chibifs: no such file or directory: vfs:///shared/nope\n", r.err());
    }

    @Test
    void infoGivesKindSizeAndTimes() throws Exception {
        Cli.Result r = cli.run("info", "vfs:///shared/notes.md");
        assertExit(0, r);
        assertTrue(r.out().startsWith("uri: vfs:///shared/notes.md\nkind: file\nsize: 19\n"), r.out());
        assertTrue(r.out().contains("\nmodified: "), r.out());
        JsonNode j = JSON.readTree(cli.run("info", "--json", "vfs:///shared/sub").outBytes());
        assertEquals("directory", j.get("kind").asText());
        assertTrue(j.has("created") && j.has("modified") && j.has("size"));
        assertExit(1, cli.run("info", "vfs:///nope"));
    }

    @Test
    void lsLongAndInfoShowALinkAndItsTargetAndFifosByKind() throws Exception {
        java.nio.file.Files.createSymbolicLink(cli.file("/shared/sub/link"), Path.of("../notes.md"));
        assertEquals(0, new ProcessBuilder("mkfifo", cli.file("/shared/sub/pipe").toString()).start().waitFor());
        Cli.Result l = cli.run("ls", "-l", "vfs:///shared/sub");
        assertExit(0, l);
        assertTrue(l.out().matches("(?s)file .*  deep.txt\nsymlink +11  .*  link -> \\.\\./notes.md\nfifo +0  .*  pipe\n"), l.out());
        JsonNode j = JSON.readTree(cli.run("ls", "--json", "vfs:///shared/sub").outBytes());
        assertEquals("../notes.md", j.get("entries").get(1).get("target").asText());
        assertTrue(!j.get("entries").get(0).has("target"));
        assertEquals("fifo", j.get("entries").get(2).get("kind").asText());
        Cli.Result r = cli.run("info", "vfs:///shared/sub/link");
        assertExit(0, r);
        assertTrue(r.out().startsWith("uri: vfs:///shared/sub/link\nkind: symlink\nsize: 11\n"), r.out());
        assertTrue(r.out().endsWith("\ntarget: ../notes.md\n"), r.out());
        assertEquals("../notes.md", JSON.readTree(cli.run("info", "--json", "vfs:///shared/sub/link").outBytes())
                .get("target").asText());
        assertTrue(cli.run("ls", "-l", "vfs:///shared/sub/link").out().contains("link -> ../notes.md"));
    }

    @Test
    void catIsByteExact() throws Exception {
        byte[] bytes = {(byte) 0xff, 0, '\r', '\n', 'x', (byte) 0xc3};
        cli.put("/shared/bin", bytes);
        Cli.Result r = cli.run("cat", "vfs:///shared/bin");
        assertExit(0, r);
        assertArrayEquals(bytes, r.outBytes());
        JsonNode j = JSON.readTree(cli.run("cat", "--json", "vfs:///shared/bin").outBytes());
        assertEquals("base64", j.get("encoding").asText());
        assertArrayEquals(bytes, Base64.getDecoder().decode(j.get("content").asText()));
    }

    @Test
    void catJsonOfTextEscapesProperly() throws Exception {
        cli.put("/shared/q.txt", "say \"hi\"\n\tüñî\u0001");
        JsonNode j = JSON.readTree(cli.run("cat", "--json", "vfs:///shared/q.txt").outBytes());
        assertEquals("utf-8", j.get("encoding").asText());
        assertEquals("say \"hi\"\n\tüñî\u0001", j.get("content").asText());
    }

    @Test
    void catOfDirectoryIsConflictAndMissingIsNotFound() {
        Cli.Result dir = cli.run("cat", "vfs:///shared/sub");
        assertExit(4, dir);
        assertEquals("chibifs: is a directory: vfs:///shared/sub\n", dir.err());
        assertExit(1, cli.run("cat", "vfs:///shared/none"));
    }

    @Test
    void headAndTailCountLines() throws Exception {
        assertEquals("one\ntwo\n", cli.run("head", "-n", "2", "vfs:///shared/notes.md").out());
        assertEquals("three\nfour\n", cli.run("tail", "-n", "2", "vfs:///shared/notes.md").out());
        assertEquals("", cli.run("head", "-n", "0", "vfs:///shared/notes.md").out());
        assertEquals("one\ntwo\nthree\nfour\n", cli.run("tail", "-n", "99", "vfs:///shared/notes.md").out());
        cli.put("/shared/eleven", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11");
        assertEquals("1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n", cli.run("head", "vfs:///shared/eleven").out());
        // the last line has no newline, and tail keeps it that way
        assertEquals("2\n3\n4\n5\n6\n7\n8\n9\n10\n11", cli.run("tail", "vfs:///shared/eleven").out());
        // coreutils: tail -n +N from line N on (it printed the last N), head -n +N the first N
        assertEquals("three\nfour\n", cli.run("tail", "-n", "+3", "vfs:///shared/notes.md").out());
        assertEquals("one\ntwo\nthree\nfour\n", cli.run("tail", "-n", "+0", "vfs:///shared/notes.md").out());
        assertEquals("one\n", cli.run("head", "-n", "+1", "vfs:///shared/notes.md").out());
    }

    @Test
    void aPathThroughAFileIsNotFoundForReads() {
        for (String command : new String[] {"cat", "ls", "info", "head"}) {
            Cli.Result r = cli.run(command, "vfs:///shared/notes.md/sub");
            assertExit(1, r);
            assertEquals("chibifs: no such file or directory (a file is in the way): vfs:///shared/notes.md/sub\n",
                    r.err(), command);
        }
        assertExit(4, cli.run("mkdir", "--as", "bob", "vfs:///shared/notes.md/sub"));
    }

    /** coreutils: head -n -N all but the last N lines, tail -n -N the last N (both were refused). */
    @Test
    void headAndTailTakeALeadingMinusAsCoreutilsDoes() {
        assertEquals("one\ntwo\nthree\n", cli.run("head", "-n", "-1", "vfs:///shared/notes.md").out());
        assertEquals("", cli.run("head", "-n", "-9", "vfs:///shared/notes.md").out());
        assertEquals("two\nthree\nfour\n", cli.run("tail", "-n", "-3", "vfs:///shared/notes.md").out());
        // and coreutils' old form, which agents type: head -3 FILE
        assertEquals("one\ntwo\n", cli.run("head", "-2", "vfs:///shared/notes.md").out());
        assertEquals("four\n", cli.run("tail", "-1", "vfs:///shared/notes.md").out());
        assertExit(2, cli.run("head", "x", "vfs:///shared/notes.md"));
        Cli.Result r = cli.run("head", "-n", "--1", "vfs:///shared/notes.md");
        assertExit(2, r);
        assertTrue(r.err().contains("'--1'"), r.err());
        r = cli.run("tail", "-n", "x", "vfs:///shared/notes.md");
        assertExit(2, r);
        assertTrue(r.err().contains("'x' (a line count from 0"), r.err()); // was picocli's "is not an int"
        // an END (or START) past what an int holds is past the end, and stops there
        assertEquals("three\nfour\n", cli.run("lines", "vfs:///shared/notes.md", "3", "99999999999").out());
        assertExit(0, cli.run("lines", "vfs:///shared/notes.md", "99999999999", "99999999999"));
        r = cli.run("lines", "vfs:///shared/notes.md", "x", "2");
        assertExit(2, r);
        assertTrue(r.err().contains("'x' is not a whole number"), r.err());
    }

    @Test
    void headTailLinesJson() throws Exception {
        JsonNode j = JSON.readTree(cli.run("tail", "-n", "1", "--json", "vfs:///shared/notes.md").outBytes());
        assertEquals(4, j.get("total").asInt());
        assertEquals(4, j.get("lines").get(0).get("number").asInt());
        assertEquals("four", j.get("lines").get(0).get("text").asText());
        JsonNode h = JSON.readTree(cli.run("head", "-n", "1", "--json", "vfs:///shared/notes.md").outBytes());
        assertEquals("one", h.get("lines").get(0).get("text").asText());
        JsonNode l = JSON.readTree(cli.run("lines", "--json", "vfs:///shared/notes.md", "2", "3").outBytes());
        assertEquals(2, l.get("lines").size());
        assertEquals("vfs:///shared/notes.md", l.get("uri").asText());
    }

    @Test
    void linesIsOneBasedInclusiveAndClamped() {
        assertEquals("two\nthree\n", cli.run("lines", "vfs:///shared/notes.md", "2", "3").out());
        assertEquals("four\n", cli.run("lines", "vfs:///shared/notes.md", "4", "100").out());
        Cli.Result past = cli.run("lines", "vfs:///shared/notes.md", "9", "10");
        assertExit(0, past);
        assertEquals("", past.out());
    }

    @Test
    void linesRefusesBadRanges() {
        Cli.Result zero = cli.run("lines", "vfs:///shared/notes.md", "0", "2");
        assertExit(2, zero);
        assertTrue(zero.err().contains("numbered from 1"), zero.err());
        Cli.Result backwards = cli.run("lines", "vfs:///shared/notes.md", "3", "2");
        assertExit(2, backwards);
        assertTrue(backwards.err().contains("END must be START or more"), backwards.err());
        assertExit(2, cli.run("lines", "vfs:///shared/notes.md", "2"));
    }

    @Test
    void lineCommandsOnDirectoryOrMissing() {
        for (String cmd : new String[] {"head", "tail"}) {
            assertExit(4, cli.run(cmd, "vfs:///shared/sub"));
            assertExit(1, cli.run(cmd, "vfs:///shared/none"));
        }
        assertExit(4, cli.run("lines", "vfs:///shared/sub", "1", "2"));
        assertExit(1, cli.run("lines", "vfs:///shared/none", "1", "2"));
    }

    @Test
    void readsNeedNoCallerAndEveryoneReadsEverything() throws Exception {
        cli.put("/sys/tool_cache/bob/web_fetch_1_abcdef01", "cached\n");
        cli.put("/home/bob/private.md", "mine\n");
        assertEquals("cached\n", cli.run("cat", "vfs:///sys/tool_cache/bob/web_fetch_1_abcdef01").out());
        assertEquals("mine\n", cli.run("cat", "--as", "alice", "vfs:///home/bob/private.md").out());
        byte[] utf8 = cli.run("head", "--as-system", "vfs:///home/bob/private.md").outBytes();
        assertEquals("mine\n", new String(utf8, StandardCharsets.UTF_8));
    }
}
