package dev.chibifs.sys;

import jnr.ffi.Platform;

/**
 * Linux's numbers, defined once. The values are those of x86-64 and arm64 (asm-generic); where
 * the two differ (four open flags) the running CPU decides.
 */
public final class Linux {

    private Linux() {
    }

    private static final boolean ARM64 = Platform.getNativePlatform().getCPU() == Platform.CPU.AARCH64;

    // errno (asm-generic/errno-base.h, asm-generic/errno.h)
    public static final int EPERM = 1;
    public static final int ENOENT = 2;
    public static final int ESRCH = 3;
    public static final int EINTR = 4;
    public static final int EIO = 5;
    public static final int ENXIO = 6;
    public static final int E2BIG = 7;
    public static final int EBADF = 9;
    public static final int ECHILD = 10;
    public static final int EAGAIN = 11;
    public static final int EWOULDBLOCK = EAGAIN;
    public static final int ENOMEM = 12;
    public static final int EACCES = 13;
    public static final int EFAULT = 14;
    public static final int ENOTBLK = 15;
    public static final int EBUSY = 16;
    public static final int EEXIST = 17;
    public static final int EXDEV = 18;
    public static final int ENODEV = 19;
    public static final int ENOTDIR = 20;
    public static final int EISDIR = 21;
    public static final int EINVAL = 22;
    public static final int ENFILE = 23;
    public static final int EMFILE = 24;
    public static final int ENOTTY = 25;
    public static final int ETXTBSY = 26;
    public static final int EFBIG = 27;
    public static final int ENOSPC = 28;
    public static final int ESPIPE = 29;
    public static final int EROFS = 30;
    public static final int EMLINK = 31;
    public static final int EPIPE = 32;
    public static final int ERANGE = 34;
    public static final int EDEADLK = 35;
    public static final int ENAMETOOLONG = 36;
    public static final int ENOLCK = 37;
    public static final int ENOSYS = 38;
    public static final int ENOTEMPTY = 39;
    public static final int ELOOP = 40;
    public static final int ENODATA = 61;
    /** What getxattr says of a missing attribute: Linux has no ENOATTR of its own. */
    public static final int ENOATTR = ENODATA;
    public static final int EPROTO = 71;
    public static final int EOVERFLOW = 75;
    public static final int EILSEQ = 84;
    public static final int ENOTSOCK = 88;
    public static final int EOPNOTSUPP = 95;
    /** The same number as EOPNOTSUPP on Linux. */
    public static final int ENOTSUP = EOPNOTSUPP;
    public static final int ECONNABORTED = 103;
    public static final int ENOTCONN = 107;
    public static final int ETIMEDOUT = 110;
    public static final int ESTALE = 116;
    public static final int EUCLEAN = 117;
    public static final int EDQUOT = 122;
    public static final int ECANCELED = 125;

    /** The longest name, in bytes, a directory entry may have (what statfs reports as namelen). */
    public static final int NAME_MAX = 255;
    /** The longest path, or link target, the kernel takes, its NUL included. */
    public static final int PATH_MAX = 4096;

    // open(2) flags (asm-generic/fcntl.h; arm64 moves four of them)
    public static final int O_RDONLY = 0;
    public static final int O_WRONLY = 01;
    public static final int O_RDWR = 02;
    public static final int O_ACCMODE = 03;
    public static final int O_CREAT = 0100;
    public static final int O_EXCL = 0200;
    public static final int O_NOCTTY = 0400;
    public static final int O_TRUNC = 01000;
    public static final int O_APPEND = 02000;
    public static final int O_NONBLOCK = 04000;
    public static final int O_DSYNC = 010000;
    public static final int O_ASYNC = 020000;
    public static final int O_DIRECT = ARM64 ? 0200000 : 040000;
    public static final int O_LARGEFILE = ARM64 ? 0400000 : 0100000;
    public static final int O_DIRECTORY = ARM64 ? 040000 : 0200000;
    public static final int O_NOFOLLOW = ARM64 ? 0100000 : 0400000;
    public static final int O_NOATIME = 01000000;
    public static final int O_CLOEXEC = 02000000;
    public static final int O_SYNC = 04000000 | O_DSYNC;
    public static final int O_PATH = 010000000;
    public static final int O_TMPFILE = 020000000 | O_DIRECTORY;

    // file kinds and mode bits (st_mode)
    public static final int S_IFMT = 0170000;
    public static final int S_IFSOCK = 0140000;
    public static final int S_IFLNK = 0120000;
    public static final int S_IFREG = 0100000;
    public static final int S_IFBLK = 0060000;
    public static final int S_IFDIR = 0040000;
    public static final int S_IFCHR = 0020000;
    public static final int S_IFIFO = 0010000;
    public static final int S_ISUID = 04000;
    public static final int S_ISGID = 02000;
    public static final int S_ISVTX = 01000;

    // d_type of a directory entry (getdents64, FUSE dirents)
    public static final int DT_UNKNOWN = 0;
    public static final int DT_FIFO = 1;
    public static final int DT_CHR = 2;
    public static final int DT_DIR = 4;
    public static final int DT_BLK = 6;
    public static final int DT_REG = 8;
    public static final int DT_LNK = 10;
    public static final int DT_SOCK = 12;

    // *at(2) flags
    public static final int AT_FDCWD = -100;
    public static final int AT_SYMLINK_NOFOLLOW = 0x100;
    public static final int AT_SYMLINK_FOLLOW = 0x400;
    public static final int AT_REMOVEDIR = 0x200;
    public static final int AT_EMPTY_PATH = 0x1000;
    /** statx(2): the attributes the kernel holds, asking the file system nothing (a FUSE daemon before INIT). */
    public static final int AT_STATX_DONT_SYNC = 0x4000;

    // renameat2(2)
    public static final int RENAME_NOREPLACE = 1;
    public static final int RENAME_EXCHANGE = 2;
    public static final int RENAME_WHITEOUT = 4;

    // mount(2) flags (linux/mount.h)
    public static final long MS_RDONLY = 1;
    public static final long MS_NOSUID = 2;
    public static final long MS_NODEV = 4;
    public static final long MS_NOEXEC = 8;
    public static final long MS_SYNCHRONOUS = 16;
    public static final long MS_REMOUNT = 32;
    public static final long MS_MANDLOCK = 64;
    public static final long MS_DIRSYNC = 128;
    public static final long MS_NOSYMFOLLOW = 256;
    public static final long MS_NOATIME = 1024;
    public static final long MS_NODIRATIME = 2048;
    public static final long MS_BIND = 4096;
    public static final long MS_RELATIME = 1 << 21;
    public static final long MS_STRICTATIME = 1 << 24;
    public static final long MS_LAZYTIME = 1 << 25;

    // umount2(2) flags
    public static final int MNT_FORCE = 1;
    public static final int MNT_DETACH = 2;
    public static final int MNT_EXPIRE = 4;
    public static final int UMOUNT_NOFOLLOW = 8;

    // utimensat(2): tv_nsec values that mean "now" and "leave alone"
    public static final long UTIME_NOW = (1L << 30) - 1;
    public static final long UTIME_OMIT = (1L << 30) - 2;

    // getrlimit(2): the most descriptors a process may hold open
    public static final int RLIMIT_NOFILE = 7;

    // fcntl(2) commands (64-bit: F_GETLK is already the 64-bit lock)
    public static final int F_DUPFD = 0;
    public static final int F_GETFD = 1;
    public static final int F_SETFD = 2;
    public static final int F_GETFL = 3;
    public static final int F_SETFL = 4;
    public static final int F_GETLK = 5;
    public static final int F_SETLK = 6;
    public static final int F_SETLKW = 7;
    public static final int F_OFD_GETLK = 36;
    public static final int F_OFD_SETLK = 37;
    public static final int F_OFD_SETLKW = 38;
    public static final int F_DUPFD_CLOEXEC = 1030;
    public static final int FD_CLOEXEC = 1;
    public static final int F_RDLCK = 0;
    public static final int F_WRLCK = 1;
    public static final int F_UNLCK = 2;

    // flock(2)
    public static final int LOCK_SH = 1;
    public static final int LOCK_EX = 2;
    public static final int LOCK_NB = 4;
    public static final int LOCK_UN = 8;

    // lseek(2)
    public static final int SEEK_SET = 0;
    public static final int SEEK_CUR = 1;
    public static final int SEEK_END = 2;
    public static final int SEEK_DATA = 3;
    public static final int SEEK_HOLE = 4;

    // fallocate(2)
    /** Reserve or zero without changing the size. */
    public static final int FALLOC_FL_KEEP_SIZE = 0x01;
    /** Only with {@link #FALLOC_FL_KEEP_SIZE}: deallocate the range, which then reads as zeros. */
    public static final int FALLOC_FL_PUNCH_HOLE = 0x02;
    /** The range reads as zeros afterwards, and the file grows to its end unless KEEP_SIZE. */
    public static final int FALLOC_FL_ZERO_RANGE = 0x10;

    // setxattr(2)
    public static final int XATTR_CREATE = 1;
    public static final int XATTR_REPLACE = 2;

    // access(2)
    public static final int F_OK = 0;
    public static final int X_OK = 1;
    public static final int W_OK = 2;
    public static final int R_OK = 4;

    // sockets, for descriptors passed with SCM_RIGHTS
    public static final int AF_UNIX = 1;
    public static final int SOCK_STREAM = 1;
    public static final int SOCK_CLOEXEC = O_CLOEXEC;
    public static final int SOL_SOCKET = 1;
    public static final int SCM_RIGHTS = 1;
    public static final int MSG_CMSG_CLOEXEC = 0x40000000;

    // poll(2)
    public static final short POLLIN = 0x1;
    public static final short POLLPRI = 0x2;
    public static final short POLLERR = 0x8;
    public static final short POLLHUP = 0x10;

    // signals
    public static final int SIGKILL = 9;
    public static final int SIGTERM = 15;
    public static final int SIGCHLD = 17;
    public static final int SIGCONT = 18;
    public static final int SIGSTOP = 19;
    public static final int SIGTSTP = 20;
    public static final int SIGTTIN = 21;
    public static final int SIGTTOU = 22;
    public static final int SIGURG = 23;
    public static final int SIGWINCH = 28;

    // ---- below: what the store's system calls add (dev.chibifs.sys.Syscalls) ----

    // openat2(2): its system call number (the same on x86-64 and arm64) and struct open_how.resolve
    public static final long SYS_OPENAT2 = 437;
    /** pidfd_open(2), Linux 5.3: a descriptor that polls readable once the process has exited. */
    public static final long SYS_PIDFD_OPEN = 434;
    /** listxattrat(2), Linux 6.13: listxattr of a name relative to a directory descriptor (the same on x86-64 and arm64). */
    public static final long SYS_LISTXATTRAT = 465;
    public static final long RESOLVE_NO_XDEV = 0x01;
    public static final long RESOLVE_NO_MAGICLINKS = 0x02;
    public static final long RESOLVE_NO_SYMLINKS = 0x04;
    public static final long RESOLVE_BENEATH = 0x08;
    public static final long RESOLVE_IN_ROOT = 0x10;

    /** The capability mount(2) and FUSE_DEV_IOC_BACKING_OPEN need (linux/capability.h): its bit in CapEff. */
    public static final int CAP_SYS_ADMIN = 21;

    /** statfs(2)'s f_flags bit of a read-only mount. */
    public static final long ST_RDONLY = 1;

    // statfs(2)'s f_type (linux/magic.h; Lustre's and ZFS's from their own sources)
    /** A FUSE file system, chibifs's included. */
    public static final long FUSE_SUPER_MAGIC = 0x65735546L;
    public static final long NFS_SUPER_MAGIC = 0x6969L;
    public static final long CIFS_SUPER_MAGIC = 0xFF534D42L;
    public static final long SMB2_SUPER_MAGIC = 0xFE534D42L;
    public static final long SMB_SUPER_MAGIC = 0x517BL;
    public static final long V9FS_MAGIC = 0x01021997L;
    public static final long CEPH_SUPER_MAGIC = 0x00C36400L;
    public static final long AFS_SUPER_MAGIC = 0x5346414FL;
    public static final long LUSTRE_SUPER_MAGIC = 0x0BD00BD0L;
    /** ext2, ext3 and ext4 alike. */
    public static final long EXT4_SUPER_MAGIC = 0xEF53L;
    public static final long XFS_SUPER_MAGIC = 0x58465342L;
    public static final long BTRFS_SUPER_MAGIC = 0x9123683EL;
    public static final long TMPFS_MAGIC = 0x01021994L;
    public static final long F2FS_SUPER_MAGIC = 0xF2F52010L;
    public static final long ZFS_SUPER_MAGIC = 0x2FC12FC1L;
    public static final long BCACHEFS_SUPER_MAGIC = 0xCA451A4EL;

    // statx(2) mask
    public static final int STATX_TYPE = 0x1;
    public static final int STATX_MODE = 0x2;
    public static final int STATX_INO = 0x100;
    public static final int STATX_BASIC_STATS = 0x7ff;
    public static final int STATX_BTIME = 0x800;
    /** statx's stx_mnt_id: the mount a file was reached through (Linux 5.8). */
    public static final int STATX_MNT_ID = 0x1000;

    // inotify(7): event bits, watch flags and inotify_init1 flags
    public static final int IN_ACCESS = 0x1;
    public static final int IN_MODIFY = 0x2;
    public static final int IN_ATTRIB = 0x4;
    public static final int IN_CLOSE_WRITE = 0x8;
    public static final int IN_CLOSE_NOWRITE = 0x10;
    public static final int IN_OPEN = 0x20;
    public static final int IN_MOVED_FROM = 0x40;
    public static final int IN_MOVED_TO = 0x80;
    public static final int IN_CREATE = 0x100;
    public static final int IN_DELETE = 0x200;
    public static final int IN_DELETE_SELF = 0x400;
    public static final int IN_MOVE_SELF = 0x800;
    public static final int IN_UNMOUNT = 0x2000;
    public static final int IN_Q_OVERFLOW = 0x4000;
    public static final int IN_IGNORED = 0x8000;
    public static final int IN_ONLYDIR = 0x1000000;
    public static final int IN_DONT_FOLLOW = 0x2000000;
    public static final int IN_EXCL_UNLINK = 0x4000000;
    public static final int IN_MASK_ADD = 0x20000000;
    public static final int IN_ISDIR = 0x40000000;
    public static final int IN_NONBLOCK = O_NONBLOCK;
    public static final int IN_CLOEXEC = O_CLOEXEC;

    // ---- io_uring(7), for FUSE over io_uring (dev.chibifs.sys.IoUring) ----

    /** io_uring_setup(2) and io_uring_enter(2): the same numbers on every architecture since Linux 5.1. */
    public static final long SYS_IO_URING_SETUP = 425;
    public static final long SYS_IO_URING_ENTER = 426;
    /** io_uring_params.flags: 128-byte SQEs (a URING_CMD's 80 bytes of command), and a CQ size of our own. */
    public static final int IORING_SETUP_CQSIZE = 1 << 3;
    public static final int IORING_SETUP_SQE128 = 1 << 10;
    public static final int IORING_ENTER_GETEVENTS = 1;
    public static final int IORING_FEAT_SINGLE_MMAP = 1;
    public static final int IORING_OP_NOP = 0;
    public static final int IORING_OP_URING_CMD = 46;
    public static final long IORING_OFF_SQ_RING = 0L;
    public static final long IORING_OFF_CQ_RING = 0x8000000L;
    public static final long IORING_OFF_SQES = 0x10000000L;
    // mmap(2): the system calls' numbers differ between x86-64 and arm64
    public static final long SYS_MMAP = ARM64 ? 222 : 9;
    public static final long SYS_MUNMAP = ARM64 ? 215 : 11;
    public static final int PROT_READ = 1;
    public static final int PROT_WRITE = 2;
    public static final int MAP_SHARED = 1;
    public static final int MAP_POPULATE = 0x8000;
    public static final long MAP_FAILED = -1L;

    /** FUSE's and the kernel's "to the end of the file, however far it grows" (OFFSET_MAX) in a lock range. */
    public static final long OFFSET_MAX = Long.MAX_VALUE;

    /** The symbol of errno {@code errno} ("EACCES"), as the C headers name it (jnr-constants); else "errno N". */
    public static String errnoName(int errno) {
        jnr.constants.platform.Errno e = jnr.constants.platform.Errno.valueOf(errno);
        return e.defined() ? e.name() : "errno " + errno;
    }
}
