package dev.chibifs.fuse;

import com.kenai.jffi.MemoryIO;
import jnr.ffi.LibraryLoader;
import jnr.ffi.Pointer;
import jnr.ffi.Runtime;
import jnr.ffi.annotations.Delegate;
import jnr.ffi.annotations.IgnoreError;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.List;

/**
 * Watches libfuse's replies on their way to the kernel, for the one thing the high-level API
 * never tells a file system: which node id it gave a name. Entry replies (lookup, link, create,
 * mknod) carry it beside the file's store inode, so {@link KernelInodes} learns every kernel
 * inode that shows a file, not only those that later reach a callback. It also writes what libfuse
 * 2 has no field for: FOPEN_CACHE_DIR in an opendir's reply where the store is followed, and timeouts
 * per reply, so that names and attributes in a directory whose changes are not followed keep
 * libfuse's 1 s under a mount's long ones, and INIT flags libfuse 2.9 does not know ({@link #agree}).
 * Where listings carry attributes ({@link DirectoryPlus}), it offers READDIRPLUS in the INIT reply,
 * widens libfuse's plain listings into READDIRPLUS replies, and tells every entry reply's node id.
 *
 * <p>libfuse 2.9 sends every reply through its channel's {@code op.send}; we put ours in its
 * place and write the reply to /dev/fuse ourselves, as libfuse's own {@code fuse_kern_chan_send}
 * does (writev; ENOENT means the request was interrupted and is not an error). Only while a
 * request about a file with several links is in flight: only such a file's names need their node
 * ids, the getattr behind every entry reply sees the link count first, and a call into Java for
 * every reply cost about 0.5 us (git links every object it writes, so "once a hard link was seen"
 * would have been always); and while an opendir whose listing the kernel may keep, or a request
 * whose reply is to be kept brief, is. The channel's
 * layout ({@code struct fuse_chan} begins with {@code struct fuse_chan_ops}: receive, send,
 * destroy) is libfuse 2.9's, the last 2.x series.
 */
final class ReplyWatch {

    private static final Logger LOG = LoggerFactory.getLogger(ReplyWatch.class);

    private static final int S_IFMT = 0170000;
    private static final int S_IFREG = 0100000;
    private static final int ENOENT = 2;
    /** fuse_open_out's open_flags (linux/fuse.h): keep the pages at open; cache the listing (Linux 4.20). */
    private static final int FOPEN_KEEP_CACHE = 1 << 1;
    private static final int FOPEN_CACHE_DIR = 1 << 3;
    /**
     * fuse_init_out's flag (linux/fuse.h, Linux 4.9) for "the file system clears set-user-ID and
     * set-group-ID bits itself": see {@link #agree}.
     */
    static final int FUSE_HANDLE_KILLPRIV = 1 << 19;
    /** fuse_init_out's flag (Linux 4.7) for "lookups and listings of one directory may run at once": see {@link #agree}. */
    static final int FUSE_PARALLEL_DIROPS = 1 << 18;
    /** fuse_init_out's flag (Linux 3.9) for "send READDIRPLUS": see {@link DirectoryPlus}. */
    static final int FUSE_DO_READDIRPLUS = 1 << 13;
    /** fuse_init_out's flag (Linux 4.20) for "read max_pages": see {@link #agree}. */
    static final int FUSE_MAX_PAGES = 1 << 22;
    /** The kernel's own limit on a request's pages without FUSE_MAX_PAGES (FUSE_DEFAULT_MAX_PAGES_PER_REQ). */
    private static final int DEFAULT_MAX_PAGES = 32;
    /** fuse_init_out up to max_pages and map_alignment: what a reply must reach for the kernel to read max_pages. */
    static final int INIT_OUT_WITH_MAX_PAGES = 32;
    /** What {@link #agree} needs to send a longer INIT reply: two iovecs, fuse_out_header, fuse_init_out. */
    static final int INIT_REPLY_BYTES = 2 * 16 + 16 + INIT_OUT_WITH_MAX_PAGES;
    private static final int PAGE = 4096;
    private static final MemoryIO MEMORY = MemoryIO.getInstance();

    /** libfuse's channel send: {@code int (*send)(struct fuse_chan *ch, const struct iovec iov[], size_t count)}. */
    public interface Send {
        // addresses, not Pointers: this runs for every reply, and a Pointer is an object per argument
        @Delegate
        int send(long channel, long iov, long count);
    }

    /** What the replacement send needs from libfuse and libc. */
    public interface Lib {
        @IgnoreError
        long fuse_chan_bufsize(Pointer channel);

        long writev(int fd, long iov, int count);

        long write(int fd, long buf, long count);
    }

    private final Lib lib;
    private final Pointer channel;
    private final KernelInodes kernelInodes;
    private final int fd;
    /** Held: the closure must outlive the channel, or the kernel's next reply calls freed code. */
    private final Send send = this::send;
    /** Where the channel keeps its send function (struct fuse_chan_ops: receive, send, destroy). */
    private final long sendSlot;
    private final long libfuseSend;
    private final long watchingSend;
    /** Requests in flight that need their reply watched; guarded by {@code this}. */
    private int needing;
    /** Room for an INIT reply longer than libfuse's own ({@link #agree}); written by the one thread serving INIT. */
    private final long initReply = MEMORY.allocateMemory(INIT_REPLY_BYTES, true);
    /** Widens listings into READDIRPLUS replies; null where listings go out plain (set before INIT). */
    private volatile DirectoryPlus plus;

    private ReplyWatch(Lib lib, Pointer channel, int fd, KernelInodes kernelInodes) {
        this.lib = lib;
        this.kernelInodes = kernelInodes;
        this.channel = channel;
        this.fd = fd;
        this.sendSlot = channel.address() + Runtime.getSystemRuntime().addressSize();
        this.libfuseSend = MEMORY.getAddress(sendSlot);
        this.watchingSend = Runtime.getSystemRuntime().getClosureManager().getClosurePointer(Send.class, send).address();
    }

    /**
     * A watch for the channel, whose /dev/fuse descriptor is {@code fd} (libfuse's fuse_chan_fd), not
     * yet in its send slot ({@link #acquire}); to be kept reachable while mounted. Null when the
     * channel does not have libfuse 2.9's layout (then names a lookup gave the kernel catch up within
     * attr_timeout, as before the watch).
     */
    static ReplyWatch prepare(Pointer channel, int fd, KernelInodes kernelInodes) {
        Lib lib;
        try {
            lib = LibraryLoader.create(Lib.class).failImmediately().library("fuse").library("c").load();
        } catch (LinkageError | RuntimeException e) {
            lib = LibraryLoader.create(Lib.class).failImmediately().library("libfuse.so.2").library("c").load();
        }
        // struct fuse_chan { struct fuse_chan_ops op (3 pointers); struct fuse_session *se; int fd; ... }
        long fdOffset = 4L * Runtime.getSystemRuntime().addressSize();
        if (fd < 0 || channel.getInt(fdOffset) != fd) {
            LOG.warn("libfuse's channel is not laid out as in libfuse 2.9: link counts through names only looked up"
                    + " catch up within attr_timeout");
            return null;
        }
        return new ReplyWatch(lib, channel, fd, kernelInodes);
    }

    /**
     * Makes libfuse read requests into buffers of {@code bytes} (before the first request, INIT, is
     * read). libfuse 2.9 sizes them for 128 KiB writes and has no option for more; with room for
     * more, it offers the kernel the mount's max_write, up to the buffer less a page, and the INIT
     * reply asks for the pages that takes ({@link #agree}). False, and nothing changed, where the
     * channel is not laid out as libfuse 2.9's: writes then stay at 128 KiB.
     */
    boolean widen(long bytes) {
        // struct fuse_chan { struct fuse_chan_ops op; struct fuse_session *se; int fd; size_t bufsize; ... }
        long offset = 5L * Runtime.getSystemRuntime().addressSize();
        long now = lib.fuse_chan_bufsize(channel);
        if (now <= 0 || channel.getLong(offset) != now) {
            return false;
        }
        if (bytes > now) {
            channel.putLong(offset, bytes);
        }
        return lib.fuse_chan_bufsize(channel) == Math.max(bytes, now);
    }

    /** From INIT on, offers the kernel READDIRPLUS and widens listings with {@code plus}; null: plain listings. */
    void listWith(DirectoryPlus plus) {
        this.plus = plus;
    }

    /**
     * A request is about to send an entry reply worth learning: from now until its {@link #release},
     * every reply passes through the watch. The slot is one aligned pointer, so a worker sending at
     * the moment it changes uses either libfuse's send or ours, and both write the reply.
     */
    synchronized void acquire() {
        if (needing++ == 0) {
            MEMORY.putAddress(sendSlot, watchingSend);
        }
    }

    /** The request that {@link #acquire}d has sent its reply; the last one out puts libfuse's send back. */
    synchronized void release() {
        if (--needing == 0) {
            MEMORY.putAddress(sendSlot, libfuseSend);
        }
    }

    private int send(long channel, long iov, long count) {
        try {
            if (iov == 0) {
                return 0;
            }
            if (count >= 2) {
                if (FuseLoop.currentOpcode() == FuseLoop.INIT) {
                    iov = agree(iov, FuseLoop.kernelCan(), initReply, plus != null ? FUSE_DO_READDIRPLUS : 0);
                } else if (FuseLoop.listingPlus() && MEMORY.getLong(MEMORY.getAddress(iov) + 8) != 0) {
                    // (a notification the listing's attributes led to has no unique: it goes as it is)
                    return sendWidened(iov);
                } else {
                    learn(iov);
                }
            }
            DirectoryPlus listing = plus;
            long[] entry = listing != null && count >= 2 ? entry(iov) : null;
            long departures = entry != null ? listing.departuresSoFar() : 0;
            long n = lib.writev(fd, iov, (int) count);
            if (n < 0) {
                return writeFailed("a reply");
            }
            if (entry != null) {
                // only now: libfuse forgets the node of an entry reply the kernel did not take
                listing.learn(FuseLoop.currentNodeid(), FuseLoop.entryName(), entry[0], entry[1], departures);
            }
            return 0;
        } catch (Throwable t) {
            // nothing may escape into libfuse; a reply that could not be written is the kernel's EIO
            LOG.error("sending a FUSE reply failed unexpectedly", t);
            return -5;
        }
    }

    /**
     * libfuse's plain READDIR reply to what was a READDIRPLUS: the kernel reads READDIRPLUS entries
     * ({@link DirectoryPlus#widen}), written here into a buffer of the room it gave.
     */
    private int sendWidened(long iov) {
        long header = MEMORY.getAddress(iov);
        int room = FuseLoop.plusRoom();
        List<Long> nodes = FuseLoop.plusNodes();
        long reply = MEMORY.allocateMemory(16 + room + StatLayout.BYTES, false);
        try {
            MEMORY.copyMemory(header, reply, 16);
            int widened = 0;
            try {
                int length = MEMORY.getInt(header + 4) != 0 ? 0 : (int) MEMORY.getLong(iov + 24);
                widened = length == 0 ? 0 : plus.widen(FuseLoop.currentNodeid(), FuseLoop.plusHandle(),
                        MEMORY.getAddress(iov + 16), length, reply + 16, room, reply + 16 + room,
                        FuseLoop.plusSent(), nodes);
            } catch (RuntimeException | Error e) {
                // the kernel waits for an answer to this request whatever happens: it gets EIO
                LOG.error("widening a listing failed unexpectedly", e);
                MEMORY.putInt(reply + 4, -5);
                widened = 0;
            }
            MEMORY.putInt(reply, 16 + widened); // fuse_out_header.len
            long n = lib.write(fd, reply, 16 + widened);
            if (n < 0 || MEMORY.getInt(reply + 4) != 0) {
                // the kernel took none of the entries: their lookups are not in it
                nodes.forEach(plus::ungrant);
                nodes.clear();
            }
            return n < 0 ? writeFailed("a listing") : 0;
        } finally {
            MEMORY.freeMemory(reply);
        }
    }

    /** A write of {@code what} to /dev/fuse failed: -errno for libfuse; ENOENT means the request was interrupted, not an error. */
    private int writeFailed(String what) {
        int err = Runtime.getRuntime(lib).getLastError();
        if (err != ENOENT) {
            LOG.warn("writing {} to /dev/fuse failed: errno {}", what, err);
        }
        return -err;
    }

    /** For a successful entry reply of a request that names its entry: {node id, generation}; else null. */
    private static long[] entry(long iov) {
        if (!FuseLoop.namesEntry()) {
            return null;
        }
        long header = MEMORY.getAddress(iov);
        if (MEMORY.getInt(header + 4) != 0 || MEMORY.getLong(header + 8) == 0 || MEMORY.getLong(iov + 24) < 16) {
            return null;
        }
        long arg = MEMORY.getAddress(iov + 16);
        long nodeid = MEMORY.getLong(arg);
        return nodeid == 0 ? null : new long[] {nodeid, MEMORY.getLong(arg + 8)};
    }

    /**
     * A reply worth a look: an entry reply for a regular file (the node id the kernel will use for
     * it, and its store inode), an opendir's, which may let the kernel keep the listing, and any
     * entry or attribute reply that is to keep libfuse's 1 s ({@link FuseLoop#entryBrief},
     * {@link FuseLoop#attributesBrief}).
     */
    private void learn(long iov) {
        int op = FuseLoop.currentOpcode();
        if (op == FuseLoop.OPENDIR) {
            keepListing(iov);
            return;
        }
        boolean entryReply = op == FuseLoop.LOOKUP || op == FuseLoop.LINK || op == FuseLoop.CREATE
                || op == FuseLoop.MKNOD || op == FuseLoop.MKDIR;
        if (!entryReply && op != FuseLoop.GETATTR && op != FuseLoop.SETATTR) {
            return;
        }
        // struct iovec { void *iov_base; size_t iov_len; }[count]
        // iov[0]: struct fuse_out_header {u32 len; s32 error; u64 unique}; iov[1]: the reply's argument
        long header = MEMORY.getAddress(iov);
        if (MEMORY.getInt(header + 4) != 0 || MEMORY.getLong(header + 8) == 0) {
            return; // an error, or a notification of ours
        }
        long arg = MEMORY.getAddress(iov + 16);
        if (!entryReply) {
            if (FuseLoop.attributesBrief()) {
                // struct fuse_attr_out { u64 attr_valid; u32 attr_valid_nsec; u32 dummy; struct fuse_attr attr; }
                brief(arg, arg + 8);
            }
            return;
        }
        // fuse_entry_out: nodeid, generation, entry_valid, attr_valid, 2 x u32 nsec, then fuse_attr (ino first, mode at +60)
        long nodeid = MEMORY.getLong(arg);
        if (FuseLoop.entryBrief()) {
            if (nodeid == 0) {
                // a missing name (libfuse's negative_timeout): not cached at all, as libfuse's default
                MEMORY.putLong(arg + 16, 0);
                MEMORY.putInt(arg + 32, 0);
            } else {
                brief(arg + 16, arg + 32);
            }
        }
        if (FuseLoop.attributesBrief() && nodeid != 0) {
            brief(arg + 24, arg + 36);
        }
        long inode = MEMORY.getLong(arg + 40);
        int mode = MEMORY.getInt(arg + 100);
        if (nodeid != 0 && (mode & S_IFMT) == S_IFREG) {
            kernelInodes.seen(inode, nodeid);
        }
    }

    /**
     * The INIT reply: adds what libfuse 2.9 has no capability for, where the kernel {@code can}.
     * <ul>
     * <li>FUSE_HANDLE_KILLPRIV: before every chown(2) of a file, a kernel without it sends a GETATTR
     * to learn whether set-user-ID or set-group-ID bits are to be cleared. chibifs shows neither
     * ({@link AttributeView}: mode bits come from the policy), so there is never one to clear, and
     * the round trip went to waste: one per file that {@code tar} or {@code cp -a} extracts as root.
     * Writes and truncations are unaffected (the kernel clears such bits by the mode it caches).
     * <li>FUSE_PARALLEL_DIROPS: without it the kernel lets one LOOKUP or READDIR per directory reach
     * the daemon at a time, so parallel programs (git's preload threads, {@code xargs -P}) queued
     * behind each other in a shared directory. libfuse's high-level API is safe with it (libfuse 3
     * turns it on by default with the same path table and locks), and so is chibifs: each listing
     * reads the store through a descriptor of its own.
     * <li>FUSE_MAX_PAGES: where libfuse offers writes over 128 KiB ({@link #widen}), the kernel
     * still cuts them at 32 pages unless told how many a request may carry, in a field past the end of
     * libfuse's fuse_init_out. The reply is then written from {@code room} ({@link #INIT_REPLY_BYTES}),
     * a copy long enough to carry it: a 1 MiB write(2) is one request instead of eight.
     * </ul>
     * Returns the iovec array to send: {@code iov}, changed in place, or one in {@code room}.
     */
    static long agree(long iov, int can, long room) {
        return agree(iov, can, room, 0);
    }

    /**
     * {@link #agree(long, int, long)}, adding the flags in {@code also} too where the kernel can:
     * FUSE_DO_READDIRPLUS where listings carry attributes ({@link DirectoryPlus}), always, not only
     * after lookups (READDIRPLUS_AUTO).
     */
    static long agree(long iov, int can, long room, int also) {
        long header = MEMORY.getAddress(iov);
        long length = MEMORY.getLong(iov + 24);
        // an error carries no fuse_init_out; one shorter than libfuse 2.9's 24 bytes is not one we know
        if (MEMORY.getInt(header + 4) != 0 || length < 24) {
            return iov;
        }
        // struct fuse_init_out { u32 major, minor, max_readahead, flags; u16 max_background, congestion_threshold;
        //                        u32 max_write, time_gran; u16 max_pages, map_alignment; ... }
        long out = MEMORY.getAddress(iov + 16);
        MEMORY.putInt(out + 12, MEMORY.getInt(out + 12) | (can & (FUSE_HANDLE_KILLPRIV | FUSE_PARALLEL_DIROPS | also)));
        int pages = (int) ((MEMORY.getInt(out + 20) & 0xffffffffL) / PAGE);
        if (pages <= DEFAULT_MAX_PAGES || (can & FUSE_MAX_PAGES) == 0 || length >= INIT_OUT_WITH_MAX_PAGES) {
            return iov; // nothing to ask for, no kernel to ask, or a reply (not libfuse 2.9's) we would not lengthen
        }
        long copyIov = room;
        long copyHeader = room + 32;
        long copyOut = copyHeader + 16;
        MEMORY.copyMemory(header, copyHeader, 16);
        MEMORY.setMemory(copyOut, INIT_OUT_WITH_MAX_PAGES, (byte) 0);
        MEMORY.copyMemory(out, copyOut, length);
        MEMORY.putInt(copyOut + 12, MEMORY.getInt(copyOut + 12) | FUSE_MAX_PAGES);
        MEMORY.putShort(copyOut + 28, (short) Math.min(pages, 0xffff));
        MEMORY.putInt(copyHeader, 16 + INIT_OUT_WITH_MAX_PAGES); // fuse_out_header.len: the whole reply
        MEMORY.putAddress(copyIov, copyHeader);
        MEMORY.putLong(copyIov + 8, 16);
        MEMORY.putAddress(copyIov + 16, copyOut);
        MEMORY.putLong(copyIov + 24, INIT_OUT_WITH_MAX_PAGES);
        return copyIov;
    }

    /** Cuts the timeout at {@code seconds}/{@code nanos} to libfuse's default of 1 s, if it is longer. */
    private static void brief(long seconds, long nanos) {
        if (MEMORY.getLong(seconds) >= 1) {
            MEMORY.putLong(seconds, 1);
            MEMORY.putInt(nanos, 0);
        }
    }

    /** An opendir's reply, when {@link FuseLoop#cachingListing}: the kernel keeps the listing it reads. */
    private static void keepListing(long iov) {
        long header = MEMORY.getAddress(iov);
        if (!FuseLoop.cachingListing() || MEMORY.getInt(header + 4) != 0 || MEMORY.getLong(header + 8) == 0) {
            return;
        }
        // iov[1]: struct fuse_open_out { u64 fh; u32 open_flags; u32 padding; }
        long open = MEMORY.getAddress(iov + 16);
        MEMORY.putInt(open + 8, MEMORY.getInt(open + 8) | FOPEN_KEEP_CACHE | FOPEN_CACHE_DIR);
    }
}
