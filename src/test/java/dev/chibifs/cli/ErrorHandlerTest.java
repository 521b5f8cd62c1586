package dev.chibifs.cli;

import dev.chibifs.sys.ErrnoException;
import dev.chibifs.sys.Linux;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.AccessDeniedException;

import static org.junit.jupiter.api.Assertions.assertEquals;

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
}
