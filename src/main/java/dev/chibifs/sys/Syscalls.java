package dev.chibifs.sys;

import com.kenai.jffi.MemoryIO;
import jnr.ffi.Memory;
import jnr.ffi.Pointer;
import jnr.ffi.Runtime;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import static dev.chibifs.sys.Linux.*;

/**
 * The system calls the store makes, relative to directory descriptors: they keep the full store
 * path out of every call (no PATH_MAX for deep trees) and let each call refuse symbolic links
 * without a check-then-act race. Names pass as UTF-8 bytes. Every failure is thrown as
 * {@link Errors#of}'s exception for its errno, naming the file the caller gives (a VFS path, never
 * a host path), so whoever needs the number reads it ({@link HasErrno}); the {@code try*} forms
 * return {@code -errno} instead, for callers to whom a failure is an answer.
 */
public final class Syscalls {

    private static final byte[] EMPTY = {0};
    private static final String PROC_SELF_FD = "/proc/self/fd/";
    /** Direct buffers' addresses, so pread and pwrite move bytes straight between the file and the buffer. */
    private static final MemoryIO MEMORY = MemoryIO.getInstance();
    /** Bounce buffers for heap ByteBuffers (the vfs commands and tests; FUSE hands us direct ones). */
    private static final ThreadLocal<ByteBuffer> BOUNCE = ThreadLocal.withInitial(() -> ByteBuffer.allocateDirect(64 * 1024));

    private static final Native.Functions LIBC = Native.C;
    private static final Runtime RUNTIME = Native.RUNTIME;
    private static final ThreadLocal<Statx> STATX = ThreadLocal.withInitial(() -> new Statx(Memory.allocateDirect(RUNTIME, 256)));
    private static final ThreadLocal<Statx> STATX_ASIDE = ThreadLocal.withInitial(() -> new Statx(Memory.allocateDirect(RUNTIME, 256)));
    private static final ThreadLocal<Pointer> SMALL_BUF = ThreadLocal.withInitial(() -> Memory.allocateDirect(RUNTIME, 32));
    private static final ThreadLocal<Pointer> STATFS_BUF = ThreadLocal.withInitial(() -> Memory.allocateDirect(RUNTIME, 128));
    private static final ThreadLocal<Pointer> LINK_BUF = ThreadLocal.withInitial(() -> Memory.allocateDirect(RUNTIME, PATH_MAX));
    private static volatile boolean openat2Missing;

    private Syscalls() {
    }

    /** {@code name} in UTF-8 with a NUL after it; an ASCII name (nearly all) is one array, made once. */
    public static byte[] bytes(String name) {
        int n = name.length();
        byte[] z = new byte[n + 1];
        for (int i = 0; i < n; i++) {
            char c = name.charAt(i);
            if (c >= 0x80) {
                byte[] b = name.getBytes(StandardCharsets.UTF_8);
                return Arrays.copyOf(b, b.length + 1);
            }
            z[i] = (byte) c;
        }
        return z;
    }

    /** errno of this thread's last failed call. */
    public static int errno() {
        return Native.errno();
    }

    /** The exception for this thread's errno, naming {@code file}. */
    private static IOException failure(String file) {
        return Errors.of(errno(), file);
    }

    /** open(2) of a path relative to {@code dirfd} (O_CLOEXEC added); returns the descriptor or throws naming {@code file}. */
    public static int openat(int dirfd, String name, int flags, int mode, String file) throws IOException {
        int fd = LIBC.openat(dirfd, bytes(name), flags | O_CLOEXEC, mode);
        if (fd < 0) {
            throw failure(file);
        }
        return fd;
    }

    /** Like {@link #openat} but returns {@code -errno} instead of throwing. */
    public static int tryOpenat(int dirfd, String name, int flags, int mode) {
        int fd = LIBC.openat(dirfd, bytes(name), flags | O_CLOEXEC, mode);
        return fd < 0 ? -errno() : fd;
    }

    /**
     * How many times {@link #openDirectoryBeneath} runs openat2 while a rename races it (EXDEV,
     * EAGAIN) before it gives up with ESTALE.
     */
    static final int BENEATH_ATTEMPTS = 5;

    /**
     * Opens the directory {@code relative} below {@code rootFd} as an O_PATH descriptor, refusing
     * every symbolic link on the way (ELOOP). ESTALE where renames kept moving it out from under
     * {@code rootFd} while it was resolved.
     */
    public static int openDirectoryBeneath(int rootFd, String relative, String file) throws IOException {
        int flags = O_PATH | O_DIRECTORY | O_CLOEXEC;
        if (!openat2Missing) {
            Pointer how = SMALL_BUF.get();
            how.putLong(0, flags);
            how.putLong(8, 0);
            how.putLong(16, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
            int err = 0;
            for (int attempt = 0; attempt < BENEATH_ATTEMPTS; attempt++) {
                long fd = LIBC.syscall(SYS_OPENAT2, rootFd, bytes(relative), how, 24);
                if (fd >= 0) {
                    return (int) fd;
                }
                err = errno();
                // relative has no ".." and no link is followed, so nothing here escapes: EXDEV is a
                // rename that moved the directory out from under rootFd between the kernel's lookup
                // and its final check, EAGAIN one it saw during the walk; openat2(2) says to retry
                if (err != EXDEV && err != EAGAIN) {
                    break;
                }
            }
            if (err == EXDEV || err == EAGAIN) {
                // not EXDEV to a stat or an open, which no disk answers (and which makes mv copy):
                // ESTALE makes the kernel walk the path again
                throw ErrnoException.forErrno(ESTALE, file);
            }
            if (err != ENOSYS) {
                throw Errors.of(err, file);
            }
            // kernels before 5.6: walk one name at a time, each opened without following
            openat2Missing = true;
        }
        return walk(rootFd, relative, file);
    }

    private static int walk(int rootFd, String relative, String file) throws IOException {
        int dir = rootFd;
        for (String name : relative.split("/")) {
            int fd = LIBC.openat(dir, bytes(name), O_PATH | O_NOFOLLOW | O_CLOEXEC, 0);
            int err = fd < 0 ? errno() : 0;
            if (dir != rootFd) {
                close(dir);
            }
            if (fd < 0) {
                throw Errors.of(err, file);
            }
            int type = type(fd);
            if (type != S_IFDIR) {
                close(fd);
                throw Errors.of(type == S_IFLNK ? ELOOP : ENOTDIR, file);
            }
            dir = fd;
        }
        return dir;
    }

    /**
     * close(2), its failure ignored: Linux frees the number whatever close answers (EINTR, EIO of
     * a network file system), so there is nothing to retry and nothing left open.
     */
    public static void close(int fd) {
        LIBC.close(fd);
    }

    /** This process's effective uid, which cannot fail. */
    public static int geteuid() {
        return LIBC.geteuid();
    }

    /** This process's effective gid, which cannot fail. */
    public static int getegid() {
        return LIBC.getegid();
    }

    /** fcntl(F_DUPFD_CLOEXEC): a copy of {@code fd} at the lowest free number from {@code lowest} up. */
    public static int dupAtLeast(int fd, int lowest, String file) throws IOException {
        int copy = LIBC.fcntl(fd, F_DUPFD_CLOEXEC, lowest);
        if (copy < 0) {
            throw failure(file);
        }
        return copy;
    }

    /** fcntl(F_SETFL, O_NONBLOCK): reads and writes of {@code fd} never wait (its other status flags cleared). */
    public static void setNonBlocking(int fd, String file) throws IOException {
        if (LIBC.fcntl(fd, F_SETFL, O_NONBLOCK) < 0) {
            throw failure(file);
        }
    }

    /**
     * pread(2) into {@code dst} at its position, which advances; returns the bytes read, fewer than
     * {@code dst} has room for only at the end of a regular file (0 at the end). A heap buffer is
     * filled through the bounce buffer, a piece at a time.
     */
    public static int pread(int fd, ByteBuffer dst, long offset) throws IOException {
        if (dst.isDirect()) {
            return transfer(false, fd, dst, offset);
        }
        int total = 0;
        while (dst.hasRemaining()) {
            ByteBuffer bounce = bounce(dst.remaining());
            int asked = bounce.remaining();
            int n = transfer(false, fd, bounce, offset + total);
            dst.put(bounce.flip());
            total += n;
            if (n < asked) {
                break;
            }
        }
        return total;
    }

    /** pwrite(2) from {@code src} at its position, which advances; returns the bytes written (maybe fewer). */
    public static int pwrite(int fd, ByteBuffer src, long offset) throws IOException {
        if (!src.isDirect()) {
            ByteBuffer bounce = bounce(src.remaining());
            bounce.put(src.duplicate().limit(src.position() + bounce.remaining())).flip();
            int n = pwrite(fd, bounce, offset);
            src.position(src.position() + n);
            return n;
        }
        return transfer(true, fd, src, offset);
    }

    /** pwrite(2) of all of {@code src}, in as many calls as it takes. */
    public static void pwriteFully(int fd, ByteBuffer src, long offset) throws IOException {
        long at = offset;
        while (src.hasRemaining()) {
            at += pwrite(fd, src, at);
        }
    }

    /** One pread or pwrite between the file and a direct buffer's remaining bytes, retried on EINTR. */
    private static int transfer(boolean write, int fd, ByteBuffer buf, long offset) throws IOException {
        long address = MEMORY.getDirectBufferAddress(buf) + buf.position();
        while (true) {
            long n = write ? LIBC.pwrite(fd, address, buf.remaining(), offset)
                    : LIBC.pread(fd, address, buf.remaining(), offset);
            if (n >= 0) {
                buf.position(buf.position() + (int) n);
                return (int) n;
            }
            int err = errno();
            if (err != EINTR) {
                throw Errors.of(err, null);
            }
        }
    }

    /**
     * Copies {@code length} bytes of {@code in} from its start to the start of {@code out}:
     * copy_file_range(2), which shares extents where the file system can, else pread and pwrite.
     * Returns the bytes copied (fewer when {@code in} is shorter than {@code length}).
     */
    public static long copy(int in, int out, long length) throws IOException {
        long done = 0;
        while (done < length) {
            long n = copyRange(in, done, out, done, length - done);
            if (n == 0) {
                return done;
            }
            if (n < 0) {
                break; // across file systems, or not for these files: copy by hand from here
            }
            done += n;
        }
        ByteBuffer buf = BOUNCE.get();
        while (done < length) {
            buf.clear().limit((int) Math.min(buf.capacity(), length - done));
            int n = transfer(false, in, buf, done);
            if (n == 0) {
                break;
            }
            buf.flip();
            pwriteFully(out, buf, done);
            done += n;
        }
        return done;
    }

    /**
     * One copy_file_range(2) of up to {@code length} bytes of {@code in} at {@code inOffset} to
     * {@code out} at {@code outOffset}, inside the kernel (extents shared where the file system can).
     * Returns the bytes copied, 0 at the end of {@code in}, or -1 where the kernel copies nothing
     * between these two files (across file systems, or not for files of theirs): the caller copies
     * by hand.
     */
    public static long copyRange(int in, long inOffset, int out, long outOffset, long length) throws IOException {
        Pointer offsets = SMALL_BUF.get();
        while (true) {
            offsets.putLong(0, inOffset);
            offsets.putLong(8, outOffset);
            long n = LIBC.copy_file_range(in, offsets, out, offsets.slice(8), length, 0);
            if (n >= 0) {
                return n;
            }
            int err = errno();
            if (err == EXDEV || err == EINVAL || err == ENOSYS || err == EOPNOTSUPP) {
                return -1;
            }
            if (err != EINTR) {
                throw Errors.of(err, null);
            }
        }
    }

    /** Takes directory entries as getdents64 gives them: the name's bytes and d_type (0 when the file system does not say). */
    @FunctionalInterface
    public interface DirentSink {
        /**
         * The name is {@code length} bytes at {@code offset} in {@code name}, valid during the call,
         * with its d_type and d_ino; false stops.
         */
        boolean accept(byte[] name, int offset, int length, int type, long inode) throws IOException;
    }

    private static final int DIRENT_BUFFER = 32 * 1024;
    private static final ThreadLocal<Pointer> DIRENT_BUF = ThreadLocal.withInitial(() -> Memory.allocateDirect(RUNTIME, DIRENT_BUFFER));
    private static final ThreadLocal<byte[]> DIRENT_BYTES = ThreadLocal.withInitial(() -> new byte[DIRENT_BUFFER]);

    /**
     * Hands each entry of the directory {@code name} in {@code dirfd} (".", ".." left out) with its
     * d_type to {@code sink}, so a listing needs no stat per entry, and no object per entry either.
     * getdents64 rather than java.nio: only it says the type, which the kernel hands on to programs
     * that readdir the mount (find -type f). The sink may not list a directory itself on this
     * thread: the buffer is the thread's.
     */
    public static void readDirectory(int dirfd, String name, String file, DirentSink sink) throws IOException {
        int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0, file);
        try {
            readDirectoryFd(fd, file, DIRENT_BUF.get(), DIRENT_BYTES.get(), sink);
        } finally {
            close(fd);
        }
    }

    /**
     * {@link #readDirectory} of the directory open (for reading) as {@code fd}, from its current
     * offset ({@link #lseekStart} goes back to the first entry). The sink may change the directory
     * (unlinkat on {@code fd}) but not list another on this thread.
     */
    public static void readDirectoryFd(int fd, String file, DirentSink sink) throws IOException {
        readDirectoryFd(fd, file, DIRENT_BUF.get(), DIRENT_BYTES.get(), sink);
    }

    /** lseek(2) of a directory descriptor back to its first entry, so getdents64 reads it afresh. */
    /**
     * lseek(2) of a file descriptor: with SEEK_DATA or SEEK_HOLE, where the next data or hole from
     * {@code offset} begins, as the store's file system knows it ("No such device or address",
     * ENXIO, at or past the end).
     */
    public static long lseek(int fd, long offset, int whence) throws IOException {
        long at = LIBC.lseek(fd, offset, whence);
        if (at < 0) {
            throw failure(null);
        }
        return at;
    }

    public static void lseekStart(int fd) throws IOException {
        if (LIBC.lseek(fd, 0, SEEK_SET) < 0) {
            throw failure(null);
        }
    }

    private static void readDirectoryFd(int fd, String file, Pointer buf, byte[] bytes, DirentSink sink) throws IOException {
        while (true) {
            long n = LIBC.getdents64(fd, buf, DIRENT_BUFFER);
            if (n < 0) {
                throw failure(file);
            }
            if (n == 0) {
                return;
            }
            // one copy into the heap, parsed there: jnr's per-field reads cost more than the syscall
            buf.get(0, bytes, 0, (int) n);
            // struct linux_dirent64 { u64 d_ino; s64 d_off; u16 d_reclen; u8 d_type; char d_name[]; }
            for (int at = 0; at < n; ) {
                int reclen = (short) LE_SHORT.get(bytes, at + 16) & 0xffff;
                int type = bytes[at + 18] & 0xff;
                int start = at + 19;
                int end = start;
                while (bytes[end] != 0) {
                    end++;
                }
                boolean dots = bytes[start] == '.' && (end == start + 1 || (end == start + 2 && bytes[start + 1] == '.'));
                if (!dots && !sink.accept(bytes, start, end - start, type, (long) LE_LONG.get(bytes, at))) {
                    return;
                }
                at += reclen;
            }
        }
    }

    /** struct linux_dirent64's fields read from the heap copy, as the kernel lays them out on x86-64 and arm64. */
    private static final java.lang.invoke.VarHandle LE_LONG =
            java.lang.invoke.MethodHandles.byteArrayViewVarHandle(long[].class, java.nio.ByteOrder.LITTLE_ENDIAN);
    private static final java.lang.invoke.VarHandle LE_SHORT =
            java.lang.invoke.MethodHandles.byteArrayViewVarHandle(short[].class, java.nio.ByteOrder.LITTLE_ENDIAN);

    private static ByteBuffer bounce(int size) {
        ByteBuffer b = BOUNCE.get();
        b.clear().limit(Math.min(size, b.capacity()));
        return b;
    }

    /** ftruncate(2): shrinks, or grows with a hole. */
    public static void ftruncate(int fd, long size) throws IOException {
        if (LIBC.ftruncate(fd, size) != 0) {
            throw failure(null);
        }
    }

    /** fallocate(2); the store's file system decides which modes it can do. */
    public static void fallocate(int fd, int mode, long offset, long length) throws IOException {
        if (LIBC.fallocate(fd, mode, offset, length) != 0) {
            throw failure(null);
        }
    }

    /** fsync(2), or fdatasync(2) when the metadata need not reach the disk. */
    public static void fsync(int fd, boolean metadata) throws IOException {
        if ((metadata ? LIBC.fsync(fd) : LIBC.fdatasync(fd)) != 0) {
            throw failure(null);
        }
    }

    /** syncfs(2): everything written to the file system {@code fd} is on, to its disk. */
    public static void syncfs(int fd) throws IOException {
        if (LIBC.syncfs(fd) != 0) {
            throw failure(null);
        }
    }

    /**
     * The thread's statx buffer, read through getters: valid until this thread's next statx. No
     * object per call: a lookup is one statx, and most of them are of names that are there.
     */
    public static final class Statx {
        private final Pointer buf;

        Statx(Pointer buf) {
            this.buf = buf;
        }

        /** Whether the file system told the birth time (stx_mask has STATX_BTIME): many do, not all. */
        public boolean knowsBirth() {
            return (buf.getInt(0) & STATX_BTIME) != 0;
        }

        /** st_mode: the type (S_IFMT bits) and the permission bits. */
        public int mode() {
            return buf.getShort(28) & 0xffff;
        }

        public int type() {
            return mode() & S_IFMT;
        }

        public long links() {
            return buf.getInt(16) & 0xffffffffL;
        }

        public int uid() {
            return buf.getInt(20);
        }

        public int gid() {
            return buf.getInt(24);
        }

        public long inode() {
            return buf.getLong(32);
        }

        public long size() {
            return buf.getLong(40);
        }

        /** stx_blocks: what the file takes on disk, in 512-byte units (a sparse file takes less than its size). */
        public long blocks() {
            return buf.getLong(48);
        }

        /** The device the file lives on (stx_dev_major, stx_dev_minor). */
        public long device() {
            return ((long) buf.getInt(136) << 32) | (buf.getInt(140) & 0xffffffffL);
        }

        public long accessedSeconds() {
            return buf.getLong(64);
        }

        public int accessedNanos() {
            return buf.getInt(72);
        }

        public long createdSeconds() {
            return buf.getLong(80);
        }

        public int createdNanos() {
            return buf.getInt(88);
        }

        public long changedSeconds() {
            return buf.getLong(96);
        }

        public int changedNanos() {
            return buf.getInt(104);
        }

        public long modifiedSeconds() {
            return buf.getLong(112);
        }

        public int modifiedNanos() {
            return buf.getInt(120);
        }
    }

    /** statx(2) of {@code name} in {@code dirfd}, never followed, or of {@code dirfd} itself when name is null; -errno or 0. */
    private static int statxRaw(int dirfd, String name, Statx into) {
        int flags = AT_SYMLINK_NOFOLLOW | (name == null ? AT_EMPTY_PATH : 0);
        // the birth time only when asked: ext4, xfs and btrfs leave it out of a basic statx
        return LIBC.statx(dirfd, name == null ? EMPTY : bytes(name), flags, STATX_BASIC_STATS | STATX_BTIME, into.buf) != 0
                ? -errno() : 0;
    }

    /** statx(2) of {@code name} in {@code dirfd} (never followed), or of {@code dirfd} itself when name is null. */
    public static Statx stat(int dirfd, String name, String file) throws IOException {
        Statx s = STATX.get();
        int err = statxRaw(dirfd, name, s);
        if (err != 0) {
            throw Errors.of(-err, file);
        }
        return s;
    }

    /**
     * statx(2) of an open descriptor into a thread buffer of its own: for what closes a descriptor
     * (a lease let go, a removal), which may run while its caller still reads a {@link #stat}.
     */
    public static Statx statAside(int fd) throws IOException {
        Statx s = STATX_ASIDE.get();
        int err = statxRaw(fd, null, s);
        if (err != 0) {
            throw Errors.of(-err, null);
        }
        return s;
    }

    /**
     * The id of the mount {@code path} reaches (as /proc/self/mountinfo numbers them: the topmost
     * mounted there), asking its file system nothing, so the root of a FUSE mount whose INIT is
     * not answered yet does not hang it; -1 where it cannot be told (before Linux 5.8, or a failure).
     */
    public static long mountIdAt(String path) {
        Statx s = STATX_ASIDE.get();
        if (LIBC.statx(AT_FDCWD, bytes(path), AT_STATX_DONT_SYNC, STATX_MNT_ID, s.buf) != 0
                || (s.buf.getInt(0) & STATX_MNT_ID) == 0) {
            return -1;
        }
        return s.buf.getLong(144);
    }

    /** The file type bits (S_IFMT) of an open descriptor, without following it. */
    public static int type(int fd) throws IOException {
        return stat(fd, null, null).type();
    }

    /** The device an open descriptor's file lives on. */
    public static long device(int fd) throws IOException {
        return stat(fd, null, null).device();
    }

    /**
     * The mount an open descriptor's file was reached through (statx's stx_mnt_id, Linux 5.8), or,
     * where the kernel does not tell it, the device the file lives on. Unlike the device, it tells a
     * bind mount of a directory from the file system it was bound from.
     */
    public static long mountOf(int fd) throws IOException {
        Statx s = STATX.get();
        if (LIBC.statx(fd, EMPTY, AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH, STATX_MNT_ID, s.buf) != 0) {
            throw Errors.of(errno(), null);
        }
        return (s.buf.getInt(0) & STATX_MNT_ID) != 0 ? s.buf.getLong(144) : s.device();
    }

    /** Whether {@code name} in {@code dirfd} (not followed) is the directory with this device and inode. */
    public static boolean isDirectory(int dirfd, String name, long device, long inode) {
        Statx s = STATX.get();
        if (statxRaw(dirfd, name, s) != 0) {
            return false;
        }
        return s.type() == S_IFDIR && s.inode() == inode && s.device() == device;
    }

    /** Whether {@code name} in {@code dirfd} (not followed) is the very directory open as {@code fd}. */
    public static boolean isDirectory(int dirfd, String name, int fd) {
        Statx s = STATX.get();
        if (statxRaw(fd, null, s) != 0) {
            return false;
        }
        return isDirectory(dirfd, name, s.device(), s.inode());
    }

    /**
     * How many descriptors this process may open (the soft RLIMIT_NOFILE), 1024 if unknown. The JDK's
     * OperatingSystemMXBean says the same, but loading JMX for it was 25 ms of a mount's start.
     */
    public static long openFileLimit() {
        long[] limit = new long[2];
        return LIBC.getrlimit(Linux.RLIMIT_NOFILE, limit) == 0 ? limit[0] : 1024;
    }

    /** mkdir(2) of {@code name} in {@code dirfd}. */
    public static void mkdirat(int dirfd, String name, int mode, String file) throws IOException {
        if (LIBC.mkdirat(dirfd, bytes(name), mode) != 0) {
            throw failure(file);
        }
        MadeDirectories.made(dirfd, name);
    }

    /** Like {@link #mkdirat} but returns {@code -errno} instead of throwing (0 when made). */
    public static int tryMkdirat(int dirfd, String name, int mode) {
        if (LIBC.mkdirat(dirfd, bytes(name), mode) != 0) {
            return -errno();
        }
        MadeDirectories.made(dirfd, name);
        return 0;
    }

    /** {@link #tryOpenat} of a name given as its bytes (a directory's own, which need not be UTF-8). */
    public static int tryOpenat(int dirfd, byte[] name, int flags, int mode) {
        int fd = LIBC.openat(dirfd, Arrays.copyOf(name, name.length + 1), flags | O_CLOEXEC, mode);
        return fd < 0 ? -errno() : fd;
    }

    /** {@link #tryUnlinkat} of a name given as its bytes (a directory's own, which need not be UTF-8). */
    public static int tryUnlinkat(int dirfd, byte[] name, boolean directory) {
        return LIBC.unlinkat(dirfd, Arrays.copyOf(name, name.length + 1), directory ? AT_REMOVEDIR : 0) != 0 ? -errno() : 0;
    }

    /** unlink(2) of a file, or rmdir(2) when {@code directory}; the type check and the removal are one call. */
    public static void unlinkat(int dirfd, String name, boolean directory, String file) throws IOException {
        int err = tryUnlinkat(dirfd, name, directory);
        if (err != 0) {
            throw Errors.of(-err, file);
        }
    }

    /** Like {@link #unlinkat} but returns {@code -errno} instead of throwing (0 when removed). */
    public static int tryUnlinkat(int dirfd, String name, boolean directory) {
        return LIBC.unlinkat(dirfd, bytes(name), directory ? AT_REMOVEDIR : 0) != 0 ? -errno() : 0;
    }

    /**
     * renameat2(2) of {@code from} in {@code fromDir} to {@code to} in {@code toDir} ({@code flags}:
     * RENAME_NOREPLACE, RENAME_EXCHANGE or 0); neither name is followed. Returns 0 or -errno: which
     * name a failure is about depends on the errno, so the caller names it.
     */
    public static int tryRenameat(int fromDir, String from, int toDir, String to, int flags) {
        return LIBC.renameat2(fromDir, bytes(from), toDir, bytes(to), flags) != 0 ? -errno() : 0;
    }

    /** linkat(2): a new name {@code to} in {@code toDir} for {@code from} in {@code fromDir}, never followed; 0 or -errno. */
    public static int tryLinkat(int fromDir, String from, int toDir, String to) {
        return LIBC.linkat(fromDir, bytes(from), toDir, bytes(to), 0) != 0 ? -errno() : 0;
    }

    /**
     * linkat(2) of the file behind {@code fd}, an O_TMPFILE one too, as {@code to} in {@code toDir};
     * 0 or -errno. Through its /proc/self/fd link, followed: linkat with AT_EMPTY_PATH would need
     * CAP_DAC_READ_SEARCH, which a daemon run by a user lacks.
     */
    public static int tryLinkDescriptor(int fd, int toDir, String to) {
        return LIBC.linkat(AT_FDCWD, bytes(PROC_SELF_FD + fd), toDir, bytes(to), AT_SYMLINK_FOLLOW) != 0 ? -errno() : 0;
    }

    /**
     * Where the file open as {@code fd} is now, as its /proc/self/fd link reads: the kernel follows
     * every rename of it, and adds " (deleted)" once its last name is gone.
     */
    public static String descriptorPath(int fd) throws IOException {
        return readlinkat(AT_FDCWD, PROC_SELF_FD + fd, null);
    }

    /** readlinkat(2): the text of the symbolic link {@code name} in {@code dirfd} (EINVAL when it is no link). */
    public static String readlinkat(int dirfd, String name, String file) throws IOException {
        Pointer buf = LINK_BUF.get();
        long n = LIBC.readlinkat(dirfd, bytes(name), buf, PATH_MAX);
        if (n < 0) {
            throw failure(file);
        }
        byte[] b = new byte[(int) n];
        buf.get(0, b, 0, b.length);
        return new String(b, StandardCharsets.UTF_8);
    }

    /** Sets access and modification times of {@code name} ("." for the directory itself), never through a link; a null time is left alone (UTIME_OMIT). */
    public static void utimensat(int dirfd, String name, long[] accessed, long[] modified, String file) throws IOException {
        Pointer times = SMALL_BUF.get();
        putTime(times, 0, accessed);
        putTime(times, 16, modified);
        if (LIBC.utimensat(dirfd, bytes(name), times, AT_SYMLINK_NOFOLLOW) != 0) {
            throw failure(file);
        }
    }

    /** futimens(2): the times of an open file, whatever its names now are; a null time is left alone. */
    public static void futimens(int fd, long[] accessed, long[] modified) throws IOException {
        Pointer times = SMALL_BUF.get();
        putTime(times, 0, accessed);
        putTime(times, 16, modified);
        if (LIBC.futimens(fd, times) != 0) {
            throw failure(null);
        }
    }

    /** {seconds, nanoseconds}, or null for UTIME_OMIT. */
    private static void putTime(Pointer p, int offset, long[] t) {
        if (t == null) {
            p.putLong(offset, 0);
            p.putLong(offset + 8, UTIME_OMIT);
        } else {
            p.putLong(offset, t[0]);
            p.putLong(offset + 8, t[1]);
        }
    }

    /** fchmod(2) of an open file. */
    public static void fchmod(int fd, int mode) throws IOException {
        if (LIBC.fchmod(fd, mode) != 0) {
            throw failure(null);
        }
    }

    /** fchown(2): {@code fd}'s file given to {@code uid} and {@code gid}; -errno or 0. */
    public static int tryFchown(int fd, int uid, int gid) {
        return LIBC.fchown(fd, uid, gid) != 0 ? -errno() : 0;
    }

    /** fchownat(2) of the file an O_PATH descriptor has open (AT_EMPTY_PATH: a link itself too); -errno or 0. */
    public static int tryFchownOpened(int pathFd, int uid, int gid) {
        return LIBC.fchownat(pathFd, EMPTY, uid, gid, AT_EMPTY_PATH) != 0 ? -errno() : 0;
    }

    /**
     * Moves the ctime of {@code name} in {@code dirfd} (a link itself, never followed) and changes
     * nothing else: fchownat(2) to owner and group -1, which Linux counts as a change of attributes
     * and allows whoever asks. -errno or 0.
     */
    public static int tryTouchChangeTime(int dirfd, String name) {
        return LIBC.fchownat(dirfd, bytes(name), -1, -1, AT_SYMLINK_NOFOLLOW) != 0 ? -errno() : 0;
    }

    /**
     * chmod(2) of the file behind an O_PATH descriptor (which fchmod refuses): through its
     * /proc/self/fd link, so the inode changed is the very one {@code fd} has open.
     */
    public static void chmodPath(int fd, int mode, String file) throws IOException {
        if (LIBC.fchmodat(AT_FDCWD, bytes(PROC_SELF_FD + fd), mode, 0) != 0) {
            throw failure(file);
        }
    }

    // Extended attributes of the file behind an O_PATH descriptor, through its /proc/self/fd link
    // (the f*xattr calls refuse O_PATH descriptors; getxattrat(2) is Linux 6.13+): the inode read
    // or changed is the very one the descriptor has open, whatever names it has now.

    /** Most values are a few bytes: one call reads them; a larger one is asked its size first. */
    private static final int XATTR_FIRST_TRY = 256;

    /** getxattr(2) or listxattr(2) into a buffer of {@code size} bytes (null and 0: only the size). */
    private interface SizedCall {
        long into(byte[] buf, long size);
    }

    /** What {@code call} fills in, in a buffer of the first try's size, else of the size it says it needs. */
    private static byte[] sized(SizedCall call, String file) throws IOException {
        byte[] buf = new byte[XATTR_FIRST_TRY];
        while (true) {
            long n = call.into(buf, buf.length);
            if (n >= 0) {
                return Arrays.copyOf(buf, (int) n);
            }
            if (errno() != ERANGE) {
                throw failure(file);
            }
            // another writer may grow it between the two calls: ERANGE again, ask again
            long size = call.into(null, 0);
            if (size < 0) {
                throw failure(file);
            }
            buf = new byte[(int) size];
        }
    }

    /** getxattr(2) of the file behind O_PATH descriptor {@code fd}. */
    public static byte[] getxattrPath(int fd, String name, String file) throws IOException {
        byte[] path = bytes(PROC_SELF_FD + fd);
        byte[] attr = bytes(name);
        return sized((buf, size) -> LIBC.getxattr(path, attr, buf, size), file);
    }

    /** listxattr(2) of the file behind O_PATH descriptor {@code fd}: its attributes' names, in the store's order. */
    public static List<String> listxattrPath(int fd, String file) throws IOException {
        byte[] path = bytes(PROC_SELF_FD + fd);
        return names(sized((buf, size) -> LIBC.listxattr(path, buf, size), file));
    }

    /** Whether the kernel has listxattrat(2) (Linux 6.13); set false at its first ENOSYS or EPERM. */
    private static volatile boolean listxattrAtWorks = true;

    /**
     * listxattrat(2) of {@code name} in directory {@code dirfd}, a link itself and never what it
     * names: one system call where {@link #listxattrPath} takes four (an O_PATH open, its type, the
     * call through /proc, the close; `cp -a` and `rsync -X` list every file twice). Null where the
     * kernel is older than 6.13, or a seccomp filter refuses calls newer than it knows (EPERM, as
     * container runtimes' profiles did): the caller goes the old way, from then on at once.
     */
    public static List<String> listxattrAt(int dirfd, String name, String file) throws IOException {
        if (!listxattrAtWorks) {
            return null;
        }
        byte[] path = bytes(name);
        try {
            return names(sized((buf, size) -> LIBC.syscall(SYS_LISTXATTRAT, dirfd, path, AT_SYMLINK_NOFOLLOW, buf, size), file));
        } catch (IOException e) {
            int errno = Errors.errno(e);
            if (errno != ENOSYS && errno != EPERM) {
                throw e;
            }
            listxattrAtWorks = false;
            return null;
        }
    }

    /** The names in a listxattr(2) answer: NUL-terminated, in the store's order. */
    private static List<String> names(byte[] list) {
        List<String> names = new ArrayList<>();
        for (int start = 0, i = 0; i < list.length; i++) {
            if (list[i] == 0) {
                names.add(new String(list, start, i - start, StandardCharsets.UTF_8));
                start = i + 1;
            }
        }
        return names;
    }

    /** setxattr(2) of the file behind O_PATH descriptor {@code fd}; {@code flags} XATTR_CREATE or XATTR_REPLACE. */
    public static void setxattrPath(int fd, String name, byte[] value, int flags, String file) throws IOException {
        if (LIBC.setxattr(bytes(PROC_SELF_FD + fd), bytes(name), value, value.length, flags) != 0) {
            throw failure(file);
        }
    }

    /** removexattr(2) of the file behind O_PATH descriptor {@code fd}. */
    public static void removexattrPath(int fd, String name, String file) throws IOException {
        if (LIBC.removexattr(bytes(PROC_SELF_FD + fd), bytes(name)) != 0) {
            throw failure(file);
        }
    }

    /** A non-blocking inotify instance, or -errno. */
    public static int inotifyInit() {
        int fd = LIBC.inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        return fd < 0 ? -errno() : fd;
    }

    /**
     * Watches {@code name} relative to the directory open as {@code fd}, through /proc so it is that
     * very inode ("." for the directory itself, ".." for its parent now); the watch descriptor, or -errno.
     */
    public static int inotifyWatch(int inotify, int fd, String name, int mask) {
        return inotifyWatchPath(inotify, PROC_SELF_FD + fd + "/" + name, mask);
    }

    /** Watches the file open as {@code fd} itself (through /proc, so that very inode); the watch descriptor, or -errno. */
    public static int inotifyWatchFile(int inotify, int fd, int mask) {
        return inotifyWatchPath(inotify, PROC_SELF_FD + fd, mask);
    }

    private static int inotifyWatchPath(int inotify, String path, int mask) {
        int wd = LIBC.inotify_add_watch(inotify, bytes(path), mask);
        return wd < 0 ? -errno() : wd;
    }

    /** {@link #pollReady}'s bits: the first descriptor is readable; the second has an exceptional condition. */
    public static final int POLL_FIRST = 1;
    public static final int POLL_SECOND = 2;
    private static final ThreadLocal<Pointer> POLL_FDS = ThreadLocal.withInitial(() -> Memory.allocateDirect(RUNTIME, 16));

    /**
     * One poll(2) that does not wait: whether {@code readable} has data (POLLIN) and whether
     * {@code exceptional} reports a condition (POLLPRI, as the mount table does after a change).
     * A failed poll reports both, so the caller looks rather than trusts.
     */
    public static int pollReady(int readable, int exceptional) {
        Pointer fds = POLL_FDS.get();
        // struct pollfd { int fd; short events; short revents; }
        fds.putInt(0, readable);
        fds.putShort(4, POLLIN);
        fds.putShort(6, (short) 0);
        fds.putInt(8, exceptional);
        fds.putShort(12, POLLPRI);
        fds.putShort(14, (short) 0);
        int n = LIBC.poll(fds, 2, 0);
        if (n == 0) {
            return 0;
        }
        if (n < 0) {
            return POLL_FIRST | POLL_SECOND;
        }
        return ((fds.getShort(6) & (POLLIN | POLLERR)) != 0 ? POLL_FIRST : 0)
                | ((fds.getShort(14) & (POLLPRI | POLLERR)) != 0 ? POLL_SECOND : 0);
    }

    /**
     * A descriptor for process {@code pid} that polls readable once it has exited, zombie or reaped
     * ({@link #awaitReadable}), or -errno (ESRCH: gone already; ENOSYS: before Linux 5.3).
     */
    public static int pidfdOpen(long pid) {
        long fd = LIBC.syscall(SYS_PIDFD_OPEN, pid, 0);
        return fd < 0 ? -errno() : (int) fd;
    }

    /** Sets this process's umask; returns the one before. */
    public static int umask(int mask) {
        return LIBC.umask(mask);
    }

    /** Adds {@code bits} to this process's umask (umask(2) can only set it: read, then set again). */
    public static void umaskAtLeast(int bits) {
        int old = LIBC.umask(bits);
        LIBC.umask(old | bits);
    }

    /** poll(2) of one descriptor for reading, waiting up to {@code timeoutMillis}: whether it is readable (or failed). */
    public static boolean awaitReadable(int fd, int timeoutMillis) {
        Pointer fds = POLL_FDS.get();
        fds.putInt(0, fd);
        fds.putShort(4, POLLIN);
        fds.putShort(6, (short) 0);
        int n = LIBC.poll(fds, 1, timeoutMillis);
        return n != 0 && (n < 0 ? errno() != EINTR : true);
    }

    public static void inotifyUnwatch(int inotify, int wd) {
        LIBC.inotify_rm_watch(inotify, wd);
    }

    /** One inotify event: the watch it came from, its mask and the name in the watched directory ("" for none). */
    public record InotifyEvent(int watch, int mask, String name) {
    }

    private static final int INOTIFY_BUFFER = 16 * 1024;
    /** struct inotify_event (16 bytes) with a name of NAME_MAX bytes and its NUL. */
    private static final int LONGEST_INOTIFY_EVENT = 16 + 255 + 1;
    private static final ThreadLocal<Pointer> INOTIFY_BUF = ThreadLocal.withInitial(() -> Memory.allocateDirect(RUNTIME, INOTIFY_BUFFER));

    /**
     * What one read of an inotify instance gave: its events, and whether the queue was empty after
     * them ({@code drained}), so a reader that must have everything queued before now stops without
     * a last read that only says EAGAIN.
     */
    public record InotifyBatch(List<InotifyEvent> events, boolean drained) {
        static final InotifyBatch EMPTY = new InotifyBatch(List.of(), true);
    }

    /**
     * The events queued on a non-blocking inotify instance, as much as one read takes; drained when a
     * read came back with room for another event of the longest name (inotify fills a read with every
     * whole event that fits), or found none. A read that fails otherwise reports a queue overflow:
     * events may be lost, and the reader starts over. The one reader of inotify's records, whichever
     * instance they come from.
     */
    public static InotifyBatch inotifyRead(int inotify) {
        Pointer buf = INOTIFY_BUF.get();
        long n;
        while ((n = LIBC.read(inotify, buf, INOTIFY_BUFFER)) < 0) {
            int err = errno();
            if (err == EAGAIN) {
                return InotifyBatch.EMPTY;
            }
            if (err != EINTR) {
                return new InotifyBatch(List.of(new InotifyEvent(-1, IN_Q_OVERFLOW, "")), true);
            }
        }
        byte[] bytes = new byte[(int) n];
        buf.get(0, bytes, 0, bytes.length);
        ByteBuffer b = ByteBuffer.wrap(bytes).order(java.nio.ByteOrder.nativeOrder());
        List<InotifyEvent> events = new ArrayList<>();
        // struct inotify_event { int wd; u32 mask; u32 cookie; u32 len; char name[len]; } (name NUL-padded)
        for (int at = 0; at + 16 <= n; ) {
            int wd = b.getInt(at);
            int mask = b.getInt(at + 4);
            int len = b.getInt(at + 12);
            int end = at + 16;
            while (end < at + 16 + len && bytes[end] != 0) {
                end++;
            }
            events.add(new InotifyEvent(wd, mask, new String(bytes, at + 16, end - at - 16, StandardCharsets.UTF_8)));
            at += 16 + len;
        }
        return new InotifyBatch(events, n <= INOTIFY_BUFFER - LONGEST_INOTIFY_EVENT);
    }

    /** What fstatfs(2) says of a file system; sizes in {@code unit} bytes (f_frsize, else f_bsize); {@code flags} its mount's ST_*. */
    public record Statfs(long type, long unit, long blocks, long free, long available, long files, long freeFiles,
                         long nameLength, long flags) {
        /** Whether the mount the descriptor is on is read-only (ST_RDONLY: per mount, so a read-only bind mount too). */
        public boolean readOnly() {
            return (flags & Linux.ST_RDONLY) != 0;
        }
    }

    /** fstatfs(2) of {@code fd}. */
    public static Statfs fstatfs(int fd) throws IOException {
        Pointer buf = STATFS_BUF.get();
        if (LIBC.fstatfs(fd, buf) != 0) {
            throw failure(null);
        }
        // struct statfs: f_type, f_bsize, f_blocks, f_bfree, f_bavail, f_files, f_ffree, f_fsid, f_namelen,
        // f_frsize, f_flags
        long unit = buf.getLong(72) > 0 ? buf.getLong(72) : buf.getLong(8);
        // __fsword_t f_type, compared as the unsigned 32-bit magic
        return new Statfs(buf.getLong(0) & 0xffffffffL, unit, buf.getLong(16), buf.getLong(24), buf.getLong(32),
                buf.getLong(40), buf.getLong(48), buf.getLong(64), buf.getLong(80));
    }

    /** Whether the file system of {@code fd} is one of {@code types} (statfs f_type). */
    public static boolean fileSystemIs(int fd, long[] types) {
        Statfs s;
        try {
            s = fstatfs(fd);
        } catch (IOException e) {
            return false;
        }
        for (long t : types) {
            if (t == s.type()) {
                return true;
            }
        }
        return false;
    }

    /** symlink(2) of {@code name} in {@code dirfd} with the text {@code target}, which is stored as it is and never resolved here. */
    public static void symlinkat(String target, int dirfd, String name, String file) throws IOException {
        if (LIBC.symlinkat(bytes(target), dirfd, bytes(name)) != 0) {
            throw failure(file);
        }
    }

    /** mknod(2) of {@code name} in {@code dirfd}: {@code mode} holds the type (S_IFIFO, S_IFSOCK) and the permission bits; no device number. */
    public static void mknodat(int dirfd, String name, int mode, String file) throws IOException {
        if (LIBC.mknodat(dirfd, bytes(name), mode, 0) != 0) {
            throw failure(file);
        }
    }

    // ---- locks: open file description (OFD) record locks and flock(2) ----

    private static final ThreadLocal<Pointer> FLOCK_BUF = ThreadLocal.withInitial(() -> Memory.allocateDirect(RUNTIME, 32));

    /** A second descriptor of {@code fd}'s own open file description (F_DUPFD_CLOEXEC), which the caller closes. */
    public static int dup(int fd) throws IOException {
        int nfd = LIBC.fcntl(fd, F_DUPFD_CLOEXEC, null);
        if (nfd < 0) {
            throw failure(null);
        }
        return nfd;
    }

    /**
     * Opens the file behind {@code fd} again, as a new open file description with {@code access}
     * (O_RDONLY, O_WRONLY or O_RDWR, maybe O_APPEND, O_TRUNC): through /proc/self/fd, so it is the
     * very inode {@code fd} has open, even renamed or unlinked since, never whatever a name now stands for.
     */
    public static int reopen(int fd, int access, String file) throws IOException {
        int nfd = LIBC.openat(AT_FDCWD, bytes(PROC_SELF_FD + fd), access | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0);
        if (nfd < 0) {
            throw failure(file);
        }
        return nfd;
    }

    /** A struct flock as F_OFD_GETLK fills it: type F_RDLCK, F_WRLCK or F_UNLCK; end inclusive, OFFSET_MAX for "to the end"; pid -1 for an OFD lock. */
    public record RecordLock(int type, long start, long end, int pid) {
    }

    /**
     * fcntl(F_OFD_SETLK) on {@code fd}: sets (F_RDLCK, F_WRLCK) or with F_UNLCK removes the lock on
     * [start, end] (end inclusive, OFFSET_MAX: to the end, however far the file grows). True when
     * done, false when another open file description holds a conflicting lock (EAGAIN/EACCES).
     */
    public static boolean ofdSetLock(int fd, int type, long start, long end) throws IOException {
        Pointer lock = flock(type, start, end);
        while (LIBC.fcntl(fd, F_OFD_SETLK, lock) != 0) {
            int err = errno();
            if (err == EAGAIN || err == EACCES) {
                return false;
            }
            if (err != EINTR) {
                throw Errors.of(err, null);
            }
        }
        return true;
    }

    /**
     * fcntl(F_OFD_GETLK) on {@code fd}: the first lock that would conflict with {@code type} on
     * [start, end], held through another open file description (pid -1 for an OFD lock, such as
     * another mount's, the holder's pid for a process's classic POSIX lock), or F_UNLCK.
     */
    public static RecordLock ofdTestLock(int fd, int type, long start, long end) throws IOException {
        Pointer lock = flock(type, start, end);
        if (LIBC.fcntl(fd, F_OFD_GETLK, lock) != 0) {
            throw failure(null);
        }
        short got = lock.getShort(0);
        if (got == F_UNLCK) {
            return new RecordLock(F_UNLCK, start, end, 0);
        }
        long from = lock.getLong(8);
        long length = lock.getLong(16);
        return new RecordLock(got, from, length == 0 ? OFFSET_MAX : from + length - 1, lock.getInt(24));
    }

    /** struct flock { short l_type; short l_whence; off_t l_start; off_t l_len; pid_t l_pid; } (x86-64 and arm64). */
    private static Pointer flock(int type, long start, long end) {
        Pointer lock = FLOCK_BUF.get();
        lock.putShort(0, (short) type);
        lock.putShort(2, (short) SEEK_SET);
        lock.putLong(8, start);
        // l_len 0 is "to the end, however far": FUSE's end is inclusive, OFFSET_MAX for that
        lock.putLong(16, end == OFFSET_MAX ? 0 : end - start + 1);
        lock.putInt(24, 0); // OFD locks require l_pid 0
        lock.putInt(28, 0);
        return lock;
    }

    /** flock(2) with {@code operation} (LOCK_SH, LOCK_EX, LOCK_UN, with LOCK_NB): true when done, false when another open file description holds a conflicting lock. */
    public static boolean flock(int fd, int operation) throws IOException {
        while (LIBC.flock(fd, operation) != 0) {
            int err = errno();
            if (err == EAGAIN) {
                return false;
            }
            if (err != EINTR) {
                throw Errors.of(err, null);
            }
        }
        return true;
    }
}
