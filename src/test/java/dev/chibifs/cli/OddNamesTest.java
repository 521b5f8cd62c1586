package dev.chibifs.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.chibifs.path.Names;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Base64;

import static dev.chibifs.cli.Cli.assertExit;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** ls, info and grep over names that are not plain: not UTF-8, or holding a newline or a backslash. */
class OddNamesTest {

    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    Path home;
    Cli cli;

    @BeforeEach
    void setUp() throws Exception {
        cli = new Cli(home);
        cli.put("/shared/good", "hit\n");
        cli.put("/shared/sub/deeper", "hit too\n");
    }

    /** Makes a file whose name is {@code name}'s bytes in the store's /shared, as another program would. */
    private void putRaw(byte[] name, String content) throws Exception {
        // java.nio cannot name such a file; the shell can
        Path dir = cli.file("/shared");
        Process p = new ProcessBuilder("python3", "-c",
                "import os, sys; open(os.fsencode(sys.argv[1]) + bytes.fromhex(sys.argv[2]), 'w').write(sys.argv[3])",
                dir + "/", java.util.HexFormat.of().formatHex(name), content).redirectErrorStream(true).start();
        assertEquals(0, p.waitFor(), new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8));
    }

    @Test
    void aNameThatIsNotUtf8IsListedEscapedAndDoesNotFailTheListing() throws Exception {
        putRaw(new byte[] {(byte) 0xff, (byte) 0xfe}, "hit\n");
        Cli.Result plain = cli.run("ls", "vfs:///shared");
        assertExit(0, plain);
        assertEquals("good\nsub/\n\\377\\376\n", plain.out());
        Cli.Result details = cli.run("ls", "-l", "vfs:///shared");
        assertExit(0, details);
        assertTrue(details.out().contains("file"), details.out());
        assertTrue(details.out().matches("(?s).*\nfile +\\?  \\?  \\\\377\\\\376\n"), details.out());
        assertTrue(details.out().startsWith("file                 4  "), details.out());

        Cli.Result json = cli.run("ls", "--json", "vfs:///shared");
        assertExit(0, json);
        JsonNode entries = JSON.readTree(json.outBytes()).get("entries");
        assertEquals(3, entries.size());
        JsonNode odd = entries.get(2);
        assertEquals("//4=", odd.get("name_base64").asText());
        assertEquals(new String(new byte[] {(byte) 0xff, (byte) 0xfe}, StandardCharsets.UTF_8), odd.get("name").asText());
        assertEquals("file", odd.get("kind").asText());
        assertFalse(odd.has("uri"), "a name that is not UTF-8 has no URI: " + odd);
        assertFalse(entries.get(0).has("name_base64"));
        assertEquals(4, entries.get(0).get("size").asLong());
    }

    @Test
    void grepOfATreeSearchesEverythingElseAndSaysWhatItSkipped() throws Exception {
        putRaw(new byte[] {'b', (byte) 0xff}, "hit\n");
        Cli.Result r = cli.run("grep", "hit", "vfs:///shared");
        // as GNU grep: what could be searched is, and a file that could not be is an error
        assertExit(5, r);
        assertEquals("vfs:///shared/good:hit\nvfs:///shared/sub/deeper:hit too\n", r.out());
        assertEquals("chibifs: vfs:///shared/b\\377: name is not UTF-8, not searched\n", r.err());
        Cli.Result json = cli.run("grep", "--json", "hit", "vfs:///shared");
        assertExit(5, json);
        assertEquals(2, JSON.readTree(json.outBytes()).get("matches").size());
    }

    @Test
    void controlCharactersAndBackslashesInNamesAreEscapedForPeopleAndExactInJson() throws Exception {
        cli.put("/shared/two\nlines", "hit\n");
        cli.put("/shared/back\\slash", "x");
        cli.put("/shared/esc\u001b[31m", "x");
        Cli.Result ls = cli.run("ls", "vfs:///shared");
        assertExit(0, ls);
        assertEquals("back\\\\slash\nesc\\033[31m\ngood\nsub/\ntwo\\nlines\n", ls.out());
        Cli.Result details = cli.run("ls", "-l", "vfs:///shared");
        assertEquals(5, details.out().split("\n").length, details.out());
        assertTrue(details.out().contains("  two\\nlines\n"), details.out());

        Cli.Result info = cli.run("info", "vfs:///shared/two\nlines");
        assertExit(0, info);
        assertTrue(info.out().startsWith("uri: vfs:///shared/two\\nlines\nkind: file\n"), info.out());
        assertEquals("vfs:///shared/two\nlines", JSON.readTree(cli.run("info", "--json", "vfs:///shared/two\nlines")
                .outBytes()).get("uri").asText());

        JsonNode entries = JSON.readTree(cli.run("ls", "--json", "vfs:///shared").outBytes()).get("entries");
        assertEquals("two\nlines", entries.get(4).get("name").asText());
        assertEquals("vfs:///shared/two\nlines", entries.get(4).get("uri").asText());

        Cli.Result grep = cli.run("grep", "-n", "hit", "vfs:///shared");
        assertExit(0, grep);
        assertEquals("vfs:///shared/good:1:hit\nvfs:///shared/sub/deeper:1:hit too\nvfs:///shared/two\\nlines:1:hit\n",
                grep.out());
    }

    @Test
    void aSymbolicLinksTargetIsEscapedToo() throws Exception {
        Files.createSymbolicLink(cli.file("/shared/link"), Path.of("a\nb"));
        Cli.Result ls = cli.run("ls", "-l", "vfs:///shared/link");
        assertExit(0, ls);
        assertTrue(ls.out().endsWith("  link -> a\\nb\n"), ls.out());
        assertTrue(cli.run("info", "vfs:///shared/link").out().contains("\ntarget: a\\nb\n"));
    }

    @Test
    void escapesFollowLsDashB() {
        assertEquals("plain name", Names.shown("plain name"));
        assertEquals("a\\tb\\r\\a\\b\\f\\v\\001\\177\\302\\233é", Names.shown("a\tb\r\u0007\b\f\u000b\u0001\u007f\u009bé"));
        assertEquals("ok\\377\\\\\\n\\303", Names.shown(new byte[] {'o', 'k', (byte) 0xff, '\\', '\n', (byte) 0xc3}));
        assertEquals("é", Names.shown(new byte[] {(byte) 0xc3, (byte) 0xa9}));
        assertTrue(Base64.getDecoder().decode("//4=").length == 2);
    }
}
