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
 * line it is sent. A follower whose client takes no bytes for {@link #STALLED_AFTER} is dropped: its
 * place is freed at once, and once its client reads again (within {@link #DROPPED_TOLD_WITHIN}) it
 * gets one last line, {@code {"dropped":"why","lost":N}}, then the end.
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
    /** The key of a dropped follower's last line, saying why; beside it {@link #LOST}, the requests it was not sent. */
    static final String DROPPED = "dropped";
    static final String LOST = "lost";
    /**
     * How long a dropped follower's socket is kept, holding a thread but no queue, for its client to
     * read again and be told: a trace stopped (SIGSTOP) and continued read its lines, then took the end
     * for the daemon's, "no longer served", and exited 0, the requests it missed never said.
     */
    static final Duration DROPPED_TOLD_WITHIN = Duration.ofMinutes(10);

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
        // dropped followers still to be told, each a thread: as many as may follow, the rest closed at once
        Semaphore dropped = new Semaphore(MOST_FOLLOWERS);
        return StatsSocket.listen(path, client -> {
            if (!followers.tryAcquire()) {
                // one short line into a socket just made: it fits its buffer, so the accepting thread never waits
                try (client) {
                    write(client, Map.of(BUSY, MOST_FOLLOWERS + " traces already follow this mount; end one first"));
                }
                return;
            }
            Thread t = new Thread(() -> {
                Dropped last;
                try {
                    last = follow(client, trace, stalledAfter.toNanos());
                } finally {
                    followers.release();
                }
                if (last != null) {
                    last.tell(dropped, DROPPED_TOLD_WITHIN);
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

    /**
     * Writes each event to {@code client} until it goes away (null), or takes nothing for {@code stalledAfter}
     * nanoseconds: then what it is owed, its socket still open.
     */
    private static Dropped follow(SocketChannel client, RequestTrace trace, long stalledAfter) {
        boolean keep = false;
        try (Selector writable = Selector.open(); RequestTrace.Listener events = trace.listen(BEHIND_AT_MOST)) {
            // never blocking: a write the client does not take waits in the selector, for a while only
            client.configureBlocking(false);
            client.register(writable, SelectionKey.OP_WRITE);
            try {
                relay(client, writable, events, stalledAfter);
                return null;
            } catch (Stalled stalled) {
                events.close(); // counted once closed: nothing more comes in
                long lost = stalled.unsent + events.lost() + events.queued();
                LOG.info("trace follower dropped: {}; {} requests not sent to it", stalled.getMessage(), lost);
                Map<String, Object> last = new LinkedHashMap<>();
                last.put(DROPPED, stalled.getMessage());
                last.put(LOST, lost);
                Dropped owed = new Dropped(client, stalled.rest, lineBytes(last));
                keep = true;
                return owed;
            }
        } catch (IOException closedByClient) {
            LOG.debug("trace follower ends: {}", closedByClient.toString());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (RuntimeException e) {
            LOG.warn("trace follower failed", e);
        } finally {
            if (!keep) {
                closeQuietly(client);
            }
        }
        return null;
    }

    /** Sends every event to {@code client} until it closes; {@link Stalled} once it takes nothing for too long. */
    private static void relay(SocketChannel client, Selector writable, RequestTrace.Listener events, long stalledAfter)
            throws IOException, InterruptedException {
        // said once listening: every request served from now on is on its way to the client
        send(client, writable, Map.of("following", true), stalledAfter, 0, 0);
        ByteBuffer probe = ByteBuffer.allocate(1);
        while (true) {
            RequestTrace.Event e = events.next(IDLE_CHECK_MILLIS, TimeUnit.MILLISECONDS);
            long lost = events.lost();
            long taken = e == null ? 0 : 1;
            if (lost > 0) {
                send(client, writable, Map.of(LOST, lost), stalledAfter, lost + taken, taken);
            }
            if (e != null) {
                send(client, writable, lineOf(e), stalledAfter, 1, 0);
            } else if (client.read(probe.clear()) < 0) {
                return; // it never writes: a read that ends is its close
            }
        }
    }

    private static void closeQuietly(SocketChannel client) {
        try {
            client.close();
        } catch (IOException alreadyGone) {
            // nothing to tell anyone
        }
    }

    /**
     * A dropped follower's client, and the bytes it is owed: the rest of a line it took part of, then
     * its last line.
     */
    private record Dropped(SocketChannel client, ByteBuffer rest, ByteBuffer last) {

        /** Writes what it is owed once it reads again, within {@code within}, then closes it; at once where {@code places} has none. */
        void tell(Semaphore places, Duration within) {
            try (client; Selector writable = Selector.open()) {
                if (!places.tryAcquire()) {
                    return;
                }
                try {
                    client.register(writable, SelectionKey.OP_WRITE);
                    ByteBuffer b = ByteBuffer.allocate(rest.remaining() + last.remaining()).put(rest).put(last).flip();
                    long until = System.nanoTime() + within.toNanos();
                    while (b.hasRemaining()) {
                        if (client.write(b) > 0) {
                            continue;
                        }
                        long left = until - System.nanoTime();
                        if (left <= 0) {
                            return;
                        }
                        writable.select(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
                        writable.selectedKeys().clear();
                    }
                } finally {
                    places.release();
                }
            } catch (IOException | RuntimeException gone) {
                LOG.debug("dropped trace follower not told: {}", gone.toString());
            }
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
     * bytes; {@link Stalled} once it took none for {@code stalledAfter} nanoseconds, counting as not
     * sent {@code unsentIfNoneTaken} requests where it took none of the line, else {@code unsentIfPartTaken}
     * (the rest of the line goes before the last one).
     */
    private static void send(SocketChannel client, Selector writable, Object line, long stalledAfter,
                             long unsentIfNoneTaken, long unsentIfPartTaken) throws IOException {
        ByteBuffer b = lineBytes(line);
        long lastTaken = System.nanoTime();
        while (b.hasRemaining()) {
            if (client.write(b) > 0) {
                lastTaken = System.nanoTime();
                continue;
            }
            long left = stalledAfter - (System.nanoTime() - lastTaken);
            if (left <= 0) {
                boolean partTaken = b.position() > 0;
                throw new Stalled("it took no bytes for " + Duration.ofNanos(stalledAfter).toMillis() + " ms",
                        partTaken ? b : ByteBuffer.allocate(0), partTaken ? unsentIfPartTaken : unsentIfNoneTaken);
            }
            writable.select(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
            writable.selectedKeys().clear();
        }
    }

    /** A follower whose client took nothing for too long: the rest of the line it was sent, and the requests not sent. */
    private static final class Stalled extends IOException {
        private static final long serialVersionUID = 1L;
        private final transient ByteBuffer rest;
        private final long unsent;

        Stalled(String message, ByteBuffer rest, long unsent) {
            super(message);
            this.rest = rest;
            this.unsent = unsent;
        }
    }
}
