package dev.chibifs.store;

import dev.chibifs.path.VfsPath;
import dev.chibifs.path.InvalidVfsPathException;
import dev.chibifs.sys.ErrnoException;
import dev.chibifs.sys.Errors;
import dev.chibifs.sys.IsDirectoryException;
import dev.chibifs.sys.LibC;
import dev.chibifs.sys.Linux;
import dev.chibifs.sys.Syscalls;
import dev.chibifs.sys.OwnedDirectories;

import java.io.IOException;
import java.io.InputStream;
import java.lang.ref.Cleaner;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.channels.ClosedChannelException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.regex.Pattern;

import static dev.chibifs.sys.Linux.*;

/**
 * The store as a plain directory tree ({@code $CHIBI_HOME/vfs}), byte-compatible with chibi:
 * {@code /shared/foo.txt} is {@code <root>/shared/foo.txt}, with no sidecar files.
 *
 * <p>Every operation works relative to a descriptor of the directory that holds the name
 * ({@link At}), opened with {@code openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)}: a symbolic
 * link anywhere on the way is refused ({@code ELOOP}) in the same call that resolves it, so no
 * check-then-act race can lead outside the store, and the full host path never reaches a system
 * call, so trees deeper than PATH_MAX work. The last name is never followed either, and nothing
 * but a regular file is ever opened for data (a fifo planted in the store cannot block us).
 * Errors name VFS paths, never host paths.
 */
public final class LocalStorage implements Storage {

    /** Prefix of the temporary files behind atomic writes; such files are removed at startup when old. */
    public static final String TEMP_PREFIX = ".chibifs-tmp-";

    private static final Pattern TEMP_NAME = Pattern.compile(Pattern.quote(TEMP_PREFIX) + "[0-9a-f]{16}");
    /**
     * Directories held open at most (each one descriptor and one inotify watch); past it, they are
     * all let go and held afresh. A quarter of the descriptors the process may open, so a low
     * limit (ulimit -n 1024) leaves most of them for open files.
     */
    private static final Set<OpenFlag> READ_ONLY = Set.of(OpenFlag.READ);
    /** How long a change waits for a lock another process holds on the file, unless told otherwise. */
    public static final Duration DEFAULT_LOCK_WAIT = Duration.ofSeconds(10);
    /** The longest pause between two tries for a held lock: another mount's unlock wakes nobody here. */
    private static final long LOCK_RETRY_MAX_MILLIS = 50;

    /** The size of the buffer a streamed write reads and writes at a time. */
    private static final int STREAM_BUFFER = 1 << 16;
    // java.nio encodes names with sun.jnu.encoding (the locale's); only UTF-8 keeps every name intact
    private static final boolean JNU_UTF8 = "UTF-8".equalsIgnoreCase(System.getProperty("sun.jnu.encoding"));

    /** What the kernel adds to a /proc/self/fd link of a file whose last name is gone. */
    private static final String DELETED = " (deleted)";

    private final Path root;
    private final StoreRoot storeRoot;
    private static final Cleaner CLEANER = Cleaner.create();
    /** The last descriptors of removed files and directories, closed off the request path. */
    private final LateCloses lateCloses;
    private final HeldDirectories directories;
    /** The record and flock locks taken through this storage, on the store files themselves. */
    private final OfdLocks locks = new OfdLocks();
    private final StoreDevices devices = new StoreDevices();
    /** How long {@link #write} and {@link #append} wait for another process's lock on the file. */
    private volatile Duration lockWait = DEFAULT_LOCK_WAIT;

    private volatile LockPause lockPause = (path, millis) -> TimeUnit.MILLISECONDS.sleep(millis);
    /** The mode {@link #write} and {@link #append} give a file they create; see {@link #newFileMode(int)}. */
    private volatile int newFileMode = DEFAULT_FILE_MODE;

    /** The mode of a file {@link #write} creates, unless {@link #newFileMode(int)} says otherwise. */
    public static final int DEFAULT_FILE_MODE = 0644;

    /** A store rooted at {@code root}, which is created if absent. */
    public LocalStorage(Path root) throws IOException {
        this(root, new LateCloses());
    }

    /** A store whose removed files' last descriptors go to {@code lateCloses} (tests: one they flush). */
    LocalStorage(Path root, LateCloses lateCloses) throws IOException {
        this(root, lateCloses, Syscalls::mountOf);
    }

    /** A store that asks {@code mounts} which mount its root and the root's parent are on (tests: a mount of their own). */
    LocalStorage(Path root, LateCloses lateCloses, StoreRoot.Mounts mounts) throws IOException {
        this.owner = makeRoot(root);
        this.root = root.toAbsolutePath().normalize().toRealPath();
        this.mayStall = mayStall(this.root);
        this.storeRoot = new StoreRoot(this.root, mounts);
        this.lateCloses = lateCloses;
        HeldDirectories held = new HeldDirectories(HeldDirectories::limitNow, System::nanoTime, lateCloses);
        this.directories = held;
        // the inotify instance and held descriptors go with the storage, closed or not (instances are few: 128 per user)
        CLEANER.register(this, () -> {
            held.close();
            lateCloses.close();
        });
    }

    /**
     * Who is given what the daemon makes in the store (files, directories, links, nodes) where it
     * runs as root, as systemd runs it, and the store is another user's: chibi, run as that user,
     * replaces a file by writing a new one beside it and renaming it over the name, and could not in
     * a directory root made, nor change a file root made. Null where what is made is the store
     * owner's anyway. Given best-effort: a file system without owners (vfat) keeps its own.
     */
    private final Owner owner;

    private record Owner(int uid, int gid) {
    }

    /** Whether the store's directory is on a file system a request may wait on long (see {@link #answersMayWaitLong}). */
    private final boolean mayStall;

    /**
     * File systems whose requests wait on a network or on another daemon: a server that stops
     * answering (an NFS server away, a FUSE daemon stopped) holds each request to them.
     */
    private static final long[] STALLING_TYPES = {
            Linux.NFS_SUPER_MAGIC, Linux.FUSE_SUPER_MAGIC, Linux.CIFS_SUPER_MAGIC, Linux.SMB2_SUPER_MAGIC,
            Linux.SMB_SUPER_MAGIC, Linux.V9FS_MAGIC, Linux.CEPH_SUPER_MAGIC, Linux.AFS_SUPER_MAGIC,
            Linux.LUSTRE_SUPER_MAGIC,
    };

    /**
     * True where the store's directory is on a network or FUSE file system: a request to it may wait
     * long (the server away), so it is served apart from the mount's other requests (a read-only
     * store on a stopped FUSE daemon held every worker, and a cat in an agent's home waited 25 s).
     */
    @Override
    public boolean answersMayWaitLong() {
        return mayStall;
    }

    private static boolean mayStall(Path root) {
        int fd = Syscalls.tryOpenat(Linux.AT_FDCWD, root.toString(), Linux.O_RDONLY | Linux.O_DIRECTORY | Linux.O_CLOEXEC, 0);
        if (fd < 0) {
            return false;
        }
        try {
            return Syscalls.fileSystemIs(fd, STALLING_TYPES);
        } finally {
            Syscalls.close(fd);
        }
    }

    /**
     * Makes the store's directory where it is missing (given, as root, to the owner of the directory
     * it was made in: the first mount of ~/.chibi by a root daemon), and says whom to give what is
     * made in it.
     */
    private static Owner makeRoot(Path root) throws IOException {
        OwnedDirectories.make(root);
        return Syscalls.geteuid() == 0 ? ownerOf(root) : null;
    }

    /** The owner of {@code dir}, where it is not root. */
    private static Owner ownerOf(Path dir) throws IOException {
        int uid = (Integer) Files.getAttribute(dir, "unix:uid");
        int gid = (Integer) Files.getAttribute(dir, "unix:gid");
        return uid == 0 ? null : new Owner(uid, gid);
    }

    /** Gives the new file open as {@code fd} to the store's owner (see {@link #owner}). */
    private void own(int fd) {
        if (owner != null) {
            Syscalls.tryFchown(fd, owner.uid(), owner.gid());
        }
    }

    /**
     * Gives the new entry {@code name} of {@code dir} to the store's owner (see {@link #owner}): what
     * the name has open now, if it is still what root just made (root's, and a directory or a single
     * link). The store's owner may swap the name meanwhile; a hard link there to a file of root's
     * elsewhere (where fs.protected_hardlinks is off) would have been given away by a chown by name.
     */
    private void own(int dir, String name) {
        if (owner == null) {
            return;
        }
        int fd = Syscalls.tryOpenat(dir, name, Linux.O_PATH | O_NOFOLLOW | Linux.O_CLOEXEC, 0);
        if (fd < 0) {
            return;
        }
        try {
            Syscalls.Statx made = Syscalls.stat(fd, null, name);
            if (made.uid() == 0 && (made.type() == Linux.S_IFDIR || made.links() == 1)) {
                Syscalls.tryFchownOpened(fd, owner.uid(), owner.gid());
            }
        } catch (IOException gone) {
            // nothing to give
        } finally {
            Syscalls.close(fd);
        }
    }

    /** The directory the store lives in. */
    public Path root() {
        return root;
    }

    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(LocalStorage.class);
    /** Where a change of the store's trouble is said: the log, or a test's list. */
    private volatile java.util.function.Consumer<String> said = LOG::warn;
    /** Who follows this store's changes ({@link #changes}), told when its root is replaced; null while no one does. */
    private volatile ChangeListener following;
    /**
     * Why every request, or every change, to the whole store fails; {@code untilSomeoneActs}: not
     * only changes; {@code readOnly}: its file system read-only (EROFS), reads served.
     */
    private record Trouble(String why, boolean untilSomeoneActs, boolean readOnly) {
    }

    /** What the last look found wrong with the whole store, null while it answers: logged once per change. */
    private Trouble trouble;
    /** Whether a look was made: the first tells what the store was at the mount. */
    private boolean looked;
    /**
     * Whether the store has been read-only since the first look (a disk mounted ro on purpose): no
     * failure, nor said as one, unlike a file system turned read-only while served (errors=remount-ro).
     */
    private boolean readOnlyFromStart;
    /** A look at a store that may stall, still under way: the next asks wait for it, not for one more. */
    private java.util.concurrent.CompletableFuture<Trouble> looking;
    /** When {@link #looking} began (System.nanoTime): each ask waits what is left of one look's time, not a look's time each. */
    private long lookingSince;

    /**
     * Why every request to this store fails now until someone acts (its directory gone or
     * unmounted, its file system failing: EIO, ENOTCONN), with the errno and the store's directory;
     * null while it answers. {@code chibifs status} calls such a mount failing.
     */
    @Override
    public String failing() {
        Trouble t = troubleNow();
        return t != null && t.untilSomeoneActs() ? t.why() : null;
    }

    /** For tests: where a change of the store's trouble is said. */
    void saidTo(java.util.function.Consumer<String> to) {
        said = to;
    }

    /** For {@code chibifs stats}: why the whole store fails now, or nothing while it answers. */
    @Override
    public String state() {
        Trouble t = troubleNow();
        return t == null ? null : WholeStoreFailure.isReadOnlyFromStart(t.why()) ? t.why() : "fails: " + t.why();
    }

    /** {@link #failing()}, or why every change fails (its file system read-only: EROFS), which reads survive. */
    @Override
    public String unanswered() {
        Trouble t = troubleNow();
        return t == null ? null : t.why();
    }

    /** Whether the last look found the store in trouble. */
    private synchronized boolean troubleSaid() {
        return trouble != null;
    }

    /**
     * A look at the store at each ask ({@code chibifs status} and {@code stats}): requests failing
     * alike were otherwise told only by their bare reason ("WRITE of node N: Input/output error"),
     * ENOTCONN not at all, and status said active. The log says what changed, once per change.
     */
    private Trouble troubleNow() {
        Trouble now;
        if (!mayStall) {
            now = look();
        } else {
            java.util.concurrent.CompletableFuture<Trouble> f;
            long waitNanos;
            synchronized (this) {
                if (looking == null) {
                    lookingSince = System.nanoTime();
                    looking = new java.util.concurrent.CompletableFuture<>();
                    java.util.concurrent.CompletableFuture<Trouble> mine = looking;
                    Thread t = new Thread(() -> mine.complete(look()), "chibifs-store-look");
                    t.setDaemon(true); // a look held by a server away must not keep the daemon from exiting
                    t.start();
                }
                f = looking;
                waitNanos = java.util.concurrent.TimeUnit.MILLISECONDS.toNanos(WholeStoreFailure.LOOK_WAIT_MILLIS) - (System.nanoTime() - lookingSince);
            }
            try {
                now = f.get(Math.max(0, waitNanos), java.util.concurrent.TimeUnit.NANOSECONDS);
                synchronized (this) {
                    if (looking == f) {
                        looking = null;
                    }
                }
            } catch (java.util.concurrent.TimeoutException e) {
                now = new Trouble(WholeStoreFailure.doesNotAnswer(root), false, false);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                synchronized (this) {
                    return trouble;
                }
            } catch (java.util.concurrent.ExecutionException e) {
                now = new Trouble("its directory " + root + " could not be looked at: " + e.getCause(), false, false);
            }
        }
        Trouble before;
        boolean wasReadOnlyFromStart;
        boolean readOnlyStill;
        synchronized (this) {
            before = trouble;
            trouble = now;
            wasReadOnlyFromStart = readOnlyFromStart;
            readOnlyFromStart = (looked ? readOnlyFromStart : true) && now != null && now.readOnly();
            looked = true;
            readOnlyStill = readOnlyFromStart;
        }
        if (readOnlyStill) {
            // mounted read-only on purpose: reads are served, and nothing changed for the worse to warn of
            return new Trouble(WholeStoreFailure.readOnlyFromStart(root), false, true);
        }
        if (!java.util.Objects.equals(before, now)) {
            // each reason names the store's directory already
            said.accept(now != null ? "the local store fails: " + now.why()
                    : "the store directory " + root + (wasReadOnlyFromStart ? " takes changes now" : " answers again"));
        }
        return now;
    }

    /** A look at the whole store: its root, and a file with no name made in it, as a write would; what fails, or null. */
    private Trouble look() {
        int errno;
        try (StoreRoot.InUse r = storeRoot.use(VfsPath.root(), directories.refresh())) {
            errno = WholeStoreFailure.of(r.fd());
        } catch (StoreRoot.FileSystemFails e) {
            return wholeStore(e.errno());
        } catch (IOException e) {
            String why = e instanceof FileSystemException f && f.getReason() != null ? f.getReason() : e.getMessage();
            String eio = LibC.strerror(Linux.EIO) + ": ";
            return new Trouble(why.startsWith(eio) ? why.substring(eio.length()) : why, true, false);
        }
        String stranger = storeRoot.stranger();
        if (errno == 0 && stranger != null) {
            return new Trouble(stranger, false, false);
        }
        return errno == 0 ? null : wholeStore(errno);
    }

    /** The store's file system answering every request, or every change, with {@code errno}. */
    private Trouble wholeStore(int errno) {
        boolean readOnly = errno == Linux.EROFS;
        return new Trouble("its directory " + root + " " + WholeStoreFailure.answers(errno)
                + (readOnly ? ": every change there fails" : ": requests there fail"), !readOnly, readOnly);
    }

    /** syncfs of the file system the store is on: what {@code sync} would do if it reached the daemon. */
    @Override
    public void sync() throws IOException {
        String name = root.toString();
        int fd = Syscalls.openat(Linux.AT_FDCWD, name, Linux.O_RDONLY | Linux.O_DIRECTORY, 0, name);
        try {
            Syscalls.syncfs(fd);
        } finally {
            Syscalls.close(fd);
        }
    }

    @Override
    public void syncDirectory(VfsPath directory) throws IOException {
        try (At d = directoryAt(directory)) {
            // the held descriptor is O_PATH, which fsync refuses (EBADF): "." opens that very directory to read
            int fd = Syscalls.openat(d.dir, d.name, Linux.O_RDONLY | Linux.O_DIRECTORY | Linux.O_CLOEXEC, 0, directory.toString());
            try {
                Syscalls.fsync(fd, true);
            } finally {
                Syscalls.close(fd);
            }
        }
    }

    /** True for the names of the store's own temporary files: hidden from listings and never created by callers. */
    static boolean isTemporaryName(String name) {
        return name.startsWith(TEMP_PREFIX) && TEMP_NAME.matcher(name).matches();
    }

    /** An open directory of the store and one name in it ("." for the directory itself). */
    private static final class At implements AutoCloseable {
        final int dir;
        final String name;
        private final HeldDirectories.Lease lease;
        /** The root it was opened below: the lease of the root itself is its descriptor. */
        private final StoreRoot.InUse root;

        At(HeldDirectories.Lease lease, String name, StoreRoot.InUse root) {
            this.lease = lease;
            this.dir = lease.fd();
            this.name = name;
            this.root = root;
        }

        private boolean closed;

        @Override
        public void close() {
            lease.close();
            if (!closed) {
                closed = true; // a second close must not let go of the root for another operation
                root.close();
            }
        }
    }

    /** The directory holding {@code path}, open, with the last name of {@code path}. */
    private At at(VfsPath path) throws IOException {
        String name = path.isRoot() ? "." : path.fileName();
        checkEncodable(path, name);
        return below(path, path.parentRelative(), name);
    }

    /** {@code path} itself, open as a directory. */
    private At directoryAt(VfsPath path) throws IOException {
        return below(path, path.relative(), ".");
    }

    private At below(VfsPath path, String relative, String name) throws IOException {
        StoreRoot.InUse r = storeRoot.use(path, directories.refresh());
        try {
            boolean replaced = r.generation() != devices.rootGeneration() && r.generation() > 1;
            if (replaced && (storeRoot.stranger() != null || troubleSaid())) {
                // another file system in the store's place answers every request, none failing: said now, not at the
                // next status; and so is the store back in its place, which no failing request has looked at either
                troubleNow();
            }
            ChangeListener f = following;
            if (replaced && f != null) {
                // names the kernel was told missing in the old root (a stranger's, say) may be here: no watch sees
                // this root's names yet, so without this they stay missing for the whole negative timeout
                f.storeReplaced();
            }
            devices.rootIs(r);
            return new At(directories.open(r.fd(), r.generation(), relative, path), name, r);
        } catch (IOException | RuntimeException e) {
            r.close();
            throw e;
        }
    }

    /**
     * Refuses a name the store cannot take faithfully. jnr-fuse and java.nio decode bytes that are
     * not UTF-8 to U+FFFD, so such a name may stand for other bytes: storing it would store a
     * different name (EILSEQ instead). Without a UTF-8 JVM locale, java.nio mangles non-ASCII.
     */
    private static void checkEncodable(VfsPath path, String name) throws FileSystemException {
        if (encodable(name)) {
            return;
        }
        if (name.indexOf('\uFFFD') >= 0) {
            throw ErrnoException.of(EILSEQ, path.toString(), "the name is not valid UTF-8");
        }
        if (!JNU_UTF8 && !name.chars().allMatch(c -> c < 0x80)) {
            throw ErrnoException.of(EILSEQ, path.toString(), "run the JVM under a UTF-8 locale, LC_ALL=C.UTF-8");
        }
    }

    /** Whether {@link #checkEncodable} lets {@code name} pass. */
    private static boolean encodable(String name) {
        return name.indexOf('\uFFFD') < 0 && (JNU_UTF8 || name.chars().allMatch(c -> c < 0x80));
    }

    /** Names of the store's temporary-file pattern are the store's own: a caller may not create one. */
    private static void checkCreatable(VfsPath path) throws FileSystemException {
        if (!path.isRoot() && isTemporaryName(path.fileName())) {
            throw ErrnoException.of(EINVAL, path.toString(),
                    "names like " + TEMP_PREFIX + "<16 hex digits> are reserved for the store's temporary files");
        }
    }

    /**
     * The metadata of {@code name} in {@code dirfd} (never followed), or of {@code dirfd} itself
     * when name is null; a failure names {@code path}.
     */
    private Metadata stat(int dirfd, String name, VfsPath path) throws IOException {
        return stat(dirfd, name, path, devices);
    }

    private static Metadata stat(int dirfd, String name, VfsPath path, StoreDevices devices) throws IOException {
        return metadata(Syscalls.stat(dirfd, name, path == null ? null : path.toString()), devices);
    }

    private static Metadata metadata(Syscalls.Statx s, StoreDevices devices) {
        int mode = s.mode();
        long device = devices.deviceOf(s.device());
        EntryKind kind = switch (mode & S_IFMT) {
            case S_IFREG -> EntryKind.FILE;
            case S_IFDIR -> EntryKind.DIRECTORY;
            case S_IFLNK -> EntryKind.SYMLINK;
            case S_IFIFO -> EntryKind.FIFO;
            case S_IFSOCK -> EntryKind.SOCKET;
            default -> EntryKind.OTHER;
        };
        return new Metadata(kind, s.size(), s.knowsBirth() ? time(s.createdSeconds(), s.createdNanos()) : null,
                time(s.modifiedSeconds(), s.modifiedNanos()), time(s.accessedSeconds(), s.accessedNanos()),
                time(s.changedSeconds(), s.changedNanos()), s.links(), mode & 07777,
                StoreDevices.shownInode(s.inode(), device), s.blocks(), device);
    }

    /** Times whose nanoseconds since 1970 fit a long (the years 1678 to 2262) are one object, not a FileTime and its Instant. */
    private static final long NANO_SECONDS_LIMIT = Long.MAX_VALUE / 1_000_000_000L - 1;

    private static FileTime time(long seconds, int nanos) {
        long n = nanos & 0xffffffffL;
        if (Math.abs(seconds) < NANO_SECONDS_LIMIT) {
            return FileTime.from(seconds * 1_000_000_000L + n, TimeUnit.NANOSECONDS);
        }
        return FileTime.from(Instant.ofEpochSecond(seconds, n));
    }

    /** {seconds, nanoseconds} of {@code t} for utimensat, or null (leave alone) for null. */
    private static long[] timespec(FileTime t) {
        if (t == null) {
            return null;
        }
        if (t == NOW) {
            return new long[] {0, Linux.UTIME_NOW};
        }
        Instant i = t.toInstant();
        return new long[] {i.getEpochSecond(), i.getNano()};
    }

    /** The exception for {@code errno} (positive), naming {@code path}. */
    private static IOException failure(int errno, VfsPath path) {
        return Errors.of(errno, path.toString());
    }

    /**
     * Opens {@code a} as an O_PATH descriptor of a regular file, creating it when asked. Links,
     * directories, fifos, sockets and devices are refused before anything opens them for data.
     */
    private int openRegular(At a, VfsPath path, boolean create, boolean exclusive, int createMode)
            throws IOException {
        for (int attempt = 0; ; attempt++) {
            if (!exclusive) {
                int fd = Syscalls.tryOpenat(a.dir, a.name, O_PATH | O_NOFOLLOW, 0);
                if (fd >= 0) {
                    regular(fd, path, devices);
                    return fd;
                }
                if (-fd != ENOENT || !create) {
                    throw failure(-fd, path);
                }
            }
            checkCreatable(path);
            int fd = Syscalls.tryOpenat(a.dir, a.name, O_CREAT | O_EXCL | O_RDONLY | O_NOFOLLOW,
                    fileMode(createMode));
            if (fd >= 0) {
                own(fd);
                return fd;
            }
            // EEXIST: someone created it since we looked; look again (it may be a fifo now)
            if (-fd != EEXIST || exclusive || attempt >= 3) {
                throw failure(-fd, path);
            }
        }
    }

    private static IOException notRegular(int type, VfsPath path) {
        if (type == S_IFDIR) {
            return new IsDirectoryException(path.toString());
        }
        if (type == S_IFLNK) {
            return failure(ELOOP, path);
        }
        return new OperationNotPermittedException(path.toString(),
                "not a regular file (fifos, sockets and devices are not served)");
    }

    /** The file behind an O_PATH descriptor, opened for data with {@code access} (through /proc, so the same inode). */
    private static int reopen(int fd, int access, VfsPath path) throws IOException {
        return Syscalls.reopen(fd, access, path.toString());
    }

    private static int fileMode(int createMode) {
        return 0644 | ((createMode & 0100) != 0 ? 0111 : 0);
    }

    private static String tempName() {
        return TEMP_PREFIX + String.format("%016x", ThreadLocalRandom.current().nextLong());
    }

    @Override
    public byte[] read(VfsPath path) throws IOException {
        return readingRegular(path, in -> {
            long size = Syscalls.stat(in, null, path.toString()).size();
            if (size > Integer.MAX_VALUE - 16) {
                throw ErrnoException.of(EFBIG, path.toString(), null);
            }
            ByteBuffer buf = ByteBuffer.allocate((int) size);
            while (buf.hasRemaining() && Syscalls.pread(in, buf, buf.position()) > 0) {
                // a file that grows while read is read up to its size at open
            }
            return buf.position() == buf.capacity() ? buf.array() : Arrays.copyOf(buf.array(), buf.position());
        });
    }

    /** The SHA-256 of the regular file at {@code path}, read in pieces. */
    private String hash(VfsPath path) throws IOException {
        return readingRegular(path, in -> ContentHash.of((dst, position) -> Syscalls.pread(in, dst, position),
                Syscalls.stat(in, null, path.toString()).size()));
    }

    /** What {@code use} makes of a descriptor of the regular file at {@code path}, open for reading. */
    private <T> T readingRegular(VfsPath path, DescriptorUse<T> use) throws IOException {
        try (At a = at(path)) {
            int fd = openRegular(a, path, false, false, 0);
            int in = -1;
            try {
                in = reopen(fd, O_RDONLY, path);
                return use.apply(in);
            } finally {
                if (in >= 0) {
                    Syscalls.close(in);
                }
                Syscalls.close(fd);
            }
        }
    }

    @FunctionalInterface
    private interface DescriptorUse<T> {
        T apply(int fd) throws IOException;
    }

    /**
     * How long {@link #write} and {@link #append} wait for a lock another process holds on the file
     * before they fail with EAGAIN (zero: they do not wait).
     */
    public void lockWait(Duration wait) {
        if (wait.isNegative()) {
            throw new IllegalArgumentException("a lock wait cannot be negative: " + wait);
        }
        this.lockWait = wait;
    }

    /** How a change waits between its tries for a lock another process holds on {@code path}. */
    @FunctionalInterface
    public interface LockPause {
        void pause(VfsPath path, long millis) throws InterruptedException;
    }

    /** Replaces the sleep between lock tries: tests hear through it that a change is waiting. */
    public void lockPause(LockPause pause) {
        this.lockPause = java.util.Objects.requireNonNull(pause);
    }

    /**
     * The mode {@link #write} and {@link #append} give a file they create (one they replace or add to
     * keeps its own): for a command that writes the store as its user, 0666 less the umask, as
     * chibi's own writes get.
     */
    public void newFileMode(int mode) {
        this.newFileMode = mode & 0777;
    }

    @Override
    public void write(VfsPath path, byte[] data) throws IOException {
        write(path, data, Precondition.NONE);
    }

    /**
     * Replaces the file atomically, while holding its locks (see {@link #lockForChange}), with the
     * condition checked under them: a process that locks the file through a mount, reads it and
     * writes it back loses nothing to this write, and this write to it nothing.
     */
    @Override
    public void write(VfsPath path, byte[] data, Precondition condition) throws IOException {
        write(path, data, condition, Guard.NONE);
    }

    /** {@link #write(VfsPath, byte[], Precondition)}, with {@code guard} checked under the locks, after any wait for them. */
    @Override
    public void write(VfsPath path, byte[] data, Precondition condition, Guard guard) throws IOException {
        spaceBackFirst();
        if (condition.none()) {
            writeLocked(path, data, condition, guard);
            return;
        }
        synchronized (this) {
            // a file not there yet has no lock to hold: two conditional writes of this storage go one at a time
            writeLocked(path, data, condition, guard);
        }
    }

    private void writeLocked(VfsPath path, byte[] data, Precondition condition, Guard guard) throws IOException {
        createParents(path);
        checkCreatable(path);
        try (Locked l = lockedWhereItIsNow(path, lockDeadline())) {
            guard.check();
            if (!condition.none()) {
                condition.check(path, currentEtag(path));
            }
            replaceAtomically(l.at, path, keptMode(l.at, path, newFileMode), out -> Syscalls.pwriteFully(out, ByteBuffer.wrap(data), 0));
        }
    }

    /** How many times a change starts again because the directory it locked a file in moved while it waited. */
    private static final int MOVED_DIRECTORY_RETRIES = 3;

    /** The directory holding a path, opened after the change's wait, and the file's lock in it (-1: none). */
    private static final class Locked implements AutoCloseable {
        final At at;
        final int held;

        Locked(At at, int held) {
            this.at = at;
            this.held = held;
        }

        @Override
        public void close() {
            try {
                if (held >= 0) {
                    Syscalls.close(held);
                }
            } finally {
                at.close();
            }
        }
    }

    /**
     * The directory that is at {@code path}'s parent once the file's locks are held, with them. A
     * directory opened before a wait (for a lock, for a slow stdin) may have been moved meanwhile,
     * into another context's home say: the guard was asked about the path given, so a change made
     * in the moved directory would bypass the policy and overwrite what its new owner wrote there.
     * So the parent is looked up again after the locks are taken, and the whole taken again when it
     * is no longer the one locked in; a parent that is gone fails as a missing directory does.
     */
    private Locked lockedWhereItIsNow(VfsPath path, long deadline) throws IOException {
        for (int attempt = 0; ; attempt++) {
            At a = atAgain(path);
            int held = -1;
            try {
                held = lockExisting(a, path, deadline);
                if (stillTheParent(a, path)) {
                    return new Locked(a, held);
                }
            } catch (IOException | RuntimeException e) {
                new Locked(a, held).close();
                throw e;
            }
            new Locked(a, held).close();
            if (attempt >= MOVED_DIRECTORY_RETRIES) {
                throw keptMoving(path);
            }
        }
    }

    /**
     * {@link #at} for a change looking its path up again once under way (after its wait, its
     * stdin, its parents made). A directory on the path that is a symbolic link by then was
     * swapped for one meanwhile: it is not followed, since the guard judged the path as it was and
     * only the router can judge where a link leads (the vfs commands follow links before they
     * start, and a change started after the swap does so), and the failure says what happened
     * rather than the bare "Too many levels of symbolic links", which reads as a loop of links.
     */
    private At atAgain(VfsPath path) throws IOException {
        try {
            return at(path);
        } catch (IOException e) {
            if (Errors.errno(e) != ELOOP) {
                throw e;
            }
            // the sentence alone, without strerror's words before it: they are what reads as a loop
            throw new ErrnoException(ELOOP, path.toString(), "a directory on its path changed into a symbolic link"
                    + " while the change was under way (not followed: the path was judged as it was)");
        }
    }

    /** A change that found its directory moved on every attempt ({@link #MOVED_DIRECTORY_RETRIES}). */
    private static IOException keptMoving(VfsPath path) {
        return ErrnoException.of(ESTALE, path.toString(), "its directory kept moving while the change waited");
    }

    /** Whether {@code a}'s directory is still the one a fresh lookup of {@code path}'s parent finds (device and inode). */
    private boolean stillTheParent(At a, VfsPath path) throws IOException {
        // a Statx is the thread's one buffer: read each before the next stat
        Syscalls.Statx held = Syscalls.stat(a.dir, null, path.toString());
        long inode = held.inode();
        long device = held.device();
        try (At now = atAgain(path)) {
            Syscalls.Statx found = Syscalls.stat(now.dir, null, path.toString());
            return found.inode() == inode && found.device() == device;
        } catch (NoSuchFileException gone) {
            return false;
        }
    }

    /**
     * {@link #write(VfsPath, byte[], Precondition, Guard)} of a content read a buffer at a time: it
     * goes into a file of the store's as it comes, before the file's locks are taken, so a slow
     * writer (a pipe) holds no lock while it writes and a large one needs no memory for it. That
     * file has no name until it is renamed over the target under the locks ({@link Staged}), so
     * nothing of it is seen, opened or left in the store meanwhile. The guard is checked before it
     * is made (a denied write leaves nothing) and again under the locks, with the condition, before
     * the rename; a failure anywhere leaves the file as it was.
     */
    @Override
    public void write(VfsPath path, InputStream data, Precondition condition, Guard guard) throws IOException {
        spaceBackFirst();
        guard.check();
        createParents(path);
        checkCreatable(path);
        try (At a = at(path); Staged staged = stage(a, path)) {
            copyInto(staged.fd, data, path);
            if (condition.none()) {
                replaceLocked(staged, path, condition, guard);
            } else {
                synchronized (this) {
                    // as writeLocked: two conditional writes of this storage go one at a time
                    replaceLocked(staged, path, condition, guard);
                }
            }
        }
    }

    /** Whether {@link #stage} tries O_TMPFILE first; off only where a test plays a file system that refuses it. */
    private volatile boolean unnamedStaging = true;

    /** Stages streamed writes in named temporaries, as on a file system that refuses O_TMPFILE (tests). */
    void stageInNamedTemporaries() {
        unnamedStaging = false;
    }

    /**
     * A streamed write's content until it is renamed over the target: a file with no name, made
     * with O_TMPFILE in the target's directory and linked only under the locks; where the file
     * system refuses O_TMPFILE (EOPNOTSUPP; EISDIR or EINVAL on kernels and file systems that do
     * not know it), a named temporary beside the target, which a signal's shutdown hook removes.
     */
    private final class Staged implements AutoCloseable {
        final int fd;
        /** Where the named temporary is; its name is null for a file with no name. */
        private final At in;
        private final String name;
        private final PendingTemporaries.Pending pending;
        private boolean moved;

        Staged(int fd, At in, String name) {
            this.fd = fd;
            this.in = in;
            this.name = name;
            this.pending = name == null ? null : PendingTemporaries.add(in.dir, name);
        }

        /** Puts the content at {@code to}'s name, replacing what is there; the directory may be another than where it was made. */
        void moveOver(At to, VfsPath path) throws IOException {
            if (name != null) {
                int err = Syscalls.tryRenameat(in.dir, name, to.dir, to.name, 0);
                if (err != 0) {
                    throw failure(-err, path);
                }
            } else {
                // a name only now, under the locks; rename(2) then replaces the target atomically, as linkat cannot
                String tmp = tempName();
                int err = Syscalls.tryLinkDescriptor(fd, to.dir, tmp);
                if (err != 0) {
                    throw failure(-err, path);
                }
                err = Syscalls.tryRenameat(to.dir, tmp, to.dir, to.name, 0);
                if (err != 0) {
                    Syscalls.tryUnlinkat(to.dir, tmp, false);
                    throw failure(-err, path);
                }
            }
            moved = true;
        }

        @Override
        public void close() {
            try {
                if (name != null) {
                    PendingTemporaries.remove(pending);
                    if (!moved) {
                        Syscalls.tryUnlinkat(in.dir, name, false);
                    }
                }
            } finally {
                Syscalls.close(fd);
            }
        }
    }

    private Staged stage(At a, VfsPath path) throws IOException {
        int fd = unnamedStaging ? Syscalls.tryOpenat(a.dir, ".", O_TMPFILE | O_WRONLY | O_NOCTTY, 0600) : -EOPNOTSUPP;
        if (fd >= 0) {
            own(fd);
            return new Staged(fd, a, null);
        }
        if (-fd != EOPNOTSUPP && -fd != EISDIR && -fd != EINVAL) {
            throw failure(-fd, path);
        }
        String tmp = tempName();
        fd = Syscalls.openat(a.dir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0600, path.toString());
        Staged named;
        try {
            named = new Staged(fd, a, tmp);
        } catch (RuntimeException e) {
            Syscalls.tryUnlinkat(a.dir, tmp, false);
            Syscalls.close(fd);
            throw e;
        }
        own(fd);
        return named;
    }

    private static void copyInto(int fd, InputStream data, VfsPath path) throws IOException {
        byte[] buffer = new byte[STREAM_BUFFER];
        long offset = 0;
        int n;
        while ((n = data.read(buffer)) >= 0) {
            try {
                Syscalls.pwriteFully(fd, ByteBuffer.wrap(buffer, 0, n), offset);
            } catch (FileSystemException e) {
                throw naming(e, path);
            }
            offset += n;
        }
    }

    /**
     * A failure of a descriptor (a full disk) names no file: the file being written, so every message
     * about it does ("No space left on device" alone left a tool cache entry's writer, cache put,
     * naming nothing). Others as they are.
     */
    private static FileSystemException naming(FileSystemException e, VfsPath path) {
        int errno = Errors.errno(e);
        return e.getFile() == null && errno > 0 ? Errors.of(errno, path.toString()) : e;
    }

    /**
     * Under the file's locks, in the directory at the path's parent now (see {@link #lockedWhereItIsNow}):
     * the guard, the condition, the mode, then {@code staged} moved over the name. A directory moved
     * to another file system fails (EXDEV), never lands.
     */
    private void replaceLocked(Staged staged, VfsPath path, Precondition condition, Guard guard) throws IOException {
        try (Locked l = lockedWhereItIsNow(path, lockDeadline())) {
            guard.check();
            if (!condition.none()) {
                condition.check(path, currentEtag(path));
            }
            int mode = keptMode(l.at, path, newFileMode) & 07777;
            try {
                Syscalls.fchmod(staged.fd, mode);
                Syscalls.fsync(staged.fd, true); // where a network file system tells a full disk
            } catch (FileSystemException e) {
                throw naming(e, path);
            }
            staged.moveOver(l.at, path);
        }
    }

    /**
     * Replaces the file with what {@code rewrite} makes of its content, read while holding its
     * locks (see {@link #lockForChange}): a change another process made under them while this
     * waited is in what {@code rewrite} is given, not lost. The condition is checked against that
     * content, after {@code guard}. Nothing is created: a file that is not there fails as a read does.
     */
    @Override
    public void rewrite(VfsPath path, Rewrite rewrite, Precondition condition, Guard guard) throws IOException {
        spaceBackFirst();
        try (Locked l = lockedWhereItIsNow(path, lockDeadline())) {
            guard.check();
            byte[] current = read(path);
            condition.check(path, ContentHash.of(current));
            byte[] next = rewrite.apply(current);
            replaceAtomically(l.at, path, keptMode(l.at, path, newFileMode), out -> Syscalls.pwriteFully(out, ByteBuffer.wrap(next), 0));
        }
    }

    /** When a change that starts now stops waiting for locks ({@link #lockWait}), as System.nanoTime. */
    private long lockDeadline() {
        return System.nanoTime() + lockWait.toNanos();
    }

    /**
     * The regular file at {@code a}, opened for writing and locked for a change; -1 when there is
     * none, or it cannot be opened for writing (a read-only file replaced by its directory's owner):
     * then nothing holds the change back, as before locks existed.
     */
    private int lockExisting(At a, VfsPath path, long deadline) throws IOException {
        while (true) {
            int fd = Syscalls.tryOpenat(a.dir, a.name, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, 0);
            if (fd < 0) {
                return -1;
            }
            try {
                if (!stat(fd, null, path).isFile()) {
                    Syscalls.close(fd);
                    return -1;
                }
                lockForChange(fd, path, deadline);
                if (stillNamed(a, fd, path)) {
                    return fd;
                }
            } catch (IOException | RuntimeException e) {
                Syscalls.close(fd);
                throw e;
            }
            Syscalls.close(fd);
        }
    }

    /**
     * Whether the file open as {@code fd} is still the one at {@code a}'s name (same device and
     * inode). A change waits for the lock on the file it opened, and the holder may have replaced
     * that file meanwhile (a write renames a new one over the name) or removed it: a lock on the
     * old one then guards nothing, and what was written to it would be lost with it. So the lock
     * is taken, then checked, and taken again on the new file, as sqlite and maildir do.
     */
    private static boolean stillNamed(At a, int fd, VfsPath path) throws IOException {
        // a Statx is the thread's one buffer: read each before the next stat
        Syscalls.Statx held = Syscalls.stat(fd, null, path.toString());
        long inode = held.inode();
        long device = held.device();
        try {
            Syscalls.Statx named = Syscalls.stat(a.dir, a.name, path.toString());
            return named.inode() == inode && named.device() == device;
        } catch (NoSuchFileException removed) {
            return false;
        }
    }

    /**
     * Takes an exclusive flock and a whole-file record (OFD) write lock on the file open for
     * writing as {@code fd}, as a program locking it through a mount would, so that a change made
     * through this storage (the vfs commands) waits for a lock taken through any mount of the
     * store, or by a program on the store directly, and excludes them while it lasts. Both kinds,
     * because programs use either (flock(1) and shell scripts flock; lockf, Python and SQLite take
     * record locks) and Linux keeps the two apart. They go when {@code fd} is closed. Waits until
     * {@code deadline} ({@link #lockWait} from the change's start), then EAGAIN naming the file.
     */
    private void lockForChange(int fd, VfsPath path, long deadline) throws IOException {
        long pause = 1;
        while (true) {
            if (Syscalls.flock(fd, LOCK_EX | LOCK_NB)) {
                if (Syscalls.ofdSetLock(fd, F_WRLCK, 0, OFFSET_MAX)) {
                    return;
                }
                // holding the flock while waiting for the record lock could keep its holder waiting for us
                Syscalls.flock(fd, LOCK_UN);
            }
            if (System.nanoTime() - deadline >= 0) {
                throw ErrnoException.of(EAGAIN, path.toString(), "another"
                        + " process holds a lock on the file (waited " + lockWait.toMillis() + " ms)");
            }
            try {
                lockPause.pause(path, pause);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw ErrnoException.of(EINTR, path.toString(), "waiting for a lock");
            }
            pause = Math.min(pause * 2, LOCK_RETRY_MAX_MILLIS);
        }
    }

    private interface Filler {
        /** Writes the content into the new file open (for writing) as {@code fd}. */
        void fill(int fd) throws IOException;
    }

    /** Writes a temporary sibling, syncs it, and renames it over the name: readers see old or new, never a mix. */
    private void replaceAtomically(At a, VfsPath path, int mode, Filler filler) throws IOException {
        String tmp = tempName();
        int fd = Syscalls.openat(a.dir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0600, path.toString());
        boolean renamed = false;
        try {
            own(fd);
            try {
                filler.fill(fd);
                Syscalls.fchmod(fd, mode & 07777);
                Syscalls.fsync(fd, true);
            } catch (FileSystemException e) {
                throw naming(e, path);
            }
            int err = Syscalls.tryRenameat(a.dir, tmp, a.dir, a.name, 0);
            if (err != 0) {
                throw failure(-err, path);
            }
            renamed = true;
        } finally {
            Syscalls.close(fd);
            if (!renamed) {
                Syscalls.tryUnlinkat(a.dir, tmp, false);
            }
        }
    }

    /**
     * The mode a replacement gets: that of the file it replaces (chibi writes in place, so a
     * script rewritten through the store stays executable), else {@code otherwise}.
     */
    private int keptMode(At a, VfsPath path, int otherwise) throws IOException {
        try {
            Metadata m = stat(a.dir, a.name, path);
            return m.isFile() ? m.mode() & 0777 : otherwise;
        } catch (NoSuchFileException absent) {
            return otherwise;
        }
    }

    /** Creates the missing parents of {@code path} through {@link #mkdir}, which refuses a link on the way. */
    private void createParents(VfsPath path) throws IOException {
        if (path.isRoot()) {
            throw new IsDirectoryException(path.toString());
        }
        // every name first: a write to a name the store refuses made its parents, and left them
        for (String name : path.segments()) {
            checkEncodable(path, name);
        }
        mkdir(path.parent());
    }

    @Override
    public void append(VfsPath path, byte[] data) throws IOException {
        append(path, data, Precondition.NONE);
    }

    @Override
    public void append(VfsPath path, byte[] data, Precondition condition) throws IOException {
        append(path, data, condition, Guard.NONE);
    }

    /**
     * Appends while holding the file's locks (see {@link #lockForChange}), with the guard and
     * condition checked under them, in the directory at the path's parent once they are held (as
     * {@link #lockedWhereItIsNow} finds it): one moved away while the append waited gets nothing.
     */
    @Override
    public void append(VfsPath path, byte[] data, Precondition condition, Guard guard) throws IOException {
        spaceBackFirst();
        createParents(path);
        long deadline = lockDeadline();
        for (int attempt = 0; ; attempt++) {
            try (At a = atAgain(path)) {
                if (appendLocked(a, path, data, condition, guard, deadline)) {
                    return;
                }
            }
            if (attempt >= MOVED_DIRECTORY_RETRIES) {
                throw keptMoving(path);
            }
        }
    }

    /** The append in {@code a}'s directory; false, with nothing written, when it is no longer at the path's parent. */
    private boolean appendLocked(At a, VfsPath path, byte[] data, Precondition condition, Guard guard, long deadline) throws IOException {
        // again while the file locked is no longer the one at the name (see stillNamed)
        while (true) {
            if (condition.ifNoneMatch()) {
                // create only: no file, so no lock to wait for; the exclusive create below decides a race
                condition.check(path, currentEtag(path));
            }
            int fd;
            boolean created = true;
            if (condition.ifNoneMatch()) {
                fd = openRegular(a, path, true, true, 0);
            } else {
                try {
                    fd = openRegular(a, path, false, false, 0);
                    created = false;
                } catch (NoSuchFileException missing) {
                    // --if-match names a file there is none of: refused as write refuses it, nothing made
                    condition.check(path, null);
                    try {
                        fd = openRegular(a, path, true, true, 0);
                    } catch (FileAlreadyExistsException madeMeanwhile) {
                        continue;
                    }
                }
            }
            int out = -1;
            long before = -1;
            boolean done = false;
            try {
                out = reopen(fd, O_WRONLY | O_APPEND, path);
                if (created) {
                    // made with the owner's write bit, to be opened for writing as above; then given the
                    // mode a write gives a new file (0400 for a user at umask 277, as chibi's append)
                    Syscalls.fchmod(out, newFileMode);
                }
                lockForChange(out, path, deadline);
                if (!stillNamed(a, out, path)) {
                    continue;
                }
                if (!stillTheParent(a, path)) {
                    return false;
                }
                guard.check();
                if (condition.ifMatch() != null) {
                    condition.check(path, currentEtag(path));
                }
                before = Syscalls.stat(out, null, path.toString()).size();
                // Linux's pwrite on an O_APPEND descriptor appends whatever the offset says
                Syscalls.pwriteFully(out, ByteBuffer.wrap(data), 0);
                done = true;
                return true;
            } finally {
                if (!done && created && out >= 0) {
                    // a refused or failed append leaves no trace: the file it made goes (still under
                    // the lock, so an appender that opened it meanwhile finds it unnamed and starts again)
                    unlinkIfStillNamed(a, out, path);
                } else if (!done && before >= 0) {
                    // one append is one write: a disk that filled midway (a short pwrite, then ENOSPC)
                    // kept the part written; cut back while the lock still keeps other appenders out
                    truncateBack(out, before);
                }
                if (out >= 0) {
                    Syscalls.close(out);
                }
                Syscalls.close(fd);
            }
        }
    }

    /** Cuts the file open as {@code fd} back to {@code size}; quietly, as the undo of a failure. */
    private static void truncateBack(int fd, long size) {
        try {
            Syscalls.ftruncate(fd, size);
        } catch (IOException | RuntimeException failing) {
            // the failure being told is the one that matters
        }
    }

    /** Unlinks the name in {@code a} while it still names the file open as {@code fd}; quietly, as the undo of a failure. */
    private static void unlinkIfStillNamed(At a, int fd, VfsPath path) {
        try {
            if (stillNamed(a, fd, path)) {
                Syscalls.tryUnlinkat(a.dir, a.name, false);
            }
        } catch (IOException | RuntimeException failing) {
            // the failure being told is the one that matters
        }
    }

    @Override
    public void delete(VfsPath path) throws IOException {
        try (At a = at(path)) {
            if (!stat(a.dir, a.name, path).isDirectory()) {
                Syscalls.unlinkat(a.dir, a.name, false, path.toString());
                return;
            }
            removeTree(a.dir, a.name.getBytes(StandardCharsets.UTF_8), path);
        }
    }

    /**
     * Removes the directory {@code name} in {@code parent} and everything in it, through
     * descriptors only: each directory is opened relative to its parent's descriptor with
     * O_NOFOLLOW|O_DIRECTORY, its entries read with getdents64 and removed with unlinkat on that
     * descriptor. No path is ever walked, so a symbolic link planted anywhere in the tree, even in
     * place of a directory while the removal runs, is removed as a name and never followed: the
     * open of it fails (ELOOP or ENOTDIR) and it is unlinked instead. A name someone else removes
     * meanwhile is not a failure; one someone adds is removed too (a few passes, then ENOTEMPTY).
     * Deep trees hold one descriptor per level, never a host path.
     */
    private static void removeTree(int parent, byte[] name, VfsPath path) throws IOException {
        int fd = Syscalls.tryOpenat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0);
        if (fd < 0) {
            int err = -fd;
            if (err == ENOENT) {
                return; // removed meanwhile
            }
            if (err == ELOOP || err == ENOTDIR) {
                // no longer a directory (a link or a file put in its place): remove the name itself
                int gone = Syscalls.tryUnlinkat(parent, name, false);
                if (gone != 0 && gone != -ENOENT) {
                    throw failure(-gone, path);
                }
                return;
            }
            throw failure(err, path);
        }
        try {
            for (int pass = 0; ; pass++) {
                // names as the directory holds them: one another program made of bytes that are not
                // UTF-8 would not survive a String, and the directory would never empty
                List<byte[]> directories = new ArrayList<>();
                Syscalls.readDirectoryFd(fd, path.toString(), (bytes, offset, length, type, inode) -> {
                    byte[] child = Arrays.copyOfRange(bytes, offset, offset + length);
                    if (type == DT_DIR) {
                        directories.add(child);
                        return true;
                    }
                    // a file, a link, a fifo (or an unknown type): unlinkat says EISDIR for a directory
                    int err = Syscalls.tryUnlinkat(fd, child, false);
                    if (err == -EISDIR) {
                        directories.add(child);
                    } else if (err != 0 && err != -ENOENT) {
                        throw failure(-err, path);
                    }
                    return true;
                });
                for (byte[] child : directories) {
                    removeTree(fd, child, path);
                }
                int err = Syscalls.tryUnlinkat(parent, name, true);
                if (err == 0 || err == -ENOENT) {
                    return;
                }
                if (err != -ENOTEMPTY || pass >= 3) {
                    throw failure(-err, path);
                }
                // names came while we removed: another pass, from the start of the listing
                Syscalls.lseekStart(fd);
            }
        } finally {
            Syscalls.close(fd);
        }
    }

    @Override
    public void forEachEntry(VfsPath path, EntrySink sink) throws IOException {
        try (At d = directoryAt(path)) {
            Syscalls.readDirectory(d.dir, d.name, path.toString(), (name, offset, length, type, inode) -> {
                // the names are bytes until one needs a closer look: temporaries start with '.'
                if (name[offset] == '.' && isTemporaryName(new String(name, offset, length, StandardCharsets.UTF_8))) {
                    return true;
                }
                EntryKind kind = kindOf(type);
                if (kind == null) {
                    // the file system does not say (d_type DT_UNKNOWN): ask
                    try {
                        kind = stat(d.dir, new String(name, offset, length, StandardCharsets.UTF_8), path).kind();
                    } catch (NoSuchFileException vanished) {
                        return true; // removed between readdir and stat: not listed
                    }
                }
                return sink.accept(name, offset, length, kind, inode);
            });
        }
    }

    /** The kind for a d_type; null for DT_UNKNOWN. */
    private static EntryKind kindOf(int dtype) {
        return switch (dtype) {
            case DT_UNKNOWN -> null;
            case DT_DIR -> EntryKind.DIRECTORY;
            case DT_REG -> EntryKind.FILE;
            case DT_LNK -> EntryKind.SYMLINK;
            case DT_FIFO -> EntryKind.FIFO;
            case DT_SOCK -> EntryKind.SOCKET;
            default -> EntryKind.OTHER;
        };
    }

    @Override
    public boolean exists(VfsPath path) throws IOException {
        try (At a = at(path)) {
            Syscalls.stat(a.dir, a.name, null);
            return true;
        } catch (FileSystemException unreachable) {
            // missing, below a file, or below a link that is not followed: nothing there for us
            return false;
        }
    }

    @Override
    public void mkdir(VfsPath path) throws IOException {
        spaceBackFirst();
        List<String> segments = path.segments();
        VfsPath p = VfsPath.root();
        for (String s : segments) {
            p = p.child(s);
            try (At a = at(p)) {
                int err = Syscalls.tryMkdirat(a.dir, a.name, 0777);
                if (err == 0) {
                    own(a.dir, a.name);
                } else if (err == -EEXIST) {
                    Metadata m = stat(a.dir, a.name, path);
                    if (!m.isDirectory()) {
                        throw failure(m.kind() == EntryKind.SYMLINK ? ELOOP : ENOTDIR, path);
                    }
                } else if (err != 0) {
                    throw failure(-err, path);
                }
            }
        }
    }

    @Override
    public void copy(VfsPath src, VfsPath dst) throws IOException {
        copy(src, dst, Guard.NONE);
    }

    /**
     * Replaces {@code dst} as a write does: under its locks, in the directory at its parent once
     * they are held (see {@link #lockedWhereItIsNow}), with {@code guard} checked after the wait.
     */
    @Override
    public void copy(VfsPath src, VfsPath dst, Guard guard) throws IOException {
        spaceBackFirst();
        try (At from = at(src)) {
            int fd = openRegular(from, src, false, false, 0);
            int in = -1;
            try {
                in = reopen(fd, O_RDONLY, src);
                Syscalls.Statx opened = Syscalls.stat(in, null, src.toString());
                int mode = opened.mode() & 0777;
                long size = opened.size();
                createParents(dst);
                checkCreatable(dst);
                int source = in;
                try (Locked l = lockedWhereItIsNow(dst, lockDeadline())) {
                    guard.check();
                    // a failure naming no file names the one written (replaceAtomically): a copy has two
                    replaceAtomically(l.at, dst, mode, out -> Syscalls.copy(source, out, size));
                }
            } finally {
                if (in >= 0) {
                    Syscalls.close(in);
                }
                Syscalls.close(fd);
            }
        }
    }

    @Override
    public void rename(VfsPath src, VfsPath dst) throws IOException {
        rename(src, dst, RenameMode.REPLACE);
    }

    /**
     * The store's own file system tells: the handle's descriptor's /proc/self/fd link, below the
     * store's root (null where the file is outside it now, moved out by a program on the store, or
     * where the link no longer names it).
     */
    @Override
    public VfsPath pathOf(FileHandle handle) throws IOException {
        if (!(handle instanceof LocalFileHandle f)) {
            return null;
        }
        String now;
        try {
            now = Syscalls.descriptorPath(f.fd());
        } catch (IOException beyondPathMax) {
            return null; // ENAMETOOLONG: deeper than a path can say
        }
        if (now.endsWith(DELETED)) {
            // the link follows the name the descriptor was opened by, not the file: that name removed
            // while another stays (a hard link, a file made with O_TMPFILE and linked), it tells nothing
            if (f.metadata().links() > 0) {
                return null;
            }
            now = now.substring(0, now.length() - DELETED.length());
        }
        String top = root.toString();
        if (!now.startsWith(top) || now.length() > top.length() && now.charAt(top.length()) != '/') {
            return null;
        }
        try {
            return now.length() == top.length() ? VfsPath.root() : VfsPath.of(now.substring(top.length()));
        } catch (InvalidVfsPathException notOurs) {
            return null; // a name chibi could not have made (not UTF-8): nothing the policy can place
        }
    }

    /**
     * An flock(2) of the store's root directory, on a descriptor of its own (two of one open file
     * description would share one lock): every mount of this store and every vfs command takes it,
     * and no program reaches it through a mount, where a directory's flock stays in the kernel.
     */
    @Override
    public MoveLock lockMoves(boolean exclusive) throws IOException {
        int fd;
        try (StoreRoot.InUse r = storeRoot.use(VfsPath.root(), directories.refresh())) {
            fd = Syscalls.openat(r.fd(), ".", O_RDONLY | O_DIRECTORY, 0, root.toString());
        }
        try {
            Syscalls.flock(fd, exclusive ? LOCK_EX : LOCK_SH);
        } catch (IOException | RuntimeException e) {
            Syscalls.close(fd);
            throw e;
        }
        return () -> Syscalls.close(fd);
    }

    /** renameat2(2) with the mode's flag: the store's file system decides atomically, as it would for a program. */
    @Override
    public void rename(VfsPath src, VfsPath dst, RenameMode mode) throws IOException {
        checkCreatable(dst);
        if (mode == RenameMode.EXCHANGE) {
            checkCreatable(src);
        }
        int flags = switch (mode) {
            case REPLACE -> 0;
            case NO_REPLACE -> Linux.RENAME_NOREPLACE;
            case EXCHANGE -> Linux.RENAME_EXCHANGE;
        };
        try (At from = at(src); At to = at(dst)) {
            // what the rename replaces is freed by LateCloses, as a removed file is
            int replaced = mode == RenameMode.REPLACE ? LateCloses.hold(to.dir, to.name) : -1;
            int err = -Syscalls.tryRenameat(from.dir, from.name, to.dir, to.name, flags);
            lateCloses.release(replaced, err == 0);
            if (err != 0) {
                // renameat2 says which: a missing source, or what stands in the way at the target
                throw failure(err, switch (err) {
                    case EISDIR, ENOTDIR, ENOTEMPTY, EEXIST, EACCES -> dst;
                    default -> src;
                });
            }
        }
    }

    @Override
    public Metadata metadata(VfsPath path) throws IOException {
        try (At a = at(path)) {
            return stat(a.dir, a.name, path);
        }
    }

    /**
     * One check of the held directories and one lease for all the names: per name, a statx
     * relative to the directory's descriptor. A directory moved meanwhile is read where it now
     * is, as one {@link #metadata} that had taken its lease before the move would.
     */
    @Override
    public Siblings siblings(VfsPath directory) throws IOException {
        At a = directoryAt(directory);
        return new Siblings() {
            @Override
            public Metadata metadata(String name) throws IOException {
                // the path only names a failure: a listing asks hundreds of names, nearly all there
                if (!encodable(name)) {
                    checkEncodable(directory.child(name), name);
                }
                try {
                    return stat(a.dir, name, null);
                } catch (IOException e) {
                    throw Errors.of(Errors.errno(e), directory.child(name).toString());
                }
            }

            @Override
            public void close() {
                a.close();
            }
        };
    }

    @Override
    public FileHandle open(VfsPath path, Set<OpenFlag> flags, int createMode) throws IOException {
        if (!flags.equals(READ_ONLY)) {
            spaceBackFirst();
        }
        int access = access(flags);
        boolean write = (access & O_ACCMODE) != O_RDONLY;
        boolean exclusive = flags.contains(OpenFlag.CREATE_NEW);
        boolean create = exclusive || flags.contains(OpenFlag.CREATE);
        // only a file that was there already is truncated, as the kernel does for O_CREAT|O_TRUNC: ext4
        // takes a truncate to 0 for a rewrite and writes the data out at close (auto_da_alloc), which
        // made every new file cost a writeback, and its removal a discard
        int existing = access | (write && flags.contains(OpenFlag.TRUNCATE) ? O_TRUNC : 0);
        if (create) {
            checkCreatable(path);
        }
        try (At a = at(path)) {
            for (int attempt = 0; ; attempt++) {
                // A create comes from the kernel's CREATE, sent when a lookup found nothing: the name
                // is nearly always free, so the exclusive create goes first, one openat for a new
                // file, and the name is opened as it is only when that says EEXIST.
                if (create) {
                    int fd = Syscalls.tryOpenat(a.dir, a.name, access | O_CREAT | O_EXCL | DATA_OPEN,
                            fileMode(createMode));
                    if (fd >= 0) {
                        own(fd);
                        return new LocalFileHandle(fd, null, access, locks, devices);
                    }
                    if (-fd != EEXIST || exclusive) {
                        throw failure(-fd, path);
                    }
                }
                int fd = Syscalls.tryOpenat(a.dir, a.name, existing | DATA_OPEN, 0);
                if (fd >= 0) {
                    return new LocalFileHandle(fd, regular(fd, path, devices), access, locks, devices);
                }
                if (-fd == ENXIO) {
                    // O_NONBLOCK|O_WRONLY on a fifo without a reader, or a socket
                    throw notRegular(0, path);
                }
                // ENOENT after EEXIST: removed in between; create it after all
                if (-fd != ENOENT || !create || attempt >= 3) {
                    throw failure(-fd, path);
                }
            }
        }
    }

    @Override
    public HeldFile hold(VfsPath path) throws IOException {
        try (At a = at(path)) {
            int fd = Syscalls.tryOpenat(a.dir, a.name, O_PATH | O_NOFOLLOW, 0);
            if (fd < 0) {
                throw failure(-fd, path);
            }
            if (!statOrClose(fd, path, devices).isFile()) {
                Syscalls.close(fd);
                return null;
            }
            return new LocalHeldFile(fd, path);
        }
    }

    /** An O_PATH descriptor of a regular file: opened again through /proc/self/fd, whatever names it has now. */
    private final class LocalHeldFile implements HeldFile {
        private final int fd;
        private final VfsPath path;
        private final AtomicBoolean closed = new AtomicBoolean();

        LocalHeldFile(int fd, VfsPath path) {
            this.fd = fd;
            this.path = path;
        }

        @Override
        public Metadata metadata() throws IOException {
            checkOpen();
            return stat(fd, null, path);
        }

        private void checkOpen() throws NoSuchFileException {
            if (closed.get()) {
                // its descriptor number may be another file's by now
                throw new NoSuchFileException(path.toString());
            }
        }

        @Override
        public FileHandle open(Set<OpenFlag> flags) throws IOException {
            if (!flags.equals(READ_ONLY)) {
                spaceBackFirst();
            }
            checkOpen();
            return reopened(fd, flags, path, locks, devices);
        }

        @Override
        public void close() {
            if (closed.compareAndSet(false, true)) {
                Syscalls.close(fd);
            }
        }
    }

    /**
     * A new open with {@code flags} of the regular file behind {@code fd} (an O_PATH one too), through
     * /proc/self/fd: that very inode, renamed, unlinked or never named since. No O_NOFOLLOW: the
     * /proc link is one to follow.
     */
    private static LocalFileHandle reopened(int fd, Set<OpenFlag> flags, VfsPath path, OfdLocks locks,
                                            StoreDevices devices) throws IOException {
        int access = access(flags);
        boolean write = (access & O_ACCMODE) != O_RDONLY;
        int opened = Syscalls.reopen(fd, access | (write && flags.contains(OpenFlag.TRUNCATE) ? O_TRUNC : 0),
                path == null ? null : path.toString());
        return new LocalFileHandle(opened, regular(opened, path, devices), access, locks, devices);
    }

    /** The access mode of an open with {@code flags}: O_RDONLY, O_WRONLY or O_RDWR, and O_APPEND. */
    private static int access(Set<OpenFlag> flags) {
        boolean read = flags.contains(OpenFlag.READ);
        boolean write = flags.contains(OpenFlag.WRITE) || flags.contains(OpenFlag.APPEND);
        // Linux pwrite on an O_APPEND descriptor appends whatever the position says
        return (read && write ? O_RDWR : write ? O_WRONLY : O_RDONLY) | (flags.contains(OpenFlag.APPEND) ? O_APPEND : 0);
    }

    /** A handle's inode before anybody asked (a file the open itself created). */
    private static final long UNKNOWN_INODE = -1;

    /**
     * Flags of every open for data. O_NONBLOCK: opening a fifo someone planted in the store must
     * not wait for a writer (regular files ignore the flag); O_NOCTTY: nor may a terminal become ours.
     * The type is checked right after, on the descriptor itself, so nothing but a regular file is served.
     */
    private static final int DATA_OPEN = O_NOFOLLOW | O_NONBLOCK | O_NOCTTY;

    /** The metadata of {@code fd}; {@code fd} closed when that fails. */
    private static Metadata statOrClose(int fd, VfsPath path, StoreDevices devices) throws IOException {
        try {
            return stat(fd, null, path, devices);
        } catch (IOException e) {
            Syscalls.close(fd);
            throw e;
        }
    }

    /** The metadata of {@code fd} when it is a regular file; {@code fd} closed, and refused, otherwise. */
    private static Metadata regular(int fd, VfsPath path, StoreDevices devices) throws IOException {
        Metadata m = statOrClose(fd, path, devices);
        if (!m.isFile()) {
            Syscalls.close(fd);
            throw notRegular(switch (m.kind()) {
                case DIRECTORY -> S_IFDIR;
                case SYMLINK -> S_IFLNK;
                default -> 0;
            }, path);
        }
        return m;
    }

    @Override
    public void truncate(VfsPath path, long size) throws IOException {
        spaceBackFirst();
        try (At a = at(path)) {
            int fd = openRegular(a, path, false, false, 0);
            int out = -1;
            try {
                out = reopen(fd, O_WRONLY, path);
                Syscalls.ftruncate(out, size); // shrinks, or grows with a hole
            } finally {
                if (out >= 0) {
                    Syscalls.close(out);
                }
                Syscalls.close(fd);
            }
        }
    }

    @Override
    public void createDirectory(VfsPath path) throws IOException {
        spaceBackFirst();
        checkCreatable(path);
        try (At a = at(path)) {
            Syscalls.mkdirat(a.dir, a.name, 0777, path.toString());
            own(a.dir, a.name);
        }
    }

    @Override
    public void removeFile(VfsPath path) throws IOException {
        try (At a = at(path)) {
            // a reference across the unlink, so the inode is freed (its blocks discarded) by LateCloses
            lateCloses.removeHolding(a.dir, a.name, () -> Syscalls.unlinkat(a.dir, a.name, false, path.toString()));
        }
    }

    @Override
    public void removeDirectory(VfsPath path) throws IOException {
        try (At a = at(path)) {
            for (int pass = 0; ; pass++) {
                int err = Syscalls.tryUnlinkat(a.dir, a.name, true);
                if (err == 0) {
                    return;
                }
                if (err != -ENOTEMPTY || pass >= 2 || !removeTemporariesIfAlone(a.dir, a.name)) {
                    throw failure(-err, path);
                }
            }
        }
    }

    /**
     * Where the directory {@code name} in {@code parent} holds nothing but the store's temporary
     * files, removes them and answers true. Listings hide them, so a directory a killed write left
     * one in looked empty and {@code rm -r} failed ENOTEMPTY on it until a later mount's cleanup
     * (of those 10 minutes old). A write still under way there loses its temporary and fails at its
     * rename, as it would had the directory gone first: the caller asked for the directory to go.
     */
    private static boolean removeTemporariesIfAlone(int parent, String name) throws IOException {
        List<String> temporaries = new ArrayList<>();
        boolean[] others = {false};
        Syscalls.readDirectory(parent, name, null, (bytes, offset, length, type, inode) -> {
            String child = new String(bytes, offset, length, StandardCharsets.UTF_8);
            if ((type == DT_REG || type == DT_UNKNOWN) && isTemporaryName(child)) {
                temporaries.add(child);
                return true;
            }
            others[0] = true;
            return false;
        });
        if (others[0] || temporaries.isEmpty()) {
            return false;
        }
        int fd = Syscalls.tryOpenat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0);
        if (fd < 0) {
            return false;
        }
        try {
            for (String t : temporaries) {
                Syscalls.tryUnlinkat(fd, t, false);
            }
            return true;
        } finally {
            Syscalls.close(fd);
        }
    }

    /** Looked at and removed through one descriptor of its parent: between the two only the name can change, in microseconds. */
    @Override
    public boolean removeDirectoryIfSame(VfsPath path, Metadata made) throws IOException {
        try (At a = at(path)) {
            Metadata now = stat(a.dir, a.name, path);
            if (!now.isDirectory() || !now.sameFileAs(made)) {
                return false;
            }
            Syscalls.unlinkat(a.dir, a.name, true, path.toString());
            return true;
        } catch (NoSuchFileException gone) {
            return false;
        }
    }

    @Override
    public void setTimes(VfsPath path, FileTime accessed, FileTime modified) throws IOException {
        try (At a = at(path)) {
            Syscalls.utimensat(a.dir, a.name, timespec(accessed), timespec(modified), path.toString());
        }
    }

    /**
     * The ctime moved by name, as a chown moves it on a disk: a read-only store answers EROFS, as
     * ext4 mounted ro answers every chown, chown(f, -1, -1) too, where chibifs answered 0.
     */
    @Override
    public void ownerAsked(VfsPath path) throws IOException {
        try (At a = at(path)) {
            int err = Syscalls.tryTouchChangeTime(a.dir, a.name);
            if (err == -Linux.ENOENT) {
                throw new NoSuchFileException(path.toString());
            }
            changeTimeMoved(err, path.toString());
        }
    }

    @Override
    public void setExecutable(VfsPath path, int mode) throws IOException {
        try (At a = at(path)) {
            // most chmods change no execute bit (tar and cp -p chmod every file they write): one statx
            // by name tells, where a descriptor to change the mode through costs an open and a close more
            Metadata named = stat(a.dir, a.name, path);
            if (named.isDirectory() || named.isFile() && withExecuteBits(named.mode(), mode) < 0 || isNode(named)) {
                // a directory's search bits are what lets chibi and the daemon into it; a fifo's or a
                // socket's grant nothing (the path is the policy), as a file's read and write bits.
                // Yet the ctime moves, as every chmod moves it on a disk: by name, one call (tar and
                // cp -p chmod every file), since a name that stands for another file by now only
                // gets its ctime moved. A file system that refuses it loses the ctime alone: the
                // chmod itself asked for nothing the store keeps
                changeTimeMoved(Syscalls.tryTouchChangeTime(a.dir, a.name), path.toString());
                return;
            }
            // chmod through the O_PATH descriptor's /proc link: the inode checked is the inode changed
            int fd = Syscalls.openat(a.dir, a.name, O_PATH | O_NOFOLLOW, 0, path.toString());
            try {
                Metadata m = stat(fd, null, path);
                if (!m.isFile() && !m.isDirectory() && !isNode(m)) {
                    throw notRegular(m.kind() == EntryKind.SYMLINK ? S_IFLNK : 0, path);
                }
                int wanted = m.isFile() ? withExecuteBits(m.mode(), mode) : -1;
                if (wanted >= 0) {
                    Syscalls.chmodPath(fd, wanted, path.toString());
                } else {
                    // replaced since the look by name: its ctime, as above
                    changeTimeMoved(Syscalls.tryFchownOpened(fd, -1, -1), path.toString());
                }
            } finally {
                Syscalls.close(fd);
            }
        }
    }

    // ---- extended attributes: the store file's own, in its file system ----

    @Override
    public byte[] xattr(VfsPath path, String name) throws IOException {
        byte[] value = withXattrs(path, false, fd -> Syscalls.getxattrPath(fd, name, path.toString()));
        if (value == null) {
            throw Storage.noXattr(path, name);
        }
        return value;
    }

    @Override
    public List<String> xattrNames(VfsPath path) throws IOException {
        try (At a = at(path)) {
            List<String> names = Syscalls.listxattrAt(a.dir, a.name, path.toString());
            // user.* names are a file's or a directory's only: a link, fifo or socket has none to show
            // (its security.* labels, if any, go the long way, which knows its type)
            if (names != null && names.stream().allMatch(n -> n.startsWith(USER_XATTRS))) {
                return names;
            }
        }
        List<String> names = withXattrs(path, false, fd -> Syscalls.listxattrPath(fd, path.toString()));
        return names == null ? List.of() : names;
    }

    @Override
    public void setXattr(VfsPath path, String name, byte[] value, XattrMode mode) throws IOException {
        spaceBackFirst();
        int flags = xattrFlags(mode);
        withXattrs(path, true, fd -> {
            Syscalls.setxattrPath(fd, name, value, flags, path.toString());
            return path;
        });
    }

    @Override
    public void removeXattr(VfsPath path, String name) throws IOException {
        withXattrs(path, true, fd -> {
            Syscalls.removexattrPath(fd, name, path.toString());
            return path;
        });
    }

    private static int xattrFlags(XattrMode mode) {
        return switch (mode) {
            case SET -> 0;
            case CREATE -> XATTR_CREATE;
            case REPLACE -> XATTR_REPLACE;
        };
    }

    /** The namespace of the attributes a mount shows: the only one a link, fifo or socket cannot have. */
    private static final String USER_XATTRS = "user.";

    private interface XattrCall<T> {
        T on(int fd) throws IOException;
    }

    /**
     * {@code call} on an O_PATH descriptor of the file or directory at {@code path}, never a link
     * followed. A symbolic link, fifo or socket has no user attributes: null to a read, EPERM to
     * a change, as Linux answers for user.* names there.
     */
    private <T> T withXattrs(VfsPath path, boolean change, XattrCall<T> call) throws IOException {
        try (At a = at(path)) {
            int fd = Syscalls.openat(a.dir, a.name, O_PATH | O_NOFOLLOW, 0, path.toString());
            try {
                int type = Syscalls.type(fd);
                if (type == S_IFREG || type == S_IFDIR) {
                    return call.on(fd);
                }
                if (change) {
                    throw Storage.noXattrsHere(path);
                }
                return null;
            } finally {
                Syscalls.close(fd);
            }
        }
    }

    /**
     * The mode to set for {@code mode}'s execute bits on a file whose mode is {@code current}, or -1
     * when that changes nothing: tar and cp -p chmod every file they write, and most change nothing
     * the store keeps.
     */
    private static boolean isNode(Metadata m) {
        return m.kind() == EntryKind.FIFO || m.kind() == EntryKind.SOCKET;
    }

    /**
     * A chmod that changes no bit the store keeps moved the ctime alone, {@code err} its -errno (or
     * 0). A read-only store answers it EROFS, as its file system answers every chmod (ext4: also
     * one that changes no bit): succeeding would say a change was made that was not. Any other
     * refusal (a file system without owners) loses the ctime alone.
     */
    private static void changeTimeMoved(int err, String file) throws IOException {
        if (err == -EROFS) {
            throw ErrnoException.forErrno(EROFS, file);
        }
    }

    private static int withExecuteBits(int current, int mode) {
        int wanted = (current & 0666) | (mode & 0111);
        return (current & 07777) == wanted ? -1 : wanted;
    }

    @Override
    public void link(VfsPath existing, VfsPath newName) throws IOException {
        spaceBackFirst();
        checkCreatable(newName);
        try (At from = at(existing); At to = at(newName)) {
            if (stat(from.dir, from.name, existing).isDirectory()) {
                throw ErrnoException.forErrno(EPERM, existing.toString());
            }
            // linkat(2) without AT_SYMLINK_FOLLOW never follows the last name of the existing file
            int err = -Syscalls.tryLinkat(from.dir, from.name, to.dir, to.name);
            if (err != 0) {
                throw failure(err, err == EEXIST ? newName : existing);
            }
        }
    }

    /** The store's own file system makes it (O_TMPFILE): nothing of it is left in the store if it is never named. */
    @Override
    public FileHandle openUnnamed(VfsPath directory, int mode) throws IOException {
        spaceBackFirst();
        try (At a = directoryAt(directory)) {
            int fd = Syscalls.tryOpenat(a.dir, ".", O_TMPFILE | O_RDWR | O_NONBLOCK | O_NOCTTY, fileMode(mode));
            if (fd < 0) {
                throw failure(-fd, directory);
            }
            own(fd);
            return new LocalFileHandle(fd, null, O_RDWR, locks, devices);
        }
    }

    @Override
    public void link(FileHandle handle, VfsPath newName) throws IOException {
        if (!(handle instanceof LocalFileHandle open)) {
            throw ErrnoException.forErrno(EXDEV, newName.toString());
        }
        spaceBackFirst();
        checkCreatable(newName);
        try (At to = at(newName)) {
            int err = -Syscalls.tryLinkDescriptor(open.fd(), to.dir, to.name);
            if (err != 0) {
                throw failure(err, newName);
            }
        }
    }

    @Override
    public String readLink(VfsPath path) throws IOException {
        try (At a = at(path)) {
            return Syscalls.readlinkat(a.dir, a.name, path.toString());
        } catch (ErrnoException e) {
            // readlink's EINVAL: there, but no symbolic link
            throw e.errno() == EINVAL ? new Errors.NotLink(path.toString()) : e;
        }
    }

    /**
     * symlinkat(2) relative to the held parent: the target text is stored as given and never
     * resolved or followed here (rules about targets are the router's).
     */
    @Override
    public void createSymlink(VfsPath link, String target) throws IOException {
        spaceBackFirst();
        checkCreatable(link);
        checkTarget(link, target);
        try (At a = at(link)) {
            Syscalls.symlinkat(target, a.dir, a.name, link.toString());
            own(a.dir, a.name);
        }
    }

    /** A target symlink(2) can store: not empty (ENOENT), no NUL, at most PATH_MAX - 1 bytes (ENAMETOOLONG). */
    static void checkTarget(VfsPath link, String target) throws IOException {
        if (target.isEmpty()) {
            throw new Errors.NoSuchFile(link.toString(), "a symbolic link needs a target");
        }
        if (target.indexOf('\0') >= 0 || target.indexOf('\uFFFD') >= 0) {
            throw ErrnoException.of(EINVAL, link.toString(), "the link target is not valid UTF-8 text");
        }
        if (target.getBytes(StandardCharsets.UTF_8).length >= PATH_MAX) {
            throw ErrnoException.of(ENAMETOOLONG, link.toString(),
                    "a link target has at most " + (PATH_MAX - 1) + " bytes");
        }
    }

    /** mknodat(2) of a fifo or a socket relative to the held parent; nothing else (devices: EPERM). */
    @Override
    public void createNode(VfsPath path, EntryKind kind, int mode) throws IOException {
        spaceBackFirst();
        int type = switch (kind) {
            case FIFO -> S_IFIFO;
            case SOCKET -> S_IFSOCK;
            default -> throw new OperationNotPermittedException(path.toString(),
                    "the store makes only fifos and sockets this way, not " + kind.name().toLowerCase(java.util.Locale.ROOT));
        };
        checkCreatable(path);
        try (At a = at(path)) {
            // read and write bits as any new file gets them: only the execute bits mean anything to chibifs
            Syscalls.mknodat(a.dir, a.name, type | fileMode(mode), path.toString());
            own(a.dir, a.name);
        }
    }

    /**
     * Follows directories with an inotify instance of its own, on a file system whose every change
     * raises events (as {@link HeldDirectories} requires); {@link ChangeFeed#NONE} elsewhere.
     */
    @Override
    public ChangeFeed changes(ChangeListener listener) {
        try (At r = directoryAt(VfsPath.root())) {
            if (!HeldDirectories.followable(r.dir)) {
                return ChangeFeed.NONE;
            }
        } catch (IOException e) {
            return ChangeFeed.NONE;
        }
        following = listener;
        return DirectoryChanges.start(listener, (inotify, directory, mask) -> {
            try (At d = directoryAt(directory)) {
                // the root's file system was checked above; another may be mounted anywhere below it
                return HeldDirectories.followable(d.dir) ? Syscalls.inotifyWatch(inotify, d.dir, ".", mask) : -EXDEV;
            }
        });
    }

    @Override
    public void close() {
        directories.close();
        lateCloses.close();
        locks.close();
    }

    @Override
    public boolean standsIn() {
        return storeRoot.stranger() != null;
    }

    // ---- ETags ----

    /** A file's ETag as last hashed, with the attributes that say whether it still holds. */
    private record Hashed(long size, FileTime modified, FileTime changed, String etag) {
    }

    private static final int ETAGS_KEPT = 4096;
    /**
     * A file changed this recently is hashed again next time: a write within the same tick of the
     * kernel's coarse clock leaves size, mtime and ctime as they were (git's "racily clean").
     */
    private static final Duration RACY = Duration.ofMillis(100);

    private final java.util.concurrent.atomic.AtomicLong hashed = new java.util.concurrent.atomic.AtomicLong();

    /** How many times a file's content was hashed (tests: an unchanged file is hashed once). */
    long contentHashes() {
        return hashed.get();
    }

    /** By inode, least recently used first; guarded by itself. */
    private final java.util.Map<Long, Hashed> etags = new java.util.LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(java.util.Map.Entry<Long, Hashed> eldest) {
            return size() > ETAGS_KEPT;
        }
    };

    /**
     * The SHA-256 of the file's content, hashed once per change: remembered by inode with the size,
     * mtime and ctime it had, which any change to the file alters (chibi and other writers included).
     */
    @Override
    public String etag(VfsPath path) throws IOException {
        Metadata before = metadata(path);
        if (before.isDirectory()) {
            throw new IsDirectoryException(path.toString());
        }
        Hashing mine;
        Hashing theirs;
        synchronized (etags) {
            Hashed h = etags.get(before.inode());
            if (h != null && h.size() == before.size() && h.modified().equals(before.modified())
                    && h.changed().equals(before.changed())) {
                return h.etag();
            }
            // one hash of a version at a time: three agents asking for a large file's at once hashed
            // it three times, and the third met the limit on large hashes (EBUSY)
            theirs = hashing.get(before.inode());
            if (theirs != null && theirs.of().size() == before.size() && theirs.of().modified().equals(before.modified())
                    && theirs.of().changed().equals(before.changed())) {
                mine = null;
            } else {
                theirs = null;
                mine = new Hashing(before, new java.util.concurrent.CompletableFuture<>());
                hashing.put(before.inode(), mine);
            }
        }
        if (theirs != null) {
            return theirs.await();
        }
        String etag;
        try {
            etag = hash(path);
            mine.etag().complete(etag);
        } catch (IOException | RuntimeException e) {
            mine.etag().completeExceptionally(e);
            throw e;
        } finally {
            synchronized (etags) {
                hashing.remove(before.inode(), mine);
            }
        }
        hashed.incrementAndGet();
        Metadata after = metadata(path);
        // remembered only when nothing changed while it was read, and not within the racy window
        if (after.inode() == before.inode() && after.size() == before.size()
                && after.modified().equals(before.modified()) && after.changed().equals(before.changed())
                && after.changed().toInstant().isBefore(Instant.now().minus(RACY))) {
            synchronized (etags) {
                etags.put(after.inode(), new Hashed(after.size(), after.modified(), after.changed(), etag));
            }
        }
        return etag;
    }

    /** The hashes under way, by inode, with the version each hashes; guarded by {@link #etags}. */
    private final java.util.Map<Long, Hashing> hashing = new java.util.HashMap<>();

    /** A hash of a file as it was ({@code of}), under way; its result for whoever asks meanwhile. */
    private record Hashing(Metadata of, java.util.concurrent.CompletableFuture<String> etag) {
        String await() throws IOException {
            try {
                return etag.get();
            } catch (java.util.concurrent.ExecutionException e) {
                throw e.getCause() instanceof IOException io ? io : new IOException(e.getCause());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new java.io.InterruptedIOException("waiting for the hash of another request");
            }
        }
    }

    /** Lock owners' open file descriptions open now (tests: they go when their owner holds nothing). */
    int lockDescriptionsOpen() {
        return locks.descriptionsOpen();
    }

    /** Files watched for closes while lock requests wait on them (tests: the watch goes with the wait). */
    int lockWatchesForWaiters() {
        return locks.watchedForWaiters();
    }

    /**
     * Before anything that may take space (a file opened to write, a name made): where the store's
     * file system is short of room, what was removed gives its space back first, so a program that
     * deletes to make room on a full disk and then writes finds the room (see
     * {@link LateCloses#flushWhenShort}). One read of a counter when nothing waits.
     */
    private void spaceBackFirst() {
        lateCloses.flushWhenShort(rootRoom);
    }

    /** The file system of the held root, weighed by {@link #spaceBackFirst}. */
    private final LateCloses.Room rootRoom = () -> {
        try (At d = directoryAt(VfsPath.root())) {
            return new LateCloses.FileSystem(d.root.device(), Syscalls.fstatfs(d.dir));
        }
    };

    @Override
    public SpaceInfo space() throws IOException {
        lateCloses.flush(); // counted with what was removed given back: df right after rm sees the space
        // fstatfs of the held root: one system call, where Files.getFileStore reads the mount table
        try (At d = directoryAt(VfsPath.root())) {
            Syscalls.Statfs s = Syscalls.fstatfs(d.dir);
            return new SpaceInfo(s.unit(), s.blocks() * s.unit(), s.free() * s.unit(), s.available() * s.unit(),
                    s.nameLength(), s.files(), s.freeFiles());
        }
    }

    /**
     * Removes temporary files of atomic writes that a crash left behind (only names of the exact
     * temporary pattern); files younger than {@code minAge} may belong to a writer still at work and stay.
     */
    public int removeStaleTemporaries(Duration minAge) throws IOException {
        Instant cutoff = Instant.now().minus(minAge);
        try (At r = directoryAt(VfsPath.root())) {
            int fd = Syscalls.openat(r.dir, ".", O_RDONLY | O_DIRECTORY, 0, "/");
            try {
                return removeStaleTemporaries(fd, cutoff);
            } finally {
                Syscalls.close(fd);
            }
        }
    }

    /**
     * The temporaries of the directory open as {@code dir} and below, through descriptors as
     * {@link #removeTree} goes (no link is followed); a directory that cannot be read is skipped,
     * cleaning is best effort.
     */
    private static int removeStaleTemporaries(int dir, Instant cutoff) {
        List<String> directories = new ArrayList<>();
        List<String> temporaries = new ArrayList<>();
        try {
            Syscalls.readDirectoryFd(dir, null, (bytes, offset, length, type, inode) -> {
                if (type == DT_DIR || type == DT_UNKNOWN || bytes[offset] == '.') {
                    String name = new String(bytes, offset, length, StandardCharsets.UTF_8);
                    if (isTemporaryName(name)) {
                        temporaries.add(name);
                    } else if (type == DT_DIR || type == DT_UNKNOWN) {
                        directories.add(name);
                    }
                }
                return true;
            });
        } catch (IOException unreadable) {
            return 0;
        }
        int removed = 0;
        for (String name : temporaries) {
            try {
                Syscalls.Statx s = Syscalls.stat(dir, name, null);
                if (s.type() == S_IFREG && Instant.ofEpochSecond(s.modifiedSeconds(), s.modifiedNanos()).isBefore(cutoff)
                        && Syscalls.tryUnlinkat(dir, name, false) == 0) {
                    removed++;
                }
            } catch (IOException vanished) {
                // gone meanwhile: nothing to clean
            }
        }
        for (String name : directories) {
            int fd = Syscalls.tryOpenat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0);
            if (fd >= 0) {
                try {
                    removed += removeStaleTemporaries(fd, cutoff);
                } finally {
                    Syscalls.close(fd);
                }
            }
        }
        return removed;
    }

    /**
     * An open descriptor of a regular file in the store, read and written with pread/pwrite. It
     * answers fstat after a rename or unlink. No operation may run concurrently with close (the
     * number could be reused by the next open): FUSE sends RELEASE only after the last request on
     * the handle has finished, and the other users are single-threaded.
     */
    private static final class LocalFileHandle implements FileHandle {
        private final int fd;
        private final AtomicBoolean closed = new AtomicBoolean();
        /** What the type check at open found; null for a file this open created. */
        private final Metadata opened;
        /** Known from the type check at open; a file this open created learns it at its first fstat. */
        private volatile long inode;
        /** O_RDONLY, O_WRONLY or O_RDWR (and O_APPEND): a lock owner's description is opened with the same access. */
        private final int access;
        private final OfdLocks registry;
        private final StoreDevices devices;
        /** Made at the first lock request through this handle: most handles never lock. */
        private volatile OfdLocks.HandleLocks locks;
        /**
         * The file opened again without O_APPEND, for {@link #writeInPlace} on a handle that appends:
         * Linux's pwrite on an O_APPEND descriptor appends whatever the offset says. Opened at the
         * first such write (an mmap written back through an appending handle: rare). Guarded by this.
         */
        private int inPlace = -1;

        @Override
        public int passthroughDescriptor() throws IOException {
            // the kernel registers the file only for its path: each open it passes through gets a file
            // of its own, opened from that path with that open's flags (backing_file_open), so a dup
            // does (0.5 us), where a read-write reopen through /proc/self/fd cost 5 us of every open
            return Syscalls.dup(fd);
        }

        LocalFileHandle(int fd, Metadata opened, int access, OfdLocks registry, StoreDevices devices) {
            this.fd = fd;
            this.devices = devices;
            this.opened = opened;
            this.inode = opened == null ? UNKNOWN_INODE : opened.inode();
            this.access = access;
            this.registry = registry;
        }

        @Override
        public FileHandle reopen(Set<OpenFlag> flags) throws IOException {
            return reopened(fd(), flags, null, registry, devices);
        }

        @Override
        public FileLocks locks() throws IOException {
            OfdLocks.HandleLocks l = locks;
            if (l == null) {
                synchronized (this) {
                    l = locks;
                    if (l == null) {
                        l = registry.forHandle(fd(), access);
                        locks = l;
                    }
                }
            }
            return l;
        }

        @Override
        public Metadata opened() {
            return opened;
        }

        private int fd() throws IOException {
            if (closed.get()) {
                throw new ClosedChannelException();
            }
            return fd;
        }

        @Override
        public long inode() throws IOException {
            long known = inode;
            if (known == UNKNOWN_INODE) {
                known = metadata().inode();
                inode = known;
            }
            return known;
        }

        @Override
        public Metadata metadata() throws IOException {
            Metadata m = stat(fd(), null, null, devices);
            if (inode == UNKNOWN_INODE) {
                // a descriptor's file never changes: a create's reply (which asks this) spares its first write an fstat
                inode = m.inode();
            }
            return m;
        }

        @Override
        public int read(ByteBuffer dst, long position) throws IOException {
            // one pread: on a regular file it comes back short only at the end, so a second call
            // would only find 0 (a system call per read of every small file, and of every file's
            // last block); libfuse's own passthrough and bindfs read once too
            return Syscalls.pread(fd(), dst, position);
        }

        @Override
        public int write(ByteBuffer src, long position) throws IOException {
            return writeThrough(fd(), src, position);
        }

        @Override
        public int writeInPlace(ByteBuffer src, long position) throws IOException {
            if ((access & O_APPEND) == 0) {
                return write(src, position);
            }
            int d;
            synchronized (this) {
                if (inPlace < 0) {
                    inPlace = Syscalls.reopen(fd(), access & ~O_APPEND, null);
                }
                d = inPlace;
            }
            return writeThrough(d, src, position);
        }

        private static int writeThrough(int descriptor, ByteBuffer src, long position) throws IOException {
            int total = 0;
            while (src.hasRemaining()) {
                total += Syscalls.pwrite(descriptor, src, position + total);
            }
            return total;
        }

        @Override
        public void truncate(long size) throws IOException {
            Syscalls.ftruncate(fd(), size);
        }

        @Override
        public void allocate(int mode, long offset, long length) throws IOException {
            Syscalls.fallocate(fd(), mode, offset, length);
        }

        @Override
        public void sync(boolean metadata) throws IOException {
            Syscalls.fsync(fd(), metadata);
        }

        /** Each write is in the store file as it returns: a close adds nothing a restart would miss. */
        @Override
        public void closedOnce() {
        }

        @Override
        public boolean hearsCloses() {
            return false;
        }

        @Override
        public long size() throws IOException {
            return metadata().size();
        }

        @Override
        public void setTimes(FileTime accessed, FileTime modified) throws IOException {
            Syscalls.futimens(fd(), timespec(accessed), timespec(modified));
        }

        @Override
        public void setExecutable(int mode) throws IOException {
            int wanted = withExecuteBits(metadata().mode(), mode);
            if (wanted >= 0) {
                Syscalls.fchmod(fd(), wanted);
            } else {
                // no bit to change: the ctime moves alone (see setExecutable by path)
                changeTimeMoved(Syscalls.tryFchown(fd(), -1, -1), "open file");
            }
        }

        // the descriptor's own inode, through its /proc/self/fd link, as the store's by-name calls do

        @Override
        public byte[] xattr(String name) throws IOException {
            return Syscalls.getxattrPath(fd(), name, name);
        }

        @Override
        public List<String> xattrNames() throws IOException {
            return Syscalls.listxattrPath(fd(), "open file");
        }

        @Override
        public void setXattr(String name, byte[] value, XattrMode mode) throws IOException {
            Syscalls.setxattrPath(fd(), name, value, xattrFlags(mode), name);
        }

        @Override
        public void removeXattr(String name) throws IOException {
            Syscalls.removexattrPath(fd(), name, name);
        }

        @Override
        public void close() {
            if (closed.compareAndSet(false, true)) {
                OfdLocks.HandleLocks l;
                synchronized (this) {
                    l = locks;
                }
                if (l != null) {
                    // every lock taken through this handle goes with it (flock's at RELEASE, POSIX's as a safety net after FLUSH)
                    l.close();
                }
                int d;
                synchronized (this) {
                    d = inPlace;
                    inPlace = -1;
                }
                if (d >= 0) {
                    Syscalls.close(d);
                }
                Syscalls.close(fd);
            }
        }
    }
}
