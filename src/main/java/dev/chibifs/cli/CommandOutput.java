package dev.chibifs.cli;

import dev.chibifs.sys.Errors;
import dev.chibifs.sys.LibC;
import dev.chibifs.sys.Linux;

import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.OutputStream;

/**
 * A command's standard output, whose failures are told apart from the store's: what cannot be
 * written where the output goes is {@link Failed}, which the command turns into one line and an
 * exit code as GNU coreutils do ({@code cat: write error: No space left on device}), or a quiet
 * {@link ExitCodes#READER_GONE} when the reader has gone ({@code cat big | head -c1}).
 */
final class CommandOutput extends FilterOutputStream {

    CommandOutput(OutputStream out) {
        super(out);
    }

    @Override
    public void write(int b) throws IOException {
        try {
            out.write(b);
        } catch (IOException e) {
            throw new Failed(e);
        }
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
        try {
            out.write(b, off, len);
        } catch (IOException e) {
            throw new Failed(e);
        }
    }

    @Override
    public void flush() throws IOException {
        try {
            out.flush();
        } catch (IOException e) {
            throw new Failed(e);
        }
    }

    /** Standard output could not be written: {@link #exitCode()} and {@link #line()} say what the command ends with. */
    static final class Failed extends IOException {
        private static final long serialVersionUID = 1L;
        private final int errno;

        Failed(IOException cause) {
            super("write error: " + (Errors.errno(cause) > 0 ? LibC.strerror(Errors.errno(cause)) : Errors.describe(cause)),
                    cause);
            errno = Errors.errno(cause);
        }

        /** The reader has gone (EPIPE): as a program SIGPIPE ended, which a JVM cannot be, and nothing said. */
        boolean readerGone() {
            return errno == Linux.EPIPE;
        }

        int exitCode() {
            return readerGone() ? ExitCodes.READER_GONE : ExitCodes.OUTPUT_FAILED;
        }

        /** The line for stderr, without the {@code chibifs: } prefix; null when nothing is to be said. */
        String line() {
            return readerGone() ? null : getMessage();
        }
    }
}
