package dev.chibifs.fuse;

import dev.chibifs.testing.MountedFs;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The round trips the kernel need not make, it does not: every request costs a caller a wait on
 * the daemon. Counted from libfuse's own {@code -o debug} output, which logs each request as it
 * arrives, so a program's requests are all in the log by the time it exits.
 */
@Timeout(120)
class KernelRequestsTest {

    private static final Pattern REQUEST = Pattern.compile("opcode: (\\w+) \\(\\d+\\), nodeid: (\\d+)");
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

    @Test
    void aWriteOfOneMebibyteIsOneRequest() {
        // libfuse 2's own buffers would cut it in eight; the kernel would cut it at 32 pages without FUSE_MAX_PAGES
        List<String> sent = requestsOf("true", "dd if=/dev/zero of=shared/big bs=1M count=2 status=none");
        assertEquals(2, sent.stream().filter("WRITE"::equals).count(), sent.toString());
        assertEquals("2097152\n", fs.sh("stat -c %s shared/big").ok().out());
    }

    @Test
    void lookupsInOneDirectoryReachTheDaemonTogether() throws IOException {
        // without FUSE_PARALLEL_DIROPS in the INIT reply the kernel holds each LOOKUP in a directory until
        // the one before it is answered; libfuse logs a request's reply before it writes it, so two in
        // flight at once in the log can only be lookups let through together
        int most = 0;
        for (int attempt = 0; attempt < 5 && most < 2; attempt++) {
            Path dir = Files.createDirectories(fs.stored("/shared/many" + attempt));
            for (int i = 0; i < 400; i++) {
                Files.writeString(dir.resolve("f" + i), "x");
            }
            fs.sh("ls shared/many" + attempt + " >/dev/null").ok();
            int from = fs.log().length();
            fs.sh("cd shared/many" + attempt + " && ls | xargs -P8 -n20 stat -c %s >/dev/null").ok();
            most = Math.max(most, mostLookupsInFlight(fs.log().substring(from)));
        }
        assertTrue(most >= 2, "the lookups of 8 processes in one directory never overlapped: at most " + most);
    }

    @Test
    void aListingCarriesTheAttributesOfWhatWasWrittenThroughTheMount() {
        // each write drops the file's size and mtime in the kernel: without READDIRPLUS, find asks for
        // each file again (a GETATTR per file); with it, the listing brings them. libfuse's log names
        // the READDIRPLUS a READDIR: that is the request libfuse serves it as.
        List<String> sent = requestsOf("mkdir -p shared/plus && for i in $(seq 40); do echo x > shared/plus/f$i; done"
                        + " && for i in $(seq 40); do echo yz >> shared/plus/f$i; done",
                "find shared/plus -type f -printf '%s\\n' | sort -u > shared/plus.out");
        assertEquals("5\n", fs.sh("cat shared/plus.out").ok().out());
        // one: find's look at shared/plus itself, whose attributes the creates in it dropped
        assertTrue(sent.stream().filter("GETATTR"::equals).count() <= 1, sent.toString());
    }

    /** The most LOOKUP requests libfuse's debug output shows received and not yet answered at once. */
    private static int mostLookupsInFlight(String log) {
        Matcher m = Pattern.compile("(?m)^unique: (\\d+), opcode: (\\w+) |^ +unique: (\\d+), ").matcher(log);
        Set<String> inFlight = new HashSet<>();
        int most = 0;
        while (m.find()) {
            if (m.group(1) != null && m.group(2).equals("LOOKUP")) {
                inFlight.add(m.group(1));
                most = Math.max(most, inFlight.size());
            } else if (m.group(3) != null) {
                inFlight.remove(m.group(3));
            }
        }
        return most;
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
            // the shell's look at the mount root, whose attributes the kernel keeps for libfuse's 1 s: a
            // case that runs past that (after a longer one) sees it, and it is not the script's own
            if (!(m.group(1).equals("GETATTR") && m.group(2).equals("1"))) {
                sent.add(m.group(1));
            }
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
