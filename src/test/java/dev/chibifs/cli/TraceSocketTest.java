package dev.chibifs.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.chibifs.fuse.RequestTrace;
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
            for (int i = 0; i < TraceSocket.MOST_FOLLOWERS; i++) {
                SocketChannel c = SocketChannel.open(UnixDomainSocketAddress.of(path));
                followers.add(c);
                assertTrue(firstLine(c).has("following"), "follower " + i);
            }
            String busy = TraceSocket.MOST_FOLLOWERS + " traces already follow this mount; end one first";
            try (SocketChannel past = SocketChannel.open(UnixDomainSocketAddress.of(path))) {
                BufferedReader in = reader(past);
                assertEquals(busy, JSON.readTree(in.readLine()).get(TraceSocket.BUSY).asText());
                assertNull(in.readLine(), "the daemon closes it: it holds no thread");
            }

            StringWriter err = new StringWriter();
            CommandLine cl = new CommandLine(new TraceCommand(mp -> path));
            cl.setOut(new PrintWriter(new StringWriter()));
            cl.setErr(new PrintWriter(err, true));
            cl.setExecutionExceptionHandler(new ErrorHandler());
            assertEquals(ExitCodes.FAILURE, cl.execute(tmp.toString()));
            assertEquals("chibifs: " + busy + "\n", err.toString());

            followers.remove(0).close();
            // the ended follower's thread notices its client gone at its next idle check, then frees its place
            JsonNode first;
            do {
                try (SocketChannel c = SocketChannel.open(UnixDomainSocketAddress.of(path))) {
                    first = firstLine(c);
                }
            } while (first.has(TraceSocket.BUSY));
            assertTrue(first.has("following"), first.toString());
        } finally {
            for (SocketChannel c : followers) {
                c.close();
            }
        }
    }

    private static JsonNode firstLine(SocketChannel c) throws IOException {
        return JSON.readTree(reader(c).readLine());
    }

    private static BufferedReader reader(SocketChannel c) {
        return new BufferedReader(new InputStreamReader(Channels.newInputStream(c), StandardCharsets.UTF_8));
    }
}
