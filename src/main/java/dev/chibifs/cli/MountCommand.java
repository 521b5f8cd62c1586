package dev.chibifs.cli;

import dev.chibifs.cache.CacheSweeper;
import dev.chibifs.config.ChibiConfig;
import dev.chibifs.config.ChibiHome;
import dev.chibifs.config.HomeFile;
import dev.chibifs.fuse.CallerResolver;
import dev.chibifs.fuse.FuseDaemon;
import dev.chibifs.fuse.FuseMount;
import dev.chibifs.fuse.MountSpec;
import dev.chibifs.fuse.MountException;
import dev.chibifs.fuse.MountTable;
import dev.chibifs.policy.Caller;
import dev.chibifs.path.Names;
import dev.chibifs.policy.ContextNames;
import dev.chibifs.router.Namespace;
import dev.chibifs.policy.SymlinkRule;
import dev.chibifs.router.Router;
import dev.chibifs.router.StoreAwayException;
import dev.chibifs.router.UnreachablePrefixException;
import dev.chibifs.store.LocalStorage;
import dev.chibifs.sys.InvalidSpecException;
import dev.chibifs.sys.OwnedDirectories;
import dev.chibifs.sys.Syscalls;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.LongConsumer;
import java.util.stream.Collectors;

/** {@code chibifs mount}: serve the namespace at a mountpoint, per context or by uid map. */
@Command(name = "mount", mixinStandardHelpOptions = true,
        description = {
            "Mount the chibi namespace at MOUNTPOINT: /shared, /site and /tools/shared (every context"
                + " writes), /home/<context> and /tools/home/<context> (its owner writes), /flocks/<flock> and"
                + " /tools/flocks/<flock> (its members write), /sys (SYSTEM writes); everyone reads.",
            "Without --foreground, returns once the mount answers and leaves the daemon running, logging to"
                + " a file it names; with it, stays attached and logs to stderr.",
        },
        footer = {"", "Exit codes: 0 mounted (or, with --foreground, unmounted cleanly); 1 mount failed;"
                + " 2 bad option, context name, uid map or config."})
final class MountCommand implements Callable<Integer> {

    private static final Duration MOUNT_TIMEOUT = Duration.ofSeconds(60);

    @Spec
    CommandSpec spec;

    @Option(names = "--context", paramLabel = "NAME",
            description = "Per-context mount: every request acts as NAME (default: $CHIBI_CONTEXT).")
    String context;

    @Option(names = "--uid-map", paramLabel = "UID=NAME",
            description = "Map a uid to a context (repeatable, or a comma-separated list as status shows it); unmapped uids read but never write. Implies allow_other.")
    List<String> uidMaps = new ArrayList<>();

    @Option(names = "--system-uid", paramLabel = "UID", converter = UidConverter.class,
            description = "The uid that acts as SYSTEM (never implied, not even for root).")
    Long systemUid;

    @Option(names = "--home", paramLabel = "DIR", converter = HomeConverter.class,
            description = "CHIBI_HOME for this mount; the store is DIR/vfs (default: $CHIBI_HOME, else ~/.chibi).")
    Path home;

    @Mixin
    StoreOptions stores;

    @Option(names = "--foreground", description = "Stay attached and log to stderr.")
    boolean foreground;

    @Option(names = "-o", paramLabel = "FUSEOPT[,FUSEOPT...]", split = ",",
            description = "Extra FUSE mount options (e.g. allow_other, ro, entry_timeout=5).")
    List<String> fuseOptions = new ArrayList<>();

    @Option(names = DaemonLogLevel.OPTION, paramLabel = "LEVEL", defaultValue = DaemonLogLevel.DEFAULT,
            description = "error, warn, info, debug (one line per denial) or trace. Default: ${DEFAULT-VALUE}.")
    String logLevel;

    @Option(names = "--cache-sweep-interval", paramLabel = "DURATION", defaultValue = "1h",
            converter = SweepIntervalConverter.class,
            description = "How often the daemon removes tool-cache entries older than tool_cache_max_age_days + 1 days,"
                + " as chibi counts (config.toml, read again at each sweep; skipped when auto_cleanup_cache = false),"
                + " e.g. 30s, 10m, 1h; 1s to 365d. Default: ${DEFAULT-VALUE}.")
    Duration cacheSweepInterval;

    @Option(names = "--kernel-cache", paramLabel = "DURATION|off", converter = KernelCacheConverter.class,
            description = "How long the kernel may keep names, attributes, missing names and directory listings (1s to 1h),"
                + " kept true to the store by following it with inotify: changes made elsewhere show within milliseconds."
                + " off: libfuse's 1 s, nothing followed. Default: 30s on Linux 6.2 and later, off before (an older kernel"
                + " can only drop a changed directory's name, which fails getcwd of processes working in it).")
    Duration kernelCache;
    /** Whether {@code --kernel-cache} was given, not defaulted: the daemon names it in its log only then. */
    private boolean kernelCacheGiven;

    @Option(names = "--passthrough", negatable = true, defaultValue = "true", fallbackValue = "true",
            description = "Let the kernel read and write store files directly (FUSE passthrough) where it offers"
                + " to (Linux 6.9+) and the daemon has CAP_SYS_ADMIN (root, outside a user namespace): reads and"
                + " writes then cost no round trip to the daemon. --no-passthrough: the daemon serves them. 'chibifs stats' says which.")
    boolean passthrough;

    @Option(names = "--io-uring", negatable = true, defaultValue = "false", fallbackValue = "true",
            description = "Take requests through io_uring, one queue per CPU, served on the CPU that made them (FUSE"
                + " over io_uring: Linux 6.14+, and the fuse module's enable_uring on: echo 1 >"
                + " /sys/module/fuse/parameters/enable_uring). Where the kernel does not offer it, requests come"
                + " through /dev/fuse as without it; 'chibifs status' says which. Default: off.")
    boolean ioUring;

    @Option(names = "--xattr", negatable = true, defaultValue = "true", fallbackValue = "true",
            description = "Files show their ETag (SHA-256 of the content) as the read-only extended attribute"
                + " user.chibi.etag (getfattr -n user.chibi.etag FILE). --no-xattr: no extended attributes, and"
                + " one round trip less per write(2) the daemon serves (the kernel asks security.capability"
                + " before each). Default: on.")
    boolean xattr;

    @Option(names = "--readdirplus", negatable = true, defaultValue = "true", fallbackValue = "true",
            description = "Listings carry each name's attributes (READDIRPLUS), so ls -l, find -printf or stat of every"
                + " file in a directory asks nothing more per file. --no-readdirplus: plain listings, then one request"
                + " per file for its attributes. Default: on.")
    boolean readdirplus;

    @Option(names = "--symlinks", paramLabel = "zone|any|none", defaultValue = "zone", converter = SymlinkRuleConverter.class,
            description = "Which symbolic links may be made (chibi follows links in the store). zone: a target must be"
                + " relative and stay inside the link's zone (/shared, /home/<context>, ...), so no context reaches"
                + " another's home or the host through one; any: every target, wherever it leads; none: no links."
                + " Default: ${DEFAULT-VALUE}.")
    SymlinkRule symlinks;

    /** Set by a background mount for its daemon child, so the registry names the log file. */
    @Option(names = "--logged-to", hidden = true)
    Path loggedTo;
    /**
     * How SIGHUP opens the log again: a spawned daemon child ({@code --logged-to}) has it at stdout and
     * stderr; one detached by the launcher at its pipe and terminal too. Unused where the log is stderr.
     */
    private Hangup.Reopen reopenLog = file -> DetachedMount.reopenOver(file, DetachedMount.STDOUT, DetachedMount.STDERR);

    @Parameters(index = "0", paramLabel = "MOUNTPOINT", description = "An existing, empty directory.")
    Path mountpoint;

    /** How a line the daemon prints for the operator, not only for its log, begins. */
    private static final String WARNING = ErrorHandler.PREFIX + "warning: ";
    /** Whether the chibi home --home or $CHIBI_HOME names was not there: this mount makes it. */
    private boolean homeMade;

    /** What the operator is told after the mounted line: stores that did not answer at start (each serves what this host has). */
    private final List<String> warnings = new ArrayList<>();

    /** Serves {@code chibifs stats}, {@code sync} and {@code trace} until the daemon exits; a mount without them still works. */
    private static void startSockets(MountRegistry registry, long pid, FuseDaemon daemon, Namespace namespace,
                                         org.slf4j.Logger log) {
        StatsSocket.removeDeadDaemons(registry);
        java.nio.file.Path socket = StatsSocket.pathFor(registry, pid);
        try {
            StatsSocket served = StatsSocket.serve(socket,
                    () -> StatsSocket.snapshot(daemon.stats(), daemon.negotiated(), daemon.held(), namespace.storeStates(),
                            namespace.storeTroubles(), namespace.storeNextTries(), namespace.storeFailures(), namespace.storeCautions(),
                            namespace.uploads(), namespace.storeTraffic()));
            Runtime.getRuntime().addShutdownHook(new Thread(served::close, "chibifs-stats-close"));
        } catch (IOException | RuntimeException e) {
            log.warn("chibifs stats will not reach this mount: cannot listen at {}: {}", socket, e.getMessage());
        }
        java.nio.file.Path syncSocket = StatsSocket.syncPathFor(registry, pid);
        try {
            StatsSocket served = StatsSocket.serve(syncSocket, () -> StatsSocket.synced(namespace, daemon));
            Runtime.getRuntime().addShutdownHook(new Thread(served::close, "chibifs-sync-close"));
        } catch (IOException | RuntimeException e) {
            log.warn("chibifs sync will not reach this mount: cannot listen at {}: {}", syncSocket, e.getMessage());
        }
        java.nio.file.Path traceSocket = TraceSocket.pathFor(registry, pid);
        try {
            StatsSocket served = TraceSocket.serve(traceSocket, daemon.stats().trace());
            Runtime.getRuntime().addShutdownHook(new Thread(served::close, "chibifs-trace-close"));
        } catch (IOException | RuntimeException e) {
            log.warn("chibifs trace will not reach this mount: cannot listen at {}: {}", traceSocket, e.getMessage());
        }
    }

    /** What a validated command line asks for. */
    private record Plan(CallerResolver callers, List<String> homes, boolean uidMapped, String describe, String uidMap) {
    }

    @Override
    public Integer call() throws IOException {
        Plan plan = validate();
        if (mountpoint.toString().isEmpty()) {
            throw new UsageException("MOUNTPOINT is empty: name an existing, empty directory"); // not '.' by accident
        }
        // only doctor said so, and a mount is made without running it; a warning: the operator may mean it
        subordinateUidWarning(uidMaps, DoctorCommand.SUBUID).ifPresent(w -> {
            err().println(WARNING + w);
            err().flush();
        });
        ChibiHome chibiHome = ChibiHome.resolve(home, System.getenv());
        Path mp = realMountpoint(mountpoint);
        Path store = realMountpoint(chibiHome.store());
        if (mp.startsWith(store)) {
            // the daemon would hold its own mountpoint open as a store directory: no unmount, endless paths
            throw new UsageException("mountpoint " + Names.shown(mp) + " is inside the store it would serve (" + Names.shown(store)
                    + "): choose a directory outside it");
        }
        Path homeDir = realMountpoint(chibiHome.dir());
        if (homeDir.startsWith(mp)) {
            // the home made in the mountpoint (vfs/, chibifs/) then made it not empty, and every retry
            // failed; with -o nonempty the mount hid its own store and log, and status said both had gone
            throw new UsageException("chibi home " + Names.shown(homeDir) + " is inside the mountpoint " + Names.shown(mp) + ", which the mount"
                    + " would hide: choose a home outside it");
        }
        for (Map.Entry<Path, String> shown : stores.shownDirectories().entrySet()) {
            Path dir = realMountpoint(shown.getKey());
            if (mp.startsWith(dir)) {
                // as above: the daemon served its own mount, which no umount, -z or SIGTERM then ended
                throw new UsageException("mountpoint " + Names.shown(mp) + " is inside " + Names.shown(dir) + ", which the mount would show ("
                        + shown.getValue() + "): choose a directory outside it");
            }
        }
        stores.requireCacheDirOutside(store, mp); // before anything makes it
        requireOutsideChibifsMounts(MountTable.read(MountTable.SYSTEM_TABLE), mp);
        if (FuseDaemon.clearStale(mp)) {
            // news, not a failure: on stdout with the mounted line, so mount(8)'s helper, quiet on
            // success as mount(8) is, drops both (-v shows them)
            PrintWriter out = spec.commandLine().getOut();
            out.println(ErrorHandler.PREFIX + "cleared a stale mount at " + Names.shown(mp) + " left by a daemon that died");
            out.flush();
        }
        Optional<MountTable.MountEntry> there = MountTable.find(mp);
        if (there.isPresent()) {
            throw new MountFailure(alreadyMounted(there.get(), mp));
        }
        requireDirectory(mp);
        try {
            // before the store is touched: a mount that failed here left its context's home directories made
            FuseMount.requireEmpty(mp, MountSpec.parse(fuseOptions));
        } catch (MountException e) {
            throw mountFailure(e, mp);
        }
        if (stores.mounts().stream().noneMatch(m -> m.prefix().isRoot()) && Router.namespaceDirectories(plan.homes()).stream()
                .anyMatch(d -> !Files.isDirectory(chibiHome.store().resolve(d.substring(1))))) {
            // the daemon makes the store's missing directories first: a home root owns failed there with a
            // bare "Permission denied: /sys", the store's own path for the directory it could not make
            String denied = WriteAccess.whyNotMake(chibiHome.store());
            if (denied != null) {
                throw new MountFailure("cannot write the store " + chibiHome.store() + ": " + denied + ": as root, "
                        + WriteAccess.giveCommand(chibiHome.store()) + ", or choose a --home of your own");
            }
        }
        // made, as chibi's first run makes one, but said in the mounted line: a mistyped --home mounted
        // an empty store without a word
        homeMade = ChibiHome.named(home, System.getenv()) && !Files.isDirectory(chibiHome.dir());
        // what the daemon makes (store directories, caches, its log) is never writable by others,
        // whatever umask it was started with: at umask 000 an unmapped user wrote the store directly
        Syscalls.umaskAtLeast(022);
        List<Path> mayMake = new ArrayList<>(List.of(chibiHome.dir(), homeLogs(chibiHome), ROOT_LOGS));
        if (stores.mounts().stream().noneMatch(m -> m.prefix().isRoot())) {
            // in a home there was, the store's directories the daemon makes (the context's own home among them)
            mayMake.add(chibiHome.store());
            List<String> dirs = new ArrayList<>(Router.namespaceDirectories(plan.homes()));
            stores.mounts().forEach(m -> {
                for (dev.chibifs.path.VfsPath p = m.prefix().parent(); p != null && !p.isRoot(); p = p.parent()) {
                    dirs.add(p.toString());
                }
            });
            dirs.forEach(d -> mayMake.add(chibiHome.store().resolve(d.substring(1))));
        }
        MadeByThisMount made = new MadeByThisMount(mayMake, List.of(homeLogs(chibiHome), ROOT_LOGS), logName(mp));
        try {
            if (foreground) {
                return runDaemon(plan, chibiHome, mp, pid -> answered());
            }
            Optional<DetachedMount> detached = DetachedMount.fromEnvironment(System.getenv());
            return detached.isPresent() ? runDetached(detached.get(), plan, chibiHome, mp) : spawnDaemon(plan, chibiHome, mp);
        } catch (MountFailure | IOException e) {
            if (mountAnswered) {
                throw e; // what it made has served: the agents' now
            }
            Path log = made.removeAll();
            // the failure's line named the log it had just removed
            if (log != null && e instanceof MountFailure) {
                throw new MountFailure(e.getMessage().replace(" (log: " + Names.shown(log) + ")", ""));
            }
            throw e;
        }
    }

    /** Whether the mount answered: from then on, a failure leaves what it made, which its agents used. */
    private volatile boolean mountAnswered;

    /** The mount answers: what it made stays, and what it makes from now on is not noted. */
    private void answered() {
        mountAnswered = true;
        dev.chibifs.sys.MadeDirectories.stop();
    }

    /**
     * What a mount that fails makes, to be removed again: a failed mount of a new home left the home,
     * its store's directories and a logs directory holding the failure's log behind; of a home there
     * was, the store's directories (its context's /home and /tools/home). Each path given
     * that does not exist yet is noted at its topmost missing directory; on failure this mount's log
     * there goes (in a logs directory this mount made), then, bottom up, every directory below that one
     * that this process made ({@link dev.chibifs.sys.MadeDirectories}: by device and inode, noted at its
     * mkdir) and that is left empty, by rmdir: anything else (another mount's log, a file another
     * process put there meanwhile, a directory another mount of the store made meanwhile, empty or not)
     * stays, and so do the directories leading to it. A log in a logs directory that was there stays:
     * the failure's line names it.
     */
    static final class MadeByThisMount {
        private final List<Path> tops = new ArrayList<>();
        private final List<Path> logDirs;
        private final String logName;

        /** The directories this process made since: only those are removed, and only while empty. */
        private final java.util.Set<dev.chibifs.sys.MadeDirectories.Identity> made;

        MadeByThisMount(List<Path> dirs, List<Path> logDirs, String logName) {
            this(dirs, logDirs, logName, dev.chibifs.sys.MadeDirectories.record());
        }

        /** As {@link #MadeByThisMount(List, List, String)}, with the directories this mount made in {@code made} (tests). */
        MadeByThisMount(List<Path> dirs, List<Path> logDirs, String logName,
                        java.util.Set<dev.chibifs.sys.MadeDirectories.Identity> made) {
            this.made = made;
            this.logDirs = logDirs.stream().map(d -> d.toAbsolutePath().normalize()).toList();
            this.logName = logName;
            for (Path dir : dirs) {
                Path top = null;
                for (Path p = dir.toAbsolutePath().normalize(); p != null && !Files.exists(p, LinkOption.NOFOLLOW_LINKS);
                        p = p.getParent()) {
                    top = p;
                }
                if (top != null && tops.stream().noneMatch(top::startsWith)) {
                    tops.add(top);
                }
            }
        }

        /** Removes what was made; returns the log removed (the last, where several), or null. */
        Path removeAll() {
            Path[] log = new Path[1];
            for (Path top : tops) {
                try (java.util.stream.Stream<Path> walk = Files.walk(top)) {
                    for (Path p : walk.sorted(java.util.Comparator.reverseOrder()).toList()) {
                        boolean isLog = p.getFileName().toString().equals(logName) && logDirs.contains(p.getParent())
                                && Files.isRegularFile(p, LinkOption.NOFOLLOW_LINKS);
                        // a directory of the same name another mount of the store made meanwhile is its own:
                        // rmdir (never recursive) of those this process made, by their identity
                        boolean ours = Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS)
                                && made.contains(dev.chibifs.sys.MadeDirectories.identity(p));
                        if (isLog || ours) {
                            try {
                                Files.delete(p);
                                if (isLog) {
                                    log[0] = p;
                                }
                            } catch (IOException notEmptyOrNotOurs) {
                                // kept, with the directories leading to it
                            }
                        }
                    }
                } catch (IOException | java.io.UncheckedIOException unreadable) {
                    // nothing made there, or it cannot be read: left as it is
                }
            }
            return log[0];
        }
    }

    /**
     * Where the kernel mounts for {@code p}: every link followed, as mount(2) follows them (chibifs
     * then finds its mount in the mount table by that path). A stale mount there cannot be
     * looked at, so its name is taken in its resolved parent, a link as the last name followed by hand.
     */
    /**
     * Refuses a mountpoint inside another chibifs mount: whoever reaches it through that mount would
     * act with this one's context (a tester mounted coder's namespace at /shared/nest of planner's
     * mount, and every process in planner's could write coder's home; {@code rm -r} went down into it).
     */
    static void requireOutsideChibifsMounts(List<MountTable.MountEntry> mounts, Path mp) {
        MountTable.containing(mounts, mp).filter(MountTable.MountEntry::isChibifs).ifPresent(outer -> {
            throw new UsageException("mountpoint " + Names.shown(mp) + " is inside the chibifs mount " + Names.shown(outer.mountpoint())
                    + ", whose users would reach it with this mount's rights: choose a directory outside it");
        });
    }

    static Path realMountpoint(Path p) {
        Path abs = p.toAbsolutePath().normalize();
        for (int links = 0; links < 40; links++) { // SYMLOOP_MAX
            try {
                return abs.toRealPath();
            } catch (IOException unreadable) {
                // missing, or a stale mount (ENOTCONN): below
            }
            Path parent = abs.getParent();
            if (parent == null) {
                return abs;
            }
            try {
                Path at = parent.toRealPath().resolve(abs.getFileName());
                if (!Files.isSymbolicLink(at)) {
                    return at;
                }
                abs = at.getParent().resolve(Files.readSymbolicLink(at)).normalize();
            } catch (IOException e) {
                return abs;
            }
        }
        return abs;
    }

    private PrintWriter err() {
        return spec.commandLine().getErr();
    }

    private Plan validate() {
        kernelCacheGiven = kernelCache != null;
        if (kernelCache == null) {
            kernelCache = Duration.ofSeconds(FuseDaemon.defaultKernelCacheSeconds());
        }
        if (!Files.exists(Path.of("/dev/fuse"))) {
            throw new MountFailure("/dev/fuse is missing: install fuse3 (apt-get install fuse3) or load the fuse module");
        }
        if (!DaemonLogLevel.LEVELS.contains(logLevel)) {
            throw new UsageException("invalid --log-level '" + logLevel + "': one of error, warn, info, debug, trace");
        }
        stores.mounts(); // a bad --store or --tools-sys stops here, before anything is mounted
        requireValidFuseOptions(fuseOptions);
        if (context != null && !uidMaps.isEmpty()) {
            throw new UsageException("--context and --uid-map exclude each other: a mount is per context or by uid");
        }
        if (!uidMaps.isEmpty()) {
            Map<Long, String> map = parseUidMaps(uidMaps, systemUid);
            return new Plan(CallerResolver.uidMap(map, systemUid), List.copyOf(new java.util.LinkedHashSet<>(map.values())),
                    true, "uid map " + describe(map) + (systemUid != null ? ", SYSTEM uid " + systemUid : ""),
                    describe(map));
        }
        // as the vfs commands take it, and say where a bad name came from
        String name = CallerOptions.contextName(context, System.getenv(), "");
        if (name == null) {
            throw new UsageException("name the caller: --context NAME (one context per mount), --uid-map UID=NAME ...,"
                    + " or set CHIBI_CONTEXT=NAME");
        }
        if (systemUid != null) {
            throw new UsageException("--system-uid goes with --uid-map: a per-context mount has one caller");
        }
        Caller caller = Caller.context(name);
        return new Plan(CallerResolver.fixed(caller), List.of(caller.name()), false, "context " + caller.name(), "");
    }

    /**
     * Why a mount at {@code mp}, where {@code there} is mounted, is refused, and what to do: chibifs
     * umount unmounts only chibifs mounts (of a bind mount it advised it, which then refused).
     */
    static String alreadyMounted(MountTable.MountEntry there, Path mp) {
        if (there.isChibifs()) {
            return Names.shown(mp) + " is already a mount point (chibifs umount " + Names.shown(mp) + " first)";
        }
        return Names.shown(mp) + " is already a mount point (a " + there.fsType() + " mount, not chibifs: umount " + Names.shown(mp)
                + " first, or choose another directory)";
    }

    /**
     * What doctor's subordinate-uid check ({@link DoctorCommand#subordinateUids}) finds wrong with {@code uidMaps}
     * and {@code subuid}, as one line: a mapped uid in a user's /etc/subuid range lets that user act as the agent.
     */
    static Optional<String> subordinateUidWarning(List<String> uidMaps, Path subuid) {
        if (uidMaps.isEmpty()) {
            return Optional.empty();
        }
        DoctorCommand.Check check = DoctorCommand.subordinateUids(uidMaps, subuid);
        return check.ok() ? Optional.empty() : Optional.of(check.name() + ": " + check.detail() + "; " + check.fix());
    }

    /**
     * Why a mount at {@code mp} that found {@code there} mounted since it looked (it was not, or the mount
     * would have stopped at {@link #alreadyMounted}) is refused: two mounts raced to one empty directory,
     * and the loser said it was "not empty, or pass -o nonempty", which would mount it over the winner.
     */
    static String takenMeanwhile(MountTable.MountEntry there, Path mp) {
        String shown = Names.shown(mp);
        if (there.isChibifs()) {
            return shown + " is already a mount point: another chibifs mount took it while this one started (chibifs"
                    + " status shows it; chibifs umount " + shown + " first, or choose another directory)";
        }
        return shown + " is already a mount point: a " + there.fsType() + " mount came there while this one started"
                + " (umount " + shown + " first, or choose another directory)";
    }

    /** A MountException as the mount's failure: where another mount took the mountpoint meanwhile, {@link #takenMeanwhile}. */
    static MountFailure mountFailure(MountException e, Path mp) {
        return new MountFailure(e.mountedThere().map(there -> takenMeanwhile(there, mp)).orElse(e.getMessage()));
    }

    /** Refuses {@code -o} options that are unknown or malformed, naming the first and its rule; mount and doctor alike. */
    static void requireValidFuseOptions(List<String> fuseOptions) {
        try {
            MountSpec.parse(fuseOptions);
        } catch (InvalidSpecException e) {
            throw new UsageException(e.getMessage());
        }
    }

    /** Refuses a mountpoint that is no directory, with the hint that fits: mkdir -p cannot make one over a file. */
    static void requireDirectory(Path mp) {
        if (Files.isDirectory(mp)) {
            return;
        }
        if (Files.exists(mp, LinkOption.NOFOLLOW_LINKS)) {
            throw new MountFailure("mountpoint " + Names.shown(mp) + " is not a directory: choose a directory, or move it aside");
        }
        throw new MountFailure("mountpoint " + Names.shown(mp) + " is not an existing directory (mkdir -p " + Names.shown(mp) + ")");
    }

    /** What a uid is: a uid_t, 32 bits, but not (uid_t) -1, which chown(2) and setresuid(2) read as "leave it". */
    private static final String UID_RULE = "UID must be a number from 0 to 4294967294";

    private static boolean isUid(long uid) {
        return uid >= 0 && uid < 0xFFFF_FFFFL;
    }

    /** Reads {@code --system-uid}: a word and -1 alike get the rule, not picocli's "is not a long". */
    static final class UidConverter implements CommandLine.ITypeConverter<Long> {
        @Override
        public Long convert(String value) {
            try {
                long uid = Long.parseLong(value);
                if (isUid(uid)) {
                    return uid;
                }
            } catch (NumberFormatException e) {
                // refused below, with the rule
            }
            throw new CommandLine.TypeConversionException("'" + value + "': " + UID_RULE);
        }
    }

    /**
     * Parses {@code --uid-map} values, each {@code UID=NAME} or a comma-separated list of them; a uid
     * mapped twice, or also named SYSTEM, is refused, and so is an empty entry (split here, not by
     * picocli, which dropped one at the end: {@code 1001=planner,} passed without a word).
     */
    static Map<Long, String> parseUidMaps(List<String> values, Long systemUid) {
        List<String> entries = new ArrayList<>();
        for (String value : values) {
            String[] listed = value.split(",", -1);
            if (listed.length > 1 && java.util.Arrays.asList(listed).contains("")) {
                throw new UsageException("invalid --uid-map '" + Names.shown(value) + "': an empty entry (a comma too many):"
                        + " the form is UID=NAME or UID=NAME,UID=NAME..., e.g. 1001=planner,1002=coder");
            }
            entries.addAll(List.of(listed));
        }
        Map<Long, String> map = new LinkedHashMap<>();
        for (String e : entries) {
            int eq = e.indexOf('=');
            if (eq <= 0 || eq == e.length() - 1) {
                throw new UsageException("invalid --uid-map '" + Names.shown(e) + "': the form is UID=NAME, e.g. 1001=planner");
            }
            long uid;
            try {
                uid = Long.parseLong(e.substring(0, eq));
            } catch (NumberFormatException nfe) {
                uid = -1;
            }
            if (!isUid(uid)) {
                throw new UsageException("invalid --uid-map '" + Names.shown(e) + "': " + UID_RULE);
            }
            String name = e.substring(eq + 1);
            if (!ContextNames.isValid(name)) {
                throw new UsageException("invalid --uid-map '" + Names.shown(e) + "': " + ContextNames.RULE);
            }
            String before = map.putIfAbsent(uid, name);
            if (before != null && !before.equals(name)) {
                throw new UsageException("invalid --uid-map '" + Names.shown(e) + "': uid " + uid + " is already mapped to " + before);
            }
            if (systemUid != null && systemUid == uid) {
                throw new UsageException("invalid --uid-map '" + Names.shown(e) + "': uid " + uid + " is the --system-uid");
            }
        }
        return map;
    }

    private static String describe(Map<Long, String> map) {
        List<String> parts = new ArrayList<>();
        map.forEach((u, n) -> parts.add(u + "=" + n));
        return String.join(",", parts);
    }

    // ---- foreground: this process is the daemon ----

    /** Serves the mount until it is unmounted; {@code answering} learns this process's pid once the mount answers. */
    private int runDaemon(Plan plan, ChibiHome chibiHome, Path mp, LongConsumer answering)
            throws IOException {
        // the level itself was set by Main before any logger was made (DaemonLogLevel)
        org.slf4j.Logger log = org.slf4j.LoggerFactory.getLogger(MountCommand.class);
        ChibiConfig config = ChibiConfig.load(chibiHome);
        Namespace namespace;
        try {
            namespace = stores.open(chibiHome, System.getenv(), symlinks);
        } catch (IOException e) {
            // nothing is mounted yet: one line and exit 1, as every other reason a mount cannot start
            throw new MountFailure(e.getMessage());
        }
        Optional<LocalStorage> storage = namespace.rootStore();
        Router router = namespace.router();
        try {
            router.createNamespace(plan.homes());
        } catch (dev.chibifs.router.ReadOnlyStoreLacksException e) {
            // the user may have given no --store at all: the store directory is what to name
            throw new MountFailure(storage.isPresent() && e.prefix().isRoot()
                    ? "the store directory " + storage.get().root() + " is read-only and lacks the directories chibifs needs"
                            + " there: " + String.join(", ", e.missing()) + "; mount it writable once, or make them while it is"
                    : e.getMessage());
        } catch (UnreachablePrefixException e) {
            throw new MountFailure("invalid --store: " + e.getMessage());
        } catch (IOException e) {
            if (storage.isPresent() && !(e instanceof StoreAwayException)) {
                throw e;
            }
            if (storage.isPresent()) {
                // an S3 store at a prefix that does not answer, another store nested below it: the warning
                // below names the store; the directories leading there are made by a mount once it answers
                log.warn("directories leading to a store's prefix not made: {}", e.getMessage());
            } else {
                // an S3 store at / that does not answer: the mount serves what this host has seen and
                // keeps its changes until S3 answers (a daemon killed in an outage must come back)
                String unanswered = "the store did not answer (" + e.getMessage() + "): the mount serves what this"
                        + " host has and sends its changes when it answers (chibifs stats " + Names.shown(mp) + " shows when); a"
                        + " mount made then makes the namespace's directories that are missing";
                // to the log (stderr is the log but in the foreground); a background mount prints it too,
                // after its mounted line, and spawnDaemon finds it there by its prefix
                warnings.add(unanswered);
                System.err.println(WARNING + unanswered);
            }
        }
        // the store at / says so above; a store at a prefix that does not answer serves what this host has too
        namespace.unansweredBelowRoot().forEach((prefix, why) -> {
            String unanswered = "the store at " + prefix + " did not answer (" + why + "): the mount serves what this host"
                    + " has there and sends its changes when it answers (chibifs stats " + Names.shown(mp) + " shows when)";
            warnings.add(unanswered);
            System.err.println(WARNING + unanswered);
        });
        // chibi reads config.toml at every command: the sweep reads its cache settings at every sweep
        CacheSweeper sweeper = CacheSweeper.create(router, config, () -> ChibiConfig.load(chibiHome),
                cacheSweepInterval, Clock.systemUTC());
        MountRegistry registry = MountRegistry.forCurrentUser();
        try {
            registry.prepare(); // before mounting: a mount whose sockets another user could fake is refused whole
        } catch (IOException e) {
            closeStores(namespace, mp, log);
            throw new MountFailure(e.getMessage());
        }
        List<String> options = FuseDaemon.optionsFor(plan.uidMapped(), fuseOptions);
        long uid = ((Number) Files.getAttribute(Path.of("/proc/self"), "unix:uid")).longValue();
        long gid = ((Number) Files.getAttribute(Path.of("/proc/self"), "unix:gid")).longValue();
        // the hook goes in before the mount answers: a SIGTERM right after mounting must still unmount cleanly
        // Only the local root store's files have descriptors the kernel can take: a mount of a bucket at /
        // asks for no passthrough, so what it reports (status IO, stats) is what its files get.
        FuseDaemon daemon = FuseDaemon.create(mp, router, plan.callers(), options, uid, gid,
                (int) kernelCache.toSeconds(), readdirplus).passthrough(passthrough && storage.isPresent())
                .xattr(xattr).ioUring(ioUring).unfollowedRoot(stores.rootListingValidity(), kernelCacheGiven);
        AtomicBoolean stopping = new AtomicBoolean();
        Hangup.handle(loggedTo, reopenLog, log); // before the mount answers: a rotation's SIGHUP must not unmount it
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            if (stopping.compareAndSet(false, true)) {
                log.info("signal received: unmounting {}", mp);
                sweeper.close();
                boolean clean = daemon.unmount(Duration.ofSeconds(10));
                closeStores(namespace, mp, log);
                forget(registry, mp, log);
                log.info("stopped {}{}", mp, clean ? "" : " (files were still open; the mount was detached lazily)");
                // exit 0 for SIGTERM/SIGINT, as a clean stop; the JVM would otherwise report 143/130
                Runtime.getRuntime().halt(0);
            }
        }, "chibifs-shutdown"));
        try {
            daemon.start(MOUNT_TIMEOUT);
        } catch (MountException e) {
            // nothing is mounted: the exit hook must not unmount, nor turn this failure into a clean exit 0
            stopping.set(true);
            closeStores(namespace, mp, log);
            throw mountFailure(e, mp);
        }
        DaemonPid.Identity me = DaemonPid.current();
        log.info("mounted {} ({}; stores {}; options {}; {}; pid {})", mp, plan.describe(), String.join(" ", namespace.stores()),
                String.join(",", daemon.options()), daemon.negotiated(), me.pid());
        Instant started = Instant.now();
        java.util.function.Supplier<MountRecord> record = () -> new MountRecord(mp, me.pid(),
                plan.uidMapped() ? MountRecord.MODE_UIDMAP : MountRecord.MODE_CONTEXT,
                plan.uidMapped() ? null : plan.homes().get(0), plan.uidMap(),
                systemUid == null ? null : systemUid.intValue(), chibiHome.dir(),
                storage.map(LocalStorage::root).orElse(chibiHome.store()), started,
                String.join(",", daemon.options()), loggedTo == null ? "stderr" : loggedTo.toString(),
                String.join(" ", namespace.stores()), daemon.negotiated(), me.namespace(), me.namespacePid());
        // the kernel may refuse passthrough at the first open (a user namespace): status's IO column then says served
        daemon.whenPassthroughRefused(() -> {
            if (!stopping.get()) {
                record(registry, record, log);
            }
        });
        record(registry, record, log);
        sweeper.start();
        startSockets(registry, me.pid(), daemon, namespace, log);
        // after the registry and the sockets: `chibifs status`, `stats` and `sync` find the mount once `mount` returns
        answering.accept(me.pid());
        // only a local root store has the temporary files of interrupted atomic writes
        storage.ifPresent(local -> startTemporaryCleanup(local, log));
        daemon.awaitUnmounted();
        if (stopping.compareAndSet(false, true)) {
            sweeper.close();
            daemon.unmount(Duration.ZERO);
            closeStores(namespace, mp, log);
            forget(registry, mp, log);
            log.info("unmounted {} (daemon pid {})", mp, ProcessHandle.current().pid());
        }
        return ExitCodes.OK;
    }

    /** Writes the mount's record as it is now; one write at a time, so the last written says the latest. */
    private static synchronized void record(MountRegistry registry, java.util.function.Supplier<MountRecord> record,
                                            org.slf4j.Logger log) {
        try {
            registry.write(record.get());
        } catch (IOException | RuntimeException e) {
            log.warn("cannot record the mount for 'chibifs status' in {}: {}", registry.dir(), e.getMessage());
        }
    }

    /**
     * Closes the namespace's stores once the FUSE session has ended and every handle is closed, so
     * that umount and SIGTERM return only after an S3 store has uploaded everything pending (what
     * it cannot upload stays journaled in its cache directory, and the log says so).
     */
    private static void closeStores(Namespace namespace, Path mp, org.slf4j.Logger log) {
        try {
            namespace.close();
        } catch (IOException | RuntimeException e) {
            log.warn("closing the stores of {}: {}", mp, e.getMessage());
        }
    }

    private static void forget(MountRegistry registry, Path mp, org.slf4j.Logger log) {
        try {
            registry.remove(mp, ProcessHandle.current().pid());
        } catch (IOException e) {
            log.warn("cannot remove the registry entry for {}: {}", mp, e.getMessage());
        }
    }

    /** Atomic writes that a crash interrupted leave temporary files; old ones go, off the mount's critical path. */
    private static void startTemporaryCleanup(LocalStorage storage, org.slf4j.Logger log) {
        Thread t = new Thread(() -> {
            try {
                int n = storage.removeStaleTemporaries(Duration.ofMinutes(10));
                if (n > 0) {
                    log.info("removed {} stale temporary file(s) left by interrupted writes", n);
                }
            } catch (IOException | RuntimeException e) {
                log.warn("temporary-file cleanup stopped: {}", e.toString());
            }
        }, "chibifs-tmp-cleanup");
        t.setDaemon(true);
        t.start();
    }

    // ---- background, started by the launcher: this process becomes the daemon ----

    private int runDetached(DetachedMount detached, Plan plan, ChibiHome chibiHome, Path mp) throws IOException {
        Path logFile = logFile(chibiHome, mp);
        spec.commandLine().setErr(detached.detach(logFile));
        loggedTo = logFile;
        reopenLog = detached::reopenLog;
        try {
            return runDaemon(plan, chibiHome, mp, pid -> {
                answered();
                detached.mounted(mountedLine(plan, chibiHome, mp, pid, logFile));
            });
        } catch (MountFailure e) {
            System.err.println(ErrorHandler.PREFIX + e.getMessage()); // the log says how its mount ended too
            throw new MountFailure(e.getMessage() + " (log: " + Names.shown(logFile) + ")");
        }
    }

    /** Where a root daemon logs when the home is another user's (see {@link #logFile}). */
    static final Path ROOT_LOGS = Path.of("/var/log/chibifs");

    /**
     * The daemon's log file, in the logs directory of chibifs's home, named after the mountpoint;
     * in {@link #ROOT_LOGS} for a daemon run as root on a home another user may write (owns, or
     * writes as a group's member): root would write by a path that user controls (a tester's link
     * there had root append its log to a file of root's, another's link at a group-writable home's
     * logs directory had root make its log in a directory of root's), and its log would keep that
     * user's own mount from opening its own. The rule of the S3 caches ({@code S3Options.cachesOf}).
     */
    static Path logFile(ChibiHome chibiHome, Path mp) throws IOException {
        Path homeLogs = homeLogs(chibiHome);
        String whyNotHome = whyRootLogsElsewhere(homeLogs);
        Path logDir = whyNotHome == null ? homeLogs : ROOT_LOGS;
        try {
            dev.chibifs.sys.MadeDirectories.createDirectories(logDir);
        } catch (java.nio.file.AccessDeniedException e) {
            if (whyNotHome == null) {
                throw new MountFailure(homeLogsRefused(logDir, e));
            }
            throw new MountFailure(rootLogsRefused(homeLogs, whyNotHome));
        } catch (IOException e) {
            // the JDK says only "File exists" or "Not a directory" of what is in the way
            String why = inTheWay(logDir);
            if (why == null) {
                throw e;
            }
            throw new MountFailure("cannot keep the daemon's log in " + logDir + ": " + why);
        }
        if (whyNotHome != null && !Files.isWritable(logDir)) {
            throw new MountFailure(rootLogsRefused(homeLogs, whyNotHome));
        }
        return logDir.resolve(logName(mp));
    }

    /** What to do when this user may not keep a log in the home's logs directory (a home root owns). */
    static String homeLogsFix(Path homeLogs) {
        // a home's logs are <home>/chibifs/logs; anywhere else (root's /var/log/chibifs) names no home to give
        Path chibifs = homeLogs.getParent();
        boolean inHome = homeLogs.endsWith("logs") && chibifs != null && chibifs.endsWith("chibifs") && chibifs.getParent() != null;
        String give = inHome ? WriteAccess.giveCommand(chibifs.getParent()) : "chown -R " + WriteAccess.chownUser() + " HOME";
        return "mount with --foreground (it logs to stderr), give the home to this user (as root, " + give
                + "), or choose a --home of your own";
    }

    /** Why the log cannot go where {@code refused} says, naming the path that refused and whom. */
    static String homeLogsRefused(Path logDir, java.nio.file.AccessDeniedException refused) {
        Path at = refused.getFile() == null ? logDir : Path.of(refused.getFile());
        return "cannot keep the daemon's log in " + logDir + ": " + WriteAccess.denied(at) + ": " + homeLogsFix(logDir);
    }

    /** The most a log's name takes, in bytes: well below the 255 of a file name, whatever the file system. */
    static final int LOG_NAME_LIMIT = 200;
    /** How many hex digits of the SHA-256 of the mountpoint tell apart the logs of mountpoints one name stood for. */
    private static final int LOG_HASH_DIGITS = 8;
    /** The end of a name that carries the hash: a readable name ending so gets one too, so no name is both. */
    private static final java.util.regex.Pattern HASHED = java.util.regex.Pattern.compile(".*-[0-9a-f]{" + LOG_HASH_DIGITS + "}");

    /**
     * The name of the log of a mount at {@code mp}, in whichever logs directory it goes: the path with
     * each '/' and each control character (a newline made a log name that split every line naming
     * it) as '_'. Where that mapping lost something (the path had a '_' or a control character:
     * {@code /a/b}, {@code /a_b} and {@code /a<newline>b} all logged to {@code mount-a_b.log}, the
     * daemons writing one file), where it could be taken for one that did, or where the name would
     * pass {@link #LOG_NAME_LIMIT} bytes (a long mountpoint's daemon could not make its log), it
     * ends with the first {@link #LOG_HASH_DIGITS} hex digits of the SHA-256 of the path, and keeps
     * the path's end, cut to fit.
     */
    static String logName(Path mp) {
        String text = mp.toString();
        boolean lossy = text.equals("/"); // "root", as /root is named
        String path = text.equals("/") ? "root" : text.substring(1);
        StringBuilder readable = new StringBuilder();
        for (int i = 0; i < path.length(); ) {
            int c = path.codePointAt(i);
            i += Character.charCount(c);
            boolean control = c < 0x20 || c >= 0x7f && c <= 0x9f;
            lossy |= control || c == '_';
            readable.appendCodePoint(c == '/' || control ? '_' : c);
        }
        String plain = "mount-" + readable + ".log";
        if (!lossy && !HASHED.matcher(readable).matches() && utf8Length(plain) <= LOG_NAME_LIMIT) {
            return plain;
        }
        String hash = dev.chibifs.store.ContentHash.sha256Hex(text.getBytes(java.nio.charset.StandardCharsets.UTF_8))
                .substring(0, LOG_HASH_DIGITS);
        int room = LOG_NAME_LIMIT - utf8Length("mount--" + hash + ".log");
        // the end of the path: its last names tell a mount best
        int from = readable.length();
        while (from > 0) {
            int before = readable.offsetByCodePoints(from, -1);
            if (utf8Length(readable.substring(before)) > room) {
                break;
            }
            from = before;
        }
        return "mount-" + readable.substring(from) + "-" + hash + ".log";
    }

    private static int utf8Length(CharSequence s) {
        return s.toString().getBytes(java.nio.charset.StandardCharsets.UTF_8).length;
    }

    /** Where the daemon's log goes unless {@link #whyRootLogsElsewhere} says otherwise. */
    static Path homeLogs(ChibiHome chibiHome) {
        return chibiHome.chibifsDir().resolve("logs");
    }

    /** Why a daemon run as root keeps its log in {@link #ROOT_LOGS}, not in {@code homeLogs}; null: it does not. */
    static String whyRootLogsElsewhere(Path homeLogs) throws IOException {
        return Syscalls.geteuid() == 0 ? OwnedDirectories.whyOthersMayWrite(homeLogs) : null;
    }

    /**
     * Why a root daemon has nowhere to log, and what to do: the root of a user namespace (unshare -U
     * -r, a sandbox on the host's files) sees the host's directories above its home as another
     * user's, so the home is refused, and it may not write the host's /var/log either.
     */
    static String rootLogsRefused(Path homeLogs, String whyNotHome) {
        return rootLogsRefusedCause(homeLogs, whyNotHome) + ": " + ROOT_LOGS_FIX;
    }

    static String rootLogsRefusedCause(Path homeLogs, String whyNotHome) {
        return "cannot keep the daemon's log: root keeps it out of " + homeLogs + " (" + whyNotHome + ") and may not write "
                + ROOT_LOGS + " (the root of a user namespace?)";
    }

    static final String ROOT_LOGS_FIX = "mount with --foreground (it logs to stderr), or use a --home on a path no other"
            + " user owns";

    /** What stands where {@code dir} or a directory leading to it should be, and what to do about it; null when nothing does. */
    static String inTheWay(Path dir) {
        for (Path p = dir.toAbsolutePath().normalize(); p != null; p = p.getParent()) {
            if (!Files.exists(p, java.nio.file.LinkOption.NOFOLLOW_LINKS) || Files.isDirectory(p)) {
                continue;
            }
            if (!Files.isSymbolicLink(p)) {
                return p + " is a file, not a directory: move it aside";
            }
            String target;
            try {
                target = Files.readSymbolicLink(p).toString();
            } catch (IOException e) {
                target = "?";
            }
            return p + " is a symbolic link to " + target + (Files.exists(p) ? ", which is not a directory" : ", which does not exist")
                    + ": make " + target + " a directory, or remove the link";
        }
        return null;
    }

    /**
     * The log opened to append the daemon's output to, as {@link HomeFile#openForAppend}: a fifo
     * there hung mount in open(2), and a link there was followed.
     */
    static int openLog(Path logFile) throws IOException {
        try {
            return HomeFile.openForAppend(logFile);
        } catch (java.nio.file.AccessDeniedException e) {
            throw new MountFailure(homeLogsRefused(logFile.getParent(), e));
        } catch (HomeFile.RefusedException e) {
            throw new MountFailure("the daemon's log " + Names.shown(logFile) + " is " + e.reason() + ": move it aside");
        }
    }

    /** What a background mount prints once the mount answers. */
    private String mountedLine(Plan plan, ChibiHome chibiHome, Path mp, long daemonPid, Path logFile) {
        // --store /=SPEC serves the whole namespace: name it rather than <home>/vfs
        String root = stores.mounts().stream().filter(m -> m.prefix().isRoot())
                .map(m -> m.spec().text()).findFirst().orElse(chibiHome.store().toString());
        String made = homeMade ? ", new and empty: there was no chibi home at " + Names.shown(chibiHome.dir().toAbsolutePath()) : "";
        return ErrorHandler.PREFIX + "mounted " + Names.shown(mp) + " (" + plan.describe() + ", store " + Names.shown(root) + made + "); daemon pid " + daemonPid
                + ", log " + Names.shown(logFile) + warnings.stream().map(w -> System.lineSeparator() + WARNING + w).collect(Collectors.joining());
    }

    // ---- background, started without the launcher: the daemon is a child process, awaited until it answers ----

    private int spawnDaemon(Plan plan, ChibiHome chibiHome, Path mp) throws IOException {
        Path logFile = logFile(chibiHome, mp);
        long logStart = Files.exists(logFile) ? Files.size(logFile) : 0;

        List<String> cmd = new ArrayList<>();
        if (Files.isExecutable(Path.of("/usr/bin/setsid"))) {
            // own session: closing the terminal that ran `mount` must not SIGHUP the daemon
            cmd.add("/usr/bin/setsid");
        }
        cmd.add(ProcessHandle.current().info().command().orElse("java"));
        cmd.addAll(daemonJvmArguments(java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments(),
                System.getProperty(CLI_JVM_ARGS)));
        cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), Main.class.getName(), "mount", "--foreground",
                "--home", chibiHome.dir().toString(), "--log-level", logLevel, "--logged-to", logFile.toString(),
                "--cache-sweep-interval", cacheSweepInterval.toString()));
        if (kernelCacheGiven) { // else the daemon takes the same default, on this same kernel, and knows it was not asked
            cmd.addAll(List.of("--kernel-cache", kernelCache.isZero() ? KernelCacheConverter.OFF : kernelCache.toSeconds() + "s"));
        }
        cmd.add(readdirplus ? "--readdirplus" : "--no-readdirplus");
        cmd.add(passthrough ? "--passthrough" : "--no-passthrough");
        cmd.add(xattr ? "--xattr" : "--no-xattr");
        cmd.add(ioUring ? "--io-uring" : "--no-io-uring");
        cmd.addAll(stores.arguments());
        cmd.addAll(List.of("--symlinks", symlinks.option()));
        if (context != null) {
            cmd.addAll(List.of("--context", context));
        }
        for (String m : uidMaps) {
            cmd.addAll(List.of("--uid-map", m));
        }
        if (systemUid != null) {
            cmd.addAll(List.of("--system-uid", systemUid.toString()));
        }
        if (!fuseOptions.isEmpty()) {
            cmd.addAll(List.of("-o", String.join(",", fuseOptions)));
        }
        cmd.add(mp.toString());
        int logFd = openLog(logFile);
        Process child;
        try {
            // the JDK opens a redirect by path: through /proc the file checked above, whatever the name holds by then
            ProcessBuilder pb = new ProcessBuilder(cmd)
                    .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")))
                    .redirectOutput(ProcessBuilder.Redirect.appendTo(new java.io.File("/proc/self/fd/" + logFd)))
                    .redirectErrorStream(true);
            pb.environment().putIfAbsent("LC_ALL", "C.UTF-8");
            if (context == null && uidMaps.isEmpty()) {
                pb.environment().put("CHIBI_CONTEXT", plan.homes().get(0));
            }
            child = pb.start();
        } finally {
            Syscalls.close(logFd);
        }
        long deadline = System.nanoTime() + MOUNT_TIMEOUT.toNanos();
        while (System.nanoTime() < deadline) {
            if (FuseDaemon.answers(mp)) {
                spec.commandLine().getOut().println(mountedLine(plan, chibiHome, mp, child.pid(), logFile));
                logLines(logFile, logStart).stream().filter(l -> l.startsWith(WARNING))
                        .forEach(spec.commandLine().getOut()::println);
                return ExitCodes.OK;
            }
            if (!child.isAlive()) {
                throw new MountFailure(lastError(logFile, logStart) + " (log: " + Names.shown(logFile) + ")");
            }
            try {
                // a look costs a read of the mount table until the kernel lists the mount: look often
                Thread.sleep(2);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
        }
        child.destroyForcibly();
        FuseMount.unmount(mp, true);
        throw new MountFailure("the daemon did not answer at " + Names.shown(mp) + " within " + MOUNT_TIMEOUT.toSeconds()
                + " s (log: " + Names.shown(logFile) + ")");
    }

    /**
     * The system property by which the launcher names the JVM flags it gave only this short-lived
     * command (C1 only, {@code -XX:TieredStopAtLevel=1}), space-separated: a daemon runs for days and
     * gets the JIT's full compiler.
     */
    static final String CLI_JVM_ARGS = "chibifs.cli-jvm-args";

    /**
     * The JVM flags the daemon starts with: this JVM's, less those {@code cliOnly} names (each
     * once, the last given, as the launcher appends them) and the property naming them.
     */
    static List<String> daemonJvmArguments(List<String> jvmArguments, String cliOnly) {
        List<String> args = new ArrayList<>(jvmArguments);
        args.removeIf(a -> a.startsWith("-D" + CLI_JVM_ARGS + "="));
        if (cliOnly != null) {
            for (String flag : cliOnly.trim().split("\\s+")) {
                int at = args.lastIndexOf(flag);
                if (at >= 0) {
                    args.remove(at);
                }
            }
        }
        return args;
    }

    /** The daemon's own one-line reason, from what it wrote to the log since it started. */
    private static String lastError(Path logFile, long from) {
        // libfuse's own first complaint says why best; our summary line only says that it failed
        String ours = null;
        for (String line : logLines(logFile, from)) {
            String l = line.trim();
            if (l.startsWith("fuse:") || l.startsWith("fusermount:")) {
                return l;
            }
            if (l.startsWith(ErrorHandler.PREFIX) && !l.startsWith(WARNING)) {
                ours = l.substring(ErrorHandler.PREFIX.length());
            }
        }
        return ours != null ? ours : "the daemon exited before the mount answered";
    }

    /** The most of a daemon's first output read back: its reason for failing is in its first lines. */
    private static final long LOG_READ_LIMIT = 1L << 20;

    /** The lines a daemon wrote to LOGFILE from byte FROM on; none if it cannot be read. */
    private static List<String> logLines(Path logFile, long from) {
        try {
            return new String(HomeFile.read(logFile, from, LOG_READ_LIMIT), java.nio.charset.StandardCharsets.UTF_8).lines().toList();
        } catch (IOException e) {
            return List.of();
        }
    }
}
