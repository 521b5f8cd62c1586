package dev.chibifs.fuse;

import dev.chibifs.path.VfsPath;
import dev.chibifs.policy.Caller;
import dev.chibifs.policy.Zone;
import dev.chibifs.router.Router;
import dev.chibifs.sys.Linux;
import dev.chibifs.store.EntryKind;
import dev.chibifs.store.Metadata;

/**
 * The owner and mode bits {@code ls -l} shows, derived from the policy so they agree with it.
 *
 * <p>The kernel caches attributes per inode, not per caller, so on a uid-mapped mount the mode
 * bits must not depend on who asks: homes belong to their mapped uid, {@code /shared} is
 * world-writable, the rest belongs to root and is read-only to others. A per-context mount has one
 * caller, so it shows that caller's view. The execute bits come from the store (chmod +x works);
 * read and write bits come from the policy alone.
 *
 * <p>The owner is the exception, on a mount other users reach (allow_other, which a uid map
 * implies): in a zone several contexts write, and on a per-context mount wherever its context
 * writes, a file or directory shows the asking user as its owner when that user may write it.
 * Programs check ownership where the policy does not: git refuses a repository whose directory
 * another user owns ("dubious ownership"), and the kernel lets only a file's owner set its POSIX
 * ACL, which {@code install}, {@code cp -p} and {@code mv} from another file system do right after
 * making the file (they fail on EPERM, where the daemon's EOPNOTSUPP lets them fall back to chmod).
 * Such directories' attributes are kept for no time ({@link #ownerDependsOnAsker}), so every stat
 * asks and gets its own answer; a file's are kept as usual, so it shows whoever's request last
 * brought them in: the maker, right after it made the file.
 */
final class AttributeView {

    private final CallerResolver callers;
    private final Caller fixedCaller;
    private final long mountUid;
    private final long mountGid;

    private final Router router;
    /** Users other than the mounter reach the mount (allow_other): the owner may follow the asker. Set before INIT. */
    private volatile boolean othersReach;

    AttributeView(Router router, CallerResolver callers, long mountUid, long mountGid) {
        this.router = router;
        this.callers = callers;
        this.fixedCaller = callers.isFixed() ? callers.resolve(mountUid) : null;
        this.mountUid = mountUid;
        this.mountGid = mountGid;
    }

    /** Users other than the mounter reach the mount: see the class comment. */
    void othersReach() {
        this.othersReach = true;
    }

    /** The full st_mode (type and permission bits). */
    int mode(VfsPath path, Metadata m) {
        if (m.kind() == EntryKind.SYMLINK) {
            return Linux.S_IFLNK | 0777;
        }
        if (m.kind() == EntryKind.FIFO || m.kind() == EntryKind.SOCKET) {
            // the kernel serves a fifo's or socket's data itself, once told the kind (init_special_inode)
            int kind = m.kind() == EntryKind.FIFO ? Linux.S_IFIFO : Linux.S_IFSOCK;
            return kind | (fixedCaller != null ? perContextBits(path) : uidMappedBits(path));
        }
        boolean dir = m.isDirectory();
        int rw = fixedCaller != null ? perContextBits(path) : uidMappedBits(path);
        int type = dir ? Linux.S_IFDIR : Linux.S_IFREG;
        if (dir) {
            return type | rw | ((rw & 0444) >> 2);
        }
        boolean executable = (m.mode() & 0111) != 0;
        return type | rw | (executable ? (rw & 0444) >> 2 : 0);
    }

    private int perContextBits(VfsPath path) {
        return router.mayWrite(fixedCaller, path) && !router.isReadOnly(path) ? 0644 : 0444;
    }

    private int uidMappedBits(VfsPath path) {
        if (router.isReadOnly(path)) {
            return 0444; // a readonly: store or one of chibi's views: nobody writes it, SYSTEM included
        }
        Zone zone = Zone.of(path);
        if (zone.kind() == Zone.Kind.SHARED) {
            return 0666;
        }
        return 0644;
    }

    /**
     * Whether the owner shown for {@code path} depends on who asks: on a mount others reach, a zone
     * several contexts write (or, per context, a path its context writes). A directory's
     * attributes there are kept for no time.
     */
    boolean ownerDependsOnAsker(VfsPath path) {
        if (!othersReach || router.isReadOnly(path)) {
            return false;
        }
        if (fixedCaller != null) {
            return router.mayWrite(fixedCaller, path);
        }
        return switch (Zone.of(path).kind()) {
            case SHARED, SITE, FLOCK, TOOLS_SHARED, TOOLS_FLOCK -> true;
            default -> false;
        };
    }

    /** The owner uid shown for {@code path} where it is not {@link #ownedByAsker}. */
    long uid(VfsPath path) {
        if (fixedCaller != null) {
            return mountUid;
        }
        Zone zone = Zone.of(path);
        if (zone.kind() == Zone.Kind.HOME || zone.kind() == Zone.Kind.TOOLS_HOME) {
            return callers.uidOf(zone.owner()).orElse(0L);
        }
        if (zone.kind() == Zone.Kind.SYS && !router.isReadOnly(path)) {
            return callers.systemUid().orElse(0L); // SYSTEM's own, as a home is its context's
        }
        return 0;
    }

    /** The group shown where the owner is not the asker: the mount's own for a per-context mount, otherwise root's. */
    long gid(VfsPath path) {
        return fixedCaller != null ? mountGid : 0;
    }

    /** Whether {@code path} shows the user {@code askerUid} (and its group) as owner: see the class comment. */
    boolean ownedByAsker(VfsPath path, long askerUid) {
        if (!ownerDependsOnAsker(path)) {
            return false;
        }
        if (fixedCaller != null) {
            return true;
        }
        Caller asker = callers.resolve(askerUid);
        // SYSTEM too (--system-uid): its git in /shared or /site meets the same ownership check
        return (asker.isContext() || asker.isSystem()) && router.mayWrite(asker, path);
    }
}
