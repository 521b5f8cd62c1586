package dev.chibifs.fuse;

import dev.chibifs.sys.LibC;
import dev.chibifs.sys.Syscalls;
import dev.chibifs.sys.Linux;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;

/**
 * Reads this process's mount table and waits for it to change: poll(2) on /proc/self/mounts wakes
 * when a mount comes or goes after the file was opened, so a test waits for the event, not a sleep.
 */
final class MountTableWatch {

    private static final Path MOUNTS = Path.of("/proc/self/mounts");

    private MountTableWatch() {
    }

    /** The file system type mounted at {@code mountpoint} (the last mount there), if any. */
    static Optional<String> typeAt(Path mountpoint) {
        try {
            String want = mountpoint.toAbsolutePath().normalize().toString();
            Optional<String> type = Optional.empty();
            for (String line : Files.readAllLines(MOUNTS)) {
                String[] f = line.split(" ");
                if (f.length > 2 && f[1].equals(want)) {
                    type = Optional.of(f[2]);
                }
            }
            return type;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Waits until nothing is mounted at {@code mountpoint}; false if it still is after {@code timeout}. */
    static boolean awaitUnmounted(Path mountpoint, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        ByteBuffer pollfd = ByteBuffer.allocateDirect(8).order(ByteOrder.nativeOrder());
        while (true) {
            // opened before reading: a change after the read still wakes the poll below
            int fd = LibC.open(LibC.path(MOUNTS.toString()), Linux.O_RDONLY | Linux.O_CLOEXEC, 0);
            try {
                if (typeAt(mountpoint).isEmpty()) {
                    return true;
                }
                long left = (deadline - System.nanoTime()) / 1_000_000;
                if (left <= 0) {
                    return false;
                }
                pollfd.putInt(0, fd).putShort(4, (short) (Linux.POLLERR | Linux.POLLPRI)).putShort(6, (short) 0);
                LibC.poll(com.kenai.jffi.MemoryIO.getInstance().getDirectBufferAddress(pollfd), 1, (int) left);
            } finally {
                Syscalls.close(fd);
            }
        }
    }
}
