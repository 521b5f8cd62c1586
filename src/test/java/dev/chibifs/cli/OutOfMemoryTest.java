package dev.chibifs.cli;

import dev.chibifs.testing.Sh;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A command out of Java heap: exit 6 (not 3, the policy's) and one line on stderr, nothing on stdout. */
class OutOfMemoryTest {

    @TempDir
    Path home;

    @Test
    void aCommandOutOfHeapExitsSixWithItsLineOnStderr() {
        InputStream exhausting = new InputStream() {
            @Override
            public int read() {
                throw new OutOfMemoryError("Java heap space");
            }

            @Override
            public int read(byte[] b, int off, int len) {
                throw new OutOfMemoryError("Java heap space");
            }
        };
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int code;
        try {
            code = Main.run(new Terminal(Map.of("CHIBI_HOME", home.toString(), "CHIBI_CONTEXT", "bob"), exhausting, out, err),
                    new String[] {"write", "vfs:///shared/big"});
        } catch (OutOfMemoryError escaped) { // caught here: JUnit would end the test JVM with it
            throw new AssertionError("the command's OutOfMemoryError escaped Main.run", escaped);
        }
        assertEquals(ExitCodes.OUT_OF_MEMORY, code);
        assertEquals("", out.toString(StandardCharsets.UTF_8));
        String said = err.toString(StandardCharsets.UTF_8);
        assertTrue(said.matches("chibifs: out of memory: this command needed more than the Java heap's \\d+ MiB"
                + " \\(give it more with CHIBIFS_JAVA_OPTS=-Xmx\\.\\.\\.\\)\n"), said);
        assertFalse(Files.exists(home.resolve("vfs/shared/big")));
    }

    /** Through the launcher, which gives -XX:+ExitOnOutOfMemoryError (exit 3, its line on stdout) to mount only. */
    @Test
    void theLauncherLetsACommandSayItRanOut() {
        // append holds its content whole (one append is one write(2))
        Sh.Result r = Sh.run("head -c 64M /dev/zero | CHIBIFS_JAVA_OPTS='-Xmx24m -XX:+UseSerialGC' CHIBIFS_CLASSPATH='"
                + System.getProperty("java.class.path") + "' scripts/chibifs append --as bob --home '" + home
                + "' vfs:///shared/big");
        assertEquals(ExitCodes.OUT_OF_MEMORY, r.exitCode(), r.err());
        assertEquals("", r.out());
        assertTrue(r.err().startsWith("chibifs: out of memory: ") && r.err().lines().count() == 1, r.err());
    }

    /** write from stdin goes to the local store a buffer at a time: a content past the heap is written whole. */
    @Test
    void writeFromStdinNeedsNoHeapForItsContent() throws java.io.IOException {
        Sh.Result r = Sh.run("head -c 64M /dev/zero | tr '\\0' w | CHIBIFS_JAVA_OPTS='-Xmx24m -XX:+UseSerialGC' CHIBIFS_CLASSPATH='"
                + System.getProperty("java.class.path") + "' scripts/chibifs write --as bob --home '" + home
                + "' vfs:///shared/big");
        assertEquals(0, r.exitCode(), r.err());
        assertEquals("", r.out() + r.err());
        Path big = home.resolve("vfs/shared/big");
        assertEquals(64L << 20, Files.size(big));
        try (InputStream in = Files.newInputStream(big)) {
            byte[] head = in.readNBytes(4096);
            assertEquals("w".repeat(4096), new String(head, StandardCharsets.US_ASCII));
        }
        try (java.util.stream.Stream<Path> names = Files.list(big.getParent())) {
            assertEquals(java.util.List.of(big), names.toList());
        }
    }
}
