package dev.chibifs.cli;

import dev.chibifs.path.Names;
import dev.chibifs.fuse.FuseDaemon;
import dev.chibifs.fuse.MountTable;
import dev.chibifs.config.ChibiConfig;
import dev.chibifs.config.ChibiHome;
import dev.chibifs.config.ConfigException;
import dev.chibifs.store.LocalStorage;
import dev.chibifs.sys.Linux;
import dev.chibifs.sys.ProcStatus;
import dev.chibifs.sys.Syscalls;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ThreadLocalRandom;

/** {@code chibifs doctor}: checks what a mount needs, prints each check with a fix, exits 0 only when all pass. */
@Command(name = "doctor", mixinStandardHelpOptions = true,
        description = {
            "Check what a mount needs: /dev/fuse, a setuid fusermount3 (as a user) or the right to mount(2) "
                + "(as root), user_allow_other (when a uid map or allow_other needs it), the store, chibi's "
                + "config.toml, stale mounts; and MOUNTPOINT when given.",
            "Each check prints OK or FAIL; each FAIL has a one-line fix. Exit code 0 only when every check passes."
        })
final class DoctorCommand implements Callable<Integer>, ConfigCheck.Exempt {

    /** Where the checks look; the system's by default, a test's own to make each check fail. */
    record Host(Path fuseDevice, List<Path> searchPath, Path fuseConf, Path procStatus,
                Path mountTable, MountRegistry registry, int uid, Map<String, String> env) {

        static Host system() {
            return new Host(Path.of("/dev/fuse"), searchPath(System.getenv().getOrDefault("PATH", "")),
                    Path.of("/etc/fuse.conf"), Path.of("/proc/self/status"), MountTable.SYSTEM_TABLE,
                    MountRegistry.forCurrentUser(), MountRegistry.currentUid(), System.getenv());
        }

        /**
         * Where fusermount is looked for: {@code path}, then the system's directories it lacks, each
         * once (a FAIL listed a PATH that held them twice).
         */
        static List<Path> searchPath(String path) {
            java.util.Set<Path> dirs = new java.util.LinkedHashSet<>();
            for (String dir : (path + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin").split(":")) {
                if (!dir.isEmpty()) {
                    dirs.add(Path.of(dir).normalize());
                }
            }
            return List.copyOf(dirs);
        }
    }

    /** One check's outcome; a failure carries the fix. */
    record Check(String name, boolean ok, String detail, String fix) {
        static Check ok(String name, String detail) {
            return new Check(name, true, detail, "");
        }

        static Check fail(String name, String detail, String fix) {
            return new Check(name, false, detail, fix);
        }
    }

    private static final long STAT_TIMEOUT_SECONDS = 2;

    @Option(names = "--home", paramLabel = "DIR", converter = HomeConverter.class,
            description = "CHIBI_HOME to check; the store is DIR/vfs (default: $CHIBI_HOME, else ~/.chibi).")
    Path home;

    @Option(names = "--uid-map", paramLabel = "UID=NAME",
            description = "The mount will map uids (so it needs allow_other, and user_allow_other when not root).")
    List<String> uidMaps = new ArrayList<>();

    @Option(names = "-o", paramLabel = "FUSEOPT[,FUSEOPT...]", split = ",",
            description = "The FUSE options the mount will use (allow_other and allow_root need user_allow_other).")
    List<String> fuseOptions = new ArrayList<>();

    @Parameters(index = "0", arity = "0..1", paramLabel = "MOUNTPOINT",
            description = "Also check that MOUNTPOINT can be mounted on.")
    Path mountpoint;

    /** What to give as doctor's MOUNTPOINT where it was empty: the directory a mount is meant for, or none at all. */
    static final String DOCTOR_MOUNTPOINT = "name the directory you mean to mount on ('.' for the current directory),"
            + " or leave MOUNTPOINT out to check this machine only";

    @Spec
    CommandSpec spec;

    private final Host host;

    DoctorCommand() {
        this(null);
    }

    /** HOST null means this machine's. */
    DoctorCommand(Host host) {
        this.host = host;
    }

    @Override
    public Integer call() {
        // refused as mount refuses them (exit 2): a doctor that passed them, or checked "OK ... not checked:
        // invalid --uid-map", had the mount it vouched for fail
        MountCommand.parseUidMaps(uidMaps, null);
        MountCommand.requireValidFuseOptions(fuseOptions);
        MountpointArgument.requireNamed(mountpoint, DOCTOR_MOUNTPOINT);
        Host h = host == null ? Host.system() : host;
        List<Check> checks = checks(h);
        PrintWriter out = spec.commandLine().getOut();
        int failed = 0;
        for (Check c : checks) {
            out.printf("%-4s %s: %s%n", c.ok() ? "OK" : "FAIL", c.name(), c.detail());
            if (!c.ok()) {
                out.printf("     fix: %s%n", c.fix());
                failed++;
            }
        }
        out.printf("%d checks, %d failed%n", checks.size(), failed);
        out.flush();
        return failed == 0 ? ExitCodes.OK : ExitCodes.FAILURE;
    }

    List<Check> checks(Host h) {
        List<Check> checks = new ArrayList<>();
        checks.add(fuseDevice(h));
        Check fusermount = fusermount(h);
        checks.add(fusermount);
        if (h.uid() == 0 || fusermount.ok()) {
            // a user's right to mount is the setuid fusermount: where it failed above, that is the verdict
            // (an OK "mounts through the setuid fusermount" followed a FAIL saying there was none)
            checks.add(mountPermission(h, fusermount));
        }
        checks.add(userAllowOther(h));
        if (!uidMaps.isEmpty()) {
            checks.add(subordinateUids(uidMaps, SUBUID));
        }
        checks.add(ioUring(ENABLE_URING));
        ChibiHome chibiHome = ChibiHome.resolve(home, h.env());
        Check storeExists = storeExists(chibiHome.store());
        checks.add(storeExists);
        if (storeExists.ok() && Files.isDirectory(chibiHome.store())) {
            Check writable = storeWritable(chibiHome.store());
            checks.add(writable);
            if (!WriteAccess.says(writable.detail())) {
                // its probe would only meet the same refusal, and blame the file system's kind for it
                checks.add(storeFilesystem(chibiHome.store()));
            }
        }
        checks.add(config(chibiHome));
        checks.add(daemonLog(chibiHome, Files::isWritable, WriteAccess::whyNotMake));
        checks.add(staleMounts(h, registries(h)));
        checks.add(staleRegistry(h));
        if (mountpoint != null) {
            checks.add(mountpoint(h, mountpoint.toAbsolutePath().normalize()));
        }
        return checks;
    }

    /**
     * Whether a background mount has somewhere to log: root keeps its log out of a home whose path
     * another user owns, in /var/log/chibifs, which the root of a user namespace may not write (a
     * bare "Permission denied" at mount, while doctor said all was well).
     */
    static Check daemonLog(ChibiHome chibiHome, java.util.function.Predicate<Path> writable,
                           java.util.function.Function<Path, String> whyNotMake) {
        Path homeLogs = MountCommand.homeLogs(chibiHome);
        String whyNotHome;
        try {
            whyNotHome = MountCommand.whyRootLogsElsewhere(homeLogs);
        } catch (IOException e) {
            return Check.ok("daemon log", "cannot tell where a background mount logs (" + describe(e) + ")");
        }
        return daemonLog(homeLogs, whyNotHome, MountCommand.ROOT_LOGS, writable, whyNotMake);
    }

    /**
     * {@code whyNotMake}: why the logs directory cannot be made or written in (a home another user
     * owns, which this user may not write), null when it can; as {@link WriteAccess#whyNotMake}.
     */
    static Check daemonLog(Path homeLogs, String whyNotHome, Path rootLogs, java.util.function.Predicate<Path> writable,
                           java.util.function.Function<Path, String> whyNotMake) {
        String name = "daemon log";
        if (whyNotHome == null) {
            String denied = whyNotMake.apply(homeLogs);
            if (denied != null) {
                return Check.fail(name, "a background mount cannot keep its log in " + homeLogs + ": " + denied,
                        MountCommand.homeLogsFix(homeLogs));
            }
            return Check.ok(name, "a background mount logs in " + homeLogs);
        }
        Path at = rootLogs;
        while (at != null && !Files.exists(at)) {
            at = at.getParent(); // made by the mount: the nearest directory there is must take it
        }
        if (at != null && writable.test(at)) {
            return Check.ok(name, "a background mount logs in " + rootLogs + " (" + whyNotHome + ")");
        }
        return Check.fail(name, MountCommand.rootLogsRefusedCause(homeLogs, whyNotHome), MountCommand.ROOT_LOGS_FIX);
    }

    /** The fuse module's switch for FUSE over io_uring (Linux 6.14+); absent before. */
    static final Path ENABLE_URING = Path.of("/sys/module/fuse/parameters/enable_uring");

    /** Whether the kernel would take requests through io_uring (mount --io-uring): never a failure, mounts work either way. */
    static Check ioUring(Path enableUring) {
        String name = "FUSE over io_uring";
        if (!Files.exists(enableUring)) {
            return Check.ok(name, "not in this kernel (Linux 6.14+): requests come through /dev/fuse");
        }
        String value;
        try {
            value = Files.readString(enableUring).trim();
        } catch (IOException e) {
            return Check.ok(name, "cannot read " + enableUring + ": requests come through /dev/fuse");
        }
        return value.equals("Y") || value.equals("1")
                ? Check.ok(name, "offered: mount --io-uring takes it")
                : Check.ok(name, "off: as root, echo 1 > " + enableUring + ", then mount --io-uring takes it");
    }

    private static Check fuseDevice(Host h) {
        String name = "fuse device " + h.fuseDevice();
        if (!Files.exists(h.fuseDevice())) {
            return Check.fail(name, "missing",
                    "load the module (modprobe fuse); in a container, run it with --device /dev/fuse --cap-add SYS_ADMIN");
        }
        int mode = unixMode(h.fuseDevice());
        if ((mode & Linux.S_IFMT) != Linux.S_IFCHR) {
            return Check.fail(name, "not a character device",
                    "remove it and recreate the device: mknod -m 666 " + h.fuseDevice() + " c 10 229");
        }
        // fusermount opens the device as the user, not as root
        if (!Files.isReadable(h.fuseDevice()) || !Files.isWritable(h.fuseDevice())) {
            return Check.fail(name, "not readable and writable by uid " + h.uid(),
                    "chmod 666 " + h.fuseDevice() + " (udev's default; scripts/provision.sh does it), or mount as root");
        }
        return Check.ok(name, "character device, read-write");
    }

    // a user's mount goes through the setuid helper; root mounts with mount(2) and needs it only for auto_unmount
    private Check fusermount(Host h) {
        String name = "fusermount";
        Path found = null;
        for (String helper : List.of("fusermount3", "fusermount")) {
            found = h.searchPath().stream().map(dir -> dir.resolve(helper)).filter(Files::isExecutable).findFirst()
                    .orElse(null);
            if (found != null) {
                break;
            }
        }
        boolean needed = h.uid() != 0 || fuseOptions.contains("auto_unmount");
        if (found == null) {
            if (!needed) {
                return Check.ok(name, "none, and root mounts without it (mount(2))");
            }
            return Check.fail(name, "neither fusermount3 nor fusermount on " + h.searchPath() + ", and "
                            + (h.uid() != 0 ? "uid " + h.uid() + " mounts through it" : "auto_unmount needs it"),
                    "apt-get install fuse3 (its setuid fusermount3 mounts for users)");
        }
        if (h.uid() != 0 && (unixMode(found) & Linux.S_ISUID) == 0) {
            return Check.fail(name, found + " is not setuid root, so uid " + h.uid() + " cannot mount",
                    "chmod u+s " + found + " (as root), or reinstall it: apt-get install --reinstall fuse3");
        }
        if (fuseOptions.contains("auto_unmount") && !rootIsAMountPoint(h)) {
            // fusermount's auto_unmount first makes every mount private in a namespace of its own,
            // which fails where / is no mount point (a chroot into a directory): it then exits without
            // unmounting, its message on a stderr it has closed, and a dead daemon's mount stays
            return Check.fail(name, "-o auto_unmount: " + found + " cannot unmount here: / is not a mount point"
                            + " in " + h.mountTable() + " (a chroot into a directory?)",
                    "bind the root onto itself before the chroot (mount --rbind DIR DIR), or mount without auto_unmount");
        }
        return Check.ok(name, found.toString());
    }

    // root mounts with mount(2), which a container without CAP_SYS_ADMIN refuses even to uid 0
    private static Check mountPermission(Host h, Check fusermount) {
        String name = "mount permission";
        if (h.uid() != 0) {
            return Check.ok(name, "uid " + h.uid() + " mounts through the setuid " + fusermount.detail());
        }
        try {
            String capEff = ProcStatus.field(h.procStatus(), "CapEff").orElse(null);
            if (capEff == null) {
                return Check.fail(name, h.procStatus() + " has no CapEff line", "mount -t proc proc /proc");
            }
            if (!ProcStatus.hasSysAdmin(capEff)) {
                return Check.fail(name, "uid 0 lacks CAP_SYS_ADMIN (CapEff " + capEff + "), so mount(2) is refused",
                        "give the container the capability: --cap-add SYS_ADMIN --device /dev/fuse");
            }
            return Check.ok(name, "uid 0 has CAP_SYS_ADMIN: mount(2)");
        } catch (IOException | NumberFormatException e) {
            return Check.fail(name, "cannot read the capabilities in " + h.procStatus() + ": " + e.getMessage(),
                    "mount -t proc proc /proc");
        }
    }

    private Check userAllowOther(Host h) {
        String name = "user_allow_other";
        boolean wanted = !uidMaps.isEmpty() || fuseOptions.contains("allow_other") || fuseOptions.contains("allow_root");
        if (!wanted) {
            return Check.ok(name, "not needed (no uid map, no allow_other)");
        }
        if (h.uid() == 0) {
            return Check.ok(name, "not needed as root");
        }
        try {
            boolean set = Files.readAllLines(h.fuseConf(), StandardCharsets.UTF_8).stream()
                    .map(String::strip).anyMatch("user_allow_other"::equals);
            if (set) {
                return Check.ok(name, "set in " + h.fuseConf());
            }
            String asker = !uidMaps.isEmpty() ? "a uid map needs allow_other"
                    : "-o " + (fuseOptions.contains("allow_other") ? "allow_other" : "allow_root") + " needs user_allow_other";
            return Check.fail(name, asker + ", and " + h.fuseConf() + " does not allow it for uid " + h.uid(),
                    "echo user_allow_other >> " + h.fuseConf() + " (as root), or scripts/provision.sh --allow-other");
        } catch (IOException e) {
            return Check.fail(name, "cannot read " + h.fuseConf() + ": " + e.getMessage(),
                    "apt-get install fuse3, then echo user_allow_other >> " + h.fuseConf());
        }
    }

    /** Where newuidmap finds which uids each user may map into a user namespace of theirs. */
    static final Path SUBUID = Path.of("/etc/subuid");

    /**
     * Whether a mapped uid is some user's subordinate uid: that user may make it theirs in a user
     * namespace (newuidmap, from shadow's /etc/subuid) and then writes as the agent, as the kernel
     * reports that uid to the daemon. Default ranges (100000 up, 65536 a user) overlap uids an
     * operator might give agents.
     */
    static Check subordinateUids(List<String> uidMaps, Path subuid) {
        String name = "subordinate uids";
        java.util.Map<Long, String> map;
        try {
            map = MountCommand.parseUidMaps(uidMaps, null);
        } catch (UsageException e) {
            return Check.ok(name, "not checked: " + e.getMessage()); // mount refuses it, with the rule
        }
        List<String> lines;
        try {
            lines = Files.exists(subuid) ? Files.readAllLines(subuid, StandardCharsets.UTF_8) : List.of();
        } catch (IOException e) {
            return Check.fail(name, "cannot read " + subuid + ": " + describe(e),
                    "make " + subuid + " readable to check that no user may map an agent's uid");
        }
        List<String> found = new ArrayList<>();
        for (String line : lines) {
            // OWNER:FIRST:COUNT, the owner a login name or a uid
            String[] f = line.strip().split(":");
            if (f.length != 3 || f[0].startsWith("#")) {
                continue;
            }
            long first;
            long count;
            try {
                first = Long.parseLong(f[1]);
                count = Long.parseLong(f[2]);
            } catch (NumberFormatException e) {
                continue; // newuidmap skips such a line too
            }
            map.forEach((uid, context) -> {
                if (uid >= first && uid - first < count) {
                    found.add("uid " + uid + " (" + context + ") is in " + f[0] + "'s range " + first + "-"
                            + (first + count - 1));
                }
            });
        }
        if (found.isEmpty()) {
            return Check.ok(name, "no mapped uid is in a range of " + subuid);
        }
        return Check.fail(name, String.join("; ", found) + " (" + subuid + "): that user can act as the agent in a user"
                + " namespace", "give agents uids outside every " + subuid + " range, or remove the range"
                + " (usermod --del-subuids FIRST-LAST USER)");
    }

    private static Check storeExists(Path store) {
        String name = "store " + store;
        if (!Files.exists(store)) {
            // chibifs mount creates the store: fine, as long as the nearest existing parent can really take it
            Path parent = store.toAbsolutePath().getParent();
            while (parent != null && !Files.exists(parent)) {
                parent = parent.getParent();
            }
            try {
                Files.delete(Files.createTempDirectory(parent, LocalStorage.TEMP_PREFIX + "doctor-"));
                return Check.ok(name, "absent; chibifs mount creates it (" + parent + " is writable)");
            } catch (java.nio.file.AccessDeniedException e) {
                // the refusal names the probe, a temporary name; and a store made as root by mkdir -p is root's,
                // which this user can no more write: named what refused, whom, and the store made theirs
                if (MountRegistry.currentUid() != 0) {
                    return Check.fail(name, "absent, and cannot be made: " + WriteAccess.denied(store),
                            "as root, " + WriteAccess.giveCommand(store) + ", or choose a --home of your own");
                }
                return Check.fail(name, "absent, and cannot be created in " + parent + ": " + describe(e),
                        "choose a writable --home");
            } catch (IOException | RuntimeException e) {
                return Check.fail(name, "absent, and cannot be created in " + parent + ": " + e.getMessage(),
                        "mkdir -p " + store + " as a user who may, or pass --home DIR / set CHIBI_HOME");
            }
        }
        if (!Files.isDirectory(store)) {
            return Check.fail(name, "not a directory", "move it aside and mkdir -p " + store);
        }
        return Check.ok(name, "a directory");
    }

    /** What to do about a store on a read-only mount. */
    private static final String REMOUNT_READ_WRITE =
            "remount it read-write, or serve a read-only tree at a prefix (--store PREFIX=readonly:DIR)";

    // a real write, not Files.isWritable: root passes permission bits but not a read-only or special filesystem
    private static Check storeWritable(Path store) {
        String name = "store writable";
        Path probe = store.resolve(LocalStorage.TEMP_PREFIX + "doctor-" + Long.toHexString(
                ThreadLocalRandom.current().nextLong()));
        try {
            Files.writeString(probe, "chibifs doctor probe\n");
            return Check.ok(name, "created and removed a file in " + store);
        } catch (java.nio.file.AccessDeniedException e) {
            // a user's, not root's: root is refused by something other than permission bits (sysfs)
            if (MountRegistry.currentUid() != 0) {
                return Check.fail(name, "cannot create a file in " + store + ": " + WriteAccess.denied(probe),
                        "as root, chown -R " + WriteAccess.chownUser() + " " + store
                                + ", or choose a --home of your own");
            }
            return Check.fail(name, "cannot create a file in " + store + ": " + describe(e), "choose a writable --home");
        } catch (IOException e) {
            // no owner makes a read-only mount writable: chown there only fails again
            return Check.fail(name, "cannot create a file in " + store + ": " + describe(e), onReadOnlyMount(store)
                    ? REMOUNT_READ_WRITE : "chown -R $(id -u) " + store + " or choose a writable --home");
        } finally {
            deleteQuietly(probe);
        }
    }

    private static boolean onReadOnlyMount(Path store) {
        try {
            return statfs(store).readOnly();
        } catch (IOException unknown) {
            return false;
        }
    }

    // what the store relies on: atomic rename over a file, and symbolic links it can see without following
    private static Check storeFilesystem(Path store) {
        String name = "store filesystem";
        String type;
        try {
            type = Files.getFileStore(store).type();
        } catch (IOException e) {
            // the JDK looks the store's mount up in the mount table, which a chroot's /proc may not
            // show (the mount of its "/" is outside it); statfs(2) of the directory still answers
            long magic;
            try {
                magic = statfsType(store);
            } catch (IOException again) {
                return Check.fail(name, "cannot tell the filesystem of " + store + ": " + describe(e),
                        "check that " + store + " is on a mounted, local filesystem");
            }
            if (magic == Linux.FUSE_SUPER_MAGIC) {
                return Check.fail(name, store + " is inside a FUSE mount the mount table does not show, perhaps chibifs's own",
                        "choose a --home on a local filesystem, outside every chibifs mount");
            }
            type = String.format("statfs type 0x%x (not in the mount table)", magic);
        }
        if (type.equals(MountTable.CHIBIFS_TYPE)) {
            return Check.fail(name, store + " is inside a chibifs mount, so the daemon would serve itself",
                    "choose a --home on a local filesystem, outside every chibifs mount");
        }
        try {
            if (statfs(store).readOnly()) {
                // what the probe below would meet first, and blame on the file system's kind
                return Check.fail(name, store + " is on a read-only mount: the daemon writes the store", REMOUNT_READ_WRITE);
            }
        } catch (IOException unknown) {
            // the probe below says what it meets
        }
        String id = Long.toHexString(ThreadLocalRandom.current().nextLong());
        Path a = store.resolve(LocalStorage.TEMP_PREFIX + "doctor-a-" + id);
        Path b = store.resolve(LocalStorage.TEMP_PREFIX + "doctor-b-" + id);
        Path link = store.resolve(LocalStorage.TEMP_PREFIX + "doctor-l-" + id);
        try {
            Files.writeString(a, "a");
            Files.writeString(b, "b");
            Files.move(a, b, StandardCopyOption.ATOMIC_MOVE);
            Files.createSymbolicLink(link, b.getFileName());
            if (!Files.readAttributes(link, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS).isSymbolicLink()) {
                return Check.fail(name, type + " does not keep symbolic links",
                        "put the store on ext4, xfs, btrfs or tmpfs");
            }
            return Check.ok(name, type + ": atomic rename and symbolic links work");
        } catch (IOException | UnsupportedOperationException e) {
            return Check.fail(name, type + " lacks what the store needs (atomic rename, symbolic links): " + describe(e),
                    "put the store on ext4, xfs, btrfs or tmpfs");
        } finally {
            deleteQuietly(a);
            deleteQuietly(b);
            deleteQuietly(link);
        }
    }

    // as every other command reads it (ChibiConfig.load): a type, a range or an unreadable file fails here too
    private static Check config(ChibiHome home) {
        Path file = home.configFile();
        String name = "config " + file;
        if (!Files.exists(file)) {
            return Check.ok(name, "absent; chibi's defaults apply");
        }
        try {
            ChibiConfig.load(home);
        } catch (ConfigException e) {
            String problem = e.getMessage().startsWith(file.toString())
                    ? e.getMessage().substring(file.toString().length()).replaceFirst("^:(\\d+): ", "line $1: ").replaceFirst("^: ", "")
                    : e.getMessage();
            return Check.fail(name, problem, "fix what is named above, or move the file aside to use chibi's defaults;"
                    + " until then mount, the vfs and the cache commands refuse to run");
        }
        return Check.ok(name, "valid");
    }

    /**
     * The registries whose records judge mounts as status does: on this machine status's own (as
     * root, every user's it finds), else the test's host's.
     */
    private List<MountRegistry> registries(Host h) {
        if (host != null) {
            return List.of(h.registry());
        }
        try {
            return StatusCommand.hostRegistries();
        } catch (IOException e) {
            return List.of(h.registry());
        }
    }

    /**
     * A daemon killed without unmounting leaves a mount whose every access fails with ENOTCONN; a
     * mount the probe cannot tell of (a kernel answering for a daemon without xattrs, see
     * {@link FuseDaemon#answersOthers}) is stale where status calls it so: a record in
     * {@code registries} whose daemon is gone while its mount is still there.
     */
    static Check staleMounts(Host h, List<MountRegistry> registries) {
        String name = "stale mounts";
        List<Path> stale = new ArrayList<>();
        Map<Path, Long> mounters = new java.util.HashMap<>();
        java.util.Set<Path> recordedStale = new java.util.HashSet<>();
        for (MountRegistry registry : registries) {
            try {
                for (MountRegistry.Entry e : registry.list()) {
                    if (e.health() == MountRegistry.Health.STALE && e.record() != null) {
                        recordedStale.add(e.record().mountpoint());
                    }
                }
            } catch (IOException | RuntimeException unreadable) {
                // the registry check says why; the probe alone judges
            }
        }
        try {
            for (MountTable.MountEntry m : MountTable.chibifsMounts(h.mountTable())) {
                if (recordedStale.contains(m.mountpoint()) || isDisconnected(m.mountpoint())) {
                    stale.add(m.mountpoint());
                    mounters.put(m.mountpoint(), m.mounter());
                }
            }
        } catch (IOException e) {
            return Check.fail(name, "cannot read " + h.mountTable() + ": " + describe(e), "mount -t proc proc /proc");
        }
        if (stale.isEmpty()) {
            return Check.ok(name, "none in " + h.mountTable());
        }
        StringBuilder fix = new StringBuilder();
        for (Path p : stale) {
            // a daemon still there is hung, and only --force aborts it; a gone one's mount takes status's fix
            long mounter = mounters.getOrDefault(p, -1L);
            boolean hung = UmountCommand.findDaemon(p, mounter >= 0 ? mounter : h.uid()).isPresent();
            // another user's is theirs or root's to clear: umount refuses anyone else
            String whose = h.uid() != 0 && mounter >= 0 && mounter != h.uid() ? "as uid " + mounter + " or root, " : "";
            fix.append(fix.length() == 0 ? "" : "; ").append(whose)
                    .append(hung ? "chibifs umount --force " + Names.shown(p) : StatusCommand.staleMountFix(p));
        }
        return Check.fail(name, "not answering (daemon gone or hung): "
                + stale.stream().map(Names::shown).collect(java.util.stream.Collectors.joining(", ", "[", "]")), fix.toString());
    }

    private static boolean isDisconnected(Path mountpoint) {
        // a hung daemon blocks stat for good: ask on a daemon thread and give up after a while
        try {
            // the mount's own probe, a name never asked before: a stat of the mountpoint itself is
            // answered from attributes the kernel keeps, so a daemon killed a moment ago looked well
            return Bounded.within("doctor-stat", java.time.Duration.ofSeconds(STAT_TIMEOUT_SECONDS),
                    () -> !FuseDaemon.daemonAnswers(mountpoint)).orElse(true);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        } catch (ExecutionException e) {
            return false;
        }
    }

    private static Check staleRegistry(Host h) {
        String name = "registry " + h.registry().dir();
        List<MountRegistry.Entry> bad = new ArrayList<>();
        try {
            for (MountRegistry.Entry e : h.registry().list()) {
                // a detached daemon's record goes when the daemon exits, as an active one's does
                if (e.health() != MountRegistry.Health.ACTIVE && e.health() != MountRegistry.Health.DETACHED) {
                    bad.add(e);
                }
            }
        } catch (IOException e) {
            return Check.fail(name, "cannot read it: " + describe(e), "rm -r " + h.registry().dir());
        }
        if (bad.isEmpty()) {
            return Check.ok(name, "no stale entries");
        }
        StringBuilder detail = new StringBuilder();
        List<String> fixes = new ArrayList<>();
        List<String> removals = new ArrayList<>();
        for (MountRegistry.Entry e : bad) {
            detail.append(detail.length() == 0 ? "" : "; ").append(e.file().getFileName()).append(": ").append(e.detail());
            // status's fix for the same record: a killed daemon's mount, if still there, and its record go with one umount
            if (e.health() == MountRegistry.Health.STALE && e.record() != null) {
                fixes.add(StatusCommand.staleMountFix(e.record().mountpoint()));
            } else {
                removals.add(e.file().toString());
            }
        }
        if (!removals.isEmpty()) {
            fixes.add("rm " + String.join(" ", removals));
        }
        return Check.fail(name, "stale: " + detail, String.join("; ", fixes));
    }

    private static Check mountpoint(Host h, Path mp) {
        String name = "mountpoint " + Names.shown(mp);
        try {
            // first: a stale mount there is no directory to look at, and mount refuses any mount point
            for (MountTable.MountEntry m : MountTable.read(h.mountTable())) {
                if (m.mountpoint().equals(mp)) {
                    return m.isChibifs()
                            ? Check.fail(name, "already a chibifs mount", "chibifs umount " + Names.shown(mp) + " (with --force if its daemon is gone)")
                            : Check.fail(name, "already a " + m.fsType() + " mount point: chibifs mounts on a plain directory",
                                    "choose another directory, or umount " + Names.shown(mp));
                }
            }
        } catch (IOException e) {
            return Check.fail(name, "cannot read " + h.mountTable() + ": " + describe(e), "mount -t proc proc /proc");
        }
        if (!Files.isDirectory(mp)) {
            return Files.exists(mp, java.nio.file.LinkOption.NOFOLLOW_LINKS)
                    ? Check.fail(name, "not a directory", "choose a directory, or move " + Names.shown(mp) + " aside")
                    : Check.fail(name, "not an existing directory", "mkdir -p " + Names.shown(mp));
        }
        try {
            try (DirectoryStream<Path> entries = Files.newDirectoryStream(mp)) {
                if (entries.iterator().hasNext()) {
                    return Check.fail(name, "not empty, and chibifs refuses to mount over files",
                            "choose an empty directory, or pass -o nonempty");
                }
            }
        } catch (IOException e) {
            return Check.fail(name, "cannot read it: " + describe(e), "check its permissions: ls -ld " + Names.shown(mp));
        }
        return Check.ok(name, "an empty directory");
    }

    private static int unixMode(Path p) {
        try {
            return (Integer) Files.getAttribute(p, "unix:mode");
        } catch (IOException e) {
            return 0;
        }
    }

    private static boolean rootIsAMountPoint(Host h) {
        try {
            return MountTable.read(h.mountTable()).stream().anyMatch(m -> m.mountpoint().toString().equals("/"));
        } catch (IOException e) {
            return true; // unknown: the stale-mounts check says the table cannot be read
        }
    }

    private static long statfsType(Path dir) throws IOException {
        return statfs(dir).type();
    }

    private static Syscalls.Statfs statfs(Path dir) throws IOException {
        int fd = Syscalls.openat(Linux.AT_FDCWD, dir.toString(), Linux.O_RDONLY | Linux.O_DIRECTORY, 0, dir.toString());
        try {
            return Syscalls.fstatfs(fd);
        } finally {
            Syscalls.close(fd);
        }
    }

    private static String describe(Exception e) {
        if (e instanceof IOException io) {
            return ErrorHandler.oneLine(io);
        }
        return e.getClass().getSimpleName() + (e.getMessage() == null ? "" : " " + e.getMessage());
    }

    private static void deleteQuietly(Path p) {
        try {
            Files.deleteIfExists(p);
        } catch (IOException ignored) {
            // a probe the daemon's startup cleanup removes anyway: it carries the store's temporary prefix
        }
    }
}
