package dev.chibifs.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.chibifs.fuse.RequestTrace;
import dev.chibifs.sys.Linux;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.nio.file.Path;
import java.time.Duration;
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
 * Requests never wait for a follower: each has a queue of {@link #BEHIND_AT_MOST} events, past
 * which events are dropped and counted, and the follower gets {@code {"lost":N}} before the next
 * line it is sent. A follower whose client takes no bytes for {@link #STALLED_AFTER} is dropped.
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
    /**
     * How long a follower's client may take no bytes, its socket's buffer full, before it is dropped
     * and its place freed (README's trace paragraph). A client that connects and never reads, or one
     * stopped (SIGSTOP, a terminal's Ctrl-S), held its place for ever, and 8 of them left no trace in.
     */
    static final Duration STALLED_AFTER = Duration.ofSeconds(30);
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
        return serve(path, trace, STALLED_AFTER);
    }

    /** As {@link #serve(Path, RequestTrace)}, dropping a follower whose client takes no bytes for {@code stalledAfter} (tests). */
    static StatsSocket serve(Path path, RequestTrace trace, Duration stalledAfter) throws IOException {
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
                    follow(client, trace, stalledAfter.toNanos());
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

    /** Writes each event to {@code client} until it goes away, or takes nothing for {@code stalledAfter} nanoseconds. */
    private static void follow(SocketChannel client, RequestTrace trace, long stalledAfter) {
        try (client; Selector writable = Selector.open(); RequestTrace.Listener events = trace.listen(BEHIND_AT_MOST)) {
            // never blocking: a write the client does not take waits in the selector, for a while only
            client.configureBlocking(false);
            client.register(writable, SelectionKey.OP_WRITE);
            // said once listening: every request served from now on is on its way to the client
            send(client, writable, Map.of("following", true), stalledAfter);
            ByteBuffer probe = ByteBuffer.allocate(1);
            while (true) {
                RequestTrace.Event e = events.next(IDLE_CHECK_MILLIS, TimeUnit.MILLISECONDS);
                long lost = events.lost();
                if (lost > 0) {
                    send(client, writable, Map.of("lost", lost), stalledAfter);
                }
                if (e != null) {
                    send(client, writable, lineOf(e), stalledAfter);
                } else if (client.read(probe.clear()) < 0) {
                    return; // it never writes: a read that ends is its close
                }
            }
        } catch (Stalled stalled) {
            LOG.info("trace follower dropped: {}", stalled.getMessage());
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
        ByteBuffer b = lineBytes(line);
        while (b.hasRemaining()) {
            client.write(b);
        }
    }

    private static ByteBuffer lineBytes(Object line) throws IOException {
        byte[] json = JSON.writeValueAsBytes(line);
        return ByteBuffer.allocate(json.length + 1).put(json).put((byte) '\n').flip();
    }

    /**
     * Writes {@code line} to the non-blocking {@code client}, waiting for room for as long as it takes
     * bytes; {@link Stalled} once it took none for {@code stalledAfter} nanoseconds.
     */
    private static void send(SocketChannel client, Selector writable, Object line, long stalledAfter) throws IOException {
        ByteBuffer b = lineBytes(line);
        long lastTaken = System.nanoTime();
        while (b.hasRemaining()) {
            if (client.write(b) > 0) {
                lastTaken = System.nanoTime();
                continue;
            }
            long left = stalledAfter - (System.nanoTime() - lastTaken);
            if (left <= 0) {
                throw new Stalled("its client took no bytes for " + Duration.ofNanos(stalledAfter).toMillis() + " ms");
            }
            writable.select(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
            writable.selectedKeys().clear();
        }
    }

    /** A follower whose client took nothing for too long. */
    private static final class Stalled extends IOException {
        private static final long serialVersionUID = 1L;

        Stalled(String message) {
            super(message);
        }
    }
}
