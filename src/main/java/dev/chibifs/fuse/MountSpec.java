package dev.chibifs.fuse;

import dev.chibifs.sys.InvalidSpecException;
import dev.chibifs.sys.Linux;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.OptionalLong;
import java.util.Set;

/**
 * A mount's {@code -o} options, split into what the kernel gets at mount time (flags and mount
 * data, or fusermount's options) and what the daemon's session uses itself (timeouts, INIT
 * limits, debug). It takes every name libfuse 2 and mount(8) took, so options in scripts and
 * fstab keep working; those that only steered libfuse 2 are accepted and mean nothing now.
 * A later option overrides an earlier one.
 */
public final class MountSpec {

    private static final Logger LOG = LoggerFactory.getLogger(MountSpec.class);

    /** libfuse's defaults for the session's timeouts, in seconds. */
    static final double DEFAULT_ENTRY_TIMEOUT = 1.0;
    static final double DEFAULT_ATTR_TIMEOUT = 1.0;
    static final double DEFAULT_NEGATIVE_TIMEOUT = 0.0;
    static final String DEFAULT_NAME = "chibifs";

    /** Options that steered libfuse 2 itself (its caches, its path layer, its thread loop): nothing reads them now. */
    private static final Set<String> LIBFUSE2_FLAGS = Set.of(
            "big_writes", "kernel_cache", "auto_cache", "noauto_cache", "noforget", "nopath", "intr", "hard_remove",
            "use_ino", "readdir_ino", "direct_io", "async_read", "sync_read", "atomic_o_trunc", "no_remote_lock",
            "no_remote_flock", "no_remote_posix_lock", "splice_write", "no_splice_write", "splice_move",
            "no_splice_move", "splice_read", "no_splice_read");
    private static final Set<String> LIBFUSE2_VALUED = Set.of("ac_attr_timeout", "remember", "intr_signal", "modules");

    /** mount(8)'s flags: the bits each sets and clears. */
    private static final Map<String, long[]> MOUNT_FLAGS = Map.ofEntries(
            flag("ro", Linux.MS_RDONLY, 0), flag("rw", 0, Linux.MS_RDONLY),
            flag("nosuid", Linux.MS_NOSUID, 0), flag("suid", 0, Linux.MS_NOSUID),
            flag("nodev", Linux.MS_NODEV, 0), flag("dev", 0, Linux.MS_NODEV),
            flag("noexec", Linux.MS_NOEXEC, 0), flag("exec", 0, Linux.MS_NOEXEC),
            flag("noatime", Linux.MS_NOATIME, Linux.MS_STRICTATIME | Linux.MS_RELATIME),
            flag("atime", 0, Linux.MS_NOATIME),
            flag("relatime", Linux.MS_RELATIME, Linux.MS_NOATIME | Linux.MS_STRICTATIME),
            flag("norelatime", 0, Linux.MS_RELATIME),
            flag("strictatime", Linux.MS_STRICTATIME, Linux.MS_NOATIME | Linux.MS_RELATIME),
            flag("nodiratime", Linux.MS_NODIRATIME, 0),
            flag("sync", Linux.MS_SYNCHRONOUS, 0), flag("async", 0, Linux.MS_SYNCHRONOUS),
            flag("dirsync", Linux.MS_DIRSYNC, 0),
            flag("lazytime", Linux.MS_LAZYTIME, 0));

    /** The flags fusermount knows by name that are off by default. */
    private static final List<Map.Entry<String, Long>> HELPER_FLAGS = List.of(
            Map.entry("ro", Linux.MS_RDONLY), Map.entry("noexec", Linux.MS_NOEXEC),
            Map.entry("sync", Linux.MS_SYNCHRONOUS), Map.entry("dirsync", Linux.MS_DIRSYNC),
            Map.entry("noatime", Linux.MS_NOATIME), Map.entry("nodiratime", Linux.MS_NODIRATIME));

    private static final Set<String> OWN_FLAGS = Set.of(
            "allow_other", "allow_root", "auto_unmount", "nonempty", "default_permissions", "blkdev", "debug");
    private static final Set<String> OWN_VALUED = Set.of(
            "fsname", "subtype", "blksize", "max_read", "max_write", "max_readahead", "max_background",
            "congestion_threshold", "umask", "uid", "gid", "entry_timeout", "negative_timeout", "attr_timeout");
    /** Security labels: the kernel's LSM reads them from the mount data. */
    private static final Set<String> LABELS = Set.of("context", "fscontext", "defcontext", "rootcontext");

    private static final long U32 = 0xffff_ffffL;
    /** Sizes beyond this mean nothing to the kernel (it caps requests at max_pages), and stay positive ints. */
    private static final long MAX_SIZE = Integer.MAX_VALUE;

    private final List<String> options;
    private final String fsname;
    private final String subtype;
    private final long mountFlags;
    private final boolean allowOther;
    private final boolean allowRoot;
    private final boolean defaultPermissions;
    private final boolean nonempty;
    private final boolean autoUnmount;
    private final boolean debug;
    private final OptionalInt maxRead;
    private final OptionalInt blksize;
    private final List<String> labels;
    private final double entryTimeout;
    private final double attrTimeout;
    private final double negativeTimeout;
    private final OptionalInt maxWrite;
    private final OptionalInt maxReadahead;
    private final OptionalInt maxBackground;
    private final OptionalInt congestionThreshold;
    private final OptionalInt umask;
    private final OptionalLong uid;
    private final OptionalLong gid;
    private final List<String> ignored;

    private MountSpec(Parser p) {
        options = List.copyOf(p.options);
        fsname = p.fsname;
        subtype = p.subtype;
        mountFlags = p.mountFlags;
        allowOther = p.allowOther;
        allowRoot = p.allowRoot;
        defaultPermissions = p.defaultPermissions;
        nonempty = p.nonempty;
        autoUnmount = p.autoUnmount;
        debug = p.debug;
        maxRead = p.maxRead;
        blksize = p.blksize;
        labels = List.copyOf(p.labels.values());
        entryTimeout = p.entryTimeout;
        attrTimeout = p.attrTimeout;
        negativeTimeout = p.negativeTimeout;
        maxWrite = p.maxWrite;
        maxReadahead = p.maxReadahead;
        maxBackground = p.maxBackground;
        congestionThreshold = p.congestionThreshold;
        umask = p.umask;
        uid = p.uid;
        gid = p.gid;
        ignored = List.copyOf(p.ignored);
    }

    /**
     * The spec for {@code options}, each a NAME, NAME=VALUE, or several of them joined by commas
     * (as {@code -o} gives them). Throws InvalidSpecException naming the first option that is
     * unknown or malformed, or whose value breaks its rule.
     */
    public static MountSpec parse(List<String> options) {
        Parser p = new Parser();
        for (String list : options) {
            for (String o : list.split(",", -1)) {
                p.take(o);
            }
        }
        if (!p.ignored.isEmpty()) {
            LOG.debug("options that only steered libfuse 2, accepted and ignored: {}", String.join(",", p.ignored));
        }
        return new MountSpec(p);
    }

    /** The spec of no options: libfuse's defaults, fsname and subtype chibifs. */
    static MountSpec defaults() {
        return parse(List.of());
    }

    /** Each option as given, one per element, in order. */
    List<String> options() {
        return options;
    }

    // ---- the kernel's side

    /** mount(2)'s source, and what /proc/mounts shows first. */
    String fsname() {
        return fsname;
    }

    /** mount(2)'s file system type: {@code fuse.SUBTYPE}. */
    String type() {
        return "fuse." + subtype;
    }

    /** mount(2)'s flags: MS_NOSUID and MS_NODEV unless suid or dev, plus those the options set. */
    long mountFlags() {
        return mountFlags;
    }

    /**
     * The mount data after {@code fd=,rootmode=,user_id=,group_id=}, which only the mounter knows:
     * allow_other (also for allow_root, which the session then narrows), default_permissions,
     * max_read, blksize, security labels.
     */
    List<String> kernelOptions() {
        List<String> k = new ArrayList<>();
        if (allowOther || allowRoot) {
            k.add("allow_other");
        }
        if (defaultPermissions) {
            k.add("default_permissions");
        }
        maxRead.ifPresent(n -> k.add("max_read=" + n));
        blksize.ifPresent(n -> k.add("blksize=" + n));
        k.addAll(labels);
        return k;
    }

    /**
     * What fusermount gets after {@code -o}: the names, not bits, of the flags (it turns them into
     * bits itself and refuses, as a user, what only root may), the kernel options, fsname and
     * subtype, and nonempty (the emptiness check is {@link FuseMount}'s; fusermount 2 would repeat it).
     */
    List<String> helperOptions() {
        List<String> h = new ArrayList<>();
        h.add("fsname=" + escapeForHelper(fsname));
        h.add("subtype=" + escapeForHelper(subtype));
        if ((mountFlags & Linux.MS_NOSUID) == 0) {
            h.add("suid");
        }
        if ((mountFlags & Linux.MS_NODEV) == 0) {
            h.add("dev");
        }
        for (Map.Entry<String, Long> f : HELPER_FLAGS) {
            if ((mountFlags & f.getValue()) != 0) {
                h.add(f.getKey());
            }
        }
        h.addAll(kernelOptions());
        h.add("nonempty");
        if (autoUnmount) {
            h.add("auto_unmount");
        }
        return h;
    }

    /** Flags fusermount has no name for (strictatime, lazytime): only a mount as root sets them. */
    List<String> helperCannotSet() {
        List<String> lost = new ArrayList<>();
        if ((mountFlags & Linux.MS_STRICTATIME) != 0) {
            lost.add("strictatime");
        }
        if ((mountFlags & Linux.MS_LAZYTIME) != 0) {
            lost.add("lazytime");
        }
        return lost;
    }

    /** Users other than the mounter may use the mount (allow_other). */
    boolean allowOther() {
        return allowOther;
    }

    /**
     * allow_root: the kernel lets everyone in (allow_other) and the session must refuse requests
     * from uids other than the mounter's and root's, as libfuse did.
     */
    boolean allowRoot() {
        return allowRoot;
    }

    /** The kernel checks mode bits itself before asking the daemon. */
    boolean defaultPermissions() {
        return defaultPermissions;
    }

    /** Mount over a directory that is not empty. */
    boolean nonempty() {
        return nonempty;
    }

    /** fusermount stays and unmounts when the daemon's end of its socket closes (the daemon died). */
    boolean autoUnmount() {
        return autoUnmount;
    }

    /** The kernel's max_read (largest READ it sends), also an INIT limit; absent: no limit. */
    OptionalInt maxRead() {
        return maxRead;
    }

    // ---- the daemon's side

    /** Seconds the kernel may keep a name (entry_timeout). */
    double entryTimeout() {
        return entryTimeout;
    }

    /** Seconds the kernel may keep attributes (attr_timeout). */
    double attrTimeout() {
        return attrTimeout;
    }

    /** Seconds the kernel may remember that a name is missing (negative_timeout); 0: not at all. */
    double negativeTimeout() {
        return negativeTimeout;
    }

    /** INIT's max_write: as given, else the session's default ({@link FuseSession.Settings#DEFAULT_MAX_WRITE}). */
    int maxWrite() {
        return maxWrite.orElse(FuseSession.Settings.DEFAULT_MAX_WRITE);
    }

    /** INIT's max_readahead; absent: what the kernel offers. */
    OptionalInt maxReadahead() {
        return maxReadahead;
    }

    /** INIT's max_background (0 to 65535). */
    OptionalInt maxBackground() {
        return maxBackground;
    }

    /** INIT's congestion_threshold (0 to 65535). */
    OptionalInt congestionThreshold() {
        return congestionThreshold;
    }

    /** libfuse's umask=: mode bits to clear from every file's attributes. */
    OptionalInt umask() {
        return umask;
    }

    /** libfuse's uid=: the owner every file shows. */
    OptionalLong uid() {
        return uid;
    }

    /** libfuse's gid=: the group every file shows. */
    OptionalLong gid() {
        return gid;
    }

    /** Log every request and reply (debug). */
    boolean debug() {
        return debug;
    }

    /** Options given that only steered libfuse 2, in order: accepted, and nothing reads them. */
    List<String> ignored() {
        return ignored;
    }

    @Override
    public String toString() {
        return String.join(",", options);
    }

    private static Map.Entry<String, long[]> flag(String name, long set, long clear) {
        return Map.entry(name, new long[] {set, clear});
    }

    /** fusermount splits on commas and reads a backslash as escaping the next character. */
    private static String escapeForHelper(String value) {
        return value.replace("\\", "\\\\");
    }

    /** One pass over the options; the last of each wins. */
    private static final class Parser {
        final List<String> options = new ArrayList<>();
        String fsname = DEFAULT_NAME;
        String subtype = DEFAULT_NAME;
        long mountFlags = Linux.MS_NOSUID | Linux.MS_NODEV;
        boolean allowOther;
        boolean allowRoot;
        boolean defaultPermissions;
        boolean nonempty;
        boolean autoUnmount;
        boolean debug;
        OptionalInt maxRead = OptionalInt.empty();
        OptionalInt blksize = OptionalInt.empty();
        final Map<String, String> labels = new LinkedHashMap<>();
        double entryTimeout = DEFAULT_ENTRY_TIMEOUT;
        double attrTimeout = DEFAULT_ATTR_TIMEOUT;
        double negativeTimeout = DEFAULT_NEGATIVE_TIMEOUT;
        OptionalInt maxWrite = OptionalInt.empty();
        OptionalInt maxReadahead = OptionalInt.empty();
        OptionalInt maxBackground = OptionalInt.empty();
        OptionalInt congestionThreshold = OptionalInt.empty();
        OptionalInt umask = OptionalInt.empty();
        OptionalLong uid = OptionalLong.empty();
        OptionalLong gid = OptionalLong.empty();
        final List<String> ignored = new ArrayList<>();

        void take(String o) {
            int eq = o.indexOf('=');
            String name = eq < 0 ? o : o.substring(0, eq);
            String value = eq < 0 ? null : o.substring(eq + 1);
            boolean known = value == null
                    ? OWN_FLAGS.contains(name) || MOUNT_FLAGS.containsKey(name) || LIBFUSE2_FLAGS.contains(name)
                    : OWN_VALUED.contains(name) || LABELS.contains(name) || LIBFUSE2_VALUED.contains(name);
            if (o.isEmpty() || o.chars().anyMatch(Character::isWhitespace) || !known || "".equals(value)) {
                throw new InvalidSpecException("unknown or malformed FUSE option '" + o
                        + "': options are NAME or NAME=VALUE known to FUSE and mount(8) (e.g. allow_other, ro,"
                        + " attr_timeout=1, max_read=131072)");
            }
            options.add(o);
            if (value == null) {
                flag(name);
            } else {
                valued(o, name, value);
            }
        }

        private void flag(String name) {
            long[] bits = MOUNT_FLAGS.get(name);
            if (bits != null) {
                mountFlags = (mountFlags & ~bits[1]) | bits[0];
                return;
            }
            if (LIBFUSE2_FLAGS.contains(name)) {
                ignored.add(name);
                return;
            }
            switch (name) {
                case "allow_other" -> allowOther = true;
                case "allow_root" -> allowRoot = true;
                case "default_permissions" -> defaultPermissions = true;
                case "nonempty" -> nonempty = true;
                case "auto_unmount" -> autoUnmount = true;
                case "debug" -> debug = true;
                case "blkdev" -> throw new InvalidSpecException("invalid FUSE option 'blkdev': it mounts a block"
                        + " device (fuseblk), and chibifs serves a directory tree, not a device");
                default -> throw new IllegalStateException(name);
            }
        }

        private void valued(String o, String name, String value) {
            if (LABELS.contains(name)) {
                labels.put(name, o);
                return;
            }
            if (LIBFUSE2_VALUED.contains(name)) {
                switch (name) {
                    case "ac_attr_timeout" -> seconds(o, name, value);
                    case "remember", "intr_signal" -> integer(o, name, value, name.equals("remember") ? -1 : 1,
                            name.equals("remember") ? Integer.MAX_VALUE : 64);
                    default -> {
                    }
                }
                ignored.add(o);
                return;
            }
            switch (name) {
                case "fsname" -> fsname = value;
                case "subtype" -> {
                    // another type mounted, but mount waited 60 s for a fuse.chibifs it never saw, and status,
                    // umount and stale-mount recovery find mounts by that type too
                    if (!value.equals("chibifs")) {
                        throw new InvalidSpecException("invalid FUSE option '" + o
                                + "': the subtype is chibifs (the mount's type is fuse.chibifs, by which status,"
                                + " umount and stale-mount recovery know it)");
                    }
                    subtype = value;
                }
                case "entry_timeout" -> entryTimeout = seconds(o, name, value);
                case "attr_timeout" -> attrTimeout = seconds(o, name, value);
                case "negative_timeout" -> negativeTimeout = seconds(o, name, value);
                case "max_read" -> maxRead = OptionalInt.of((int) integer(o, name, value, 1, MAX_SIZE));
                case "max_write" -> maxWrite = OptionalInt.of((int) integer(o, name, value,
                        FuseSession.Settings.MIN_MAX_WRITE, FuseSession.Settings.MAX_MAX_WRITE));
                case "max_readahead" -> maxReadahead = OptionalInt.of((int) integer(o, name, value, 0, MAX_SIZE));
                case "max_background" -> maxBackground = OptionalInt.of((int) integer(o, name, value, 0, 0xffff));
                case "congestion_threshold" -> congestionThreshold = OptionalInt.of((int) integer(o, name, value, 0, 0xffff));
                case "blksize" -> {
                    long n = integer(o, name, value, 512, 1L << 30);
                    if (Long.bitCount(n) != 1) {
                        throw new InvalidSpecException("invalid FUSE option '" + o
                                + "': blksize is a power of two from 512 (bytes)");
                    }
                    blksize = OptionalInt.of((int) n);
                }
                case "umask" -> umask = OptionalInt.of(octal(o, value));
                case "uid" -> uid = OptionalLong.of(integer(o, name, value, 0, U32 - 1));
                case "gid" -> gid = OptionalLong.of(integer(o, name, value, 0, U32 - 1));
                default -> throw new IllegalStateException(name);
            }
        }

        private static double seconds(String o, String name, String value) {
            double d;
            try {
                d = Double.parseDouble(value);
            } catch (NumberFormatException e) {
                d = Double.NaN;
            }
            // parseDouble also takes "Infinity", "0x1p3" and "1d": refuse what is not plain decimal
            if (!(d >= 0) || Double.isInfinite(d) || !value.matches("[0-9]*\\.?[0-9]+|[0-9]+\\.")) {
                throw new InvalidSpecException("invalid FUSE option '" + o + "': " + name
                        + " is a number of seconds >= 0 (e.g. 1 or 0.5)");
            }
            return d;
        }

        private static long integer(String o, String name, String value, long min, long max) {
            long n;
            try {
                n = value.matches("-?[0-9]{1,19}") ? Long.parseLong(value) : Long.MIN_VALUE;
            } catch (NumberFormatException e) {
                n = Long.MIN_VALUE;
            }
            if (n < min || n > max) {
                throw new InvalidSpecException("invalid FUSE option '" + o + "': " + name
                        + " is a whole number from " + min + " to " + max);
            }
            return n;
        }

        private static int octal(String o, String value) {
            if (!value.matches("[0-7]{1,4}") || Integer.parseInt(value, 8) > 0777) {
                throw new InvalidSpecException("invalid FUSE option '" + o
                        + "': umask is octal mode bits from 0 to 777 (e.g. 022)");
            }
            return Integer.parseInt(value, 8);
        }
    }
}
