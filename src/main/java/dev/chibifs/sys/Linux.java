package dev.chibifs.sys;

/** Linux's numbers, defined once: errno values, open flags, file kinds. x86_64 and aarch64 agree on all of these. */
public final class Linux {

    private Linux() {
    }

    // ---- errno ----
    public static final int EPERM = 1;
    public static final int ENOENT = 2;
    public static final int EINTR = 4;
    public static final int EIO = 5;
    public static final int ENXIO = 6;
    public static final int EBADF = 9;
    public static final int EAGAIN = 11;
    public static final int ENOMEM = 12;
    public static final int EACCES = 13;
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
    public static final int EFBIG = 27;
    public static final int ENOSPC = 28;
    public static final int EROFS = 30;
    public static final int EMLINK = 31;
    public static final int ERANGE = 34;
    public static final int EDEADLK = 35;
    public static final int ENAMETOOLONG = 36;
    public static final int ENOSYS = 38;
    public static final int ENOTEMPTY = 39;
    public static final int ELOOP = 40;
    public static final int ENODATA = 61;
    public static final int EILSEQ = 84;
    public static final int EOPNOTSUPP = 95;
    public static final int ENOTCONN = 107;
    public static final int ETIMEDOUT = 110;
    public static final int ESTALE = 116;
    public static final int EDQUOT = 122;

    // ---- open(2) flags ----
    public static final int O_ACCMODE = 03;
    public static final int O_RDONLY = 0;
    public static final int O_WRONLY = 01;
    public static final int O_RDWR = 02;
    public static final int O_CREAT = 0100;
    public static final int O_EXCL = 0200;
    public static final int O_TRUNC = 01000;
    public static final int O_APPEND = 02000;

    // ---- file kinds (st_mode & S_IFMT) ----
    public static final int S_IFMT = 0170000;
    public static final int S_IFSOCK = 0140000;
    public static final int S_IFLNK = 0120000;
    public static final int S_IFREG = 0100000;
    public static final int S_IFBLK = 0060000;
    public static final int S_IFDIR = 0040000;
    public static final int S_IFCHR = 0020000;
    public static final int S_IFIFO = 0010000;

    /** d_type values of a directory entry. */
    public static final int DT_UNKNOWN = 0;
    public static final int DT_FIFO = 1;
    public static final int DT_DIR = 4;
    public static final int DT_REG = 8;
    public static final int DT_LNK = 10;
    public static final int DT_SOCK = 12;

    // ---- access(2) ----
    public static final int X_OK = 1;
    public static final int W_OK = 2;

    // ---- fcntl locks ----
    public static final int F_RDLCK = 0;
    public static final int F_WRLCK = 1;
    public static final int F_UNLCK = 2;

    /** utimensat's special nanosecond values. */
    public static final long UTIME_NOW = (1L << 30) - 1;
    public static final long UTIME_OMIT = (1L << 30) - 2;
}
