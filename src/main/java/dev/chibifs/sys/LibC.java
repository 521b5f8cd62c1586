package dev.chibifs.sys;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * The libc calls the FUSE device, mounting and the detached daemon make, each returning what libc
 * returns (-1 with errno set on failure), for callers whose every failure is an answer of its own
 * (EINTR, EAGAIN, ENOENT from the device). Buffers pass as raw addresses ({@code long}) so a direct
 * ByteBuffer's memory goes to the kernel without a copy; paths pass as NUL-terminated UTF-8
 * ({@link #path}). Read {@link #errno()} right after a call that failed, on the same thread. Calls
 * that either work or fail (close, dup, the ids) are {@link Syscalls}'.
 */
public final class LibC {

    private static final Native.Functions C = Native.C;

    private LibC() {
    }

    /** errno of this thread's last failed call. */
    public static int errno() {
        return Native.errno();
    }

    /** libc's text for {@code errno} ("No such device"). */
    public static String strerror(int errno) {
        String s = C.strerror(errno);
        return s == null ? "errno " + errno : s;
    }

    public static int open(byte[] path, int flags, int mode) {
        return C.open(path, flags, mode);
    }

    public static long read(int fd, long buf, long count) {
        return C.read(fd, buf, count);
    }

    public static long writev(int fd, long iov, int iovcnt) {
        return C.writev(fd, iov, iovcnt);
    }

    public static long write(int fd, byte[] buf, long count) {
        return C.write(fd, buf, count);
    }

    public static int dup2(int oldfd, int newfd) {
        return C.dup2(oldfd, newfd);
    }

    /** A new session with this process its leader, without a controlling terminal (EPERM for a group leader). */
    public static int setsid() {
        return C.setsid();
    }

    public static int ioctl(int fd, long request, long arg) {
        return C.ioctl(fd, request, arg);
    }

    /** fcntl(2) with an int argument (F_GETFD, F_SETFL, ...). */
    public static int fcntl(int fd, int cmd, int arg) {
        return C.fcntl(fd, cmd, arg);
    }

    /** poll(2) of the {@code nfds} struct pollfd at address {@code fds}. */
    public static int poll(long fds, long nfds, int timeoutMillis) {
        return C.poll(fds, nfds, timeoutMillis);
    }

    public static int pipe2(int[] fds, int flags) {
        return C.pipe2(fds, flags);
    }

    public static int socketpair(int domain, int type, int protocol, int[] sv) {
        return C.socketpair(domain, type, protocol, sv);
    }

    public static int mount(byte[] source, byte[] target, byte[] type, long flags, byte[] data) {
        return C.mount(source, target, type, flags, data);
    }

    public static int umount2(byte[] target, int flags) {
        return C.umount2(target, flags);
    }

    /** The calling thread's CPUs (pid 0), from a cpu_set_t at {@code mask}. */
    public static int sched_setaffinity(int pid, long size, long mask) {
        return C.sched_setaffinity(pid, size, mask);
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
