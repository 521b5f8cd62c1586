package dev.chibifs.fuse;

import java.util.ArrayList;
import java.util.List;

/**
 * A mount's {@code -o} options, split into what the kernel's mount(2) takes (its data string and
 * flags) and what the daemon itself keeps (timeouts, max_write, debug). Options that only meant
 * something to libfuse 2 are accepted and ignored, so every option the README documents keeps working.
 */
record MountSpec(String fsname, String subtype, boolean allowOther, boolean defaultPermissions, long flags,
                 List<String> kernelData, double entryTimeout, double attrTimeout, double negativeTimeout,
                 int maxWrite, boolean debug, boolean nonempty) {

    static final long MS_RDONLY = 1;
    static final long MS_NOSUID = 2;
    static final long MS_NODEV = 4;
    static final long MS_NOEXEC = 8;
    static final long MS_SYNCHRONOUS = 16;
    static final long MS_DIRSYNC = 128;
    static final long MS_NOATIME = 1024;
    static final long MS_NODIRATIME = 2048;
    static final long MS_RELATIME = 1 << 21;
    static final long MS_STRICTATIME = 1 << 24;
    static final long MS_LAZYTIME = 1 << 25;

    static MountSpec parse(List<String> options) {
        String fsname = "chibifs";
        String subtype = "chibifs";
        boolean allowOther = false;
        boolean defaultPermissions = false;
        long flags = MS_NOSUID | MS_NODEV;
        List<String> data = new ArrayList<>();
        double entry = 1;
        double attr = 1;
        double negative = 0;
        int maxWrite = FuseSession.Settings.DEFAULT_MAX_WRITE;
        boolean debug = false;
        boolean nonempty = false;
        for (String list : options) {
            for (String o : list.split(",")) {
                if (o.isEmpty()) {
                    continue;
                }
                int eq = o.indexOf('=');
                String name = eq < 0 ? o : o.substring(0, eq);
                String value = eq < 0 ? null : o.substring(eq + 1);
                switch (name) {
                    case "fsname" -> fsname = value;
                    case "subtype" -> subtype = value;
                    case "allow_other" -> allowOther = true;
                    case "default_permissions" -> defaultPermissions = true;
                    case "entry_timeout" -> entry = seconds(o, value);
                    case "attr_timeout" -> attr = seconds(o, value);
                    case "negative_timeout" -> negative = seconds(o, value);
                    case "max_write" -> maxWrite = (int) Math.max(4096, Math.min(whole(o, value), 16 << 20));
                    case "max_read", "blksize" -> data.add(name + "=" + whole(o, value));
                    case "debug" -> debug = true;
                    case "nonempty" -> nonempty = true;
                    case "ro" -> flags |= MS_RDONLY;
                    case "rw" -> flags &= ~MS_RDONLY;
                    case "nosuid" -> flags |= MS_NOSUID;
                    case "suid" -> flags &= ~MS_NOSUID;
                    case "nodev" -> flags |= MS_NODEV;
                    case "dev" -> flags &= ~MS_NODEV;
                    case "noexec" -> flags |= MS_NOEXEC;
                    case "exec" -> flags &= ~MS_NOEXEC;
                    case "noatime" -> flags |= MS_NOATIME;
                    case "nodiratime" -> flags |= MS_NODIRATIME;
                    case "relatime" -> flags |= MS_RELATIME;
                    case "strictatime" -> flags |= MS_STRICTATIME;
                    case "lazytime" -> flags |= MS_LAZYTIME;
                    case "sync" -> flags |= MS_SYNCHRONOUS;
                    case "dirsync" -> flags |= MS_DIRSYNC;
                    default -> {
                        // libfuse 2's own options (big_writes, use_ino, kernel_cache, ...): the daemon
                        // now does by itself what they asked of libfuse, or they never applied here
                    }
                }
            }
        }
        return new MountSpec(fsname, subtype, allowOther, defaultPermissions, flags, List.copyOf(data),
                entry, attr, negative, maxWrite, debug, nonempty);
    }

    private static double seconds(String option, String value) {
        try {
            double d = Double.parseDouble(value);
            if (d >= 0 && d <= 1e9) {
                return d;
            }
        } catch (NumberFormatException | NullPointerException ignored) {
            // named below
        }
        throw new IllegalArgumentException("invalid FUSE option '" + option + "': a number of seconds >= 0");
    }

    private static long whole(String option, String value) {
        try {
            long n = Long.parseLong(value);
            if (n > 0) {
                return n;
            }
        } catch (NumberFormatException | NullPointerException ignored) {
            // named below
        }
        throw new IllegalArgumentException("invalid FUSE option '" + option + "': a whole number > 0");
    }
}
