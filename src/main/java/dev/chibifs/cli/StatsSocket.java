package dev.chibifs.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.chibifs.fuse.FuseDaemon;
import dev.chibifs.fuse.RequestStats;
import dev.chibifs.router.Namespace;
import dev.chibifs.store.Storage;
import dev.chibifs.sys.ProcStatus;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.function.Supplier;

/**
 * How {@code chibifs stats} reads a running daemon's request counts: a Unix socket beside the
 * mount's registry record ({@code stats-<pid>.sock}), on which the daemon writes one JSON
 * snapshot per connection. {@code chibifs sync} asks on a second one ({@code sync-<pid>.sock}),
 * whose answer is written once the stores have synced; {@code chibifs trace} follows on a third
 * ({@link TraceSocket}). The registry directory is the user's own
 * (0700), so only the user (and root) can ask.
 */
final class StatsSocket implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(StatsSocket.class);
    private static final ObjectMapper JSON = new ObjectMapper();

    private final Path path;
    private final ServerSocketChannel server;

    private StatsSocket(Path path, ServerSocketChannel server) {
        this.path = path;
        this.server = server;
    }

    static Path pathFor(MountRegistry registry, long pid) {
        return pathFor(registry.dir(), pid);
    }

    static Path pathFor(Path registryDir, long pid) {
        return registryDir.resolve("stats-" + pid + ".sock");
    }

    /** A daemon's socket in the registry's directory: stats-, sync- or trace-, and its pid. */
    private static final java.util.regex.Pattern DAEMON_SOCKET = java.util.regex.Pattern.compile("(?:stats|sync|trace)-(\\d+)\\.sock");

    /**
     * Removes the sockets of daemons that are gone (killed: a clean exit removes its own), which
     * nothing else would: each mount sweeps them as it starts. Another user's, or one that cannot
     * be removed, stays; a live process with that pid keeps it, whoever it is.
     */
    static void removeDeadDaemons(MountRegistry registry) {
        try (var names = Files.newDirectoryStream(registry.dir(), "*.sock")) {
            for (Path p : names) {
                java.util.regex.Matcher m = DAEMON_SOCKET.matcher(p.getFileName().toString());
                if (m.matches() && !registry.alive(Long.parseLong(m.group(1)))) {
                    try {
                        Files.deleteIfExists(p);
                    } catch (IOException notOurs) {
                        LOG.debug("{} is a dead daemon's, left: {}", p, notOurs.toString());
                    }
                }
            }
        } catch (IOException | NumberFormatException e) {
            LOG.debug("sockets of dead daemons in {} not swept: {}", registry.dir(), e.toString());
        }
    }

    /** Where the daemon {@code pid} answers {@code chibifs sync}. */
    static Path syncPathFor(MountRegistry registry, long pid) {
        return registry.dir().resolve("sync-" + pid + ".sock");
    }

    /** What the daemon does with one connection; it closes the client when done with it. */
    interface ClientHandler {
        void handle(SocketChannel client) throws IOException;
    }

    /**
     * Serves what {@code stats} gives at each connection, as JSON, at {@code path} on a daemon
     * thread until closed (one connection at a time: a sync waits for the one before). No thread
     * per connection, and none waits on a client: nothing is read from it, and the one answer (a few
     * KB) fits the socket's buffer, so a client that never sends or never reads holds nothing.
     */
    static StatsSocket serve(Path path, Supplier<Object> stats) throws IOException {
        return listen(path, client -> {
            try (client) {
                client.write(ByteBuffer.wrap(JSON.writeValueAsBytes(stats.get())));
            }
        });
    }

    /** Listens at {@code path}, handing each connection to {@code each} on a daemon thread, until closed. */
    static StatsSocket listen(Path path, ClientHandler each) throws IOException {
        Files.deleteIfExists(path);
        ServerSocketChannel server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
        server.bind(UnixDomainSocketAddress.of(path));
        // the owner's alone whatever the umask (its directory is too): connecting drives or traces the mount
        Files.setPosixFilePermissions(path, java.nio.file.attribute.PosixFilePermissions.fromString("rw-------"));
        StatsSocket socket = new StatsSocket(path, server);
        Thread t = new Thread(() -> socket.loop(each), "chibifs-" + path.getFileName());
        t.setDaemon(true);
        t.start();
        return socket;
    }

    private void loop(ClientHandler each) {
        while (server.isOpen()) {
            SocketChannel client = null;
            try {
                client = server.accept();
                each.handle(client);
            } catch (IOException e) {
                if (server.isOpen()) {
                    LOG.debug("client of {}: {}", path, e.toString());
                }
            } catch (RuntimeException e) {
                LOG.warn("answer at {} failed", path, e);
                closeQuietly(client);
            }
        }
    }

    private static void closeQuietly(SocketChannel client) {
        try {
            if (client != null) {
                client.close();
            }
        } catch (IOException ignored) {
            // the client is gone either way
        }
    }

    /** One snapshot from the daemon listening at {@code path}, as the JSON tree it wrote. */
    static com.fasterxml.jackson.databind.JsonNode read(Path path) throws IOException {
        try (SocketChannel c = SocketChannel.open(UnixDomainSocketAddress.of(path))) {
            return JSON.readTree(java.nio.channels.Channels.newInputStream(c));
        }
    }

    /** Closes what a bounded read waits on past its time: a blocking channel has no read timeout. */
    private static final java.util.concurrent.ScheduledExecutorService CUTTER =
            dev.chibifs.sys.DaemonThreads.timer("chibifs-stats-read-limit");

    /**
     * What the daemon at {@code path} reports, or null when it cannot be asked (another user's, or
     * gone) or has not answered within {@code limit}: {@code status} asks every mount, and one
     * daemon that does not answer must not hold it.
     */
    static com.fasterxml.jackson.databind.JsonNode readWithin(Path path, java.time.Duration limit) {
        return askWithin(path, limit).json();
    }

    /**
     * A daemon's answer: its JSON; or null, and whether that is because the daemon said nothing in
     * time ({@code silent}) or else what failed.
     */
    record Answer(com.fasterxml.jackson.databind.JsonNode json, boolean silent, IOException failure) {
    }

    /**
     * As {@link #readWithin}, and tells a daemon that took the connection but said nothing within
     * {@code limit} (stopped with SIGSTOP, or hung) from one that could not be asked at all.
     */
    static Answer askWithin(Path path, java.time.Duration limit) {
        SocketChannel c;
        try {
            c = SocketChannel.open(StandardProtocolFamily.UNIX);
        } catch (IOException cannot) {
            return new Answer(null, false, cannot);
        } catch (RuntimeException cannot) {
            return new Answer(null, false, new IOException(cannot.getMessage(), cannot));
        }
        java.util.concurrent.atomic.AtomicBoolean cutOff = new java.util.concurrent.atomic.AtomicBoolean();
        // from before the connect: a listener whose backlog is full (any user's, in a registry of
        // their own) holds a blocking connect for ever, and closing the channel ends it as a read
        java.util.concurrent.ScheduledFuture<?> cut = CUTTER.schedule(() -> {
            cutOff.set(true);
            try {
                c.close();
            } catch (IOException ignored) {
                // closed already
            }
        }, limit.toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS);
        try (c) {
            c.connect(UnixDomainSocketAddress.of(path));
            return new Answer(JSON.readTree(java.nio.channels.Channels.newInputStream(c)), false, null);
        } catch (IOException cutOrBad) {
            return new Answer(null, cutOff.get(), cutOrBad);
        } catch (RuntimeException bad) {
            return new Answer(null, cutOff.get(), new IOException(bad.getMessage(), bad));
        } finally {
            cut.cancel(false);
        }
    }

    /**
     * The answer to {@code chibifs sync}: the stores synced, or why not. Then what this host's stores
     * held of their backing (an S3 listing) is asked again, and the kernel told to ask again what it
     * was told from it: a program started after {@code sync} returns sees what other hosts had synced
     * by then.
     */
    static Object synced(Namespace namespace, FuseDaemon daemon) {
        try {
            namespace.syncStores();
        } catch (IOException e) {
            return java.util.Map.of("synced", false, "error", String.valueOf(e.getMessage()));
        }
        try {
            namespace.dropHeldAnswers();
            daemon.expireHeldAnswers();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return java.util.Map.of("synced", false, "error", "interrupted");
        }
        return java.util.Map.of("synced", true);
    }

    /**
     * What the daemon reports: its requests by opcode, denials by context, its workers, what it holds
     * for the kernel and the memory that takes, each store's state by prefix, those that do not answer
     * ({@code troubles}) and when each asks again for what failed ({@code nextTries}), what each asked
     * of S3 ({@code storeTraffic}: requests by kind, content bytes down and up), those that fail
     * until someone acts ({@code failing}) and those that answer less
     * safely than they should ({@code cautions}), and what waits to go up (all zero without an S3
     * store), which {@code chibifs umount} follows while the daemon exits.
     */
    static Object snapshot(RequestStats stats, String negotiated, FuseDaemon.Held held,
                           java.util.Map<String, String> stores, java.util.Map<String, String> troubles,
                           java.util.Map<String, String> nextTries, java.util.Map<String, String> failing,
                           java.util.Map<String, String> cautions, Storage.Uploads uploads,
                           java.util.Map<String, Storage.Traffic> traffic) {
        RequestStats.Snapshot s = stats.snapshot();
        Runtime jvm = Runtime.getRuntime();
        Storage.Uploads up = uploads == null ? Storage.Uploads.NONE : uploads;
        return java.util.Map.ofEntries(java.util.Map.entry("requests", s.requests().values()),
                java.util.Map.entry("denials", s.denials()), java.util.Map.entry("workers", s.workers()),
                java.util.Map.entry("notices", stats.notices()),
                java.util.Map.entry("held", held), java.util.Map.entry("memory", java.util.Map.of("heapUsedBytes",
                        jvm.totalMemory() - jvm.freeMemory(), "heapCommittedBytes", jvm.totalMemory(), "residentBytes", residentBytes())),
                java.util.Map.entry("session", negotiated == null ? "" : negotiated), java.util.Map.entry("stores", stores),
                java.util.Map.entry("troubles", troubles), java.util.Map.entry("nextTries", nextTries),
                java.util.Map.entry("failing", failing),
                java.util.Map.entry("cautions", cautions), java.util.Map.entry("uploads", up),
                java.util.Map.entry("storeTraffic", traffic == null ? java.util.Map.of() : traffic));
    }

    /** The daemon's resident set (VmRSS of /proc/self/status), or -1 where it cannot be read. */
    private static long residentBytes() {
        try {
            return ProcStatus.field(ProcStatus.SELF, "VmRSS")
                    .map(kib -> Long.parseLong(kib.replace("kB", "").strip()) * 1024).orElse(-1L);
        } catch (IOException | RuntimeException e) {
            return -1; // not Linux's /proc: left out
        }
    }

    @Override
    public void close() {
        try {
            server.close();
            Files.deleteIfExists(path);
        } catch (IOException ignored) {
            // the runtime directory is cleaned at reboot
        }
    }
}
