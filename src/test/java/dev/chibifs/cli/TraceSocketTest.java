package dev.chibifs.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.chibifs.fuse.RequestTrace;
import dev.chibifs.fuse.TraceEvents;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.Channels;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The daemon's trace socket, served as a mount serves it, with no mount behind it. */
@Timeout(60)
class TraceSocketTest {

    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    Path tmp;

    /**
     * Each follower held a thread for as long as its client kept the connection, with no limit: 400 that never read
     * took a daemon from 34 to 434 threads. One past the limit gets one line, which trace prints and exits 1 with,
     * and the socket serves the next follower once one has ended.
     */
    @Test
    void oneTracePastTheLimitIsToldWhyAndTheNextIsServedOnceOneEnds() throws Exception {
        Path path = tmp.resolve("trace.sock");
        List<SocketChannel> followers = new ArrayList<>();
        try (StatsSocket served = TraceSocket.serve(path, new RequestTrace())) {
            followEveryPlace(path, followers);
            String busy = TraceSocket.MOST_FOLLOWERS + " traces already follow this mount; end one first";
            try (SocketChannel past = SocketChannel.open(UnixDomainSocketAddress.of(path))) {
                BufferedReader in = reader(past);
                assertEquals(busy, JSON.readTree(in.readLine()).get(TraceSocket.BUSY).asText());
                assertNull(in.readLine(), "the daemon closes it: it holds no thread");
            }

            StringWriter err = new StringWriter();
            CommandLine cl = new CommandLine(new TraceCommand(mp -> new StatsCommand.Served(mp, path)));
            cl.setOut(new PrintWriter(new StringWriter()));
            cl.setErr(new PrintWriter(err, true));
            cl.setExecutionExceptionHandler(new ErrorHandler());
            assertEquals(ExitCodes.FAILURE, cl.execute(tmp.toString()));
            assertEquals("chibifs: " + busy + "\n", err.toString());

            followers.remove(0).close();
            // the ended follower's thread notices its client gone at its next idle check, then frees its place
            awaitAFreePlace(path);
        } finally {
            for (SocketChannel c : followers) {
                c.close();
            }
        }
    }

    /**
     * {@code chibifs trace /mnt/chibi/shared}, a path in the mount, said no daemon was registered for
     * it; it traces the mount it is in, only the requests about that path or under it.
     */
    @Test
    void aPathInTheMountTracesTheRequestsAboutIt() throws Exception {
        Path path = tmp.resolve("trace.sock");
        RequestTrace trace = new RequestTrace();
        try (StatsSocket served = TraceSocket.serve(path, trace)) {
            StringWriter out = new StringWriter();
            StringWriter err = new StringWriter();
            CommandLine cl = new CommandLine(new TraceCommand(given -> new StatsCommand.Served(tmp, path)));
            cl.setOut(new PrintWriter(out, true));
            cl.setErr(new PrintWriter(err, true));
            cl.setExecutionExceptionHandler(new ErrorHandler());
            java.util.concurrent.CompletableFuture<Integer> ended = java.util.concurrent.CompletableFuture.supplyAsync(
                    () -> cl.execute(tmp.resolve("shared").toString(), "--json", "--count", "1"));
            long until = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(10);
            while (!ended.isDone() && System.nanoTime() < until) {
                TraceEvents.serve(trace, "/home/alice/x", 1); // lines go out only while it follows
                TraceEvents.serve(trace, "/shared/x", 1);
                java.util.concurrent.locks.LockSupport.parkNanos(10_000_000);
            }
            assertEquals(ExitCodes.OK, ended.get(1, java.util.concurrent.TimeUnit.SECONDS), err.toString());
            assertEquals("/shared/x", JSON.readTree(out.toString()).get("paths").get(0).asText());

            // with --path as well, one of the two is a mistake: said, not guessed
            cl.setOut(new PrintWriter(new StringWriter()));
            StringWriter usage = new StringWriter();
            cl.setErr(new PrintWriter(usage, true));
            assertEquals(ExitCodes.USAGE, cl.execute(tmp.resolve("shared").toString(), "--path", "/home"));
            assertTrue(usage.toString().contains("--path '/home' beside " + tmp.resolve("shared") + ", a path in " + tmp),
                    usage.toString());
        }
    }

    /** Standard output whose reader has gone: every write fails, as one to a closed pipe does (EPIPE). */
    static PrintWriter brokenPipe() {
        return new PrintWriter(new java.io.OutputStreamWriter(new java.io.OutputStream() {
            @Override
            public void write(int b) throws IOException {
                throw new IOException("Broken pipe");
            }

            @Override
            public void write(byte[] b, int off, int len) throws IOException {
                throw new IOException("Broken pipe");
            }
        }, StandardCharsets.UTF_8), true);
    }

    /**
     * {@code chibifs trace M | head -1} ran on once head had gone, for ever, each such trace holding one of
     * the daemon's places: it ends at the first line it cannot write, with 141 (128 + SIGPIPE).
     */
    @Test
    void aTraceWhoseReaderHasGoneEnds() throws Exception {
        Path path = tmp.resolve("trace.sock");
        RequestTrace trace = new RequestTrace();
        try (StatsSocket served = TraceSocket.serve(path, trace)) {
            CommandLine cl = new CommandLine(new TraceCommand(mp -> new StatsCommand.Served(mp, path)));
            cl.setOut(brokenPipe());
            cl.setErr(new PrintWriter(new StringWriter(), true));
            cl.setExecutionExceptionHandler(new ErrorHandler());
            java.util.concurrent.CompletableFuture<Integer> ended =
                    java.util.concurrent.CompletableFuture.supplyAsync(() -> cl.execute(tmp.toString()));
            long until = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(10);
            while (!ended.isDone() && System.nanoTime() < until) {
                TraceEvents.serve(trace, "/shared/x", 10); // lines go out only while it follows: served until it ends
                java.util.concurrent.locks.LockSupport.parkNanos(10_000_000);
            }
            assertTrue(ended.isDone(), "the trace still runs with nobody reading it");
            assertEquals(ExitCodes.READER_GONE, ended.join());
        }
    }

    /**
     * A follower whose client stops taking bytes (it never reads, or was stopped) held its place for
     * ever once its socket's buffer filled: 8 of them, and no trace could follow the mount. One that
     * takes nothing for {@link TraceSocket#STALLED_AFTER} (here 200 ms) is dropped, its place freed;
     * the requests never waited for it.
     */
    @Test
    void aFollowerWhoseClientTakesNothingIsDroppedAndItsPlaceFreed() throws Exception {
        Path path = tmp.resolve("trace.sock");
        RequestTrace trace = new RequestTrace();
        List<SocketChannel> followers = new ArrayList<>();
        try (StatsSocket served = TraceSocket.serve(path, trace, java.time.Duration.ofMillis(200))) {
            followEveryPlace(path, followers);
            // far more than a socket's buffer holds (a line is about 150 bytes), served without waiting
            TraceEvents.serve(trace, "/shared/" + "x".repeat(100), 50_000);
            awaitEveryPlaceFreed(path);
            // what the dropped one's socket held is still read, then why it was dropped and what it lost, then its end
            BufferedReader dropped = reader(followers.get(0));
            int lines = 0;
            long lost = 0;
            JsonNode last = null;
            for (String line; (line = dropped.readLine()) != null; ) {
                last = JSON.readTree(line);
                if (last.has(TraceSocket.DROPPED)) {
                    assertNull(dropped.readLine(), "the end follows it");
                    break;
                }
                lost += last.path(TraceSocket.LOST).asLong();
                lines += last.has(TraceSocket.LOST) ? 0 : 1;
            }
            assertTrue(lines > 0 && lines < 50_000, lines + " lines");
            assertTrue(last != null && last.has(TraceSocket.DROPPED), "a dropped trace was told nothing: " + last);
            assertEquals("it took no bytes for 200 ms", last.get(TraceSocket.DROPPED).asText());
            long lastLost = last.get(TraceSocket.LOST).asLong();
            // the requests served after it was dropped are in no count: at most all
            assertTrue(lastLost > 0 && lines + lost + lastLost <= 50_000, lines + " shown, " + lost + " + " + lastLost + " lost");
        } finally {
            for (SocketChannel c : followers) {
                c.close();
            }
        }
    }

    /**
     * A trace stopped (SIGSTOP) long enough to be dropped, then continued, printed the lines its socket
     * held, then "no longer served", and exited 0, as if the daemon had gone. Now it says it was dropped
     * and how many requests it lost, and exits 1.
     */
    @Test
    void aDroppedTraceSaysSoAndFails() throws Exception {
        Path path = tmp.resolve("trace.sock");
        RequestTrace trace = new RequestTrace();
        try (StatsSocket served = TraceSocket.serve(path, trace, java.time.Duration.ofMillis(200))) {
            // traces stopped after their first line, their sockets filled: dropped, each
            List<SocketChannel> followers = new ArrayList<>();
            followEveryPlace(path, followers);
            TraceEvents.serve(trace, "/shared/" + "x".repeat(100), 50_000);
            awaitEveryPlaceFreed(path);
            for (SocketChannel c : followers.subList(1, followers.size())) {
                c.close();
            }
            // one continued: the CLI reads what its connection holds
            SocketChannel stopped = followers.get(0);
            Path relay = tmp.resolve("relay.sock");
            // hands the CLI the stopped connection's bytes: a server socket of the test's whose one client gets them
            try (java.nio.channels.ServerSocketChannel server = java.nio.channels.ServerSocketChannel.open(
                    java.net.StandardProtocolFamily.UNIX).bind(UnixDomainSocketAddress.of(relay))) {
                java.util.concurrent.CompletableFuture<Void> pumped = java.util.concurrent.CompletableFuture.runAsync(() -> {
                    try (SocketChannel cli = server.accept(); stopped) {
                        cli.write(java.nio.ByteBuffer.wrap("{\"following\":true}\n".getBytes(StandardCharsets.UTF_8)));
                        java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(8192);
                        while (stopped.read(b.clear()) >= 0) {
                            b.flip();
                            while (b.hasRemaining()) {
                                cli.write(b);
                            }
                        }
                    } catch (IOException e) {
                        throw new java.io.UncheckedIOException(e);
                    }
                });
                StringWriter err = new StringWriter();
                CommandLine cl = new CommandLine(new TraceCommand(mp -> new StatsCommand.Served(mp, relay)));
                cl.setOut(new PrintWriter(new StringWriter()));
                cl.setErr(new PrintWriter(err, true));
                cl.setExecutionExceptionHandler(new ErrorHandler());
                assertEquals(ExitCodes.FAILURE, cl.execute(tmp.toString()));
                pumped.join();
                String said = err.toString();
                assertTrue(said.matches("(?s).*chibifs: the daemon of " + java.util.regex.Pattern.quote(tmp.toString())
                        + " dropped this trace \\(it took no bytes for 200 ms\\): [1-9][0-9]* requests not shown, nor any"
                        + " served since; it serves on\n"), said);
                assertFalse(said.contains("no longer served"), said);
            }
        }
    }

    /**
     * A follower that falls behind by more than its queue loses events, counted, rather than hold a
     * request; once it reads again it is told how many, and what it was sent and lost add up.
     */
    @Test
    void aFollowerThatFallsBehindIsToldHowManyLinesItLost() throws Exception {
        Path path = tmp.resolve("trace.sock");
        RequestTrace trace = new RequestTrace();
        int served = 40_000;
        try (StatsSocket socket = TraceSocket.serve(path, trace);
             SocketChannel c = SocketChannel.open(UnixDomainSocketAddress.of(path))) {
            BufferedReader in = reader(c);
            assertTrue(JSON.readTree(in.readLine()).has("following"));
            TraceEvents.serve(trace, "/shared/a", served); // while it reads nothing
            long events = 0;
            long lost = 0;
            while (events + lost < served) {
                JsonNode line = JSON.readTree(in.readLine());
                if (line.has("lost")) {
                    lost += line.get("lost").asLong();
                } else {
                    assertEquals("GETATTR", line.get("opcode").asText(), line.toString());
                    events++;
                }
            }
            assertTrue(lost > 0, "lost " + lost + " of " + served);
        }
    }

    private static JsonNode firstLine(SocketChannel c) throws IOException {
        return JSON.readTree(reader(c).readLine());
    }

    private static BufferedReader reader(SocketChannel c) {
        return new BufferedReader(new InputStreamReader(Channels.newInputStream(c), StandardCharsets.UTF_8));
    }

    /** Connects followers to every place the socket has, each told it follows. */
    private static void followEveryPlace(Path path, List<SocketChannel> followers) throws IOException {
        for (int i = 0; i < TraceSocket.MOST_FOLLOWERS; i++) {
            SocketChannel c = SocketChannel.open(UnixDomainSocketAddress.of(path));
            followers.add(c);
            assertTrue(firstLine(c).has("following"), "follower " + i);
        }
    }

    /**
     * Connects followers, one more every 20 ms (the test's timeout bounds it), each kept while it
     * waits, until as many as may follow are followed at once: every earlier follower has been dropped.
     */
    private static void awaitEveryPlaceFreed(Path path) throws IOException {
        List<SocketChannel> followed = new ArrayList<>();
        try {
            while (followed.size() < TraceSocket.MOST_FOLLOWERS) {
                SocketChannel c = SocketChannel.open(UnixDomainSocketAddress.of(path));
                if (firstLine(c).has("following")) {
                    followed.add(c); // kept: a place given back takes the follower a while to notice
                } else {
                    c.close();
                    java.util.concurrent.locks.LockSupport.parkNanos(20_000_000);
                }
            }
        } finally {
            for (SocketChannel c : followed) {
                c.close();
            }
        }
    }

    /** Asks again, every 20 ms (the test's timeout bounds it), until a connection is followed, not told busy. */
    private static void awaitAFreePlace(Path path) throws IOException {
        JsonNode first;
        do {
            try (SocketChannel c = SocketChannel.open(UnixDomainSocketAddress.of(path))) {
                first = firstLine(c);
            }
            java.util.concurrent.locks.LockSupport.parkNanos(20_000_000);
        } while (first.has(TraceSocket.BUSY));
        assertTrue(first.has("following"), first.toString());
    }
}
