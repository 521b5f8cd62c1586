package dev.chibifs.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** grep over files and directory trees against a real temp store. */
class GrepCommandTest {

    @TempDir
    Path home;
    Cli cli;

    @BeforeEach
    void setUp() throws Exception {
        cli = new Cli(home);
        cli.put("/shared/a.txt", "alpha\nERROR one\nbeta\n");
        cli.put("/shared/dir/b.txt", "error two\nfine");
        cli.put("/shared/dir/.dot", "error hidden\n");
        cli.put("/shared/dir/blob.bin", new byte[] {'e', 'r', 'r', 'o', 'r', 0, '\n'});
        cli.put("/shared/dir/.chibifs-tmp-0123456789abcdef", "error in flight\n");
    }

    @Test
    void grepsOneFileWithUriNames() {
        Cli.Result r = cli.run("grep", "ERR", "vfs:///shared/a.txt");
        assertEquals(0, r.code(), r.toString());
        assertEquals("vfs:///shared/a.txt:ERROR one\n", r.out());
        assertEquals("vfs:///shared/a.txt:2:ERROR one\n", cli.run("grep", "-n", "ERR", "vfs:///shared/a.txt").out());
    }

    @Test
    void grepsTreeRecursivelySkippingBinaryAndTemporaries() {
        Cli.Result r = cli.run("grep", "-i", "-n", "error", "vfs:///shared");
        assertEquals(0, r.code(), r.toString());
        assertEquals("vfs:///shared/a.txt:2:ERROR one\n"
                + "vfs:///shared/dir/.dot:1:error hidden\n"
                + "vfs:///shared/dir/b.txt:1:error two\n", r.out());
    }

    /** A matched line was printed with U+FFFD for each byte that is not UTF-8: not the bytes stored, as GNU grep prints. */
    @Test
    void aMatchedLineIsPrintedAsItsBytes() throws Exception {
        cli.put("/shared/latin1.txt", new byte[] {'c', 'a', 'f', (byte) 0xe9, ' ', 'o', 'k', '\n', 'n', 'o', '\n'});
        Cli.Result r = cli.run("grep", "-n", "ok", "vfs:///shared/latin1.txt");
        assertEquals(0, r.code(), r.toString());
        assertArrayEquals("vfs:///shared/latin1.txt:1:caf\u00e9 ok\n".getBytes(java.nio.charset.StandardCharsets.ISO_8859_1),
                r.outBytes(), r.toString());
        // JSON strings are text: there the byte is U+FFFD, as cat --json's encoding is not available per line
        Cli.Result json = cli.run("grep", "--json", "ok", "vfs:///shared/latin1.txt");
        assertTrue(json.out().contains("\"text\" : \"caf\uFFFD ok\""), json.out());
    }

    /** Java's '$' matched before a CRLF line's '\r'; GNU grep's does not, and its '.' matches the '\r'. */
    @Test
    void aLineEndsAtItsNewlineAloneAsInGnuGrep() throws Exception {
        cli.put("/shared/crlf.txt", "dos x\r\nunix x\n");
        assertEquals("vfs:///shared/crlf.txt:unix x\n", cli.run("grep", "x$", "vfs:///shared/crlf.txt").out());
        assertEquals("vfs:///shared/crlf.txt:dos x\r\n", cli.run("grep", "x.$", "vfs:///shared/crlf.txt").out());
    }

    @Test
    void caseSensitiveByDefaultAndRegex() {
        assertEquals("vfs:///shared/dir/b.txt:error two\n", cli.run("grep", "^e.r+or", "vfs:///shared/dir/b.txt").out());
        assertEquals("", cli.run("grep", "error", "vfs:///shared/a.txt").out());
    }

    @Test
    void aFileOfTheTreeThatCannotBeReadIsNotedAndTheRestSearched() throws Exception {
        // /proc/sys/vm/drop_caches is write-only (0200) even for root, so it is refused as a mode 000 file is to others
        Path vm = Path.of("/proc/sys/vm");
        Assumptions.assumeTrue(Files.exists(vm.resolve("drop_caches")), "no /proc/sys/vm/drop_caches here");
        cli.put("/shared/zzz.txt", "error after\n");
        Cli.Result r = cli.run("grep", "error", "--store", "/shared/vm=readonly:" + vm, "vfs:///shared");
        assertEquals(5, r.code(), r.toString());
        assertTrue(r.out().endsWith("vfs:///shared/zzz.txt:error after\n"), "searched past it: " + r.out());
        assertTrue(r.err().contains("chibifs: the store is not readable by uid ")
                && r.err().contains(": vfs:///shared/vm/drop_caches (not searched)\n"), r.err());
        Cli.Result json = cli.run("grep", "--json", "error", "--store", "/shared/vm=readonly:" + vm, "vfs:///shared");
        assertEquals(5, json.code(), json.toString());
        assertEquals(3, new ObjectMapper().readTree(json.out()).get("matches").size(), json.out());
    }

    @Test
    void nothingMatchedExitsOneLikeGrep() {
        Cli.Result r = cli.run("grep", "zzz", "vfs:///shared");
        assertEquals(1, r.code(), r.toString());
        assertEquals("", r.out());
        assertEquals("", r.err());
    }

    @Test
    void binaryFileNamedExplicitlyIsSkippedWithANote() {
        Cli.Result r = cli.run("grep", "error", "vfs:///shared/dir/blob.bin");
        assertEquals(1, r.code(), r.toString());
        assertTrue(r.err().contains("vfs:///shared/dir/blob.bin: binary file, not searched"), r.err());
    }

    @Test
    void badPatternIsUsage() {
        Cli.Result r = cli.run("grep", "(oops", "vfs:///shared");
        assertEquals(2, r.code(), r.toString());
        assertTrue(r.err().contains("invalid PATTERN '(oops'"), r.err());
    }

    @Test
    void missingIsNotFound() {
        Cli.Result r = cli.run("grep", "x", "vfs:///shared/none");
        assertEquals(1, r.code(), r.toString());
        assertEquals("chibifs: no such file or directory: vfs:///shared/none\n", r.err());
    }

    @Test
    void jsonListsMatches() throws Exception {
        Cli.Result r = cli.run("grep", "--json", "-i", "one|two", "vfs:///shared");
        assertEquals(0, r.code(), r.toString());
        JsonNode j = new ObjectMapper().readTree(r.outBytes());
        assertEquals("one|two", j.get("pattern").asText());
        assertEquals(2, j.get("matches").size());
        JsonNode second = j.get("matches").get(1);
        assertEquals("vfs:///shared/dir/b.txt", second.get("uri").asText());
        assertEquals(1, second.get("line").asInt());
        assertEquals("error two", second.get("text").asText());
        Cli.Result none = cli.run("grep", "--json", "zzz", "vfs:///shared");
        assertEquals(1, none.code());
        assertEquals(0, new ObjectMapper().readTree(none.outBytes()).get("matches").size());
    }
}
