package dev.chibifs.store;

import dev.chibifs.path.VfsPath;

import java.io.IOException;
import java.lang.ref.Cleaner;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.FileChannel;
import java.nio.file.AccessDeniedException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.DirectoryStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;
import java.nio.file.NotLinkException;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFilePermission;
import java.time.Duration;
import java.time.Instant;
import java.util.Arrays;
import java.util.Comparator;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.regex.Pattern;

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
    private static final LinkOption NOFOLLOW = LinkOption.NOFOLLOW_LINKS;
    private static final String PROC_FD = "/proc/self/fd/";
    /**
     * Directories held open at most (each one descriptor and one inotify watch); past it, they are
     * all let go and held afresh. A quarter of the descriptors the process may open, so a low
     * limit (ulimit -n 1024) leaves most of them for open files.
     */
    private static final int HELD_DIRECTORIES = heldDirectories();
    // java.nio encodes names with sun.jnu.encoding (the locale's); only UTF-8 keeps every name intact
    private static final boolean JNU_UTF8 = "UTF-8".equalsIgnoreCase(System.getProperty("sun.jnu.encoding"));

    private final Path root;
    private final StoreRoot storeRoot;
    private static final Cleaner CLEANER = Cleaner.create();
    private final HeldDirectories directories = new HeldDirectories(HELD_DIRECTORIES);
    /** The record and flock locks taken through this storage, on the store files themselves. */
    private final OfdLocks locks = new OfdLocks();

    /** A store rooted at {@code root}, which is created if absent. */
    public LocalStorage(Path root) throws IOException {
        Files.createDirectories(root);
        this.root = root.toAbsolutePath().normalize().toRealPath();
        this.storeRoot = new StoreRoot(this.root);
        // the inotify instance and held descriptors go with the storage, closed or not (instances are few: 128 per user)
        CLEANER.register(this, directories::close);
    }

    private static int heldDirectories() {
        long fds = java.lang.management.ManagementFactory.getOperatingSystemMXBean()
                instanceof com.sun.management.UnixOperatingSystemMXBean unix ? unix.getMaxFileDescriptorCount() : 1024;
        return (int) Math.max(16, Math.min(4096, fds / 4));
    }

    /** The directory the store lives in. */
    public Path root() {
        return root;
    }

    /** True for the names of the store's own temporary files: hidden from listings and never created by callers. */
    public static boolean isTemporaryName(String name) {
        return name.startsWith(TEMP_PREFIX) && TEMP_NAME.matcher(name).matches();
    }

    /**
     * An open directory of the store and one name in it ("." for the directory itself). The
     * {@code /proc/self/fd} path lets java.nio act on the name relative to the descriptor.
     */
    private static final class At implements AutoCloseable {
        final int dir;
        final String name;
        private final HeldDirectories.Lease lease;

        At(HeldDirectories.Lease lease, String name) {
            this.lease = lease;
            this.dir = lease.fd();
            this.name = name;
        }

        Path path() {
            return Path.of(PROC_FD + dir, name);
        }

        Path sibling(String other) {
            return Path.of(PROC_FD + dir, other);
        }

        @Override
        public void close() {
            lease.close();
        }
    }

    /** The directory holding {@code path}, open, with the last name of {@code path}. */
    private At at(VfsPath path) throws IOException {
        String name = path.isRoot() ? "." : path.fileName();
        checkEncodable(path, name);
        int rootFd = storeRoot.descriptor(path, directories.refresh());
        return new At(directories.open(rootFd, path.parentRelative(), path), name);
    }

    /** {@code path} itself, open as a directory. */
    private At directoryAt(VfsPath path) throws IOException {
        int rootFd = storeRoot.descriptor(path, directories.refresh());
        return new At(directories.open(rootFd, path.relative(), path), ".");
    }

    /**
     * Refuses a name the store cannot take faithfully. jnr-fuse and java.nio decode bytes that are
     * not UTF-8 to U+FFFD, so such a name may stand for other bytes: storing it would store a
     * different name (EILSEQ instead). Without a UTF-8 JVM locale, java.nio mangles non-ASCII.
     */
    private static void checkEncodable(VfsPath path, String name) throws FileSystemException {
        if (name.indexOf('\uFFFD') >= 0) {
            throw new FileSystemException(path.toString(), null,
                    "Invalid or incomplete multibyte or wide character: the name is not valid UTF-8");
        }
        if (!JNU_UTF8 && !name.chars().allMatch(c -> c < 0x80)) {
            throw new FileSystemException(path.toString(), null,
                    "Invalid or incomplete multibyte or wide character (run the JVM under a UTF-8 locale, LC_ALL=C.UTF-8)");
        }
    }

    /** Names of the store's temporary-file pattern are the store's own: a caller may not create one. */
    private static void checkCreatable(VfsPath path) throws FileSystemException {
        if (!path.isRoot() && isTemporaryName(path.fileName())) {
            throw new FileSystemException(path.toString(), null,
                    "Invalid argument: names like " + TEMP_PREFIX + "<16 hex digits> are reserved for the store's temporary files");
        }
    }

    /** A java.nio failure on a {@code /proc/self/fd} path, retold for the VFS path. */
    private static IOException vfsError(IOException e, VfsPath path) {
        String p = path.toString();
        if (e instanceof IsDirectoryException || !(e instanceof FileSystemException)) {
            return e;
        }
        if (e instanceof NoSuchFileException) {
            return new NoSuchFileException(p);
        }
        if (e instanceof FileAlreadyExistsException) {
            return new FileAlreadyExistsException(p);
        }
        if (e instanceof DirectoryNotEmptyException) {
            return new DirectoryNotEmptyException(p);
        }
        if (e instanceof NotDirectoryException) {
            return new NotDirectoryException(p);
        }
        if (e instanceof AccessDeniedException) {
            return new AccessDeniedException(p);
        }
        if (e instanceof NotLinkException) {
            return new NotLinkException(p);
        }
        return new FileSystemException(p, null, ((FileSystemException) e).getReason());
    }

    /**
     * Opens {@code a} as an O_PATH descriptor of a regular file, creating it when asked. Links,
     * directories, fifos, sockets and devices are refused before anything opens them for data.
     */
    private static int openRegular(At a, VfsPath path, boolean create, boolean exclusive, int createMode)
            throws IOException {
        for (int attempt = 0; ; attempt++) {
            if (!exclusive) {
                int fd = Libc.tryOpenat(a.dir, a.name, Libc.O_PATH | Libc.O_NOFOLLOW, 0);
                if (fd >= 0) {
                    regular(fd, path);
                    return fd;
                }
                if (-fd != Libc.ENOENT || !create) {
                    throw Libc.failure(-fd, path);
                }
            }
            checkCreatable(path);
            int fd = Libc.tryOpenat(a.dir, a.name, Libc.O_CREAT | Libc.O_EXCL | Libc.O_RDONLY | Libc.O_NOFOLLOW,
                    fileMode(createMode));
            if (fd >= 0) {
                return fd;
            }
            // EEXIST: someone created it since we looked; look again (it may be a fifo now)
            if (-fd != Libc.EEXIST || exclusive || attempt >= 3) {
                throw Libc.failure(-fd, path);
            }
        }
    }

    private static IOException notRegular(int type, VfsPath path) {
        if (type == Libc.S_IFDIR) {
            return new IsDirectoryException(path.toString());
        }
        if (type == Libc.S_IFLNK) {
            return Libc.failure(Libc.ELOOP, path);
        }
        return new FileSystemException(path.toString(), null,
                "Operation not permitted: not a regular file (fifos, sockets and devices are not served)");
    }

    /** A channel on the file behind an O_PATH descriptor (re-opened through /proc, so the same inode). */
    private static FileChannel reopen(int fd, VfsPath path, OpenOption... options) throws IOException {
        try {
            return FileChannel.open(Path.of(PROC_FD + fd), options);
        } catch (IOException e) {
            throw vfsError(e, path);
        }
    }

    private static int fileMode(int createMode) {
        return 0644 | ((createMode & 0100) != 0 ? 0111 : 0);
    }

    private static String tempName() {
        return TEMP_PREFIX + String.format("%016x", ThreadLocalRandom.current().nextLong());
    }

    @Override
    public byte[] read(VfsPath path) throws IOException {
        try (At a = at(path)) {
            int fd = openRegular(a, path, false, false, 0);
            try (FileChannel ch = reopen(fd, path, StandardOpenOption.READ)) {
                long size = ch.size();
                if (size > Integer.MAX_VALUE - 16) {
                    throw new FileSystemException(path.toString(), null, "File too large");
                }
                ByteBuffer buf = ByteBuffer.allocate((int) size);
                while (buf.hasRemaining() && ch.read(buf) > 0) {
                    // a file that grows while read is read up to its size at open
                }
                return buf.position() == buf.capacity() ? buf.array() : Arrays.copyOf(buf.array(), buf.position());
            } finally {
                Libc.close(fd);
            }
        }
    }

    @Override
    public void write(VfsPath path, byte[] data) throws IOException {
        createParents(path);
        checkCreatable(path);
        try (At a = at(path)) {
            replaceAtomically(a, path, keptMode(a, path, 0644), ch -> {
                ByteBuffer buf = ByteBuffer.wrap(data);
                while (buf.hasRemaining()) {
                    ch.write(buf);
                }
            });
        }
    }

    private interface Filler {
        void fill(FileChannel ch) throws IOException;
    }

    /** Writes a temporary sibling, syncs it, and renames it over the name: readers see old or new, never a mix. */
    private static void replaceAtomically(At a, VfsPath path, int mode, Filler filler) throws IOException {
        Path tmp = a.sibling(tempName());
        try {
            try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.WRITE, StandardOpenOption.CREATE_NEW, NOFOLLOW)) {
                filler.fill(ch);
                ch.force(true);
            }
            Files.setPosixFilePermissions(tmp, toPermissions(mode));
            Files.move(tmp, a.path(), StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            throw vfsError(e, path);
        } finally {
            Files.deleteIfExists(tmp);
        }
    }

    /**
     * The mode a replacement gets: that of the file it replaces (chibi writes in place, so a
     * script rewritten through the store stays executable), else {@code otherwise}.
     */
    private static int keptMode(At a, VfsPath path, int otherwise) throws IOException {
        try {
            Metadata m = Libc.stat(a.dir, a.name, path);
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
        mkdir(path.parent());
    }

    @Override
    public void append(VfsPath path, byte[] data) throws IOException {
        createParents(path);
        try (At a = at(path)) {
            int fd = openRegular(a, path, true, false, 0);
            try (FileChannel ch = reopen(fd, path, StandardOpenOption.WRITE, StandardOpenOption.APPEND)) {
                ByteBuffer buf = ByteBuffer.wrap(data);
                while (buf.hasRemaining()) {
                    ch.write(buf);
                }
            } finally {
                Libc.close(fd);
            }
        }
    }

    @Override
    public void delete(VfsPath path) throws IOException {
        try (At a = at(path)) {
            if (!Libc.stat(a.dir, a.name, path).isDirectory()) {
                Libc.unlinkat(a.dir, a.name, false, path);
                return;
            }
            // walkFileTree never follows links: a link inside the tree is removed, not its target
            Files.walkFileTree(a.path(), new SimpleFileVisitor<>() {
                @Override
                public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) throws IOException {
                    Files.deleteIfExists(file);
                    return FileVisitResult.CONTINUE;
                }

                @Override
                public FileVisitResult postVisitDirectory(Path dir, IOException exc) throws IOException {
                    if (exc != null && !(exc instanceof NoSuchFileException)) {
                        throw exc;
                    }
                    Files.deleteIfExists(dir);
                    return FileVisitResult.CONTINUE;
                }
            });
        } catch (IOException e) {
            throw vfsError(e, path);
        }
    }

    @Override
    public List<Entry> list(VfsPath path) throws IOException {
        List<Entry> out = entries(path);
        out.sort(Comparator.comparing(Entry::name));
        return out;
    }

    @Override
    public void forEachEntry(VfsPath path, EntrySink sink) throws IOException {
        try (At d = directoryAt(path)) {
            Libc.readDirectory(d.dir, d.name, path, (name, offset, length, type) -> {
                // the names are bytes until one needs a closer look: temporaries start with '.'
                if (name[offset] == '.' && isTemporaryName(new String(name, offset, length, StandardCharsets.UTF_8))) {
                    return true;
                }
                EntryKind kind = kindOf(type);
                if (kind == null) {
                    // the file system does not say (d_type DT_UNKNOWN): ask
                    try {
                        kind = Libc.stat(d.dir, new String(name, offset, length, StandardCharsets.UTF_8), path).kind();
                    } catch (NoSuchFileException vanished) {
                        return true; // removed between readdir and stat: not listed
                    }
                }
                return sink.accept(name, offset, length, kind);
            });
        }
    }

    /** The kind for a d_type; null for DT_UNKNOWN. */
    private static EntryKind kindOf(int dtype) {
        return switch (dtype) {
            case 0 -> null;
            case 4 -> EntryKind.DIRECTORY;
            case 8 -> EntryKind.FILE;
            case 10 -> EntryKind.SYMLINK;
            case 1 -> EntryKind.FIFO;
            case 12 -> EntryKind.SOCKET;
            default -> EntryKind.OTHER;
        };
    }

    @Override
    public boolean exists(VfsPath path) throws IOException {
        try (At a = at(path)) {
            Libc.stat(a.dir, a.name, path);
            return true;
        } catch (FileSystemException unreachable) {
            // missing, below a file, or below a link that is not followed: nothing there for us
            return false;
        }
    }

    @Override
    public void mkdir(VfsPath path) throws IOException {
        List<String> segments = path.segments();
        VfsPath p = VfsPath.root();
        for (String s : segments) {
            p = p.child(s);
            try (At a = at(p)) {
                try {
                    Files.createDirectory(a.path());
                } catch (FileAlreadyExistsException e) {
                    Metadata m = Libc.stat(a.dir, a.name, path);
                    if (!m.isDirectory()) {
                        throw m.kind() == EntryKind.SYMLINK ? Libc.failure(Libc.ELOOP, path)
                                : new NotDirectoryException(path.toString());
                    }
                } catch (IOException e) {
                    throw vfsError(e, path);
                }
            }
        }
    }

    @Override
    public void copy(VfsPath src, VfsPath dst) throws IOException {
        try (At from = at(src)) {
            int fd = openRegular(from, src, false, false, 0);
            try (FileChannel in = reopen(fd, src, StandardOpenOption.READ)) {
                int mode = Libc.stat(fd, null, src).mode() & 0777;
                createParents(dst);
                checkCreatable(dst);
                try (At to = at(dst)) {
                    replaceAtomically(to, dst, mode, out -> {
                        long size = in.size();
                        long done = 0;
                        while (done < size) {
                            long n = in.transferTo(done, size - done, out);
                            if (n <= 0) {
                                break;
                            }
                            done += n;
                        }
                    });
                }
            } finally {
                Libc.close(fd);
            }
        }
    }

    @Override
    public void rename(VfsPath src, VfsPath dst) throws IOException {
        checkCreatable(dst);
        try (At from = at(src); At to = at(dst)) {
            try {
                Files.move(from.path(), to.path(), StandardCopyOption.ATOMIC_MOVE);
            } catch (FileSystemException e) {
                throw describeRenameFailure(src, dst, from, to, e);
            }
        }
    }

    /**
     * The JDK reports rename(2)'s EISDIR, ENOTDIR and ENOTEMPTY as a plain FileSystemException
     * whose text is strerror's (locale dependent); give them the types MemoryStorage throws, read
     * from the state of the two names once the rename has failed.
     */
    private static IOException describeRenameFailure(VfsPath src, VfsPath dst, At from, At to, FileSystemException e) {
        if (e.getClass() != FileSystemException.class) {
            return vfsError(e, e instanceof NoSuchFileException ? src : dst);
        }
        try {
            boolean fromDir = Libc.stat(from.dir, from.name, src).isDirectory();
            Metadata target = Libc.stat(to.dir, to.name, dst);
            if (target.isDirectory() && !fromDir) {
                return new IsDirectoryException(dst.toString());
            }
            if (!target.isDirectory() && fromDir) {
                return new NotDirectoryException(dst.toString());
            }
            if (target.isDirectory()) {
                try (DirectoryStream<Path> ds = Files.newDirectoryStream(to.path())) {
                    if (ds.iterator().hasNext()) {
                        return new DirectoryNotEmptyException(dst.toString());
                    }
                }
            }
        } catch (IOException unknown) {
            // the state changed under us: report the original failure
        }
        return vfsError(e, src);
    }

    @Override
    public Metadata metadata(VfsPath path) throws IOException {
        try (At a = at(path)) {
            return Libc.stat(a.dir, a.name, path);
        }
    }

    @Override
    public FileHandle open(VfsPath path, Set<OpenFlag> flags, int createMode) throws IOException {
        boolean read = flags.contains(OpenFlag.READ);
        boolean write = flags.contains(OpenFlag.WRITE) || flags.contains(OpenFlag.APPEND);
        int access = read && write ? Libc.O_RDWR : write ? Libc.O_WRONLY : Libc.O_RDONLY;
        if (flags.contains(OpenFlag.APPEND)) {
            // Linux pwrite on an O_APPEND descriptor appends whatever the position says
            access |= Libc.O_APPEND;
        }
        boolean exclusive = flags.contains(OpenFlag.CREATE_NEW);
        boolean create = exclusive || flags.contains(OpenFlag.CREATE);
        // only a file that was there already is truncated, as the kernel does for O_CREAT|O_TRUNC: ext4
        // takes a truncate to 0 for a rewrite and writes the data out at close (auto_da_alloc), which
        // made every new file cost a writeback, and its removal a discard
        int existing = access | (write && flags.contains(OpenFlag.TRUNCATE) ? Libc.O_TRUNC : 0);
        if (create) {
            checkCreatable(path);
        }
        try (At a = at(path)) {
            for (int attempt = 0; ; attempt++) {
                // A create comes from the kernel's CREATE, sent when a lookup found nothing: the name
                // is nearly always free, so the exclusive create goes first, one openat for a new
                // file, and the name is opened as it is only when that says EEXIST.
                if (create) {
                    int fd = Libc.tryOpenat(a.dir, a.name, access | Libc.O_CREAT | Libc.O_EXCL | DATA_OPEN,
                            fileMode(createMode));
                    if (fd >= 0) {
                        return new LocalFileHandle(fd, null, access, locks);
                    }
                    if (-fd != Libc.EEXIST || exclusive) {
                        throw Libc.failure(-fd, path);
                    }
                }
                int fd = Libc.tryOpenat(a.dir, a.name, existing | DATA_OPEN, 0);
                if (fd >= 0) {
                    return new LocalFileHandle(fd, regular(fd, path), access, locks);
                }
                if (-fd == Libc.ENXIO) {
                    // O_NONBLOCK|O_WRONLY on a fifo without a reader, or a socket
                    throw notRegular(0, path);
                }
                // ENOENT after EEXIST: removed in between; create it after all
                if (-fd != Libc.ENOENT || !create || attempt >= 3) {
                    throw Libc.failure(-fd, path);
                }
            }
        }
    }

    /** A handle's inode before anybody asked (a file the open itself created). */
    private static final long UNKNOWN_INODE = -1;

    /**
     * Flags of every open for data. O_NONBLOCK: opening a fifo someone planted in the store must
     * not wait for a writer (regular files ignore the flag); O_NOCTTY: nor may a terminal become ours.
     * The type is checked right after, on the descriptor itself, so nothing but a regular file is served.
     */
    private static final int DATA_OPEN = Libc.O_NOFOLLOW | Libc.O_NONBLOCK | Libc.O_NOCTTY;

    /** The metadata of {@code fd} when it is a regular file; {@code fd} closed, and refused, otherwise. */
    private static Metadata regular(int fd, VfsPath path) throws IOException {
        Metadata m;
        try {
            m = Libc.stat(fd, null, path);
        } catch (IOException e) {
            Libc.close(fd);
            throw vfsError(e, path);
        }
        if (!m.isFile()) {
            Libc.close(fd);
            throw notRegular(switch (m.kind()) {
                case DIRECTORY -> Libc.S_IFDIR;
                case SYMLINK -> Libc.S_IFLNK;
                default -> 0;
            }, path);
        }
        return m;
    }

    private static Set<PosixFilePermission> toPermissions(int mode) {
        Set<PosixFilePermission> set = EnumSet.noneOf(PosixFilePermission.class);
        PosixFilePermission[] order = {
            PosixFilePermission.OTHERS_EXECUTE, PosixFilePermission.OTHERS_WRITE, PosixFilePermission.OTHERS_READ,
            PosixFilePermission.GROUP_EXECUTE, PosixFilePermission.GROUP_WRITE, PosixFilePermission.GROUP_READ,
            PosixFilePermission.OWNER_EXECUTE, PosixFilePermission.OWNER_WRITE, PosixFilePermission.OWNER_READ,
        };
        for (int i = 0; i < order.length; i++) {
            if ((mode & (1 << i)) != 0) {
                set.add(order[i]);
            }
        }
        return set;
    }

    @Override
    public void truncate(VfsPath path, long size) throws IOException {
        try (At a = at(path)) {
            int fd = openRegular(a, path, false, false, 0);
            try (FileChannel ch = reopen(fd, path, StandardOpenOption.WRITE)) {
                truncateChannel(ch, size);
            } finally {
                Libc.close(fd);
            }
        }
    }

    static void truncateChannel(FileChannel ch, long size) throws IOException {
        long current = ch.size();
        if (size < current) {
            ch.truncate(size);
        } else if (size > current) {
            // FileChannel.truncate never grows a file; a one-byte write at the end does, leaving a hole
            ch.write(ByteBuffer.wrap(new byte[1]), size - 1);
        }
    }

    @Override
    public void createDirectory(VfsPath path) throws IOException {
        checkCreatable(path);
        try (At a = at(path)) {
            Files.createDirectory(a.path());
        } catch (IOException e) {
            throw vfsError(e, path);
        }
    }

    @Override
    public void removeFile(VfsPath path) throws IOException {
        try (At a = at(path)) {
            Libc.unlinkat(a.dir, a.name, false, path);
        }
    }

    @Override
    public void removeDirectory(VfsPath path) throws IOException {
        try (At a = at(path)) {
            Libc.unlinkat(a.dir, a.name, true, path);
        }
    }

    @Override
    public void setTimes(VfsPath path, FileTime accessed, FileTime modified) throws IOException {
        try (At a = at(path)) {
            Libc.utimensat(a.dir, a.name, accessed, modified, path);
        }
    }

    @Override
    public void setExecutable(VfsPath path, int mode) throws IOException {
        try (At a = at(path)) {
            // most chmods change no execute bit (tar and cp -p chmod every file they write): one statx
            // by name tells, where a descriptor to change the mode through costs an open and a close more
            Metadata named = Libc.stat(a.dir, a.name, path);
            if ((named.isFile() || named.isDirectory()) && withExecuteBits(named.mode(), mode) < 0) {
                return;
            }
            // chmod through the O_PATH descriptor's /proc link: the inode checked is the inode changed
            int fd = Libc.openat(a.dir, a.name, Libc.O_PATH | Libc.O_NOFOLLOW, 0, path);
            try {
                Metadata m = Libc.stat(fd, null, path);
                if (!m.isFile() && !m.isDirectory()) {
                    throw notRegular(m.kind() == EntryKind.SYMLINK ? Libc.S_IFLNK : 0, path);
                }
                int wanted = withExecuteBits(m.mode(), mode);
                if (wanted >= 0) {
                    Files.setPosixFilePermissions(Path.of(PROC_FD + fd), toPermissions(wanted));
                }
            } catch (IOException e) {
                throw vfsError(e, path);
            } finally {
                Libc.close(fd);
            }
        }
    }

    /**
     * The mode to set for {@code mode}'s execute bits on a file whose mode is {@code current}, or -1
     * when that changes nothing: tar and cp -p chmod every file they write, and most change nothing
     * the store keeps.
     */
    private static int withExecuteBits(int current, int mode) {
        int wanted = (current & 0666) | (mode & 0111);
        return (current & 07777) == wanted ? -1 : wanted;
    }

    @Override
    public void link(VfsPath existing, VfsPath newName) throws IOException {
        checkCreatable(newName);
        try (At from = at(existing); At to = at(newName)) {
            if (Libc.stat(from.dir, from.name, existing).isDirectory()) {
                throw new FileSystemException(existing.toString(), null, "Operation not permitted");
            }
            try {
                // link(2) never follows the last name of the existing file
                Files.createLink(to.path(), from.path());
            } catch (IOException e) {
                throw vfsError(e, e instanceof FileAlreadyExistsException ? newName : existing);
            }
        }
    }

    @Override
    public String readLink(VfsPath path) throws IOException {
        try (At a = at(path)) {
            return Files.readSymbolicLink(a.path()).toString();
        } catch (IOException e) {
            throw vfsError(e, path);
        }
    }

    /**
     * symlinkat(2) relative to the held parent: the target text is stored as given and never
     * resolved or followed here (rules about targets are the router's).
     */
    @Override
    public void createSymlink(VfsPath link, String target) throws IOException {
        checkCreatable(link);
        checkTarget(link, target);
        try (At a = at(link)) {
            Libc.symlinkat(target, a.dir, a.name, link);
        }
    }

    /** A target symlink(2) can store: not empty (ENOENT), no NUL, at most PATH_MAX - 1 bytes (ENAMETOOLONG). */
    static void checkTarget(VfsPath link, String target) throws IOException {
        if (target.isEmpty()) {
            throw new NoSuchFileException(link.toString(), null, "a symbolic link needs a target");
        }
        if (target.indexOf('\0') >= 0 || target.indexOf('\uFFFD') >= 0) {
            throw new FileSystemException(link.toString(), null, "Invalid argument: the link target is not valid UTF-8 text");
        }
        if (target.getBytes(StandardCharsets.UTF_8).length >= 4096) {
            throw new FileSystemException(link.toString(), null, "File name too long: a link target has at most 4095 bytes");
        }
    }

    /** mknodat(2) of a fifo or a socket relative to the held parent; nothing else (devices: EPERM). */
    @Override
    public void createNode(VfsPath path, EntryKind kind, int mode) throws IOException {
        int type = switch (kind) {
            case FIFO -> Libc.S_IFIFO;
            case SOCKET -> Libc.S_IFSOCK;
            default -> throw new OperationNotPermittedException(path.toString(),
                    "the store makes only fifos and sockets this way, not " + kind.name().toLowerCase(java.util.Locale.ROOT));
        };
        checkCreatable(path);
        try (At a = at(path)) {
            // read and write bits as any new file gets them: only the execute bits mean anything to chibifs
            Libc.mknodat(a.dir, a.name, type | fileMode(mode), path);
        }
    }

    /** Lets go of the directories held open; the storage still works, walking every path. */
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
        return DirectoryChanges.start(listener, (inotify, directory, mask) -> {
            try (At d = directoryAt(directory)) {
                // the root's file system was checked above; another may be mounted anywhere below it
                return HeldDirectories.followable(d.dir) ? Libc.inotifyWatch(inotify, d.dir, ".", mask) : -DirectoryChanges.EXDEV;
            }
        });
    }

    @Override
    public void close() {
        directories.close();
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
        synchronized (etags) {
            Hashed h = etags.get(before.inode());
            if (h != null && h.size() == before.size() && h.modified().equals(before.modified())
                    && h.changed().equals(before.changed())) {
                return h.etag();
            }
        }
        String etag = ContentHash.of(read(path));
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

    /** Lock owners' open file descriptions open now (tests: they go when their owner holds nothing). */
    int lockDescriptionsOpen() {
        return locks.descriptionsOpen();
    }

    @Override
    public SpaceInfo space() throws IOException {
        // fstatfs of the held root: one system call, where Files.getFileStore reads the mount table
        try (At d = directoryAt(VfsPath.root())) {
            return Libc.space(d.dir);
        }
    }

    /**
     * Removes temporary files of atomic writes that a crash left behind (only names of the exact
     * temporary pattern); files younger than {@code minAge} may belong to a writer still at work and stay.
     */
    public int removeStaleTemporaries(Duration minAge) throws IOException {
        Instant cutoff = Instant.now().minus(minAge);
        int[] removed = {0};
        Files.walkFileTree(root, new SimpleFileVisitor<>() {
            @Override
            public FileVisitResult visitFile(Path p, BasicFileAttributes a) {
                if (isTemporaryName(p.getFileName().toString()) && a.isRegularFile()
                        && a.lastModifiedTime().toInstant().isBefore(cutoff)) {
                    try {
                        Files.deleteIfExists(p);
                        removed[0]++;
                    } catch (IOException ignored) {
                        // vanished or not ours to remove: nothing to clean
                    }
                }
                return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult visitFileFailed(Path p, IOException e) {
                // unreadable or too deep for a host path: skip it, cleaning is best effort
                return FileVisitResult.CONTINUE;
            }
        });
        return removed[0];
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
        /** Made at the first lock request through this handle: most handles never lock. */
        private volatile OfdLocks.HandleLocks locks;

        @Override
        public int passthroughDescriptor() throws IOException {
            // read and write, whatever this open allows: the kernel lets one backing file serve every
            // open of the inode, and checks each open's own mode before passing anything through
            return Libc.reopen(fd, Libc.O_RDWR);
        }

        LocalFileHandle(int fd, Metadata opened, int access, OfdLocks registry) {
            this.fd = fd;
            this.opened = opened;
            this.inode = opened == null ? UNKNOWN_INODE : opened.inode();
            this.access = access;
            this.registry = registry;
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
            Metadata m = Libc.stat(fd(), null, null);
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
            return Libc.pread(fd(), dst, position);
        }

        @Override
        public int write(ByteBuffer src, long position) throws IOException {
            int total = 0;
            while (src.hasRemaining()) {
                total += Libc.pwrite(fd(), src, position + total);
            }
            return total;
        }

        @Override
        public void truncate(long size) throws IOException {
            Libc.ftruncate(fd(), size);
        }

        @Override
        public void allocate(int mode, long offset, long length) throws IOException {
            Libc.fallocate(fd(), mode, offset, length);
        }

        @Override
        public void sync(boolean metadata) throws IOException {
            Libc.fsync(fd(), metadata);
        }

        @Override
        public long size() throws IOException {
            return metadata().size();
        }

        @Override
        public void setTimes(FileTime accessed, FileTime modified) throws IOException {
            Libc.futimens(fd(), accessed, modified);
        }

        @Override
        public void setExecutable(int mode) throws IOException {
            int wanted = withExecuteBits(metadata().mode(), mode);
            if (wanted >= 0) {
                Libc.fchmod(fd(), wanted);
            }
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
                Libc.close(fd);
            }
        }
    }
}
