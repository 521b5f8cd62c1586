package dev.chibifs.store;

import dev.chibifs.path.VfsPath;
import com.kenai.jffi.MemoryIO;
import jnr.ffi.LastError;
import jnr.ffi.LibraryLoader;
import jnr.ffi.Memory;
import jnr.ffi.Platform;
import jnr.ffi.Pointer;
import jnr.ffi.Runtime;
import jnr.ffi.annotations.In;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;
import java.nio.file.attribute.FileTime;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The few libc calls the store makes itself, relative to directory descriptors: they keep the
 * full store path out of every call (no PATH_MAX for deep trees) and let each call refuse
 * symbolic links without a check-then-act race. Names pass as UTF-8 bytes.
 */
final class Libc {

    /** The jnr-ffi view of libc; only what {@link Libc} wraps. */
    public interface C {
        int openat(int dirfd, @In byte[] path, int flags, int mode);

        long syscall(long number, int dirfd, @In byte[] path, Pointer how, long size);

        int close(int fd);

        long pread(int fd, long buf, long count, long offset);

        long pwrite(int fd, long buf, long count, long offset);

        int ftruncate(int fd, long length);

        int fallocate(int fd, int mode, long offset, long length);

        int fsync(int fd);

        int fdatasync(int fd);

        long getdents64(int fd, Pointer buf, long count);

        int statx(int dirfd, @In byte[] path, int flags, int mask, Pointer buf);

        int unlinkat(int dirfd, @In byte[] path, int flags);

        int utimensat(int dirfd, @In byte[] path, Pointer times, int flags);

        int futimens(int fd, Pointer times);

        int fchmod(int fd, int mode);

        int inotify_init1(int flags);

        int inotify_add_watch(int fd, @In byte[] path, int mask);

        int inotify_rm_watch(int fd, int wd);

        long read(int fd, Pointer buf, long count);

        int fstatfs(int fd, Pointer buf);

        int poll(Pointer fds, long nfds, int timeout);

        String strerror(int errnum);

        int symlinkat(@In byte[] target, int dirfd, @In byte[] linkpath);

        int mknodat(int dirfd, @In byte[] path, int mode, long dev);

        /** fcntl(2) with a struct flock argument (the lock commands); variadic in C, a pointer in its one register here. */
        int fcntl(int fd, int cmd, Pointer lock);

        int flock(int fd, int operation);
    }

    static final int AT_FDCWD = -100;
    static final int O_RDONLY = 0;
    static final int O_WRONLY = 01;
    static final int O_RDWR = 02;
    static final int O_TRUNC = 01000;
    static final int O_APPEND = 02000;
    static final int O_CREAT = 0100;
    static final int O_EXCL = 0200;
    static final int O_NOCTTY = 0400;
    static final int O_NONBLOCK = 04000;
    static final int O_CLOEXEC = 02000000;
    static final int O_PATH = 010000000;
    static final int O_DIRECTORY;
    static final int O_NOFOLLOW;

    static final int S_IFMT = 0170000;
    static final int S_IFREG = 0100000;
    static final int S_IFDIR = 0040000;
    static final int S_IFLNK = 0120000;
    static final int S_IFIFO = 0010000;
    static final int S_IFSOCK = 0140000;

    private static final int AT_SYMLINK_NOFOLLOW = 0x100;
    private static final int AT_REMOVEDIR = 0x200;
    private static final int AT_EMPTY_PATH = 0x1000;
    private static final int STATX_BASIC_STATS = 0x7ff;
    private static final long SYS_OPENAT2 = 437;
    private static final long RESOLVE_NO_MAGICLINKS = 0x02;
    private static final long RESOLVE_NO_SYMLINKS = 0x04;
    private static final long RESOLVE_BENEATH = 0x08;
    private static final long UTIME_OMIT = (1L << 30) - 2;

    static final int EPERM = 1;
    static final int ENOENT = 2;
    static final int EINTR = 4;
    static final int ENXIO = 6;
    static final int EEXIST = 17;
    static final int EAGAIN = 11;
    static final int EACCES = 13;
    static final int ENOSYS = 38;
    static final int ELOOP = 40;

    private static final byte[] EMPTY = {0};
    private static final String PROC_SELF_FD = "/proc/self/fd/";
    /** Direct buffers' addresses, so pread and pwrite move bytes straight between the file and the buffer. */
    private static final MemoryIO MEMORY = MemoryIO.getInstance();
    /** Bounce buffers for heap ByteBuffers (the vfs commands and tests; FUSE hands us direct ones). */
    private static final ThreadLocal<ByteBuffer> BOUNCE = ThreadLocal.withInitial(() -> ByteBuffer.allocateDirect(64 * 1024));

    private static final C LIBC = LibraryLoader.create(C.class).load("c");
    private static final Runtime RUNTIME = Runtime.getRuntime(LIBC);
    private static final ThreadLocal<Pointer> STATX_BUF = ThreadLocal.withInitial(() -> Memory.allocateDirect(RUNTIME, 256));
    private static final ThreadLocal<Pointer> SMALL_BUF = ThreadLocal.withInitial(() -> Memory.allocateDirect(RUNTIME, 32));
    private static volatile boolean openat2Missing;

    static {
        // O_DIRECTORY and O_NOFOLLOW are the two open flags whose values differ between x86-64 and arm64
        boolean arm = Platform.getNativePlatform().getCPU() == Platform.CPU.AARCH64
                || Platform.getNativePlatform().getCPU() == Platform.CPU.ARM;
        O_DIRECTORY = arm ? 040000 : 0200000;
        O_NOFOLLOW = arm ? 0100000 : 0400000;
    }

    private Libc() {
    }

    /** {@code name} in UTF-8 with a NUL after it; an ASCII name (nearly all) is one array, made once. */
    static byte[] bytes(String name) {
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

    static int errno() {
        return LastError.getLastError(RUNTIME);
    }

    /** open(2) of a path relative to {@code dirfd}; returns the descriptor or throws for {@code path}. */
    static int openat(int dirfd, String name, int flags, int mode, VfsPath path) throws IOException {
        int fd = LIBC.openat(dirfd, bytes(name), flags | O_CLOEXEC, mode);
        if (fd < 0) {
            throw failure(errno(), path);
        }
        return fd;
    }

    /** Like {@link #openat} but returns {@code -errno} instead of throwing. */
    static int tryOpenat(int dirfd, String name, int flags, int mode) {
        int fd = LIBC.openat(dirfd, bytes(name), flags | O_CLOEXEC, mode);
        return fd < 0 ? -errno() : fd;
    }

    /**
     * Opens the directory {@code relative} below {@code rootFd} as an O_PATH descriptor, refusing
     * every symbolic link on the way and any escape from the root (ELOOP, EXDEV).
     */
    static int openDirectoryBeneath(int rootFd, String relative, VfsPath path) throws IOException {
        int flags = O_PATH | O_DIRECTORY | O_CLOEXEC;
        if (!openat2Missing) {
            Pointer how = SMALL_BUF.get();
            how.putLong(0, flags);
            how.putLong(8, 0);
            how.putLong(16, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
            long fd = LIBC.syscall(SYS_OPENAT2, rootFd, bytes(relative), how, 24);
            if (fd >= 0) {
                return (int) fd;
            }
            int err = errno();
            if (err != ENOSYS) {
                throw failure(err, path);
            }
            // kernels before 5.6: walk one name at a time, each opened without following
            openat2Missing = true;
        }
        return walk(rootFd, relative, path);
    }

    private static int walk(int rootFd, String relative, VfsPath path) throws IOException {
        int dir = rootFd;
        for (String name : relative.split("/")) {
            int fd = LIBC.openat(dir, bytes(name), O_PATH | O_NOFOLLOW | O_CLOEXEC, 0);
            int err = fd < 0 ? errno() : 0;
            if (dir != rootFd) {
                close(dir);
            }
            if (fd < 0) {
                throw failure(err, path);
            }
            int type = type(fd);
            if (type != S_IFDIR) {
                close(fd);
                throw failure(type == S_IFLNK ? ELOOP : 20, path);
            }
            dir = fd;
        }
        return dir;
    }

    static void close(int fd) {
        LIBC.close(fd);
    }

    /**
     * pread(2) into {@code dst} at its position, which advances; returns the bytes read, fewer than
     * {@code dst} has room for only at the end of a regular file (0 at the end). A heap buffer is
     * filled through the bounce buffer, a piece at a time.
     */
    static int pread(int fd, ByteBuffer dst, long offset) throws IOException {
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
    static int pwrite(int fd, ByteBuffer src, long offset) throws IOException {
        if (!src.isDirect()) {
            ByteBuffer bounce = bounce(src.remaining());
            bounce.put(src.duplicate().limit(src.position() + bounce.remaining())).flip();
            int n = pwrite(fd, bounce, offset);
            src.position(src.position() + n);
            return n;
        }
        return transfer(true, fd, src, offset);
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
                throw failure(err, null);
            }
        }
    }

    private static final int DIRENT_BUFFER = 32 * 1024;
    private static final ThreadLocal<Pointer> DIRENT_BUF = ThreadLocal.withInitial(() -> Memory.allocateDirect(RUNTIME, DIRENT_BUFFER));
    private static final ThreadLocal<byte[]> DIRENT_BYTES = ThreadLocal.withInitial(() -> new byte[DIRENT_BUFFER]);

    /** Takes directory entries as getdents64 gives them: the name's bytes and d_type (0 when the file system does not say). */
    @FunctionalInterface
    interface DirentSink {
        /** The name is {@code length} bytes at {@code offset} in {@code name}, valid during the call; false stops. */
        boolean accept(byte[] name, int offset, int length, int type) throws IOException;
    }

    /**
     * Hands each entry of the directory {@code name} in {@code dirfd} (".", ".." left out) with its
     * d_type to {@code sink}, so a listing needs no stat per entry, and no object per entry either.
     * getdents64 rather than java.nio: only it says the type, which the kernel hands on to programs
     * that readdir the mount (find -type f). The sink may not list a directory itself: the buffer is the thread's.
     */
    static void readDirectory(int dirfd, String name, VfsPath path, DirentSink sink) throws IOException {
        int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0, path);
        try {
            Pointer buf = DIRENT_BUF.get();
            while (true) {
                long n = LIBC.getdents64(fd, buf, DIRENT_BUFFER);
                if (n < 0) {
                    throw failure(errno(), path);
                }
                if (n == 0) {
                    return;
                }
                // one copy into the heap, parsed there: jnr's per-field reads cost more than the syscall
                byte[] bytes = DIRENT_BYTES.get();
                buf.get(0, bytes, 0, (int) n);
                // struct linux_dirent64 { u64 d_ino; s64 d_off; u16 d_reclen; u8 d_type; char d_name[]; }
                for (int at = 0; at < n; ) {
                    int reclen = (bytes[at + 16] & 0xff) | (bytes[at + 17] & 0xff) << 8;
                    int type = bytes[at + 18] & 0xff;
                    int start = at + 19;
                    int end = start;
                    while (bytes[end] != 0) {
                        end++;
                    }
                    boolean dots = bytes[start] == '.' && (end == start + 1 || (end == start + 2 && bytes[start + 1] == '.'));
                    if (!dots && !sink.accept(bytes, start, end - start, type)) {
                        return;
                    }
                    at += reclen;
                }
            }
        } finally {
            close(fd);
        }
    }

    private static ByteBuffer bounce(int size) {
        ByteBuffer b = BOUNCE.get();
        b.clear().limit(Math.min(size, b.capacity()));
        return b;
    }

    /** ftruncate(2): shrinks, or grows with a hole. */
    static void ftruncate(int fd, long size) throws IOException {
        if (LIBC.ftruncate(fd, size) != 0) {
            throw failure(errno(), null);
        }
    }

    /** fallocate(2); the store's file system decides which modes it can do. */
    static void fallocate(int fd, int mode, long offset, long length) throws IOException {
        if (LIBC.fallocate(fd, mode, offset, length) != 0) {
            throw failure(errno(), null);
        }
    }

    /** fsync(2), or fdatasync(2) when the metadata need not reach the disk. */
    static void fsync(int fd, boolean metadata) throws IOException {
        if ((metadata ? LIBC.fsync(fd) : LIBC.fdatasync(fd)) != 0) {
            throw failure(errno(), null);
        }
    }

    /** The file type bits (S_IFMT) of an open descriptor, without following it. */
    static int type(int fd) throws IOException {
        Pointer buf = STATX_BUF.get();
        if (LIBC.statx(fd, EMPTY, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, buf) != 0) {
            throw failure(errno(), null);
        }
        return buf.getShort(28) & S_IFMT;
    }

    /** Whether {@code name} in {@code dirfd} (not followed) is the directory with this device and inode. */
    static boolean isDirectory(int dirfd, String name, long device, long inode) {
        Pointer buf = STATX_BUF.get();
        if (LIBC.statx(dirfd, bytes(name), AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, buf) != 0) {
            return false;
        }
        return (buf.getShort(28) & S_IFMT) == S_IFDIR && buf.getLong(32) == inode && device(buf) == device;
    }

    /** The device an open descriptor's file lives on. */
    static long device(int fd) throws IOException {
        Pointer buf = STATX_BUF.get();
        if (LIBC.statx(fd, EMPTY, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, buf) != 0) {
            throw failure(errno(), null);
        }
        return device(buf);
    }

    private static long device(Pointer statx) {
        return ((long) statx.getInt(136) << 32) | (statx.getInt(140) & 0xffffffffL);
    }

    /** Metadata of {@code name} in {@code dirfd} (never followed), or of {@code dirfd} itself when name is null. */
    static Metadata stat(int dirfd, String name, VfsPath path) throws IOException {
        Pointer buf = STATX_BUF.get();
        int flags = AT_SYMLINK_NOFOLLOW | (name == null ? AT_EMPTY_PATH : 0);
        if (LIBC.statx(dirfd, name == null ? EMPTY : bytes(name), flags, STATX_BASIC_STATS, buf) != 0) {
            throw failure(errno(), path);
        }
        int mode = buf.getShort(28) & 0xffff;
        EntryKind kind = switch (mode & S_IFMT) {
            case S_IFREG -> EntryKind.FILE;
            case S_IFDIR -> EntryKind.DIRECTORY;
            case S_IFLNK -> EntryKind.SYMLINK;
            case S_IFIFO -> EntryKind.FIFO;
            case S_IFSOCK -> EntryKind.SOCKET;
            default -> EntryKind.OTHER;
        };
        return new Metadata(kind, buf.getLong(40), time(buf, 80), time(buf, 112), time(buf, 64), time(buf, 96),
                buf.getInt(16) & 0xffffffffL, mode & 07777, buf.getLong(32));
    }

    /** Times whose nanoseconds since 1970 fit a long (the years 1678 to 2262) are one object, not a FileTime and its Instant. */
    private static final long NANO_SECONDS_LIMIT = Long.MAX_VALUE / 1_000_000_000L - 1;

    private static FileTime time(Pointer buf, int offset) {
        long seconds = buf.getLong(offset);
        long nanos = buf.getInt(offset + 8) & 0xffffffffL;
        if (Math.abs(seconds) < NANO_SECONDS_LIMIT) {
            return FileTime.from(seconds * 1_000_000_000L + nanos, TimeUnit.NANOSECONDS);
        }
        return FileTime.from(Instant.ofEpochSecond(seconds, nanos));
    }

    /** unlink(2) of a file, or rmdir(2) when {@code directory}; the type check and the removal are one call. */
    static void unlinkat(int dirfd, String name, boolean directory, VfsPath path) throws IOException {
        if (LIBC.unlinkat(dirfd, bytes(name), directory ? AT_REMOVEDIR : 0) != 0) {
            int err = errno();
            throw failure(err == 21 && !directory ? 21 : err, path);
        }
    }

    /** Sets access and modification times of {@code name} ("." for the directory itself), never through a link; a null time is left alone (UTIME_OMIT). */
    static void utimensat(int dirfd, String name, FileTime accessed, FileTime modified, VfsPath path) throws IOException {
        Pointer times = SMALL_BUF.get();
        putTime(times, 0, accessed);
        putTime(times, 16, modified);
        if (LIBC.utimensat(dirfd, bytes(name), times, AT_SYMLINK_NOFOLLOW) != 0) {
            throw failure(errno(), path);
        }
    }

    /** futimens(2): the times of an open file, whatever its names now are; a null time is left alone. */
    static void futimens(int fd, FileTime accessed, FileTime modified) throws IOException {
        Pointer times = SMALL_BUF.get();
        putTime(times, 0, accessed);
        putTime(times, 16, modified);
        if (LIBC.futimens(fd, times) != 0) {
            throw failure(errno(), null);
        }
    }

    /** fchmod(2) of an open file. */
    static void fchmod(int fd, int mode) throws IOException {
        if (LIBC.fchmod(fd, mode) != 0) {
            throw failure(errno(), null);
        }
    }

    private static void putTime(Pointer p, int offset, FileTime t) {
        if (t == null) {
            p.putLong(offset, 0);
            p.putLong(offset + 8, UTIME_OMIT);
        } else {
            Instant i = t.toInstant();
            p.putLong(offset, i.getEpochSecond());
            p.putLong(offset + 8, i.getNano());
        }
    }

    /** A non-blocking inotify instance, or -errno. */
    static int inotifyInit() {
        int fd = LIBC.inotify_init1(O_NONBLOCK | O_CLOEXEC);
        return fd < 0 ? -errno() : fd;
    }

    /**
     * Watches {@code name} relative to the directory open as {@code fd}, through /proc so it is that
     * very inode ("." for the directory itself, ".." for its parent now); the watch descriptor, or -errno.
     */
    static int inotifyWatch(int inotify, int fd, String name, int mask) {
        int wd = LIBC.inotify_add_watch(inotify, bytes(PROC_SELF_FD + fd + "/" + name), mask);
        return wd < 0 ? -errno() : wd;
    }

    /** {@link #pollReady}'s bits: the first descriptor is readable; the second has an exceptional condition. */
    static final int POLL_FIRST = 1;
    static final int POLL_SECOND = 2;
    private static final short POLLIN = 0x1;
    private static final short POLLPRI = 0x2;
    private static final short POLLERR = 0x8;
    private static final ThreadLocal<Pointer> POLL_FDS = ThreadLocal.withInitial(() -> Memory.allocateDirect(RUNTIME, 16));

    /**
     * One poll(2) that does not wait: whether {@code readable} has data (POLLIN) and whether
     * {@code exceptional} reports a condition (POLLPRI, as the mount table does after a change).
     * A failed poll reports both, so the caller looks rather than trusts.
     */
    static int pollReady(int readable, int exceptional) {
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

    /** poll(2) of one descriptor for reading, waiting up to {@code timeoutMillis}: whether it is readable (or failed). */
    static boolean awaitReadable(int fd, int timeoutMillis) {
        Pointer fds = POLL_FDS.get();
        fds.putInt(0, fd);
        fds.putShort(4, POLLIN);
        fds.putShort(6, (short) 0);
        int n = LIBC.poll(fds, 1, timeoutMillis);
        return n != 0 && (n < 0 ? errno() != EINTR : true);
    }

    static void inotifyUnwatch(int inotify, int wd) {
        LIBC.inotify_rm_watch(inotify, wd);
    }

    /** One inotify event: the watch it came from, its mask and the name in the watched directory ("" for none). */
    record InotifyEvent(int watch, int mask, String name) {
    }

    private static final int IN_Q_OVERFLOW = 0x4000;
    private static final int INOTIFY_BUFFER = 16 * 1024;
    private static final ThreadLocal<Pointer> INOTIFY_BUF = ThreadLocal.withInitial(() -> Memory.allocateDirect(RUNTIME, INOTIFY_BUFFER));

    /**
     * The events queued on a non-blocking inotify instance, or null when there are none. A read
     * that fails otherwise reports a queue overflow: events may be lost, and the reader starts over.
     */
    static List<InotifyEvent> inotifyRead(int inotify) {
        Pointer buf = INOTIFY_BUF.get();
        long n;
        while ((n = LIBC.read(inotify, buf, INOTIFY_BUFFER)) < 0) {
            int err = errno();
            if (err == EAGAIN) {
                return null;
            }
            if (err != EINTR) {
                return List.of(new InotifyEvent(-1, IN_Q_OVERFLOW, ""));
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
        return events;
    }

    /** Whether {@code name} in {@code dirfd} (not followed) is the very directory open as {@code fd}. */
    static boolean isDirectory(int dirfd, String name, int fd) {
        Pointer buf = STATX_BUF.get();
        if (LIBC.statx(fd, EMPTY, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, buf) != 0) {
            return false;
        }
        return isDirectory(dirfd, name, device(buf), buf.getLong(32));
    }

    /** fstatfs(2) of {@code fd}: the space, name length and file counts of its file system. */
    static SpaceInfo space(int fd) throws IOException {
        Pointer buf = STATX_BUF.get();
        if (LIBC.fstatfs(fd, buf) != 0) {
            throw failure(errno(), null);
        }
        // struct statfs: f_type, f_bsize, f_blocks, f_bfree, f_bavail, f_files, f_ffree, f_fsid, f_namelen, f_frsize
        long unit = buf.getLong(72) > 0 ? buf.getLong(72) : buf.getLong(8);
        return new SpaceInfo(unit, buf.getLong(16) * unit, buf.getLong(24) * unit, buf.getLong(32) * unit,
                buf.getLong(64), buf.getLong(40), buf.getLong(48));
    }

    /** Whether the file system of {@code fd} is one of {@code types} (statfs f_type). */
    static boolean localFileSystem(int fd, long[] types) {
        Pointer buf = STATX_BUF.get();
        if (LIBC.fstatfs(fd, buf) != 0) {
            return false;
        }
        long type = buf.getLong(0) & 0xffffffffL; // __fsword_t, compared as the unsigned 32-bit magic
        for (long t : types) {
            if (t == type) {
                return true;
            }
        }
        return false;
    }

    /** symlink(2) of {@code name} in {@code dirfd} with the text {@code target}, which is stored as it is and never resolved here. */
    static void symlinkat(String target, int dirfd, String name, VfsPath path) throws IOException {
        if (LIBC.symlinkat(bytes(target), dirfd, bytes(name)) != 0) {
            throw failure(errno(), path);
        }
    }

    /** mknod(2) of {@code name} in {@code dirfd}: {@code mode} holds the type (S_IFIFO, S_IFSOCK) and the permission bits; no device number. */
    static void mknodat(int dirfd, String name, int mode, VfsPath path) throws IOException {
        if (LIBC.mknodat(dirfd, bytes(name), mode, 0) != 0) {
            throw failure(errno(), path);
        }
    }

    // ---- locks: open file description (OFD) record locks and flock(2) ----
    // Linux's numbers, the same on x86-64 and arm64; they move to dev.chibifs.sys.Linux when it lands.

    static final int F_OFD_GETLK = 36;
    static final int F_OFD_SETLK = 37;
    static final short F_RDLCK = 0;
    static final short F_WRLCK = 1;
    static final short F_UNLCK = 2;
    static final int LOCK_SH = 1;
    static final int LOCK_EX = 2;
    static final int LOCK_NB = 4;
    static final int LOCK_UN = 8;
    static final int O_ACCMODE = 03;
    /** FUSE's and the kernel's "to the end of the file, however far it grows" (OFFSET_MAX). */
    private static final long OFFSET_MAX = Long.MAX_VALUE;
    private static final ThreadLocal<Pointer> FLOCK_BUF = ThreadLocal.withInitial(() -> Memory.allocateDirect(RUNTIME, 32));

    /**
     * Opens the file behind {@code fd} again, as a new open file description with {@code access}
     * (O_RDONLY, O_WRONLY or O_RDWR): through /proc/self/fd, so it is the very inode {@code fd} has
     * open, even renamed or unlinked since, never whatever a name now stands for.
     */
    static int reopen(int fd, int access) throws IOException {
        int nfd = LIBC.openat(AT_FDCWD, bytes(PROC_SELF_FD + fd), access | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0);
        if (nfd < 0) {
            throw failure(errno(), null);
        }
        return nfd;
    }

    /**
     * fcntl(F_OFD_SETLK) on {@code fd}: sets (or with {@link LockType#UNLOCK} removes) the lock on
     * [start, end] (end inclusive, Long.MAX_VALUE: to the end, however far the file grows). True when
     * done, false when another open file description holds a conflicting lock (EAGAIN/EACCES).
     */
    static boolean ofdSetLock(int fd, LockType type, long start, long end) throws IOException {
        Pointer lock = flock(type, start, end);
        while (LIBC.fcntl(fd, F_OFD_SETLK, lock) != 0) {
            int err = errno();
            if (err == EAGAIN || err == EACCES) {
                return false;
            }
            if (err != EINTR) {
                throw failure(err, null);
            }
        }
        return true;
    }

    /**
     * fcntl(F_OFD_GETLK) on {@code fd}: the first lock that would conflict with {@code type} on
     * [start, end], held through another open file description (pid -1 for an OFD lock, such as
     * another mount's, the holder's pid for a process's classic POSIX lock), or an UNLOCK state.
     */
    static LockState ofdTestLock(int fd, LockType type, long start, long end) throws IOException {
        Pointer lock = flock(type, start, end);
        if (LIBC.fcntl(fd, F_OFD_GETLK, lock) != 0) {
            throw failure(errno(), null);
        }
        short got = lock.getShort(0);
        if (got == F_UNLCK) {
            return LockState.unlocked(start, end);
        }
        long from = lock.getLong(8);
        long length = lock.getLong(16);
        return new LockState(got == F_WRLCK ? LockType.WRITE : LockType.READ, from,
                length == 0 ? OFFSET_MAX : from + length - 1, lock.getInt(24));
    }

    /** struct flock { short l_type; short l_whence; off_t l_start; off_t l_len; pid_t l_pid; } (x86-64 and arm64). */
    private static Pointer flock(LockType type, long start, long end) {
        Pointer lock = FLOCK_BUF.get();
        lock.putShort(0, switch (type) {
            case READ -> F_RDLCK;
            case WRITE -> F_WRLCK;
            case UNLOCK -> F_UNLCK;
        });
        lock.putShort(2, (short) 0); // SEEK_SET
        lock.putLong(8, start);
        // l_len 0 is "to the end, however far": FUSE's end is inclusive, OFFSET_MAX for that
        lock.putLong(16, end == OFFSET_MAX ? 0 : end - start + 1);
        lock.putInt(24, 0); // OFD locks require l_pid 0
        lock.putInt(28, 0);
        return lock;
    }

    /** flock(2) without waiting: true when done, false when another open file description holds a conflicting lock. */
    static boolean flock(int fd, LockType type) throws IOException {
        int op = switch (type) {
            case READ -> LOCK_SH | LOCK_NB;
            case WRITE -> LOCK_EX | LOCK_NB;
            case UNLOCK -> LOCK_UN;
        };
        while (LIBC.flock(fd, op) != 0) {
            int err = errno();
            if (err == EAGAIN) {
                return false;
            }
            if (err != EINTR) {
                throw failure(err, null);
            }
        }
        return true;
    }

    /** The java.nio.file exception for {@code errno}, naming the VFS path (never a host path). */
    static IOException failure(int errno, VfsPath path) {
        String p = path == null ? null : path.toString();
        return switch (errno) {
            case ENOENT -> new MissingName(p);
            case EEXIST -> new FileAlreadyExistsException(p);
            case EPERM -> new OperationNotPermittedException(p, "the store's file system refused it");
            case 13 -> new AccessDeniedException(p);
            case 20 -> new NotDirectoryException(p);
            case 21 -> new IsDirectoryException(p);
            case 39 -> new DirectoryNotEmptyException(p);
            default -> new FileSystemException(p, null, LIBC.strerror(errno));
        };
    }

    /**
     * ENOENT without a stack trace. A missing name is an answer, not a fault, and a busy mount asks
     * for many (git looks for a .gitignore in every directory, shells walk PATH, python probes its
     * import path): filling in the stack of each cost about a microsecond per lookup.
     */
    private static final class MissingName extends NoSuchFileException {
        MissingName(String path) {
            super(path);
        }

        @Override
        public synchronized Throwable fillInStackTrace() {
            return this;
        }
    }
}
