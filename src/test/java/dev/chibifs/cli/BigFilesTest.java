package dev.chibifs.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.chibifs.store.ContentHash;
import dev.chibifs.testing.MountedFs;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * cat, grep, head, tail and lines of a file several times larger than the command's heap: they read it in pieces. A
 * command that read the whole file (and, for --json, built the document in memory) ran out.
 */
@Timeout(300)
class BigFilesTest {

    /** The heap the commands get here; the files are three times as large. */
    private static final int HEAP_MIB = 32;
    private static final int FILE_MIB = 3 * HEAP_MIB;

    /** A reader for documents with strings as long as the files (Jackson stops at 20 MB by default). */
    private static final ObjectMapper LARGE = new ObjectMapper(com.fasterxml.jackson.core.JsonFactory.builder()
            .streamReadConstraints(com.fasterxml.jackson.core.StreamReadConstraints.builder()
                    .maxStringLength(Integer.MAX_VALUE).build()).build());

    @TempDir
    static Path home;
    static Cli cli;
    static byte[] text;

    @BeforeAll
    static void files() throws IOException {
        cli = new Cli(home);
        StringBuilder b = new StringBuilder();
        for (int i = 0; b.length() < FILE_MIB << 20; i++) {
            b.append("line ").append(i).append(" \"quoted\" \\ tab\t é ").append("-".repeat(100)).append('\n');
        }
        text = b.toString().getBytes(StandardCharsets.UTF_8);
        cli.put("/shared/text", text);
        byte[] binary = new byte[FILE_MIB << 20];
        for (int i = 0; i < binary.length; i++) {
            binary[i] = (byte) (i * 31 + (i >> 10));
        }
        binary[0] = (byte) 0xff;
        cli.put("/shared/binary", binary);
    }

    /** Runs chibifs in a JVM of {@link #HEAP_MIB} MiB; returns its exit code, its output in {@code out}. */
    private static int run(Path out, String... args) throws Exception {
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx" + HEAP_MIB + "m", "-XX:+ExitOnOutOfMemoryError", "-Dfile.encoding=UTF-8"));
        command.addAll(MountedFs.nativeAccessFlags());
        command.addAll(List.of("-cp", System.getProperty("java.class.path"), Main.class.getName()));
        command.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(command).redirectOutput(out.toFile())
                .redirectError(ProcessBuilder.Redirect.INHERIT);
        pb.environment().put("CHIBI_HOME", home.toString());
        pb.environment().put("LC_ALL", "C.UTF-8");
        Process p = pb.start();
        assertTrue(p.waitFor(240, TimeUnit.SECONDS), "chibifs " + String.join(" ", args) + " did not finish");
        return p.exitValue();
    }

    @Test
    void catPrintsAFileLargerThanItsHeap(@TempDir Path tmp) throws Exception {
        Path out = tmp.resolve("out");
        assertEquals(0, run(out, "cat", "vfs:///shared/text"));
        assertEquals(ContentHash.of(text), ContentHash.of(out));
    }

    @Test
    void catJsonStreamsTextAndBase64(@TempDir Path tmp) throws Exception {
        Path out = tmp.resolve("out");
        assertEquals(0, run(out, "cat", "--json", "--etag", "vfs:///shared/text"));
        JsonNode j = LARGE.readTree(out.toFile());
        assertEquals("utf-8", j.get("encoding").asText());
        assertEquals(text.length, j.get("size").asLong());
        assertArrayEquals(text, j.get("content").asText().getBytes(StandardCharsets.UTF_8));
        assertEquals(ContentHash.of(text), j.get("etag").asText());

        assertEquals(0, run(out, "cat", "--json", "vfs:///shared/binary"));
        j = LARGE.readTree(out.toFile());
        assertEquals("base64", j.get("encoding").asText());
        assertEquals(ContentHash.of(Files.readAllBytes(cli.file("/shared/binary"))),
                ContentHash.of(Base64.getDecoder().decode(j.get("content").asText())));
    }

    @Test
    void grepMatchingEveryLineOfAFileLargerThanItsHeap(@TempDir Path tmp) throws Exception {
        Path out = tmp.resolve("out");
        assertEquals(0, run(out, "grep", "-n", "quoted", "vfs:///shared/text"));
        // every line, each behind its URI, its number and a colon
        assertEquals(text.length + countLines() * ("vfs:///shared/text:".length() + 1L) + digits(), Files.size(out));
        assertEquals(0, run(out, "grep", "--json", "quoted", "vfs:///shared/text"));
        assertEquals(countLines(), LARGE.readTree(out.toFile()).get("matches").size());
    }

    @Test
    void headTailAndLinesOfAFileLargerThanTheirHeap(@TempDir Path tmp) throws Exception {
        Path out = tmp.resolve("out");
        String[] all = new String(text, StandardCharsets.UTF_8).split("\n", -1);
        int total = all.length - 1; // the text ends in a newline
        assertEquals(0, run(out, "head", "-n", "2", "vfs:///shared/text"));
        assertEquals(all[0] + "\n" + all[1] + "\n", Files.readString(out));
        assertEquals(0, run(out, "tail", "-n", "1", "--json", "vfs:///shared/text"));
        JsonNode j = LARGE.readTree(out.toFile());
        assertEquals(total, j.get("total").asInt());
        assertEquals(all[total - 1], j.get("lines").get(0).get("text").asText());
        assertEquals(total, j.get("lines").get(0).get("number").asInt());
        assertEquals(0, run(out, "lines", "vfs:///shared/text", Integer.toString(total - 1), Integer.toString(total + 5)));
        assertEquals(all[total - 2] + "\n" + all[total - 1] + "\n", Files.readString(out));
    }

    private static long countLines() {
        long n = 0;
        for (byte b : text) {
            n += b == '\n' ? 1 : 0;
        }
        return n;
    }

    /** The characters of every line number, 1 to the last. */
    private static long digits() {
        long total = 0;
        long lines = countLines();
        for (long i = 1; i <= lines; i++) {
            total += Long.toString(i).length();
        }
        return total;
    }

}
