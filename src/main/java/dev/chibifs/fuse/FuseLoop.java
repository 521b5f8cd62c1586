package dev.chibifs.fuse;

import jnr.ffi.LibraryLoader;
import com.kenai.jffi.MemoryIO;
import jnr.ffi.Pointer;
import jnr.ffi.Struct;
import jnr.ffi.annotations.IgnoreError;
import jnr.ffi.annotations.In;
import jnr.ffi.byref.IntByReference;
import jnr.ffi.byref.PointerByReference;
import jnr.ffi.types.size_t;
import dev.chibifs.path.VfsPath;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import ru.serce.jnrfuse.struct.FuseOperations;

import java.lang.ref.Reference;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * libfuse 2.9's request loop, run on Java threads instead of libfuse's own pthreads. jffi 1.3.13
 * attaches a native thread to the JVM around each callback and detaches it afterwards (until the
 * thread has made many calls), and libfuse's pool starts new pthreads whenever requests arrive
 * together: each of those requests started and ended a java.lang.Thread. Callbacks on threads the
 * JVM already knows skip that. This is {@code fuse_main_real}'s setup, loop and teardown, with our threads.
 */
final class FuseLoop {

    private static final Logger LOG = LoggerFactory.getLogger(FuseLoop.class);
    private static final MemoryIO MEMORY = MemoryIO.getInstance();

    /** The largest write the mount offers the kernel (its own 132 KiB buffers allowed libfuse 128 KiB). */
    static final int MAX_WRITE = 1 << 20;
    /** Bytes libfuse reads each request into: libfuse offers writes up to this less a page, for the headers. */
    static final long REQUEST_BUFFER = MAX_WRITE + 4096;

    /** Workers reading /dev/fuse; libfuse's own loop keeps up to 10 idle ones. */
    static final int WORKERS = 8;

    /** The parts of libfuse 2.9's high-level API that fuse_main_real is built from. */
    public interface LibFuseLoop {
        Pointer fuse_setup(int argc, String[] argv, FuseOperations op, @size_t long opSize,
                           PointerByReference mountpoint, IntByReference multithreaded, Pointer userData);

        // the loop's three calls take and return plain addresses: a jnr Pointer per argument and
        // result was most of what the daemon allocated per request

        /** Blocks on /dev/fuse; 0 on EINTR, on error and once the session has exited. */
        @IgnoreError
        long fuse_read_cmd(long fuse);

        /** Processes the request (our callbacks run here) and frees it. */
        @IgnoreError
        void fuse_process_cmd(long fuse, long cmd);

        @IgnoreError
        int fuse_exited(long fuse);

        void fuse_exit(Pointer fuse);

        /** Unmounts (if still mounted), calls destroy, frees everything, including the mountpoint string. */
        void fuse_teardown(Pointer fuse, Pointer mountpoint);

        @IgnoreError
        Pointer fuse_get_session(Pointer fuse);

        @IgnoreError
        Pointer fuse_session_next_chan(Pointer session, Pointer previous);

        /** The channel's /dev/fuse descriptor; -1 when it has none. */
        @IgnoreError
        int fuse_chan_fd(Pointer channel);

        /** FUSE_NOTIFY_INVAL_INODE; a negative {@code offset} drops attributes only, no pages. */
        @IgnoreError
        int fuse_lowlevel_notify_inval_inode(Pointer channel, long nodeid, long offset, long length);

        /** FUSE_NOTIFY_INVAL_ENTRY: the kernel forgets {@code name} in directory {@code parent} (and the directory's attributes). */
        @IgnoreError
        int fuse_lowlevel_notify_inval_entry(Pointer channel, long parent, @In byte[] name, @size_t long length);
    }

    /** fuse_in_header's opcodes that {@link #currentOpcode} callers care about (linux/fuse.h). */
    static final int LOOKUP = 1;
    static final int FORGET = 2;
    static final int GETATTR = 3;
    static final int SETATTR = 4;
    static final int MKNOD = 8;
    static final int MKDIR = 9;
    static final int LINK = 13;
    static final int OPEN = 14;
    static final int INIT = 26;
    static final int OPENDIR = 27;
    static final int READDIR = 28;
    static final int CREATE = 35;
    static final int BATCH_FORGET = 42;
    static final int UNLINK = 10;
    static final int RMDIR = 11;
    static final int RENAME = 12;
    static final int RELEASEDIR = 29;
    static final int READDIRPLUS = 44;
    static final int RENAME2 = 45;

    /**
     * A worker: it knows the request it is serving, which libfuse's high-level callbacks do not
     * tell (the opcode behind a getattr callback, the kernel's node id).
     */
    private static final class Worker extends Thread {
        final ReplyWatch watch;
        /** Null where listings go out plain. */
        final DirectoryPlus plus;
        int opcode = -1;
        long nodeid;
        long linkSource;
        boolean watchingReply;
        /** The opendir this thread serves may let the kernel keep the listing (see {@link ReplyWatch}). */
        boolean cacheListing;
        /** The reply of the request this thread serves keeps libfuse's 1 s entry timeout (see {@link ReplyWatch}). */
        boolean briefEntry;
        /** The reply of the request this thread serves keeps libfuse's 1 s attribute timeout. */
        boolean briefAttributes;
        /** The name a lookup on this thread is about, once its callback has parsed it. */
        VfsPath lookup;
        /** For the INIT request on this thread, the flags of what the kernel can do (fuse_init_in's). */
        int kernelCan;
        /** The request this thread serves is a READDIRPLUS, which libfuse serves as a READDIR ({@link DirectoryPlus}). */
        boolean listingPlus;
        /** For a READDIRPLUS: libfuse's directory handle, and the room the kernel gave for the reply. */
        long plusHandle;
        int plusRoom;
        /** For a READDIRPLUS: the names whose entries went out with a node, and their node ids. */
        final List<VfsPath> plusSent = new ArrayList<>();
        final List<Long> plusNodes = new ArrayList<>();
        /** Where the name in an entry request (lookup, create, ...) is, in the request buffer; 0 for none. */
        long entryName;

        Worker(Runnable work, String name, ReplyWatch watch, DirectoryPlus plus) {
            super(work, name);
            this.watch = watch;
            this.plus = plus;
        }
    }

    /**
     * The request this thread serves will reply with an entry for a file with several links: its
     * reply, and any other sent meanwhile, passes through the reply watch (once per request).
     */
    static void watchThisReply() {
        if (Thread.currentThread() instanceof Worker w && w.watch != null && !w.watchingReply) {
            w.watchingReply = true;
            w.watch.acquire();
        }
    }

    /**
     * The opendir this thread serves is of a directory whose changes are followed: its reply tells
     * the kernel to keep the listing it reads (FOPEN_CACHE_DIR, FOPEN_KEEP_CACHE), which libfuse
     * 2's struct fuse_file_info has no bits for, so the reply watch sets them.
     */
    static void cacheThisListing() {
        if (Thread.currentThread() instanceof Worker w && w.watch != null) {
            w.cacheListing = true;
            watchThisReply();
        }
    }

    /**
     * The reply of the request this thread serves is about a directory whose changes are not
     * followed ({@link KernelEntries#brief}): the reply watch cuts its entry and attribute timeouts
     * to libfuse's 1 s (and a missing name's to none), whatever the mount's timeouts are.
     */
    static void keepThisReplyBrief() {
        if (Thread.currentThread() instanceof Worker w && w.watch != null) {
            w.briefEntry = true;
            w.briefAttributes = true;
            watchThisReply();
        }
    }

    /**
     * The reply of the request this thread serves carries the attributes of a directory that is not
     * followed itself (its name is: its parent is): the reply watch cuts their timeout to 1 s.
     */
    static void keepItsAttributesBrief() {
        if (Thread.currentThread() instanceof Worker w && w.watch != null) {
            w.briefAttributes = true;
            watchThisReply();
        }
    }

    /** Whether the reply of the request this thread serves is to keep libfuse's 1 s entry timeout. */
    static boolean entryBrief() {
        return Thread.currentThread() instanceof Worker w && w.briefEntry;
    }

    /** Whether the reply of the request this thread serves is to keep libfuse's 1 s attribute timeout. */
    static boolean attributesBrief() {
        return Thread.currentThread() instanceof Worker w && w.briefAttributes;
    }

    /** Whether the request this thread serves is an opendir whose listing the kernel may keep. */
    static boolean cachingListing() {
        return Thread.currentThread() instanceof Worker w && w.cacheListing;
    }

    /** The opcode of the request this thread is serving, or -1 outside a request. */
    static int currentOpcode() {
        return Thread.currentThread() instanceof Worker w ? w.opcode : -1;
    }

    /** The lookup this thread serves is of {@code path} (see {@link KernelEntries#lookedUp}). */
    static void lookingUp(VfsPath path) {
        if (Thread.currentThread() instanceof Worker w) {
            w.lookup = path;
        }
    }

    /** The kernel node id in the request this thread is serving (0 outside a request). */
    static long currentNodeid() {
        return Thread.currentThread() instanceof Worker w ? w.nodeid : 0;
    }

    /** Whether the request this thread serves is a READDIRPLUS, whose reply {@link ReplyWatch} widens. */
    static boolean listingPlus() {
        return Thread.currentThread() instanceof Worker w && w.listingPlus;
    }

    /** For a READDIRPLUS on this thread: libfuse's directory handle. */
    static long plusHandle() {
        return Thread.currentThread() instanceof Worker w ? w.plusHandle : 0;
    }

    /** For a READDIRPLUS on this thread: the bytes the kernel has room for. */
    static int plusRoom() {
        return Thread.currentThread() instanceof Worker w ? w.plusRoom : 0;
    }

    /** For a READDIRPLUS on this thread: where to note the names that went out with a node. */
    static List<VfsPath> plusSent() {
        return Thread.currentThread() instanceof Worker w ? w.plusSent : new ArrayList<>();
    }

    /** For a READDIRPLUS on this thread: where to note the node ids that went out. */
    static List<Long> plusNodes() {
        return Thread.currentThread() instanceof Worker w ? w.plusNodes : new ArrayList<>();
    }

    /** libfuse is filling a listing of {@code path} on this thread: for a READDIRPLUS, its handle's path. */
    static void listing(String path) {
        if (Thread.currentThread() instanceof Worker w && w.listingPlus) {
            w.plus.listing(w.plusHandle, VfsPath.of(path));
        }
    }

    /** Whether the request this thread serves names an entry (lookup, create, mkdir, ...) whose node is to be learned. */
    static boolean namesEntry() {
        return Thread.currentThread() instanceof Worker w && w.entryName != 0;
    }

    /** The name an entry request on this thread (lookup, create, mkdir, ...) is about; null for none. */
    static String entryName() {
        return Thread.currentThread() instanceof Worker w && w.entryName != 0 ? string(w.entryName) : null;
    }

    /**
     * Runs {@code reply}, which fills attributes, as for a GETATTR of kernel inode {@code nodeid}
     * ({@link ChibiFuse} keys its bookkeeping by the request), and returns the
     * {@link DirectoryPlus.Attributes} BRIEF bits it asked for.
     */
    static int asAttributeReply(long nodeid, Runnable reply) {
        if (!(Thread.currentThread() instanceof Worker w)) {
            reply.run();
            return 0;
        }
        int opcode = w.opcode;
        long node = w.nodeid;
        boolean entry = w.briefEntry;
        boolean attributes = w.briefAttributes;
        w.opcode = GETATTR;
        w.nodeid = nodeid;
        w.briefEntry = false;
        w.briefAttributes = false;
        try {
            reply.run();
            return (w.briefEntry ? DirectoryPlus.Attributes.BRIEF_ENTRY : 0)
                    | (w.briefAttributes ? DirectoryPlus.Attributes.BRIEF_ATTRIBUTES : 0);
        } finally {
            w.opcode = opcode;
            w.nodeid = node;
            w.briefEntry = entry;
            w.briefAttributes = attributes;
        }
    }

    /** A NUL-terminated name in a request buffer, as UTF-8. */
    private static String string(long address) {
        int n = 0;
        while (MEMORY.getByte(address + n) != 0) {
            n++;
        }
        byte[] bytes = new byte[n];
        MEMORY.getByteArray(address, bytes, 0, n);
        return new String(bytes, StandardCharsets.UTF_8);
    }

    /** For the INIT request on this thread, the kernel's fuse_init_in flags; 0 otherwise. */
    static int kernelCan() {
        return Thread.currentThread() instanceof Worker w ? w.kernelCan : 0;
    }

    /** For a link request on this thread, the node id of the name linked to; 0 otherwise. */
    static long currentLinkSource() {
        return Thread.currentThread() instanceof Worker w ? w.linkSource : 0;
    }

    private static LibFuseLoop load() {
        try {
            return LibraryLoader.create(LibFuseLoop.class).failImmediately().load("fuse");
        } catch (LinkageError | RuntimeException e) {
            return LibraryLoader.create(LibFuseLoop.class).failImmediately().load("libfuse.so.2");
        }
    }

    private final LibFuseLoop lib = load();
    private final Path mountpoint;
    private final FuseOperations operations;
    private final KernelInodes kernelInodes;
    private final KernelEntries kernelEntries;
    /** Null for plain listings; dropped where the reply watch cannot widen them. */
    private final DirectoryPlus directoryPlus;
    /** Set before this class ends the session itself: a worker that gets one more request stops after it. */
    private volatile boolean exiting;

    FuseLoop(Path mountpoint, FuseOperations operations, KernelInodes kernelInodes, KernelEntries kernelEntries,
             DirectoryPlus directoryPlus) {
        this.mountpoint = mountpoint;
        this.operations = operations;
        this.kernelInodes = kernelInodes;
        this.kernelEntries = kernelEntries;
        this.directoryPlus = directoryPlus;
    }

    /**
     * Mounts with {@code args} (libfuse's command line after the mountpoint), serves requests until
     * the mount goes away, then tears down. Returns 0 after a clean run, 1 when libfuse could not
     * mount (it has printed why).
     */
    int run(String fsName, String... args) {
        String[] argv = new String[args.length + 3];
        argv[0] = fsName;
        argv[1] = "-f";
        argv[2] = mountpoint.toAbsolutePath().toString();
        System.arraycopy(args, 0, argv, 3, args.length);
        PointerByReference mountpointString = new PointerByReference();
        // fuse_setup installs libfuse's signal handlers only where none is set: the JVM keeps its own
        Pointer fuse = lib.fuse_setup(argv.length, argv, operations, Struct.size(operations),
                mountpointString, new IntByReference(), null);
        if (fuse == null) {
            return 1;
        }
        Pointer channel = lib.fuse_session_next_chan(lib.fuse_get_session(fuse), null);
        int fd = lib.fuse_chan_fd(channel);
        ReplyWatch watch = ReplyWatch.prepare(channel, fd, kernelInodes);
        // the watch offers READDIRPLUS in the INIT reply and widens libfuse's listings: without it, none
        DirectoryPlus plus = watch != null ? directoryPlus : null;
        if (watch != null) {
            watch.listWith(plus);
        }
        if (watch != null && !watch.widen(REQUEST_BUFFER)) {
            LOG.info("libfuse's channel keeps its own request buffers: writes reach the daemon in pieces of 128 KiB");
        }
        kernelInodes.invalidateWith(nodeid -> lib.fuse_lowlevel_notify_inval_inode(channel, nodeid, -1, 0));
        // where the kernel can, a changed name is only marked stale: unhashing it would break getcwd inside it
        EntryExpiry expiry = EntryExpiry.kernelExpiresOnly() ? EntryExpiry.on(fd) : null;
        kernelEntries.notifyWith(new KernelEntries.Notifier() {
            @Override
            public int invalidateEntry(long parent, byte[] name) {
                return expiry != null ? expiry.expire(parent, name)
                        : lib.fuse_lowlevel_notify_inval_entry(channel, parent, name, name.length);
            }

            @Override
            public int invalidateDirectory(long nodeid) {
                // from offset 0: the pages a cached listing is kept in go too
                return lib.fuse_lowlevel_notify_inval_inode(channel, nodeid, 0, 0);
            }
        });
        // not in a finally: teardown frees what workers still running would use
        serve(fuse, watch, plus);
        // first: it waits for notifications in flight on other threads (the kernel inodes' too), which teardown would free under them
        kernelEntries.notifyWith(null);
        kernelInodes.invalidateWith(nodeid -> 0);
        lib.fuse_teardown(fuse, mountpointString.getValue());
        // libfuse called the watch until teardown sent its last reply
        Reference.reachabilityFence(watch);
        return 0;
    }

    private void serve(Pointer fuse, ReplyWatch watch, DirectoryPlus plus) {
        CountDownLatch firstEnded = new CountDownLatch(1);
        List<Thread> workers = new ArrayList<>();
        for (int i = 0; i < WORKERS; i++) {
            Thread w = new Worker(() -> {
                try {
                    work(fuse);
                } finally {
                    firstEnded.countDown();
                }
            }, "chibifs-fuse-" + i, watch, plus);
            w.setDaemon(true);
            workers.add(w);
            w.start();
        }
        awaitUninterruptibly(firstEnded::await);
        // An unmount wakes every reader with ENODEV. Only an exit for another reason (a read error)
        // leaves the others blocked in read(2): a lazy unmount then ends the connection for them.
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(2);
        for (Thread w : workers) {
            awaitUninterruptibly(() -> w.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime()))));
        }
        if (workers.stream().anyMatch(Thread::isAlive)) {
            exiting = true;
            lib.fuse_exit(fuse);
            Fusermount.unmount(mountpoint, true);
        }
        // teardown frees what the workers use: not before every one of them has left
        for (Thread w : workers) {
            awaitUninterruptibly(w::join);
        }
    }

    private void work(Pointer fuse) {
        Worker self = (Worker) Thread.currentThread();
        long session = fuse.address();
        // This loop never returns, so the JIT reaches its body only by on-stack replacement, which
        // counts turns: with the body here, that took tens of thousands of requests (4 s of
        // small-file rounds), and a deoptimization sent every worker back to the interpreter until
        // it came again. So the loop only reads; serve is compiled like any method, after a few
        // hundred requests.
        while (!exiting) {
            long cmd = lib.fuse_read_cmd(session);
            // no request: the session exited on a read error or unmount (or EINTR); only then ask libfuse,
            // rather than with a call per request
            if (cmd == 0) {
                if (lib.fuse_exited(session) != 0) {
                    break;
                }
            } else {
                serve(self, session, cmd);
            }
        }
    }

    /** One request, read from the kernel as {@code cmd}: handed to libfuse, which calls back and replies. */
    private void serve(Worker self, long session, long cmd) {
        try {
            // struct fuse_cmd starts with the request buffer: fuse_in_header {len, opcode, unique, nodeid, ...}
            long header = MEMORY.getAddress(cmd);
            self.opcode = MEMORY.getInt(header + 4);
            self.nodeid = MEMORY.getLong(header + 16);
            // struct fuse_link_in { u64 oldnodeid; } follows the 40-byte header
            self.linkSource = self.opcode == LINK ? MEMORY.getLong(header + 40) : 0;
            if (self.plus != null) {
                beforeLibfuse(self, header);
            }
            if (self.opcode == FORGET) {
                kernelInodes.forgotten(self.nodeid);
                if (self.plus != null) {
                    // struct fuse_forget_in { u64 nlookup; }: our lookups come out ({@link DirectoryPlus#forgetting})
                    MEMORY.putLong(header + 40, self.plus.forgetting(self.nodeid, MEMORY.getLong(header + 40)));
                }
            } else if (self.opcode == BATCH_FORGET) {
                forgotten(header, self.plus);
            }
            if (self.opcode == INIT) {
                // struct fuse_init_in { u32 major, minor, max_readahead, flags; ... }: the reply
                // watch answers with what libfuse 2.9 cannot ask for (see ReplyWatch#agree)
                self.kernelCan = MEMORY.getInt(header + 40 + 12);
                watchThisReply();
            }
            // read before the lookup or listing reads the store: see KernelEntries
            long changes = self.opcode == LOOKUP || self.opcode == READDIR ? kernelEntries.changesSeen() : 0;
            lib.fuse_process_cmd(session, cmd);
            if (self.lookup != null) {
                kernelEntries.lookedUp(changes, self.nodeid, self.lookup);
            } else if (self.opcode == READDIR) {
                kernelEntries.listed(changes, self.nodeid);
                // names that went out with their attributes are entries the kernel keeps, as a lookup's
                for (VfsPath name : self.plusSent) {
                    kernelEntries.lookedUp(changes, self.nodeid, name);
                }
            }
        } catch (RuntimeException | Error e) {
            // the callbacks catch everything themselves; this is a bug, not a request to stop serving
            LOG.error("a FUSE request failed unexpectedly", e);
        } finally {
            self.opcode = -1;
            self.nodeid = 0;
            self.linkSource = 0;
            self.lookup = null;
            self.kernelCan = 0;
            self.cacheListing = false;
            self.briefEntry = false;
            self.briefAttributes = false;
            self.listingPlus = false;
            self.plusHandle = 0;
            self.plusRoom = 0;
            self.plusSent.clear();
            self.plusNodes.clear();
            self.entryName = 0;
            if (self.watchingReply) {
                self.watchingReply = false;
                self.watch.release(); // the reply has gone
            }
        }
    }

    /**
     * What {@link DirectoryPlus} needs to see of a request before libfuse does: where an entry
     * request's name is (its reply tells the name's node id), names that may leave their nodes, and a
     * READDIRPLUS, which libfuse 2.9 does not know, turned into a READDIR. (Our lookups come out of a
     * FORGET where {@link KernelInodes} hears of it.)
     * The request bodies are linux/fuse.h's, after the 40-byte fuse_in_header.
     */
    private static void beforeLibfuse(Worker self, long header) {
        DirectoryPlus plus = self.plus;
        long body = header + 40;
        switch (self.opcode) {
            case READDIRPLUS -> {
                // struct fuse_read_in { u64 fh, offset; u32 size, read_flags; ... }: libfuse fills a fifth
                // of the room with plain entries, which widen to at most all of it
                self.listingPlus = true;
                self.plusHandle = MEMORY.getLong(body);
                self.plusRoom = MEMORY.getInt(body + 16);
                MEMORY.putInt(body + 16, Math.max(1, self.plusRoom / DirectoryPlus.SHRINK));
                MEMORY.putInt(header + 4, READDIR);
                self.opcode = READDIR;
                watchThisReply();
            }
            // lookup: the name first; create and mknod after 16 bytes; mkdir and link after 8 (symlinks
            // are refused: no entry reply)
            case LOOKUP -> expectEntry(self, body);
            case CREATE, MKNOD -> expectEntry(self, body + 16);
            case MKDIR, LINK -> expectEntry(self, body + 8);
            case UNLINK, RMDIR -> plus.unlearn(self.nodeid, string(body));
            case RENAME, RENAME2 -> {
                // struct fuse_rename_in { u64 newdir; } or fuse_rename2_in { u64 newdir; u32 flags, padding; }, then old\0new\0
                long newDirectory = MEMORY.getLong(body);
                String from = string(body + (self.opcode == RENAME ? 8 : 16));
                String to = string(body + (self.opcode == RENAME ? 8 : 16) + from.getBytes(StandardCharsets.UTF_8).length + 1);
                plus.renaming();
                plus.unlearn(self.nodeid, from);
                plus.unlearn(newDirectory, to);
            }
            case RELEASEDIR -> plus.released(MEMORY.getLong(body)); // struct fuse_release_in { u64 fh; ... }
            default -> {
            }
        }
    }

    private static void expectEntry(Worker self, long name) {
        self.entryName = name;
        watchThisReply();
    }

    /**
     * A BATCH_FORGET: every node id in it is gone from the kernel (see {@link KernelInodes#forgotten}),
     * and our lookups come out of each count ({@link DirectoryPlus#forgetting}).
     */
    private void forgotten(long header, DirectoryPlus plus) {
        // struct fuse_batch_forget_in { u32 count, dummy; } after the 40-byte header, then
        // struct fuse_forget_one { u64 nodeid, nlookup; }[count], all within the request's length
        long length = MEMORY.getInt(header) & 0xffffffffL;
        long count = Math.min(MEMORY.getInt(header + 40) & 0xffffffffL, Math.max(0, (length - 48) / 16));
        for (long i = 0; i < count; i++) {
            long one = header + 48 + 16 * i;
            kernelInodes.forgotten(MEMORY.getLong(one));
            if (plus != null) {
                MEMORY.putLong(one + 8, plus.forgetting(MEMORY.getLong(one), MEMORY.getLong(one + 8)));
            }
        }
    }

    private interface Wait {
        void run() throws InterruptedException;
    }

    private static void awaitUninterruptibly(Wait wait) {
        boolean interrupted = false;
        while (true) {
            try {
                wait.run();
                break;
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }
}
