package dev.chibifs.cli;

import dev.chibifs.sys.Errors;
import dev.chibifs.sys.Linux;
import dev.chibifs.testing.Sh;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * What a command does when its standard output cannot be written: a full disk or a closed
 * descriptor is one line and exit 5, as coreutils' "write error"; a reader gone is a quiet 141.
 */
class OutputFailureTest {

    @TempDir
    Path home;

    /** Standard output where every write fails with {@code errno}, as write(2) there would. */
    private static OutputStream failingWith(int errno) {
        return new OutputStream() {
            @Override
            public void write(int b) throws IOException {
                throw Errors.of(errno, null);
            }

            @Override
            public void write(byte[] b, int off, int len) throws IOException {
                throw Errors.of(errno, null);
            }
        };
    }

    private record Run(int code, String err) {
    }

    private Run run(OutputStream out, byte[] stdin, String... args) {
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        Terminal t = new Terminal(Map.of("CHIBI_HOME", home.toString(), "CHIBI_CONTEXT", "bob"),
                new ByteArrayInputStream(stdin), out, err);
        int code = Main.commandLine(t).execute(args);
        return new Run(code, err.toString(StandardCharsets.UTF_8));
    }

    @Test
    void aFullDiskUnderTheOutputIsAWriteErrorAndExitFive() throws Exception {
        new Cli(home).put("/shared/f", "line\n".repeat(100_000));
        for (String[] args : new String[][] {{"cat", "vfs:///shared/f"}, {"head", "vfs:///shared/f"},
            {"ls", "--json", "vfs:///shared"}, {"info", "vfs:///shared/f"}, {"grep", "line", "vfs:///shared"}}) {
            Run r = run(failingWith(Linux.ENOSPC), new byte[0], args);
            assertEquals(new Run(ExitCodes.IO_ERROR, "chibifs: write error: No space left on device\n"), r, args[0]);
        }
        Run closed = run(failingWith(Linux.EBADF), new byte[0], "cat", "vfs:///shared/f");
        assertEquals(new Run(ExitCodes.IO_ERROR, "chibifs: write error: Bad file descriptor\n"), closed);
    }

    @Test
    void aReaderGoneEndsTheCommandQuietlyWith141() throws Exception {
        new Cli(home).put("/shared/f", "line\n".repeat(100_000));
        assertEquals(new Run(ExitCodes.READER_GONE, ""), run(failingWith(Linux.EPIPE), new byte[0], "cat", "vfs:///shared/f"));
    }

    @Test
    void cachePutWhoseOutputCannotBeWrittenSaysSo() {
        byte[] small = "x\n".getBytes(StandardCharsets.UTF_8);
        byte[] large = "x".repeat(5000).getBytes(StandardCharsets.UTF_8);
        for (byte[] output : new byte[][] {small, large}) { // passed through, and the stub
            Run r = run(failingWith(Linux.ENOSPC), output, "cache", "put", "--context", "bob", "--tool", "t",
                    "--home", home.toString());
            assertEquals(new Run(ExitCodes.IO_ERROR, "chibifs: write error: No space left on device\n"), r);
        }
        assertEquals(new Run(ExitCodes.READER_GONE, ""), run(failingWith(Linux.EPIPE), large, "cache", "put",
                "--context", "bob", "--tool", "t", "--home", home.toString()));
    }

    /** The launcher with the real descriptor: /dev/full, stdout closed ({@code >&-}), and a pipe its reader left. */
    @Test
    void theLauncherSaysAFullDiskAndAClosedStdout() throws Exception {
        new Cli(home).put("/shared/f", "line\n".repeat(100_000));
        String cat = "CHIBIFS_CLASSPATH='" + System.getProperty("java.class.path") + "' scripts/chibifs cat --home '"
                + home + "' vfs:///shared/f";
        Sh.Result full = Sh.run(cat + " > /dev/full");
        assertEquals(new Run(5, "chibifs: write error: No space left on device\n"), new Run(full.exitCode(), full.err()));
        Sh.Result closed = Sh.run(cat + " >&-");
        assertEquals(new Run(5, "chibifs: write error: Bad file descriptor\n"), new Run(closed.exitCode(), closed.err()));
        Sh.Result gone = Sh.run("(" + cat + "; echo \"exit $?\" >&2) | head -c1 >/dev/null");
        assertEquals("exit 141\n", gone.err());
    }
}
