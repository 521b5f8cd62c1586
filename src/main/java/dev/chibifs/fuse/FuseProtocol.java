package dev.chibifs.fuse;

/**
 * The FUSE kernel protocol's numbers, as {@code include/uapi/linux/fuse.h} defines them: opcodes,
 * INIT flags, open flags, setattr bits, notification codes and the sizes of the structs the
 * daemon reads and writes. The layouts themselves are in {@link FuseRequest} and {@link FuseReply}.
 */
final class FuseProtocol {

    private FuseProtocol() {
    }

    /** The protocol version we speak: 7.40 added FUSE_PASSTHROUGH and max_stack_depth. */
    static final int MAJOR = 7;
    static final int MINOR = 40;
    /** The oldest kernel protocol we serve (Linux 5.4): fixed struct sizes everywhere below. */
    static final int MIN_MINOR = 31;

    // ---- opcodes ----
    static final int LOOKUP = 1;
    static final int FORGET = 2;
    static final int GETATTR = 3;
    static final int SETATTR = 4;
    static final int READLINK = 5;
    static final int SYMLINK = 6;
    static final int MKNOD = 8;
    static final int MKDIR = 9;
    static final int UNLINK = 10;
    static final int RMDIR = 11;
    static final int RENAME = 12;
    static final int LINK = 13;
    static final int OPEN = 14;
    static final int READ = 15;
    static final int WRITE = 16;
    static final int STATFS = 17;
    static final int RELEASE = 18;
    static final int FSYNC = 20;
    static final int SETXATTR = 21;
    static final int GETXATTR = 22;
    static final int LISTXATTR = 23;
    static final int REMOVEXATTR = 24;
    static final int FLUSH = 25;
    static final int INIT = 26;
    static final int OPENDIR = 27;
    static final int READDIR = 28;
    static final int RELEASEDIR = 29;
    static final int FSYNCDIR = 30;
    static final int GETLK = 31;
    static final int SETLK = 32;
    static final int SETLKW = 33;
    static final int ACCESS = 34;
    static final int CREATE = 35;
    static final int INTERRUPT = 36;
    static final int BMAP = 37;
    static final int DESTROY = 38;
    static final int IOCTL = 39;
    static final int POLL = 40;
    static final int BATCH_FORGET = 42;
    static final int FALLOCATE = 43;
    static final int READDIRPLUS = 44;
    static final int RENAME2 = 45;
    static final int LSEEK = 46;
    static final int COPY_FILE_RANGE = 47;
    static final int SYNCFS = 50;
    static final int TMPFILE = 51;
    static final int STATX = 52;
    /** COPY_FILE_RANGE with a 64-bit count in its reply (7.45); the kernel falls back to COPY_FILE_RANGE on ENOSYS. */
    static final int COPY_FILE_RANGE_64 = 53;
    /** One past the highest opcode we count in {@link RequestStats}. */
    static final int OPCODE_LIMIT = 64;

    private static final String[] NAMES = new String[OPCODE_LIMIT];

    static {
        String[] names = {
            null, "LOOKUP", "FORGET", "GETATTR", "SETATTR", "READLINK", "SYMLINK", null, "MKNOD", "MKDIR",
            "UNLINK", "RMDIR", "RENAME", "LINK", "OPEN", "READ", "WRITE", "STATFS", "RELEASE", null,
            "FSYNC", "SETXATTR", "GETXATTR", "LISTXATTR", "REMOVEXATTR", "FLUSH", "INIT", "OPENDIR", "READDIR",
            "RELEASEDIR", "FSYNCDIR", "GETLK", "SETLK", "SETLKW", "ACCESS", "CREATE", "INTERRUPT", "BMAP",
            "DESTROY", "IOCTL", "POLL", "NOTIFY_REPLY", "BATCH_FORGET", "FALLOCATE", "READDIRPLUS", "RENAME2",
            "LSEEK", "COPY_FILE_RANGE", "SETUPMAPPING", "REMOVEMAPPING", "SYNCFS", "TMPFILE", "STATX",
            "COPY_FILE_RANGE_64"};
        System.arraycopy(names, 0, NAMES, 0, names.length);
    }

    /** Whether fuse.h names {@code opcode} (some numbers between were never used). */
    static boolean named(int opcode) {
        return opcode >= 0 && opcode < OPCODE_LIMIT && NAMES[opcode] != null;
    }

    /** The opcode's name in fuse.h without its FUSE_ prefix, or its number. */
    static String opcodeName(int opcode) {
        String name = opcode >= 0 && opcode < OPCODE_LIMIT ? NAMES[opcode] : null;
        return name != null ? name : "OP" + opcode;
    }

    // ---- INIT flags (fuse_init_in/out.flags; bit 32 and up in flags2) ----
    static final long ASYNC_READ = 1L;
    static final long POSIX_LOCKS = 1L << 1;
    static final long ATOMIC_O_TRUNC = 1L << 3;
    static final long BIG_WRITES = 1L << 5;
    static final long DONT_MASK = 1L << 6;
    static final long FLOCK_LOCKS = 1L << 10;
    static final long AUTO_INVAL_DATA = 1L << 12;
    static final long DO_READDIRPLUS = 1L << 13;
    static final long READDIRPLUS_AUTO = 1L << 14;
    static final long ASYNC_DIO = 1L << 15;
    static final long WRITEBACK_CACHE = 1L << 16;
    static final long PARALLEL_DIROPS = 1L << 18;
    static final long HANDLE_KILLPRIV = 1L << 19;
    static final long MAX_PAGES = 1L << 22;
    static final long CACHE_SYMLINKS = 1L << 23;
    /** Offered by the kernel (7.29, Linux 5.1): an OPENDIR answered ENOSYS means no OPENDIR or RELEASEDIR again. */
    static final long NO_OPENDIR_SUPPORT = 1L << 24;
    static final long EXPLICIT_INVAL_DATA = 1L << 25;
    static final long HANDLE_KILLPRIV_V2 = 1L << 28;
    static final long INIT_EXT = 1L << 30;
    static final long HAS_EXPIRE_ONLY = 1L << 35;
    /** A MAP_SHARED mmap of a file opened with FOPEN_DIRECT_IO works (7.39, Linux 6.6) instead of failing ENODEV. */
    static final long DIRECT_IO_ALLOW_MMAP = 1L << 36;
    static final long PASSTHROUGH = 1L << 37;
    /** Requests and replies through io_uring (7.42, Linux 6.14; offered only while the fuse module's enable_uring is on). */
    static final long OVER_IO_URING = 1L << 41;

    // ---- open reply flags (fuse_open_out.open_flags) ----
    static final int FOPEN_DIRECT_IO = 1;
    static final int FOPEN_KEEP_CACHE = 1 << 1;
    static final int FOPEN_CACHE_DIR = 1 << 3;
    static final int FOPEN_NOFLUSH = 1 << 5;
    static final int FOPEN_PASSTHROUGH = 1 << 7;

    // ---- fuse_setattr_in.valid ----
    static final int FATTR_MODE = 1;
    static final int FATTR_UID = 1 << 1;
    static final int FATTR_GID = 1 << 2;
    static final int FATTR_SIZE = 1 << 3;
    static final int FATTR_ATIME = 1 << 4;
    static final int FATTR_MTIME = 1 << 5;
    static final int FATTR_FH = 1 << 6;
    static final int FATTR_ATIME_NOW = 1 << 7;
    static final int FATTR_MTIME_NOW = 1 << 8;

    /** fuse_getattr_in.getattr_flags: fh names an open file. */
    static final int GETATTR_FH = 1;
    /** fuse_lk_in.lk_flags: the lock is flock(2)'s, not fcntl's. */
    static final int LK_FLOCK = 1;
    /** fuse_write_in.write_flags: a write of the page cache (an mmap's pages written back), through any writable handle. */
    static final int WRITE_CACHE = 1;
    /** fuse_write_in.write_flags: lock_owner is set. */
    static final int WRITE_LOCKOWNER = 1 << 1;
    /** fuse_fsync_in.fsync_flags: data only. */
    static final int FSYNC_FDATASYNC = 1;
    /** fuse_notify_inval_entry_out.flags: mark the name stale without unhashing it (Linux 6.2). */
    static final int EXPIRE_ONLY = 1;
    // RENAME2's flags are renameat2's own: Linux.RENAME_NOREPLACE, Linux.RENAME_EXCHANGE

    // ---- notifications: fuse_out_header.error of an unsolicited message ----
    static final int NOTIFY_INVAL_INODE = 2;
    static final int NOTIFY_INVAL_ENTRY = 3;
    static final int NOTIFY_STORE = 4;

    // ---- fuse_in_header: len, opcode, unique, nodeid, uid, gid, pid, total_extlen, padding ----
    static final int IN_OPCODE = 4;
    static final int IN_UNIQUE = 8;
    static final int IN_NODEID = 16;
    static final int IN_UID = 24;
    static final int IN_GID = 28;
    static final int IN_PID = 32;

    // ---- struct sizes ----
    static final int IN_HEADER = 40;
    static final int OUT_HEADER = 16;
    static final int ATTR = 88;
    static final int ENTRY_OUT = 40 + ATTR;
    static final int ATTR_OUT = 16 + ATTR;
    static final int DIRENT = 24;
    static final int DIRENTPLUS = ENTRY_OUT + DIRENT;
    /** The kernel's FUSE_NAME_MAX: the longest name a FUSE message carries (the daemon refuses past 255). */
    static final int NAME_MAX = 1024;
    /**
     * Room for any notice the daemon sends that is not a NOTIFY_STORE's data: the largest, a
     * fuse_notify_delete_out (24 bytes) with a name and its NUL.
     */
    static final int NOTICE_CAPACITY = OUT_HEADER + 24 + NAME_MAX + 1;

    /** The node id of the mount's root, fixed by the protocol. */
    static final long ROOT_ID = 1;
    /** What the kernel's read of /dev/fuse needs beyond max_write: the headers of a WRITE. */
    static final int REQUEST_OVERHEAD = 4096;

    // ---- FUSE over io_uring (7.42): struct fuse_uring_req_header, struct fuse_uring_cmd_req ----
    /** The fuse_in_header (request) or fuse_out_header (reply) of a ring entry. */
    static final int URING_IN_OUT = 0;
    /** The opcode's own struct (the request's first argument), up to 128 bytes. */
    static final int URING_OP_IN = 128;
    static final int URING_OP_IN_SIZE = 128;
    /** struct fuse_uring_ent_in_out: flags, commit_id, payload_sz. */
    static final int URING_COMMIT_ID = 264;
    static final int URING_PAYLOAD_SIZE = 272;
    /** sizeof(struct fuse_uring_req_header): the least header buffer the kernel takes. */
    static final int URING_HEADER = 288;
    /** enum fuse_uring_cmd. */
    static final int URING_CMD_REGISTER = 1;
    static final int URING_CMD_COMMIT_AND_FETCH = 2;
    /** struct fuse_uring_cmd_req in the entry's command bytes: flags, commit_id, qid. */
    static final int URING_CMD_COMMIT_ID = 8;
    static final int URING_CMD_QID = 16;
}
