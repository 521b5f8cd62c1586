package dev.chibifs.cli;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.chibifs.cache.CacheId;
import dev.chibifs.cache.CacheStub;
import dev.chibifs.cache.ToolOutput;
import dev.chibifs.config.ChibiConfig;
import dev.chibifs.path.Names;
import dev.chibifs.path.VfsPath;
import dev.chibifs.sys.Errors;
import dev.chibifs.sys.Linux;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;

/**
 * {@code chibifs cache put}: a filter for shell agents. Small or blank output passes through
 * unchanged; larger output is stored as SYSTEM and replaced by chibi's stub. Output is written as
 * raw bytes to standard output (not through picocli's character writer) so what passes through
 * is byte-identical, and whatever goes wrong the output itself is still printed: a bad option
 * ({@link ErrorHandler} calls {@link #passInputThrough()}), a bad config.toml (read here, not by
 * {@link ConfigCheck}, which would refuse before anything is printed), a store that fails.
 */
@Command(name = "put", mixinStandardHelpOptions = true,
        description = {"Read a tool's output from stdin; print it unchanged if it is at most "
                + "tool_output_cache_threshold characters (UTF-8 bytes, as chibi counts), blank or an error"
                + " (starts with 'Error:'), else store it in /sys/tool_cache/<context>/<id> and print chibi's"
                + " stub instead. On any failure the output is printed unchanged."})
final class CachePutCommand implements Callable<Integer>, ConfigCheck.Exempt {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final int PASS_BUFFER = 1 << 16;

    @Option(names = "--context", paramLabel = "NAME",
            description = "The context the output belongs to (default: $CHIBI_CONTEXT).")
    String context;

    @Option(names = "--tool", required = true, paramLabel = "TOOL", description = "The tool that produced the output.")
    String tool;

    @Option(names = "--args", paramLabel = "JSON", defaultValue = "{}",
            description = "The tool's arguments as JSON (part of the id's hash; default: ${DEFAULT-VALUE}).")
    String args;

    @Option(names = "--mountpoint", paramLabel = "DIR",
            description = "Where this home's store is mounted; the stub then also gives the entry's path there"
                    + " (checked: where DIR does not show the entry, the output is printed unchanged).")
    Path mountpoint;

    /** How long --mountpoint has to show the entry: a stopped or hung daemon's mount never answers a stat. */
    static final java.time.Duration MOUNTPOINT_ANSWER_LIMIT = StatsCommand.ANSWER_LIMIT;
    /**
     * How long a mount may show what its store held before the put: its daemon hears of the change
     * from its follower and tells the kernel a moment later (1-12 ms measured), and a directory it
     * does not follow has its answers kept up to 1 s.
     */
    static final java.time.Duration MOUNT_CATCHES_UP = java.time.Duration.ofSeconds(1);
    /** How often --mountpoint is looked at again meanwhile. */
    private static final long CATCH_UP_POLL_MILLIS = 5;

    @Mixin
    HomeOption home;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    /** Replaced by {@link Main}'s factory with the terminal the command line was built for. */
    Terminal terminal = Terminal.system();

    /** Standard input, whose read failures say they are its ({@link ContentCommand#standardInput}): else "Is a directory" alone. */
    private InputStream in() {
        return ContentCommand.standardInput(terminal.in());
    }

    /** How much of the output is held in memory, the rest going to a temporary file; tests make it small. */
    int memoryLimit = ToolOutput.MEMORY_LIMIT;

    @Override
    public Integer call() throws IOException {
        try {
            return filter();
        } catch (CommandOutput.Failed f) {
            // at the end of a pipe, an output nobody received is a failure to say, not exit 0
            if (f.line() != null) {
                spec.commandLine().getErr().println(ErrorHandler.PREFIX + f.line());
            }
            return f.exitCode();
        }
    }

    private int filter() throws IOException {
        try (ToolOutput output = ToolOutput.read(in(), memoryLimit)) {
            if (output.failure() != null) {
                // no room to hold the output for the cache: it goes through, what is still unread too
                passThrough(output);
                passThrough(in());
                spec.commandLine().getErr().println(ErrorHandler.PREFIX + CANNOT_CACHE + "it is over " + (memoryLimit >> 20)
                        + " MiB, more than is kept in memory, and no temporary file could hold the rest: " + ErrorHandler.oneLine(output.failure()));
                return ExitCodes.FAILURE;
            }
            return filter(output);
        }
    }

    /** How a failure that leaves the output uncached begins: the output itself was printed. */
    private static final String CANNOT_CACHE = "cannot cache the output (printed unchanged instead): ";

    private int filter(ToolOutput output) throws IOException {
        String stub;
        try {
            stub = cache(output);
        } catch (IOException e) {
            passThrough(output);
            // the cache commands write the store directly, as whoever runs them (a mount's users may not)
            spec.commandLine().getErr().println(ErrorHandler.PREFIX + CANNOT_CACHE
                    + ErrorHandler.oneLine(e) + (Errors.errno(e) == Linux.EACCES
                    ? " (the cache commands write the store as the user who runs them: run them as its owner)" : ""));
            return ExitCodes.FAILURE;
        } catch (CommandFailure f) {
            passThrough(output);
            // cached, but the stub would mislead: the output itself, and why
            spec.commandLine().getErr().println(ErrorHandler.PREFIX + "printed the output unchanged: " + f.getMessage());
            return f.exitCode();
        } catch (RuntimeException | Error e) {
            passThrough(output);
            throw e;
        }
        if (stub == null) {
            passThrough(output);
        } else {
            OutputStream out = new CommandOutput(terminal.out());
            out.write((stub + "\n").getBytes(StandardCharsets.UTF_8));
            out.flush();
        }
        return ExitCodes.OK;
    }

    /** Stores {@code output} and returns the stub, or null when it is not to be cached. */
    private String cache(ToolOutput output) throws IOException, CommandFailure {
        String argsJson = validate();
        String missing = HomeOption.namedButMissing(home.home, home.env);
        if (missing != null) {
            throw new IOException(missing);
        }
        // chibi resolves a context's settings: config.toml, then the context's local.toml over it
        ChibiConfig config = ChibiConfig.load(home.resolve()).forContext(home.resolve(), context);
        if (!CacheStub.shouldCache(output, config.toolOutputCacheThreshold())) {
            return null;
        }
        VfsPath path = CacheStores.openForPut(home.resolve()).put(context, tool, argsJson, output);
        Path shellRoot = mountpoint == null ? null : mountpoint.toAbsolutePath().normalize();
        if (shellRoot != null) {
            requireShown(shellRoot, path, home.resolve().store().toAbsolutePath());
        }
        return CacheStub.format(path, tool, output, config.toolCachePreviewChars(), shellRoot);
    }

    /**
     * Refuses a --mountpoint that does not show {@code entry} as {@code store} holds it: the stub's
     * shell line would name a path where the entry is not (a mistyped DIR, a mount of another home
     * or of none), under chibi's "do NOT re-run this tool", exit 0. Not the mount registry: a mount
     * of this home by another user (root's, uid-mapped) is in no registry this user reads, and a
     * mount of this home may serve /sys from another store; the path itself says what the agent
     * will find there. Its stat waits at most {@link #MOUNTPOINT_ANSWER_LIMIT}.
     */
    private static void requireShown(Path shellRoot, VfsPath entry, Path store) throws IOException, CommandFailure {
        String inStore = entry.toString().substring(1);
        Optional<Shown> shown;
        try {
            shown = Bounded.within("cache-put-mountpoint", MOUNTPOINT_ANSWER_LIMIT,
                    () -> Shown.onceCaughtUp(store.resolve(inStore), shellRoot.resolve(inStore), MOUNT_CATCHES_UP));
        } catch (ExecutionException e) {
            throw e.getCause() instanceof IOException io ? io : new IOException(e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new java.io.InterruptedIOException("interrupted while --mountpoint was asked");
        }
        String dir = "--mountpoint " + Names.shown(shellRoot.toString());
        if (shown.isEmpty()) {
            throw new CommandFailure(ExitCodes.FAILURE, dir + " did not answer within "
                    + MOUNTPOINT_ANSWER_LIMIT.toSeconds() + " s (a stopped or hung daemon?)");
        }
        if (shown.get().why() != null) {
            throw new CommandFailure(shown.get().exitCode(), dir + " does not show the entry: " + shown.get().why()
                    + " (DIR must be where this home's store, " + Names.shown(store.toString()) + ", is mounted)");
        }
    }

    /**
     * What a path shows of the entry: it, or why not ({@code why}), with the exit code that says it:
     * 2 where the path is not the entry (the value given is wrong), 1 where it cannot be read.
     */
    record Shown(int exitCode, String why) {

        private static final Shown THE_ENTRY = new Shown(ExitCodes.OK, null);
        private static final String ATTRIBUTES = "unix:ino,size,lastModifiedTime";

        /**
         * What {@code shown} is of the file {@code stored}: a mount passes the store's inode numbers
         * through, so the same number, size and modification time are the same file (another home's
         * entry of this id would be another inode). Links are followed, as a shell follows them.
         */
        static Shown of(Path stored, Path shown) throws IOException {
            String path = Names.shown(shown.toString());
            Map<String, Object> there;
            try {
                there = Files.readAttributes(shown, ATTRIBUTES);
            } catch (NoSuchFileException e) {
                return new Shown(ExitCodes.USAGE, path + " is not there");
            } catch (IOException e) {
                return new Shown(ExitCodes.FAILURE, path + " cannot be read: " + ErrorHandler.oneLine(e));
            }
            Map<String, Object> ours = Files.readAttributes(stored, ATTRIBUTES, LinkOption.NOFOLLOW_LINKS);
            return ours.equals(there) ? THE_ENTRY : new Shown(ExitCodes.USAGE, path + " is another file");
        }

        /**
         * {@link #of}, asked again for up to {@code catchUp} while the path is not the entry: the mount
         * may still show what the name held before (the same output put again within its second replaces
         * the entry of that id, and the walkthrough's second put was refused as "another file").
         */
        static Shown onceCaughtUp(Path stored, Path shown, java.time.Duration catchUp) throws IOException, InterruptedException {
            return onceCaughtUp(() -> of(stored, shown), catchUp);
        }

        /** One look at what a path shows of the entry. */
        interface Look {
            Shown look() throws IOException;
        }

        static Shown onceCaughtUp(Look look, java.time.Duration catchUp) throws IOException, InterruptedException {
            long until = System.nanoTime() + catchUp.toNanos();
            Shown now = look.look();
            while (now.exitCode() == ExitCodes.USAGE && System.nanoTime() < until) {
                Thread.sleep(CATCH_UP_POLL_MILLIS);
                now = look.look();
            }
            return now;
        }
    }

    /** Checks the names and returns the arguments as compact JSON, so spacing does not change the id. */
    private String validate() {
        // as mount and the vfs commands take theirs: a shell agent's environment names its context
        context = CallerOptions.contextName(context, terminal.env(), "");
        if (context == null) {
            throw new UsageException("'cache put' needs a context: pass --context NAME, or set CHIBI_CONTEXT=NAME");
        }
        if (!CacheId.isValidTool(tool)) {
            throw new UsageException("invalid tool name '" + tool + "': " + CacheId.TOOL_RULE);
        }
        try {
            return JSON.writeValueAsString(JSON.readTree(args));
        } catch (JsonProcessingException e) {
            throw new UsageException("--args '" + args + "' is not valid JSON: " + e.getOriginalMessage());
        }
    }

    /**
     * Prints standard input unchanged, for a command line picocli refused before {@link #call()}:
     * the output must not be lost to a typo in the options.
     */
    void passInputThrough() throws IOException {
        passThrough(in());
    }

    private void passThrough(ToolOutput output) throws IOException {
        try (InputStream in = output.open()) {
            passThrough(in);
        }
    }

    // a failure to read the output is the input's, not standard output's: only writes are CommandOutput's
    private void passThrough(InputStream in) throws IOException {
        OutputStream out = new CommandOutput(terminal.out());
        byte[] buffer = new byte[PASS_BUFFER];
        int n;
        while ((n = in.read(buffer)) >= 0) {
            out.write(buffer, 0, n);
        }
        out.flush();
    }
}
