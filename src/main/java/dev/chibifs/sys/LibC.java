package dev.chibifs.sys;

import jnr.ffi.LastError;
import jnr.ffi.LibraryLoader;
import jnr.ffi.Runtime;
import jnr.ffi.annotations.In;
import jnr.ffi.annotations.Out;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * The libc functions the FUSE device and mounting call, through jnr-ffi. Buffers pass as raw
 * addresses ({@code long}) so a direct ByteBuffer's memory goes to the kernel without a copy;
 * paths pass as NUL-terminated UTF-8 ({@link #path}). Read {@link #errno()} right after a call
 * that failed, on the same thread.
 */
public final class LibC {

    /** The functions; each returns what libc returns (-1 with errno set on failure). */
    public interface Functions {
        int open(@In byte[] path, int flags, int mode);

        int close(int fd);

        long read(int fd, long buf, long count);

        long writev(int fd, long iov, int iovcnt);

        long write(int fd, @In byte[] buf, long count);

        int dup2(int oldfd, int newfd);

        /** A new session with this process its leader, without a controlling terminal (EPERM for a group leader). */
        int setsid();

        int ioctl(int fd, long request, long arg);

        int fcntl(int fd, int cmd, int arg);

        int poll(long fds, long nfds, int timeoutMillis);

        int pipe2(@Out int[] fds, int flags);

        int socketpair(int domain, int type, int protocol, @Out int[] sv);

        int mount(@In byte[] source, @In byte[] target, @In byte[] type, long flags, @In byte[] data);

        int umount2(@In byte[] target, int flags);

        int geteuid();

        int umask(int mask);

        int getegid();

        /** syscall(2) for the calls libc does not wrap (io_uring); unused arguments are ignored. */
        long syscall(long number, long a, long b, long c, long d, long e, long f);

        /** The calling thread's CPUs (pid 0), from a cpu_set_t at {@code mask}. */
        int sched_setaffinity(int pid, long size, long mask);

        String strerror(int errnum);
    }

    private static final Functions C = LibraryLoader.create(Functions.class).load("c");
    private static final Runtime RUNTIME = Runtime.getRuntime(C);

    private LibC() {
    }

    /** The functions themselves. */
    public static Functions c() {
        return C;
    }

    /** errno of this thread's last failed call. */
    public static int errno() {
        return LastError.getLastError(RUNTIME);
    }

    /** libc's text for {@code errno} ("No such device"). */
    public static String strerror(int errno) {
        String s = C.strerror(errno);
        return s == null ? "errno " + errno : s;
    }

    /**
     * mmap(2), as the system call: libc's mmap through jnr-ffi fails with EINVAL without making
     * the call (whatever the argument types declared). Returns the address or -1 with errno set.
     */
    static long mmap(long address, long length, int prot, int flags, int fd, long offset) {
        return C.syscall(Linux.SYS_MMAP, address, length, prot, flags, fd, offset);
    }

    /** munmap(2), as the system call, beside {@link #mmap}. */
    static void munmap(long address, long length) {
        C.syscall(Linux.SYS_MUNMAP, address, length, 0, 0, 0, 0);
    }

    /** {@code s} in UTF-8 with a NUL after it, as libc takes strings. */
    public static byte[] path(String s) {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        return Arrays.copyOf(b, b.length + 1);
    }
}
