package dev.chibifs.cli;

import dev.chibifs.config.HomeFile;
import dev.chibifs.fuse.MountTable;
import dev.chibifs.store.ContentHash;
import dev.chibifs.sys.ProcStatus;
import dev.chibifs.sys.Syscalls;
import java.io.IOException;
import java.io.Reader;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.DirectoryStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.function.LongPredicate;
import java.util.function.Predicate;

/**
 * The runtime registry of running daemons: each writes {@code <dir>/<key>.properties} while it serves a mount,
 * so {@code status} and {@code doctor} can find it. The directory is {@code /run/chibifs} for root, else
 * {@code $XDG_RUNTIME_DIR/chibifs}, else {@code /tmp/chibifs-<uid>}; the key is the first 16 hex digits of the
 * SHA-256 of the absolute mountpoint.
 */
final class MountRegistry {

    /** A registry file as found: a live mount, a stale leftover, or a file that cannot be read. */
    public record Entry(Path file, MountRecord record, Health health, String detail) {
    }

    /**
     * Whether an entry describes a mount that is there now. DETACHED: unmounted lazily while files were open
     * on it; its daemon serves them and exits when the last is closed.
     */
    public enum Health { ACTIVE, DETACHED, STALE, UNREADABLE }

    private static final String SUFFIX = ".properties";
    /** How far a process's start time from /proc may fall after a time it wrote down. */
    private static final Duration START_SLACK = Duration.ofSeconds(2);

    private final Path dir;
    /** The uid whose registry this is: what another uid wrote in it is not believed. */
    private final int owner;
    private final Path mountTable;
    private final LongPredicate pidAlive;
    private final Predicate<MountRecord> daemonRuns;
    /** The uid process {@code pid} runs as, or -1 where none runs. */
    private final java.util.function.LongToIntFunction pidOwner;
    /** Whether process {@code pid} holds a FUSE device open, as every daemon does while it serves (true where it cannot be told). */
    private final LongPredicate holdsFuse;
    /** Why a record's pid cannot be believed to be its daemon's, or null ({@link DaemonPid#doubt}). */
    private final java.util.function.Function<MountRecord, String> pidDoubt;

    /** A registry of this user's whose daemons are told by their pids alone (tests give their own PIDALIVE), all this user's. */
    MountRegistry(Path dir, Path mountTable, LongPredicate pidAlive) {
        this(dir, mountTable, pidAlive, pid -> true);
    }

    /** As {@link #MountRegistry(Path, Path, LongPredicate)}, each pid's FUSE device told by {@code holdsFuse} (tests). */
    MountRegistry(Path dir, Path mountTable, LongPredicate pidAlive, LongPredicate holdsFuse) {
        this(dir, currentUid(), mountTable, pidAlive, record -> pidAlive.test(record.pid()), pid -> currentUid(), holdsFuse,
                record -> DaemonPid.doubt(record, DaemonPid.SYSTEM));
    }

    /** As {@link #MountRegistry(Path, Path, LongPredicate)}, /proc's answers about pid namespaces from PROC (tests). */
    MountRegistry(Path dir, Path mountTable, LongPredicate pidAlive, DaemonPid.Proc proc) {
        this(dir, currentUid(), mountTable, pidAlive, record -> pidAlive.test(record.pid()), pid -> currentUid(),
                pid -> true, record -> DaemonPid.doubt(record, proc));
    }

    private MountRegistry(Path dir, int owner, Path mountTable, LongPredicate pidAlive, Predicate<MountRecord> daemonRuns,
                          java.util.function.LongToIntFunction pidOwner, LongPredicate holdsFuse,
                          java.util.function.Function<MountRecord, String> pidDoubt) {
        this.dir = dir;
        this.owner = owner;
        this.mountTable = mountTable;
        this.pidAlive = pidAlive;
        this.daemonRuns = daemonRuns;
        this.pidOwner = pidOwner;
        this.holdsFuse = holdsFuse;
        this.pidDoubt = pidDoubt;
    }

    /** The registry of the user this process runs as. */
    public static MountRegistry forCurrentUser() {
        return at(defaultDir(currentUid(), System.getenv()));
    }

    /** This user's registry in DIR, checked against this host's mount table and processes. */
    public static MountRegistry at(Path dir) {
        return of(dir, currentUid());
    }

    /** The registry of user {@code owner} in DIR (root's status reads every user's). */
    public static MountRegistry of(Path dir, int owner) {
        return new MountRegistry(dir, owner, MountTable.SYSTEM_TABLE, MountRegistry::running, MountRegistry::runsDaemonOf,
                MountRegistry::uidOf, MountRegistry::holdsFuseDevice, record -> DaemonPid.doubt(record, DaemonPid.SYSTEM));
    }

    /** The uid whose registry this is. */
    int owner() {
        return owner;
    }

    private static final Path FUSE_DEVICE = Path.of("/dev/fuse");

    /**
     * Whether process {@code pid} holds {@code /dev/fuse} open: a daemon serving a mount, detached
     * or not, always does. True where its descriptors cannot be read (another user's, for a user
     * not root): then its record is believed as before.
     */
    static boolean holdsFuseDevice(long pid) {
        try (DirectoryStream<Path> fds = Files.newDirectoryStream(Path.of("/proc", Long.toString(pid), "fd"))) {
            for (Path fd : fds) {
                try {
                    if (FUSE_DEVICE.equals(Files.readSymbolicLink(fd))) {
                        return true;
                    }
                } catch (IOException closedMeanwhile) {
                    // the descriptor went between the listing and the look
                }
            }
            return false;
        } catch (java.nio.file.AccessDeniedException cannotTell) {
            return true;
        } catch (IOException | RuntimeException gone) {
            return false;
        }
    }

    /** The uid process {@code pid} runs as (its /proc directory's owner), or -1 where none runs. */
    static int uidOf(long pid) {
        try {
            return (Integer) Files.getAttribute(Path.of("/proc", Long.toString(pid)), "unix:uid");
        } catch (IOException | RuntimeException gone) {
            return -1;
        }
    }

    /**
     * Whether the daemon that wrote RECORD still runs: its pid runs a process that started no later than
     * the record was written. A killed daemon's pid may be given to any later process, which then started
     * after the record; {@code /proc}'s start times count from a boot time in whole seconds, hence the slack.
     * A pid the record cannot vouch for ({@link DaemonPid#doubt}) is never the daemon's: umount must
     * not wait on it, nor kill it.
     */
    static boolean runsDaemonOf(MountRecord record) {
        if (!running(record.pid()) || DaemonPid.doubt(record, DaemonPid.SYSTEM) != null) {
            return false;
        }
        Optional<Instant> start = ProcessHandle.of(record.pid()).flatMap(p -> p.info().startInstant());
        return start.isEmpty() || !start.get().isAfter(record.started().plus(START_SLACK));
    }

    /**
     * Whether process {@code pid} runs: alive and not a zombie. A daemon started in the background is
     * its launcher's orphan; where nothing reaps orphans (a container's init), one killed stays a
     * zombie, which {@link ProcessHandle#isAlive} counts as alive.
     */
    static boolean running(long pid) {
        if (ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false)) {
            try {
                String stat = java.nio.file.Files.readString(Path.of("/proc", Long.toString(pid), "stat"));
                // "pid (comm) S ...": the state follows the last ')', as comm may hold one
                int close = stat.lastIndexOf(')');
                return close < 0 || close + 2 >= stat.length() || stat.charAt(close + 2) != 'Z';
            } catch (IOException gone) {
                return false;
            }
        }
        return false;
    }

    static Path defaultDir(int uid, Map<String, String> env) {
        String override = env.get("CHIBIFS_RUNTIME_DIR");
        if (override != null && !override.isBlank()) {
            return Path.of(override);
        }
        if (uid == 0) {
            return Path.of("/run/chibifs");
        }
        String runtime = env.get("XDG_RUNTIME_DIR");
        if (runtime != null && !runtime.isBlank()) {
            return Path.of(runtime, "chibifs");
        }
        return Path.of("/tmp/chibifs-" + uid);
    }

    /** The effective uid of this process (geteuid, which cannot fail, unlike a stat of /proc/self). */
    static int currentUid() {
        return Syscalls.geteuid();
    }

    /** Whether a process {@code pid} runs on this host, as this registry tells (tests give their own). */
    boolean alive(long pid) {
        return pidAlive.test(pid);
    }

    public Path dir() {
        return dir;
    }

    /** The registry key of a mountpoint: the first 16 hex digits of the SHA-256 of its absolute path. */
    public static String key(Path mountpoint) {
        return ContentHash.sha256Hex(mountpoint.toAbsolutePath().normalize().toString().getBytes(StandardCharsets.UTF_8))
                .substring(0, 16);
    }

    public Path fileFor(Path mountpoint) {
        return dir.resolve(key(mountpoint) + SUFFIX);
    }

    /**
     * Where the record of a daemon that still runs is kept once a new mount of its mountpoint writes
     * there: one unmounted lazily (detached) serves the files open on it until the last is closed.
     */
    private Path asideFor(Path mountpoint, long pid) {
        return dir.resolve(key(mountpoint) + "-" + pid + SUFFIX);
    }

    /**
     * Records a running mount; readers never see a half-written file. The record of another daemon of
     * the mountpoint that still runs (detached) is moved aside, not written over: a new mount there
     * hid it from status, and at its exit that daemon removed the new mount's record.
     */
    public void write(MountRecord record) throws IOException {
        prepare();
        Path target = fileFor(record.mountpoint());
        long before = pidIn(target);
        if (before > 0 && before != record.pid() && pidAlive.test(before)) {
            Files.move(target, asideFor(record.mountpoint(), before), StandardCopyOption.REPLACE_EXISTING);
        }
        Path tmp = Files.createTempFile(dir, ".write-", ".tmp");
        try {
            try (Writer out = Files.newBufferedWriter(tmp, StandardCharsets.UTF_8)) {
                record.toProperties().store(out, "chibifs mount, removed when the daemon exits cleanly");
            }
            try {
                Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE);
            } catch (AtomicMoveNotSupportedException e) {
                Files.move(tmp, target, StandardCopyOption.REPLACE_EXISTING);
            }
        } finally {
            Files.deleteIfExists(tmp);
        }
    }

    /** Forgets a mount; nothing happens when it was not recorded. */
    /** Removes the record of daemon {@code pid} of {@code mountpoint}, and not another daemon's of it. */
    public void remove(Path mountpoint, long pid) throws IOException {
        removeWhere(mountpoint, p -> p == pid);
    }

    /** Removes the records of {@code mountpoint} whose daemons no longer run (killed, or died). */
    public void removeDead(Path mountpoint) throws IOException {
        removeWhere(mountpoint, p -> !pidAlive.test(p));
    }

    private void removeWhere(Path mountpoint, java.util.function.LongPredicate gone) throws IOException {
        if (!Files.isDirectory(dir)) {
            return;
        }
        List<Path> files = new ArrayList<>();
        files.add(fileFor(mountpoint));
        try (DirectoryStream<Path> aside = Files.newDirectoryStream(dir, key(mountpoint) + "-*" + SUFFIX)) {
            aside.forEach(files::add);
        }
        for (Path f : files) {
            long pid = pidIn(f);
            // an unreadable record (-1) is nobody's: left for status to show
            if (pid > 0 && gone.test(pid)) {
                Files.deleteIfExists(f);
            }
        }
    }

    /**
     * Removes the records of {@code mountpoint} whose daemon is gone (stale: not running, or its pid
     * another process now), and the sockets such a daemon left where its pid runs nothing now; the
     * pid of the last record removed, or null where there was none. Root clears another user's
     * registry so (the one umount of that user's stale mount): the names are removed in the directory
     * as opened once, not followed, and only while it is still the owner's, so a user who swaps their
     * registry for a link after it was listed has root remove nothing elsewhere.
     */
    Long removeStale(Path mountpoint) throws IOException {
        Long gone = null;
        List<String> names = new ArrayList<>();
        for (Entry e : list()) {
            if (e.health() == Health.STALE && e.record() != null && e.record().mountpoint().equals(mountpoint)
                    && e.file().getParent().equals(dir)) {
                long pid = e.record().pid();
                names.add(e.file().getFileName().toString());
                if (!pidAlive.test(pid)) {
                    for (String kind : List.of("stats", "sync", "trace")) {
                        names.add(kind + "-" + pid + ".sock");
                    }
                }
                gone = pid;
            }
        }
        if (names.isEmpty()) {
            return null;
        }
        int fd = Syscalls.openat(dev.chibifs.sys.Linux.AT_FDCWD, dir.toString(), dev.chibifs.sys.Linux.O_PATH
                | dev.chibifs.sys.Linux.O_DIRECTORY | dev.chibifs.sys.Linux.O_NOFOLLOW | dev.chibifs.sys.Linux.O_CLOEXEC, 0,
                dir.toString());
        try {
            int uid = Syscalls.statAside(fd).uid();
            if (uid != owner) {
                throw new IOException("registry " + dir + " belongs to uid " + uid + " now, not to uid " + owner
                        + ": nothing removed");
            }
            for (String name : names) {
                int r = Syscalls.tryUnlinkat(fd, name, false);
                if (r < 0 && -r != dev.chibifs.sys.Linux.ENOENT) {
                    throw dev.chibifs.sys.Errors.of(-r, dir.resolve(name).toString());
                }
            }
        } finally {
            Syscalls.close(fd);
        }
        return gone;
    }

    /** The pid a record file names; -1 where there is none or it cannot be read. */
    private static long pidIn(Path file) {
        if (!Files.isRegularFile(file, LinkOption.NOFOLLOW_LINKS)) {
            return -1;
        }
        try {
            return readRecord(file).pid();
        } catch (IOException | RuntimeException e) {
            return -1;
        }
    }

    /** The record in {@code file}. */
    private static MountRecord readRecord(Path file) throws IOException {
        // as chibi's own files are read: a fifo there hung status, a link to /dev/zero would take its memory
        try (Reader in = new java.io.StringReader(new String(HomeFile.read(file, RECORD_LIMIT), StandardCharsets.UTF_8))) {
            Properties p = new Properties();
            p.load(in);
            return MountRecord.fromProperties(p);
        }
    }

    /**
     * Every registry file in this directory, sorted by mountpoint file name, each judged live or stale.
     * A directory another user made or may write (a tester made /tmp/chibifs-<uid> of another user's
     * first, and `status`, `sync`, `stats`, `trace` and `umount` then believed the records and sockets
     * it planted there) is one UNREADABLE entry saying why; so is a record another uid wrote.
     */
    public List<Entry> list() throws IOException {
        List<Entry> entries = new ArrayList<>();
        if (!Files.isDirectory(dir)) {
            return entries;
        }
        String untrusted = untrusted();
        if (untrusted != null) {
            entries.add(new Entry(dir, null, Health.UNREADABLE, "not believed: " + untrusted));
            return entries;
        }
        List<Path> listed = new ArrayList<>();
        try (DirectoryStream<Path> files = Files.newDirectoryStream(dir, "*" + SUFFIX)) {
            files.forEach(listed::add);
        }
        return entriesOf(listed);
    }

    /**
     * The entries of the record files {@code listed}, sorted by mountpoint. A record removed since it
     * was listed (its daemon exited meanwhile) has no entry: `chibifs stats M1` failed with "No such
     * file" when another mount stopped at that moment.
     */
    List<Entry> entriesOf(List<Path> listed) throws IOException {
        List<Entry> entries = new ArrayList<>();
        Map<Path, Long> mounted = mounted();
        for (Path file : listed) {
            int by;
            try {
                by = (Integer) Files.getAttribute(file, "unix:uid", LinkOption.NOFOLLOW_LINKS);
            } catch (NoSuchFileException removedSinceListed) {
                continue;
            }
            Entry entry = by != owner ? new Entry(file, null, Health.UNREADABLE,
                    "not believed: written by uid " + by + ", not by the registry's owner, uid " + owner)
                    // a link would have root's status read, as root, whatever file it names
                    : Files.isSymbolicLink(file) ? new Entry(file, null, Health.UNREADABLE, "not believed: a symbolic link")
                    : judge(file, mounted);
            if (entry != null && entry.health() == Health.STALE) {
                // a daemon unmounted cleanly leaves the table, removes its record, then exits: the table read
                // before its pid was found gone still showed its mount, and status called it stale with
                // umount -l advice. Judged again against a table read after the pid, the record read again
                entry = judge(file, mounted());
            }
            if (entry != null) {
                entries.add(entry);
            }
        }
        entries.sort(Comparator.comparing(e -> e.record() == null ? e.file().toString()
                : e.record().mountpoint().toString()));
        return entries;
    }

    /** The chibifs mounts in the mount table now, each with its mounter's uid ({@code user_id=}, or -1). */
    private Map<Path, Long> mounted() throws IOException {
        Map<Path, Long> mounted = new java.util.HashMap<>();
        MountTable.chibifsMounts(mountTable).forEach(m -> mounted.put(m.mountpoint(), m.mounter()));
        return mounted;
    }

    /** A mount's record is a dozen lines: far below this. */
    private static final long RECORD_LIMIT = 1 << 20;

    /**
     * A record read, judged by its daemon's pid and the mount table; null where it was removed since
     * listed. A record names its mount and daemon, and the owner may write anything there: believed
     * only for a daemon that runs as the owner and a mount the owner made (a tester's record in their
     * own registry named another user's mountpoint and their own sockets, and root's sync, stats and
     * trace of that mount asked the tester's program).
     */
    private Entry judge(Path file, Map<Path, Long> mounted) {
        MountRecord record;
        try {
            record = readRecord(file);
        } catch (NoSuchFileException e) {
            return null; // the daemon exited between listing and reading: no mount to show
        } catch (IOException | IllegalArgumentException e) {
            return new Entry(file, null, Health.UNREADABLE, e.getMessage());
        }
        String doubt = pidDoubt.apply(record);
        if (doubt != null) {
            // neither live nor stale can be told: nothing may act on that pid (umount waits on it, --force kills it)
            return new Entry(file, null, Health.UNREADABLE, "not believed: " + doubt);
        }
        Long mounter = mounted.get(record.mountpoint());
        if (mounter != null && mounter >= 0 && mounter != owner) {
            // before the pid: a dead pid's record naming root's active mount was called stale, and root's
            // status advised umount -l of that healthy mount
            return new Entry(file, null, Health.UNREADABLE, "not believed: " + record.mountpoint() + " is uid " + mounter
                    + "'s mount, not uid " + owner + "'s");
        }
        if (!daemonRuns.test(record)) {
            return new Entry(file, record, Health.STALE, "pid " + record.pid() + (pidAlive.test(record.pid())
                    ? " is another process now: its daemon is gone" : " is not running"));
        }
        int runsAs = pidOwner.applyAsInt(record.pid());
        if (runsAs >= 0 && runsAs != owner) {
            return new Entry(file, null, Health.UNREADABLE, "not believed: pid " + record.pid() + " runs as uid " + runsAs
                    + ", not as the registry's owner, uid " + owner);
        }
        if (mounter == null && !holdsFuse.test(record.pid())) {
            // any user may write such a record in their own registry, naming a process of theirs that
            // runs (a sleep): root's status showed it as a detached mount of whatever path it named
            return new Entry(file, record, Health.STALE, record.mountpoint() + " is not mounted, and pid " + record.pid()
                    + " serves no FUSE mount (it holds no " + FUSE_DEVICE + ")");
        }
        if (mounter == null) {
            // a stopped daemon serves nothing: a plain umount of one unmounted it and left it so
            return new Entry(file, record, Health.DETACHED, record.mountpoint() + " is unmounted; pid " + record.pid()
                    + (ProcStatus.stopped(record.pid()) ? " is stopped (SIGSTOP, or a debugger), the files open on it"
                    + " waiting: kill -CONT " + record.pid() + ", or chibifs umount --force " + record.mountpoint() + " ends it"
                    : " still serves the files open on it and exits when the last is closed"));
        }
        return new Entry(file, record, Health.ACTIVE, "");
    }

    /** Why this directory is not its owner's alone, or null: a link, another user's, or writable by others. */
    private String untrusted() throws IOException {
        if (!Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS)) {
            return dir + " is not a directory (a symbolic link is refused)";
        }
        int uid = (Integer) Files.getAttribute(dir, "unix:uid", LinkOption.NOFOLLOW_LINKS);
        if (uid != owner) {
            return dir + " belongs to uid " + uid + ", not to uid " + owner;
        }
        int mode = (Integer) Files.getAttribute(dir, "unix:mode", LinkOption.NOFOLLOW_LINKS);
        if ((mode & 022) != 0) {
            return String.format("%s may be written by other users (mode %04o)", dir, mode & 07777);
        }
        return null;
    }

    /**
     * Makes this user's registry directory, or checks the one there, before a mount records itself
     * and listens in it. /tmp is shared with every user: a directory someone else made there (or
     * planted as a link) is refused, naming the ways out. The directory is the owner's alone (0700,
     * whatever the umask): its sockets drive and trace the mount (a daemon at umask 000 let an
     * unmapped agent trace every context's opens), and root's status reads it anyway.
     */
    public void prepare() throws IOException {
        if (!Files.exists(dir, LinkOption.NOFOLLOW_LINKS)) {
            Files.createDirectories(dir.getParent());
            try {
                Files.createDirectory(dir, PosixFilePermissions.asFileAttribute(OWNER_ONLY));
            } catch (FileAlreadyExistsException raced) {
                // another daemon made it first; checked below like any existing one
            }
        }
        if (!Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS)) {
            throw new IOException("registry " + dir + " is not a directory (a symbolic link is refused)");
        }
        int uid = (Integer) Files.getAttribute(dir, "unix:uid", LinkOption.NOFOLLOW_LINKS);
        if (uid != currentUid()) {
            throw new IOException("registry " + dir + " belongs to uid " + uid + ", not to this user (uid " + currentUid()
                    + "): another user made it, and could read or fake what a mount says there; remove it, or set"
                    + " XDG_RUNTIME_DIR or CHIBIFS_RUNTIME_DIR to a directory of yours");
        }
        int mode = (Integer) Files.getAttribute(dir, "unix:mode", LinkOption.NOFOLLOW_LINKS);
        if ((mode & 077) != 0) {
            Files.setPosixFilePermissions(dir, OWNER_ONLY); // an older chibifs made it 0755
        }
    }

    private static final java.util.Set<java.nio.file.attribute.PosixFilePermission> OWNER_ONLY =
            PosixFilePermissions.fromString("rwx------");
}
