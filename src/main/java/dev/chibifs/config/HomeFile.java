package dev.chibifs.config;

import dev.chibifs.sys.Errors;
import dev.chibifs.sys.Linux;
import dev.chibifs.sys.Syscalls;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;

/**
 * The one way chibifs reads a file of chibi's home (site.json, config.toml, a context's
 * local.toml, state.json; the flock registry is the store's, read by the router's FlockRegistryReader): whoever owns the home can put anything at those names, and a read must
 * neither hang nor take the daemon's memory. So the open never waits (O_NONBLOCK: a fifo opens at
 * once, with or without a writer), what it opened must be a regular file (checked on the
 * descriptor, so a rename after the check changes nothing), and no more than the file's limit is
 * read. A symbolic link to a regular file is read as that file: chibi's users keep dotfiles as links.
 */
public final class HomeFile {

    /** The rule for anything but a regular file, as the store says it of what it will not serve. */
    public static final String NOT_REGULAR = "not a regular file (fifos, sockets and devices are not read)";

    /** site.json holds two ids: no real one comes near this. */
    public static final long SITE_JSON_LIMIT = 1L << 20;
    /** config.toml and local.toml: a few dozen keys, some KiB. */
    public static final long CONFIG_TOML_LIMIT = 4L << 20;
    /** state.json: a few hundred bytes per context, so tens of thousands of contexts fit. */
    public static final long STATE_JSON_LIMIT = 16L << 20;
    /** vfs/flocks/registry.json (read through the store, not here): a few hundred bytes per flock and member. */
    public static final long REGISTRY_JSON_LIMIT = 16L << 20;

    private static final int CHUNK = 64 << 10;

    private HomeFile() {
    }

    /** A file of the home that is no regular file or is over its limit; the message names the file and the rule. */
    public static final class RefusedException extends IOException {
        private final String reason;

        RefusedException(Path file, String reason) {
            super(file + ": " + reason);
            this.reason = reason;
        }

        /** The rule alone, without the file. */
        public String reason() {
            return reason;
        }
    }

    /**
     * The bytes of {@code file}, links followed.
     *
     * @throws java.nio.file.NoSuchFileException when it is absent, as {@link java.nio.file.Files#readAllBytes} throws it
     * @throws RefusedException when it is no regular file, or holds more than {@code limit} bytes
     * @throws IOException for any other failure, by its errno
     */
    public static byte[] read(Path file, long limit) throws IOException {
        return read(file, 0, limit);
    }

    /** The bytes of {@code file} from byte {@code from} on, as {@link #read(Path, long)} reads them, {@code limit} counted from there. */
    public static byte[] read(Path file, long from, long limit) throws IOException {
        String name = file.toString();
        int fd = Syscalls.tryOpenat(Linux.AT_FDCWD, name, Linux.O_RDONLY | Linux.O_NONBLOCK | Linux.O_NOCTTY, 0);
        if (fd < 0) {
            throw Errors.of(-fd, name);
        }
        try {
            Syscalls.Statx s = Syscalls.stat(fd, null, name);
            if (s.type() == Linux.S_IFDIR) {
                throw Errors.of(Linux.EISDIR, name);
            }
            if (s.type() != Linux.S_IFREG) {
                throw new RefusedException(file, NOT_REGULAR);
            }
            if (s.size() - from > limit) {
                throw tooLarge(file, limit);
            }
            // the size is only a hint: the file may grow while it is read, and /proc-like files say 0
            ByteArrayOutputStream out = new ByteArrayOutputStream((int) Math.max(0, Math.min(s.size() - from + 1, limit + 1)));
            ByteBuffer chunk = ByteBuffer.allocate(CHUNK);
            long position = from;
            while (true) {
                chunk.clear();
                int n = Syscalls.pread(fd, chunk, position);
                if (n <= 0) {
                    return out.toByteArray();
                }
                position += n;
                if (position - from > limit) {
                    throw tooLarge(file, limit);
                }
                out.write(chunk.array(), 0, n);
            }
        } finally {
            Syscalls.close(fd);
        }
    }

    /** The rule for a log at a symbolic link: written through it, the log would land on whatever it names. */
    public static final String LINKED_LOG = "a symbolic link: chibifs writes its log only to a file of its own";

    /**
     * A descriptor of {@code file} opened to append to (made 0644 when absent), as the daemon's log:
     * never through a symbolic link, never a wait on a fifo (O_WRONLY|O_NONBLOCK on one without a
     * reader fails at once with ENXIO instead), and a regular file or refused.
     *
     * @throws RefusedException when it is a link, or no regular file
     */
    public static int openForAppend(Path file) throws IOException {
        String name = file.toString();
        int fd = Syscalls.tryOpenat(Linux.AT_FDCWD, name, Linux.O_WRONLY | Linux.O_CREAT | Linux.O_APPEND
                | Linux.O_NOFOLLOW | Linux.O_NONBLOCK | Linux.O_NOCTTY, 0644);
        if (fd == -Linux.ELOOP) {
            throw new RefusedException(file, LINKED_LOG);
        }
        if (fd == -Linux.ENXIO) {
            throw new RefusedException(file, NOT_REGULAR);
        }
        if (fd < 0) {
            throw Errors.of(-fd, name);
        }
        try {
            if (Syscalls.stat(fd, null, name).type() != Linux.S_IFREG) {
                throw new RefusedException(file, NOT_REGULAR);
            }
            return fd;
        } catch (IOException | RuntimeException e) {
            Syscalls.close(fd);
            throw e;
        }
    }

    private static RefusedException tooLarge(Path file, long limit) {
        return new RefusedException(file, "larger than " + size(limit) + ", the most chibifs reads of "
                + file.getFileName() + ": not read");
    }

    /** {@code bytes} as a person reads a limit: "1 MiB". */
    static String size(long bytes) {
        return bytes % (1L << 20) == 0 ? (bytes >> 20) + " MiB" : bytes % 1024 == 0 ? (bytes >> 10) + " KiB" : bytes + " bytes";
    }
}
