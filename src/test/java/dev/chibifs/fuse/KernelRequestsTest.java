package dev.chibifs.fuse;

import dev.chibifs.testing.MountedFs;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The round trips the kernel need not make, it does not: every request costs a caller a wait on
 * the daemon. Counted from libfuse's own {@code -o debug} output, which logs each request as it
 * arrives, so a program's requests are all in the log by the time it exits.
 */
@Timeout(120)
class KernelRequestsTest {

    private static final Pattern REQUEST = Pattern.compile("opcode: (\\w+) \\(");
    private static MountedFs fs;

    @BeforeAll
    static void mount() {
        // kernel cache on: a cached lookup sends nothing, so what a program needs shows alone
        fs = MountedFs.start("--context", "planner", "--kernel-cache", "30s", "-o", "debug");
    }

    @AfterAll
    static void unmount() {
        fs.close();
    }

    @Test
    void aChownOfAFileAsksForNoAttributesFirst() {
        List<String> sent = requestsOf("echo x > shared/owned && stat shared/owned >/dev/null",
                "chown \"$(id -u):$(id -g)\" shared/owned");
        // without FUSE_HANDLE_KILLPRIV in the INIT reply the kernel first asks for the file's attributes
        // (GETATTR), to learn whether set-user-ID bits need clearing: chibifs never shows any
        assertTrue(sent.contains("SETATTR") && !sent.contains("GETATTR"), sent.toString());
    }

    @Test
    void aCloseSendsNoFlushAndAWriteAsksForNoExtendedAttribute() {
        // the first FLUSH and GETXATTR may come (and be answered ENOSYS) while setting up
        List<String> sent = requestsOf("echo x > shared/w1 && echo y >> shared/w1 && cat shared/w1 >/dev/null",
                "echo z >> shared/w1 && cat shared/w1 >/dev/null");
        assertTrue(sent.contains("WRITE"), sent.toString());
        assertTrue(!sent.contains("FLUSH") && !sent.contains("GETXATTR"), sent.toString());
    }

    /** The requests the kernel sent while {@code script} ran, once {@code setup}'s have settled. */
    private static List<String> requestsOf(String setup, String script) {
        fs.sh(setup).ok();
        sleep(300); // the store's echo of the setup (its invalidations) is not the script's
        int from = fs.log().length();
        fs.sh(script).ok();
        List<String> sent = new ArrayList<>();
        Matcher m = REQUEST.matcher(fs.log().substring(from));
        while (m.find()) {
            sent.add(m.group(1));
        }
        return sent;
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
