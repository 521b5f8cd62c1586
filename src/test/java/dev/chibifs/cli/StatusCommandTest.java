package dev.chibifs.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class StatusCommandTest {

    @TempDir
    Path tmp;

    private final StringWriter out = new StringWriter();

    private int run(StatusCommand command, String... args) {
        CommandLine cl = new CommandLine(command);
        cl.setOut(new PrintWriter(out));
        return cl.execute(args);
    }

    private StatusCommand command() throws Exception {
        Path table = tmp.resolve("mounts");
        Files.writeString(table, "chibifs /mnt/chibi fuse.chibifs rw,nosuid,nodev 0 0\n"
                + "chibifs /mnt/orphan fuse.chibifs rw 0 0\n"
                + "tmpfs /tmp tmpfs rw 0 0\n");
        MountRegistry registry = new MountRegistry(tmp.resolve("reg"), table, pid -> pid == 4242);
        registry.write(new MountRecord(Path.of("/mnt/chibi"), 4242, MountRecord.MODE_UIDMAP, null,
                "1001=planner,1002=coder", null, tmp.resolve("srv/chibi"), Files.createDirectories(tmp.resolve("srv/chibi/vfs")),
                Instant.parse("2025-01-01T10:00:00Z"), "allow_other", "stderr"));
        registry.write(new MountRecord(Path.of("/mnt/planner"), 99, MountRecord.MODE_CONTEXT, "planner", "",
                null, Path.of("/h"), Path.of("/h/vfs"), Instant.parse("2025-01-01T11:00:00Z"), "", "stderr"));
        Clock now = Clock.fixed(Instant.parse("2025-01-01T12:03:00Z"), ZoneOffset.UTC);
        return new StatusCommand(List.of(registry), table, now);
    }

    @Test
    void aKilledDaemonsMountStillInTheTableIsOneStaleRow() throws Exception {
        Path table = tmp.resolve("mounts");
        Files.writeString(table, "chibifs /mnt/killed fuse.chibifs rw 0 0\n");
        MountRegistry registry = new MountRegistry(tmp.resolve("reg"), table, pid -> false);
        registry.write(new MountRecord(Path.of("/mnt/killed"), 77, MountRecord.MODE_CONTEXT, "planner", "",
                null, Path.of("/h"), Path.of("/h/vfs"), Instant.parse("2025-01-01T11:00:00Z"), "", "stderr"));
        assertEquals(0, run(new StatusCommand(List.of(registry), table, Clock.systemUTC())));
        String text = out.toString();
        assertEquals(1, text.lines().filter(l -> l.startsWith("/mnt/killed ")).count(), text);
        assertTrue(text.matches("(?s).*\n/mnt/killed\s+stale\s.*"), text);
        // one fix, as stats and doctor give it: umount clears the mount and the record both
        assertTrue(text.contains("/mnt/killed: pid 77 is not running; its mount is left without a daemon: chibifs umount"
                + " /mnt/killed\n"), text);
    }

    @Test
    void tableShowsActiveStaleAndUnregisteredMounts() throws Exception {
        assertEquals(0, run(command()));
        String text = out.toString();
        assertTrue(text.matches("(?s)MOUNTPOINT\\s+STATE\\s+PID\\s+UPTIME\\s+WHO\\s+IO\\s+STORE\n.*"), text);
        assertTrue(text.matches("(?s).*\n/mnt/chibi\\s+active\\s+4242\\s+2h03m\\s+uidmap=1001=planner,1002=coder"
                + "\\s+served\\s+" + java.util.regex.Pattern.quote(tmp.resolve("srv/chibi/vfs").toString()) + "\n.*"), text);
        assertTrue(text.matches("(?s).*\n/mnt/planner\\s+stale\\s+99\\s+1h03m\\s+context=planner\\s+served\\s+/h/vfs\n.*"), text);
        assertTrue(text.matches("(?s).*\n/mnt/orphan\\s+unregistered\\s+-\\s+-\\s+-\\s+-\\s+-\n.*"), text);
        assertTrue(text.contains("/mnt/planner: pid 99 is not running; nothing serves it: chibifs umount /mnt/planner"), text);
    }

    @Test
    void jsonCarriesEveryField() throws Exception {
        assertEquals(0, run(command(), "--json"));
        JsonNode rows = new ObjectMapper().readTree(out.toString());
        assertEquals(3, rows.size());
        JsonNode active = rows.get(0);
        assertEquals("/mnt/chibi", active.get("mountpoint").asText());
        assertEquals("active", active.get("state").asText());
        assertEquals(7380, active.get("uptimeSeconds").asLong());
        assertEquals("1001=planner,1002=coder", active.get("uidmap").asText());
        assertEquals("allow_other", active.get("options").asText());
    }

    /**
     * A mount whose local store directory was removed or moved answers EIO there until it is back:
     * it said active and nothing more.
     */
    @Test
    void anActiveMountWhoseStoreDirectoryHasGoneSaysSo() throws Exception {
        Path table = Files.writeString(tmp.resolve("gone-mounts"), "chibifs /mnt/gone fuse.chibifs rw 0 0\n");
        MountRegistry registry = new MountRegistry(tmp.resolve("gone-reg"), table, pid -> true);
        Path vfs = Files.createDirectories(tmp.resolve("h/vfs"));
        Path extra = Files.createDirectories(tmp.resolve("extra"));
        registry.write(new MountRecord(Path.of("/mnt/gone"), 7, MountRecord.MODE_CONTEXT, "planner", "", null,
                tmp.resolve("h"), vfs, Instant.parse("2025-01-01T11:00:00Z"), "", "stderr",
                "/=" + vfs + " /shared/x=readonly:" + extra + " /scratch=memory:64M"));
        assertEquals(0, run(new StatusCommand(List.of(registry), table, Clock.systemUTC()), "/mnt/gone"));
        assertFalse(out.toString().contains("has gone"), out.toString());

        Files.delete(vfs);
        Files.delete(extra);
        Files.writeString(extra, "a file where the directory was");
        out.getBuffer().setLength(0);
        // every request there fails: a health check that passed on it was no check
        assertEquals(1, run(new StatusCommand(List.of(registry), table, Clock.systemUTC()), "/mnt/gone"), "failing");
        assertTrue(out.toString().matches("(?s).*\n/mnt/gone\s+failing\s+7\s.*"), out.toString());
        assertTrue(out.toString().contains("/mnt/gone: store directory " + vfs + ", " + extra
                + " (at /shared/x) has gone (moved, removed or replaced): requests there fail with EIO until it is back\n"),
                out.toString());
    }

    /**
     * The daemon says of its local store at / what status finds itself when the directory has gone:
     * said once, on the line status writes; a store failing under a directory still there (its disk
     * failing, its file system unmounted) is failing, as the daemon says.
     */
    @Test
    void aLocalStoreTheDaemonSaysFailsIsFailingAndSaidOnce() throws Exception {
        Path vfs = Files.createDirectories(tmp.resolve("d/vfs"));
        OneMount mount = localMountOfPid7("disk", vfs);
        Path table = mount.table();
        MountRegistry registry = mount.registry();
        String eio = "its directory " + vfs + " answers EIO (Input/output error): requests there fail";
        try (StatsSocket daemon = StatsSocket.serve(StatsSocket.pathFor(registry, 7),
                () -> Map.of("troubles", Map.of("/", eio), "failing", Map.of("/", eio)))) {
            assertEquals(1, run(new StatusCommand(List.of(registry), table, Clock.systemUTC()), "/mnt/disk"));
        }
        assertTrue(out.toString().matches("(?s).*\n/mnt/disk\s+failing\s+7\s.*"), out.toString());
        assertTrue(out.toString().contains("/mnt/disk: the store at / fails: " + eio + "\n"), out.toString());

        Files.delete(vfs);
        out.getBuffer().setLength(0);
        String gone = "the store directory " + vfs + " has gone (moved, removed or replaced)";
        try (StatsSocket daemon = StatsSocket.serve(StatsSocket.pathFor(registry, 7),
                () -> Map.of("troubles", Map.of("/", gone), "failing", Map.of("/", gone)))) {
            assertEquals(1, run(new StatusCommand(List.of(registry), table, Clock.systemUTC()), "/mnt/disk"));
        }
        assertTrue(out.toString().contains("/mnt/disk: store directory " + vfs + " has gone (moved, removed or"
                + " replaced): requests there fail with EIO until it is back\n"), out.toString());
        assertEquals(1, out.toString().split("has gone", -1).length - 1, out.toString());
    }

    /**
     * A store on a stopped FUSE daemon (or an NFS server away) held status in its lstat of the store
     * directory for ever, while stats answered within its 300 ms: status waits that long too, says the
     * store does not answer, once, and stays active (requests there wait, they do not fail).
     */
    @Test
    void aStoreDirectoryThatNeverAnswersHoldsStatusNoLongerThanTheLooksBound() throws Exception {
        Path vfs = Files.createDirectories(tmp.resolve("s/vfs"));
        OneMount mount = localMountOfPid7("stalled", vfs);
        Path table = mount.table();
        MountRegistry registry = mount.registry();
        java.util.concurrent.CountDownLatch never = new java.util.concurrent.CountDownLatch(1);
        java.util.function.Predicate<Path> stopped = dir -> {
            try {
                never.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return false;
        };
        String waits = "the store at /: its directory " + vfs + " does not answer within 300 ms (its server or FUSE"
                + " daemon away or stopped?): requests there wait";
        try {
            long start = System.nanoTime();
            int exit = org.junit.jupiter.api.Assertions.assertTimeoutPreemptively(java.time.Duration.ofSeconds(20),
                    () -> run(new StatusCommand(List.of(registry), table, Clock.systemUTC()).directoryLook(stopped), "/mnt/stalled"));
            assertEquals(0, exit, out.toString());
            assertTrue(System.nanoTime() - start >= java.util.concurrent.TimeUnit.MILLISECONDS.toNanos(300), "waited its bound");
            assertTrue(out.toString().contains("/mnt/stalled: " + waits + "\n"), out.toString());

            // the daemon says the same of its own look: said once, in the daemon's words
            out.getBuffer().setLength(0);
            String daemonSays = "its directory " + vfs + " does not answer within 300 ms (its server or FUSE daemon"
                    + " away or stopped?): requests there wait";
            try (StatsSocket daemon = StatsSocket.serve(StatsSocket.pathFor(registry, 7),
                    () -> Map.of("troubles", Map.of("/", daemonSays)))) {
                assertEquals(0, org.junit.jupiter.api.Assertions.assertTimeoutPreemptively(java.time.Duration.ofSeconds(20),
                        () -> run(new StatusCommand(List.of(registry), table, Clock.systemUTC()).directoryLook(stopped),
                                "/mnt/stalled")));
            }
            assertTrue(out.toString().contains("/mnt/stalled: the store at / fails: " + daemonSays + "\n"), out.toString());
            assertEquals(1, out.toString().split("does not answer", -1).length - 1, out.toString());
        } finally {
            never.countDown();
        }
    }

    /** A store mounted read-only on purpose was said to fail: it is read-only, and the mount active. */
    @Test
    void aStoreReadOnlyFromTheStartIsSaidReadOnlyNotFailing() throws Exception {
        Path vfs = Files.createDirectories(tmp.resolve("r/vfs"));
        OneMount mount = localMountOfPid7("ro", vfs);
        Path table = mount.table();
        MountRegistry registry = mount.registry();
        String readOnly = dev.chibifs.store.WholeStoreFailure.readOnlyFromStart(vfs);
        try (StatsSocket daemon = StatsSocket.serve(StatsSocket.pathFor(registry, 7),
                () -> Map.of("troubles", Map.of("/", readOnly)))) {
            assertEquals(0, run(new StatusCommand(List.of(registry), table, Clock.systemUTC()), "/mnt/ro"));
        }
        assertTrue(out.toString().matches("(?s).*\n/mnt/ro\s+active\s+7\s.*"), out.toString());
        assertTrue(out.toString().contains("/mnt/ro: the store at / is read-only: its directory " + vfs + " is on a"
                + " read-only file system, as it was when the mount began: reads are served, every change there answers"
                + " EROFS (Read-only file system)\n"), out.toString());
        assertFalse(out.toString().contains("fails"), out.toString());
    }

    /** A mount whose store fails (S3 away for six minutes) said active and nothing more. */
    @Test
    void anActiveMountWhoseStoreFailsSaysWhatTheDaemonSays() throws Exception {
        OneMount m = s3MountOfPid7("failing");
        Path table = m.table();
        MountRegistry registry = m.registry();
        try (StatsSocket daemon = StatsSocket.serve(StatsSocket.pathFor(registry, 7),
                () -> Map.of("troubles", Map.of("/", "cannot reach http://127.0.0.1:9/ (Connection refused)")))) {
            assertEquals(0, run(new StatusCommand(List.of(registry), table, Clock.systemUTC()), "/mnt/failing"), "still active");
        }
        assertTrue(out.toString().contains("/mnt/failing: the store at / fails: cannot reach http://127.0.0.1:9/"
                + " (Connection refused)\n"), out.toString());
        out.getBuffer().setLength(0);
        assertEquals(0, run(new StatusCommand(List.of(registry), table, Clock.systemUTC()), "/mnt/failing"));
        assertFalse(out.toString().contains("fails"), "a daemon that cannot be asked tells nothing: " + out);
    }

    /**
     * A store whose change S3 refused 20 times said only that the write-back failed, not whether
     * or when the daemon would try it again: status says when, as the daemon tells it.
     */
    @Test
    void aStoreWhoseChangeS3RefusedSaysWhenItIsTriedAgain() throws Exception {
        OneMount m = s3MountOfPid7("refused");
        String why = "S3 put s3://b/ns/shared/x: HTTP 403 AccessDenied (Input/output error)";
        try (StatsSocket daemon = StatsSocket.serve(StatsSocket.pathFor(m.registry(), 7),
                () -> Map.of("troubles", Map.of("/", why), "nextTries", Map.of("/", "next try in 4.2 s")))) {
            assertEquals(0, run(new StatusCommand(List.of(m.registry()), m.table(), Clock.systemUTC()), "/mnt/refused"), "still active");
            assertTrue(out.toString().contains("/mnt/refused: the store at / fails: " + why + "; next try in 4.2 s\n"), out.toString());
            out.getBuffer().setLength(0);
            assertEquals(0, run(new StatusCommand(List.of(m.registry()), m.table(), Clock.systemUTC()), "--json", "/mnt/refused"));
        }
        assertEquals("next try in 4.2 s", new ObjectMapper().readTree(out.toString()).get(0).get("nextTries").get("/").asText());
    }

    /**
     * A mount whose S3 has no DeleteObjects sends lock releases as DELETEs the JDK may send twice:
     * said once in the log at INFO, and status said active and nothing more. Active still, and said.
     */
    @Test
    void aMountWhoseS3HasNoDeleteObjectsIsActiveAndSaysWhatThatCosts() throws Exception {
        OneMount m = s3MountOfPid7("onebyone");
        String why = "S3 at http://127.0.0.1:9 has no DeleteObjects (it answered HTTP 501 at 2026-01-01T10:00:00Z):"
                + " objects are deleted one by one (DeleteObjects tried again every 10 minutes), and a lock's release, sent as a DELETE, may be"
                + " sent twice and delete another host's claim (two holders)";
        try (StatsSocket daemon = StatsSocket.serve(StatsSocket.pathFor(m.registry(), 7),
                () -> Map.of("troubles", Map.of(), "cautions", Map.of("/", why)))) {
            assertEquals(0, run(new StatusCommand(List.of(m.registry()), m.table(), Clock.systemUTC()), "/mnt/onebyone"));
            assertTrue(out.toString().matches("(?s).*\n/mnt/onebyone\s+active\s+7\s.*"), out.toString());
            assertTrue(out.toString().contains("/mnt/onebyone: the store at /: " + why + "\n"), out.toString());
            assertFalse(out.toString().contains("fails"), out.toString());
            out.getBuffer().setLength(0);
            assertEquals(0, run(new StatusCommand(List.of(m.registry()), m.table(), Clock.systemUTC()), "--json", "/mnt/onebyone"));
        }
        assertEquals(why, new ObjectMapper().readTree(out.toString()).get(0).get("cautions").get("/").asText());
    }

    /**
     * After a restart with an upload S3 refuses in the journal every fsync was EIO, and status said
     * plain active: a store that fails until someone acts makes the mount failing.
     */
    @Test
    void aMountWhoseStoreFailsUntilSomeoneActsIsFailing() throws Exception {
        OneMount m = s3MountOfPid7("held");
        String why = "a change from before this start does not go up (S3 put ns/shared/x: HTTP 500)";
        try (StatsSocket daemon = StatsSocket.serve(StatsSocket.pathFor(m.registry(), 7),
                () -> Map.of("troubles", Map.of("/", why), "failing", Map.of("/", why)))) {
            assertEquals(1, run(new StatusCommand(List.of(m.registry()), m.table(), Clock.systemUTC()), "/mnt/held"));
        }
        assertTrue(out.toString().matches("(?s).*\n/mnt/held\s+failing\s+7\s.*"), out.toString());
        assertTrue(out.toString().contains("/mnt/held: the store at / fails: " + why + "\n"), out.toString());
    }

    /**
     * A daemon slow to answer once (a loaded host: two CPUs, the suite running) is asked again before
     * it is called not answering: a health check failed a live mount.
     */
    @Test
    void aDaemonSilentOnceButAnsweringWhenAskedAgainIsActive() throws Exception {
        OneMount m = s3MountOfPid7("slow");
        Path table = m.table();
        MountRegistry registry = m.registry();
        try (var slow = StatsCommandTest.silent(StatsSocket.pathFor(registry, 7))) {
            Thread answersTheSecond = new Thread(() -> {
                try (var first = slow.accept(); var second = slow.accept()) {
                    second.write(java.nio.ByteBuffer.wrap("{}".getBytes(java.nio.charset.StandardCharsets.UTF_8)));
                } catch (java.io.IOException closed) {
                    // the test ended
                }
            });
            answersTheSecond.start();
            assertEquals(0, run(new StatusCommand(List.of(registry), table, Clock.systemUTC())
                    .silentAfter(java.time.Duration.ofSeconds(20)), "/mnt/slow"), out.toString());
            answersTheSecond.join();
        }
    }

    /**
     * A daemon stopped with SIGSTOP takes the connection and never answers: status called it active
     * and exited 0, while every process on its mount waited in the kernel.
     */
    @Test
    void aDaemonThatDoesNotAnswerIsNotActive() throws Exception {
        OneMount m = s3MountOfPid7("stopped");
        Path table = m.table();
        MountRegistry registry = m.registry();
        try (var stopped = StatsCommandTest.silent(StatsSocket.pathFor(registry, 7))) {
            assertEquals(1, run(new StatusCommand(List.of(registry), table, Clock.systemUTC())
                    .silentAfter(java.time.Duration.ofMillis(200)), "/mnt/stopped"));
            assertTrue(out.toString().matches("(?s).*\n/mnt/stopped\s+not answering\s+7\s.*"), out.toString());
            assertTrue(out.toString().contains("/mnt/stopped: pid 7 does not answer (stopped? hung?): processes"
                    + " using the mount wait; kill -CONT 7, or chibifs umount --force /mnt/stopped\n"), out.toString());
            out.getBuffer().setLength(0);
            assertEquals(0, run(new StatusCommand(List.of(registry), table, Clock.systemUTC())
                    .silentAfter(java.time.Duration.ofMillis(200))), "a listing is listed");
        }
        out.getBuffer().setLength(0);
        assertEquals(0, run(new StatusCommand(List.of(registry), table, Clock.systemUTC()), "/mnt/stopped"),
                "a daemon that cannot be asked at all (another user's socket) is not called stopped");
    }

    /** A log deleted while mounted was written to for ever, its space never freed, and nothing said so. */
    @Test
    void aLogDeletedWhileTheDaemonWritesToItIsNamed() throws Exception {
        Path table = Files.writeString(tmp.resolve("log-mounts"), "chibifs /mnt/logged fuse.chibifs rw 0 0\n");
        MountRegistry registry = new MountRegistry(tmp.resolve("log-reg"), table, pid -> true);
        Path log = Files.writeString(tmp.resolve("mount.log"), "mounted\n");
        Path vfs = Files.createDirectories(tmp.resolve("lh/vfs"));
        registry.write(new MountRecord(Path.of("/mnt/logged"), 7, MountRecord.MODE_CONTEXT, "planner", "", null,
                tmp.resolve("lh"), vfs, Instant.parse("2025-01-01T11:00:00Z"), "", log.toString()));
        try (java.nio.channels.FileChannel daemonsLog = java.nio.channels.FileChannel.open(log,
                java.nio.file.StandardOpenOption.APPEND)) {
            // the descriptor the daemon writes its log to: this test's own, open on the file
            Path fd = java.nio.file.Files.list(Path.of("/proc/self/fd"))
                    .filter(p -> log.equals(tryReadLink(p))).findFirst().orElseThrow();
            StatusCommand status = new StatusCommand(List.of(registry), table, Clock.systemUTC());
            status.logDescriptorOf(pid -> fd);
            assertEquals(0, run(status, "/mnt/logged"));
            assertFalse(out.toString().contains("the log"), out.toString());

            Files.delete(log);
            out.getBuffer().setLength(0);
            assertEquals(0, run(status, "/mnt/logged"), "still active");
            assertTrue(out.toString().contains("/mnt/logged: the log " + log + " was deleted while the daemon writes to it:"
                    + " kill -HUP 7 opens it again\n"), out.toString());
            Files.writeString(log, "made anew by someone\n");
            out.getBuffer().setLength(0);
            run(status, "/mnt/logged");
            assertTrue(out.toString().contains("the log " + log + " was replaced"), out.toString());
        }
    }

    private static Path tryReadLink(Path p) {
        try {
            return Files.readSymbolicLink(p);
        } catch (java.io.IOException | RuntimeException e) {
            return null;
        }
    }

    /**
     * A daemon whose socket's backlog is full (any user can make one, in a registry of their own)
     * held root's status for ever in its connect: it is asked within the limit, connect included.
     */
    @Test
    void aSocketThatTakesNoConnectionHoldsStatusNoLongerThanItsLimit() throws Exception {
        Path path = tmp.resolve("stats-full.sock");
        try (java.nio.channels.ServerSocketChannel full = java.nio.channels.ServerSocketChannel.open(java.net.StandardProtocolFamily.UNIX)) {
            full.bind(java.net.UnixDomainSocketAddress.of(path), 1);
            List<java.nio.channels.SocketChannel> queued = new java.util.ArrayList<>();
            try {
                for (int i = 0; i < 16; i++) { // never accepted: the backlog fills, and a blocking connect would wait
                    java.nio.channels.SocketChannel c = java.nio.channels.SocketChannel.open(java.net.StandardProtocolFamily.UNIX);
                    queued.add(c);
                    c.configureBlocking(false);
                    try {
                        c.connect(java.net.UnixDomainSocketAddress.of(path));
                    } catch (java.io.IOException full2) {
                        break;
                    }
                }
                assertEquals(null, org.junit.jupiter.api.Assertions.assertTimeoutPreemptively(java.time.Duration.ofSeconds(10),
                        () -> StatsSocket.readWithin(path, java.time.Duration.ofMillis(200))));
            } finally {
                for (java.nio.channels.SocketChannel c : queued) {
                    c.close();
                }
            }
        }
    }

    @Test
    void aNamespaceOnS3ShowsItsBucketAsTheStore() throws Exception {
        Path table = Files.writeString(tmp.resolve("s3mounts"), "chibifs /mnt/s3 fuse.chibifs rw 0 0\n");
        MountRegistry registry = new MountRegistry(tmp.resolve("s3reg"), table, pid -> true);
        registry.write(new MountRecord(Path.of("/mnt/s3"), 7, MountRecord.MODE_CONTEXT, "planner", "", null,
                Path.of("/h"), Path.of("/h/vfs"), Instant.parse("2025-01-01T11:00:00Z"), "", "stderr",
                "/=s3://team/chibi /scratch=memory:64M"));
        assertEquals(0, run(new StatusCommand(List.of(registry), table, Clock.systemUTC())));
        String text = out.toString();
        assertTrue(text.matches("(?s).*\n/mnt/s3\\s+active\\s+7\\s+\\S+\\s+context=planner\\s+served\\s+s3://team/chibi\n"
                + "/mnt/s3: also /scratch=memory:64M\n.*"), text);
    }

    @Test
    void aMountpointShowsThatMountAloneAndExitsByWhetherItIsActive() throws Exception {
        assertEquals(0, run(command(), "/mnt/chibi"));
        assertEquals(2, out.toString().lines().count(), out.toString());
        assertTrue(out.toString().contains("/mnt/chibi "), out.toString());
        out.getBuffer().setLength(0);
        assertEquals(1, run(command(), "/mnt/planner"), "stale");
        assertTrue(out.toString().matches("(?s).*\n/mnt/planner\\s+stale\\s.*"), out.toString());
        out.getBuffer().setLength(0);
        assertEquals(1, run(command(), "/mnt/none"));
        assertEquals("no chibifs mount at /mnt/none\n", out.toString());
        out.getBuffer().setLength(0);
        assertEquals(1, run(command(), "--json", "/mnt/none"));
        assertEquals("[ ]\n", out.toString());
    }

    /**
     * Any user can plant a record in a registry of their own, and root's status reads them all: its fields went
     * to root's terminal raw, so an escape in a mountpoint retitled, cleared and recoloured it.
     */
    @Test
    void fieldsAnyUserCanPlantAreShownEscapedInTheTableAndAsJsonInJson() throws Exception {
        Path table = Files.writeString(tmp.resolve("planted-mounts"), "");
        MountRegistry registry = new MountRegistry(tmp.resolve("planted"), table, pid -> true);
        String mountpoint = "/tmp/fake\u001b]0;PWNED\u0007\u001b[2J\u001b[31mRED";
        registry.write(new MountRecord(Path.of(mountpoint), 999999, MountRecord.MODE_CONTEXT, "p\u009b2J", "", null,
                Path.of("/h"), Path.of("/h/vfs"), Instant.parse("2025-01-01T11:00:00Z"), "", "stderr",
                "/=s3://b/x\u001b[2J /scratch=memory:64M\u007f"));
        assertEquals(0, run(new StatusCommand(List.of(registry), table, Clock.systemUTC())));
        String text = out.toString();
        assertTrue(text.chars().allMatch(c -> c == '\n' || c >= 0x20 && c != 0x7f && (c < 0x80 || c > 0x9f)), text);
        assertTrue(text.contains("/tmp/fake\\033]0;PWNED\\a\\033[2J\\033[31mRED  "), text);
        assertTrue(text.contains("context=p\\302\\2332J"), text);
        assertTrue(text.contains("s3://b/x\\033[2J\n"), text);
        assertTrue(text.contains(": also /scratch=memory:64M\\177\n"), text);

        out.getBuffer().setLength(0);
        assertEquals(0, run(new StatusCommand(List.of(registry), table, Clock.systemUTC()), "--json"));
        String json = out.toString();
        // Jackson escapes C0 controls itself, but wrote DEL and C1 (0x9b is a terminal's CSI) as they are
        assertTrue(json.chars().allMatch(c -> c == '\n' || c >= 0x20 && c < 0x7f), json);
        JsonNode row = new ObjectMapper().readTree(json).get(0);
        assertEquals(mountpoint, row.get("mountpoint").asText(), "JSON carries the value exactly");
        assertEquals("p\u009b2J", row.get("context").asText());
    }

    /**
     * Any user can write a record in their own registry naming a process of theirs that runs (a sleep)
     * and any mountpoint: root's status showed it as a detached mount of that path, which is in no
     * mount table, among root's own rows. A daemon serving a mount holds /dev/fuse: one that does not
     * is a leftover, and the row says whose registry it came from and what to do.
     */
    @Test
    void aPlantedRecordOfAnUnmountedPathIsStaleAndSaysWhoseRegistryAndWhatToDo() throws Exception {
        Path table = Files.writeString(tmp.resolve("planted-mounts"), "");
        MountRegistry registry = new MountRegistry(tmp.resolve("planted"), table, pid -> true, pid -> false);
        registry.write(new MountRecord(Path.of("/root/secret-mount"), 4242, MountRecord.MODE_CONTEXT, "root", "", null,
                Path.of("/root/.chibi"), Path.of("/root/.chibi/vfs"), Instant.parse("2025-01-01T11:00:00Z"), "", "stderr"));
        int root = registry.owner() + 1; // status run by another uid than the registry's
        assertEquals(0, run(new StatusCommand(List.of(registry), table, Clock.systemUTC(), root)));
        String text = out.toString();
        assertTrue(text.matches("(?s).*\n/root/secret-mount\s+stale\s.*"), text);
        String file = registry.fileFor(Path.of("/root/secret-mount")).toString();
        assertTrue(text.contains("/root/secret-mount: from uid " + registry.owner()), text);
        assertTrue(text.contains("'s registry; /root/secret-mount is not mounted, and pid 4242 serves no FUSE mount"
                + " (it holds no /dev/fuse); nothing serves it: remove " + file + "\n"), text);

        out.getBuffer().setLength(0);
        assertEquals(0, run(new StatusCommand(List.of(registry), table, Clock.systemUTC(), root), "--json"));
        JsonNode row = new ObjectMapper().readTree(out.toString()).get(0);
        assertEquals("stale", row.get("state").asText());
        assertEquals(registry.owner(), row.get("registryUid").asInt());
    }

    /**
     * A user's record with a dead pid naming root's active mount was judged stale before anyone asked
     * whose mount that is, and root's status advised {@code umount -l} of its own healthy mount. A
     * record naming another uid's mount is not believed, whatever its pid.
     */
    @Test
    void aDeadPidsRecordNamingAnotherUsersMountIsNotBelievedAndAdvisesNoUnmount() throws Exception {
        Path table = Files.writeString(tmp.resolve("roots-mounts"), "chibifs /mnt/roots fuse.chibifs rw,user_id=4343,group_id=0 0 0\n");
        MountRegistry registry = new MountRegistry(tmp.resolve("users"), table, pid -> false);
        registry.write(new MountRecord(Path.of("/mnt/roots"), 4000000, MountRecord.MODE_CONTEXT, "alice", "", null,
                Path.of("/h"), Path.of("/h/vfs"), Instant.parse("2025-01-01T11:00:00Z"), "", "stderr"));
        assertEquals(0, run(new StatusCommand(List.of(registry), table, Clock.systemUTC(), 4343)));
        String text = out.toString();
        assertFalse(text.contains("umount"), text);
        assertFalse(text.contains("stale"), text);
        assertTrue(text.contains("not believed: /mnt/roots is uid 4343's mount, not uid " + registry.owner() + "'s"), text);
    }

    private MountRecord contextRecord(String mountpoint, long pid) {
        return new MountRecord(Path.of(mountpoint), pid, MountRecord.MODE_CONTEXT, "planner", "", null,
                tmp, tmp, Instant.parse("2025-01-01T11:00:00Z"), "", "stderr");
    }

    /**
     * Status beside mounts stopping: it read the mount table before the records and pids, so a daemon
     * unmounted cleanly between the two (its record removed, then its exit) showed as stale with
     * {@code umount -l} advice, and so did a killed daemon's mount unmounted meanwhile. The table is
     * read after: here each stops just as status asks whether its pid runs.
     */
    @Test
    void aMountStoppingWhileStatusReadsIsNoStaleRowAdvisingUmount() throws Exception {
        Path table = Files.writeString(tmp.resolve("stopping-mounts"), "chibifs /mnt/clean fuse.chibifs rw 0 0\n"
                + "chibifs /mnt/killed fuse.chibifs rw 0 0\n");
        Path dir = tmp.resolve("stopping");
        java.util.Set<Long> stopped = java.util.concurrent.ConcurrentHashMap.newKeySet();
        MountRegistry[] registry = new MountRegistry[1];
        registry[0] = new MountRegistry(dir, table, pid -> {
            if (stopped.add(pid)) {
                try {
                    // 31 unmounts cleanly and removes its record; 32 was killed, and its mount is unmounted now
                    Files.writeString(table, Files.readString(table).replace("chibifs /mnt/" + (pid == 31 ? "clean" : "killed")
                            + " fuse.chibifs rw 0 0\n", ""));
                    if (pid == 31) {
                        registry[0].remove(Path.of("/mnt/clean"), 31);
                    }
                } catch (java.io.IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            }
            return false;
        });
        registry[0].write(contextRecord("/mnt/clean", 31));
        registry[0].write(contextRecord("/mnt/killed", 32));
        assertEquals(0, run(new StatusCommand(List.of(registry[0]), table, Clock.systemUTC())));
        String text = out.toString();
        assertFalse(text.contains("left without a daemon"), text); // no mount to clear: only the record, which umount clears
        assertFalse(text.contains("/mnt/clean"), text);
        assertTrue(text.contains("/mnt/killed: pid 32 is not running; nothing serves it: chibifs umount /mnt/killed"), text);
    }

    /** A mount starting while status reads is in the table before its record: it was shown as unregistered. */
    @Test
    void aMountStartingWhileStatusReadsIsNotUnregistered() throws Exception {
        Path table = Files.writeString(tmp.resolve("starting-mounts"), "chibifs /mnt/up fuse.chibifs rw 0 0\n");
        Path dir = tmp.resolve("starting");
        MountRegistry[] registry = new MountRegistry[1];
        java.util.concurrent.atomic.AtomicBoolean started = new java.util.concurrent.atomic.AtomicBoolean();
        registry[0] = new MountRegistry(dir, table, pid -> {
            if (started.compareAndSet(false, true)) {
                try {
                    // after the listing: /mnt/new is mounted, then its daemon writes its record
                    Files.writeString(table, "chibifs /mnt/new fuse.chibifs rw 0 0\n", java.nio.file.StandardOpenOption.APPEND);
                    registry[0].write(contextRecord("/mnt/new", 42));
                } catch (java.io.IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            }
            return true;
        });
        registry[0].write(contextRecord("/mnt/up", 41));
        assertEquals(0, run(new StatusCommand(List.of(registry[0]), table, Clock.systemUTC())));
        String text = out.toString();
        assertFalse(text.contains("unregistered"), text);
        assertTrue(text.matches("(?s).*\n/mnt/new\\s+active\\s+42\\s.*"), text);
        assertTrue(text.matches("(?s).*\n/mnt/up\\s+active\\s+41\\s.*"), text);
    }

    /** A daemon that holds /dev/fuse after its mount was unmounted lazily is detached, as before; your own rows name no registry. */
    @Test
    void aDaemonHoldingFuseWhoseMountIsGoneIsDetached() throws Exception {
        Path table = Files.writeString(tmp.resolve("lazy-mounts"), "");
        MountRegistry registry = new MountRegistry(tmp.resolve("lazy"), table, pid -> true, pid -> pid == 4242);
        registry.write(new MountRecord(Path.of("/mnt/lazy"), 4242, MountRecord.MODE_CONTEXT, "planner", "", null,
                Path.of("/h"), Path.of("/h/vfs"), Instant.parse("2025-01-01T11:00:00Z"), "", "stderr"));
        assertEquals(0, run(new StatusCommand(List.of(registry), table, Clock.systemUTC())));
        String text = out.toString();
        assertTrue(text.matches("(?s).*\n/mnt/lazy\s+detached\s.*"), text);
        assertFalse(text.contains("registry"), text);
    }

    @Test
    void nothingMountedSaysSo() throws Exception {
        Path table = Files.writeString(tmp.resolve("empty"), "");
        MountRegistry none = new MountRegistry(tmp.resolve("none"), table, pid -> true);
        assertEquals(0, run(new StatusCommand(List.of(none), table, Clock.systemUTC())));
        assertEquals("no chibifs mounts\n", out.toString());
    }

    @Test
    void uptimeUsesTheTwoLargestUnits() {
        assertEquals("42s", StatusCommand.uptime(42));
        assertEquals("5m12s", StatusCommand.uptime(312));
        assertEquals("2h03m", StatusCommand.uptime(7380));
        assertEquals("3d04h", StatusCommand.uptime(3 * 86400 + 4 * 3600 + 59));
    }

    @Test
    void statsOfAPathNoDaemonServesIsOneLineAndExitCodeNotFound() {
        Cli.Result r = new Cli(tmp.resolve("home")).run("stats", tmp.resolve("not-a-mount").toString());
        assertEquals(ExitCodes.NOT_FOUND, r.code(), r.toString());
        assertEquals("chibifs: no running chibifs daemon is registered for " + tmp.resolve("not-a-mount")
                + " (chibifs status lists this host's mounts)\n", r.err());
    }

    @Test
    void traceOfAPathNoDaemonServesIsOneLineAndABadFilterNamesTheValueAndTheRule() {
        Cli cli = new Cli(tmp.resolve("home"));
        Cli.Result r = cli.run("trace", tmp.resolve("not-a-mount").toString());
        assertEquals(ExitCodes.NOT_FOUND, r.code(), r.toString());
        assertEquals("chibifs: no running chibifs daemon is registered for " + tmp.resolve("not-a-mount")
                + " (chibifs status lists this host's mounts)\n", r.err());
        r = cli.run("trace", "--opcode", "lookup,FROBNICATE", tmp.toString());
        assertEquals(ExitCodes.USAGE, r.code(), r.toString());
        assertTrue(r.err().startsWith("chibifs: invalid --opcode 'FROBNICATE': one of ACCESS, "), r.err());
        assertTrue(r.err().contains(" LOOKUP, ") && !r.err().contains("FORGET"), r.err());
        r = cli.run("trace", "--context", "planner,SYSTEM,GUEST,no one", tmp.toString());
        assertEquals(ExitCodes.USAGE, r.code(), r.toString());
        assertTrue(r.err().startsWith("chibifs: ") && r.err().contains("'no one'"), r.err());
        r = cli.run("trace", "--path", "shared", tmp.toString());
        assertEquals(ExitCodes.USAGE, r.code(), r.toString());
        assertEquals("chibifs: --path: invalid VFS path 'shared': a VFS path must start with '/'\n", r.err());
    }

    /** A mount table and a registry of one mount, /mnt/NAME, whose daemon is pid 7. */
    private record OneMount(Path table, MountRegistry registry) {
    }

    /** As {@link #s3MountOfPid7}, its store the directory {@code vfs} (a home's vfs). */
    private OneMount localMountOfPid7(String name, Path vfs) throws java.io.IOException {
        Path table = Files.writeString(tmp.resolve(name + "-mounts"), "chibifs /mnt/" + name + " fuse.chibifs rw 0 0\n");
        MountRegistry registry = new MountRegistry(tmp.resolve(name + "-reg"), table, pid -> true);
        registry.write(new MountRecord(Path.of("/mnt/" + name), 7, MountRecord.MODE_CONTEXT, "planner", "", null,
                vfs.getParent(), vfs, Instant.parse("2025-01-01T11:00:00Z"), "", "stderr", "/=" + vfs));
        return new OneMount(table, registry);
    }

    private OneMount s3MountOfPid7(String name) throws java.io.IOException {
        Path table = Files.writeString(tmp.resolve(name + "-mounts"), "chibifs /mnt/" + name + " fuse.chibifs rw 0 0\n");
        MountRegistry registry = new MountRegistry(tmp.resolve(name + "-reg"), table, pid -> true);
        registry.write(new MountRecord(Path.of("/mnt/" + name), 7, MountRecord.MODE_CONTEXT, "planner", "", null,
                tmp.resolve("h"), tmp.resolve("h/vfs"), Instant.parse("2025-01-01T11:00:00Z"), "", "stderr",
                "/=s3://team/chibi"));
        return new OneMount(table, registry);
    }
}
