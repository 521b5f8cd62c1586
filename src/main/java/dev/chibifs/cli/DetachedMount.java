package dev.chibifs.cli;

import dev.chibifs.sys.LibC;
import dev.chibifs.sys.Linux;
import dev.chibifs.sys.Syscalls;

import java.io.IOException;
import java.io.OutputStream;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;

/**
 * A background {@code mount} whose own JVM becomes the daemon. A JVM cannot fork, so a background
 * mount used to start a second JVM as its daemon and wait for it to answer: two JVM starts, most
 * of the time {@code mount} took. The launcher ({@code scripts/chibifs}) runs a background mount as
 * a background job instead, with the write end of a pipe at the descriptor {@value #ENV} names, and
 * waits on the pipe. The command then leaves the terminal ({@link #detach}) and serves the mount;
 * once the mount answers, it writes the line {@code mount} prints to the pipe and closes it
 * ({@link #mounted}), and the launcher prints that line and exits 0. A mount that fails first
 * writes nothing there: its one line goes to the terminal's stderr, the launcher sees the pipe
 * close when the JVM exits, and exits with the JVM's status.
 */
final class DetachedMount {

    /** The environment variable that names the pipe's descriptor, set by the launcher alone. */
    static final String ENV = "CHIBIFS_READY_FD";

    private static final int STDIN = 0;
    static final int STDOUT = 1;
    static final int STDERR = 2;

    private final int ready;
    /** The terminal's stderr, kept at a descriptor of its own for the command's one line; -1 until detached. */
    private int terminal = -1;
    /** Set once the mount answered: the pipe and the terminal's descriptor are the log's from then on. */
    private boolean answered;

    private DetachedMount(int ready) {
        this.ready = ready;
    }

    /** The launcher's pipe, when this JVM was started with one. */
    static Optional<DetachedMount> fromEnvironment(Map<String, String> env) {
        String value = env.get(ENV);
        if (value == null || !value.matches("[0-9]{1,6}")) {
            return Optional.empty();
        }
        int fd = Integer.parseInt(value);
        // a variable left in the environment of a JVM the launcher did not start: there, the descriptor is
        // closed or one the JVM opened for itself (its modules file is the first), never a pipe
        try {
            int mode = (Integer) Files.getAttribute(Path.of("/proc/self/fd/" + fd), "unix:mode");
            return fd > STDERR && (mode & Linux.S_IFMT) == Linux.S_IFIFO ? Optional.of(new DetachedMount(fd)) : Optional.empty();
        } catch (IOException | RuntimeException notOpen) {
            return Optional.empty();
        }
    }

    /**
     * Leaves the terminal as a daemon does: a session of its own (closing the terminal sends it no
     * SIGHUP), stdin from /dev/null, stdout and stderr appended to {@code logFile}, where the
     * daemon's log then goes. Returns the writer for the command's own error line, which still
     * reaches the terminal until the mount answers.
     */
    PrintWriter detach(Path logFile) throws IOException {
        int logFd = MountCommand.openLog(logFile);
        int devNull = Syscalls.openat(Linux.AT_FDCWD, "/dev/null", Linux.O_RDONLY, 0, "/dev/null");
        terminal = LibC.fcntl(STDERR, Linux.F_DUPFD_CLOEXEC, STDERR + 1);
        LibC.dup2(devNull, STDIN);
        LibC.dup2(logFd, STDOUT);
        LibC.dup2(logFd, STDERR);
        Syscalls.close(devNull);
        Syscalls.close(logFd);
        // EPERM only for a process group leader, and the launcher starts this JVM as a background job of
        // its own group: never one. Were it one, the daemon would keep the terminal's session, no more.
        LibC.setsid();
        return new PrintWriter(new OutputStreamWriter(new DescriptorStream(terminal), StandardCharsets.UTF_8), true);
    }

    /**
     * The mount answers: {@code line} goes to the launcher, which prints it and exits. The pipe and
     * the terminal's stderr are replaced by the log rather than closed, so no file the daemon opens
     * later can take their numbers and receive what is still written to them.
     */
    synchronized void mounted(String line) {
        byte[] bytes = (line + "\n").getBytes(StandardCharsets.UTF_8);
        // the launcher gone (interrupted) makes this EPIPE, which the JVM ignores: the mount stays
        LibC.write(ready, bytes, bytes.length);
        LibC.dup2(STDERR, ready);
        if (terminal >= 0) {
            LibC.dup2(STDERR, terminal);
        }
        answered = true;
    }

    /**
     * Opens {@code logFile} again (SIGHUP after logrotate moved it) over every descriptor the log was
     * written to: the old file is then no longer held, and its space comes back once it is removed.
     * Before the mount answers, the pipe and the terminal stay: the command's one line goes there.
     */
    synchronized void reopenLog(Path logFile) throws IOException {
        reopenOver(logFile, answered ? new int[] {STDOUT, STDERR, ready, terminal} : new int[] {STDOUT, STDERR});
    }

    /** Opens {@code logFile} to append to, as the log is opened first, and puts it at each of {@code descriptors} (-1 skipped). */
    static void reopenOver(Path logFile, int... descriptors) throws IOException {
        int fd = MountCommand.openLog(logFile);
        try {
            for (int d : descriptors) {
                if (d >= 0 && LibC.dup2(fd, d) < 0) {
                    throw new IOException("dup2 over descriptor " + d + " failed");
                }
            }
        } finally {
            Syscalls.close(fd);
        }
    }

    /** Writes to a raw descriptor: the JDK makes streams only of the three standard ones and of files it opens. */
    private static final class DescriptorStream extends OutputStream {
        private final int fd;

        DescriptorStream(int fd) {
            this.fd = fd;
        }

        @Override
        public void write(int b) {
            write(new byte[] {(byte) b}, 0, 1);
        }

        @Override
        public void write(byte[] b, int off, int len) {
            byte[] part = off == 0 && len == b.length ? b : java.util.Arrays.copyOfRange(b, off, off + len);
            LibC.write(fd, part, part.length);
        }
    }
}
