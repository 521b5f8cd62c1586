package dev.chibifs.fuse;

import dev.chibifs.path.VfsPath;
import dev.chibifs.policy.Caller;
import dev.chibifs.policy.ZonePolicy;
import dev.chibifs.router.PolicyDeniedException;
import dev.chibifs.router.Router;
import dev.chibifs.store.FileHandle;
import dev.chibifs.store.Metadata;
import dev.chibifs.store.OpenFlag;
import dev.chibifs.store.SpaceInfo;
import com.kenai.jffi.MemoryIO;
import jnr.ffi.Pointer;
import jnr.ffi.Struct;
import jnr.ffi.types.mode_t;
import jnr.ffi.types.off_t;
import jnr.ffi.types.size_t;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import ru.serce.jnrfuse.ErrorCodes;
import ru.serce.jnrfuse.FuseStubFS;
import ru.serce.jnrfuse.struct.FileStat;
import ru.serce.jnrfuse.struct.FuseFileInfo;
import ru.serce.jnrfuse.struct.FuseOperations;
import ru.serce.jnrfuse.struct.Statvfs;
import ru.serce.jnrfuse.struct.Timespec;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.NoSuchFileException;
import java.nio.file.attribute.FileTime;
import java.time.Instant;
import java.util.EnumSet;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/**
 * The FUSE adapter: each callback resolves the path and the caller, delegates to the
 * {@link Router}, and maps failures to errno in one place ({@link #fail}). No exception
 * escapes a callback: jnr-fuse would turn it into a silent EIO.
 */
final class ChibiFuse extends FuseStubFS {

    private static final Logger LOG = LoggerFactory.getLogger(ChibiFuse.class);

    private static final int O_ACCMODE = 03;
    private static final int O_WRONLY = 01;
    private static final int O_RDWR = 02;
    private static final int O_CREAT = 0100;
    private static final int O_EXCL = 0200;
    private static final int O_TRUNC = 01000;
    private static final int O_APPEND = 02000;
    private static final int W_OK = 2;
    private static final int X_OK = 1;
    private static final long UTIME_NOW = (1L << 30) - 1;
    private static final long UTIME_OMIT = (1L << 30) - 2;
    private static final int FLAG_NULLPATH_OK = 1;
    private static final int KEEP_CACHE = 1 << 1;
    private static final int FLAG_UTIME_OMIT_OK = 1 << 2;
    private static final int S_IFREG = 0100000;
    private static final int S_IFDIR = 0040000;
    private static final int S_IFLNK = 0120000;
    /** Wraps native memory as a ByteBuffer without copying it (JNI NewDirectByteBuffer). */
    private static final MemoryIO MEMORY = MemoryIO.getInstance();

    private final Router router;
    private final CallerResolver callers;
    private final AttributeView attributes;
    private final OpenFileTable openFiles = new OpenFileTable();
    private final KernelInodes kernelInodes = new KernelInodes();
    private final PageCache pageCache = new PageCache();
    private final KernelAttributes kernelAttributes = new KernelAttributes();
    private final KernelEntries kernelEntries;
    /** The file callbacks libfuse calls, held for as long as it may call them. */
    private final NativeCallbacks callbacks;

    ChibiFuse(Router router, CallerResolver callers, long mountUid, long mountGid) {
        this.router = router;
        this.callers = callers;
        this.attributes = new AttributeView(callers, mountUid, mountGid);
        this.kernelEntries = new KernelEntries(router, kernelInodes, kernelAttributes);
        enableLibfuseFlags();
        this.callbacks = new NativeCallbacks(fuseOperations, this);
    }

    /**
     * Follows the store's changes ({@link KernelEntries}), before mounting: true when they can be
     * followed, and then the kernel may keep names, attributes and listings for long.
     */
    boolean followStore() {
        kernelEntries.start();
        if (kernelEntries.following()) {
            callbacks.cacheListings();
        }
        return kernelEntries.following();
    }

    /**
     * Sets two libfuse 2.9 flags jnr-fuse leaves as padding (a bitfield after {@code bmap}):
     * {@code nullpath_ok}, so read, write, fstat and release on a handle whose name was unlinked or
     * renamed over reach us with a null path (libfuse answers ENOENT itself otherwise), and
     * {@code utime_omit_ok}, so {@code touch -a} and {@code touch -m} pass UTIME_OMIT through.
     */
    private void enableLibfuseFlags() {
        Pointer ops = jnr.ffi.Struct.getMemory(fuseOperations);
        // the word after the 38 function pointers getattr .. bmap in libfuse 2.9's struct fuse_operations
        long offset = 38L * jnr.ffi.Runtime.getSystemRuntime().addressSize();
        ops.putInt(offset, ops.getInt(offset) | FLAG_NULLPATH_OK | FLAG_UTIME_OMIT_OK);
    }

    @Override
    protected String getFSName() {
        return "chibifs";
    }

    OpenFileTable openFiles() {
        return openFiles;
    }

    KernelInodes kernelInodes() {
        return kernelInodes;
    }

    KernelEntries kernelEntries() {
        return kernelEntries;
    }

    /** The callbacks as libfuse's struct fuse_operations, for {@link FuseLoop}. */
    FuseOperations operations() {
        return fuseOperations;
    }

    private Caller caller() {
        // getContext() is valid only on the callback thread during the call; never cache it
        return callers.isFixed() ? callers.resolve(0) : callers.resolve(getContext().uid.get());
    }

    /**
     * The kernel's request buffer itself, as a ByteBuffer, so pread/pwrite move bytes straight
     * between it and the store file. jnr's Pointer.transferTo between a native pointer and a
     * ByteBuffer-backed one copies byte by byte, which halved sequential throughput.
     */
    private static ByteBuffer fuseBuffer(long buf, long size) {
        return MEMORY.newDirectByteBuffer(buf, (int) size);
    }

    /** The last catch of every callback: expected failures map to errno, anything else logs and is EIO. */
    private int fail(String op, String path, Throwable t) {
        int errno = Errno.of(t);
        if (errno != 0) {
            if (t instanceof PolicyDeniedException) {
                LOG.debug("{} {}: denied: {}", op, path, t.getMessage());
            } else if (LOG.isTraceEnabled()) {
                LOG.trace("{} {}: {}", op, path, t.toString());
            }
            return errno;
        }
        LOG.error("{} {} failed unexpectedly", op, path, t);
        return -ErrorCodes.EIO();
    }

    // ---- attributes ----

    @Override
    public int getattr(String path, FileStat stat) {
        return getattr(path, Struct.getMemory(stat).address());
    }

    /** getattr into the struct stat at {@code stat}, as libfuse calls it ({@link NativeCallbacks}). */
    int getattr(String path, long stat) {
        try {
            VfsPath p = VfsPath.of(path);
            if (FuseLoop.currentOpcode() == FuseLoop.LOOKUP && !p.isRoot() && kernelEntries.following()) {
                // a lookup names its parent's kernel inode: follow that directory before reading the store
                if (!kernelEntries.lookingIn(p.parent(), FuseLoop.currentNodeid())) {
                    FuseLoop.keepThisReplyBrief(); // no change there would reach the kernel
                }
                FuseLoop.lookingUp(p);
            }
            if (isHiddenName(p)) {
                fillHidden(stat, p, hidden(path));
                return 0;
            }
            fill(stat, p, router.metadata(null, p));
            return 0;
        } catch (Throwable t) {
            return fail("getattr", path, t);
        }
    }

    /**
     * fstat answers from the handle: after a rename over its name, or an unlink, the handle's file
     * is no longer what the path names (and libfuse may pass no path at all).
     */
    @Override
    public int fgetattr(String path, FileStat stat, FuseFileInfo fi) {
        return fgetattr(path, Struct.getMemory(stat).address(), fi);
    }

    /** fgetattr into the struct stat at {@code stat}, as libfuse calls it ({@link NativeCallbacks}). */
    int fgetattr(String path, long stat, FuseFileInfo fi) {
        try {
            OpenFile f = openFiles.get(fi.fh.get());
            if (f == null) {
                return path == null ? -ErrorCodes.EBADF() : getattr(path, stat);
            }
            if (path == null) {
                // the look (owner, mode bits) follows the name's zone; a file with no name left looks like /shared
                fill(stat, VfsPath.of("/shared"), f.handle().metadata());
                return 0;
            }
            VfsPath p = VfsPath.of(path);
            if (isHiddenName(p)) {
                fillHidden(stat, p, f.handle());
            } else {
                fill(stat, p, f.handle().metadata());
            }
            return 0;
        } catch (Throwable t) {
            return fail("fgetattr", path, t);
        }
    }

    /**
     * An unlinked open file, which libfuse calls by its hidden name. libfuse takes one off the link
     * count of a hidden file, for the hidden name it thinks is in the store; we unlinked the file for
     * real instead, so we add that one back for a getattr. Otherwise a handle of a file that still
     * has another name reported a link too few (0 for a file with one name left).
     */
    private void fillHidden(long stat, VfsPath p, FileHandle h) throws IOException {
        fill(stat, p, h.metadata());
        if (FuseLoop.currentOpcode() == FuseLoop.GETATTR) {
            // only getattr takes one off; setattr replies what we say
            StatLayout.NLINK.put(stat, StatLayout.NLINK.get(stat) + 1);
        }
    }

    /**
     * For a hidden name, the unlinked open file behind it, once the caller may write there; null for
     * any other name. libfuse 2 sends fchmod, futimens and ftruncate of an unlinked file as chmod,
     * utimens and truncate of its hidden name, which is not in the store: they go to the handle.
     */
    private FileHandle unlinkedOpenFile(VfsPath p) throws IOException {
        if (!isHiddenName(p)) {
            return null;
        }
        router.checkWrite(caller(), p);
        return hidden(p.toString());
    }

    /** The handle behind a hidden name; NoSuchFileException when there is none. */
    private FileHandle hidden(String path) throws NoSuchFileException {
        FileHandle h = openFiles.hidden(path);
        if (h == null) {
            throw new NoSuchFileException(path);
        }
        return h;
    }

    private void fill(long stat, VfsPath p, Metadata m) {
        boolean following = kernelEntries.following();
        if (following) {
            if (kernelEntries.briefAbout(p, m.isDirectory())) {
                // a directory's attributes change with what is in it, a file's are told by its directory's feed
                FuseLoop.keepThisReplyBrief();
            } else if (m.isDirectory() && !kernelEntries.follows(p)) {
                // its mtime and link count change with what is in it, which no watch of its own tells yet
                // (its parent's tells of its name): until something looks into it through the mount
                FuseLoop.keepItsAttributesBrief();
            }
        }
        if (m.isDirectory() && following) {
            // for KernelEntries: a directory made or looked up through this mount needs no invalidation
            kernelAttributes.told(m, p, isEntryReply(FuseLoop.currentOpcode()), kernelEntries.changesSeen());
        } else if (m.isFile()) {
            int op = FuseLoop.currentOpcode();
            // these requests name the inode itself (a lookup names its parent); only files have several names
            long self = op == FuseLoop.GETATTR || op == FuseLoop.SETATTR || op == FuseLoop.OPEN ? FuseLoop.currentNodeid() : 0;
            kernelInodes.seen(m.inode(), self);
            // names matter only to KernelEntries: without it, no path is kept or compared per reply
            VfsPath by = following ? p : null;
            boolean news = kernelAttributes.told(m, by, isEntryReply(op), kernelEntries.changesSeen());
            if (op == FuseLoop.SETATTR || news && m.links() > 1) {
                // changed through this inode (libfuse asks for the attributes after a setattr), or elsewhere
                // and this reply is the first to say so: the file's other kernel inodes cache older attributes
                kernelInodes.changedThrough(m.inode(), self);
            }
            if (m.links() > 1 || openFiles.hiddenOpen(m.inode())) {
                // a lookup, link or create of a file with other names, or open under a hidden one (the
                // kernel's inode of the handles is another): its entry reply tells the node id
                FuseLoop.watchThisReply();
            }
        }
        StatLayout.MODE.put(stat, attributes.mode(p, m));
        StatLayout.UID.put(stat, attributes.uid(p));
        StatLayout.GID.put(stat, attributes.gid(p));
        StatLayout.INO.put(stat, m.inode());
        StatLayout.NLINK.put(stat, m.links());
        StatLayout.SIZE.put(stat, m.size());
        StatLayout.BLKSIZE.put(stat, 4096);
        StatLayout.BLOCKS.put(stat, (m.size() + 511) / 512);
        putTime(stat, StatLayout.ATIME_SEC, StatLayout.ATIME_NSEC, m.accessed());
        putTime(stat, StatLayout.MTIME_SEC, StatLayout.MTIME_NSEC, m.modified());
        putTime(stat, StatLayout.CTIME_SEC, StatLayout.CTIME_NSEC, m.changed());
    }

    private static void putTime(long stat, StatLayout.Field seconds, StatLayout.Field nanos, FileTime time) {
        long since1970 = time.to(TimeUnit.NANOSECONDS);
        if (since1970 != Long.MIN_VALUE && since1970 != Long.MAX_VALUE) {
            // 1678 to 2262: whole nanoseconds, as Libc.stat keeps them, with no Instant per reply
            seconds.put(stat, Math.floorDiv(since1970, 1_000_000_000L));
            nanos.put(stat, Math.floorMod(since1970, 1_000_000_000L));
        } else {
            Instant i = time.toInstant();
            seconds.put(stat, i.getEpochSecond());
            nanos.put(stat, i.getNano());
        }
    }

    @Override
    public int access(String path, int mask) {
        try {
            VfsPath p = VfsPath.of(path);
            Metadata m = router.metadata(null, p);
            if ((mask & W_OK) != 0 && !ZonePolicy.mayWrite(caller(), p)) {
                return -ErrorCodes.EACCES();
            }
            if ((mask & X_OK) != 0 && !m.isDirectory() && (m.mode() & 0111) == 0) {
                return -ErrorCodes.EACCES();
            }
            return 0;
        } catch (Throwable t) {
            return fail("access", path, t);
        }
    }

    @Override
    public int readlink(String path, Pointer buf, @size_t long size) {
        try {
            byte[] target = router.readLink(null, VfsPath.of(path)).getBytes(java.nio.charset.StandardCharsets.UTF_8);
            int n = (int) Math.min(target.length, size - 1);
            buf.put(0, target, 0, n);
            buf.putByte(n, (byte) 0);
            return 0;
        } catch (Throwable t) {
            return fail("readlink", path, t);
        }
    }

    @Override
    public int statfs(String path, Statvfs stbuf) {
        try {
            SpaceInfo s = router.space(VfsPath.of(path));
            long bs = s.blockSize() > 0 ? s.blockSize() : 4096;
            stbuf.f_bsize.set(bs);
            stbuf.f_frsize.set(bs);
            stbuf.f_blocks.set(s.totalBytes() / bs);
            stbuf.f_bfree.set(s.freeBytes() / bs);
            stbuf.f_bavail.set(s.availableBytes() / bs);
            stbuf.f_namemax.set(s.maxNameLength());
            // df -i, and programs that check for free inodes before writing many files
            stbuf.f_files.set(s.totalFiles());
            stbuf.f_ffree.set(s.freeFiles());
            stbuf.f_favail.set(s.freeFiles());
            return 0;
        } catch (Throwable t) {
            return fail("statfs", path, t);
        }
    }

    // ---- directories ----

    /**
     * Under --kernel-cache: a listing of a directory whose changes are followed is kept by the
     * kernel (until a change there, made through this mount or told by {@link KernelEntries}), so
     * a repeated {@code git status}, {@code find} or {@code ls} reads no directory twice. Anyone may
     * list any directory (path is policy), so opendir refuses nothing that readdir would not.
     */
    int opendir(String path) {
        try {
            if (kernelEntries.lookingIn(VfsPath.of(path), FuseLoop.currentNodeid())) {
                FuseLoop.cacheThisListing();
            }
            return 0;
        } catch (Throwable t) {
            return fail("opendir", path, t);
        }
    }

    /**
     * Every entry in one call (offset 0 throughout: libfuse keeps the listing and serves the
     * kernel's READDIR requests from it). {@code buf} and {@code filler} are libfuse's addresses.
     */
    int readdir(String path, long buf, long filler) {
        try {
            NativeCallbacks.DirectoryFiller fill = NativeCallbacks.filler(filler, buf);
            FuseLoop.listing(path);
            fill.add(".", 0);
            fill.add("..", 0);
            // straight from the store's getdents buffer into libfuse's: no list, no object per entry
            router.forEachEntry(null, VfsPath.of(path), (name, offset, length, kind) -> {
                // the type goes into each dirent (d_type), so find -type, fts and git need no stat per entry
                int type = switch (kind) {
                    case FILE -> S_IFREG;
                    case DIRECTORY -> S_IFDIR;
                    case SYMLINK -> S_IFLNK;
                    default -> 0;
                };
                return fill.add(name, offset, length, type);
            });
            return 0;
        } catch (Throwable t) {
            return fail("readdir", path, t);
        }
    }

    /**
     * The attributes of {@code p} for its entry in a READDIRPLUS ({@link DirectoryPlus}), as a
     * GETATTR of kernel inode {@code nodeid} would reply them; a hidden name, or one that is gone,
     * goes out without.
     */
    int plusAttributes(VfsPath p, long nodeid, long stat) {
        try {
            if (isHiddenName(p)) {
                return DirectoryPlus.Attributes.NONE;
            }
            Metadata m = router.metadata(null, p);
            return FuseLoop.asAttributeReply(nodeid, () -> fill(stat, p, m));
        } catch (Throwable t) {
            return DirectoryPlus.Attributes.NONE;
        }
    }

    @Override
    public int mkdir(String path, @mode_t long mode) {
        try {
            VfsPath p = VfsPath.of(path);
            refuseHiddenName(p);
            router.createDirectory(caller(), p);
            return 0;
        } catch (Throwable t) {
            return fail("mkdir", path, t);
        }
    }

    @Override
    public int rmdir(String path) {
        try {
            router.removeDirectory(caller(), VfsPath.of(path));
            return 0;
        } catch (Throwable t) {
            return fail("rmdir", path, t);
        }
    }

    // ---- names ----

    /**
     * Without hard_remove, libfuse keeps an unlinked (or renamed-over) open file reachable by
     * renaming it to {@code .fuse_hidden<16 hex>} and asks for that name in fstat; with hard_remove
     * fstat of such a file is ENOENT. The store must not hold such names, so "hiding" really
     * removes the name in the store and keeps a handle on the file here, which answers getattr for
     * the hidden name until libfuse unlinks it at the last close.
     */
    private int hide(String oldpath, String hiddenPath) throws IOException {
        VfsPath from = VfsPath.of(oldpath);
        Caller caller = caller();
        router.checkRemove(caller, from);
        FileHandle h = router.open(caller, from, EnumSet.of(OpenFlag.READ), 0);
        try {
            router.removeFile(caller, from);
        } catch (IOException | RuntimeException e) {
            h.close();
            throw e;
        }
        openFiles.hide(hiddenPath, h);
        kernelInodes.linksChanged(h.metadata().inode());
        return 0;
    }

    /**
     * The store inode of the regular file at {@code p}, whose other kernel inodes a link count
     * change must invalidate; -1 when there is none, or when no file has two kernel inodes yet.
     */
    private long fileInode(VfsPath p) {
        return kernelInodes.anyShared() ? storeInode(p) : -1;
    }

    /** The store inode of the file at {@code p}; -1 for anything else, or when it is gone (never a failure). */
    private long storeInode(VfsPath p) {
        try {
            Metadata m = router.metadata(null, p);
            return m.isFile() ? m.inode() : -1;
        } catch (IOException | RuntimeException e) {
            return -1;
        }
    }

    private static boolean isHiddenName(VfsPath p) {
        String name = p.fileName();
        return name != null && name.length() == 28 && name.startsWith(".fuse_hidden")
                && name.chars().skip(12).allMatch(c -> (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'));
    }

    /** libfuse's hidden names belong to it: nobody creates one through the mount. */
    private static void refuseHiddenName(VfsPath p) throws java.nio.file.FileSystemException {
        if (isHiddenName(p)) {
            throw new java.nio.file.FileSystemException(p.toString(), null,
                    "Invalid argument: .fuse_hidden<16 hex digits> names are reserved for open files that were unlinked");
        }
    }

    @Override
    public int unlink(String path) {
        try {
            VfsPath p = VfsPath.of(path);
            if (isHiddenName(p)) {
                FileHandle h = openFiles.unhide(path);
                if (h == null) {
                    return -ErrorCodes.ENOENT();
                }
                h.close();
                return 0;
            }
            long inode = fileInode(p);
            router.removeFile(caller(), p);
            kernelInodes.linksChanged(inode);
            return 0;
        } catch (Throwable t) {
            return fail("unlink", path, t);
        }
    }

    @Override
    public int rename(String oldpath, String newpath) {
        try {
            VfsPath to = VfsPath.of(newpath);
            if (isHiddenName(to)) {
                return hide(oldpath, newpath);
            }
            refuseHiddenName(VfsPath.of(oldpath));
            long replaced = fileInode(to);
            router.rename(caller(), VfsPath.of(oldpath), to);
            kernelInodes.linksChanged(replaced);
            return 0;
        } catch (Throwable t) {
            return fail("rename", oldpath + " -> " + newpath, t);
        }
    }

    @Override
    public int link(String oldpath, String newpath) {
        try {
            refuseHiddenName(VfsPath.of(newpath));
            router.link(caller(), VfsPath.of(oldpath), VfsPath.of(newpath));
            long inode = storeInode(VfsPath.of(newpath));
            // the name linked to may have been looked up before replies were watched: its node id is in the request
            kernelInodes.seen(inode, FuseLoop.currentLinkSource());
            kernelInodes.linksChanged(inode);
            return 0;
        } catch (Throwable t) {
            return fail("link", oldpath + " -> " + newpath, t);
        }
    }

    /** Symbolic links are not part of the namespace: refused everywhere, never half supported. */
    @Override
    public int symlink(String oldpath, String newpath) {
        try {
            router.checkWrite(caller(), VfsPath.of(newpath));
            return -ErrorCodes.EPERM();
        } catch (Throwable t) {
            return fail("symlink", newpath, t);
        }
    }

    /** Fifos, sockets and device nodes are refused: the store holds files and directories. */
    @Override
    public int mknod(String path, @mode_t long mode, long rdev) {
        try {
            router.checkWrite(caller(), VfsPath.of(path));
            return -ErrorCodes.EPERM();
        } catch (Throwable t) {
            return fail("mknod", path, t);
        }
    }

    // ---- attributes that change ----

    @Override
    public int chmod(String path, @mode_t long mode) {
        try {
            VfsPath p = VfsPath.of(path);
            FileHandle unlinked = unlinkedOpenFile(p);
            if (unlinked != null) {
                unlinked.setExecutable((int) mode);
                return 0;
            }
            router.chmod(caller(), p, (int) mode);
            return 0;
        } catch (Throwable t) {
            return fail("chmod", path, t);
        }
    }

    @Override
    public int chown(String path, long uid, long gid) {
        try {
            VfsPath p = VfsPath.of(path);
            if (unlinkedOpenFile(p) != null) {
                return 0;
            }
            router.chown(caller(), p);
            return 0;
        } catch (Throwable t) {
            return fail("chown", path, t);
        }
    }

    @Override
    public int truncate(String path, @off_t long size) {
        try {
            VfsPath p = VfsPath.of(path);
            FileHandle unlinked = unlinkedOpenFile(p);
            if (unlinked != null) {
                unlinked.truncate(size);
                return 0;
            }
            router.truncate(caller(), p, size);
            return 0;
        } catch (Throwable t) {
            return fail("truncate", path, t);
        }
    }

    @Override
    public int ftruncate(String path, @off_t long size, FuseFileInfo fi) {
        try {
            OpenFile f = openFiles.get(fi.fh.get());
            if (f == null) {
                return truncate(path, size);
            }
            if (!f.writable()) {
                // the kernel sends ftruncate for truncate(2) on a path too; judge it by policy
                return truncate(path, size);
            }
            f.handle().truncate(size);
            return 0;
        } catch (Throwable t) {
            return fail("ftruncate", path, t);
        }
    }

    @Override
    public int utimens(String path, Timespec[] timespec) {
        try {
            VfsPath p = VfsPath.of(path);
            FileHandle unlinked = unlinkedOpenFile(p);
            if (unlinked != null) {
                unlinked.setTimes(time(timespec[0]), time(timespec[1]));
                return 0;
            }
            router.setTimes(caller(), p, time(timespec[0]), time(timespec[1]));
            return 0;
        } catch (Throwable t) {
            return fail("utimens", path, t);
        }
    }

    private static FileTime time(Timespec ts) {
        long nsec = ts.tv_nsec.longValue();
        if (nsec == UTIME_OMIT) {
            return null;
        }
        if (nsec == UTIME_NOW) {
            return FileTime.from(Instant.now());
        }
        return FileTime.from(Instant.ofEpochSecond(ts.tv_sec.get(), nsec));
    }

    // ---- extended attributes: none are stored; changes are judged by policy first ----

    @Override
    public int setxattr(String path, String name, Pointer value, @size_t long size, int flags) {
        try {
            router.checkWrite(caller(), VfsPath.of(path));
            // not ErrorCodes.ENOTSUP(): jnr-constants gives 45 (EL2NSYNC) for it on Linux; EOPNOTSUPP is the 95 cp expects
            return -ErrorCodes.EOPNOTSUPP();
        } catch (Throwable t) {
            return fail("setxattr", path, t);
        }
    }

    @Override
    public int removexattr(String path, String name) {
        try {
            router.checkWrite(caller(), VfsPath.of(path));
            return -ErrorCodes.ENODATA();
        } catch (Throwable t) {
            return fail("removexattr", path, t);
        }
    }

    /**
     * ENOSYS, not ENODATA: the kernel then stops asking (it answers EOPNOTSUPP itself, as for any
     * file system without xattrs). It asks for security.capability before every write(2), so an
     * answer of "no such attribute" cost a round trip to the daemon per write.
     */
    @Override
    public int getxattr(String path, String name, Pointer value, @size_t long size) {
        return -ErrorCodes.ENOSYS();
    }

    /** ENOSYS for the same reason as {@link #getxattr}: the kernel stops asking. */
    @Override
    public int listxattr(String path, Pointer list, @size_t long size) {
        return -ErrorCodes.ENOSYS();
    }

    // ---- open files ----

    @Override
    public int create(String path, @mode_t long mode, FuseFileInfo fi) {
        try {
            int flags = fi.flags.get();
            Set<OpenFlag> open = openFlags(flags);
            open.add((flags & O_EXCL) != 0 ? OpenFlag.CREATE_NEW : OpenFlag.CREATE);
            return register(path, open, (int) mode, fi);
        } catch (Throwable t) {
            return fail("create", path, t);
        }
    }

    @Override
    public int open(String path, FuseFileInfo fi) {
        try {
            return register(path, openFlags(fi.flags.get()), 0, fi);
        } catch (Throwable t) {
            return fail("open", path, t);
        }
    }

    private static Set<OpenFlag> openFlags(int flags) {
        Set<OpenFlag> open = EnumSet.noneOf(OpenFlag.class);
        int acc = flags & O_ACCMODE;
        if (acc == O_RDWR) {
            open.add(OpenFlag.READ);
            open.add(OpenFlag.WRITE);
        } else if (acc == O_WRONLY) {
            open.add(OpenFlag.WRITE);
        } else {
            open.add(OpenFlag.READ);
        }
        if ((flags & O_APPEND) != 0) {
            open.add(OpenFlag.APPEND);
        }
        if ((flags & O_TRUNC) != 0 && acc != 0) {
            open.add(OpenFlag.TRUNCATE);
        }
        if ((flags & O_CREAT) != 0) {
            open.add(OpenFlag.CREATE);
        }
        return open;
    }

    /** Whether request {@code op} is answered with an entry (a name, its node id and attributes), not attributes alone. */
    private static boolean isEntryReply(int op) {
        return op == FuseLoop.LOOKUP || op == FuseLoop.CREATE || op == FuseLoop.MKNOD || op == FuseLoop.LINK
                || op == FuseLoop.MKDIR;
    }

    private int register(String path, Set<OpenFlag> flags, int mode, FuseFileInfo fi) throws IOException {
        VfsPath p = VfsPath.of(path);
        refuseHiddenName(p);
        Caller caller = caller();
        FileHandle handle = router.open(caller, p, flags, mode);
        boolean writable = flags.contains(OpenFlag.WRITE) || flags.contains(OpenFlag.APPEND);
        fi.fh.set(openFiles.add(new OpenFile(handle, caller, writable)));
        Metadata opened = handle.opened();
        if (opened != null) {
            if (FuseLoop.currentOpcode() == FuseLoop.OPEN) {
                // an open names the kernel inode (a create names the parent): an inode reached by a
                // fresh lookup, whose entry reply gave the attributes, is otherwise named by no request,
                // and a change in the store would not reach an open descriptor's fstat
                kernelInodes.seen(opened.inode(), FuseLoop.currentNodeid());
            }
            if (pageCache.keep(opened)) {
                keepCache(fi);
            }
            if (kernelAttributes.stale(opened)) {
                // attributes only (no pages): safe from within the request on that very inode
                kernelInodes.invalidate(FuseLoop.currentNodeid());
            }
        }
        return 0;
    }

    /**
     * Sets {@code keep_cache} in libfuse's struct fuse_file_info, which jnr-fuse maps as padding:
     * bit 1 of the bitfield word {direct_io, keep_cache, flush, ...} just before {@code fh}.
     */
    private static void keepCache(FuseFileInfo fi) {
        Pointer p = jnr.ffi.Struct.getMemory(fi);
        long word = fi.fh.offset() - 4;
        p.putInt(word, p.getInt(word) | KEEP_CACHE);
    }

    /** {@code path} and {@code buf} are libfuse's addresses (see {@link NativeCallbacks}). */
    int read(long path, long buf, long size, long offset, FuseFileInfo fi) {
        try {
            OpenFile f = openFiles.get(fi.fh.get());
            if (f == null) {
                return -ErrorCodes.EBADF();
            }
            return f.handle().read(fuseBuffer(buf, size), offset);
        } catch (Throwable t) {
            return fail("read", NativeCallbacks.string(path), t);
        }
    }

    /** {@code path} and {@code buf} are libfuse's addresses (see {@link NativeCallbacks}). */
    int write(long path, long buf, long size, long offset, FuseFileInfo fi) {
        try {
            OpenFile f = openFiles.get(fi.fh.get());
            if (f == null || !f.writable()) {
                return -ErrorCodes.EBADF();
            }
            boolean following = kernelEntries.following();
            if (following) {
                // a write names the kernel inode; after a create it is the first request that does,
                // and a change in the store must reach it (not needed without --kernel-cache: per write)
                kernelInodes.seen(f.handle().inode(), FuseLoop.currentNodeid());
                // before the store changes: the feed may hear of the write before this thread runs again
                kernelAttributes.writing(f.handle().inode());
            }
            int written;
            try {
                written = f.handle().write(fuseBuffer(buf, size), offset);
            } catch (IOException | RuntimeException e) {
                if (following) {
                    kernelAttributes.forget(f.handle().inode()); // the kernel keeps its attributes after a failed write
                }
                throw e;
            }
            changedThrough(f);
            return written;
        } catch (Throwable t) {
            return fail("write", NativeCallbacks.string(path), t);
        }
    }

    // No flush: writes go straight to the store file, so close has nothing to push. Left
    // unimplemented, libfuse answers ENOSYS and the kernel stops sending FLUSH on every close(2),
    // a round trip per close saved (bindfs does the same).

    @Override
    public int fsync(String path, int isdatasync, FuseFileInfo fi) {
        try {
            OpenFile f = openFiles.get(fi.fh.get());
            if (f == null) {
                return -ErrorCodes.EBADF();
            }
            f.handle().sync(isdatasync == 0);
            return 0;
        } catch (Throwable t) {
            return fail("fsync", path, t);
        }
    }

    /**
     * {@code f}'s file changed through the request's node id, the file's (a write, a fallocate): its
     * other names are other kernel inodes, whose size is stale now.
     */
    private void changedThrough(OpenFile f) throws IOException {
        if (kernelInodes.anyShared()) {
            kernelInodes.changedThrough(f.handle().inode(), FuseLoop.currentNodeid());
        }
    }

    /** {@code path} is libfuse's address (see {@link NativeCallbacks}). */
    int release(long path, FuseFileInfo fi) {
        try {
            OpenFile f = openFiles.remove(fi.fh.get());
            if (f != null) {
                f.handle().close();
            }
            return 0;
        } catch (Throwable t) {
            return fail("release", NativeCallbacks.string(path), t);
        }
    }

    /**
     * fallocate(2) on the store file, for a handle opened for writing (the policy judged the open).
     * A mode the store's file system cannot do is EOPNOTSUPP, per call (posix_fallocate then falls
     * back to writing); never ENOSYS, after which the kernel would send no FALLOCATE for the rest of
     * the mount.
     */
    @Override
    public int fallocate(String path, int mode, @off_t long off, @off_t long length, FuseFileInfo fi) {
        try {
            OpenFile f = openFiles.get(fi.fh.get());
            if (f == null || !f.writable()) {
                return -ErrorCodes.EBADF();
            }
            f.handle().allocate(mode, off, length);
            changedThrough(f);
            return 0;
        } catch (Throwable t) {
            return fail("fallocate", path, t);
        }
    }
}
