package dev.chibifs.cli;

import dev.chibifs.fuse.MountTable;
import dev.chibifs.path.Names;
import dev.chibifs.policy.Caller;
import com.fasterxml.jackson.databind.JsonNode;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;

/** {@code chibifs stats MOUNTPOINT}: what a mount's daemon served, by opcode, and whom the policy refused. */
@Command(name = "stats", mixinStandardHelpOptions = true,
        description = {
            "Show the requests a mount's daemon served: count, errors and mean latency per FUSE opcode, "
                + "policy denials per context, and each S3 store's state (whether S3 answers, the changes waiting "
                + "to send, the requests made). With --watch, the rates over each interval, refreshed, as juicefs stats does."
        },
        footer = {"", "Denials are counted by context; uids no --uid-map names are refused as GUEST, shown as"
                + " 'unmapped uids'. With --watch the first frame, at once, has the totals since the mount, the next the"
                + " requests per second of each interval; denials stay totals.",
            "", "Exit codes: 0 shown (--watch: the mount is no longer served); 1 no running daemon is registered for"
                + " MOUNTPOINT, or it is another user's mount; 2 usage; 5 the daemon did not answer within 5 s (stopped? hung?); 141 the reader of"
                + " the output has gone (as for SIGPIPE)."})
final class StatsCommand implements Callable<Integer>, ConfigCheck.Exempt {

    @Parameters(index = "0", paramLabel = "MOUNTPOINT", description = "A chibifs mountpoint on this host, or a path in one.")
    Path mountpoint;

    @Option(names = "--json", description = "Print the daemon's JSON snapshot.")
    boolean json;

    /** {@code --watch}'s interval when none is given. */
    static final String DEFAULT_WATCH = "1s";

    @Option(names = "--watch", arity = "0..1", fallbackValue = DEFAULT_WATCH, paramLabel = "INTERVAL",
            parameterConsumer = WatchInterval.class,
            description = "Refresh every INTERVAL (default " + DEFAULT_WATCH + "; 2 is 2s) with the requests of that interval,"
                    + " until interrupted.")
    Duration watch;

    /**
     * Takes the word after {@code --watch} as the interval unless it names a directory (the
     * mountpoint): picocli's own optional value took the mountpoint of {@code stats --watch
     * /mnt/chibi} and refused it as a duration. A bare number is seconds, as juicefs stats's interval is.
     */
    static final class WatchInterval implements CommandLine.IParameterConsumer {
        @Override
        public void consumeParameters(java.util.Stack<String> args, CommandLine.Model.ArgSpec argSpec,
                                      CommandSpec commandSpec) {
            String next = args.isEmpty() ? null : args.peek();
            Duration interval = new DurationConverter().convert(DEFAULT_WATCH);
            // the next word is the interval unless it is a directory (the mountpoint): --watch=VALUE
            // comes here as a word of its own too, and a bad one must be named, not taken as MOUNTPOINT
            if (next != null && (next.isEmpty() || !next.startsWith("-") && !java.nio.file.Files.isDirectory(Path.of(next)))) {
                args.pop();
                try {
                    interval = new DurationConverter().convert(next.matches("[0-9]+") ? next + "s" : next);
                } catch (CommandLine.TypeConversionException e) {
                    // a bare number was tried as seconds: name it as given
                    throw new CommandLine.ParameterException(commandSpec.commandLine(), "Invalid value for option '--watch': "
                            + e.getMessage().replace("'" + next + "s'", "'" + next + "' (seconds)"));
                }
            }
            argSpec.setValue(interval);
        }
    }

    @Spec
    CommandSpec spec;

    /**
     * How long stats waits for the daemon's answer: a daemon stopped with SIGSTOP (or hung) takes the
     * connection and never writes, and held stats, and a monitoring script, for ever.
     */
    static final Duration ANSWER_LIMIT = Duration.ofSeconds(5);

    /** A mount's running daemon: where it answers stats, and its pid. */
    record Daemon(Path socket, long pid) {
    }

    /** Finds the daemon of a mountpoint. */
    interface Daemons {
        Daemon of(Path mountpoint) throws IOException, CommandFailure;
    }

    private final Daemons daemons;
    private final Duration answerLimit;

    StatsCommand() {
        this(mp -> {
            long[] pid = new long[1];
            Path socket = socketOf(mp, "stats", (registry, p) -> {
                pid[0] = p;
                return StatsSocket.pathFor(registry, p);
            }).socket();
            return new Daemon(socket, pid[0]);
        }, ANSWER_LIMIT);
    }

    /** Tests hand in a socket of their own, with no registry or mount behind it, and a shorter limit. */
    StatsCommand(Daemons daemons, Duration answerLimit) {
        this.daemons = daemons;
        this.answerLimit = answerLimit;
    }

    /** The daemon's snapshot; one line where it does not answer within {@link #answerLimit}. */
    private JsonNode ask(Path mp, Daemon daemon) throws IOException, CommandFailure {
        StatsSocket.Answer answer = StatsSocket.askWithin(daemon.socket(), answerLimit);
        if (answer.json() != null) {
            return answer.json();
        }
        if (answer.silent()) {
            throw new CommandFailure(ExitCodes.IO_ERROR, "the daemon of " + Names.shown(mp) + " (pid " + daemon.pid()
                    + ") does not answer (stopped? hung?)");
        }
        throw answer.failure();
    }

    @Override
    public Integer call() throws Exception {
        MountpointArgument.requireNamed(mountpoint);
        Path mp = mountpoint.toAbsolutePath().normalize();
        Daemon daemon = daemons.of(mp);
        PrintWriter out = spec.commandLine().getOut();
        JsonNode previous = ask(mp, daemon);
        if (json) {
            out.println(previous.toPrettyString());
            out.flush();
            return ExitCodes.OK;
        }
        if (watch == null) {
            print(out, previous, null, 0);
            return ExitCodes.OK;
        }
        // the first frame at once, the totals since the mount: a long interval showed nothing for as long
        out.print(CLEAR);
        print(out, previous, null, 0);
        if (out.checkError()) {
            return ExitCodes.READER_GONE;
        }
        long before = System.nanoTime();
        while (true) {
            Thread.sleep(Math.max(100, watch.toMillis()));
            JsonNode now;
            try {
                now = ask(mp, daemon);
            } catch (IOException gone) {
                // unmounted (its socket removed) or killed (the connection refused or reset): as trace ends
                spec.commandLine().getErr().println(ErrorHandler.PREFIX + Names.shown(mp) + " is no longer served");
                spec.commandLine().getErr().flush();
                return ExitCodes.OK;
            }
            long at = System.nanoTime();
            out.print(CLEAR);
            // the rates over the time that passed: not the interval asked for (10 ms slept 100, and showed 10x)
            print(out, now, previous, (at - before) / 1e9);
            if (out.checkError()) {
                return ExitCodes.READER_GONE; // the reader has gone (stats --watch | head): nothing to refresh for
            }
            previous = now;
            before = at;
        }
    }

    /** Clears the terminal and puts the cursor at its top, for the next frame of --watch. */
    private static final String CLEAR = "\033[H\033[2J";

    /** A running daemon found for a path: the mountpoint it serves, and its socket for the command. */
    record Served(Path mountpoint, Path socket) {
    }

    /**
     * The running daemon of mountpoint {@code path}, or of the mount {@code path} is inside (as df
     * takes a path: {@code chibifs sync ~/chibi/shared}), and the socket {@code which} names for
     * {@code chibifs COMMAND}; one line where none runs, or where it is another user's mount (whose
     * registry is not this user's to read), as umount says it.
     */
    static Served socketOf(Path path, String command, java.util.function.BiFunction<MountRegistry, Long, Path> which)
            throws IOException, CommandFailure {
        return socketOf(path, command, which, StatusCommand.hostRegistries(), MountTable.SYSTEM_TABLE,
                MountRegistry.currentUid());
    }

    /** As {@link #socketOf(Path, String, java.util.function.BiFunction)}, in {@code registries} and {@code mountTable}, run by uid {@code me} (tests). */
    static Served socketOf(Path path, String command, java.util.function.BiFunction<MountRegistry, Long, Path> which,
                           List<MountRegistry> registries, Path mountTable, long me) throws IOException, CommandFailure {
        try {
            return servedAt(path, command, which, registries, mountTable, me);
        } catch (CommandFailure notFound) {
            // a link to the mount (~/chibi -> /mnt/chibi), as status and umount take it: followed only
            // now, the path being in no mount of this user's, so no hung daemon of theirs is asked
            Path real = notFound.exitCode() == ExitCodes.NOT_FOUND ? TraceCommand.real(path) : path;
            if (real.equals(path)) {
                throw notFound;
            }
            try {
                return servedAt(real, command, which, registries, mountTable, me);
            } catch (CommandFailure stillNotFound) {
                throw stillNotFound.exitCode() == ExitCodes.NOT_FOUND ? notFound : stillNotFound; // named as given
            }
        }
    }

    private static Served servedAt(Path path, String command, java.util.function.BiFunction<MountRegistry, Long, Path> which,
                                   List<MountRegistry> registries, Path mountTable, long me) throws IOException, CommandFailure {
        List<MountTable.MountEntry> mounted = MountTable.read(mountTable);
        Map<MountRegistry, List<MountRegistry.Entry>> listed = new java.util.LinkedHashMap<>();
        for (MountRegistry registry : registries) {
            listed.put(registry, registry.list());
        }
        // up the path as written, never through it: resolving links inside a hung mount would hang
        // the command that is there to say the daemon does not answer
        for (Path at = path; at != null; at = at.getParent()) {
            // the mounted daemon first; a detached one (unmounted lazily, still serving files open on it,
            // perhaps beside a new mount of the same mountpoint) still answers
            for (MountRegistry.Health health : new MountRegistry.Health[] {MountRegistry.Health.ACTIVE, MountRegistry.Health.DETACHED}) {
                for (Map.Entry<MountRegistry, List<MountRegistry.Entry>> r : listed.entrySet()) {
                    for (MountRegistry.Entry e : r.getValue()) {
                        if (e.record() != null && e.record().mountpoint().equals(at) && e.health() == health) {
                            return new Served(at, which.apply(r.getKey(), e.record().pid()));
                        }
                    }
                }
            }
            MountTable.MountEntry here = MountTable.topmostAt(mounted, at).orElse(null);
            if (here != null && here.isChibifs()) {
                // a killed daemon's mount: said as status says it ("stale", and the fix), not "none is registered"
                for (Map.Entry<MountRegistry, List<MountRegistry.Entry>> r : listed.entrySet()) {
                    for (MountRegistry.Entry e : r.getValue()) {
                        if (e.record() != null && e.record().mountpoint().equals(at) && e.health() == MountRegistry.Health.STALE) {
                            throw new CommandFailure(ExitCodes.FAILURE, at + " is stale: " + e.detail() + "; "
                                    + StatusCommand.staleAdvice(e, true, true));
                        }
                    }
                }
            }
            if (here == null) {
                continue;
            }
            // the nearest mount holding the path: another user's chibifs is theirs to ask; anything
            // else (this user's stale mount, or no chibifs at all) has no daemon of this user's
            String notTheirs = here.isChibifs() ? UmountCommand.anotherUsersMount(at, here, me, "run chibifs " + command + " on it") : null;
            if (notTheirs != null) {
                throw new CommandFailure(ExitCodes.FAILURE, notTheirs);
            }
            break;
        }
        throw new CommandFailure(ExitCodes.NOT_FOUND, "no running chibifs daemon is registered for " + path
                + " (chibifs status lists this host's mounts)");
    }

    /** How the denials line names GUEST, whom the policy refuses as any uid no --uid-map names. */
    static final String GUEST_SHOWN = "unmapped uids";

    /** Denials by context, as a person reads them: "bob 100, unmapped uids 110"; names escaped as ls -b does. */
    static String denials(JsonNode byContext) {
        StringBuilder line = new StringBuilder();
        byContext.fields().forEachRemaining(e -> line.append(line.length() == 0 ? "" : ", ")
                .append(e.getKey().equals(Caller.GUEST.toString()) ? GUEST_SHOWN : Names.shown(e.getKey()))
                .append(' ').append(e.getValue().asLong()));
        return line.toString();
    }

    /** The table; with {@code before}, the requests since it, per second over {@code seconds}. */
    private static void print(PrintWriter out, JsonNode now, JsonNode before, double seconds) {
        Map<String, long[]> old = new HashMap<>();
        if (before != null) {
            for (JsonNode r : before.get("requests")) {
                old.put(r.get("opcode").asText(), new long[]{r.get("count").asLong(), r.get("totalMicros").asLong(),
                        r.get("errors").asLong()});
            }
        }
        out.println(now.get("session").asText());
        JsonNode workers = now.get("workers");
        if (workers != null) {
            // more than it keeps: requests waited (in S3, on a stalled disk) and others came meanwhile
            out.println("workers: " + workers.get("now").asInt() + " now, " + workers.get("most").asInt()
                    + " at most, " + workers.get("kept").asInt() + " kept");
        }
        JsonNode notices = now.get("notices");
        if (notices != null && notices.size() > 0) {
            // what the kernel was told besides replies (changes behind its back, pages stored at open): totals
            java.util.StringJoiner line = new java.util.StringJoiner(", ", "notifications: ", "");
            notices.fields().forEachRemaining(e -> line.add(e.getKey() + " " + e.getValue().asLong()));
            out.println(line);
        }
        JsonNode held = now.get("held");
        JsonNode memory = now.get("memory");
        if (held != null && memory != null) {
            long rss = memory.get("residentBytes").asLong();
            out.printf("held: %,d nodes, %,d open files, %,d directories followed; heap %,d of %,d MiB%s%n",
                    held.get("nodes").asLong(), held.get("openFiles").asLong(), held.get("followedDirectories").asLong(),
                    memory.get("heapUsedBytes").asLong() >> 20, memory.get("heapCommittedBytes").asLong() >> 20,
                    rss < 0 ? "" : String.format(", resident %,d MiB", rss >> 20));
        }
        if (before != null) {
            out.printf("requests per second over the last %.1f s; denials since the mount%n", seconds);
        }
        out.printf("%-16s %12s %10s %12s%n", "opcode", before == null ? "requests" : "per second", "errors", "mean us");
        for (JsonNode r : now.get("requests")) {
            String op = r.get("opcode").asText();
            long[] o = old.getOrDefault(op, new long[3]);
            long count = r.get("count").asLong() - o[0];
            long micros = r.get("totalMicros").asLong() - o[1];
            long errors = r.get("errors").asLong() - o[2];
            if (before != null && count == 0) {
                continue;
            }
            String rate = before == null ? Long.toString(count) : String.format("%.1f", count / Math.max(seconds, 0.001));
            out.printf("%-16s %12s %10d %12.1f%n", op, rate, errors, count == 0 ? 0.0 : (double) micros / count);
        }
        JsonNode denials = now.get("denials");
        if (denials.size() > 0) {
            out.println("denials: " + denials(denials));
        }
        JsonNode stores = now.get("stores");
        if (stores != null) {
            stores.fields().forEachRemaining(s -> out.println("store " + s.getKey() + ": " + s.getValue().asText()));
        }
        out.flush();
    }
}
