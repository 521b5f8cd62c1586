package dev.chibifs.cli;

import dev.chibifs.sys.ErrnoException;
import dev.chibifs.sys.InvalidSpecException;
import dev.chibifs.sys.Linux;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.AccessDeniedException;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** An unexpected I/O failure of a command is one line a person reads: no Java class names. */
class ErrorHandlerTest {

    @Test
    void anIoFailureIsWhatTheSystemSaidAndTheFile() {
        assertEquals("Permission denied: /srv/chibi/vfs/sys/tool_cache/t1",
                ErrorHandler.oneLine(new AccessDeniedException("/srv/chibi/vfs/sys/tool_cache/t1")));
        assertEquals("Not a directory: /srv/x",
                ErrorHandler.oneLine(ErrnoException.forErrno(Linux.ENOTDIR, "/srv/x")));
        assertEquals("S3 list s3://b/p/: cannot reach http://127.0.0.1:1: Connection refused",
                ErrorHandler.oneLine(new IOException("S3 list s3://b/p/: cannot reach http://127.0.0.1:1: Connection refused")));
    }

    @Test
    void aBadSpecIsAUsageErrorOnOneLine() {
        StringWriter err = new StringWriter();
        int code = handle(new InvalidSpecException("invalid --store '/x=nope': the rule"), err);
        assertEquals(ExitCodes.USAGE, code);
        assertEquals("chibifs: invalid --store '/x=nope': the rule" + System.lineSeparator(), err.toString());
    }

    @Test
    void aPlainIllegalArgumentIsABugAndShowsItsStackTrace() {
        StringWriter err = new StringWriter();
        int code = handle(new IllegalArgumentException("a bug"), err);
        assertEquals(ExitCodes.FAILURE, code);
        assertTrue(err.toString().startsWith("chibifs: unexpected error: java.lang.IllegalArgumentException: a bug"), err.toString());
        assertTrue(err.toString().contains("\tat "), err.toString());
    }

    private static int handle(Exception ex, StringWriter err) {
        CommandLine cl = new CommandLine(CommandLine.Model.CommandSpec.create()).setErr(new PrintWriter(err, true));
        return new ErrorHandler().handleExecutionException(ex, cl, null);
    }
}
