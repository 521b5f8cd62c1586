package dev.chibifs.fuse;

import jnr.ffi.LibraryLoader;
import jnr.ffi.Runtime;
import jnr.ffi.annotations.In;
import jnr.ffi.types.size_t;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Sends the entry notification libfuse 2 cannot: FUSE_NOTIFY_INVAL_ENTRY with FUSE_EXPIRE_ONLY
 * (Linux 6.2), which marks a name stale (the next walk through it looks it up again) without
 * unhashing its dentry. libfuse 2's {@code fuse_lowlevel_notify_inval_entry} always unhashes it,
 * and an unhashed directory breaks {@code getcwd} of every process inside it (git's "unable to get
 * current working directory") until the name is looked up again; a store change to a directory an
 * agent works in is an everyday thing. The kernel reads the flag from what was padding before
 * 6.2 and checks no protocol version for it, so an older kernel takes the same message as
 * libfuse's own: a full invalidation ({@link #kernelExpiresOnly} says which the mount gets).
 */
final class EntryExpiry {

    /** fuse_notify_code (linux/fuse.h). */
    private static final int FUSE_NOTIFY_INVAL_ENTRY = 3;
    /** fuse_notify_inval_entry_out's flags (linux/fuse.h, protocol 7.38). */
    private static final int FUSE_EXPIRE_ONLY = 1;
    private static final Pattern RELEASE = Pattern.compile("(\\d+)\\.(\\d+).*");

    /** What the notification needs from libc. */
    public interface Libc {
        long write(int fd, @In byte[] buffer, @size_t long count);
    }

    private static final Libc LIBC = LibraryLoader.create(Libc.class).load("c");

    private final int fd;

    private EntryExpiry(int fd) {
        this.fd = fd;
    }

    /** An expiry written to the mounted session's /dev/fuse descriptor {@code fd}; null when there is none (negative). */
    static EntryExpiry on(int fd) {
        return fd < 0 ? null : new EntryExpiry(fd);
    }

    /** Whether this kernel honours FUSE_EXPIRE_ONLY (Linux 6.2 and later). */
    static boolean kernelExpiresOnly() {
        return expiresOnly(System.getProperty("os.version", ""));
    }

    /** Whether a kernel of release {@code release} ({@code uname -r}) honours FUSE_EXPIRE_ONLY. */
    static boolean expiresOnly(String release) {
        Matcher m = RELEASE.matcher(release);
        if (!m.matches()) {
            return false;
        }
        int major = Integer.parseInt(m.group(1));
        int minor = Integer.parseInt(m.group(2));
        return major > 6 || major == 6 && minor >= 2;
    }

    /**
     * Marks {@code name} in the directory of node id {@code parent} stale, and the directory's
     * attributes with it; 0, or -errno (-ENOENT: the kernel has no such directory or name cached).
     */
    int expire(long parent, byte[] name) {
        // struct fuse_out_header { u32 len; s32 error (the notify code); u64 unique (0: a notification) }
        // struct fuse_notify_inval_entry_out { u64 parent; u32 namelen; u32 flags }, then the name and a NUL
        int length = 16 + 16 + name.length + 1;
        ByteBuffer message = ByteBuffer.allocate(length).order(ByteOrder.nativeOrder());
        message.putInt(length).putInt(FUSE_NOTIFY_INVAL_ENTRY).putLong(0);
        message.putLong(parent).putInt(name.length).putInt(FUSE_EXPIRE_ONLY);
        message.put(name).put((byte) 0);
        // one write: /dev/fuse takes a message whole or not at all
        long n = LIBC.write(fd, message.array(), length);
        return n < 0 ? -Runtime.getRuntime(LIBC).getLastError() : 0;
    }
}
