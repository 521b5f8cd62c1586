package dev.chibifs.store;

import dev.chibifs.path.VfsPath;
import dev.chibifs.sys.ErrnoException;
import dev.chibifs.sys.HasErrno;
import dev.chibifs.sys.Linux;
import dev.chibifs.sys.Syscalls;

import java.io.IOException;
import java.lang.ref.Cleaner;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The store's root directory, held open, and the check that it is still the directory at the
 * store's path. Opening the root by its full path for every operation cost a path walk and a
 * close each time; checking costs one statx of a single name in the held parent directory, and
 * happens only when {@link HeldDirectories} reports that a name in the root's parent or a mount
 * changed (at every operation where nothing is watched).
 *
 * <p>Moved, removed or replaced (by another directory, a link, or a file system mounted over it),
 * the root is reopened by path on the next operation, or that operation fails with an I/O error
 * naming the store, as before; where the file system there fails as a whole (a FUSE store's daemon
 * killed: ENOTCONN), with that file system's errno. A move of a directory above the store is not noticed: the daemon
 * keeps serving the store it holds, as a process with its working directory there would.
 *
 * <p>One replacement is not followed: once the root served was a file system's own root (on
 * another device than its parent directory: a disk, a tmpfs, a FUSE or NFS store mounted at the
 * store's path), a path that names a directory of the parent's file system again means that file
 * system was unmounted ({@code umount -l}, a FUSE store's daemon exiting, systemd stopping the
 * unit), and the directory beneath is no store: serving it showed an empty tree, and what was
 * written there landed on the parent's file system, hidden again once the disk came back. Each
 * operation fails with an I/O error naming the store and why until a file system is mounted there
 * again, which is then served, as is a disk mounted over a plain store directory after the mount
 * started. A bind mount from the parent's own file system keeps its device and is followed either way.
 */
final class StoreRoot {

    private static final Cleaner CLEANER = Cleaner.create();

    /** The root and its parent as open O_PATH descriptors, the root's identity, and the epoch it was checked in. */
    private record Held(int parent, int dir, long device, long inode, long epoch) {
        Held checkedIn(long epoch) {
            return new Held(parent, dir, device, inode, epoch);
        }
    }

    /**
     * Every descriptor ever held. A replaced root's descriptors stay open: an operation on another
     * thread may still be using them, and closing would let the next open reuse the number under it.
     * They close when the store is unreachable (a replacement is rare: one pair per replacement).
     */
    private static final class Descriptors implements Runnable {
        private final List<Integer> fds = new ArrayList<>();

        synchronized void add(int fd) {
            fds.add(fd);
        }

        @Override
        public synchronized void run() {
            fds.forEach(Syscalls::close);
            fds.clear();
        }
    }

    /** The device an open descriptor's file lives on; tests stand in for a mount with one of their own. */
    interface Devices {
        long of(int fd) throws IOException;
    }

    private final Path root;
    private final Path parentPath;
    private final String name;
    private final Devices devices;
    private final Descriptors descriptors = new Descriptors();
    private volatile Held held;
    /** Whether a root served was a file system's own root: from then on, only such a root is followed. */
    private boolean servedMountRoot;

    StoreRoot(Path root) {
        this(root, Syscalls::device);
    }

    StoreRoot(Path root, Devices devices) {
        this.root = root;
        this.devices = devices;
        this.parentPath = root.getParent();
        this.name = root.getFileName() == null ? "." : root.getFileName().toString();
        CLEANER.register(this, descriptors);
    }

    /**
     * The root, open; not to be closed by the caller. {@code epoch} is {@link HeldDirectories#refresh}'s:
     * while it stays what it was at the last check, nothing happened to the root's name or to the
     * mounts, and the root is not checked again. {@code path} names the failure when the store has gone.
     */
    int descriptor(VfsPath path, long epoch) throws IOException {
        Held h = held;
        if (h != null && h.epoch() == epoch) {
            return h.dir();
        }
        if (h != null && Syscalls.isDirectory(h.parent(), name, h.device(), h.inode())) {
            held = h.checkedIn(epoch);
            return h.dir();
        }
        return reopen(path, epoch);
    }

    private synchronized int reopen(VfsPath path, long epoch) throws IOException {
        Held h = held;
        if (h != null && Syscalls.isDirectory(h.parent(), name, h.device(), h.inode())) {
            return h.dir(); // another thread reopened it meanwhile
        }
        held = null;
        // a store at / has no parent to check it in, and cannot be moved: "/" itself, opened once
        String parentName = parentPath == null ? "/" : parentPath.toString();
        String dirName = parentPath == null ? "." : name;
        int parent = Syscalls.tryOpenat(Linux.AT_FDCWD, parentName, Linux.O_PATH | Linux.O_DIRECTORY, 0);
        if (parent < 0) {
            throw cannotOpen(path, -parent);
        }
        int dir = Syscalls.tryOpenat(parent, dirName, Linux.O_PATH | Linux.O_DIRECTORY | Linux.O_NOFOLLOW, 0);
        if (dir < 0) {
            Syscalls.close(parent);
            throw cannotOpen(path, -dir);
        }
        boolean mountRoot;
        try {
            mountRoot = devices.of(dir) != devices.of(parent);
        } catch (IOException e) {
            Syscalls.close(dir);
            Syscalls.close(parent);
            throw cannotOpen(path, HasErrno.of(e));
        }
        if (servedMountRoot && !mountRoot) {
            Syscalls.close(dir);
            Syscalls.close(parent);
            throw unmounted(path);
        }
        servedMountRoot |= mountRoot;
        descriptors.add(parent);
        descriptors.add(dir);
        Syscalls.Statx m = Syscalls.stat(dir, null, path.toString());
        held = new Held(parent, dir, m.device(), m.inode(), epoch);
        return dir;
    }

    private ErrnoException unmounted(VfsPath path) {
        return ErrnoException.of(Linux.EIO, path.toString(), "the store directory " + root
                + " has lost its file system: the file system mounted there is no longer there, and the directory"
                + " under it is not served until one is mounted there again");
    }

    /**
     * The store's file system failing as a whole at its root (a FUSE store's daemon killed: ENOTCONN,
     * a disk dead: EIO), where the root had to be opened again: the directory is there, not gone.
     */
    static final class FileSystemFails extends ErrnoException {
        private static final long serialVersionUID = 1L;

        FileSystemFails(int errno, String file, Path root) {
            super(errno, file, ErrnoException.reason(errno, "the store directory " + root + " "
                    + WholeStoreFailure.answers(errno) + ": its file system fails as a whole"));
        }
    }

    /**
     * Why the root could not be opened again, by the errno that refused it. A file system failing as
     * a whole keeps its own errno, not EIO: requests served from the held root got ENOTCONN from a
     * killed FUSE store until a reopen made it "gone" EIO, while the directory was never moved,
     * removed or replaced, and status and the log say "answers ENOTCONN" (docs/operations.md), as the
     * store file system itself (or bindfs over it) answers. Only a name that is no directory now
     * (ENOENT, ENOTDIR, ELOOP: a link in its place) has gone; anything else (EACCES) is said by name.
     */
    private ErrnoException cannotOpen(VfsPath path, int errno) {
        if (WholeStoreFailure.mayBe(errno)) {
            return new FileSystemFails(errno, path.toString(), root);
        }
        if (errno == 0 || errno == Linux.ENOENT || errno == Linux.ENOTDIR || errno == Linux.ELOOP) {
            return gone(path);
        }
        return ErrnoException.of(Linux.EIO, path.toString(), "the store directory " + root + " cannot be opened: "
                + Linux.errnoName(errno) + " (" + dev.chibifs.sys.LibC.strerror(errno) + ")");
    }

    private ErrnoException gone(VfsPath path) {
        return ErrnoException.of(Linux.EIO, path.toString(),
                "the store directory " + root + " has gone (moved, removed or replaced)");
    }
}
