package dev.chibifs.fuse;

import dev.chibifs.path.Names;
import dev.chibifs.router.Router;
import dev.chibifs.sys.Linux;
import dev.chibifs.sys.ProcStatus;
import dev.chibifs.sys.Syscalls;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One mounted file system: mounts {@code /dev/fuse} at the mountpoint, serves it with a
 * {@link FuseSession}, returns once the kernel answers a request there (not after a sleep), and
 * unmounts on request.
 */
public final class FuseDaemon {

    private static final Logger LOG = LoggerFactory.getLogger(FuseDaemon.class);
    private static final Pattern RELEASE = Pattern.compile("(\\d+)\\.(\\d+).*");

    /** Options every chibifs mount gets; the user's {@code -o} options come after and may override. */
    public static final List<String> DEFAULT_OPTIONS = List.of("fsname=chibifs", "subtype=chibifs");

    /** Two jiffies at HZ=100, the coarsest: the kernel rounds a validity up to one, and compares strictly. */
    private static final Duration KERNEL_TICKS = Duration.ofMillis(20);
    /** How long an ending mount waits for the requests being served before its files close under them. */
    private static final long REFUSE_WAIT_MILLIS = 2000;

    private final Path mountpoint;
    private final FuseFileSystem fs;
    private final MountSpec spec;
    private final List<String> options;
    private final RequestStats stats = new RequestStats();
    private final boolean followStore;
    private final int kernelCacheSeconds;
    private volatile FuseSession session;
    private volatile FuseDevice device;
    private volatile StoreFollower follower = StoreFollower.NONE;
    private volatile boolean passthrough = true;
    private volatile boolean ioUring;
    private volatile boolean xattr = true;
    /** The root store's listing validity where it is an S3 bucket (null: not one), for the log line at {@link #start}. */
    private volatile Duration rootListingValidity;
    /** Whether the user gave {@code --kernel-cache} (not its default), for the same line. */
    private volatile boolean kernelCacheGiven;

    private FuseDaemon(Path mountpoint, FuseFileSystem fs, MountSpec spec, List<String> options, int kernelCacheSeconds) {
        this.mountpoint = mountpoint;
        this.fs = fs;
        this.spec = spec;
        this.options = options;
        this.followStore = kernelCacheSeconds > 0;
        this.kernelCacheSeconds = kernelCacheSeconds;
    }

    /** A daemon for {@code router} at {@code mountpoint}, not mounted yet: {@link #start} mounts it. */
    public static FuseDaemon create(Path mountpoint, Router router, CallerResolver callers, List<String> options,
                                    long mountUid, long mountGid) {
        return create(mountpoint, router, callers, options, mountUid, mountGid, 0, true);
    }

    /**
     * How long the kernel keeps names and attributes unless told otherwise: 30 s where a changed
     * directory's name can be made stale without unhashing it (Linux 6.2, FUSE_EXPIRE_ONLY), else 0,
     * 1 s timeouts: unhashing fails getcwd of every process working in the directory.
     */
    public static int defaultKernelCacheSeconds() {
        return kernelExpiresOnly() ? 30 : 0;
    }

    /** Whether this kernel honours FUSE_EXPIRE_ONLY (Linux 6.2). */
    static boolean kernelExpiresOnly() {
        return expiresOnly(System.getProperty("os.version", ""));
    }

    /** Whether a kernel of release {@code release} ({@code uname -r}) honours FUSE_EXPIRE_ONLY. */
    static boolean expiresOnly(String release) {
        Matcher m = RELEASE.matcher(release);
        if (!m.matches()) {
            return false;
        }
        int major = Integer.parseInt(m.group(1));
        int minor = Integer.parseInt(m.group(2));
        return major > 6 || major == 6 && minor >= 2;
    }

    /** The timeouts {@code --kernel-cache SECONDS} gives, as mount options (the user's own, later, win). */
    static String timeoutOptions(int seconds) {
        return "entry_timeout=" + seconds + ",attr_timeout=" + seconds + ",negative_timeout=" + seconds;
    }

    /**
     * {@link #create}, with the kernel keeping names, attributes, missing names and listings for
     * {@code kernelCacheSeconds} (0: 1 s, nothing missing) kept true to the store by following its
     * changes, and listings that carry attributes when {@code readdirplus}.
     */
    public static FuseDaemon create(Path mountpoint, Router router, CallerResolver callers, List<String> options,
                                    long mountUid, long mountGid, int kernelCacheSeconds, boolean readdirplus) {
        List<String> all = new ArrayList<>();
        boolean follow = kernelCacheSeconds > 0;
        if (follow) {
            // first, so that the user's own timeouts (later in the list) win
            all.add(timeoutOptions(kernelCacheSeconds));
        }
        all.addAll(options);
        MountSpec spec = MountSpec.parse(all);
        FuseFileSystem fs = new FuseFileSystem(router, callers, mountUid, mountGid,
                FuseFileSystem.Timeouts.of(spec.entryTimeout(), spec.attrTimeout(), spec.negativeTimeout()),
                readdirplus);
        if (spec.allowOther() || spec.allowRoot()) {
            fs.othersReach();
        }
        return new FuseDaemon(mountpoint, fs, spec, List.copyOf(all), kernelCacheSeconds);
    }

    /** The options the mount gets: the timeouts of the kernel cache where the store is followed, then those asked for. */
    public List<String> options() {
        return options;
    }

    /**
     * Whether the kernel may read and write store files directly (FUSE passthrough, Linux 6.9 and a
     * daemon with CAP_SYS_ADMIN) where it offers to; on unless turned off before {@link #start}.
     */
    public FuseDaemon passthrough(boolean on) {
        this.passthrough = on;
        return this;
    }

    /**
     * Whether files show their ETag as the extended attribute user.chibi.etag; on unless turned off
     * before {@link #start}. Off, the kernel asks no extended attribute at all, not even
     * security.capability before each write the daemon serves.
     */
    public FuseDaemon xattr(boolean on) {
        this.xattr = on;
        return this;
    }

    /**
     * What the log is to say, where the root store cannot be followed, of how long the kernel keeps
     * its answers: {@code listingValidity}, the root S3 store's {@code --metadata-ttl} (null where the
     * root store is no bucket), and whether the user asked {@code --kernel-cache} itself.
     */
    public FuseDaemon unfollowedRoot(Duration listingValidity, boolean kernelCacheGiven) {
        this.rootListingValidity = listingValidity;
        this.kernelCacheGiven = kernelCacheGiven;
        return this;
    }

    /**
     * The one line the log says where the root store cannot be followed: what the kernel keeps and
     * for how long, and the option that sets it. {@code --kernel-cache} is named only where the user
     * gave it: a line naming an option never passed (its default) read as a complaint about it.
     */
    static String unfollowedLine(int kernelCacheSeconds, boolean kernelCacheGiven, Duration listingValidity) {
        String asked = kernelCacheGiven ? "--kernel-cache " + kernelCacheSeconds + "s: " : "";
        if (listingValidity == null) {
            return asked + "the root store's changes cannot be followed: the kernel keeps names and attributes 1 s,"
                    + " no missing name";
        }
        Duration kernelCache = Duration.ofSeconds(kernelCacheSeconds);
        boolean capped = listingValidity.compareTo(kernelCache) > 0;
        String setBy = "--metadata-ttl " + shown(listingValidity) + (!capped ? ""
                : ", capped at " + (kernelCacheGiven ? "--kernel-cache " : "the kernel cache's ") + shown(kernelCache));
        return asked + "S3 root store: other hosts' changes cannot be followed, so the kernel keeps names,"
                + " attributes and missing names up to " + shown(capped ? kernelCache : listingValidity) + " after each"
                + " S3 listing (" + setBy + "), other stores' 1 s; a longer --metadata-ttl lists S3 less often and"
                + " shows other hosts' changes later";
    }

    /** A duration as the command line takes it: whole seconds as 2s, else milliseconds. */
    private static String shown(Duration d) {
        return d.toMillis() % 1000 == 0 ? d.toSeconds() + "s" : d.toMillis() + "ms";
    }

    /**
     * Whether requests come through io_uring queues, one per CPU (FUSE over io_uring), where the
     * kernel offers it (Linux 6.14+ with the fuse module's enable_uring on); off unless turned on
     * before {@link #start}.
     */
    public FuseDaemon ioUring(boolean on) {
        this.ioUring = on;
        return this;
    }

    /**
     * After the stores let go of their held answers ({@code chibifs sync}): the kernel is told to ask
     * again about what it was told from them, and this returns once it keeps none of it (what it
     * could not be told is waited out, {@link HeldAnswers#expireHeldAnswers}).
     */
    public void expireHeldAnswers() throws InterruptedException {
        Duration left = fs.heldAnswers.expireHeldAnswers();
        if (!left.isZero() && !left.isNegative()) {
            // the kernel's own deadlines, which nothing reports: waited out, and a tick or two more
            Thread.sleep(left.plus(KERNEL_TICKS).toMillis());
        }
    }

    /** What the daemon served so far. */
    public RequestStats stats() {
        return stats;
    }

    /**
     * What the daemon holds for the kernel: a node per file or directory the kernel knows (until it
     * forgets it), an open file per descriptor open through the mount, a followed directory per
     * inotify watch. Each grows with what the kernel keeps, not with the work done; a daemon whose
     * numbers climb while the kernel lets go (drop_caches) leaks.
     */
    public record Held(int nodes, int openFiles, int followedDirectories) {
    }

    public Held held() {
        return fs.held();
    }

    /** How the kernel and the daemon settled INIT, for {@code status}: null before the kernel's INIT. */
    public String negotiated() {
        FuseSession s = session;
        FuseSession.Negotiated n = s == null ? null : s.negotiated();
        if (n == null) {
            return null;
        }
        return "FUSE 7." + n.kernelMinor() + " (kernel offers 0x" + Long.toHexString(n.offered()) + ")"
                + ", max_write " + n.maxWrite()
                + (n.has(FuseProtocol.DO_READDIRPLUS) ? ", readdirplus" : "")
                + (n.has(FuseProtocol.PASSTHROUGH) && fs.backingFiles.passthroughRefused() == null ? ", passthrough" : ", served reads and writes")
                + (n.opensWithoutAsking() ? ", zero-message opendir" : "")
                + (n.has(FuseProtocol.DIRECT_IO_ALLOW_MMAP) ? ", changing files and appends go direct" : "")
                + (s.overIoUring() ? ", io_uring" : n.has(FuseProtocol.OVER_IO_URING) ? ", io_uring not ready" : "");
    }

    /**
     * Mounts and returns once the mount answers.
     *
     * @throws MountException with one clear line when the mount does not come up within {@code timeout}
     */
    public void start(Duration timeout) throws MountException {
        if (followStore) {
            StoreFollower f = ChangeFollower.start(fs);
            if (f == StoreFollower.NONE) {
                // expected where the root store is S3 or memory: nothing is wrong that the user could mend
                LOG.info(unfollowedLine(kernelCacheSeconds, kernelCacheGiven, rootListingValidity));
                // NONE would let the kernel keep everything for the long timeouts asked for, unfollowed
                fs.follow(StoreFollower.UNFOLLOWED);
            }
            follower = f;
        }
        try {
            device = FuseMount.mount(mountpoint, spec);
        } catch (MountException e) {
            follower.close();
            throw e;
        }
        try {
            HeldDescriptors mounted = HeldDescriptors.ofMount(HeldDescriptors.PROC, mountpoint);
            if (mounted == null) {
                // then only the process that opened a file reaches it by fchmod once its name moved on
                LOG.debug("no chibifs mount at {} in /proc/self/mountinfo", mountpoint);
            }
            fs.mounted(mounted);
        } catch (IOException | RuntimeException e) {
            LOG.debug("cannot read /proc/self/mountinfo for the mount at {}: {}", mountpoint, e.toString());
        }
        FuseSession s = new FuseSession(device, fs, new FuseSession.Settings(spec.maxWrite(),
                FuseSession.Settings.DEFAULT_WORKERS, FuseSession.Settings.DEFAULT_MAX_WORKERS, fs.readdirplus(), passthrough && mayPassThrough(), spec.debug(), xattr, ioUring), stats);
        session = s;
        if (follower instanceof ChangeFollower cf) {
            cf.notifyThrough(device, s);
        }
        s.start();
        Instant deadline = Instant.now().plus(timeout);
        while (Instant.now().isBefore(deadline)) {
            if (s.ended().isDone()) {
                throw new MountException("the kernel refused the FUSE session at " + Names.shown(mountpoint) + " (the reason is logged above)");
            }
            if (answers(mountpoint)) {
                return;
            }
            sleep(5);
        }
        FuseMount.unmount(mountpoint, true);
        throw new MountException("the mount at " + Names.shown(mountpoint) + " did not answer within " + timeout.toSeconds() + " s");
    }

    /**
     * Runs {@code whenServed} once if the kernel, having granted passthrough, refuses the daemon's
     * backing files: {@link #negotiated} says served from then on.
     */
    public FuseDaemon whenPassthroughRefused(Runnable whenServed) {
        fs.backingFiles.whenPassthroughRefused(whenServed);
        return this;
    }

    private static final String NOT_ADMIN = "the daemon lacks CAP_SYS_ADMIN (it is not root)";

    /** The identity map of the initial user namespace, as /proc/PID/uid_map shows it. */
    private static final List<String> INITIAL_UID_MAP = List.of("0", "0", "4294967295");

    /** Asking for passthrough where registering a backing file will fail makes every open fail over to served. */
    private static boolean mayPassThrough() {
        String capEff;
        String uidMap;
        try {
            capEff = ProcStatus.field(ProcStatus.SELF, "CapEff").orElse(null);
            uidMap = Files.readString(Path.of("/proc/self/uid_map"));
        } catch (IOException e) {
            LOG.debug("cannot read this process's capabilities or uid map: no passthrough ({})", e.toString());
            return false;
        }
        String why = whyNoPassthrough(capEff, uidMap);
        if (why != null && why != NOT_ADMIN) {
            // root in a rootless container expects passthrough: say why it has none (a user knows it is not root)
            LOG.info("reads and writes are served, no passthrough: {}", why);
        }
        return why == null;
    }

    /**
     * Why a daemon with capabilities {@code capEff} (CapEff, hex; null: unknown) in the user
     * namespace whose uid map is {@code uidMap} cannot register backing files, or null when it can:
     * FUSE_DEV_IOC_BACKING_OPEN takes CAP_SYS_ADMIN in the initial user namespace, and inside
     * another (a rootless container, unshare -U -r) CapEff counts that namespace's capabilities.
     * (/proc/self/ns/user against /proc/1/ns/user tells nothing where pid 1 is the namespace's own.)
     */
    static String whyNoPassthrough(String capEff, String uidMap) {
        boolean admin;
        try {
            admin = capEff != null && ProcStatus.hasSysAdmin(capEff);
        } catch (NumberFormatException e) {
            admin = false;
        }
        if (!admin) {
            return NOT_ADMIN;
        }
        List<String> lines = uidMap.strip().lines().map(l -> l.strip().replaceAll("\\s+", " ")).toList();
        if (lines.size() != 1 || !List.of(lines.get(0).split(" ")).equals(INITIAL_UID_MAP)) {
            return "the daemon runs in a user namespace (uid map " + String.join("; ", lines)
                    + "), where CAP_SYS_ADMIN is not the initial namespace's";
        }
        return null;
    }

    /** True once the kernel lists a chibifs mount there and its daemon answers a request. */
    public static boolean answers(Path mountpoint) {
        try {
            if (MountTable.find(mountpoint).filter(MountTable.MountEntry::isChibifs).isEmpty()) {
                return false;
            }
            // The table and the probe are two looks: a dead daemon's mount detached between them (by
            // the next daemon clearing it) leaves the probe on the plain directory underneath, whose
            // ENOENT is not an answer. So the probe counts only on a mount, the same one after it.
            Path parent = mountpoint.toAbsolutePath().getParent();
            Object device = device(mountpoint);
            return (parent == null || !device.equals(device(parent)))
                    && daemonAnswers(mountpoint)
                    && device.equals(device(mountpoint));
        } catch (IOException e) {
            return false;
        }
    }

    private static Object device(Path dir) throws IOException {
        return Files.getAttribute(dir, "unix:dev");
    }

    /**
     * Asks the daemon itself: a lookup of a name that does not exist always reaches it, whereas a
     * stat of the mountpoint can be answered from attributes the kernel cached before the daemon
     * died. Any answer means alive: ENOENT, or EIO where the store is away (an S3 store at / that
     * does not answer: the mount serves what this host has); "Transport endpoint is not connected"
     * means dead.
     *
     * <p>Another user's mount without allow_other gives EACCES to everyone else, root too, whether its
     * daemon lives or not: the kernel refuses the lookup before it asks anyone (fuse_permission), so
     * EACCES is no answer. Such a caller asks with {@link #answersOthers} instead.
     */
    public static boolean daemonAnswers(Path mountpoint) {
        int fd = Syscalls.tryOpenat(Linux.AT_FDCWD,
                mountpoint.resolve(".chibifs-probe-" + System.nanoTime()).toString(), Linux.O_PATH, 0);
        if (fd >= 0) {
            Syscalls.close(fd);
            return true;
        }
        if (-fd == Linux.EACCES) {
            return answersOthers(mountpoint);
        }
        return -fd != Linux.ENOTCONN && -fd != Linux.ECONNABORTED;
    }

    /** An attribute of a namespace no daemon of ours keeps: asking it always reaches the daemon, which says EOPNOTSUPP. */
    static final String PROBE_XATTR = "security.chibifs-probe";

    /**
     * Whether the daemon of a mount this process may not look into (another user's, without
     * allow_other) answers. A getxattr of a security.* name of the mountpoint itself is the one
     * request the kernel sends such a caller's way without its allow_other check (the VFS leaves
     * security.* to the file system; only user.* asks the inode's permission): a daemon alive
     * answers it (EOPNOTSUPP), a dead one's mount says ENOTCONN. Where the kernel answers for the
     * daemon (EOPNOTSUPP too, after a daemon without xattrs said ENOSYS once) this says "answers":
     * {@code chibifs doctor} asks the mount registries besides.
     */
    static boolean answersOthers(Path mountpoint) {
        int fd = Syscalls.tryOpenat(Linux.AT_FDCWD, mountpoint.toString(), Linux.O_PATH | Linux.O_CLOEXEC, 0);
        if (fd < 0) {
            return -fd != Linux.ENOTCONN && -fd != Linux.ECONNABORTED;
        }
        try {
            Syscalls.getxattrPath(fd, PROBE_XATTR, mountpoint.toString());
            return true;
        } catch (IOException e) {
            int errno = dev.chibifs.sys.Errors.errno(e);
            return errno != Linux.ENOTCONN && errno != Linux.ECONNABORTED;
        } finally {
            Syscalls.close(fd);
        }
    }

    /** Blocks until the session ends (unmounted by anyone). */
    public void awaitUnmounted() {
        FuseSession s = session;
        if (s != null) {
            s.ended().join();
        }
    }

    /**
     * Unmounts lazily (so a busy mount still detaches) and waits up to {@code wait} for the session
     * to end; then closes every handle still open. Returns true when the session ended in time.
     */
    public boolean unmount(Duration wait) {
        FuseSession s = session;
        if (s != null && !s.ended().isDone()) {
            FuseMount.Result r = FuseMount.unmount(mountpoint, true);
            if (!r.ok() && !r.message().isEmpty() && !s.ended().isDone()) {
                LOG.warn("unmount: {}", r.message());
            }
        }
        boolean ended;
        try {
            if (s != null) {
                s.ended().get(wait.toMillis(), TimeUnit.MILLISECONDS);
            }
            ended = true;
        } catch (Exception e) {
            ended = false;
        }
        if (!ended && s != null && !s.refuseAll(REFUSE_WAIT_MILLIS)) {
            LOG.warn("requests still under way as the mount ends; their files close under them");
        }
        follower.close();
        int open = fs.closeAll();
        if (open > 0) {
            LOG.info("closed {} file(s) still open at unmount", open);
        }
        FuseDevice d = device;
        if (d != null) {
            d.close();
        }
        return ended;
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Clears a mount left stale by a daemon that died ("Transport endpoint is not connected"); true if one was cleared. */
    public static boolean clearStale(Path mountpoint) throws IOException {
        if (MountTable.find(mountpoint).filter(e -> e.fsType().startsWith("fuse")).isEmpty()
                || daemonAnswers(mountpoint)) {
            return false;
        }
        FuseMount.Result r = FuseMount.unmount(mountpoint, true);
        if (!r.ok()) {
            throw new IOException("cannot clear the stale mount at " + Names.shown(mountpoint) + ": " + r.message());
        }
        return true;
    }

    /** The options for a mount: defaults, {@code allow_other} when other users must reach it, then the user's. */
    public static List<String> optionsFor(boolean allowOther, List<String> userOptions) {
        List<String> all = new ArrayList<>(DEFAULT_OPTIONS);
        if (allowOther && !userOptions.contains("allow_other")) {
            all.add("allow_other");
        }
        all.addAll(userOptions);
        return all;
    }
}
