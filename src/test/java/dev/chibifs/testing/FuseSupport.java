package dev.chibifs.testing;

import org.junit.jupiter.api.Assertions;
import org.junit.jupiter.api.Assumptions;

import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/** Decides whether mounted tests can run here; in CI (CI=true) a missing FUSE is a failure, never a skip. */
public final class FuseSupport {

    private FuseSupport() {
    }

    /** True under CI, where nothing that should run may be skipped. */
    public static boolean inCi() {
        return "true".equalsIgnoreCase(System.getenv("CI"));
    }

    /** Fails in CI, skips elsewhere, when /dev/fuse or fusermount is missing. */
    public static void requireFuse() {
        String missing = null;
        if (!Files.exists(Path.of("/dev/fuse"))) {
            missing = "/dev/fuse is missing";
        } else if (Sh.run("command -v fusermount").exitCode() != 0) {
            missing = "fusermount is missing (apt-get install fuse)";
        }
        if (missing != null) {
            if (inCi()) {
                Assertions.fail("CI must run the mount tests, but " + missing);
            }
            Assumptions.abort(missing + ": mount tests skipped (they run in CI)");
        }
    }

    /** Fails in CI, skips elsewhere, unless the tests run as root (needed to create users and switch uids). */
    public static void requireRoot() {
        boolean root = "root".equals(System.getProperty("user.name")) || Sh.run("id -u").out().trim().equals("0");
        if (!root) {
            if (inCi()) {
                Assertions.fail("CI must run the uid-mapped mount tests as root");
            }
            Assumptions.abort("not root: uid-mapped mount tests skipped (they run in CI as root)");
        }
    }

    /** The fuse module's switch for FUSE over io_uring. */
    public static final Path ENABLE_URING = Path.of("/sys/module/fuse/parameters/enable_uring");

    /**
     * Turns the fuse module's enable_uring on (the kernel offers FUSE over io_uring only then) until
     * the returned switch is closed, which puts back what it was; skips the test where this kernel
     * has no FUSE over io_uring (Linux 6.14+) or it takes root.
     */
    public static AutoCloseable ioUringOn() throws java.io.IOException {
        Assumptions.assumeTrue(Files.exists(ENABLE_URING), "this kernel has no FUSE over io_uring (Linux 6.14+)");
        Assumptions.assumeTrue(Files.isWritable(ENABLE_URING), "turning FUSE over io_uring on takes root");
        // the switch is the host's, and the suite's two test JVMs would otherwise turn it off under
        // each other's io_uring tests: one JVM at a time holds it, waiting here for the other's
        FileChannel held = FileChannel.open(Path.of(System.getProperty(LOCK_DIR, System.getProperty("java.io.tmpdir")),
                "io-uring.lock"), StandardOpenOption.CREATE, StandardOpenOption.WRITE);
        held.lock();
        String before = Files.readString(ENABLE_URING).trim();
        Files.writeString(ENABLE_URING, "1");
        return () -> {
            try (held) { // closing the channel lets the lock go
                Files.writeString(ENABLE_URING, before.equals("Y") ? "1" : "0");
            }
        };
    }

    /** Where the test JVMs of one build lock what the host has only one of (the pom sets it). */
    private static final String LOCK_DIR = "chibifs.test.lockDir";
}
