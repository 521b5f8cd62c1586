package dev.chibifs.sys;

import jnr.ffi.LastError;
import jnr.ffi.LibraryLoader;
import jnr.ffi.Pointer;
import jnr.ffi.Runtime;
import jnr.ffi.annotations.In;
import jnr.ffi.annotations.Out;

/**
 * libc, bound once through jnr-ffi, for sys alone: {@link Syscalls} (the store's calls, which throw)
 * and {@link LibC} (the device's and mounting's) wrap it, and nothing outside sys sees the raw
 * functions. Each returns what libc returns (-1 with errno set on failure); read {@link #errno()}
 * right after a call that failed, on the same thread.
 */
final class Native {

    /** The functions. Public only because jnr-ffi implements it from outside this package. */
    public interface Functions {
        /** getrlimit(2) into {@code limit}: the soft limit, then the hard one. */
        int getrlimit(int resource, @Out long[] limit);

        int openat(int dirfd, @In byte[] path, int flags, int mode);

        long syscall(long number, int dirfd, @In byte[] path, Pointer how, long size);

        long syscall(long number, long pid, int flags);

        /** listxattrat(2) (no libc wrapper): dirfd, name, at_flags, then the list's buffer and size. */
        long syscall(long number, int dirfd, @In byte[] path, int atFlags, @Out byte[] list, long size);

        int close(int fd);

        long pread(int fd, long buf, long count, long offset);

        long pwrite(int fd, long buf, long count, long offset);

        int ftruncate(int fd, long length);

        int fallocate(int fd, int mode, long offset, long length);

        int fsync(int fd);

        int fdatasync(int fd);

        int syncfs(int fd);

        long getdents64(int fd, Pointer buf, long count);

        int statx(int dirfd, @In byte[] path, int flags, int mask, Pointer buf);

        int mkdirat(int dirfd, @In byte[] path, int mode);

        int unlinkat(int dirfd, @In byte[] path, int flags);

        int renameat2(int olddirfd, @In byte[] oldpath, int newdirfd, @In byte[] newpath, int flags);

        int linkat(int olddirfd, @In byte[] oldpath, int newdirfd, @In byte[] newpath, int flags);

        long readlinkat(int dirfd, @In byte[] path, Pointer buf, long size);

        int fchmodat(int dirfd, @In byte[] path, int mode, int flags);

        long copy_file_range(int fdIn, Pointer offIn, int fdOut, Pointer offOut, long len, int flags);

        int utimensat(int dirfd, @In byte[] path, Pointer times, int flags);

        int futimens(int fd, Pointer times);

        int fchmod(int fd, int mode);

        int fchown(int fd, int owner, int group);

        int fchownat(int dirfd, @In byte[] path, int owner, int group, int flags);

        int inotify_init1(int flags);

        int inotify_add_watch(int fd, @In byte[] path, int mask);

        int inotify_rm_watch(int fd, int wd);

        long read(int fd, Pointer buf, long count);

        int fstatfs(int fd, Pointer buf);

        int poll(Pointer fds, long nfds, int timeout);

        int symlinkat(@In byte[] target, int dirfd, @In byte[] linkpath);

        int mknodat(int dirfd, @In byte[] path, int mode, long dev);

        /** fcntl(2) with a struct flock argument (the lock commands); variadic in C, a pointer in its one register here. */
        int fcntl(int fd, int cmd, Pointer lock);

        int flock(int fd, int operation);

        long lseek(int fd, long offset, int whence);

        long getxattr(@In byte[] path, @In byte[] name, @Out byte[] value, long size);

        long listxattr(@In byte[] path, @Out byte[] list, long size);

        int setxattr(@In byte[] path, @In byte[] name, @In byte[] value, long size, int flags);

        int removexattr(@In byte[] path, @In byte[] name);

        int open(@In byte[] path, int flags, int mode);

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

    static final Functions C = LibraryLoader.create(Functions.class).load("c");
    static final Runtime RUNTIME = Runtime.getRuntime(C);

    private Native() {
    }

    /** errno of this thread's last failed call. */
    static int errno() {
        return LastError.getLastError(RUNTIME);
    }
}
