package dev.chibifs.cache;

import dev.chibifs.testing.MountedFs;
import dev.chibifs.testing.Sh;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.time.Instant;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The tool cache through a real mount: SYSTEM's entries are readable, never removable by contexts, swept by age. */
@Timeout(180)
class CacheMountTest {

    @Test
    void anAgedEntryIsSweptWithinAnIntervalWhileAFreshOneStays() throws Exception {
        try (MountedFs fs = MountedFs.start("--context", "planner", "--cache-sweep-interval", "1s")) {
            Path dir = Files.createDirectories(fs.stored("/sys/tool_cache/planner"));
            Files.writeString(dir.resolve("web_fetch_1_aaaaaaaa"), "old output\n");
            Files.writeString(dir.resolve("web_fetch_2_bbbbbbbb"), "fresh output\n");
            String base = "sys/tool_cache/planner/";

            assertEquals("old output\n", fs.sh("cat " + base + "web_fetch_1_aaaaaaaa").ok().out());
            assertEquals("fresh output\n", fs.sh("cat " + base + "web_fetch_2_bbbbbbbb").ok().out());
            for (String id : new String[] {"web_fetch_1_aaaaaaaa", "web_fetch_2_bbbbbbbb"}) {
                Sh.Result rm = fs.sh("rm -f " + base + id);
                assertTrue(rm.err().contains("Permission denied"), rm.err());
            }
            Sh.Result create = fs.sh("echo x > " + base + "mine");
            assertTrue(create.err().contains("Permission denied"), create.err());
            assertFalse(Files.exists(dir.resolve("mine")));

            // age one entry past tool_cache_max_age_days (7 by default), as if written 8 days ago
            Files.setLastModifiedTime(dir.resolve("web_fetch_1_aaaaaaaa"),
                    FileTime.from(Instant.now().minus(Duration.ofDays(8))));
            long deadline = System.currentTimeMillis() + 5_000;
            while (Files.exists(dir.resolve("web_fetch_1_aaaaaaaa")) && System.currentTimeMillis() < deadline) {
                Thread.sleep(100);
            }
            assertFalse(Files.exists(dir.resolve("web_fetch_1_aaaaaaaa")), "aged entry not swept:\n" + fs.log());
            assertTrue(Files.exists(dir.resolve("web_fetch_2_bbbbbbbb")));
            assertEquals("web_fetch_2_bbbbbbbb\n", fs.sh("ls " + base).ok().out());
            assertTrue(fs.log().contains("web_fetch_1_aaaaaaaa"), "removal not logged:\n" + fs.log());
        }
    }

    @Test
    void aChangedMaxAgeCountsFromTheNextSweepWithoutARemount() throws Exception {
        // chibi reads config.toml at every command; the daemon reads its cache settings at every sweep
        Path root = MountedFs.tempRoot();
        Files.createDirectories(root.resolve("home"));
        Files.writeString(root.resolve("home/config.toml"), "tool_cache_max_age_days = 30\n");
        try (MountedFs fs = MountedFs.start(root, "--context", "planner", "--cache-sweep-interval", "1s")) {
            Path entry = Files.createDirectories(fs.stored("/sys/tool_cache/planner")).resolve("web_fetch_1_aaaaaaaa");
            Files.writeString(entry, "old output\n");
            Files.setLastModifiedTime(entry, FileTime.from(Instant.now().minus(Duration.ofDays(10))));
            Files.writeString(fs.home().resolve("config.toml"), "tool_cache_max_age_days = 7\n");
            long deadline = System.currentTimeMillis() + 10_000;
            while (Files.exists(entry) && System.currentTimeMillis() < deadline) {
                java.util.concurrent.locks.LockSupport.parkNanos(Duration.ofMillis(50).toNanos());
            }
            assertFalse(Files.exists(entry), "not swept with the new max age:\n" + fs.log());
            assertTrue(fs.log().contains("tool cache sweep settings changed"), fs.log());
        }
    }

    @Test
    void putRoundTripsA100KbOutputThroughTheMount() throws IOException {
        try (MountedFs fs = MountedFs.start("--context", "planner")) {
            Path input = fs.root().resolve("output.bin");
            Sh.run("head -c 102400 /dev/urandom | base64 > " + input).ok();
            String put = MountedFs.cliScript("cache", "put", "--context", "planner", "--tool", "shell_exec",
                    "--home", fs.home().toString(), "--mountpoint", fs.mountpoint().toString());
            String stub = Sh.run(put + "< " + input).ok().out();
            Matcher m = Pattern.compile("\\[Output cached: vfs:///(sys/tool_cache/planner/shell_exec_[0-9a-f]+_[0-9a-f]{8})]")
                    .matcher(stub);
            assertTrue(m.find(), stub);
            assertTrue(stub.contains(fs.mountpoint().resolve(m.group(1)).toString()), "stub names the mount path:\n" + stub);
            fs.sh("cmp " + input + " " + m.group(1)).ok();
        }
    }
}
