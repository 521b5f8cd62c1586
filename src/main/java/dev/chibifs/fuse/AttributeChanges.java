package dev.chibifs.fuse;

import dev.chibifs.path.VfsPath;
import dev.chibifs.policy.Caller;
import dev.chibifs.router.Router;
import dev.chibifs.store.FileHandle;
import dev.chibifs.store.Metadata;
import dev.chibifs.store.Storage;
import dev.chibifs.sys.ErrnoException;
import dev.chibifs.sys.Linux;
import dev.chibifs.sys.ProcStatus;

import java.io.IOException;
import java.nio.file.NoSuchFileException;
import java.nio.file.attribute.FileTime;
import java.time.Instant;

/**
 * SETATTR: truncate(2), chmod(2), utimensat(2) and chown(2), by name or through an open file of the
 * node (ftruncate, fchmod, futimens), with the rule for chown and chgrp: owners come from the path,
 * so nothing is stored.
 */
final class AttributeChanges {

    /** Where a caller's supplementary groups are read, for a chgrp to one of them; a test's own. */
    private volatile GroupLookup groups = ProcStatus::groups;

    /** The supplementary groups of thread {@code tid}, none where not known: {@link ProcStatus#groups}. */
    @FunctionalInterface
    interface GroupLookup {
        long[] groups(long tid, long fsuid, long fsgid);
    }

    private final FuseFileSystem fs;
    private final Router router;
    private final AttributeView view;

    AttributeChanges(FuseFileSystem fs, AttributeView view) {
        this.fs = fs;
        this.router = fs.router();
        this.view = view;
    }

    /** For tests: callers' supplementary groups come from {@code lookup}. Before the session starts. */
    void groupsFrom(GroupLookup lookup) {
        this.groups = lookup;
    }

    void setattr(FuseRequest req, FuseReply out) throws IOException {
        NodeTable.Node n = fs.node(req);
        VfsPath p = fs.path(n);
        int valid = req.setattrValid();
        OpenFile f = (valid & FuseProtocol.FATTR_FH) != 0 ? fs.openFiles.get(req.setattrHandle()) : null;
        if (f == null && n.removed) {
            // a file no name reaches here is reached through an open file of it, judged where it is
            if (fs.throughAnOpenFile(n, handle -> setattr(req, out, n, fs.judgedAt(p, handle), handle, true)) == null) {
                throw new NoSuchFileException(p.toString());
            }
            return;
        }
        if (f != null) {
            // ftruncate: through a descriptor opened for writing, which, as its writes, needs no
            // permission now (a disk's neither), wherever its file went since
            setattr(req, out, n, p, f.handle(), false);
            return;
        }
        if ((valid & FuseProtocol.FATTR_SIZE) != 0) {
            fs.requireNoNameDropPending(req, n, p, false); // truncate(2) by a name the kernel is told to drop
        }
        VfsPath at = fs.reaching(n, p);
        if (at == null) {
            if (fs.throughOwnOpenFile(req, n, handle -> setattr(req, out, n, fs.judgedAt(p, handle), handle, true)) != null) {
                return; // fchmod, fchown or futimens of a file open in the caller
            }
            // its name stands for another file now, or for none (replaced, moved or removed behind the
            // kernel's back): truncate(2), chmod(2) and utimensat(2) look the name up again on ESTALE
            // and retry with what it stands for now, where ENOENT failed them, or the change went to
            // a file the kernel did not name
            throw new ErrnoException(Linux.ESTALE, p.toString(), "Stale file handle");
        }
        setattr(req, out, n, at, null, false);
    }

    /**
     * SETATTR of node {@code n}, through {@code handle} where there is one, else by path {@code p}
     * (the router judges); {@code judge}: the caller must be let write {@code p} for a change
     * through the handle. Its attributes.
     */
    private Metadata setattr(FuseRequest req, FuseReply out, NodeTable.Node n, VfsPath p, FileHandle handle,
                             boolean judge) throws IOException {
        int valid = req.setattrValid();
        Caller caller = fs.caller(req);
        if (judge) {
            router.checkWrite(caller, p);
        }
        if ((valid & (FuseProtocol.FATTR_UID | FuseProtocol.FATTR_GID)) != 0) {
            // before any other change the request carries: a refused chown changes nothing
            if (handle == null) {
                router.chown(caller, p);
            }
            checkOwnerKept(req, caller, p, valid);
        } else if ((valid & CHANGES) == 0 && handle == null) {
            // chown(f, -1, -1): the kernel sends a SETATTR of no attribute (FATTR_CTIME at most)
            router.chownToNone(p);
        }
        if ((valid & FuseProtocol.FATTR_SIZE) != 0) {
            if (handle != null) {
                handle.truncate(req.setattrSize());
            } else {
                router.truncate(caller, p, req.setattrSize());
            }
        }
        if ((valid & FuseProtocol.FATTR_MODE) != 0) {
            if (handle != null) {
                handle.setExecutable(req.setattrMode());
            } else {
                router.chmod(caller, p, req.setattrMode());
            }
        }
        FileTime atime = time(valid, FuseProtocol.FATTR_ATIME, FuseProtocol.FATTR_ATIME_NOW, req.setattrAtime(), req.setattrAtimeNanos());
        FileTime mtime = time(valid, FuseProtocol.FATTR_MTIME, FuseProtocol.FATTR_MTIME_NOW, req.setattrMtime(), req.setattrMtimeNanos());
        if (atime != null || mtime != null) {
            if (handle != null) {
                handle.setTimes(atime, mtime);
            } else {
                router.setTimes(caller, p, atime, mtime);
            }
        }
        n.changing();
        Metadata m = handle != null ? handle.metadata() : fs.metadataOrOpen(req, n, p, null);
        fs.replied(n, m);
        out.attrOut(fs.replies.askedEveryTime(p, m) ? FuseReply.Validity.NONE : fs.timeouts().brief(), fs.replies.attributes(req, p, m));
        return m;
    }

    /**
     * A chown stores nothing (owners come from the path), so one to the owner and group {@code p}
     * shows this caller, or to a group the caller is in where it is shown as the owner (what a disk
     * lets an owner do: {@code cp -a} and {@code rsync -a} set it), succeeds and changes nothing;
     * one to any other is EPERM, as a disk refuses a user who would give a file away, where it
     * used to succeed and change nothing. SYSTEM and uid 0 still succeed (bindfs's
     * {@code --chown-ignore}): {@code tar x} as root sets every owner, and must not fail.
     */
    private void checkOwnerKept(FuseRequest req, Caller caller, VfsPath p, int valid) throws ErrnoException {
        long asker = req.uid();
        if (caller.isSystem() || asker == 0) {
            return;
        }
        long askerGroup = Integer.toUnsignedLong(req.gid);
        boolean shownAsOwner = view.ownedByAsker(p, asker);
        long uid = shownAsOwner ? asker : view.uid(p);
        long gid = shownAsOwner ? askerGroup : view.gid(p);
        long wantedUid = req.setattrUid() & 0xffffffffL;
        long wantedGid = req.setattrGid() & 0xffffffffL;
        if ((valid & FuseProtocol.FATTR_UID) != 0 && wantedUid != uid) {
            throw new ErrnoException(Linux.EPERM, p.toString(), "Operation not permitted: chown to uid " + wantedUid
                    + ", where the path makes " + uid + " the owner; only SYSTEM may ask for another, and nothing is stored");
        }
        if ((valid & FuseProtocol.FATTR_GID) != 0 && wantedGid != gid
                && !(uid == asker && (wantedGid == askerGroup || isMember(req, wantedGid)))) {
            throw new ErrnoException(Linux.EPERM, p.toString(), "Operation not permitted: chgrp to gid " + wantedGid
                    + ", where the path makes " + gid + " the group; only a group the owner is in, or SYSTEM, may ask for another");
        }
    }

    /**
     * Whether the request's thread has {@code gid} among its supplementary groups. The request
     * carries none, so /proc tells, as libfuse's fuse_req_getgroups reads it; a thread gone (killed
     * while its request waits) counts as in no group, and one whose id another process has since, by
     * other file system ids than the request's, too. Another of the same ids with other groups could
     * still be read: it would only make a chgrp that changes nothing succeed.
     */
    private boolean isMember(FuseRequest req, long gid) {
        for (long g : groups.groups(req.pid, req.uid(), Integer.toUnsignedLong(req.gid))) {
            if (g == gid) {
                return true;
            }
        }
        return false;
    }

    /** The attributes a SETATTR may change; one with none of them is a chown to owner and group -1. */
    private static final int CHANGES = FuseProtocol.FATTR_MODE | FuseProtocol.FATTR_UID | FuseProtocol.FATTR_GID
            | FuseProtocol.FATTR_SIZE | FuseProtocol.FATTR_ATIME | FuseProtocol.FATTR_MTIME | FuseProtocol.FATTR_ATIME_NOW
            | FuseProtocol.FATTR_MTIME_NOW;

    private static FileTime time(int valid, int set, int now, long seconds, int nanos) {
        if ((valid & now) != 0) {
            return Storage.NOW;
        }
        if ((valid & set) != 0) {
            // a time past what Java's Instant holds (touch -d 'Dec 31 2147483647') is clamped, as a
            // file system clamps it to its own range (ext4: 2446), rather than failed
            long clamped = Math.max(Instant.MIN.getEpochSecond(), Math.min(Instant.MAX.getEpochSecond(), seconds));
            return FileTime.from(Instant.ofEpochSecond(clamped, clamped == seconds ? nanos : 0));
        }
        return null;
    }
}
