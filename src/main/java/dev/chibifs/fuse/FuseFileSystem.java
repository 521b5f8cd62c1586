package dev.chibifs.fuse;

import dev.chibifs.path.VfsPath;
import dev.chibifs.policy.Caller;
import dev.chibifs.router.Router;
import dev.chibifs.store.EntryKind;
import dev.chibifs.store.FileHandle;
import dev.chibifs.store.Metadata;
import dev.chibifs.store.OpenFlag;
import dev.chibifs.store.RenameMode;
import dev.chibifs.store.SpaceInfo;
import dev.chibifs.store.Storage;
import dev.chibifs.sys.ErrnoException;
import dev.chibifs.sys.Linux;
import dev.chibifs.sys.Syscalls;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Instant;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReadWriteLock;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.Predicate;

/**
 * The file system's operations, by node: each takes a decoded request, resolves its node to a
 * namespace path (and, for writes, the caller), goes through the {@link Router} (so the policy
 * judges every write before the store is touched) and writes its reply. Failures are thrown;
 * {@link FuseSession} answers them with an errno. Callable without a mount: tests drive it
 * through a session over a fake channel.
 */
final class FuseFileSystem {

    /**
     * How long the kernel may keep what a reply says: the mount's timeouts where {@link StoreFollower}
     * follows the changes, else what the store says its answers hold for, else {@link #brief}.
     */
    record Timeouts(FuseReply.Validity entry, FuseReply.Validity attr, FuseReply.Validity negative,
                    FuseReply.Validity brief, boolean held) {
        static Timeouts of(double entry, double attr, double negative) {
            return new Timeouts(FuseReply.Validity.of(entry), FuseReply.Validity.of(attr),
                    FuseReply.Validity.of(negative), FuseReply.Validity.of(Math.min(1.0, Math.min(entry, attr))), false);
        }

        /** Where changes are not followed and the store cannot say: names and attributes briefly, no missing name. */
        Timeouts unfollowed() {
            return new Timeouts(brief, brief, FuseReply.Validity.NONE, brief, false);
        }

        /**
         * Where the store's answers hold {@code nanos} more: as long, within the mount's own timeouts;
         * {@link #held}, for {@link HeldAnswers#expireHeldAnswers} to find what the kernel was told from them.
         */
        Timeouts atMost(long nanos) {
            return new Timeouts(entry.atMost(nanos), attr.atMost(nanos), negative.atMost(nanos), brief, true);
        }

        /** How long the names and attributes a listing of a followed directory gives the kernel last together. */
        long listingNanos() {
            return Math.min(entry.nanosTotal(), attr.nanosTotal());
        }
    }

    /**
     * Every open asks the kernel for no FLUSH at close: writes are already in the store file, so a
     * close has nothing to push, and a round trip per close is saved. POSIX record locks are then
     * released when the open file itself is released (its last descriptor closed, or its process
     * gone), as OFD locks are, not at the close of any one descriptor of the process. Not for a
     * handle that {@link FileHandle#hearsCloses} (an S3 file open for writing: its journal records
     * the close, which the release comes too late for where the daemon is killed in between).
     */
    private static final int NO_FLUSH = FuseProtocol.FOPEN_NOFLUSH;
    /**
     * Files up to this size, opened to be read where reads are served, get their whole content into
     * the kernel's page cache at open instead of a READ round trip (see {@link #keepPages}).
     */
    static final int STORED_AT_OPEN = 64 * 1024;
    /** A file modified less than this long ago is taken to be changing still: see {@link #changing}. */
    static final java.time.Duration CHANGING_FOR = java.time.Duration.ofSeconds(1);
    static final Set<OpenFlag> READ_ONLY = Set.of(OpenFlag.READ);
    static final Set<OpenFlag> READ_WRITE = Set.of(OpenFlag.READ, OpenFlag.WRITE);
    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(FuseFileSystem.class);

    private static final int BLOCK_SIZE = Storage.BLOCK_SIZE;
    /** The mode fstat shows of a directory removed while open: what every store makes one with. */
    private static final int REMOVED_DIRECTORY_MODE = 0755;
    /**
     * How many renames of a directory on this mount, one after another, a request about it follows
     * to its new name before the directory counts as gone (a bound: a loop renaming it back and
     * forth could otherwise keep a request chasing it).
     */
    private static final int DIRECTORY_MOVES_FOLLOWED = 8;
    /** As {@link #DIRECTORY_MOVES_FOLLOWED}, for an open of a node renamed through this mount while it looked. */
    private static final int NAME_MOVES_FOLLOWED = 8;
    /** An open that no longer follows its node's renames ({@link #handleFor}). */
    private static final long NOT_FOLLOWED = -1;

    private final Router router;
    private final CallerResolver callers;
    private final AttributeView attributes;
    private final Timeouts timeouts;
    private final boolean readdirplus;
    /** Some store is across a network (S3): see {@link #mayWaitLong}. */
    private final boolean anyStoreMayWaitLong;
    final NodeTable nodes = new NodeTable();
    /** See {@link #ownNameChanges()}. */
    private final ReadWriteLock ownNameChanges = new ReentrantReadWriteLock();
    final OpenFileTable openFiles = new OpenFileTable();
    final StaleNames staleNames = new StaleNames();
    /** Each request thread's buffer for a notification sent in the middle of a request. */
    final ThreadLocal<FuseReply> notices = ThreadLocal.withInitial(() -> new FuseReply(FuseProtocol.NOTICE_CAPACITY));
    private volatile StoreFollower follower = StoreFollower.NONE;
    /**
     * Where notifications written from within a request go: a small file's content into the kernel's
     * page cache at open (NOTIFY_STORE), attributes changed since the kernel was told them (INVAL_INODE
     * at open). Null before INIT.
     */
    private volatile FuseChannel storeChannel;
    /**
     * Set once INIT granted DIRECT_IO_ALLOW_MMAP: an open may go past the page cache (FOPEN_DIRECT_IO)
     * and still be mapped shared. Reads of a {@link #changing} file and appends do, where served.
     */
    private volatile boolean directIo;
    /** Which threads hold a descriptor of a file of this mount; null until the mount is made (and where it is not known). */
    private volatile HeldDescriptors heldDescriptors;
    /** GETXATTR, LISTXATTR, SETXATTR, REMOVEXATTR. */
    final ExtendedAttributes xattrs;
    /** GETLK, SETLK, SETLKW, FLUSH. */
    final LockRequests locks;
    /** The store files the kernel reads and writes itself (FUSE passthrough), by node. */
    final BackingFiles backingFiles;
    /** What the kernel was told from its stores' held answers, for {@code chibifs sync} to take back. */
    final HeldAnswers heldAnswers;
    /** OPENDIR, READDIR, READDIRPLUS, RELEASEDIR. */
    final DirectoryReader directories;
    /** Attributes as a reply shows them, and how long the kernel may keep them. */
    final AttributeReplies replies;
    /** SETATTR: truncate, chmod, utimens, and the rule for chown and chgrp. */
    final AttributeChanges attributeChanges;
    /** READ, WRITE, LSEEK, COPY_FILE_RANGE, FSYNC, FALLOCATE: through an open file. */
    final ReadsAndWrites io;
    /** The wall clock file modification times are compared with; a test's own clock. */
    private java.time.Clock clock = java.time.Clock.systemUTC();
    FuseFileSystem(Router router, CallerResolver callers, long mountUid, long mountGid, Timeouts timeouts,
                   boolean readdirplus) {
        this.router = router;
        this.callers = callers;
        this.attributes = new AttributeView(router, callers, mountUid, mountGid);
        this.timeouts = timeouts;
        this.readdirplus = readdirplus;
        this.anyStoreMayWaitLong = router.anyMayWaitLong();
        this.replies = new AttributeReplies(this, attributes, timeouts);
        this.attributeChanges = new AttributeChanges(this, attributes);
        this.io = new ReadsAndWrites(this);
        this.xattrs = new ExtendedAttributes(this);
        this.locks = new LockRequests(this);
        this.backingFiles = new BackingFiles(nodes);
        this.heldAnswers = new HeldAnswers(nodes, notices);
        this.directories = new DirectoryReader(this);
        router.tellOwnMoves(this::movedByStore);
        if (!callers.isFixed()) {
            // the callers share the daemon's descriptors: none may take more than a quarter (a
            // per-context mount acts for one, whose limit is the daemon's own)
            openFiles.share((int) Math.max(64, Math.min(Integer.MAX_VALUE, Syscalls.openFileLimit() / 4)));
        }
    }

    /** Users other than the mounter reach the mount (allow_other): where they may write, each is shown as owner. */
    void othersReach() {
        attributes.othersReach();
    }

    /** After INIT: a small file's content is stored in the kernel's page cache through {@code channel} at its open. */
    void storeAtOpen(FuseChannel channel) {
        this.storeChannel = channel;
    }

    /** INIT granted DIRECT_IO_ALLOW_MMAP: see {@link #directIo}. */
    void allowDirectIo() {
        this.directIo = true;
    }

    /** For tests: modification times are compared with {@code c}. Before the session starts. */
    void clock(java.time.Clock c) {
        this.clock = c;
    }

    void follow(StoreFollower follower) {
        this.follower = follower;
    }

    StoreFollower follower() {
        return follower;
    }

    /** Where notifications written from within a request go; null before INIT. */
    FuseChannel storeChannel() {
        return storeChannel;
    }

    java.time.Clock clock() {
        return clock;
    }

    /** This mount, as /proc tells which threads hold descriptors of its files: see {@link #throughOwnOpenFile}. */
    void mounted(HeldDescriptors mount) {
        this.heldDescriptors = mount;
    }

    /** The kernel is told what the store's changes queued so far make stale, before this returns. */
    void catchUpWithStore() {
        follower.catchUp();
    }

    Router router() {
        return router;
    }

    Timeouts timeouts() {
        return timeouts;
    }

    boolean readdirplus() {
        return readdirplus;
    }

    /**
     * Whether a request may wait long: a sync, or anything about a node of a store across a network
     * (S3). An io_uring queue hands such a request to a thread of its own ({@link FuseRing}).
     */
    boolean mayWaitLong(int opcode, long nodeid) {
        return isSync(opcode) || waitsLongOn(opcode, nodeid, null) != null;
    }

    private static boolean isSync(int opcode) {
        return opcode == FuseProtocol.FSYNC || opcode == FuseProtocol.FSYNCDIR;
    }

    /**
     * The store request {@code req} may wait long on, by which such requests are set apart
     * ({@link FuseSession}), or null: a store across a network or on NFS or FUSE
     * ({@link Storage#answersMayWaitLong}), or the store of any fsync. A LOOKUP is judged by the name
     * it looks up: a store's own mount point (`/shared/ro`) is read from that store, and its
     * lookups, judged by the parent's store, took every worker when it stalled.
     */
    Object waitsLongOn(FuseRequest req) {
        return waitsLongOn(req.opcode, req.nodeid, req.opcode == FuseProtocol.LOOKUP ? req : null);
    }

    /** As {@link #waitsLongOn(FuseRequest)}; {@code lookup}, where given, names the child to judge by. */
    private Object waitsLongOn(int opcode, long nodeid, FuseRequest lookup) {
        boolean sync = isSync(opcode);
        if (!sync && !anyStoreMayWaitLong) {
            return null;
        }
        NodeTable.Node n = nodes.get(nodeid);
        if (n == null) {
            return null;
        }
        try {
            VfsPath p = path(n);
            if (lookup != null) {
                p = p.child(lookup.entryName());
            }
            dev.chibifs.store.Storage store = router.resolve(p).storage();
            return sync || store.answersMayWaitLong() ? store : null;
        } catch (IOException | RuntimeException unjudged) {
            return null; // a name the request itself refuses, or a node gone: served as any other
        }
    }

    Caller caller(FuseRequest req) {
        return callers.isFixed() ? callers.resolve(0) : callers.resolve(req.uid());
    }

    /**
     * Who a request is traced as. The kernel sends RELEASE (after the last close) and RELEASEDIR on
     * its own, with uid 0 and pid 0, which a uid map resolves as root's caller (SYSTEM, GUEST, or
     * the context uid 0 maps to): a RELEASE is its open's, whose caller the table kept, so
     * {@code trace --context alice} shows alice's closes; a RELEASEDIR is the kernel's. By opcode,
     * not by pid 0 alone: a daemon in a pid namespace of its own gets pid 0 for every request from
     * outside it.
     */
    String tracedCaller(FuseRequest req) {
        if (callers.isFixed() || req.pid != 0) {
            return String.valueOf(caller(req));
        }
        if (req.opcode == FuseProtocol.RELEASE) {
            OpenFile f = openFiles.get(req.handle());
            return f != null ? String.valueOf(f.caller()) : RequestTrace.KERNEL;
        }
        return req.opcode == FuseProtocol.RELEASEDIR ? RequestTrace.KERNEL : String.valueOf(caller(req));
    }

    NodeTable.Node node(FuseRequest req) throws NoSuchFileException {
        return node(req.nodeid);
    }

    NodeTable.Node node(long id) throws NoSuchFileException {
        NodeTable.Node n = nodes.get(id);
        if (n == null) {
            // the kernel names only nodes it holds; a forgotten one here is a bug, answered as a vanished file
            throw new NoSuchFileException("node " + NodeSlots.shown(id));
        }
        return n;
    }

    VfsPath path(NodeTable.Node n) {
        return nodes.path(n);
    }

    /**
     * What request {@code req} is about, for its trace: the path of its node, with the names it
     * carries (a new entry's, RENAME's and LINK's two ends, an attribute's), an open's mode, or
     * READ's and WRITE's bytes. Read from the request as the kernel sent it; never fails (the trace
     * shows what it can).
     */
    RequestTrace.Target describe(FuseRequest req) {
        try {
            String at = nodePath(req.nodeid);
            return switch (req.opcode) {
                case FuseProtocol.LOOKUP, FuseProtocol.UNLINK, FuseProtocol.RMDIR, FuseProtocol.MKDIR,
                        FuseProtocol.MKNOD -> target(child(at, req.shownEntryName()), "");
                case FuseProtocol.CREATE -> target(child(at, req.shownEntryName()), openMode(req.openFlags()));
                case FuseProtocol.OPEN -> target(at, openMode(req.openFlags()));
                case FuseProtocol.TMPFILE -> target(at, openMode(req.openFlags()) + "|O_TMPFILE");
                case FuseProtocol.SYMLINK -> target(child(at, req.shownEntryName()), "-> " + req.shownSecondName());
                case FuseProtocol.LINK -> new RequestTrace.Target(List.of(nodePath(req.linkSource()), child(at, req.shownEntryName())), "");
                case FuseProtocol.RENAME, FuseProtocol.RENAME2 -> new RequestTrace.Target(
                        List.of(child(at, req.shownEntryName()), child(nodePath(req.renameTarget()), req.shownSecondName())), "");
                case FuseProtocol.GETXATTR, FuseProtocol.SETXATTR, FuseProtocol.REMOVEXATTR -> target(at, req.shownEntryName());
                case FuseProtocol.READ, FuseProtocol.WRITE -> target(at, req.readSize() + " bytes at " + req.readOffset());
                default -> target(at, "");
            };
        } catch (RuntimeException e) {
            return target("node " + NodeSlots.shown(req.nodeid), "");
        }
    }

    /** An open's access mode and the flags that say how it writes, as open(2) names them: "O_WRONLY|O_APPEND". */
    private static String openMode(int flags) {
        StringBuilder s = new StringBuilder(switch (flags & Linux.O_ACCMODE) {
            case Linux.O_WRONLY -> "O_WRONLY";
            case Linux.O_RDWR -> "O_RDWR";
            default -> "O_RDONLY";
        });
        if ((flags & Linux.O_CREAT) != 0) {
            s.append("|O_CREAT");
        }
        if ((flags & Linux.O_EXCL) != 0) {
            s.append("|O_EXCL");
        }
        if ((flags & Linux.O_TRUNC) != 0) {
            s.append("|O_TRUNC");
        }
        if ((flags & Linux.O_APPEND) != 0) {
            s.append("|O_APPEND");
        }
        return s.toString();
    }

    private static RequestTrace.Target target(String path, String detail) {
        return new RequestTrace.Target(List.of(path), detail);
    }

    private String nodePath(long id) {
        NodeTable.Node n = nodes.get(id);
        return n != null ? path(n).toString() : "node " + NodeSlots.shown(id);
    }

    private static String child(String dir, String name) {
        return dir.endsWith("/") ? dir + name : dir + "/" + name;
    }

    /**
     * The path of {@code name} in directory node {@code parent}; a name that cannot be in a path is
     * EINVAL, one longer than NAME_MAX bytes ENAMETOOLONG (the kernel lets FUSE names reach 1024: a
     * lookup of one says so rather than ENOENT; the router refuses to create one on any store).
     */
    private VfsPath childPath(NodeTable.Node parent, String name) throws IOException {
        Router.checkNameLength(name);
        return directoryPath(parent).child(name);
    }

    /**
     * The path of directory node {@code dir}, to look up, make or remove a name in it; ENOENT where
     * it was removed (through the mount, or behind the kernel's back: {@link NodeTable#left}), as
     * in a removed directory on a disk, rather than the directory that may have its name now.
     */
    private VfsPath directoryPath(NodeTable.Node dir) throws NoSuchFileException {
        VfsPath p = path(dir);
        if (dir.removed && dir.directory) {
            throw new NoSuchFileException(p.toString());
        }
        return p;
    }

    /**
     * Remembers the node of an entry reply about to be sent and writes the entry: one kernel
     * lookup, which {@link FuseSession} takes back if the reply is not delivered.
     */
    private NodeTable.Node entry(FuseRequest req, NodeTable.Node parent, String name, VfsPath p, Metadata m, FuseReply out) throws IOException {
        return entry(req, parent, name, p, m, out, false);
    }

    private NodeTable.Node entry(FuseRequest req, NodeTable.Node parent, String name, VfsPath p, Metadata m, FuseReply out,
                                 boolean created) throws IOException {
        NodeTable.Node n = nodes.remember(parent, name, NodeTable.Identity.of(router.resolve(p).storage(), m),
                m.isDirectory(), m.isDirectory() || m.links() <= 1, created);
        if (n == null) {
            // a directory found in one of its own subdirectories: the path was made of names another
            // mount or chibi has moved since. ESTALE makes the kernel walk it again, looking up each
            // name from the root (LOOKUP_REVAL), which tells the node table where each one is now
            throw new ErrnoException(Linux.ESTALE, p.toString(), "Stale file handle");
        }
        replied(n, m);
        heldAnswers.dropStaleNames(clock);
        follower.named(parent, name);
        Timeouts kept = replies.keptIn(parent);
        FuseReply.Validity attr = replies.attrValidity(kept, p, m, n);
        HeldAnswers.toldHeld(n, kept, attr);
        // a channel's name is looked up at every use: that lookup is where the policy judges who opens it
        out.entry(n.id, isChannel(m) ? FuseReply.Validity.NONE : kept.entry(), attr, replies.attributes(req, p, m));
        return n;
    }

    /**
     * Whether {@code m} is a fifo or a socket. The kernel opens a fifo and connects a socket without
     * a word to the daemon (with no default_permissions, no OPEN and no ACCESS), and carries their
     * data itself, so the lookup of the name is the one request the policy sees: on a uid-mapped
     * mount an unmapped uid wrote into a fifo of bob's home, and read from it (a tester's finding).
     */
    static boolean isChannel(Metadata m) {
        return m.kind() == EntryKind.FIFO || m.kind() == EntryKind.SOCKET;
    }

    /**
     * Refuses the lookup of channel {@code m} at {@code p} to a caller that may not write there:
     * opening it writes into it or takes what another wrote, which only those who may write the zone
     * may do; the name is still listed, as a disk lists a file its mode refuses.
     */
    private void requireChannelMayBeUsed(FuseRequest req, VfsPath p, Metadata m) throws IOException {
        if (isChannel(m) && !router.mayWrite(caller(req), p)) {
            throw new java.nio.file.AccessDeniedException(p.toString());
        }
    }

    void lookup(FuseRequest req, FuseReply out) throws IOException {
        NodeTable.Node parent = node(req);
        String name = req.entryName();
        long movesBefore = nodes.directoryMoves();
        VfsPath p = childPath(parent, name);
        follower.lookingIn(parent);
        Metadata m;
        dev.chibifs.store.HeldFile held = null;
        try {
            // the kernel's retry of a call answered stale: the file found is held for the retried request
            held = staleNames.retrying(req.pid, parent, name, clock) ? router.hold(p) : null;
            m = held != null ? held.metadata() : router.metadata(null, p);
        } catch (NoSuchFileException missing) {
            // a followed directory tells the kernel when the name appears; another holds its answer as long as it says
            Timeouts kept = replies.keptIn(parent);
            FuseReply.Validity negative = kept.negative();
            if (negative == FuseReply.Validity.NONE || router.standsIn(p)) {
                // another file system in the store's place: once the store is back, a kept miss would
                // never reach the daemon to notice it, and would hide the store's name for the timeout
                throw missing;
            }
            if (follower.follows(parent) && !follower.missing(parent, name)) {
                throw missing;
            }
            if (nodes.directoryMoves() != movesBefore) {
                // a directory moved while this looked: p may be where the parent was, not where it is,
                // and nothing changes in the parent itself to drop a kept missing name (the follower drops
                // those it holds when it hears of the move, which may have been before this marked it)
                throw missing;
            }
            if (kept.held()) {
                heldAnswers.toldMissing(parent, name, negative);
            }
            out.negativeEntry(negative);
            return;
        }
        try {
            requireChannelMayBeUsed(req, p, m);
            out.rememberedNode = entry(req, parent, name, p, m, out);
        } finally {
            if (held != null && out.rememberedNode == null) {
                held.close();
            } else if (held != null) {
                staleNames.lookedUp(req.pid, out.rememberedNode, held, clock.instant());
            }
        }
    }

    void getattr(FuseRequest req, FuseReply out) throws IOException {
        attributes(req, out, false);
    }

    /**
     * STATX (7.39): GETATTR with the birth time. The kernel asks it only of a caller that wants the
     * birth time (`stat`, `ls --time=birth`), once a file's attributes expire; ENOSYS would stop it
     * for the rest of the mount, and `stat` would show no birth.
     */
    void statx(FuseRequest req, FuseReply out) throws IOException {
        attributes(req, out, true);
    }

    /** GETATTR's and STATX's reply: fuse_statx_in begins as fuse_getattr_in does (flags, then the handle). */
    private void attributes(FuseRequest req, FuseReply out, boolean statx) throws IOException {
        NodeTable.Node n = node(req);
        long fh = req.getattrHandle();
        OpenFile f = fh != 0 ? openFiles.get(fh) : null;
        VfsPath p = path(n);
        Metadata m;
        if (f != null) {
            m = f.handle().metadata();
        } else {
            m = metadataOrOpen(req, n, p, staleNames.retried(req.pid, n, false, clock));
            if (n.directory) {
                p = path(n); // where it was found, if renamed meanwhile: its mode and owner go by that
            }
        }
        replied(n, m);
        NodeTable.Link link = n.link;
        // the root has no parent: its own following, or its store's word, decides
        Timeouts kept = replies.keptIn(link == null ? n : link.parent());
        FuseReply.Validity validity = link == null ? kept.attr() : replies.attrValidity(kept, p, m, n);
        HeldAnswers.toldHeld(n, kept, validity);
        if (statx) {
            out.statxOut(validity, replies.attributes(req, p, m), m.created());
        } else {
            out.attrOut(validity, replies.attributes(req, p, m));
        }
    }

    /**
     * The store's metadata of node {@code n}: at its path while that still names the node's file;
     * else (every name gone, or the name now another file's) its open file's, or {@code retried}'s
     * where this request is the kernel's retry of one answered stale (see {@link StaleNames}); else
     * ESTALE: stat and access(2) then look the name up again (LOOKUP_REVAL), as an open does, and
     * say what the name stands for now, where ENOENT said a file replaced a moment ago was not there.
     */
    Metadata metadataOrOpen(FuseRequest req, NodeTable.Node n, VfsPath p, dev.chibifs.store.HeldFile retried)
            throws IOException {
        if (!n.removed) {
            for (int moves = 0; ; moves++) {
                long movesBefore = nodes.directoryMoves();
                try {
                    Metadata m = router.metadata(null, p);
                    if (n.identity == null || n.identity.isOf(m)) {
                        return m;
                    }
                } catch (NoSuchFileException e) {
                    // gone by this name: another name, or an open file, may still reach it
                }
                VfsPath moved = n.directory && moves < DIRECTORY_MOVES_FOLLOWED ? movedThroughThisMount(n, p, movesBefore) : null;
                if (moved == null) {
                    break;
                }
                p = moved;
            }
            VfsPath other = anotherName(n);
            if (other != null) {
                return router.metadata(null, other);
            }
        }
        Metadata m = throughAnOpenFile(n, FileHandle::metadata);
        if (m != null) {
            return m;
        }
        if (retried != null) {
            return retried.metadata();
        }
        if (n.directory && n.identity != null && (n.removed || holdsDirectory(req.pid, n))) {
            return removedDirectory(n);
        }
        throw stale(req, n, p, false);
    }

    /**
     * Whether thread {@code tid} holds a descriptor of directory {@code n}, whose name no longer reaches
     * it: its GETATTR is then most likely an fstat (glibc's opendir makes one), which the kernel does not
     * retry on ESTALE. A directory another mount removed a moment before was "Stale file handle" to
     * git's opendir during a gc there (a tester's finding), where a disk's fstat shows it removed.
     */
    private boolean holdsDirectory(int tid, NodeTable.Node n) {
        HeldDescriptors held = heldDescriptors;
        return held != null && held.holds(tid, n.identity.inode());
    }

    /**
     * Directory {@code n}'s path to look at again, once every rename and rmdir through this mount
     * that has changed the store is in the node table: where it is no longer {@code p}, or a
     * directory moved since {@code movesBefore} (renamed away and back); else null. A directory's
     * fstat (and fdopendir's, so listdir's) GETATTR carries no handle (zero-message opendir), and
     * the kernel does not retry it on ESTALE: a rename of the directory on this mount between the
     * request's path and its look in the store failed it. Only a request that found nothing there
     * waits, for renames already under way.
     */
    private VfsPath movedThroughThisMount(NodeTable.Node n, VfsPath p, long movesBefore) {
        ownNameChanges.writeLock().lock();
        ownNameChanges.writeLock().unlock();
        if (n.removed) {
            return null;
        }
        VfsPath now = path(n);
        return now.equals(p) && nodes.directoryMoves() == movesBefore ? null : now;
    }

    /**
     * The path the policy judges a change made through an open file of a node by (fchmod, futimens,
     * fsetxattr, linkat or an open of /proc/PID/fd/N, which the kernel sends by node): where the store
     * has the file now. The node's path, {@code last}, may be stale: the file may have moved behind
     * the kernel's back into a zone that protects it (bob holds a descriptor of /shared/v, which chibi
     * or another mount moved to /home/alice), and the table hears of it late, or never (a move out of
     * a followed directory into one nobody looked into). See {@link Router#whereNow}.
     */
    VfsPath judgedAt(VfsPath last, FileHandle handle) throws IOException {
        return router.whereNow(handle, last);
    }

    /** What is done with a handle of another open; see {@link #throughAnOpenFile}. */
    interface HandleCall<T> {
        T apply(FileHandle handle) throws IOException;
    }

    /**
     * {@code call} on the handle of some open file of node {@code n}, for a node its name no longer
     * reaches; null when none is open. That handle is another open's, whose RELEASE may come
     * meanwhile: release closes it under the same monitor, after taking it out of the table, so one
     * closed before is skipped (its first use fails, having changed nothing) and not found again.
     * Without the monitor, an fstat right after an open of a file replaced meanwhile was EBADF, and
     * could have read a descriptor number reused by another file.
     */
    <T> T throughAnOpenFile(NodeTable.Node n, HandleCall<T> call) throws IOException {
        return throughAnOpenFile(n, open -> true, call);
    }

    /** As {@link #throughAnOpenFile(NodeTable.Node, HandleCall)}, through an open file {@code which} accepts. */
    private <T> T throughAnOpenFile(NodeTable.Node n, Predicate<OpenFile> which, HandleCall<T> call)
            throws IOException {
        for (OpenFile open; (open = openFiles.anyOf(n, which)) != null; ) {
            synchronized (open) {
                try {
                    return call.apply(open.handle());
                } catch (java.nio.channels.ClosedChannelException released) {
                    // released before this took it: another, if any
                }
            }
        }
        return null;
    }

    /**
     * {@code call} through an open file of node {@code n}, where n's name no longer reaches its file and
     * the process making request {@code req} holds a descriptor of it; null when it holds none.
     * fchmod(2), fchown(2), futimens(2) and the f*xattr calls come as requests about the node, without
     * the handle (the kernel sends one with ftruncate only), and cannot be told from chmod(2) of a name
     * the kernel still takes for the node's: a disk acts on the descriptor's file whatever became of
     * its name. Usually the process that opened it holds the descriptor (tar sets each file's times and
     * mode through the descriptor it wrote it by). Else it may still hold one: inherited across fork
     * (a shell's {@code exec 3<>f}, then a child's {@code touch /dev/fd/3}), or opened by a thread that
     * has exited since; /proc tells ({@link HeldDescriptors}), read on this path alone. All open files
     * of the node are of the one file, so any serves. A process holding none is answered ESTALE, and
     * its lookup again reaches what the name stands for now.
     */
    <T> T throughOwnOpenFile(FuseRequest req, NodeTable.Node n, HandleCall<T> call) throws IOException {
        T done = throughAnOpenFile(n, open -> sameProcess(req.pid, open.opener()), call);
        if (done == null && holdsDescriptor(req.pid, n)) {
            done = throughAnOpenFile(n, call);
        }
        return done;
    }

    /** Whether thread {@code tid} holds a descriptor of node {@code n}'s file through this mount (n open here at all). */
    private boolean holdsDescriptor(int tid, NodeTable.Node n) {
        HeldDescriptors held = heldDescriptors;
        // the kernel's inode number for the node is the one its attributes gave: the identity's
        return held != null && n.identity != null && openFiles.anyOf(n) != null && held.holds(tid, n.identity.inode());
    }

    /** Whether threads {@code tid} and {@code other} are of one process: /proc/TID/task of any thread lists them all. */
    private static boolean sameProcess(int tid, int other) {
        return tid > 0 && other > 0
                && (tid == other || Files.isDirectory(Path.of("/proc/" + tid + "/task/" + other)));
    }

    /**
     * What fstat shows of a directory removed (or renamed over) through this mount while a process
     * still has it open: no links, as on a disk (xfstests generic/035). With zero-message opendir
     * the daemon holds no handle of it to ask, so the times are the last it told the kernel.
     */
    private static Metadata removedDirectory(NodeTable.Node n) {
        FileTime modified = n.toldSize >= 0 ? FileTime.from(n.toldModified, TimeUnit.NANOSECONDS) : FileTime.from(Instant.now());
        FileTime changed = n.toldSize >= 0 ? FileTime.from(n.toldChanged, TimeUnit.NANOSECONDS) : modified;
        return new Metadata(EntryKind.DIRECTORY, 0, null, modified, modified, changed, 0, REMOVED_DIRECTORY_MODE,
                n.identity.inode(), 0, n.identity.device());
    }

    void access(FuseRequest req, FuseReply out) throws IOException {
        NodeTable.Node n = node(req);
        VfsPath p = path(n);
        Metadata m = metadataOrOpen(req, n, p, staleNames.retried(req.pid, n, false, clock));
        int mask = req.accessMask();
        if ((mask & Linux.W_OK) != 0 && !router.mayWrite(caller(req), p)) {
            throw new java.nio.file.AccessDeniedException(p.toString());
        }
        if ((mask & Linux.W_OK) != 0 && router.isReadOnly(p)) {
            // what access(2) says of a read-only file system, and what a write there would meet
            throw new ErrnoException(Linux.EROFS, p.toString(), "Read-only file system");
        }
        if ((mask & Linux.X_OK) != 0 && !m.isDirectory() && (m.mode() & 0111) == 0) {
            throw new java.nio.file.AccessDeniedException(p.toString());
        }
    }

    void readlink(FuseRequest req, FuseReply out) throws IOException {
        VfsPath p = path(node(req));
        String target;
        try {
            target = router.readLink(null, p);
        } catch (IOException e) {
            int errno = dev.chibifs.sys.Errors.errno(e);
            if (errno != Linux.EINVAL && errno != Linux.ENOENT) {
                throw e;
            }
            // the name stopped being this link between the kernel's lookup and now (replaced or
            // removed behind its back): ESTALE makes the kernel walk the path again (LOOKUP_REVAL)
            // and find what it is now, where EINVAL would fail the whole walk
            throw new ErrnoException(Linux.ESTALE, p.toString(), "Stale file handle");
        }
        out.bytes(target.getBytes(StandardCharsets.UTF_8));
    }

    void statfs(FuseRequest req, FuseReply out) throws IOException {
        SpaceInfo s = router.space(path(node(req)));
        long bs = s.blockSize() > 0 ? s.blockSize() : BLOCK_SIZE;
        // df -i, and programs that check for free inodes before writing many files, read files and ffree
        out.statfs(s.totalBytes() / bs, s.freeBytes() / bs, s.availableBytes() / bs, s.totalFiles(), s.freeFiles(),
                (int) bs, (int) s.maxNameLength(), (int) bs);
    }

    // ---- names ----

    /** Work on the store by paths taken from directory nodes: a listing, or a change of names in them. */
    @FunctionalInterface
    interface ByNodePaths {
        void run() throws IOException;
    }

    /**
     * Runs {@code work}; where a path it took from a directory node found nothing (ENOENT) and
     * the store's feed, caught up, tells of a directory move, runs it once more by the paths the
     * nodes have now. A process working in a directory another mount moved a moment ago lists it and
     * makes and removes names there, as on a disk, where it met ENOENT until the feed's event was
     * read (the next millisecond, but `mv` then `touch` is quicker: 99 of 100 such creates failed).
     * Such work failed before doing anything: its store call found no directory.
     */
    void followingMoves(ByNodePaths work) throws IOException {
        long moves = nodes.directoryMoves();
        try {
            work.run();
        } catch (NoSuchFileException notThere) {
            follower.catchUp();
            if (nodes.directoryMoves() == moves) {
                throw notThere;
            }
            work.run();
        }
    }

    void mkdir(FuseRequest req, FuseReply out) throws IOException {
        NodeTable.Node parent = node(req);
        String name = req.entryName();
        VfsPath p = childPath(parent, name);
        // fuse_mkdir_in.mode is not read: the policy, not chmod, decides who writes, so every store makes one mode
        ownNameChange(() -> {
            router.createDirectory(caller(req), p);
            out.rememberedNode = entry(req, parent, name, p, made(p, EntryKind.DIRECTORY), out, true);
        });
    }

    /** mknod(2): a regular file, a fifo or a socket (names only: the kernel serves their data); devices are refused. */
    void mknod(FuseRequest req, FuseReply out) throws IOException {
        NodeTable.Node parent = node(req);
        String name = req.entryName();
        VfsPath p = childPath(parent, name);
        int mode = req.mknodMode();
        EntryKind kind = switch (mode & Linux.S_IFMT) {
            case Linux.S_IFREG -> EntryKind.FILE;
            case Linux.S_IFIFO -> EntryKind.FIFO;
            case Linux.S_IFSOCK -> EntryKind.SOCKET;
            default -> EntryKind.OTHER; // block and character devices: a way out of every sandbox
        };
        ownNameChange(() -> {
            router.mknod(caller(req), p, kind, mode & 07777);
            out.rememberedNode = entry(req, parent, name, p, made(p, kind), out, true);
        });
    }

    /** symlink(2): stored as a real link; the router judges the link's zone and where its target leads. */
    void symlink(FuseRequest req, FuseReply out) throws IOException {
        NodeTable.Node parent = node(req);
        String name = req.entryName();
        String target = req.secondName();
        VfsPath p = childPath(parent, name);
        ownNameChange(() -> {
            router.symlink(caller(req), p, target);
            out.rememberedNode = entry(req, parent, name, p, made(p, EntryKind.SYMLINK), out, true);
        });
    }

    /**
     * What MKDIR, MKNOD or SYMLINK just made at {@code p}, of {@code kind}. Where the name stands for
     * something else by the time it is looked at, or for nothing (another mount, or chibi, replaced
     * or removed it at once), ESTALE: the kernel fails a reply of another type with EIO, and on
     * ESTALE runs the call again after a fresh lookup, which finds what is there now (EEXIST) or
     * makes it again.
     */
    private Metadata made(VfsPath p, EntryKind kind) throws IOException {
        try {
            Metadata m = router.metadata(null, p);
            if (m.kind() == kind) {
                return m;
            }
        } catch (NoSuchFileException gone) {
            // removed at once: as replaced
        }
        throw new ErrnoException(Linux.ESTALE, p.toString(), "Stale file handle");
    }

    void unlink(FuseRequest req, FuseReply out) throws IOException {
        NodeTable.Node parent = node(req);
        String name = req.entryName();
        NodeTable.Node n = nodes.child(parent, name);
        ownNameChange(() -> {
            router.removeFile(caller(req), childPath(parent, name));
            if (n != null) {
                n.changing(); // its link count, where it has other names
                // which the kernel takes as stale at the reply (fuse_entry_unlinked): it holds none
                // told, and the feed's look at the file's other names is no reason to drop them again
                n.untold();
            }
            nodes.unlinked(parent, name);
        });
        if (n != null) {
            follower.nameRemoved(parent, name, n);
        }
    }

    void rmdir(FuseRequest req, FuseReply out) throws IOException {
        NodeTable.Node parent = node(req);
        String name = req.entryName();
        VfsPath p = childPath(parent, name);
        ownNameChanges.readLock().lock();
        try {
            router.removeDirectory(caller(req), p);
            nodes.unlinked(parent, name);
        } finally {
            ownNameChanges.readLock().unlock();
        }
    }

    void rename(FuseRequest req, FuseReply out) throws IOException {
        NodeTable.Node from = node(req);
        NodeTable.Node to = node(req.renameTarget());
        String fromName = req.entryName();
        String toName = req.secondName();
        int flags = req.opcode == FuseProtocol.RENAME2 ? req.rename2Flags() : 0;
        VfsPath src = childPath(from, fromName);
        VfsPath dst = childPath(to, toName);
        RenameMode mode = switch (flags) {
            case 0 -> RenameMode.REPLACE;
            case Linux.RENAME_NOREPLACE -> RenameMode.NO_REPLACE;
            case Linux.RENAME_EXCHANGE -> RenameMode.EXCHANGE;
            // RENAME_WHITEOUT is for overlay file systems; both at once is EINVAL in every file system
            default -> throw new ErrnoException(Linux.EINVAL, src.toString(), dst.toString(), "Invalid argument");
        };
        NodeTable.Node moved = nodes.child(from, fromName);
        NodeTable.Node replaced = nodes.child(to, toName);
        ownNameChanges.readLock().lock();
        try {
            router.rename(caller(req), src, dst, mode);
            // a rename changes the moved file's ctime, and the link count of the one it replaced (or its
            // ctime, exchanged). The kernel takes those as stale at the reply (fuse_update_ctime,
            // fuse_entry_unlinked), so it holds none told, and the feed's events are no reason to drop them
            for (NodeTable.Node n : new NodeTable.Node[] {moved, replaced}) {
                if (n != null) {
                    n.changing();
                    n.untold();
                }
            }
            if (mode == RenameMode.EXCHANGE) {
                nodes.exchanged(from, fromName, to, toName);
            } else {
                nodes.renamed(from, fromName, to, toName);
                // rename(2) looked the target up first, and the kernel held it missing until this
                // reply moved the dentry there: as at a create, not to be told back by the feed
                follower.named(to, toName);
                if (replaced != null && replaced != moved) {
                    follower.nameRemoved(to, toName, replaced);
                }
            }
        } finally {
            ownNameChanges.readLock().unlock();
        }
    }

    /**
     * Held (shared) by every change of names through the mount (create, mknod, mkdir, symlink, link,
     * unlink, rmdir, rename) from its change in the store until the node table has it, and
     * (exclusive) by the change follower while it moves directory nodes after the store's events,
     * or judges again a name that seemed changed behind the kernel's back ({@link ChangeFollower}):
     * the follower reads the store's events as soon as the change is made, and must not take this
     * mount's own change for one made behind its back. Never held shared while waiting for the feed.
     */
    ReadWriteLock ownNameChanges() {
        return ownNameChanges;
    }

    /** Runs {@code change}, a change of names through the mount, with {@link #ownNameChanges} held shared. */
    private void ownNameChange(ByNodePaths change) throws IOException {
        ownNameChanges.readLock().lock();
        try {
            change.run();
        } finally {
            ownNameChanges.readLock().unlock();
        }
    }

    void link(FuseRequest req, FuseReply out) throws IOException {
        NodeTable.Node existing = node(req.linkSource());
        NodeTable.Node parent = node(req);
        String name = req.entryName();
        VfsPath p = childPath(parent, name);
        Caller caller = caller(req);
        VfsPath last = path(existing);
        ownNameChange(() -> linkHeld(req, out, existing, parent, name, p, caller, last));
    }

    /** LINK's change of names, with {@link #ownNameChanges} held shared. */
    private void linkHeld(FuseRequest req, FuseReply out, NodeTable.Node existing, NodeTable.Node parent, String name,
                          VfsPath p, Caller caller, VfsPath last) throws IOException {
        if (!existing.removed) {
            VfsPath from = reaching(existing, last);
            if (from == null) {
                // its name stands for another file now, or for none (replaced, moved or removed behind
                // the kernel's back): linkat(2) looks the name up again on ESTALE and retries with what
                // it stands for now, as on a disk; linking what the store has there would link a file
                // the kernel did not name
                throw new ErrnoException(Linux.ESTALE, last.toString(), "Stale file handle");
            }
            router.link(caller, from, p);
        } else if (throughAnOpenFile(existing, handle -> {
            // no name reaches it (O_TMPFILE, or its names went behind the kernel's back): its open file does
            router.link(caller, handle, last, p); // judged where the file is, under the router's move lock
            return p;
        }) == null) {
            throw new NoSuchFileException(last.toString());
        }
        existing.changing();
        out.rememberedNode = entry(req, parent, name, p, router.metadata(null, p), out);
    }

    // ---- open files ----

    static Set<OpenFlag> openFlags(int flags) {
        Set<OpenFlag> open = EnumSet.noneOf(OpenFlag.class);
        int acc = flags & Linux.O_ACCMODE;
        if (acc == Linux.O_RDWR) {
            open.add(OpenFlag.READ);
            open.add(OpenFlag.WRITE);
        } else if (acc == Linux.O_WRONLY) {
            open.add(OpenFlag.WRITE);
        } else {
            open.add(OpenFlag.READ);
        }
        // O_APPEND of a read-only open writes nothing, so it asks the policy nothing: a file the
        // caller may only read opens as on a disk (O_TRUNC does ask: Linux truncates even then)
        if ((flags & Linux.O_APPEND) != 0 && acc != Linux.O_RDONLY) {
            open.add(OpenFlag.APPEND);
        }
        if ((flags & Linux.O_TRUNC) != 0 && acc != Linux.O_RDONLY) {
            open.add(OpenFlag.TRUNCATE);
        }
        if ((flags & Linux.O_CREAT) != 0) {
            open.add((flags & Linux.O_EXCL) != 0 ? OpenFlag.CREATE_NEW : OpenFlag.CREATE);
        }
        return open;
    }

    void open(FuseRequest req, FuseReply out, ByteBuffer data) throws IOException {
        NodeTable.Node n = node(req);
        long movesBefore = nodes.nameMoves(); // before the path: a rename after it is seen
        VfsPath p = path(n);
        dev.chibifs.store.HeldFile retried = staleNames.retried(req.pid, n, true, clock);
        if (retried == null) {
            requireNoNameDropPending(req, n, p, true);
        }
        Caller caller = caller(req);
        openFiles.admit(caller, req.uid()); // every open holds a descriptor of ours
        int requested = req.openFlags();
        Set<OpenFlag> flags = openFlags(requested);
        // Linux truncates even for a read-only open (ATOMIC_O_TRUNC brings O_TRUNC here): a write
        boolean truncateReadOnly = (requested & Linux.O_TRUNC) != 0 && (requested & Linux.O_ACCMODE) == Linux.O_RDONLY;
        FileHandle handle;
        for (int follows = 0; ; follows++) {
            try {
                handle = handleFor(req, n, caller, p, flags, truncateReadOnly, retried,
                        follows < NAME_MOVES_FOLLOWED ? movesBefore : NOT_FOLLOWED);
                break;
            } catch (MovedMeanwhile moved) {
                p = moved.path;
                movesBefore = moved.movesBefore;
            }
        }
        Metadata opened = handle.opened();
        boolean readOnly = flags.equals(READ_ONLY);
        boolean small = opened != null && opened.isFile() && opened.size() <= Math.min(STORED_AT_OPEN, data.capacity())
                && readOnly && storeChannel != null;
        int backing;
        int openFlags = handle.hearsCloses() ? 0 : NO_FLUSH;
        synchronized (n) {
            boolean changing = directIo && readOnly && changing(n, opened);
            // where reads pass through, a small file at rest is read from pages stored whole here instead:
            // a read passed through makes the kernel take the atime as changed and ask for attributes at
            // the next stat. Not one that is changing, nor without direct reads for those: a read through
            // the page cache that a rewrite races can read NULs, which passthrough never does
            boolean stored = small && !changing && n.backingOpens == 0 && (!backingFiles.granted() || directIo);
            try {
                backing = n.cachedOpens > 0 || stored ? 0 : backingFiles.backing(n, handle, requested, writable(flags));
            } catch (IOException | RuntimeException e) {
                handle.close();
                throw e;
            }
            if (backing != 0) {
                openFlags |= FuseProtocol.FOPEN_PASSTHROUGH;
            } else {
                n.cachedOpens++;
                if (changing || appending(flags)) {
                    // the pages stay as they are, true to what n.pages says, for reads and writes go past them
                    openFlags |= FuseProtocol.FOPEN_DIRECT_IO | FuseProtocol.FOPEN_KEEP_CACHE;
                } else if (opened == null) {
                    n.pagesLeftAt(PageStamp.UNKNOWN); // dropped at the reply, then filled by reads of a file we did not stat
                } else if (keepPages(n, handle, opened, stored && n.cachedOpens == 1, data)) {
                    // a small file read with nothing else open: its pages, stored whole, serve every
                    // read while it stays the same, with no READ round trip
                    openFlags |= FuseProtocol.FOPEN_KEEP_CACHE;
                }
            }
        }
        long fh = register(req, handle, caller, flags, n, backing != 0);
        FuseChannel notify = storeChannel;
        if (opened != null && notify != null && n.toldOtherThan(opened)) {
            // the file changed since the kernel was told its attributes: behind the mount (before the
            // feed told), or on S3 by another host, its content fetched by this open while the kernel
            // keeps what the listing said. Attributes only (no pages, no lock to wait for): written at
            // once, from within the request on that very inode, so the process that opened sees them
            long toldBefore = n.toldTimes(); // before the notice: a reply told after it may be kept
            notices.get().invalInode(n.id, -1, 0).sendNotice(notify);
            n.untoldUnlessToldSince(toldBefore);
        }
        out.open(fh, openFlags, backing);
    }

    /**
     * A handle of node {@code n}'s file, opened by its path {@code p} as the kernel asked ({@link #open});
     * {@link MovedMeanwhile} where {@code p} stands for another file, or for none, because a rename
     * through this mount since {@code movesBefore} moved the node ({@link #NOT_FOLLOWED}: not asked).
     */
    private FileHandle handleFor(FuseRequest req, NodeTable.Node n, Caller caller, VfsPath p, Set<OpenFlag> flags,
                                 boolean truncateReadOnly, dev.chibifs.store.HeldFile retried, long movesBefore)
            throws IOException {
        FileHandle handle = n.namelessInKernel ? reopened(n, caller, p, flags, truncateReadOnly) : null;
        if (handle == null && !n.removed && (truncateReadOnly || flags.contains(OpenFlag.TRUNCATE))) {
            // a truncating open changes the file before its identity is checked below: by a name that
            // still reaches the node (its first may stand for another file now, made behind the mount)
            VfsPath at = reaching(n, p);
            if (at == null) {
                handle = openHeldOrStale(req, n, caller, p, flags, null, retried, movesBefore);
            } else {
                p = at;
            }
        }
        if (handle == null) {
            if (truncateReadOnly) {
                router.truncate(caller, p, 0);
            }
            try {
                handle = router.open(caller, p, flags, 0);
            } catch (NoSuchFileException gone) {
                VfsPath other = anotherName(n);
                if (other != null) {
                    p = other;
                    handle = router.open(caller, p, flags, 0);
                } else {
                    // the kernel's cached name outlived the file (removed elsewhere, another mount or
                    // chibi, before the change feed told the kernel): ESTALE makes it look the name up
                    // again and retry, so an open(O_CREAT) creates the file and a plain open says ENOENT
                    // from a fresh lookup, as on a disk. SQLite on two mounts failed "unable to open
                    // database file" on the journal the other mount had just deleted. Its last name gone
                    // through this mount too: the caller's path walk may have found it just before (a
                    // name renamed over with link() and rename(), as git and maildir do), so ENOENT only
                    // to the retry of the same node, which had no name to walk again (/proc/PID/fd/N)
                    boolean noName = n.removed && staleNames.askedAgain(req.pid, n, true, clock);
                    handle = openHeldOrStale(req, n, caller, p, flags, noName ? gone : null, retried, movesBefore);
                }
            } catch (IOException e) {
                if (dev.chibifs.sys.Errors.errno(e) != Linux.ELOOP) {
                    throw e;
                }
                // the name is a link now (made behind the kernel's cached name, which took it for this
                // file): as a name standing for another file, below; the kernel's walk again follows it
            }
        }
        if (truncateReadOnly) {
            n.changing();
        }
        Metadata opened = handle == null ? null : handle.opened();
        if (handle == null || opened != null && n.identity != null
                && !NodeTable.Identity.of(router.resolve(p).storage(), opened).equals(n.identity)) {
            // the name now stands for another file (replaced in the store behind the kernel's cached
            // name, or renamed over after the caller's path walk): another name of a hard-linked file
            // may still reach it (the kernel's lookup again would find this node by that name, and
            // every retry was ESTALE); else ESTALE makes the kernel look the name up again and retry
            // the open (LOOKUP_REVAL)
            if (handle != null) {
                handle.close();
            }
            VfsPath other = anotherName(n);
            if (other != null) {
                p = other;
                handle = router.open(caller, p, flags, 0);
            } else {
                handle = openHeldOrStale(req, n, caller, p, flags, null, retried, movesBefore);
            }
        }
        return handle;
    }

    /** The kernel is told {@code m} of node {@code n} in the reply being written. */
    void replied(NodeTable.Node n, Metadata m) {
        FuseChannel notify = storeChannel;
        long toldBefore = n.toldTimes();
        if (n.told(m) && notify != null) {
            // read before a change the feed heard meanwhile, and told nothing of (NodeTable.Node#told):
            // the kernel drops what this reply says, as it was sent before this notice. Attributes only,
            // so it is written from within the request, as an open's (no pages, no lock to wait for)
            notices.get().invalInode(n.id, -1, 0).sendNotice(notify);
            n.untoldUnlessToldSince(toldBefore + 1); // this reply's own telling: dropped by the notice
        }
        nodes.linksTold(n, m.links());
    }

    /**
     * An open of node {@code n}, which the kernel knows by no name, so an open of /proc/PID/fd/N: the
     * file another open of it holds, opened again (as on a disk, where `cat /proc/PID/fd/N` gets
     * back a removed log a process still writes); {@code truncate} empties it first. Null where
     * none is open, or its store opens files by name only.
     */
    private FileHandle reopened(NodeTable.Node n, Caller caller, VfsPath p, Set<OpenFlag> flags, boolean truncate)
            throws IOException {
        boolean writes = truncate || flags.contains(OpenFlag.WRITE) || flags.contains(OpenFlag.APPEND);
        FileHandle again = throughAnOpenFile(n, open -> {
            // a write is judged where the file is now; anyone reads
            VfsPath at = writes ? judgedAt(p, open) : p;
            if (truncate) {
                router.checkWrite(caller, at);
            }
            return router.reopen(caller, at, open, flags);
        });
        if (again != null && truncate) {
            try {
                again.truncate(0);
            } catch (IOException | RuntimeException e) {
                again.close();
                throw e;
            }
        }
        return again;
    }

    /**
     * An open of node {@code n}, whose name {@code p} no longer reaches it, through {@code retried},
     * the file held for this request where it is the kernel's retry of one answered stale (see
     * {@link StaleNames}); without it, {@code gone} where given, else ESTALE, remembered so that the
     * retry's lookup holds what it finds.
     */
    private FileHandle openHeldOrStale(FuseRequest req, NodeTable.Node n, Caller caller, VfsPath p, Set<OpenFlag> flags,
                                       NoSuchFileException gone, dev.chibifs.store.HeldFile retried, long movesBefore)
            throws IOException {
        if (retried != null) {
            return router.open(caller, p, retried, flags);
        }
        MovedMeanwhile moved = movesBefore == NOT_FOLLOWED ? null : movedSince(n, movesBefore);
        if (moved != null) {
            throw moved;
        }
        if (gone != null) {
            throw gone;
        }
        throw stale(req, n, p, true);
    }

    /**
     * Node {@code n}'s path once the renames through this mount under way have reached the node
     * table, where one since {@code movesBefore} moved a name (the node's, or a directory's above it;
     * it may be back where it was), with the count of moves read before it; else null. An open by a path a rename here had just taken
     * from the node was ESTALE, and where the name moved again before the kernel's one retry, the
     * program saw "Stale file handle" (a tester's loop of opens while another process swapped two
     * directories by three renames: 6-8 in 12,000 opens), where a disk opens the file the walk found.
     */
    private MovedMeanwhile movedSince(NodeTable.Node n, long movesBefore) {
        ownNameChanges.writeLock().lock();
        ownNameChanges.writeLock().unlock();
        long moves = nodes.nameMoves(); // before the path, as at the open's start
        return n.removed || moves == movesBefore ? null : new MovedMeanwhile(path(n), moves);
    }

    /** The path of the node an open asked for, which a rename through this mount moved while it looked; caught by {@link #open}. */
    private static final class MovedMeanwhile extends IOException {
        final VfsPath path;
        final long movesBefore;

        MovedMeanwhile(VfsPath path, long movesBefore) {
            super(path.toString());
            this.path = path;
            this.movesBefore = movesBefore;
        }
    }

    /** {@code p}, node {@code n}'s path, where it still reaches the node's file; else another name that does, or null. */
    VfsPath reaching(NodeTable.Node n, VfsPath p) throws IOException {
        try {
            if (n.identity == null || n.identity.isOf(router.metadata(null, p))) {
                return p;
            }
        } catch (NoSuchFileException gone) {
            // gone by this name: another may still reach it
        }
        return anotherName(n);
    }

    /**
     * Another name of hard-linked file {@code n} that still reaches it, made its first, where its
     * first no longer does (renamed or removed behind the kernel's back while another name stays):
     * else every request by its first name was ESTALE, and the kernel's lookup of a remaining name
     * found the same node, for as long as it was held. Null where no other name reaches it.
     */
    private VfsPath anotherName(NodeTable.Node n) {
        if (n.directory || n.identity == null) {
            return null;
        }
        for (NodeTable.Link l : nodes.links(n)) {
            if (l.equals(n.link)) {
                continue;
            }
            try {
                VfsPath q = nodes.path(l.parent()).child(l.name());
                if (n.identity.isOf(router.metadata(null, q)) && nodes.firstNameNow(n, l)) {
                    return q;
                }
            } catch (IOException | RuntimeException gone) {
                // that name went too, or its directory did: the next one
            }
        }
        return null;
    }

    /**
     * ESTALE, once, where the kernel is being told to drop a name it held for {@code n} (a lookup of
     * another name found the file moved behind its back: {@link NodeTable#takeStaleInKernel}), once
     * that notice is written: the request may have come through the old name, which stands for
     * another file now (an S3 conflict keeps this host's file under its copy's name), and the
     * kernel's retry walks the path again. One sent the microseconds before the notice landed opened
     * the copy: `echo new > name` right after a look at the copy wrote into the copy. Not where the
     * notice was posted {@link HeldAnswers#NAME_DROP_SETTLED} ago and is written: no walk finds the
     * name then, and an open by the node came by the node.
     */
    void requireNoNameDropPending(FuseRequest req, NodeTable.Node n, VfsPath p, boolean open) throws ErrnoException {
        long notice = n.nameDropNotice;
        if (notice == 0) {
            return;
        }
        n.nameDropNotice = 0;
        try {
            if (heldAnswers.awaitNameDrop(notice)
                    && clock.millis() - n.nameDropPostedAt >= HeldAnswers.NAME_DROP_SETTLED.toMillis()) {
                return; // by the node, not by that name: a reopen through /proc/self/fd, which the kernel cannot retry
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        throw stale(req, n, p, open);
    }

    /**
     * The store moved the file at {@code from} to {@code to} by itself ({@link Router#tellOwnMoves}:
     * an S3 conflict keeps this host's file, and the handles open on it, under its copy's name, the
     * other host's version coming in at the name). The node the kernel holds for it goes to its new
     * name, as a lookup of that name would take it ({@link NodeTable#movedBehind}), and the kernel is
     * told to drop the old name. Before, nothing told either until something looked up the copy:
     * `stat name` showed this host's file until the entry expired, and a reopen through
     * /proc/self/fd/N, which the kernel cannot retry, was ESTALE (a tester's S3 hosts). Where the
     * kernel holds no directory node for the copy's place (a copy beside a file another host made
     * of a directory here), the node stays as it was, found once that place is looked up.
     */
    void movedByStore(VfsPath from, VfsPath to) {
        NodeTable.Node fromDir = heldDirectory(from.parent());
        NodeTable.Node toDir = fromDir == null ? null : heldDirectory(to.parent());
        NodeTable.Node n = toDir == null ? null : nodes.child(fromDir, from.fileName());
        if (n == null || n.directory) {
            return;
        }
        Metadata m;
        try {
            m = router.metadata(Caller.SYSTEM, to); // reading asks no permission; the inode as the kernel has it
        } catch (IOException | RuntimeException gone) {
            return; // moved on or removed since: what looks at it next finds that
        }
        if (NodeTable.Identity.of(router.resolve(to).storage(), m).equals(n.identity) && nodes.movedBehind(n, toDir, to.fileName())) {
            heldAnswers.dropStaleNames(clock);
        }
    }

    /** The directory node the kernel holds at {@code dir}, by the names it was given; null where it holds none. */
    private NodeTable.Node heldDirectory(VfsPath dir) {
        NodeTable.Node d = nodes.root();
        for (String name : dir.segments()) {
            d = nodes.child(d, name);
            if (d == null || !d.directory) {
                return null;
            }
        }
        return d;
    }

    /**
     * ESTALE for node {@code n} at {@code p}, remembered so that the kernel's retry holds what its
     * lookup finds for the retried request ({@code open}: an OPEN).
     */
    private ErrnoException stale(FuseRequest req, NodeTable.Node n, VfsPath p, boolean open) {
        NodeTable.Link name = n.link;
        if (name != null) {
            staleNames.answered(req.pid, n, name, open, clock.instant());
        }
        return new ErrnoException(Linux.ESTALE, p.toString(), "Stale file handle");
    }

    /**
     * Whether an open with {@code flags} that is served (not passed through) goes past the page cache
     * because it appends. Through the page cache, a write that ends in a page it did not fill from its
     * start goes to the daemon as two WRITEs, split at that page, and each is appended where the file
     * ends then: another mount's append (another agent's line in a shared log) landed between the two
     * halves of a line. A direct write is one WRITE up to max_write, appended whole, as on a disk.
     * Passthrough appends to the store file itself, whole.
     */
    private boolean appending(Set<OpenFlag> flags) {
        return directIo && flags.contains(OpenFlag.APPEND);
    }

    /**
     * Whether node {@code n} is changing: open for writing on this mount, or modified (here, through
     * another mount, by chibi) in the last {@link #CHANGING_FOR}. Its reads then pass through, or go
     * past the page cache (FOPEN_DIRECT_IO): a read through the page cache that a rewrite races
     * (`echo > f`: truncate, then write) gets a READ answered short from the moment between the two;
     * the kernel fills the rest of the page with zeros and, the size having moved meanwhile, keeps the
     * new size over them: the reader gets NULs where the new content is. A direct read answered short
     * is just short. Under the node's monitor.
     */
    private boolean changing(NodeTable.Node n, Metadata opened) {
        if (n.hasWriters()) {
            return true;
        }
        if (opened == null || !opened.isFile()) {
            return false;
        }
        // a modification time ahead of this clock (another host's) counts as just now
        return opened.modified().toInstant().isAfter(clock.instant().minus(CHANGING_FOR));
    }

    /**
     * Whether an open of node {@code n} through the kernel's page cache may keep the pages the kernel
     * has: yes while they are true to the file as {@code opened} says it is, or once its whole content
     * is stored in them here ({@code store}: a small file with nothing else open, so no process can
     * hold one of its pages while waiting for this daemon). Otherwise the kernel drops them all when
     * the open is answered, and reads fill them again. Called under the node's monitor.
     */
    private boolean keepPages(NodeTable.Node n, FileHandle handle, Metadata opened, boolean store, ByteBuffer data) {
        PageStamp now = PageStamp.of(opened);
        PageStamp before = n.pages;
        boolean whole = n.pagesWhole;
        n.pagesLeftAt(now); // kept, stored, or dropped when the kernel gets the reply: true to now either way
        if (now.equals(before)) {
            // true to the file, but a write through them leaves its last page part-filled, for a READ to
            // complete (the first read after `echo > f`): stored whole once, no READ
            n.pagesWhole = whole || store && storeContent(n, handle, (int) opened.size(), data);
            return true;
        }
        // Before a store, what the kernel had goes (INVAL_INODE from offset 0, attributes too): a page
        // past the new end would survive it, and a write through the cache later could show its old
        // bytes. Stale attributes alone are the open's to drop (see open)
        FuseChannel channel = storeChannel;
        if (channel != null && store && before != null) {
            try {
                long toldBefore = n.toldTimes();
                notices.get().invalInode(n.id, 0, 0).send(channel);
                n.untoldUnlessToldSince(toldBefore);
            } catch (IOException e) {
                LOG.debug("{}: pages and attributes not dropped at open: {}", nodes.path(n), e.toString());
                return false;
            }
        }
        n.pagesWhole = store && storeContent(n, handle, (int) opened.size(), data);
        return n.pagesWhole;
    }

    /**
     * Puts the whole content of node {@code n} ({@code size} bytes) into the kernel's page cache
     * (NOTIFY_STORE). False when it could not, and then the open must not keep the pages.
     */
    private boolean storeContent(NodeTable.Node n, FileHandle handle, int size, ByteBuffer data) {
        if (size == 0) {
            return true;
        }
        try {
            data.clear().limit(size);
            while (data.hasRemaining()) {
                if (handle.read(data, data.position()) <= 0) {
                    return false; // shorter than it was a moment ago: changed, let the reads fill it
                }
            }
            data.flip();
            notices.get().store(n.id, 0, size).data(data).send(storeChannel);
            return true;
        } catch (IOException e) {
            LOG.debug("{}: content not stored at open: {}", nodes.path(n), e.toString());
            return false;
        }
    }

    /**
     * Whether an open with {@code flags} writes: the one test for the open and its release (an
     * access mode of 3, which Linux lets a process ask for, is no writer; it opens as a reader).
     */
    private static boolean writable(Set<OpenFlag> flags) {
        return flags.contains(OpenFlag.WRITE) || flags.contains(OpenFlag.APPEND);
    }

    private long register(FuseRequest req, FileHandle handle, Caller caller, Set<OpenFlag> flags, NodeTable.Node n,
                          boolean passthrough) {
        boolean writable = writable(flags);
        if (writable) {
            n.writerOpened();
        }
        return openFiles.add(new OpenFile(handle, caller, writable, n, passthrough, req.pid, req.uid()));
    }

    /** The kernel forgot {@code count} lookups of node {@code id}. */
    void forget(long id, long count) {
        NodeTable.Node gone = nodes.forget(id, count);
        if (gone != null) {
            staleNames.forgotten(gone);
            follower.forgotten(gone);
        }
    }

    void create(FuseRequest req, FuseReply out) throws IOException {
        NodeTable.Node parent = node(req);
        String name = req.entryName();
        VfsPath p = childPath(parent, name);
        Caller caller = caller(req);
        openFiles.admit(caller, req.uid()); // every open holds a descriptor of ours
        Set<OpenFlag> flags = openFlags(req.openFlags() | Linux.O_CREAT);
        FileHandle handle;
        NodeTable.Node n;
        ownNameChanges.readLock().lock(); // see ownNameChanges
        try {
            handle = createdOrOpened(req, p, caller, flags);
            Metadata m;
            try {
                m = handle.metadata();
            } catch (IOException | RuntimeException e) {
                handle.close();
                throw e;
            }
            // O_CREAT without O_EXCL may have opened an existing file: the store says whether this open made it
            n = entry(req, parent, name, p, m, out, handle.opened() == null);
        } finally {
            ownNameChanges.readLock().unlock();
        }
        out.rememberedNode = n;
        openedWithEntry(req, out, n, handle, caller, flags);
    }

    /** CREATE's open of {@code p} in the store. */
    private FileHandle createdOrOpened(FuseRequest req, VfsPath p, Caller caller, Set<OpenFlag> flags) throws IOException {
        try {
            return router.open(caller, p, flags, req.createMode() & 07777);
        } catch (IOException e) {
            if (dev.chibifs.sys.Errors.errno(e) != Linux.ELOOP) {
                throw e;
            }
            // a link where the kernel took the name for missing or a file (another mount made it
            // since): the store follows no link, but open(2) does, and on ESTALE the kernel walks
            // the path again, finds the link and follows it (or answers ELOOP itself to O_NOFOLLOW)
            throw new ErrnoException(Linux.ESTALE, p.toString(), "Stale file handle");
        }
    }

    /**
     * open(2) with O_TMPFILE (7.37): CREATE's request and reply for a file with no name, a node the
     * kernel holds through its open alone until a LINK names it (linkat of /proc/self/fd/N). A store
     * without such files answers EOPNOTSUPP, this request only: ENOSYS would end TMPFILE for the mount.
     */
    void tmpfile(FuseRequest req, FuseReply out) throws IOException {
        NodeTable.Node parent = node(req);
        VfsPath dir = directoryPath(parent);
        VfsPath p = Router.unnamedIn(dir);
        Caller caller = caller(req);
        openFiles.admit(caller, req.uid()); // every open holds a descriptor of ours
        Set<OpenFlag> flags = openFlags(req.openFlags());
        FileHandle handle = router.openUnnamed(caller, dir, req.createMode() & 07777);
        NodeTable.Node n;
        Metadata m;
        try {
            m = handle.metadata();
            n = nodes.rememberUnnamed(parent, p.fileName(), NodeTable.Identity.of(router.resolve(p).storage(), m));
        } catch (IOException | RuntimeException e) {
            handle.close();
            throw e;
        }
        replied(n, m);
        // no link count yet: a link count of 0 is what lets the kernel's linkat name it (I_LINKABLE)
        out.entry(n.id, FuseReply.Validity.NONE, timeouts.brief(), replies.attributes(req, p, m));
        out.rememberedNode = n;
        openedWithEntry(req, out, n, handle, caller, flags);
    }

    /** The open half of CREATE's and TMPFILE's reply, after the entry of new node {@code n}, whose open {@code handle} is. */
    private void openedWithEntry(FuseRequest req, FuseReply out, NodeTable.Node n, FileHandle handle, Caller caller,
                                 Set<OpenFlag> flags) throws IOException {
        int backing;
        try {
            synchronized (n) {
                backing = n.cachedOpens > 0 ? 0 : backingFiles.backing(n, handle, req.openFlags(), writable(flags));
                if (backing == 0) {
                    n.cachedOpens++;
                    if (handle.opened() != null) {
                        n.pagesLeftAt(PageStamp.UNKNOWN); // an existing file, opened without keeping its pages
                    }
                }
            }
        } catch (IOException | RuntimeException e) {
            handle.close();
            forget(n.id, 1); // the entry is not sent: the error is
            throw e;
        }
        int openFlags = (handle.hearsCloses() ? 0 : NO_FLUSH) | (backing != 0 ? FuseProtocol.FOPEN_PASSTHROUGH
                : appending(flags) ? FuseProtocol.FOPEN_DIRECT_IO | FuseProtocol.FOPEN_KEEP_CACHE : 0);
        out.open(register(req, handle, caller, flags, n, backing != 0), openFlags, backing);
    }

    OpenFile openFile(FuseRequest req, boolean forWriting) throws java.nio.file.FileSystemException {
        return openFile(req.handle(), forWriting);
    }

    OpenFile openFile(long fh, boolean forWriting) throws java.nio.file.FileSystemException {
        OpenFile f = openFiles.get(fh);
        if (f == null || forWriting && !f.writable()) {
            throw new ErrnoException(Linux.EBADF, "fh " + fh, "Bad file descriptor");
        }
        return f;
    }

    /**
     * A close(2), where the kernel still sends one (an open that {@link FileHandle#hearsCloses}, or
     * one with locks): its lock owner's record locks go, and the store hears that what was written
     * is what the close leaves, its release coming later.
     */
    void flush(FuseRequest req, FuseReply out) throws IOException {
        OpenFile f = openFiles.get(req.handle());
        if (f != null) {
            locks.flush(f, req);
            f.handle().closedOnce();
        }
    }

    /** Closing the store file releases every lock taken through it (record locks and flock). */
    void release(FuseRequest req, FuseReply out) throws IOException {
        // release_flags' FLOCK_UNLOCK is not read: the close below drops this handle's flock anyway
        release(req.handle());
    }

    /**
     * The handle an OPEN or CREATE (or an OPENDIR: {@code directory}) reply gave, which the kernel
     * never got: its request was answered before (interrupted, see FuseSession), so no RELEASE
     * will come for it.
     */
    void releaseUndelivered(long fh, boolean directory) throws IOException {
        if (directory) {
            directories.release(fh);
        } else {
            release(fh);
        }
    }

    private void release(long fh) throws IOException {
        OpenFile f = openFiles.remove(fh);
        if (f != null) {
            try {
                NodeTable.Node n = f.node();
                locks.released(n, fh);
                if (f.passthrough()) {
                    backingFiles.release(n, f.writable());
                } else {
                    // a writer's pages are what it wrote, but the store file may hold more: another
                    // mount's or chibi's writes while it was open, which its attributes at the close
                    // would count as what the pages hold (the next open kept them, and an mmap written
                    // back from them undid another mount's write). The next open drops them
                    synchronized (n) {
                        n.cachedOpens--;
                        if (f.writable()) {
                            n.pagesLeftAt(PageStamp.UNKNOWN);
                        }
                    }
                }
                if (f.writable()) {
                    // what the last writer left is kept when the feed tells the close (IN_CLOSE_WRITE
                    // of the handle closed below), with the stat the feed makes of it anyway
                    n.writerReleased();
                }
            } finally {
                synchronized (f) { // not while a request of another open of the node uses it (metadataOrOpen)
                    f.handle().close();
                }
            }
        }
    }

    /**
     * The files open here beside node {@code id}, in a directory whose changes are not followed (an
     * S3 prefix): a lock's grant drops their pages with the locked file's. The store compared them
     * with what other hosts left as it took the lock (SQLite in WAL mode locks the {@code -shm}, and
     * the database and {@code -wal} beside it change under that lock); where changes are followed,
     * the change feed tells the kernel instead.
     */
    List<Long> openBesideUnfollowed(long id) {
        NodeTable.Node n = nodes.get(id);
        NodeTable.Link link = n == null ? null : n.link;
        if (link == null || follower.follows(link.parent())) {
            return List.of();
        }
        return openFiles.openIn(link.parent(), n).stream().map(o -> o.id).toList();
    }

    /**
     * fsync(2) of a directory, by its node (directories are opened without a handle): the store
     * makes its names last, so a rename followed by the directory's fsync survives a crash.
     */
    void fsyncdir(FuseRequest req, FuseReply out) throws IOException {
        NodeTable.Node n = node(req);
        router.syncDirectory(caller(req), path(n));
    }

    /** What the daemon holds for the kernel now, for {@code chibifs stats}. */
    FuseDaemon.Held held() {
        return new FuseDaemon.Held(nodes.size(), openFiles.size(), follower.followed());
    }

    /** Closes what is still open at unmount; returns how many files were. */
    int closeAll() {
        directories.clear();
        return openFiles.closeAll();
    }
}
