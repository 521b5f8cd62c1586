package dev.chibifs.fuse;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import dev.chibifs.testing.MountedFs;
import dev.chibifs.testing.Sh;
import java.io.IOException;
import java.nio.file.Files;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A daemon that meets its limit of held directories in the middle of a path must not keep serving
 * that path from a directory chibi has since moved elsewhere in the store, where the policy would
 * never have let the caller write. The daemon gets 200 open files, so it holds at most 50
 * directories (200, not fewer: the daemon runs on the test class path, some 90 jars that its JVM
 * may all hold open), and libfuse's 1 s timeouts ({@code --kernel-cache off}): the kernel keeps the old
 * names for that long and sends the write on by its old path, as it may for the moments before an
 * invalidation lands with the kernel cache on.
 */
@Timeout(120)
class HeldDirectoryLimitTest {

    private MountedFs fs;

    @BeforeEach
    void mount() throws IOException {
        fs = MountedFs.startWithOpenFileLimit(200, "--context", "planner", "--kernel-cache", "off");
        for (int i = 1; i <= 47; i++) {
            Files.createDirectories(fs.stored("/shared/pad" + i));
            Files.writeString(fs.stored("/shared/pad" + i + "/f"), "p\n");
        }
        Files.createDirectories(fs.stored("/shared/a/b/c/d"));
        Files.writeString(fs.stored("/shared/a/b/c/d/f"), "orig\n");
        Files.createDirectories(fs.stored("/sys"));
    }

    @AfterEach
    void unmount() {
        if (fs != null) {
            fs.close();
        }
    }

    @Test
    void aWriteByAPathChibiMovedAwayDoesNotLandInTheMovedDirectory() throws IOException {
        // one script, well within the kernel's 1 s: each step's count of held directories is the point
        Sh.Result r = fs.sh("""
                cat shared/a/b/c/d/f > /dev/null                   # the kernel caches a, b, c, d and f
                for i in $(seq 1 46); do cat shared/pad$i/f; done > /dev/null   # 50 held at pad45; pad46 lets all go
                for i in $(seq 1 47); do cat shared/pad$i/f; done > /dev/null   # shared and 47 pads held again: 48
                echo more >> shared/a/b/c/d/f                      # a and b held (50); holding c meets the limit
                mv '%s' '%s'                                       # chibi moves shared/a into /sys
                echo escaped >> shared/a/b/c/d/f
                """.formatted(fs.stored("/shared/a"), fs.stored("/sys/a")));
        assertNotEquals(0, r.exitCode(), "the write by the old path must fail: " + r);
        assertEquals("orig\nmore\n", Files.readString(fs.stored("/sys/a/b/c/d/f")), "nothing may land in /sys");
    }
}
