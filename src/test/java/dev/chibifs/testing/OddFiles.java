package dev.chibifs.testing;

import dev.chibifs.sys.Linux;
import dev.chibifs.sys.Syscalls;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Path;
import java.time.Duration;

/** Files that are not what chibi writes, for the tests of what chibifs reads from a home. */
public final class OddFiles {

    /** Longer than any refusal takes; a hang without the rule is forever. */
    public static final Duration PROMPTLY = Duration.ofSeconds(10);

    private OddFiles() {
    }

    /** A fifo at {@code file}, as {@code mkfifo} makes it. */
    public static Path fifo(Path file) throws IOException {
        Syscalls.mknodat(Linux.AT_FDCWD, file.toString(), Linux.S_IFIFO | 0644, file.toString());
        return file;
    }

    /** A sparse file of {@code size} bytes: nothing written, nothing to read but zeros. */
    public static Path sized(Path file, long size) throws IOException {
        try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "rw")) {
            f.setLength(size);
        }
        return file;
    }
}
