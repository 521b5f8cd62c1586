package dev.chibifs.fuse;

import dev.chibifs.path.VfsPath;
import dev.chibifs.policy.Caller;
import dev.chibifs.router.Router;
import dev.chibifs.store.FileLocks;
import dev.chibifs.store.LockState;
import dev.chibifs.store.LockType;
import dev.chibifs.sys.ErrnoException;
import dev.chibifs.sys.Linux;

import java.io.IOException;
import java.nio.file.FileSystemException;

/**
 * GETLK, SETLK and SETLKW (POSIX record locks and flock), and FLUSH: locks are taken on the store
 * file, so every mount of the store and chibi's own programs see them. SQLite's DMS locks on a
 * served open's WAL index are this mount's own ({@link WalIndexGuard}). Waiting is the session's
 * ({@link LockWaits}): a SETLKW here is one try.
 */
final class LockRequests {

    private final FuseFileSystem fs;
    private final Router router;
    /** SQLite's connections to a WAL index through served opens: one holder to other mounts and programs. */
    private final WalIndexGuard walIndex = new WalIndexGuard();

    LockRequests(FuseFileSystem fs) {
        this.fs = fs;
        this.router = fs.router();
    }

    private static LockType lockType(int type) throws FileSystemException {
        return switch (type) {
            case Linux.F_RDLCK -> LockType.READ;
            case Linux.F_WRLCK -> LockType.WRITE;
            case Linux.F_UNLCK -> LockType.UNLOCK;
            default -> throw new ErrnoException(Linux.EINVAL, "lock type " + type, "Invalid argument");
        };
    }

    private static int lockNumber(LockType type) {
        return switch (type) {
            case READ -> Linux.F_RDLCK;
            case WRITE -> Linux.F_WRLCK;
            case UNLOCK -> Linux.F_UNLCK;
        };
    }

    void getlk(FuseRequest req, FuseReply out) throws IOException {
        OpenFile f = fs.openFile(req, false);
        LockType type = lockType(req.lockType());
        LockState s = null;
        if (WalIndexGuard.keeps(type, req.lockStart(), req.lockEnd()) && walIndex(f, req.lockStart(), req.lockEnd()) != null) {
            s = walIndex.test(f.node(), req.lockOwner(), type);
        }
        if (s == null) {
            s = f.handle().locks().testLock(req.lockOwner(), type, req.lockStart(), req.lockEnd());
        }
        out.lock(s.start(), s.end(), lockNumber(s.type()), Math.max(s.pid(), 0));
    }

    /**
     * One try at a SETLK or SETLKW: true when granted (or an unlock). flock(2)'s locks come here
     * too (LK_FLOCK); the kernel sends a blocking one as SETLKW.
     */
    LockWaits.Attempt setlk(FuseRequest req) throws IOException {
        OpenFile f = fs.openFile(req, false);
        FileLocks locks = f.handle().locks();
        long owner = req.lockOwner();
        int pid = req.lockPid();
        LockType type = lockType(req.lockType());
        if ((req.lockFlags() & FuseProtocol.LK_FLOCK) != 0) {
            // a flock belongs to the open file description, and so to this handle; the kernel names its
            // owner by the description's address, which a new open may reuse while the old one's RELEASE
            // is still on its way, and that RELEASE would then take the new holder's lock with it
            long description = req.handle();
            return attempt(locks, () -> locks.tryFlock(description, pid, type));
        }
        long start = req.lockStart();
        long end = req.lockEnd();
        VfsPath index = walIndex(f, start, end);
        if (index != null) {
            NodeTable.Node n = f.node();
            if (WalIndexGuard.keeps(type, start, end)) {
                long fh = req.handle();
                Caller caller = f.caller();
                // the hold opens the index by name: the file a new connection would open and lock
                WalIndexGuard.Opener opener = writable -> router.open(caller, index, writable ? FuseFileSystem.READ_WRITE : FuseFileSystem.READ_ONLY, 0);
                return () -> walIndex.tryLock(n, index, owner, fh, type, opener);
            }
            if (type == LockType.UNLOCK) {
                walIndex.unlock(n, owner);
            }
        }
        return attempt(locks, () -> locks.tryLock(owner, pid, type, start, end));
    }

    /** {@code tryNow} on {@code locks}, told of let-gos elsewhere as the store can tell them. */
    private static LockWaits.Attempt attempt(FileLocks locks, LockWaits.Attempt tryNow) {
        return new LockWaits.Attempt() {
            @Override
            public boolean tryNow() throws IOException {
                return tryNow.tryNow();
            }

            @Override
            public AutoCloseable whenLetGo(Runnable letGo) {
                return locks.whenLetGo(letGo);
            }
        };
    }

    /** The path of a served open's WAL index when [start, end] reaches its DMS byte ({@link WalIndexGuard}), else null. */
    private VfsPath walIndex(OpenFile f, long start, long end) {
        if (f.passthrough() || !WalIndexGuard.reaches(start, end)) {
            return null;
        }
        VfsPath file = fs.path(f.node());
        return WalIndexGuard.isIndex(file) ? file : null;
    }

    /** A close(2) of open file {@code f}: the record locks of its lock owner go. */
    void flush(OpenFile f, FuseRequest req) throws IOException {
        f.handle().locks().releaseOwner(req.releaseLockOwner());
        walIndex.unlock(f.node(), req.releaseLockOwner());
    }

    

    /** Open file {@code fh} of node {@code n} is released: its WAL index connection, if any, ends. */
    void released(NodeTable.Node n, long fh) {
        walIndex.released(n, fh);
    }
}
