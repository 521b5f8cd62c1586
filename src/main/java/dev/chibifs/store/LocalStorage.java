package dev.chibifs.store;

import dev.chibifs.path.VfsPath;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.DirectoryStream;
import java.nio.file.FileStore;
import java.nio.file.FileSystemException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributeView;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.FileAttribute;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumSet;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.stream.Stream;

/**
 * The store as a plain directory tree ({@code $CHIBI_HOME/vfs}), byte-compatible with chibi:
 * {@code /shared/foo.txt} is {@code <root>/shared/foo.txt}, with no sidecar files.
 *
 * <p>Symbolic links found in the tree are never followed: every open and every change refuses a
 * path with a link on the way ({@code ELOOP}), and metadata is read without following.
 */
public final class LocalStorage implements Storage {

    /** Prefix of the temporary files behind atomic writes; such files are removed at startup when old. */
    public static final String TEMP_PREFIX = ".chibifs-tmp-";

    private static final LinkOption NOFOLLOW = LinkOption.NOFOLLOW_LINKS;
    private static final String UNIX_ATTRS = "unix:mode,ino,nlink,size,lastModifiedTime,lastAccessTime,ctime,creationTime";

    private final Path root;

    /** A store rooted at {@code root}, which is created if absent. */
    public LocalStorage(Path root) throws IOException {
        Files.createDirectories(root);
        this.root = root.toAbsolutePath().normalize().toRealPath();
    }

    /** The directory the store lives in. */
    public Path root() {
        return root;
    }

    private Path resolve(VfsPath path) {
        return path.isRoot() ? root : root.resolve(path.relative());
    }

    /**
     * Refuses a path whose parent chain holds a symbolic link planted in the store, so that no
     * open or change is ever carried out through one (O_NOFOLLOW guards only the last name).
     */
    private Path resolveSafely(VfsPath path) throws IOException {
        Path p = root;
        List<String> segments = path.segments();
        for (int i = 0; i < segments.size() - 1; i++) {
            p = p.resolve(segments.get(i));
            BasicFileAttributes a;
            try {
                a = Files.readAttributes(p, BasicFileAttributes.class, NOFOLLOW);
            } catch (NoSuchFileException e) {
                throw new NoSuchFileException(path.toString());
            }
            if (a.isSymbolicLink()) {
                throw new FileSystemException(path.toString(), null, "Too many levels of symbolic links");
            }
            if (!a.isDirectory()) {
                throw new NotDirectoryException(path.toString());
            }
        }
        return resolve(path);
    }

    @Override
    public byte[] read(VfsPath path) throws IOException {
        try (FileChannel ch = FileChannel.open(resolveSafely(path), StandardOpenOption.READ, NOFOLLOW)) {
            long size = ch.size();
            if (size > Integer.MAX_VALUE - 16) {
                throw new FileSystemException(path.toString(), null, "File too large");
            }
            ByteBuffer buf = ByteBuffer.allocate((int) size);
            while (buf.hasRemaining() && ch.read(buf) > 0) {
                // a file that grows while read is read up to its size at open
            }
            return buf.position() == buf.capacity() ? buf.array() : java.util.Arrays.copyOf(buf.array(), buf.position());
        } catch (IOException e) {
            throw describeDirectory(path, e);
        }
    }

    @Override
    public void write(VfsPath path, byte[] data) throws IOException {
        Path target = createParents(path);
        Path tmp = tempSibling(target);
        try {
            try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.WRITE,
                    StandardOpenOption.CREATE_NEW, NOFOLLOW)) {
                ByteBuffer buf = ByteBuffer.wrap(data);
                while (buf.hasRemaining()) {
                    ch.write(buf);
                }
                ch.force(true);
            }
            keepPermissions(target, tmp);
            Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE);
        } finally {
            Files.deleteIfExists(tmp);
        }
    }

    /**
     * Gives the replacement the mode of the file it replaces: chibi writes in place, so a script
     * rewritten through the store stays executable.
     */
    private static void keepPermissions(Path target, Path replacement) throws IOException {
        try {
            PosixFileAttributes a = Files.readAttributes(target, PosixFileAttributes.class, NOFOLLOW);
            if (a.isRegularFile()) {
                Files.setPosixFilePermissions(replacement, a.permissions());
            }
        } catch (NoSuchFileException absent) {
            // a new file keeps the default mode
        }
    }

    /**
     * Creates the missing parents of {@code path} through {@link #mkdir}, which refuses a link on
     * the way ({@code Files.createDirectories} would follow one), and resolves the path.
     */
    private Path createParents(VfsPath path) throws IOException {
        if (path.isRoot()) {
            throw new IsDirectoryException(path.toString());
        }
        mkdir(path.parent());
        return resolveSafely(path);
    }

    private static Path tempSibling(Path target) {
        return target.resolveSibling(TEMP_PREFIX + Long.toHexString(ThreadLocalRandom.current().nextLong()));
    }

    @Override
    public void append(VfsPath path, byte[] data) throws IOException {
        Path target = createParents(path);
        try (FileChannel ch = FileChannel.open(target, StandardOpenOption.WRITE, StandardOpenOption.CREATE,
                StandardOpenOption.APPEND, NOFOLLOW)) {
            ByteBuffer buf = ByteBuffer.wrap(data);
            while (buf.hasRemaining()) {
                ch.write(buf);
            }
        }
    }

    @Override
    public void delete(VfsPath path) throws IOException {
        Path p = resolveSafely(path);
        BasicFileAttributes a = Files.readAttributes(p, BasicFileAttributes.class, NOFOLLOW);
        if (!a.isDirectory()) {
            Files.delete(p);
            return;
        }
        // walkFileTree never follows links: a link inside the tree is removed, not its target
        Files.walkFileTree(p, new SimpleFileVisitor<>() {
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
    }

    @Override
    public List<Entry> list(VfsPath path) throws IOException {
        List<Entry> out = new ArrayList<>();
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(directory(path))) {
            for (Path child : ds) {
                try {
                    out.add(new Entry(child.getFileName().toString(),
                            kindOf(Files.readAttributes(child, BasicFileAttributes.class, NOFOLLOW))));
                } catch (NoSuchFileException vanished) {
                    // removed between readdir and stat: not listed
                }
            }
        }
        out.sort(Comparator.comparing(Entry::name));
        return out;
    }

    @Override
    public List<String> names(VfsPath path) throws IOException {
        List<String> out = new ArrayList<>();
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(directory(path))) {
            for (Path child : ds) {
                out.add(child.getFileName().toString());
            }
        }
        return out;
    }

    /** Resolves a directory to list; opendir(3) would follow a link as the last name, so refuse one. */
    private Path directory(VfsPath path) throws IOException {
        Path dir = resolveSafely(path);
        if (Files.isSymbolicLink(dir)) {
            throw new FileSystemException(path.toString(), null, "Too many levels of symbolic links");
        }
        return dir;
    }

    private static EntryKind kindOf(BasicFileAttributes a) {
        if (a.isSymbolicLink()) {
            return EntryKind.SYMLINK;
        }
        if (a.isDirectory()) {
            return EntryKind.DIRECTORY;
        }
        return a.isRegularFile() ? EntryKind.FILE : EntryKind.OTHER;
    }

    @Override
    public boolean exists(VfsPath path) throws IOException {
        try {
            return Files.exists(resolveSafely(path), NOFOLLOW);
        } catch (FileSystemException unreachable) {
            // missing, below a file, or below a link that is not followed: nothing there for us
            return false;
        }
    }

    @Override
    public void mkdir(VfsPath path) throws IOException {
        Path p = root;
        for (String s : path.segments()) {
            p = p.resolve(s);
            try {
                Files.createDirectory(p);
            } catch (java.nio.file.FileAlreadyExistsException e) {
                BasicFileAttributes a = Files.readAttributes(p, BasicFileAttributes.class, NOFOLLOW);
                if (!a.isDirectory()) {
                    throw a.isSymbolicLink()
                            ? new FileSystemException(path.toString(), null, "Too many levels of symbolic links")
                            : new NotDirectoryException(path.toString());
                }
            }
        }
    }

    @Override
    public void copy(VfsPath src, VfsPath dst) throws IOException {
        Path from = resolveSafely(src);
        if (Files.readAttributes(from, BasicFileAttributes.class, NOFOLLOW).isDirectory()) {
            throw new IsDirectoryException(src.toString());
        }
        Path to = createParents(dst);
        Path tmp = tempSibling(to);
        try {
            Files.copy(from, tmp, NOFOLLOW);
            Files.move(tmp, to, StandardCopyOption.ATOMIC_MOVE);
        } finally {
            Files.deleteIfExists(tmp);
        }
    }

    @Override
    public void rename(VfsPath src, VfsPath dst) throws IOException {
        Path from = resolveSafely(src);
        Path to = resolveSafely(dst);
        try {
            Files.move(from, to, StandardCopyOption.ATOMIC_MOVE);
        } catch (FileSystemException e) {
            throw describeRenameFailure(src, dst, from, to, e);
        }
    }

    /**
     * The JDK reports rename(2)'s EISDIR, ENOTDIR and ENOTEMPTY as a plain FileSystemException
     * whose text is strerror's (locale dependent); give them the types MemoryStorage throws, read
     * from the state of the two names once the rename has failed.
     */
    private static IOException describeRenameFailure(VfsPath src, VfsPath dst, Path from, Path to,
                                                     FileSystemException e) {
        if (e.getClass() != FileSystemException.class) {
            return e;
        }
        try {
            boolean fromDir = Files.isDirectory(from, NOFOLLOW);
            BasicFileAttributes target = Files.readAttributes(to, BasicFileAttributes.class, NOFOLLOW);
            if (target.isDirectory() && !fromDir) {
                return new IsDirectoryException(dst.toString());
            }
            if (!target.isDirectory() && fromDir) {
                return new NotDirectoryException(dst.toString());
            }
            if (target.isDirectory()) {
                try (DirectoryStream<Path> ds = Files.newDirectoryStream(to)) {
                    if (ds.iterator().hasNext()) {
                        return new DirectoryNotEmptyException(dst.toString());
                    }
                }
            }
        } catch (IOException unknown) {
            // the state changed under us: report the original failure
        }
        return e;
    }

    @Override
    public Metadata metadata(VfsPath path) throws IOException {
        Map<String, Object> a = Files.readAttributes(resolveSafely(path), UNIX_ATTRS, NOFOLLOW);
        int mode = (Integer) a.get("mode");
        return new Metadata(kindOfMode(mode), (Long) a.get("size"),
                (FileTime) a.get("creationTime"), (FileTime) a.get("lastModifiedTime"),
                (FileTime) a.get("lastAccessTime"), (FileTime) a.get("ctime"),
                ((Number) a.get("nlink")).longValue(), mode & 07777, (Long) a.get("ino"));
    }

    private static EntryKind kindOfMode(int mode) {
        switch (mode & 0170000) {
            case 0100000:
                return EntryKind.FILE;
            case 0040000:
                return EntryKind.DIRECTORY;
            case 0120000:
                return EntryKind.SYMLINK;
            default:
                return EntryKind.OTHER;
        }
    }

    @Override
    public FileHandle open(VfsPath path, Set<OpenFlag> flags, int createMode) throws IOException {
        Path p = resolveSafely(path);
        // open(2) O_RDONLY succeeds on a directory and the JDK cannot fstat the channel afterwards
        if (Files.isDirectory(p, NOFOLLOW)) {
            throw new IsDirectoryException(path.toString());
        }
        Set<OpenOption> options = new HashSet<>();
        options.add(NOFOLLOW);
        for (OpenFlag f : flags) {
            switch (f) {
                case READ -> options.add(StandardOpenOption.READ);
                case WRITE -> options.add(StandardOpenOption.WRITE);
                case APPEND -> options.add(StandardOpenOption.APPEND);
                case CREATE -> options.add(StandardOpenOption.CREATE);
                case CREATE_NEW -> options.add(StandardOpenOption.CREATE_NEW);
                case TRUNCATE -> options.add(StandardOpenOption.TRUNCATE_EXISTING);
                default -> throw new IllegalArgumentException(f.toString());
            }
        }
        if (options.contains(StandardOpenOption.APPEND)) {
            // the JDK refuses READ with APPEND; O_APPEND|O_RDWR is legal POSIX, so read through a second channel
            options.remove(StandardOpenOption.READ);
            options.add(StandardOpenOption.WRITE);
        }
        try {
            FileChannel ch = FileChannel.open(p, options, permissions(createMode));
            FileChannel reader = null;
            if (flags.contains(OpenFlag.APPEND) && flags.contains(OpenFlag.READ)) {
                reader = FileChannel.open(p, StandardOpenOption.READ, NOFOLLOW);
            }
            return new LocalFileHandle(ch, reader);
        } catch (IOException e) {
            throw describeDirectory(path, e);
        }
    }

    /** The JDK reports open(2)'s EISDIR as a generic error; say what it is. */
    private IOException describeDirectory(VfsPath path, IOException e) {
        try {
            if (!(e instanceof NoSuchFileException) && Files.isDirectory(resolveSafely(path), NOFOLLOW)) {
                return new IsDirectoryException(path.toString());
            }
        } catch (IOException unreachable) {
            // not a directory we may look at: keep the original error
        }
        return e;
    }

    private static FileAttribute<Set<PosixFilePermission>> permissions(int createMode) {
        int mode = 0644 | ((createMode & 0100) != 0 ? 0111 : 0);
        return PosixFilePermissions.asFileAttribute(toPermissions(mode));
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
        try (FileChannel ch = FileChannel.open(resolveSafely(path), StandardOpenOption.WRITE, NOFOLLOW)) {
            truncateChannel(ch, size);
        } catch (IOException e) {
            throw describeDirectory(path, e);
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
        Files.createDirectory(resolveSafely(path));
    }

    @Override
    public void removeFile(VfsPath path) throws IOException {
        Path p = resolveSafely(path);
        if (Files.readAttributes(p, BasicFileAttributes.class, NOFOLLOW).isDirectory()) {
            throw new IsDirectoryException(path.toString());
        }
        Files.delete(p);
    }

    @Override
    public void removeDirectory(VfsPath path) throws IOException {
        Path p = resolveSafely(path);
        if (!Files.readAttributes(p, BasicFileAttributes.class, NOFOLLOW).isDirectory()) {
            throw new NotDirectoryException(path.toString());
        }
        Files.delete(p);
    }

    @Override
    public void setTimes(VfsPath path, FileTime accessed, FileTime modified) throws IOException {
        Files.getFileAttributeView(resolveSafely(path), BasicFileAttributeView.class, NOFOLLOW)
                .setTimes(modified, accessed, null);
    }

    @Override
    public void setExecutable(VfsPath path, int mode) throws IOException {
        Path p = resolveSafely(path);
        PosixFileAttributeView view = Files.getFileAttributeView(p, PosixFileAttributeView.class, NOFOLLOW);
        Set<PosixFilePermission> perms = view.readAttributes().permissions();
        perms.removeAll(EnumSet.of(PosixFilePermission.OWNER_EXECUTE, PosixFilePermission.GROUP_EXECUTE,
                PosixFilePermission.OTHERS_EXECUTE));
        perms.addAll(toPermissions(mode & 0111));
        view.setPermissions(perms);
    }

    @Override
    public void link(VfsPath existing, VfsPath newName) throws IOException {
        Path from = resolveSafely(existing);
        if (Files.readAttributes(from, BasicFileAttributes.class, NOFOLLOW).isDirectory()) {
            throw new FileSystemException(existing.toString(), null, "Operation not permitted");
        }
        Files.createLink(resolveSafely(newName), from);
    }

    @Override
    public String readLink(VfsPath path) throws IOException {
        return Files.readSymbolicLink(resolveSafely(path)).toString();
    }

    @Override
    public SpaceInfo space() throws IOException {
        FileStore store = Files.getFileStore(root);
        return new SpaceInfo(store.getBlockSize(), store.getTotalSpace(), store.getUnallocatedSpace(),
                store.getUsableSpace(), 255);
    }

    /**
     * Removes temporary files of atomic writes that a crash left behind; files younger than
     * {@code minAge} may belong to a writer still at work and stay.
     */
    public int removeStaleTemporaries(Duration minAge) throws IOException {
        Instant cutoff = Instant.now().minus(minAge);
        int[] removed = {0};
        try (Stream<Path> walk = Files.walk(root)) {
            walk.filter(p -> p.getFileName() != null && p.getFileName().toString().startsWith(TEMP_PREFIX))
                .forEach(p -> {
                    try {
                        BasicFileAttributes a = Files.readAttributes(p, BasicFileAttributes.class, NOFOLLOW);
                        if (a.isRegularFile() && a.lastModifiedTime().toInstant().isBefore(cutoff)) {
                            Files.deleteIfExists(p);
                            removed[0]++;
                        }
                    } catch (IOException ignored) {
                        // vanished or unreadable: nothing to clean
                    }
                });
        }
        return removed[0];
    }

    /** A FileChannel pair: APPEND handles that also read need a second, read-only channel. */
    private static final class LocalFileHandle implements FileHandle {
        private final FileChannel channel;
        private final FileChannel reader;

        LocalFileHandle(FileChannel channel, FileChannel reader) {
            this.channel = channel;
            this.reader = reader;
        }

        @Override
        public int read(ByteBuffer dst, long position) throws IOException {
            FileChannel ch = reader != null ? reader : channel;
            int total = 0;
            while (dst.hasRemaining()) {
                int n = ch.read(dst, position + total);
                if (n <= 0) {
                    break;
                }
                total += n;
            }
            return total;
        }

        @Override
        public int write(ByteBuffer src, long position) throws IOException {
            int total = 0;
            while (src.hasRemaining()) {
                // on an O_APPEND descriptor Linux pwrite appends whatever the position says
                total += channel.write(src, position + total);
            }
            return total;
        }

        @Override
        public void truncate(long size) throws IOException {
            truncateChannel(channel, size);
        }

        @Override
        public void sync(boolean metadata) throws IOException {
            channel.force(metadata);
        }

        @Override
        public long size() throws IOException {
            return channel.size();
        }

        @Override
        public void close() throws IOException {
            try {
                channel.close();
            } finally {
                if (reader != null) {
                    reader.close();
                }
            }
        }
    }
}
