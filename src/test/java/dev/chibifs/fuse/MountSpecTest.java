package dev.chibifs.fuse;

import dev.chibifs.sys.Linux;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.OptionalInt;
import java.util.OptionalLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Splitting -o options between the kernel and the daemon, and refusing bad ones; nothing is mounted. */
class MountSpecTest {

    private static MountSpec spec(String... options) {
        return MountSpec.parse(List.of(options));
    }

    private static void refused(String option, String message) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> spec(option));
        assertEquals(message, e.getMessage());
    }

    @Test
    void noOptionsAreLibfusesDefaults() {
        MountSpec s = MountSpec.defaults();
        assertEquals("chibifs", s.fsname());
        assertEquals("fuse.chibifs", s.type());
        assertEquals(Linux.MS_NOSUID | Linux.MS_NODEV, s.mountFlags());
        assertEquals(List.of(), s.kernelOptions());
        assertEquals(List.of("fsname=chibifs", "subtype=chibifs", "nonempty"), s.helperOptions());
        assertEquals(1.0, s.entryTimeout());
        assertEquals(1.0, s.attrTimeout());
        assertEquals(0.0, s.negativeTimeout());
        assertEquals(FuseSession.Settings.DEFAULT_MAX_WRITE, s.maxWrite());
        assertFalse(s.allowOther() || s.allowRoot() || s.defaultPermissions() || s.nonempty() || s.autoUnmount()
                || s.debug());
        assertEquals(List.of(), s.ignored());
    }

    @Test
    void theDaemonsOwnOptionListSplitsAndTheLibfuse2OnesAreIgnored() {
        // FuseDaemon's defaults, KernelEntries' timeouts (one comma-joined element), then a user's -o
        MountSpec s = MountSpec.parse(List.of("fsname=chibifs", "subtype=chibifs", "big_writes", "max_write=1048576",
                "use_ino", "entry_timeout=30,attr_timeout=30,negative_timeout=30", "allow_other", "attr_timeout=2.5"));
        assertEquals(1048576, s.maxWrite());
        assertEquals(30.0, s.entryTimeout());
        assertEquals(2.5, s.attrTimeout(), "the last one wins");
        assertEquals(30.0, s.negativeTimeout());
        assertTrue(s.allowOther());
        assertEquals(List.of("allow_other"), s.kernelOptions());
        assertEquals(List.of("big_writes", "use_ino"), s.ignored());
        assertEquals(List.of("fsname=chibifs", "subtype=chibifs", "big_writes", "max_write=1048576", "use_ino",
                "entry_timeout=30", "attr_timeout=30", "negative_timeout=30", "allow_other", "attr_timeout=2.5"),
                s.options());
    }

    @Test
    void mountFlagsBecomeBitsForMount2AndNamesForFusermount() {
        MountSpec s = spec("ro,noexec,noatime,nodiratime,sync,dirsync,suid,dev");
        assertEquals(Linux.MS_RDONLY | Linux.MS_NOEXEC | Linux.MS_NOATIME | Linux.MS_NODIRATIME
                | Linux.MS_SYNCHRONOUS | Linux.MS_DIRSYNC, s.mountFlags());
        assertEquals(List.of("fsname=chibifs", "subtype=chibifs", "suid", "dev", "ro", "noexec", "sync", "dirsync",
                "noatime", "nodiratime", "nonempty"), s.helperOptions());
        assertEquals(List.of(), s.helperCannotSet());

        assertEquals(Linux.MS_NOSUID | Linux.MS_NODEV, spec("ro", "rw", "noexec,exec,sync,async").mountFlags(),
                "each flag's opposite clears it");
        MountSpec times = spec("noatime,strictatime,lazytime");
        assertEquals(Linux.MS_NOSUID | Linux.MS_NODEV | Linux.MS_STRICTATIME | Linux.MS_LAZYTIME, times.mountFlags());
        assertEquals(List.of("strictatime", "lazytime"), times.helperCannotSet());
        assertEquals(Linux.MS_NOSUID | Linux.MS_NODEV | Linux.MS_RELATIME, spec("noatime,relatime").mountFlags());
        assertEquals(Linux.MS_NOSUID | Linux.MS_NODEV, spec("noatime,atime,relatime,norelatime").mountFlags());
    }

    @Test
    void kernelOptionsGoIntoTheMountData() {
        MountSpec s = spec("allow_root,default_permissions,max_read=131072,blksize=4096,context=system_u:object_r:tmp_t:s0");
        assertEquals(List.of("allow_other", "default_permissions", "max_read=131072", "blksize=4096",
                "context=system_u:object_r:tmp_t:s0"), s.kernelOptions());
        assertTrue(s.allowRoot() && !s.allowOther() && s.defaultPermissions());
        assertEquals(OptionalInt.of(131072), s.maxRead());
        assertEquals(List.of("fsname=chibifs", "subtype=chibifs", "allow_other", "default_permissions",
                "max_read=131072", "blksize=4096", "context=system_u:object_r:tmp_t:s0", "nonempty"), s.helperOptions());
    }

    @Test
    void namesAndTheDaemonsSettings() {
        MountSpec s = spec("fsname=my\\store,subtype=chibifs,debug,nonempty,auto_unmount,max_readahead=0,"
                + "max_background=64,congestion_threshold=48,umask=022,uid=1000,gid=100");
        assertEquals("my\\store", s.fsname());
        assertEquals("fuse.chibifs", s.type());
        assertEquals(List.of("fsname=my\\\\store", "subtype=chibifs", "nonempty", "auto_unmount"), s.helperOptions(),
                "fusermount reads a backslash as an escape");
        assertTrue(s.debug() && s.nonempty() && s.autoUnmount());
        assertEquals(OptionalInt.of(0), s.maxReadahead());
        assertEquals(OptionalInt.of(64), s.maxBackground());
        assertEquals(OptionalInt.of(48), s.congestionThreshold());
        assertEquals(OptionalInt.of(0022), s.umask());
        assertEquals(OptionalLong.of(1000), s.uid());
        assertEquals(OptionalLong.of(100), s.gid());
    }

    @Test
    void everyOptionTheOldValidatorTookIsStillTakenButBlkdev() {
        // FuseOptions.validate's lists, as they were before the switch
        List<String> flags = List.of("allow_other", "allow_root", "auto_unmount", "nonempty", "default_permissions",
                "big_writes", "kernel_cache", "auto_cache", "noauto_cache", "noforget", "nopath", "intr",
                "hard_remove", "use_ino", "readdir_ino", "direct_io", "async_read", "sync_read", "atomic_o_trunc",
                "no_remote_lock", "no_remote_flock", "no_remote_posix_lock", "splice_write", "no_splice_write",
                "splice_move", "no_splice_move", "splice_read", "no_splice_read", "debug", "ro", "rw", "nosuid", "suid",
                "nodev", "dev", "noexec", "exec", "noatime", "atime", "relatime", "norelatime", "strictatime",
                "nodiratime", "sync", "async", "dirsync", "lazytime");
        List<String> valued = List.of("fsname=x", "subtype=chibifs", "blksize=4096", "max_read=4096", "max_write=4096",
                "max_readahead=4096", "max_background=12", "congestion_threshold=9", "umask=077", "uid=0", "gid=0",
                "entry_timeout=1", "negative_timeout=0", "attr_timeout=0.5", "ac_attr_timeout=1", "remember=-1",
                "intr_signal=10", "modules=subdir", "context=x", "fscontext=x", "defcontext=x", "rootcontext=x");
        for (String o : flags) {
            spec(o);
        }
        for (String o : valued) {
            spec(o);
        }
        assertEquals(List.of("ac_attr_timeout=1", "remember=-1", "intr_signal=10", "modules=subdir"),
                spec("ac_attr_timeout=1,remember=-1,intr_signal=10,modules=subdir").ignored());
    }

    @Test
    void badOptionsAreRefusedNamingTheValueAndTheRule() {
        String unknown = "': options are NAME or NAME=VALUE known to FUSE and mount(8) (e.g. allow_other, ro,"
                + " attr_timeout=1, max_read=131072)";
        refused("no_such_option", "unknown or malformed FUSE option 'no_such_option" + unknown);
        refused("allow_other=1", "unknown or malformed FUSE option 'allow_other=1" + unknown);
        refused("fsname", "unknown or malformed FUSE option 'fsname" + unknown);
        refused("attr_timeout=", "unknown or malformed FUSE option 'attr_timeout=" + unknown);
        refused("ro,,rw", "unknown or malformed FUSE option '" + unknown);
        refused("fsname=a b", "unknown or malformed FUSE option 'fsname=a b" + unknown);

        String seconds = " is a number of seconds >= 0 (e.g. 1 or 0.5)";
        refused("attr_timeout=abc", "invalid FUSE option 'attr_timeout=abc': attr_timeout" + seconds);
        refused("entry_timeout=-1", "invalid FUSE option 'entry_timeout=-1': entry_timeout" + seconds);
        refused("negative_timeout=Infinity", "invalid FUSE option 'negative_timeout=Infinity': negative_timeout" + seconds);
        refused("attr_timeout=1e3", "invalid FUSE option 'attr_timeout=1e3': attr_timeout" + seconds);
        assertEquals(0.25, spec("attr_timeout=.25").attrTimeout());

        refused("max_write=0", "invalid FUSE option 'max_write=0': max_write is a whole number from 4096 to 16777216");
        refused("max_read=4k", "invalid FUSE option 'max_read=4k': max_read is a whole number from 1 to 2147483647");
        refused("max_background=70000",
                "invalid FUSE option 'max_background=70000': max_background is a whole number from 0 to 65535");
        refused("uid=-1", "invalid FUSE option 'uid=-1': uid is a whole number from 0 to 4294967294");
        refused("blksize=1000", "invalid FUSE option 'blksize=1000': blksize is a power of two from 512 (bytes)");
        refused("umask=999", "invalid FUSE option 'umask=999': umask is octal mode bits from 0 to 777 (e.g. 022)");
        // another subtype mounted, then mount waited 60 s for a fuse.chibifs that never came
        refused("subtype=foo", "invalid FUSE option 'subtype=foo': the subtype is chibifs (the mount's type is"
                + " fuse.chibifs, by which status, umount and stale-mount recovery know it)");
        refused("blkdev", "invalid FUSE option 'blkdev': it mounts a block device (fuseblk), and chibifs serves a"
                + " directory tree, not a device");
        refused("intr_signal=0", "invalid FUSE option 'intr_signal=0': intr_signal is a whole number from 1 to 64");
    }
}
