package dev.chibifs.cli;

import dev.chibifs.sys.ErrnoException;
import dev.chibifs.sys.LibC;
import dev.chibifs.sys.Linux;

import java.io.IOException;
import java.io.OutputStream;
import java.util.Arrays;

/**
 * The process's standard output, written with write(2) on descriptor 1. Not {@code System.out}:
 * a {@code PrintStream} keeps a failed write to itself, so {@code cat > /dev/full} exited 0 with
 * the file truncated; and not a {@code FileOutputStream}, whose failure says the errno only as
 * text. A failure here carries its errno ({@link ErrnoException}), which {@link CommandOutput}
 * turns into the command's exit code.
 */
final class StandardOutput extends OutputStream {

    private static final int STDOUT = 1;

    @Override
    public void write(int b) throws IOException {
        write(new byte[] {(byte) b}, 0, 1);
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
        byte[] rest = off == 0 ? b : Arrays.copyOfRange(b, off, off + len);
        int done = 0;
        while (done < len) {
            byte[] from = done == 0 ? rest : Arrays.copyOfRange(rest, done, len);
            long n = LibC.write(STDOUT, from, len - done);
            if (n < 0) {
                int errno = LibC.errno();
                if (errno == Linux.EINTR) {
                    continue;
                }
                throw ErrnoException.forErrno(errno, null);
            }
            done += (int) n;
        }
    }
}
