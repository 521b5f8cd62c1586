package dev.chibifs.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.chibifs.fuse.RequestTrace;
import dev.chibifs.sys.Linux;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;

/**
 * Where {@code chibifs trace} follows a running daemon's requests: a Unix socket beside the
 * mount's registry record ({@code trace-<pid>.sock}, in the user's own 0700 directory, as the
 * stats socket). Each connection gets a first line {@code {"following":true}} once it listens,
 * then every request served from then on, one JSON object a line, until it closes; up to
 * {@link #MOST_FOLLOWERS} may follow at once, and one more gets the one line {@code {"busy":"..."}}.
 */
final class TraceSocket {

    private static final Logger LOG = LoggerFactory.getLogger(TraceSocket.class);
    private static final ObjectMapper JSON = new ObjectMapper();
    /** Events a follower may fall behind by before it loses some (a line is about 150 bytes). */
    private static final int BEHIND_AT_MOST = 16_384;
    /** How often a follower with nothing to show checks that its client is still there. */
    private static final long IDLE_CHECK_MILLIS = 250;
    /**
     * Traces that follow one daemon at once (README's trace paragraph). Each holds a thread and about 230 KB for
     * as long as its client keeps the connection: 400 that never read took a daemon from 34 to 434 threads.
     */
    static final int MOST_FOLLOWERS = 8;
    /** The key of the one line a connection past {@link #MOST_FOLLOWERS} gets, saying why it is not followed. */
    static final String BUSY = "busy";

    private TraceSocket() {
    }

    static Path pathFor(MountRegistry registry, long pid) {
        return registry.dir().resolve("trace-" + pid + ".sock");
    }

    /**
     * Serves {@code trace} at {@code path}, each connection followed on a thread of its own, at most
     * {@link #MOST_FOLLOWERS} at once, until closed.
     */
    static StatsSocket serve(Path path, RequestTrace trace) throws IOException {
        Semaphore followers = new Semaphore(MOST_FOLLOWERS);
        return StatsSocket.listen(path, client -> {
            if (!followers.tryAcquire()) {
                // one short line into a socket just made: it fits its buffer, so the accepting thread never waits
                try (client) {
                    write(client, Map.of(BUSY, MOST_FOLLOWERS + " traces already follow this mount; end one first"));
                }
                return;
            }
            Thread t = new Thread(() -> {
                try {
                    follow(client, trace);
                } finally {
                    followers.release();
                }
            }, "chibifs-trace-follower");
            t.setDaemon(true);
            try {
                t.start();
            } catch (RuntimeException | OutOfMemoryError e) {
                followers.release();
                throw e;
            }
        });
    }

    /** Writes each event to {@code client} until it goes away. */
    private static void follow(SocketChannel client, RequestTrace trace) {
        try (client; RequestTrace.Listener events = trace.listen(BEHIND_AT_MOST)) {
            // said once listening: every request served from now on is on its way to the client
            write(client, Map.of("following", true));
            ByteBuffer probe = ByteBuffer.allocate(1);
            while (true) {
                RequestTrace.Event e = events.next(IDLE_CHECK_MILLIS, TimeUnit.MILLISECONDS);
                long lost = events.lost();
                if (lost > 0) {
                    write(client, Map.of("lost", lost));
                }
                if (e != null) {
                    write(client, lineOf(e));
                } else if (gone(client, probe)) {
                    return;
                }
            }
        } catch (IOException closedByClient) {
            LOG.debug("trace follower ends: {}", closedByClient.toString());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (RuntimeException e) {
            LOG.warn("trace follower failed", e);
        }
    }

    private static Map<String, Object> lineOf(RequestTrace.Event e) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("at", e.at().toString());
        m.put("context", e.caller());
        m.put("pid", e.pid());
        m.put("program", e.program());
        m.put("opcode", e.opcode());
        m.put("paths", e.target().paths());
        m.put("detail", e.target().detail());
        m.put("answer", e.waiting() ? "waiting" : e.errno() == 0 ? "ok" : Linux.errnoName(e.errno()));
        m.put("refused", e.refusedBy());
        m.put("micros", e.micros());
        return m;
    }

    private static void write(SocketChannel client, Object line) throws IOException {
        byte[] json = JSON.writeValueAsBytes(line);
        ByteBuffer b = ByteBuffer.allocate(json.length + 1).put(json).put((byte) '\n').flip();
        while (b.hasRemaining()) {
            client.write(b);
        }
    }

    /** Whether the client closed its end: it never writes, so a read that ends is its close. */
    private static boolean gone(SocketChannel client, ByteBuffer probe) throws IOException {
        client.configureBlocking(false);
        try {
            return client.read(probe.clear()) < 0;
        } finally {
            client.configureBlocking(true);
        }
    }
}
