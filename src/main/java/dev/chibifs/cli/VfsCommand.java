package dev.chibifs.cli;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import dev.chibifs.config.ChibiHome;
import dev.chibifs.path.InvalidVfsPathException;
import dev.chibifs.path.Names;
import dev.chibifs.path.VfsPath;
import dev.chibifs.policy.Caller;
import dev.chibifs.router.MountPointBusyException;
import dev.chibifs.router.Namespace;
import dev.chibifs.router.Router;
import dev.chibifs.router.StoreMount;
import dev.chibifs.store.EntryKind;
import dev.chibifs.store.LocalStorage;
import dev.chibifs.store.OpenFlag;
import dev.chibifs.sys.ErrnoException;
import dev.chibifs.sys.Errors;
import dev.chibifs.sys.Linux;
import dev.chibifs.sys.Umask;
import picocli.CommandLine;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Spec;

import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.Deque;
import java.util.EnumSet;
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
    /** Each path that following links reached, and the path given that led there: what a failure there names. */
    private final java.util.Map<VfsPath, VfsPath> followed = new java.util.LinkedHashMap<>();
    private LocalStorage storage;
    private Namespace namespace;
    private Router router;
    private Caller caller;
    private OutputStream out;
    /** Set once standard output failed: what is still buffered is not tried again, nor said twice. */
    private CommandOutput.Failed outputFailure;

    /** True for commands that change the store: they need a named caller. */
    abstract boolean writes();

    /** Does the work; returns the exit code. Usage errors propagate to {@link ErrorHandler}. */
    abstract int execute() throws IOException, CommandFailure;

    @Override
    public final Integer call() {
        ArgumentBytes.requireUtf8(spec.root().commandLine().getParseResult().originalArgs());
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
            code = flushOut(code);
        }
        return code;
    }

    /**
     * A command that only reads, of paths the local store would serve, where there is no local
     * store: it says so rather than make one, since opening the store makes its directory, and a
     * mistyped --home became a new CHIBI_HOME. A write makes the store, as chibi's first run does,
     * but not a home named that is not there ({@link HomeOption#namedButMissing}); a path under
     * another --store prefix needs no local store.
     */
    private void requireAStore() throws NoStoreException {
        List<StoreMount> opened = storeOptions.mounts();
        if (opened.stream().anyMatch(m -> m.prefix().isRoot())) {
            return; // --store /=s3://...: no local store
        }
        boolean elsewhere = !subjects.isEmpty() && subjects.stream().allMatch(p -> opened.stream()
                .anyMatch(m -> p.startsWith(m.prefix())));
        Path store = ChibiHome.resolve(callerOptions.home, terminal.env()).store().toAbsolutePath();
        if (elsewhere || Files.isDirectory(store)) {
            return;
        }
        if (!writes()) {
            throw new NoStoreException("no store at " + store + " (nothing written there yet: a mount or a write"
                    + " makes it; is --home or $CHIBI_HOME right?)");
        }
        String missing = HomeOption.namedButMissing(callerOptions.home, terminal.env());
        if (missing != null) {
            throw new NoStoreException(missing);
        }
    }

    /**
     * The directories opening the namespace makes (the local store and what leads to it), deepest
     * first: removed again when the command ends and they are still empty, so a read, or a write
     * the policy refused, leaves no CHIBI_HOME behind.
     */
    private final List<Path> madeByOpening = new ArrayList<>();

    private void noteWhatOpeningMakes() {
        Path store = ChibiHome.resolve(callerOptions.home, terminal.env()).store().toAbsolutePath();
        for (Path d = store; d != null && !Files.exists(d); d = d.getParent()) {
            madeByOpening.add(d);
        }
    }

    /** Removes what {@link #madeByOpening} names, while empty. */
    private void unmakeWhatOpeningMade() {
        for (Path d : madeByOpening) {
            try {
                Files.deleteIfExists(d);
            } catch (IOException notEmptyOrGone) {
                return; // something else wrote there meanwhile: it stays
            }
        }
    }

    /** No local store where a command that only reads looked, or no home where one that writes did: exit 1, and nothing made. */
    static final class NoStoreException extends IOException {
        private static final long serialVersionUID = 1L;

        NoStoreException(String message) {
            super(message);
        }
    }

    private int closeNamespace(int code) {
        if (namespace == null) {
            return code;
        }
        try {
            namespace.close();
            unmakeWhatOpeningMade();
            return code;
        } catch (IOException e) {
            int failed = fail(e);
            return code == ExitCodes.OK ? failed : code;
        }
    }

    private int fail(Exception e) {
        if (e instanceof CommandOutput.Failed f) {
            return outputFailed(f);
        }
        flushOut(ExitCodes.OK);
        Failures.Report r = failure(e);
        PrintWriter err = spec.commandLine().getErr();
        err.println(ErrorHandler.PREFIX + r.message());
        err.flush();
        return r.exitCode();
    }

    /** What {@code e} would end this command with: for a command that notes it and goes on (grep over a tree). */
    Failures.Report failure(Exception e) {
        return new Failures(storage == null ? null : storage.root(),
                router == null ? List.of() : router.prefixes(), subjects, followed, writes(), MountRegistry.currentUid())
                .report(e);
    }

    Caller caller() {
        return caller;
    }

    /** The router over {@code <home>/vfs}, opened on first use so usage errors never touch the disk. */
    Router router() throws IOException {
        if (router == null) {
            requireAStore();
            noteWhatOpeningMakes();
            namespace = storeOptions.open(ChibiHome.resolve(callerOptions.home, terminal.env()), terminal.env());
            storage = namespace.rootStore().orElse(null);
            if (storage != null) {
                // a file this command makes is its user's, as chibi's are: 0666 less their umask (it was
                // 0644 whatever the umask, readable by all under 077)
                storage.newFileMode(Umask.chibisFileMode());
            }
            router = namespace.router();
            subjects.forEach(this::warnIfAMountServesItElsewhere);
        }
        return router;
    }

    /** A store a live mount of this command's local store serves at {@code prefix}, which this command did not open. */
    private record ServedElsewhere(Path mountpoint, VfsPath prefix, String spec) {
    }

    /** {@link #servedElsewhere()}, read from the registry once per command. */
    private List<ServedElsewhere> servedElsewhere;

    /**
     * The stores live mounts of this command's local store serve at prefixes this command did not
     * open ({@code --store}): where it reads and writes, it meets what the local store hides there,
     * which no mount shows. Empty where the registry cannot be read.
     */
    private List<ServedElsewhere> servedElsewhere() {
        if (servedElsewhere == null) {
            servedElsewhere = readServedElsewhere();
        }
        return servedElsewhere;
    }

    private List<ServedElsewhere> readServedElsewhere() {
        if (storage == null) {
            return List.of();
        }
        List<VfsPath> opened = router.prefixes();
        List<ServedElsewhere> out = new ArrayList<>();
        try {
            for (MountRegistry.Entry e : MountRegistry.forCurrentUser().list()) {
                MountRecord r = e.record();
                if (r == null || e.health() == MountRegistry.Health.STALE || e.health() == MountRegistry.Health.UNREADABLE
                        || !r.store().toAbsolutePath().normalize().equals(storage.root().toAbsolutePath().normalize())) {
                    continue;
                }
                for (java.util.Map.Entry<String, String> store : r.storesByPrefix().entrySet()) {
                    VfsPath prefix = VfsPath.of(store.getKey());
                    if (!prefix.isRoot() && !opened.contains(prefix)) {
                        out.add(new ServedElsewhere(r.mountpoint(), prefix, store.getValue()));
                    }
                }
            }
        } catch (IOException | RuntimeException unreadable) {
            // a registry that cannot be read tells of nothing; the command itself goes on
        }
        return out;
    }

    /** What {@link #warnIfAMountServesItElsewhere} has said: once each, though a command reads its path several times. */
    private final java.util.Set<ServedElsewhere> warned = new java.util.HashSet<>();

    /** Warns where a live mount serves {@code path} from a store this command did not open, once per command. */
    private void warnIfAMountServesItElsewhere(VfsPath path) {
        for (ServedElsewhere s : servedElsewhere()) {
            // not where it lies above one: every ls vfs:///shared beside a mount with a scratch store said so
            if (path.startsWith(s.prefix())) {
                if (!warned.add(s)) {
                    return; // append and write said it twice, cp three times: each reads its URI again
                }
                PrintWriter err = spec.commandLine().getErr();
                err.println(ErrorHandler.PREFIX + "warning: the mount at " + s.mountpoint() + " serves "
                        + s.prefix() + " from " + s.spec() + ", which this command did not open: it sees what its own"
                        + " stores have there (give it the mount's --store " + s.prefix() + "=...; a memory: store is"
                        + " the daemon's own)");
                err.flush();
                return;
            }
        }
    }

    /**
     * {@link Router#checkRemove}, and EBUSY where a live mount of this store serves a prefix at or
     * below {@code path} from a store this command did not open: removing or moving what leads
     * there cut that mount's store off, as the mount itself refuses to.
     */
    void checkRemove(VfsPath path) throws IOException {
        router().checkRemove(caller, path);
        for (ServedElsewhere s : servedElsewhere()) {
            if (s.prefix().startsWith(path)) {
                throw new MountPointBusyException(path.toString(), s.prefix().toString(),
                        "the mount at " + s.mountpoint() + " serves " + s.spec());
            }
        }
    }

    /** How long this command's changes wait for a lock another process holds on a file of the local store. */
    void lockWait(java.time.Duration wait) throws IOException {
        router();
        if (storage != null) {
            storage.lockWait(wait);
        }
    }

    /** Most symbolic links one path may pass through, as Linux's MAXSYMLINKS: more is ELOOP. */
    private static final int MAX_LINKS = 40;

    /** {@link #uri} with the symbolic links it passes through followed, its last name's too ({@link #follow}). */
    VfsPath followedUri(String arg) throws IOException {
        return follow(uri(arg), true);
    }

    /**
     * Refuses a file to be made at {@code arg}, {@code followed} as {@link #followedUri} found it,
     * where its last name is a link to a missing directory: {@code echo x > link} is ENOENT, natively
     * and in chibi (whose create_dir_all makes the parents of the path it was given, not the link's);
     * write, append and cp made the link's target's directories and wrote there.
     */
    void refuseLinkToMissingDirectory(String arg, VfsPath followed) throws IOException, CommandFailure {
        VfsPath named = uriThroughLinks(arg);
        if (!named.equals(followed) && !followed.parent().isRoot() && !router().exists(caller(), followed.parent())) {
            throw new CommandFailure(ExitCodes.NOT_FOUND, "no such file or directory: " + Names.shown(named.toUri())
                    + " is a symbolic link to " + Names.shown(followed.toUri()) + ", whose directory is not there; nothing written");
        }
    }

    /** {@link #uri} with the links leading to its last name followed, not that name's own: what rm, mv, ls and info act on. */
    VfsPath uriThroughLinks(String arg) throws IOException {
        return follow(uri(arg), false);
    }

    /**
     * {@code path} with every symbolic link on it replaced by where it leads (the last name's only
     * when {@code last}), as the kernel resolves a path through a mount with its LOOKUPs: a relative
     * target read from the link's directory, each {@code ..} from the directory actually reached.
     * The policy is then judged on the path reached, as the mount judges what the kernel asks for,
     * so a link placed in the store by hand writes nothing its caller could not write by name. A
     * link replaced between this look and the operation is not followed by the store (it opens
     * without following), so the operation fails rather than act on a path not judged. An absolute
     * target names a host file through a mount, not a vfs path, and one climbing above {@code /}
     * leaves the store: neither is followed.
     */
    private VfsPath follow(VfsPath path, boolean last) throws IOException {
        Deque<String> todo = new ArrayDeque<>(path.segments());
        VfsPath at = VfsPath.root();
        int links = 0;
        while (!todo.isEmpty()) {
            String name = todo.pop();
            if (name.isEmpty() || name.equals(".")) {
                continue;
            }
            if (name.equals("..")) {
                if (at.isRoot()) {
                    throw new ErrnoException(Linux.ELOOP, path.toString(), "a symbolic link on this path climbs"
                            + " above vfs:///, out of the store: not followed");
                }
                // the kernel goes up from a directory it reached: x/../f with x missing is ENOENT, and
                // with x a file ENOTDIR, where going up by name alone reached f (a tester's x/../../bob)
                requireDirectory(at, path);
                at = at.parent();
                continue;
            }
            VfsPath next = at.child(name);
            if ((last || !todo.isEmpty()) && isLink(next)) {
                String target = router().readLink(caller, next);
                if (++links > MAX_LINKS) {
                    throw ErrnoException.of(Linux.ELOOP, path.toString(), "more than " + MAX_LINKS + " symbolic links");
                }
                if (target.startsWith("/")) {
                    throw new ErrnoException(Linux.ELOOP, path.toString(), Names.shown(next.toUri())
                            + " is a symbolic link to the absolute path '" + target + "', not followed (it names a host"
                            + " file, not a vfs path)");
                }
                List<String> parts = Arrays.asList(target.split("/"));
                for (int i = parts.size() - 1; i >= 0; i--) {
                    todo.push(parts.get(i));
                }
                continue;
            }
            at = next;
        }
        if (links > 0 && !at.equals(path)) {
            followed.put(at, path);
        }
        return at;
    }

    /** {@code at}, reached on the way along {@code path}, is a directory to go up from, as the kernel's {@code ..} needs. */
    private void requireDirectory(VfsPath at, VfsPath path) throws IOException {
        EntryKind kind;
        try {
            kind = router().metadata(caller, at).kind();
        } catch (IOException e) {
            int errno = Errors.errno(e);
            if (errno == Linux.ENOENT || errno == Linux.ENOTDIR) {
                throw ErrnoException.of(errno, path.toString(), Names.shown(at.toUri()) + " is not there to go up from");
            }
            throw e;
        }
        if (kind != EntryKind.DIRECTORY) {
            throw ErrnoException.of(Linux.ENOTDIR, path.toString(), Names.shown(at.toUri()) + " is not a directory to go up from");
        }
    }

    private boolean isLink(VfsPath path) throws IOException {
        try {
            return router().metadata(caller, path).kind() == EntryKind.SYMLINK;
        } catch (IOException e) {
            int errno = Errors.errno(e);
            if (errno == Linux.ENOENT || errno == Linux.ENOTDIR) {
                return false; // the operation itself says so, naming what the caller gave
            }
            throw e;
        }
    }

    /** The file at {@code path}, open for reading in chunks. */
    StoreFile open(VfsPath path) throws IOException {
        return new StoreFile(router().open(caller, path, EnumSet.of(OpenFlag.READ), 0));
    }

    /** The JSON generator {@link #printJson} writes with, for output written as it is read; the caller closes it. */
    JsonGenerator jsonGenerator() throws IOException {
        return JSON.createGenerator(out()).useDefaultPrettyPrinter();
    }

    /**
     * One entry of a directory. {@code name} is its name as text; {@code bytes} are its bytes when
     * they are not UTF-8 (a name another program made in the store), so {@code name} only stands
     * for them (U+FFFD for each bad byte, as chibi's own listing shows it) and names no path: such an
     * entry cannot be reached, but is listed for what it is.
     */
    record Listed(String name, byte[] bytes, EntryKind kind) {

        /** True when {@link #name} is the name exactly, so {@code dir.child(name)} reaches it. */
        boolean reachable() {
            return bytes == null;
        }

        /** The name for human output, escaped ({@link Names}). */
        String shown() {
            return bytes == null ? Names.shown(name) : Names.shown(bytes);
        }
    }

    /** The entries of the directory {@code dir}, sorted by name, each exactly as the directory holds it. */
    List<Listed> entries(VfsPath dir) throws IOException {
        List<Listed> out = new ArrayList<>();
        router().forEachEntry(caller, dir, (name, offset, length, kind, inode) -> {
            byte[] bytes = Arrays.copyOfRange(name, offset, offset + length);
            String text = new String(bytes, StandardCharsets.UTF_8);
            out.add(new Listed(text, Names.isUtf8(bytes) ? null : bytes, kind));
            return true;
        });
        out.sort(Comparator.comparing(Listed::name)
                .thenComparing((a, b) -> Arrays.compareUnsigned(
                        a.bytes() == null ? a.name().getBytes(StandardCharsets.UTF_8) : a.bytes(),
                        b.bytes() == null ? b.name().getBytes(StandardCharsets.UTF_8) : b.bytes())));
        return out;
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
        if (router != null) {
            warnIfAMountServesItElsewhere(path);
        }
        return path;
    }

    /**
     * Standard output, buffered here: System.out flushes every write, and grep writes four per
     * line. Flushed when the command ends, and before anything goes to standard error.
     */
    OutputStream out() {
        if (out == null) {
            out = new BufferedOutputStream(new CommandOutput(terminal.out()), StoreFile.CHUNK);
        }
        return out;
    }

    void println(String line) throws IOException {
        out().write((line + "\n").getBytes(StandardCharsets.UTF_8));
    }

    void printJson(Object value) throws IOException {
        JSON.writeValue(out(), value);
        out().write('\n');
    }

    /** Flushes standard output; {@code code}, or the output's failure's where there was none before. */
    private int flushOut(int code) {
        if (outputFailure != null) {
            return code;
        }
        try {
            out().flush();
            return code;
        } catch (CommandOutput.Failed f) {
            int failed = outputFailed(f);
            return code == ExitCodes.OK ? failed : code;
        } catch (IOException unreachable) {
            throw new java.io.UncheckedIOException(unreachable); // CommandOutput fails only as Failed
        }
    }

    /** Says once, as coreutils do, that standard output failed; quietly where its reader has gone. */
    private int outputFailed(CommandOutput.Failed f) {
        if (outputFailure == null) {
            outputFailure = f;
            if (f.line() != null) {
                PrintWriter err = spec.commandLine().getErr();
                err.println(ErrorHandler.PREFIX + f.line());
                err.flush();
            }
        }
        return outputFailure.exitCode();
    }
}
