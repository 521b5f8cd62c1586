package dev.chibifs.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.chibifs.fuse.RequestTrace;
import dev.chibifs.path.InvalidVfsPathException;
import dev.chibifs.path.Names;
import dev.chibifs.path.VfsPath;
import dev.chibifs.policy.Caller;
import dev.chibifs.policy.ContextNames;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.net.SocketException;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.Channels;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Instant;
import java.time.ZoneId;
import java.time.format.DateTimeFormatter;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.Callable;

/**
 * {@code chibifs trace MOUNTPOINT}: each request a mount's daemon serves, as it answers, as
 * {@code strace} shows system calls: what an agent does on the mount, what the policy refuses it,
 * and which requests a program costs.
 */
@Command(name = "trace", mixinStandardHelpOptions = true,
        description = {
            "Follow the requests a mount's daemon serves, a line each as it answers: the time, the context that asked"
                + " and its process (pid and program), the FUSE opcode, its path (with the names it carries: a rename's"
                + " two ends, an attribute's name, an open's mode, a read's bytes), the answer (ok, or the errno, with"
                + " '(policy)' where the policy refused, '(--symlinks)' where the link rule did) and the time it took"
                + " in the daemon; a lock request that waits shows 'waiting', then again 'after waiting' when it ends."
                + " Until"
                + " interrupted, the mount ends, or --count lines. The kernel's own forgets are not shown. A trace"
                + " that falls far behind says how many lines it lost; one that reads nothing for 30 s (stopped) is"
                + " dropped by the daemon, and says so, with the lines it lost, once it reads again."
        },
        footer = {"", "Exit codes: 0 ended (interrupted, --count lines, or the mount is no longer served); 1 no daemon"
                + " serves MOUNTPOINT (or it is another user's mount), 8 traces already follow it, or the daemon dropped this trace; 2 usage;"
                + " 141 the reader has gone."})
final class TraceCommand implements Callable<Integer>, ConfigCheck.Exempt {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final DateTimeFormatter TIME = DateTimeFormatter.ofPattern("HH:mm:ss.SSSSSS");

    @Parameters(index = "0", paramLabel = "MOUNTPOINT", description = "A chibifs mountpoint on this host, or a path in"
            + " one: only the requests about that path or under it, as --path takes it.")
    Path mountpoint;

    @Option(names = "--context", paramLabel = "NAME", split = ",",
            description = "Only the requests of these contexts (SYSTEM for the system's, GUEST for an unmapped uid's,"
                + " KERNEL for a directory's release, which the kernel sends itself; a file's is its opener's).")
    List<String> contexts;

    @Option(names = "--program", paramLabel = "NAME", split = ",",
            description = "Only the requests of these programs, by the name ps shows (git, python3, sqlite3).")
    List<String> programs;

    @Option(names = "--opcode", paramLabel = "OPCODE", split = ",",
            description = "Only requests of these opcodes, as linux/fuse.h names them without FUSE_ (LOOKUP, CREATE, OPEN).")
    List<String> opcodes;

    @Option(names = "--path", paramLabel = "PATH",
            description = "Only requests about PATH or a path under it (either end of a rename or link), as the"
                + " namespace names it (/shared/tasks.md, vfs:///home/alice) or through the mountpoint (/mnt/chibi/shared/tasks.md);"
                + " a path outside the namespace (/etc) is refused.")
    String path;

    @Option(names = "--denied", description = "Only the requests the policy refused (EACCES), or the link rule (--symlinks, EPERM).")
    boolean denied;

    @Option(names = "--errors", description = "Only the requests answered with an error (the policy's refusals among them).")
    boolean errors;

    @Option(names = "--count", paramLabel = "N", description = "Stop after N lines.")
    Long count;

    @Option(names = "--json", description = "Print each request as the daemon sends it: one JSON object a line.")
    boolean json;

    @Spec
    CommandSpec spec;

    /** Where the daemon of a mountpoint (or of the mount a path is in) answers trace; one line (a CommandFailure) where none runs. */
    interface Sockets {
        StatsCommand.Served of(Path mountpoint) throws IOException, CommandFailure;
    }

    private final Sockets sockets;

    TraceCommand() {
        this(mp -> StatsCommand.socketOf(mp, "trace", TraceSocket::pathFor));
    }

    /** Tests hand in a socket of their own, with no registry or mount behind it. */
    TraceCommand(Sockets sockets) {
        this.sockets = sockets;
    }

    @Override
    public Integer call() throws IOException, CommandFailure {
        MountpointArgument.requireNamed(mountpoint);
        Set<String> known = RequestTrace.opcodes();
        if (opcodes != null) {
            opcodes.replaceAll(o -> o.toUpperCase(Locale.ROOT));
            for (String o : opcodes) {
                if (!known.contains(o)) {
                    throw new UsageException("invalid --opcode '" + o + "': one of " + String.join(", ", known));
                }
            }
        }
        if (contexts != null) {
            for (String c : contexts) {
                if (!c.equals(Caller.SYSTEM.toString()) && !c.equals(Caller.GUEST.toString())
                        && !c.equals(RequestTrace.KERNEL)) {
                    ContextNames.validate(c); // a name no context can have would filter out everything, silently
                }
            }
        }
        if (count != null && count < 1) {
            throw new UsageException("invalid --count '" + count + "': a number of lines, 1 or more");
        }
        Path given = mountpoint.toAbsolutePath().normalize();
        // read against MOUNTPOINT as given before any daemon is asked: a bad --path is a usage error
        String under = path == null ? null : namespacePath(path, given);
        StatsCommand.Served served = sockets.of(given);
        Path mp = served.mountpoint();
        if (!given.equals(mp)) {
            if (path != null) {
                throw new UsageException("--path '" + Names.shown(path) + "' beside " + Names.shown(given) + ", a path in " + Names.shown(mp) + ": name the"
                        + " mountpoint and --path, or the path alone");
            }
            under = "/" + mp.relativize(given);
        }
        Path socket = served.socket();
        PrintWriter out = spec.commandLine().getOut();
        SocketChannel c;
        try {
            c = SocketChannel.open(UnixDomainSocketAddress.of(socket));
        } catch (SocketException | NoSuchFileException e) {
            // a daemon started before this command existed serves stats and sync only
            throw new CommandFailure(ExitCodes.FAILURE, "the daemon of " + Names.shown(mp) + " does not answer trace (started by an"
                    + " older chibifs? umount and mount it again): " + e.getMessage());
        }
        long shown = 0;
        try (c; BufferedReader in = new BufferedReader(new InputStreamReader(Channels.newInputStream(c), StandardCharsets.UTF_8))) {
            String line;
            while ((line = in.readLine()) != null) {
                JsonNode e = JSON.readTree(line);
                if (e.has(TraceSocket.BUSY)) {
                    throw new CommandFailure(ExitCodes.FAILURE, e.get(TraceSocket.BUSY).asText());
                }
                if (e.has("following")) {
                    spec.commandLine().getErr().println(ErrorHandler.PREFIX + "tracing " + Names.shown(mp) + " (interrupt to stop)");
                    spec.commandLine().getErr().flush();
                    continue;
                }
                if (e.has(TraceSocket.DROPPED)) {
                    // the daemon dropped this trace but serves on: no "no longer served", and no exit 0
                    out.flush();
                    throw new CommandFailure(ExitCodes.FAILURE, "the daemon of " + Names.shown(mp) + " dropped this trace ("
                            + Names.shown(e.get(TraceSocket.DROPPED).asText()) + "): " + e.path(TraceSocket.LOST).asLong()
                            + " requests not shown, nor any served since; it serves on");
                }
                if (e.has(TraceSocket.LOST)) {
                    spec.commandLine().getErr().println(ErrorHandler.PREFIX + e.get(TraceSocket.LOST).asLong()
                            + " requests not shown: this trace fell behind");
                    spec.commandLine().getErr().flush();
                    continue;
                }
                if (!wanted(e, under)) {
                    continue;
                }
                out.println(json ? line : format(e));
                if (out.checkError()) {
                    // the reader has gone (trace | head -1): a follower left running holds one of the daemon's few places
                    return ExitCodes.READER_GONE;
                }
                if (count != null && ++shown >= count) {
                    return ExitCodes.OK;
                }
            }
        } catch (SocketException daemonGone) {
            // the daemon exited (killed, or unmounted by force) while the trace ran: as an end
        }
        spec.commandLine().getErr().println(ErrorHandler.PREFIX + Names.shown(mp) + " is no longer served");
        return ExitCodes.OK;
    }

    private boolean wanted(JsonNode e, String under) {
        if (contexts != null && !contexts.contains(e.path("context").asText())) {
            return false;
        }
        if (programs != null && !programs.contains(e.path("program").asText())) {
            return false;
        }
        if (opcodes != null && !opcodes.contains(e.path("opcode").asText())) {
            return false;
        }
        String answer = e.path("answer").asText();
        if (denied && e.path("refused").asText().isEmpty()) {
            return false;
        }
        if (errors && (answer.equals("ok") || answer.equals("waiting"))) {
            return false;
        }
        return under == null || about(e.path("paths"), under);
    }

    /**
     * {@code path} as the namespace names it: a path through the mountpoint ({@code /mnt/chibi/shared/x},
     * what a shell completes) is taken for the file it names, which the trace shows as {@code /shared/x};
     * otherwise it already is one. A path outside the namespace ({@code --path /etc}, a path on this host
     * outside the mount) is refused: taken as the namespace's, with a warning, it showed nothing.
     */
    static String namespacePath(String path, Path mountpoint) throws UsageException {
        String named;
        try {
            if (path.startsWith(VfsPath.URI_PREFIX)) {
                named = VfsPath.fromUri(path).toString();
            } else {
                Path host = real(Path.of(path));
                Path mp = real(mountpoint);
                named = mp.getNameCount() > 0 && host.startsWith(mp) ? "/" + mp.relativize(host) : VfsPath.of(path).toString();
            }
        } catch (InvalidVfsPathException e) {
            throw new UsageException("--path: " + e.getMessage());
        }
        if (!inNamespace(named, mountpoint)) {
            String mp = Names.shown(mountpoint);
            throw new UsageException("invalid --path '" + Names.shown(path) + "': not a path in the namespace " + mp
                    + " serves (under " + String.join(", ", NAMESPACE_TOPS) + ", or another name at its top): name it as"
                    + " the namespace does (/shared/x, vfs:///home/alice) or through the mountpoint (" + mp + "/shared/x)");
        }
        return named;
    }

    /** The names at the namespace's top that every mount has: its own directories' ({@code /shared}, {@code /home}, ...). */
    private static final List<String> NAMESPACE_TOPS = dev.chibifs.router.Router.namespaceDirectories(List.of()).stream()
            .map(d -> "/" + d.substring(1).split("/", 2)[0]).distinct().toList();

    /**
     * Whether {@code named} is in the namespace: the root, a path under one of {@link #NAMESPACE_TOPS}, or
     * under another name the mount at {@code mountpoint} shows at its top (a {@code --store} prefix, a
     * directory SYSTEM made), looked up through the mount.
     */
    private static boolean inNamespace(String named, Path mountpoint) {
        String top = named.substring(1).split("/", 2)[0];
        if (top.isEmpty() || NAMESPACE_TOPS.contains("/" + top)) {
            return true;
        }
        try {
            return java.nio.file.Files.exists(real(mountpoint).resolve(top), java.nio.file.LinkOption.NOFOLLOW_LINKS);
        } catch (java.nio.file.InvalidPathException e) {
            return false;
        }
    }

    /** {@code p} with its links followed where it exists (a link to the mountpoint, ~/chibi -> /mnt/chibi), else as written. */
    static Path real(Path p) {
        try {
            return p.toRealPath();
        } catch (java.io.IOException | SecurityException notThere) {
            return p.toAbsolutePath().normalize();
        }
    }

    /** Whether one of {@code paths} is {@code prefix} or under it. */
    private static boolean about(JsonNode paths, String prefix) {
        String dir = prefix.endsWith("/") ? prefix : prefix + "/";
        for (JsonNode p : paths) {
            if (p.asText().equals(prefix) || p.asText().startsWith(dir)) {
                return true;
            }
        }
        return false;
    }

    static String format(JsonNode e) {
        String time = TIME.format(Instant.parse(e.path("at").asText()).atZone(ZoneId.systemDefault()));
        String answer = e.path("answer").asText();
        String refused = e.path("refused").asText();
        if (!refused.isEmpty()) {
            answer += " (" + refused + ")";
        }
        StringBuilder target = new StringBuilder();
        // names, a link's target and a program's name are anyone's bytes: escaped as ls -b does, so
        // a name holding a newline or a terminal's escape cannot pass for another line or restyle it
        for (JsonNode p : e.path("paths")) {
            target.append(target.length() == 0 ? "" : " -> ").append(Names.shown(p.asText()));
        }
        String detail = Names.shown(e.path("detail").asText());
        String program = Names.shown(e.path("program").asText());
        return time + " " + e.path("context").asText() + " pid " + e.path("pid").asInt()
                + (program.isEmpty() ? "" : " (" + program + ")") + " " + e.path("opcode").asText()
                + " " + target + (detail.isEmpty() ? "" : " " + detail) + ": " + answer
                + (answer.equals("waiting") ? "" : " " + e.path("micros").asLong() + " us");
    }
}
