package dev.chibifs.store;

import dev.chibifs.path.VfsPath;
import dev.chibifs.sys.ErrnoException;
import dev.chibifs.sys.HasErrno;
import dev.chibifs.sys.Linux;
import dev.chibifs.sys.Syscalls;

import java.io.IOException;
import java.lang.ref.Cleaner;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

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
 * keeps serving the store it holds, as a process with its working directory there would. A
 * replaced root's descriptors close as the last operation that was using it ends.
 *
 * <p>One replacement is not followed: once the root served was a mount's root (on another mount
 * than its parent directory: a disk, a tmpfs, a FUSE or NFS store, or a bind mount, mounted at the
 * store's path), a path that names a directory of the parent's mount again means that file
 * system was unmounted ({@code umount -l}, a FUSE store's daemon exiting, systemd stopping the
 * unit), and the directory beneath is no store: serving it showed an empty tree, and what was
 * written there landed on the parent's file system, hidden again once the disk came back. Each
 * operation fails with an I/O error naming the store and why until a file system is mounted there
 * again, which is then served, as is a disk mounted over a plain store directory after the mount
 * started. A bind mount is told by its mount id (statx STATX_MNT_ID, Linux 5.8): by the device,
 * as on older kernels, a bind mount from the parent's own file system looked like the directory
 * beneath, and once unmounted, that directory was served, empty, without a word. The one
 * directory of the parent's mount followed all the same is the store's first root, where that was
 * a plain directory: a file system mounted over it and unmounted again leaves the very store the
 * daemon started on, which until session 68 was refused until a restart.
 */
final class StoreRoot {

    private static final Cleaner CLEANER = Cleaner.create();

    /**
     * The root in use by one operation, from {@link #use} until {@link #close}: its descriptor, and
     * the generation it was opened in, which tells a replaced root from the one before where a
     * descriptor's number could not (a replaced root's number is closed, and the next open may be
     * handed it).
     */
    interface InUse extends AutoCloseable {
        int fd();

        /** Which root this is: 1 for the first opened, one more for each replacement. */
        long generation();

        /** The device the root is on ({@code st_dev}). */
        long device();

        @Override
        void close();
    }

    /**
     * A root opened: its descriptor and its parent's (O_PATH), its identity, and how many hold it:
     * one for being the root held, one for each operation using it. A replaced root is retired
     * (that first one let go), and its descriptors close with the last operation's close: until
     * session 68 they stayed open for the daemon's life (40 replacements: 80 descriptors), which
     * kept an unmounted store file system, and the loop device under it, in the kernel. Closing at
     * the replacement instead would let an operation still using the number reach whatever file the
     * next open was handed it.
     */
    private static final class Opened {
        final int parent;
        final int dir;
        final long device;
        final long inode;
        final long generation;
        private final AtomicInteger holders = new AtomicInteger(1);
        private final AtomicBoolean retired = new AtomicBoolean();
        private final InUse use = new InUse() {
            @Override
            public int fd() {
                return dir;
            }

            @Override
            public long generation() {
                return generation;
            }

            @Override
            public long device() {
                return device;
            }

            @Override
            public void close() {
                letGo();
            }
        };

        Opened(int parent, int dir, long device, long inode, long generation) {
            this.parent = parent;
            this.dir = dir;
            this.device = device;
            this.inode = inode;
            this.generation = generation;
        }

        /** One more holder, unless the last one let go already (its descriptors are closed, or closing). */
        boolean hold() {
            for (int n = holders.get(); n > 0; n = holders.get()) {
                if (holders.compareAndSet(n, n + 1)) {
                    return true;
                }
            }
            return false;
        }

        void letGo() {
            if (holders.decrementAndGet() == 0) {
                Syscalls.close(dir);
                Syscalls.close(parent);
            }
        }

        /** No longer the root held: closes once no operation uses it. */
        void retire() {
            if (retired.compareAndSet(false, true)) {
                letGo();
            }
        }

        /** Whether {@code name} in the parent is still this very directory. */
        boolean stillAt(String name) {
            return Syscalls.isDirectory(parent, name, device, inode);
        }
    }

    /** A directory as {@link #firstPlain} tells it: its mount, device and inode. */
    private record Identity(long mount, long device, long inode) {
    }

    /** The root held, and the epoch it was checked in. */
    private record Held(Opened root, long epoch) {
    }

    /**
     * Which mount an open descriptor's file was reached through ({@link Syscalls#mountOf}); tests
     * stand in for a mount with one of their own.
     */
    interface Mounts {
        long of(int fd) throws IOException;
    }

    private final Path root;
    private final Path parentPath;
    private final String name;
    private final Mounts mounts;
    private final AtomicReference<Held> held = new AtomicReference<>();
    /** The generation of the last root opened; guarded by {@code this}. */
    private long generations;
    /** Whether a root served was a file system's own root: from then on, only such a root is followed. */
    private boolean servedMountRoot;
    /** The first root, where it was a plain directory (not a mount's root): followed again whatever was mounted over it; else null. */
    private Identity firstPlain;
    /** The directories in the last root that was the store (some of them), to tell a root in its place that has none. */
    private Set<String> known = Set.of();
    /** Why the root served is not the store it replaced; null while it has one of the directories the store had. */
    private volatile String stranger;

    /** The most directories of a root remembered, and the most entries read to find them. */
    private static final int DIRECTORIES_REMEMBERED = 64;
    private static final int ENTRIES_READ = 4096;
    /** e2fsck's, in every ext4 root: it tells one store from another file system not at all. */
    private static final String LOST_AND_FOUND = "lost+found";

    StoreRoot(Path root) {
        this(root, Syscalls::mountOf);
    }

    StoreRoot(Path root, Mounts mounts) {
        this.root = root;
        this.mounts = mounts;
        this.parentPath = root.getParent();
        this.name = root.getFileName() == null ? "." : root.getFileName().toString();
        AtomicReference<Held> last = held; // not this: the cleaner runs once this is unreachable
        CLEANER.register(this, () -> {
            Held h = last.getAndSet(null);
            if (h != null) {
                h.root().retire();
            }
        });
    }

    /**
     * The root, open until the caller closes what this returns. {@code epoch} is
     * {@link HeldDirectories#refresh}'s: while it stays what it was at the last check, nothing
     * happened to the root's name or to the mounts, and the root is not checked again. {@code path}
     * names the failure when the store has gone.
     */
    InUse use(VfsPath path, long epoch) throws IOException {
        Held h = held.get();
        // held before it is checked: a root replaced meanwhile keeps its parent's number until let go
        if (h != null && h.root().hold()) {
            if (h.epoch() == epoch) {
                return h.root().use;
            }
            if (h.root().stillAt(name)) {
                held.compareAndSet(h, new Held(h.root(), epoch)); // lost to a reopen: that one is newer
                return h.root().use;
            }
            h.root().letGo();
        }
        return reopen(path, epoch);
    }

    private synchronized InUse reopen(VfsPath path, long epoch) throws IOException {
        Held h = held.get();
        if (h != null && h.root().hold()) {
            if (h.root().stillAt(name)) {
                return h.root().use; // another thread reopened it meanwhile
            }
            h.root().letGo();
        }
        held.set(null);
        if (h != null) {
            if (stranger == null) {
                known = directoriesIn(h.root().dir); // a file system unmounted lazily still lists
            }
            h.root().retire();
        }
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
        Syscalls.Statx m;
        boolean mountRoot;
        long mount;
        try {
            mount = mounts.of(dir);
            mountRoot = mount != mounts.of(parent);
            m = Syscalls.stat(dir, null, path.toString());
        } catch (IOException e) {
            Syscalls.close(dir);
            Syscalls.close(parent);
            throw cannotOpen(path, HasErrno.of(e));
        }
        Identity identity = new Identity(mount, m.device(), m.inode());
        boolean first = identity.equals(firstPlain);
        if (servedMountRoot && !mountRoot && !first) {
            Syscalls.close(dir);
            Syscalls.close(parent);
            throw unmounted(path);
        }
        if (generations == 0 && !mountRoot) {
            firstPlain = identity;
        }
        servedMountRoot |= mountRoot;
        if (first) {
            stranger = null; // the store the daemon started on, whatever was mounted over it meanwhile
        } else if (generations > 0) {
            judge(dir); // a root in place of one served (replaced, or after the store was unmounted)
        }
        Opened o = new Opened(parent, dir, m.device(), m.inode(), ++generations);
        o.hold(); // the caller's
        held.set(new Held(o, epoch));
        return o.use;
    }

    /**
     * Why the root served now is not the store it replaced (another file system mounted in its
     * place, empty or another's), or null: it has none of the directories the store had. Served all
     * the same, as bindfs would, and as an admin who mounted a new or restored disk there means it;
     * writes land there only where its directories are, and the namespace's are missing.
     */
    String stranger() {
        return stranger;
    }

    private void judge(int dir) {
        Set<String> now = directoriesIn(dir);
        if (known.isEmpty() || now.stream().anyMatch(known::contains)) {
            stranger = null;
            return;
        }
        stranger = "the store directory " + root + " holds another file system now (or an empty one): it has none"
                + " of the directories the store had there (" + String.join(", ", new TreeSet<>(known))
                + "), and is served as it is: mount the store's file system there again";
    }

    /** Some directories (not lost+found) in the root open as {@code dir}; none where it cannot be read. */
    private static Set<String> directoriesIn(int dir) {
        Set<String> names = new HashSet<>();
        int[] read = {0};
        try {
            Syscalls.readDirectory(dir, ".", null, (name, offset, length, type, inode) -> {
                String n = new String(name, offset, length, StandardCharsets.UTF_8);
                if (type == Linux.DT_DIR && !n.equals(LOST_AND_FOUND)) {
                    names.add(n);
                }
                return names.size() < DIRECTORIES_REMEMBERED && ++read[0] < ENTRIES_READ;
            });
        } catch (IOException unreadable) {
            return Set.of(); // a file system failing: said by its errno, not as another
        }
        return names;
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
