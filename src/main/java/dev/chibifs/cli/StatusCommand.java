package dev.chibifs.cli;

import dev.chibifs.fuse.MountTable;
import dev.chibifs.path.Names;
import dev.chibifs.store.StoreSpec;
import dev.chibifs.store.WholeStoreFailure;
import com.fasterxml.jackson.core.SerializableString;
import com.fasterxml.jackson.core.io.CharacterEscapes;
import com.fasterxml.jackson.core.io.SerializedString;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;

/** {@code chibifs status}: this host's chibifs mounts, with who they act for, store, pid and uptime. */
@Command(name = "status", mixinStandardHelpOptions = true,
        description = {
            "List this host's chibifs mounts: mountpoint, state, pid, uptime, context or uid map, store.",
            "As root, every user's registry is read; otherwise your own. Mounts of type fuse.chibifs that no "
                + "registry knows are listed as 'unregistered'; registry files whose daemon is gone as 'stale'; a "
                + "mount unmounted lazily whose daemon still serves files open on it as 'detached'; one whose daemon "
                + "does not answer within 1 s, nor within 5 s when asked again (stopped, hung), as 'not answering';"
                + " one whose local store directory has gone or fails as a whole (every request there fails: EIO,"
                + " ENOTCONN, its file system unmounted), or whose S3 store fails until someone acts (its cache directory"
                + " gone or failing, an upload S3 refuses holding back the rest), as 'failing'.",
            "With MOUNTPOINT, only that mount, and the exit code says whether it is active."
        },
        footer = {"", "Exit codes: 0 listed (with MOUNTPOINT: it is active); 1 MOUNTPOINT is not an active chibifs mount;"
                + " 2 usage."})
final class StatusCommand implements Callable<Integer>, ConfigCheck.Exempt {

    @Option(names = "--json", description = "Print a JSON array instead of a table.")
    boolean json;

    @Parameters(index = "0", arity = "0..1", paramLabel = "MOUNTPOINT", description = "Show this mount only.")
    Path mountpoint;

    @Spec
    CommandSpec spec;

    private final List<MountRegistry> registries;
    private final Path mountTable;
    private final Clock clock;
    /** The uid status runs as: the rows of another uid's registry say whose they are. */
    private final int viewer;

    StatusCommand() {
        this(null, MountTable.SYSTEM_TABLE, Clock.systemUTC());
    }

    /** REGISTRIES null means this host's: your own, and as root every user's. */
    StatusCommand(List<MountRegistry> registries, Path mountTable, Clock clock) {
        this(registries, mountTable, clock, MountRegistry.currentUid());
    }

    /** As {@link #StatusCommand(List, Path, Clock)}, run as uid {@code viewer} (tests). */
    StatusCommand(List<MountRegistry> registries, Path mountTable, Clock clock, int viewer) {
        this.registries = registries;
        this.mountTable = mountTable;
        this.clock = clock;
        this.viewer = viewer;
    }

    @Override
    public Integer call() throws IOException {
        MountpointArgument.requireNamed(mountpoint);
        List<Map<String, Object>> rows = rows(registries == null ? hostRegistries() : registries);
        PrintWriter out = spec.commandLine().getOut();
        String only = mountpoint == null ? null : MountCommand.realMountpoint(mountpoint).toString();
        if (only != null) {
            rows.removeIf(row -> !only.equals(row.get("mountpoint")));
        }
        if (json) {
            ObjectMapper mapper = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
            mapper.getFactory().setCharacterEscapes(new ControlEscapes());
            out.println(mapper.writeValueAsString(rows));
        } else if (only != null && rows.isEmpty()) {
            out.println("no chibifs mount at " + Names.shown(only));
        } else {
            printTable(out, rows);
        }
        out.flush();
        if (only != null && rows.stream().noneMatch(row -> "active".equals(row.get("state")))) {
            return ExitCodes.FAILURE;
        }
        return ExitCodes.OK;
    }

    private List<Map<String, Object>> rows(List<MountRegistry> sources) throws IOException {
        Map<MountRegistry, List<MountRegistry.Entry>> listed = new LinkedHashMap<>();
        for (MountRegistry registry : sources) {
            listed.put(registry, registry.list());
        }
        // the table after the records and their pids: read before, a daemon that exited between the
        // two (unmounted, record removed) had its mount seen and its pid found gone: umount -l advice
        List<MountTable.MountEntry> table = MountTable.chibifsMounts(mountTable);
        Set<Path> mounted = new HashSet<>();
        table.forEach(m -> mounted.add(m.mountpoint()));
        List<Map<String, Object>> rows = new ArrayList<>();
        Set<Path> registered = new HashSet<>();
        Set<Path> files = new HashSet<>();
        listed.forEach((registry, entries) -> entries.forEach(entry -> {
            addRow(rows, registry, entry, mounted);
            files.add(entry.file());
            if (entry.record() != null) {
                // a killed daemon's mount is in the table still: its stale row says so, once
                registered.add(entry.record().mountpoint());
            }
        }));
        for (MountTable.MountEntry mount : table) {
            if (registered.contains(mount.mountpoint()) || addedSinceListed(rows, listed.keySet(), files, mounted,
                    mount.mountpoint())) {
                continue;
            }
            Map<String, Object> row = new LinkedHashMap<>();
            row.put("mountpoint", mount.mountpoint().toString());
            row.put("state", "unregistered");
            row.put("options", mount.options());
            row.put("detail", "in the mount table, but no registry this user can read describes it");
            rows.add(row);
        }
        return rows;
    }

    /**
     * Whether a registry has a record of MOUNTPOINT now that was not there when it was listed, its rows
     * added: a starting daemon mounts first and writes its record then, so a mount that appeared between
     * the listing and the table's read showed as unregistered.
     */
    private boolean addedSinceListed(List<Map<String, Object>> rows, Set<MountRegistry> registries, Set<Path> listedFiles,
                                     Set<Path> mounted, Path mountpoint) throws IOException {
        boolean found = false;
        for (MountRegistry registry : registries) {
            Path file = registry.fileFor(mountpoint);
            if (listedFiles.contains(file) || !Files.exists(file, LinkOption.NOFOLLOW_LINKS)) {
                continue;
            }
            for (MountRegistry.Entry entry : registry.entriesOf(List.of(file))) {
                addRow(rows, registry, entry, mounted);
                found |= entry.record() != null;
            }
        }
        return found;
    }

    private void addRow(List<Map<String, Object>> rows, MountRegistry registry, MountRegistry.Entry entry, Set<Path> mounted) {
        // root's umount clears any user's record too
        Map<String, Object> row = row(entry, mounted, registry.owner() == viewer || viewer == 0);
        row.put("registryUid", registry.owner());
        if (registry.owner() != viewer) {
            // anything in it is that user's word: a record names any mountpoint, context or home
            row.put("detail", "from " + whose(registry) + "'s registry" + (row.get("detail").toString().isEmpty() ? ""
                    : "; " + row.get("detail")));
        }
        rows.add(row);
    }

    /** Uid N of {@code registry} as people know it: "uid N (name)", the name as its directory's owner resolves. */
    private static String whose(MountRegistry registry) {
        String name = null;
        try {
            name = Files.getOwner(registry.dir(), LinkOption.NOFOLLOW_LINKS).getName();
        } catch (IOException | RuntimeException unknown) {
            // no name to add
        }
        return "uid " + registry.owner() + (name == null || name.equals(Integer.toString(registry.owner())) ? ""
                : " (" + name + ")");
    }

    private Map<String, Object> row(MountRegistry.Entry entry, Set<Path> mounted, boolean own) {
        Map<String, Object> row = new LinkedHashMap<>();
        MountRecord r = entry.record();
        if (r == null) {
            row.put("mountpoint", null);
        } else {
            row.put("mountpoint", r.mountpoint().toString());
        }
        row.put("state", entry.health().name().toLowerCase(Locale.ROOT));
        if (r != null) {
            row.put("pid", r.pid());
            row.put("uptimeSeconds", Math.max(0, Duration.between(r.started(), clock.instant()).toSeconds()));
            row.put("mode", r.mode());
            row.put("context", r.context());
            row.put("uidmap", r.uidMap());
            row.put("systemUid", r.systemUid());
            row.put("home", r.home().toString());
            row.put("store", r.rootStore());
            row.put("stores", List.of(r.stores().split(" ")));
            row.put("started", r.started().toString());
            row.put("options", r.options());
            row.put("session", r.session());
            row.put("io", (r.session().contains("passthrough") ? "passthrough" : "served")
                    + (r.session().endsWith(", io_uring") ? "+io_uring" : ""));
            row.put("log", r.log());
        }
        row.put("registryFile", entry.file().toString());
        boolean active = r != null && entry.health() == MountRegistry.Health.ACTIVE;
        // looked at while the daemon is asked: a look slow on a loaded host has that time too
        long lookedSince = System.nanoTime();
        Map<String, StoreLook> looks = active ? lookAtStoreDirectories(r) : Map.of();
        Path socket = active ? StatsSocket.pathFor(entry.file().getParent(), r.pid()) : null;
        StatsSocket.Answer answer = active ? StatsSocket.askWithin(socket, TROUBLES_LIMIT) : null;
        if (answer != null && answer.silent()) {
            // a daemon slow to answer on a loaded host (two CPUs, a suite running) is no stopped one:
            // asked again, with the time stats gives it, before it is called not answering
            answer = StatsSocket.askWithin(socket, silentAfter);
        }
        StoreDirectories looked = storeDirectories(looks, lookedSince);
        Map<String, String> gone = looked.gone();
        Map<String, String> troubles = troubles(answer, "troubles");
        row.put("troubles", troubles);
        Map<String, String> nextTries = troubles(answer, "nextTries");
        row.put("nextTries", nextTries);
        List<String> details = new ArrayList<>();
        if (answer != null && answer.silent()) {
            // a daemon stopped (SIGSTOP) or hung takes the connection and says nothing; every process on its
            // mount is stuck in the kernel, which is no health to pass a check with
            row.put("state", NOT_ANSWERING);
            details.add("pid " + r.pid() + " does not answer (stopped? hung?): processes using the mount wait; kill -CONT " + r.pid()
                    + ", or chibifs umount --force " + r.mountpoint());
        }
        if (!gone.isEmpty()) {
            // every request there fails (EIO), unlike an S3 store's that is away, whose writes land in its cache
            row.put("state", FAILING);
            details.add("store directory " + String.join(", ", gone.values())
                    + " has gone (moved, removed or replaced): requests there fail with EIO until it is back");
        }
        if (!troubles(answer, "failing").isEmpty()) {
            // what fails until someone acts (a refused upload holding back the rest): every fsync there is EIO
            row.put("state", FAILING);
        }
        // the daemon says so too of a directory gone: the line above says it already
        troubles.forEach((prefix, why) -> {
            if (!gone.containsKey(prefix)) {
                // a store read-only since the mount began says what it is: nothing there fails
                // and whether, and when, what failed is asked again: a change S3 refused 20 times said only that it failed
                String next = nextTries.get(prefix);
                details.add("the store at " + prefix + (WholeStoreFailure.isReadOnlyFromStart(why) ? " " : " fails: ") + why
                        + (next == null ? "" : "; " + next));
            }
        });
        // a store that answers, less safely than it should (an S3 without DeleteObjects): still active
        Map<String, String> cautions = troubles(answer, "cautions");
        row.put("cautions", cautions);
        cautions.forEach((prefix, why) -> details.add("the store at " + prefix + ": " + why));
        // the daemon's word on a store that does not answer, where it gave one; else status's own
        looked.silent().forEach((prefix, dir) -> {
            if (!troubles.containsKey(prefix)) {
                details.add("the store at " + prefix + ": " + WholeStoreFailure.doesNotAnswer(dir));
            }
        });
        String logGone = active ? logGone(r) : null;
        if (logGone != null) {
            details.add(logGone);
        }
        String detail = details.isEmpty() ? entry.detail() : String.join("; ", details);
        if (entry.health() == MountRegistry.Health.STALE && entry.record() != null) {
            detail += "; " + staleAdvice(entry, mounted.contains(entry.record().mountpoint()), own);
        }
        row.put("detail", detail);
        return row;
    }

    /**
     * What to do about a stale record (its daemon gone), one wording for status, stats, trace, sync and
     * doctor (which offered three fixes for one stale mount): {@code chibifs umount}, which clears the
     * mount, where it is still in the table, and the record both; {@code own}: the record is in the
     * registry of the user asking, or that user is root (another's record a user's umount does not
     * clear: it is removed by hand).
     */
    static String staleAdvice(MountRegistry.Entry entry, boolean mounted, boolean own) {
        if (mounted) {
            return "its mount is left without a daemon: " + staleMountFix(entry.record().mountpoint());
        }
        return "nothing serves it: " + (own ? staleMountFix(entry.record().mountpoint()) : "remove " + entry.file());
    }

    /** The fix for a mount whose daemon is gone: clears it and the daemon's record, as any user's own or as root. */
    static String staleMountFix(Path mountpoint) {
        return "chibifs umount " + Names.shown(mountpoint);
    }

    /**
     * Where the daemon {@code pid} writes its log (its stderr), to compare with the log's path; the
     * process's own in /proc but in tests.
     */
    private java.util.function.LongFunction<Path> logDescriptor = pid -> Path.of("/proc/" + pid + "/fd/2");

    /** For tests: where a daemon's log descriptor is looked at. */
    void logDescriptorOf(java.util.function.LongFunction<Path> where) {
        logDescriptor = where;
    }

    /**
     * Why the daemon's log is not the file its path names, or null: deleted (or moved) while the
     * daemon writes on to it, its space never freed and nothing there to read (a store failing filled
     * a disk so, and no file in sight was to blame). Nothing where the descriptor cannot be looked at
     * (another user's daemon).
     */
    private String logGone(MountRecord r) {
        if (r.log() == null || "stderr".equals(r.log()) || !r.log().startsWith("/")) {
            return null;
        }
        Object writes;
        try {
            writes = Files.getAttribute(logDescriptor.apply(r.pid()), "unix:ino");
        } catch (IOException | RuntimeException cannotLook) {
            return null;
        }
        Path log = Path.of(r.log());
        Object named;
        try {
            named = Files.getAttribute(log, "unix:ino", LinkOption.NOFOLLOW_LINKS);
        } catch (IOException | RuntimeException gone) {
            named = null;
        }
        if (writes.equals(named)) {
            return null;
        }
        return "the log " + log + (named == null ? " was deleted" : " was replaced") + " while the daemon writes to it:"
                + " kill -HUP " + r.pid() + " opens it again";
    }

    /** How long status waits for one daemon to say how its stores are. */
    private static final Duration TROUBLES_LIMIT = Duration.ofSeconds(1);

    /** The state of a mount one of whose local store directories has gone: the daemon answers EIO there. */
    static final String FAILING = "failing";

    /** How long a daemon silent for {@link #TROUBLES_LIMIT} is given when asked again; tests shorten it. */
    private Duration silentAfter = StatsCommand.ANSWER_LIMIT;

    /** This command, asking a silent daemon again for {@code limit} only (tests). */
    StatusCommand silentAfter(Duration limit) {
        silentAfter = limit;
        return this;
    }

    /** The state of a mount whose daemon takes the connection but answers neither within {@link #TROUBLES_LIMIT} nor when asked again. */
    static final String NOT_ANSWERING = "not answering";

    /**
     * What the daemon says of its stores that fail now (an S3 store unreachable, its write-back
     * failing, its cache directory gone), by prefix: a mount that answers is not a mount whose store
     * does (a tester's S3 store failed for six minutes while status said active and nothing more).
     * Nothing where the daemon could not be asked within {@link #TROUBLES_LIMIT} (another user's).
     * {@code field}: {@code troubles}, {@code failing} for those that fail until someone acts, or
     * {@code cautions} for those that answer less safely than they should.
     */
    private static Map<String, String> troubles(StatsSocket.Answer answer, String field) {
        com.fasterxml.jackson.databind.JsonNode stats = answer == null ? null : answer.json();
        Map<String, String> troubles = new LinkedHashMap<>();
        if (stats != null && stats.get(field) != null) {
            stats.get(field).fields().forEachRemaining(e -> troubles.put(e.getKey(), e.getValue().asText()));
        }
        return troubles;
    }

    /**
     * A mount's local store directories the CLI looked at itself, by prefix: those gone (as shown),
     * and those that did not answer.
     */
    private record StoreDirectories(Map<String, String> gone, Map<String, Path> silent) {
    }

    /**
     * Whether a local store directory has gone: a look that waits for the store's file system, for
     * ever where that is a stopped FUSE daemon or an NFS server away; tests stand in for one.
     */
    private java.util.function.Predicate<Path> hasGone = StatusCommand::hasGone;

    /** For tests: what looks at a store directory instead of the file system. */
    StatusCommand directoryLook(java.util.function.Predicate<Path> look) {
        hasGone = look;
        return this;
    }

    private static boolean hasGone(Path p) {
        return Files.notExists(p, LinkOption.NOFOLLOW_LINKS)
                || (Files.exists(p, LinkOption.NOFOLLOW_LINKS) && !Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS));
    }

    /** Runs each look on a thread of its own, which a look that never returns leaves behind without keeping the JVM. */
    private static final java.util.concurrent.Executor LOOKS = look -> {
        Thread t = new Thread(look, "chibifs-status-look");
        t.setDaemon(true);
        t.start();
    };

    /** A look at one local store directory under way, and the directory as a line names it. */
    private record StoreLook(Path dir, String shown, java.util.concurrent.CompletableFuture<Boolean> gone) {
    }

    /**
     * Looks at the local store directories of a mount, each on a thread of its own: whether they are
     * no longer there. The daemon answers such a store's requests with EIO (and takes it up again once
     * it is back), so the mount is active but useless there, which its state alone did not say.
     */
    private Map<String, StoreLook> lookAtStoreDirectories(MountRecord r) {
        Map<String, StoreLook> looks = new LinkedHashMap<>();
        for (Map.Entry<String, String> store : r.storesByPrefix().entrySet()) {
            String spec = store.getValue();
            String dir = spec.startsWith(StoreSpec.READONLY) ? spec.substring(StoreSpec.READONLY.length()) : spec;
            if (!dir.startsWith("/")) {
                continue; // memory:, s3://, a view: what a directory's absence does not decide
            }
            String prefix = store.getKey();
            Path p = Path.of(dir);
            looks.put(prefix, new StoreLook(p, dir + ("/".equals(prefix) ? "" : " (at " + prefix + ")"),
                    java.util.concurrent.CompletableFuture.supplyAsync(() -> hasGone.test(p), LOOKS)));
        }
        return looks;
    }

    /**
     * What the looks begun at {@code since} (System.nanoTime) found, waited for {@link
     * WholeStoreFailure#LOOK_WAIT_MILLIS} from then in all, as the daemon waits for its own: status
     * hung for ever in an lstat of a store on a stopped FUSE daemon, while {@code stats} answered. One
     * that cannot be looked at (another user's) is not called gone.
     */
    private static StoreDirectories storeDirectories(Map<String, StoreLook> looks, long since) {
        long deadline = since + java.util.concurrent.TimeUnit.MILLISECONDS.toNanos(WholeStoreFailure.LOOK_WAIT_MILLIS);
        Map<String, String> gone = new LinkedHashMap<>();
        Map<String, Path> silent = new LinkedHashMap<>();
        looks.forEach((prefix, look) -> {
            try {
                if (look.gone().get(Math.max(0, deadline - System.nanoTime()), java.util.concurrent.TimeUnit.NANOSECONDS)) {
                    gone.put(prefix, look.shown());
                }
            } catch (java.util.concurrent.TimeoutException e) {
                silent.put(prefix, look.dir());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (java.util.concurrent.ExecutionException cannotLook) {
                // not called gone
            }
        });
        return new StoreDirectories(gone, silent);
    }

    private static void printTable(PrintWriter out, List<Map<String, Object>> rows) {
        if (rows.isEmpty()) {
            out.println("no chibifs mounts");
            return;
        }
        List<String[]> lines = new ArrayList<>();
        lines.add(new String[] {"MOUNTPOINT", "STATE", "PID", "UPTIME", "WHO", "IO", "STORE"});
        for (Map<String, Object> row : rows) {
            Object mode = row.get("mode");
            String who = mode == null ? "-"
                    : MountRecord.MODE_CONTEXT.equals(mode) ? "context=" + row.get("context") : "uidmap=" + row.get("uidmap");
            Object uptime = row.get("uptimeSeconds");
            lines.add(new String[] {
                text(row.get("mountpoint"), String.valueOf(row.get("registryFile"))),
                text(row.get("state"), "-"),
                text(row.get("pid"), "-"),
                uptime == null ? "-" : uptime(((Number) uptime).longValue()),
                Names.shown(who),
                text(row.get("io"), "-"),
                text(row.get("store"), "-"),
            });
        }
        int[] widths = new int[lines.get(0).length];
        for (String[] line : lines) {
            for (int i = 0; i < line.length; i++) {
                widths[i] = Math.max(widths[i], line[i].length());
            }
        }
        for (String[] line : lines) {
            StringBuilder sb = new StringBuilder();
            for (int i = 0; i < line.length; i++) {
                sb.append(i == line.length - 1 ? line[i] : String.format("%-" + widths[i] + "s  ", line[i]));
            }
            out.println(sb.toString().stripTrailing());
        }
        for (Map<String, Object> row : rows) {
            Object stores = row.get("stores");
            if (stores instanceof List && ((List<?>) stores).size() > 1) {
                // the root's store is in the table; the others, one a line below it
                List<?> more = ((List<?>) stores).subList(1, ((List<?>) stores).size());
                out.println(text(row.get("mountpoint"), "-") + ": also " + more.stream()
                        .map(store -> text(store, "-")).collect(java.util.stream.Collectors.joining(", ")));
            }
        }
        for (Map<String, Object> row : rows) {
            Object detail = row.get("detail");
            if (detail != null && !detail.toString().isEmpty()) {
                out.println(text(row.get("mountpoint"), String.valueOf(row.get("registryFile"))) + ": "
                        + Names.shown(detail.toString()));
            }
        }
    }

    /**
     * A field as the table shows it: escaped as {@code ls -b} and {@code chibifs trace} do, because any user
     * can plant a record in a registry of their own that root's status reads, and a mountpoint or context
     * holding a terminal's escape would otherwise retitle, clear or restyle root's terminal.
     */
    private static String text(Object value, String fallback) {
        return Names.shown(value == null ? fallback : value.toString());
    }

    /**
     * JSON strings carry the fields exactly, but as \\uXXXX for every control character: Jackson escapes C0
     * itself and writes DEL and C1 as they are (0x9b is a terminal's CSI), which any user can plant in a record
     * that root's status reads.
     */
    private static final class ControlEscapes extends CharacterEscapes {
        private static final int DEL = 0x7f;
        private static final int LAST_C1 = 0x9f;
        private final int[] ascii = standardAsciiEscapesForJSON();

        ControlEscapes() {
            ascii[DEL] = ESCAPE_STANDARD;
        }

        @Override
        public int[] getEscapeCodesForAscii() {
            return ascii;
        }

        @Override
        public SerializableString getEscapeSequence(int ch) {
            return ch > DEL && ch <= LAST_C1 ? new SerializedString(String.format("\\u%04x", ch)) : null;
        }
    }

    /** Uptime in the two largest units, like {@code 3d04h}, {@code 2h03m}, {@code 5m12s}, {@code 42s}. */
    static String uptime(long seconds) {
        long d = seconds / 86400;
        long h = seconds % 86400 / 3600;
        long m = seconds % 3600 / 60;
        long s = seconds % 60;
        if (d > 0) {
            return String.format("%dd%02dh", d, h);
        }
        if (h > 0) {
            return String.format("%dh%02dm", h, m);
        }
        if (m > 0) {
            return String.format("%dm%02ds", m, s);
        }
        return s + "s";
    }

    // root can read every user's registry: its own, each login session's, and each /tmp fallback
    static List<MountRegistry> hostRegistries() throws IOException {
        List<MountRegistry> found = new ArrayList<>();
        Path own = MountRegistry.defaultDir(MountRegistry.currentUid(), System.getenv());
        found.add(MountRegistry.at(own));
        if (MountRegistry.currentUid() == 0) {
            for (Path dir : globDirs(Path.of("/run/user"), "*")) {
                addIfOther(found, dir.resolve("chibifs"), dir.getFileName().toString());
            }
            for (Path dir : globDirs(Path.of("/tmp"), "chibifs-*")) {
                addIfOther(found, dir, dir.getFileName().toString().substring("chibifs-".length()));
            }
        }
        return found;
    }

    /** Another user's registry, {@code uid} as its path names it: believed only as far as that user wrote it. */
    private static void addIfOther(List<MountRegistry> found, Path dir, String uid) {
        if (Files.isDirectory(dir) && uid.matches("[0-9]{1,9}") && found.stream().noneMatch(r -> r.dir().equals(dir))) {
            found.add(MountRegistry.of(dir, Integer.parseInt(uid)));
        }
    }

    private static List<Path> globDirs(Path parent, String glob) throws IOException {
        List<Path> dirs = new ArrayList<>();
        if (Files.isDirectory(parent)) {
            try (DirectoryStream<Path> stream = Files.newDirectoryStream(parent, glob)) {
                stream.forEach(dirs::add);
            }
        }
        return dirs;
    }
}
