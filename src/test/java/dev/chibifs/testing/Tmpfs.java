package dev.chibifs.testing;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * A tmpfs a root-only test mounts where it needs a file system of its own (a store's disk, one
 * mounted inside a store, one turned read-only), unmounted at close.
 */
public final class Tmpfs implements AutoCloseable {

    private final Path at;

    private Tmpfs(Path at) {
        this.at = at;
    }

    /** A tmpfs of {@code size} (mount's size=, as "1m") at {@code at}, made if missing. */
    public static Tmpfs mount(Path at, String size) throws IOException {
        Files.createDirectories(at);
        Sh.run("mount -t tmpfs -o size=" + size + " chibifs-test-tmpfs '" + at + "'").ok();
        return new Tmpfs(at);
    }

    public Path path() {
        return at;
    }

    /** Remounted read-only, or writable again: a disk that turned read-only under a running store. */
    public void readOnly(boolean readOnly) {
        Sh.run("mount -o remount," + (readOnly ? "ro" : "rw") + " '" + at + "'").ok();
    }

    /** How many of this process's descriptors are open on a file of {@code device}, mounted or not (lazily unmounted). */
    public static long descriptorsOnDevice(long device) throws IOException {
        try (var fds = Files.list(Path.of("/proc/self/fd"))) {
            return fds.filter(fd -> {
                try {
                    return device == (Long) Files.getAttribute(fd, "unix:dev");
                } catch (IOException | RuntimeException closedMeanwhile) {
                    return false;
                }
            }).count();
        }
    }

    /** Lazily: a store's descriptors of files removed from it may close a moment after the store does. */
    @Override
    public void close() {
        Sh.run("umount -l '" + at + "'");
    }
}
