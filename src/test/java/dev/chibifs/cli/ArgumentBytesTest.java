package dev.chibifs.cli;

import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

/** Arguments whose bytes are not UTF-8, found in the command line the kernel keeps. */
class ArgumentBytesTest {

    /** A /proc/PID/cmdline: each entry's bytes, NUL-terminated. */
    private static byte[] cmdline(byte[]... entries) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (byte[] e : entries) {
            out.writeBytes(e);
            out.write(0);
        }
        return out.toByteArray();
    }

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    @Test
    void aByteThatIsNotUtf8IsFoundAndShownEscaped() {
        byte[] bad = {'a', (byte) 0xff, 'b'};
        List<String> args = List.of("write", "vfs:///shared/b", "--content", "a\uFFFDb");
        byte[] line = cmdline(utf8("java"), utf8("-cp"), utf8("x.jar"), utf8("dev.chibifs.Main"), utf8("write"),
                utf8("vfs:///shared/b"), utf8("--content"), bad);
        assertEquals("a\\377b", ArgumentBytes.firstNotUtf8(args, line));
    }

    @Test
    void aTypedReplacementCharacterIsText() {
        List<String> args = List.of("--content", "a\uFFFDb");
        assertNull(ArgumentBytes.firstNotUtf8(args, cmdline(utf8("java"), utf8("--content"), utf8("a\uFFFDb"))));
    }

    @Test
    void anotherProcessesArgumentsAreNotJudged() {
        // run in-process (tests): the JVM's own command line ends in other arguments
        List<String> args = List.of("cat", "a\uFFFDb");
        assertNull(ArgumentBytes.firstNotUtf8(args, cmdline(utf8("java"), utf8("surefire"), new byte[] {(byte) 0xff})));
        assertNull(ArgumentBytes.firstNotUtf8(List.of("a", "b", "c"), cmdline(utf8("b"), utf8("c"))));
    }
}
