package dev.chibifs.store.s3;

import dev.chibifs.path.VfsPath;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * {@code scripts/s3-loopback.sh}, as the README's S3 try-it runs it: it serves a bucket two hosts'
 * stores share, and stops its server when it is stopped. Its first run in a checkout asks Maven for
 * the test class path, so this test allows for that.
 */
@Timeout(180)
class S3LoopbackTest {

    private static final Duration ANSWERS_WITHIN = Duration.ofSeconds(150);
    private static final Map<String, String> CREDENTIALS = Map.of("AWS_ACCESS_KEY_ID", "loopback-test",
            "AWS_SECRET_ACCESS_KEY", "loopback-test-secret", "AWS_REGION", "us-east-1");

    @TempDir
    Path temp;

    @Test
    void theScriptServesABucketTwoHostsShareAndStopsItsServerWhenStopped() throws Exception {
        Path ready = temp.resolve("ready");
        ProcessBuilder pb = new ProcessBuilder("scripts/s3-loopback.sh", "--bucket", "try",
                "--ready-file", ready.toString(), temp.resolve("s3").toString())
                .redirectErrorStream(true).redirectOutput(temp.resolve("out").toFile());
        pb.environment().putAll(CREDENTIALS);
        Process script = pb.start();
        try {
            String endpoint = endpointOnceReady(script, ready);
            String spec = "s3://try/team?endpoint=" + endpoint;
            VfsPath notes = VfsPath.of("/shared/notes.md");
            byte[] text = "- from host a\n".getBytes(StandardCharsets.UTF_8);
            try (S3Storage a = S3Storage.open(spec, S3Options.defaults(temp.resolve("a"), CREDENTIALS))) {
                a.write(notes, text);
                a.flushAll();
            }
            try (S3Storage b = S3Storage.open(spec, S3Options.defaults(temp.resolve("b"), CREDENTIALS))) {
                assertArrayEquals(text, b.read(notes));
            }
            List<ProcessHandle> server = script.descendants().toList();
            assertTrue(server.stream().anyMatch(h -> h.info().command().orElse("").endsWith("java")),
                    "the script's server is a java child: " + server);
            script.destroy(); // SIGTERM, as Ctrl-C or a supervisor stops it
            assertTrue(script.waitFor(30, TimeUnit.SECONDS), "the script did not end");
            for (ProcessHandle h : server) {
                h.onExit().get(20, TimeUnit.SECONDS);
            }
            assertEquals(List.of(), server.stream().filter(ProcessHandle::isAlive).toList(), "left running");
        } finally {
            script.descendants().forEach(ProcessHandle::destroyForcibly);
            script.destroyForcibly();
        }
    }

    /** The endpoint the script writes to {@code ready} once its server answers. */
    private String endpointOnceReady(Process script, Path ready) throws IOException {
        long deadline = System.nanoTime() + ANSWERS_WITHIN.toNanos();
        while (!Files.exists(ready)) {
            if (!script.isAlive() || System.nanoTime() > deadline) {
                fail("no endpoint from s3-loopback.sh (" + (script.isAlive() ? "still running" : "exited "
                        + script.exitValue()) + "):\n" + Files.readString(temp.resolve("out")));
            }
            // the poll's interval, not a wait for something to happen: the ready file or the deadline decides
            LockSupport.parkNanos(Duration.ofMillis(50).toNanos());
        }
        return Files.readString(ready).strip();
    }
}
