package dev.chibifs.cli;

import dev.chibifs.testing.Sh;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code cache put} with an output past what it keeps in memory (made small here): the output is
 * stored whole, or printed whole where the store refuses it, never lost to the heap.
 */
class CachePutStreamTest {

    private static final int SMALL = 4096;

    @TempDir
    Path home;

    private record Run(int code, byte[] out, String err) {
    }

    private Run put(byte[] stdin) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        CommandLine cl = Main.commandLine(new Terminal(Map.of("CHIBI_HOME", home.toString()),
                new ByteArrayInputStream(stdin), out, err));
        CachePutCommand put = cl.getSubcommands().get("cache").getSubcommands().get("put").getCommand();
        put.memoryLimit = SMALL;
        int code = cl.execute("cache", "put", "--context", "coder", "--tool", "t", "--home", home.toString());
        return new Run(code, out.toByteArray(), err.toString(StandardCharsets.UTF_8));
    }

    private static byte[] lines(int count) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < count; i++) {
            b.append("line ").append(i).append(" of the tool's output \u00e9\n");
        }
        return b.toString().getBytes(StandardCharsets.UTF_8);
    }

    @Test
    void anOutputPastTheMemoryLimitIsStoredWhole() throws IOException {
        byte[] output = lines(5000);
        Run r = put(output);
        assertEquals(0, r.code(), r.err());
        String stub = new String(r.out(), StandardCharsets.UTF_8);
        assertTrue(stub.startsWith("[Output cached: vfs:///sys/tool_cache/coder/t_"), stub);
        assertTrue(stub.contains("Size: " + output.length + " chars, ~" + output.length / 4 + " tokens | Lines: 5000\n"), stub);
        String uri = stub.substring("[Output cached: ".length(), stub.indexOf(']'));
        assertArrayEquals(output, Files.readAllBytes(home.resolve("vfs").resolve(uri.substring("vfs:///".length()))));
    }

    @Test
    void anOutputPastTheMemoryLimitThatTheStoreRefusesIsPrintedWhole() throws IOException {
        Path inTheWay = home.resolve("vfs/sys/tool_cache/coder");
        Files.createDirectories(inTheWay.getParent());
        Files.write(inTheWay, new byte[] {'x'});
        byte[] output = lines(5000);
        Run r = put(output);
        assertEquals(ExitCodes.FAILURE, r.code(), r.err());
        assertArrayEquals(output, r.out());
        assertTrue(r.err().startsWith("chibifs: cannot cache the output (printed unchanged instead): "), r.err());
        assertEquals(1, r.err().lines().count(), r.err());
    }

    /** Through the launcher with a heap smaller than the output: it is stored, and the stub printed. */
    @Test
    void anOutputLargerThanTheHeapIsCached() throws IOException {
        Sh.Result r = Sh.run("head -c 48M /dev/zero | tr '\\\\0' x | CHIBIFS_JAVA_OPTS='-Xmx24m -XX:+UseSerialGC'"
                + " CHIBIFS_CLASSPATH='" + System.getProperty("java.class.path") + "' scripts/chibifs cache put"
                + " --context coder --tool t --home '" + home + "'");
        assertEquals(0, r.exitCode(), r.err());
        assertEquals("", r.err());
        assertTrue(r.out().startsWith("[Output cached: vfs:///sys/tool_cache/coder/t_"), r.out());
        assertTrue(r.out().contains("Size: " + (48L << 20) + " chars"), r.out());
        try (java.util.stream.Stream<Path> entries = Files.list(home.resolve("vfs/sys/tool_cache/coder"))) {
            assertEquals(java.util.List.of(48L << 20), entries.map(p -> p.toFile().length()).toList());
        }
    }
}
