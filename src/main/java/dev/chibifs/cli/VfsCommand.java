package dev.chibifs.cli;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import dev.chibifs.config.ChibiHome;
import dev.chibifs.path.InvalidVfsPathException;
import dev.chibifs.path.VfsPath;
import dev.chibifs.policy.Caller;
import dev.chibifs.router.Namespace;
import dev.chibifs.router.Router;
import dev.chibifs.store.LocalStorage;
import picocli.CommandLine;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Spec;

import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;

/**
 * What every {@code vfs://} command shares: the caller, the router over the local store, URI
 * parsing, output, and turning failures into exit codes. Every operation goes through the
 * {@link Router} as the caller, so the policy and its messages are the mount's.
 */
abstract class VfsCommand implements Callable<Integer> {

    private static final ObjectMapper JSON = new ObjectMapper()
            .disable(JsonGenerator.Feature.AUTO_CLOSE_TARGET)
            .enable(SerializationFeature.INDENT_OUTPUT);

    /** Replaced by {@link Main}'s factory with the terminal the command line was built for. */
    Terminal terminal = Terminal.system();

    @Spec
    CommandLine.Model.CommandSpec spec;

    @Mixin
    CallerOptions callerOptions;

    @Mixin
    StoreOptions storeOptions;

    /** The paths this command was given, in order: what a failure that names no path, or a store's own, was about. */
    private final List<VfsPath> subjects = new ArrayList<>();
    private LocalStorage storage;
    private Namespace namespace;
    private Router router;
    private Caller caller;

    /** True for commands that change the store: they need a named caller. */
    abstract boolean writes();

    /** Does the work; returns the exit code. Usage errors propagate to {@link ErrorHandler}. */
    abstract int execute() throws IOException, CommandFailure;

    @Override
    public final Integer call() {
        caller = callerOptions.resolve(terminal.env(), spec.name(), writes());
        int code = ExitCodes.OK;
        try {
            code = execute();
        } catch (IOException | CommandFailure e) {
            code = fail(e);
        } finally {
            // also when a usage error propagates: an S3 store uploads what this command changed, and
            // lets its cache directory go, before the command says it is done
            code = closeNamespace(code);
            flushOut();
        }
        return code;
    }

    private int closeNamespace(int code) {
        if (namespace == null) {
            return code;
        }
        try {
            namespace.close();
            return code;
        } catch (IOException e) {
            int failed = fail(e);
            return code == ExitCodes.OK ? failed : code;
        }
    }

    private int fail(Exception e) {
        Failures.Report r = new Failures(storage == null ? null : storage.root(),
                router == null ? List.of() : router.prefixes(), subjects).report(e);
        PrintWriter err = spec.commandLine().getErr();
        err.println("chibifs " + spec.name() + ": " + r.message());
        err.flush();
        return r.exitCode();
    }

    Caller caller() {
        return caller;
    }

    /** The router over {@code <home>/vfs}, opened on first use so usage errors never touch the disk. */
    Router router() throws IOException {
        if (router == null) {
            namespace = storeOptions.open(ChibiHome.resolve(callerOptions.home, terminal.env()), terminal.env());
            storage = namespace.rootStore().orElse(null);
            router = namespace.router();
        }
        return router;
    }

    /** How long this command's changes wait for a lock another process holds on a file of the local store. */
    void lockWait(java.time.Duration wait) throws IOException {
        router();
        if (storage != null) {
            storage.lockWait(wait);
        }
    }

    /**
     * Creates the missing parent directories of {@code path} through the router, as chibi does
     * before a move; LocalStorage creates only the last missing level itself.
     */
    void createParent(VfsPath path) throws IOException {
        VfsPath parent = path.parent();
        if (parent != null && !router().exists(caller, parent)) {
            router().mkdir(caller, parent);
        }
    }

    /**
     * Parses a {@code vfs:///path} argument; a plain path or a URI with the wrong number of
     * slashes is refused with the right form in the message.
     */
    VfsPath uri(String arg) {
        if (arg.startsWith("/")) {
            throw new InvalidVfsPathException(arg, "not a vfs:/// URI (use vfs://" + arg + ")");
        }
        if (!arg.isEmpty() && !arg.contains(":")) {
            throw new InvalidVfsPathException(arg, "not a vfs:/// URI; relative paths are not accepted (use vfs:///"
                    + arg.replaceFirst("^(\\./)+", "") + ")");
        }
        VfsPath path = VfsPath.fromUri(arg);
        subjects.add(path);
        return path;
    }

    OutputStream out() {
        return terminal.out();
    }

    void println(String line) throws IOException {
        out().write((line + "\n").getBytes(StandardCharsets.UTF_8));
    }

    void printJson(Object value) throws IOException {
        JSON.writeValue(out(), value);
        out().write('\n');
    }

    private void flushOut() {
        try {
            out().flush();
        } catch (IOException ignored) {
            // stdout closed under us (a pipe to head): nothing left to tell anyone
        }
    }
}
