package dev.chibifs.fuse;

import java.util.List;
import java.util.Set;

/** The mount options libfuse 2 and the kernel understand, so a typo fails before mounting, naming itself. */
public final class FuseOptions {

    private static final Set<String> FLAGS = Set.of(
            "allow_other", "allow_root", "auto_unmount", "nonempty", "default_permissions", "blkdev",
            "big_writes", "kernel_cache", "auto_cache", "noauto_cache", "noforget", "nopath", "intr",
            "hard_remove", "use_ino", "readdir_ino", "direct_io", "async_read", "sync_read", "atomic_o_trunc",
            "no_remote_lock", "no_remote_flock", "no_remote_posix_lock", "splice_write", "no_splice_write",
            "splice_move", "no_splice_move", "splice_read", "no_splice_read", "debug",
            "ro", "rw", "nosuid", "suid", "nodev", "dev", "noexec", "exec", "noatime", "atime", "relatime",
            "norelatime", "strictatime", "nodiratime", "sync", "async", "dirsync", "lazytime");

    private static final Set<String> VALUED = Set.of(
            "fsname", "subtype", "blksize", "max_read", "max_write", "max_readahead", "max_background",
            "congestion_threshold", "umask", "uid", "gid", "entry_timeout", "negative_timeout", "attr_timeout",
            "ac_attr_timeout", "remember", "intr_signal", "modules", "context", "fscontext", "defcontext",
            "rootcontext");

    private FuseOptions() {
    }

    /** Throws IllegalArgumentException naming the first option that is not a known libfuse 2 or mount option. */
    public static void validate(List<String> options) {
        for (String o : options) {
            String name = o.contains("=") ? o.substring(0, o.indexOf('=')) : o;
            boolean ok = o.contains("=") ? VALUED.contains(name) && o.length() > name.length() + 1
                                         : FLAGS.contains(name);
            if (o.isEmpty() || o.chars().anyMatch(Character::isWhitespace) || !ok) {
                throw new IllegalArgumentException("unknown or malformed FUSE option '" + o
                        + "': options are NAME or NAME=VALUE known to libfuse 2 (e.g. allow_other, kernel_cache,"
                        + " attr_timeout=1, max_read=131072)");
            }
        }
    }
}
