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
 * <p>The kernel caches attributes per inode, not per caller, so on a uid-mapped mount they must
 * not depend on who asks: homes belong to their mapped uid, {@code /shared} is world-writable,
 * the rest belongs to root and is read-only to others. A per-context mount has one caller, so
 * it shows that caller's view. The execute bits come from the store (chmod +x works); read and
 * write bits come from the policy alone.
 */
final class AttributeView {

    private final CallerResolver callers;
    private final Caller fixedCaller;
    private final long mountUid;
    private final long mountGid;

    private final Router router;

    AttributeView(Router router, CallerResolver callers, long mountUid, long mountGid) {
        this.router = router;
        this.callers = callers;
        this.fixedCaller = callers.isFixed() ? callers.resolve(mountUid) : null;
        this.mountUid = mountUid;
        this.mountGid = mountGid;
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
        return router.mayWrite(fixedCaller, path) ? 0644 : 0444;
    }

    private static int uidMappedBits(VfsPath path) {
        Zone zone = Zone.of(path);
        if (zone.kind() == Zone.Kind.SHARED) {
            return 0666;
        }
        return 0644;
    }

    /** The owner uid shown for {@code path}. */
    long uid(VfsPath path) {
        if (fixedCaller != null) {
            return mountUid;
        }
        Zone zone = Zone.of(path);
        if (zone.kind() == Zone.Kind.HOME) {
            return callers.uidOf(zone.owner()).orElse(0L);
        }
        return 0;
    }

    /** The group shown: the mount's own for a per-context mount, otherwise root's. */
    long gid(VfsPath path) {
        return fixedCaller != null ? mountGid : 0;
    }
}
