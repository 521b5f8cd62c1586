package dev.chibifs.store;

import dev.chibifs.path.VfsPath;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;
import java.nio.file.attribute.FileTime;
import java.time.Clock;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A store held in memory, for scratch space and for testing filesystem semantics without a disk.
 * It passes the same behaviour suite as {@link LocalStorage}.
 *
 * <p>Locking: one lock (this object) guards the tree and every file's bytes. Simple, and the
 * only way to make rename and unlink atomic against concurrent opens without lock ordering.
 */
public final class MemoryStorage implements Storage {

    private static final long BLOCK = 4096;

    private final Clock clock;
    private final AtomicLong inodes = new AtomicLong(1);
    private final Dir root;

    public MemoryStorage() {
        this(Clock.systemUTC());
    }

    /** A store whose timestamps come from {@code clock}. */
    public MemoryStorage(Clock clock) {
        this.clock = clock;
        this.root = new Dir(this);
    }

    private FileTime now() {
        return FileTime.from(clock.instant());
    }

    private abstract static class Node {
        final long inode;
        FileTime created;
        FileTime modified;
        FileTime accessed;
        FileTime changed;
        int mode;
        long links = 1;

        Node(MemoryStorage s, int mode) {
            this.inode = s.inodes.getAndIncrement();
            this.created = this.modified = this.accessed = this.changed = s.now();
            this.mode = mode;
        }

        /** utimens: a null time is left alone. */
        void setTimes(FileTime accessed, FileTime modified, FileTime now) {
            if (accessed != null) {
                this.accessed = accessed;
            }
            if (modified != null) {
                this.modified = modified;
            }
            this.changed = now;
        }

        /** chmod of the execute bits only. */
        void setExecutable(int mode, FileTime now) {
            int wanted = (this.mode & ~0111) | (mode & 0111);
            if (wanted != this.mode) {
                this.mode = wanted;
                this.changed = now;
            }
        }
    }

    private static final class Dir extends Node {
        final Map<String, Node> children = new TreeMap<>();

        Dir(MemoryStorage s) {
            super(s, 0755);
        }
    }

    private static final class File extends Node {
        byte[] data = new byte[0];
        int length;

        File(MemoryStorage s, int mode) {
            super(s, mode);
        }

        void ensureCapacity(long size) throws IOException {
            if (size > Integer.MAX_VALUE - 16) {
                throw new FileSystemException(null, null, "File too large");
            }
            if (size > data.length) {
                data = Arrays.copyOf(data, (int) Math.max(size, Math.min((long) data.length * 2, Integer.MAX_VALUE - 16)));
            }
        }

        void setLength(long size) throws IOException {
            ensureCapacity(size);
            if (size < length) {
                Arrays.fill(data, (int) size, length, (byte) 0);
            }
            length = (int) size;
        }
    }

    // ---- lookup helpers; callers hold the lock ----

    private Node find(VfsPath path) throws IOException {
        Node n = root;
        for (String s : path.segments()) {
            if (!(n instanceof Dir)) {
                throw new NotDirectoryException(path.toString());
            }
            n = ((Dir) n).children.get(s);
            if (n == null) {
                throw new NoSuchFileException(path.toString());
            }
        }
        return n;
    }

    private Dir findDir(VfsPath path) throws IOException {
        Node n = find(path);
        if (!(n instanceof Dir)) {
            throw new NotDirectoryException(path.toString());
        }
        return (Dir) n;
    }

    private File findFile(VfsPath path) throws IOException {
        Node n = find(path);
        if (!(n instanceof File)) {
            throw new IsDirectoryException(path.toString());
        }
        return (File) n;
    }

    private Dir parentOf(VfsPath path, boolean create) throws IOException {
        if (path.isRoot()) {
            throw new FileSystemException(path.toString(), null, "Device or resource busy");
        }
        if (create) {
            mkdirLocked(path.parent());
        }
        try {
            return findDir(path.parent());
        } catch (NoSuchFileException e) {
            throw new NoSuchFileException(path.toString());
        }
    }

    private void touchDir(Dir d) {
        d.modified = d.changed = now();
    }

    // ---- the seeds' operations ----

    @Override
    public synchronized byte[] read(VfsPath path) throws IOException {
        File f = findFile(path);
        return Arrays.copyOf(f.data, f.length);
    }

    @Override
    public synchronized void write(VfsPath path, byte[] data) throws IOException {
        Dir parent = parentOf(path, true);
        Node existing = parent.children.get(path.fileName());
        if (existing instanceof Dir) {
            throw new IsDirectoryException(path.toString());
        }
        File f = new File(this, existing == null ? 0644 : existing.mode);
        f.data = data.clone();
        f.length = data.length;
        parent.children.put(path.fileName(), f);
        if (existing != null) {
            existing.links--;
        }
        touchDir(parent);
    }

    @Override
    public synchronized void append(VfsPath path, byte[] data) throws IOException {
        Dir parent = parentOf(path, true);
        Node n = parent.children.get(path.fileName());
        if (n == null) {
            n = new File(this, 0644);
            parent.children.put(path.fileName(), n);
            touchDir(parent);
        } else if (!(n instanceof File)) {
            throw new IsDirectoryException(path.toString());
        }
        File f = (File) n;
        long end = f.length;
        f.setLength(end + data.length);
        System.arraycopy(data, 0, f.data, (int) end, data.length);
        f.modified = f.changed = now();
    }

    @Override
    public synchronized void delete(VfsPath path) throws IOException {
        Dir parent = parentOf(path, false);
        Node n = parent.children.remove(path.fileName());
        if (n == null) {
            throw new NoSuchFileException(path.toString());
        }
        n.links--;
        touchDir(parent);
    }

    @Override
    public synchronized List<Entry> list(VfsPath path) throws IOException {
        List<Entry> out = new ArrayList<>();
        for (Map.Entry<String, Node> e : findDir(path).children.entrySet()) {
            out.add(new Entry(e.getKey(), e.getValue() instanceof Dir ? EntryKind.DIRECTORY : EntryKind.FILE));
        }
        return out;
    }

    @Override
    public synchronized List<Entry> entries(VfsPath path) throws IOException {
        return list(path);
    }

    @Override
    public void forEachEntry(VfsPath path, EntrySink sink) throws IOException {
        // a snapshot, handed on outside the lock: the sink is the caller's code
        for (Entry e : entries(path)) {
            byte[] name = e.name().getBytes(StandardCharsets.UTF_8);
            if (!sink.accept(name, 0, name.length, e.kind())) {
                return;
            }
        }
    }

    @Override
    public synchronized boolean exists(VfsPath path) {
        try {
            find(path);
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    @Override
    public synchronized void mkdir(VfsPath path) throws IOException {
        mkdirLocked(path);
    }

    private void mkdirLocked(VfsPath path) throws IOException {
        Dir d = root;
        for (String s : path.segments()) {
            Node n = d.children.get(s);
            if (n == null) {
                Dir created = new Dir(this);
                d.children.put(s, created);
                d.links++;
                touchDir(d);
                n = created;
            } else if (!(n instanceof Dir)) {
                throw new NotDirectoryException(path.toString());
            }
            d = (Dir) n;
        }
    }

    @Override
    public synchronized void copy(VfsPath src, VfsPath dst) throws IOException {
        File from = findFile(src);
        write(dst, Arrays.copyOf(from.data, from.length));
        // like std::fs::copy in the seeds and LocalStorage: the copy takes the source's mode
        find(dst).mode = from.mode;
    }

    @Override
    public synchronized void rename(VfsPath src, VfsPath dst) throws IOException {
        Dir from = parentOf(src, false);
        Node n = from.children.get(src.fileName());
        if (n == null) {
            throw new NoSuchFileException(src.toString());
        }
        Dir to = parentOf(dst, false);
        if (src.equals(dst)) {
            return;
        }
        if (n instanceof Dir && dst.startsWith(src)) {
            throw new FileSystemException(src.toString(), dst.toString(), "Invalid argument");
        }
        Node target = to.children.get(dst.fileName());
        if (target != null) {
            if (target instanceof Dir && !(n instanceof Dir)) {
                throw new IsDirectoryException(dst.toString());
            }
            if (!(target instanceof Dir) && n instanceof Dir) {
                throw new NotDirectoryException(dst.toString());
            }
            if (target instanceof Dir && !((Dir) target).children.isEmpty()) {
                throw new DirectoryNotEmptyException(dst.toString());
            }
            target.links--;
        }
        from.children.remove(src.fileName());
        to.children.put(dst.fileName(), n);
        n.changed = now();
        touchDir(from);
        touchDir(to);
    }

    @Override
    public synchronized Metadata metadata(VfsPath path) throws IOException {
        Node n = find(path);
        boolean dir = n instanceof Dir;
        long size = dir ? BLOCK : ((File) n).length;
        long links = dir ? 2 + ((Dir) n).children.values().stream().filter(c -> c instanceof Dir).count() : n.links;
        return new Metadata(dir ? EntryKind.DIRECTORY : EntryKind.FILE, size, n.created, n.modified,
                n.accessed, n.changed, links, n.mode, n.inode);
    }

    // ---- a mount's operations ----

    @Override
    public synchronized FileHandle open(VfsPath path, Set<OpenFlag> flags, int createMode) throws IOException {
        Dir parent = parentOf(path, false);
        Node n = parent.children.get(path.fileName());
        if (n != null && flags.contains(OpenFlag.CREATE_NEW)) {
            throw new FileAlreadyExistsException(path.toString());
        }
        if (n == null) {
            if (!flags.contains(OpenFlag.CREATE) && !flags.contains(OpenFlag.CREATE_NEW)) {
                throw new NoSuchFileException(path.toString());
            }
            n = new File(this, 0644 | ((createMode & 0100) != 0 ? 0111 : 0));
            parent.children.put(path.fileName(), n);
            touchDir(parent);
        }
        if (n instanceof Dir) {
            throw new IsDirectoryException(path.toString());
        }
        File f = (File) n;
        if (flags.contains(OpenFlag.TRUNCATE) && f.length > 0) {
            f.setLength(0);
            f.modified = f.changed = now();
        }
        return new MemoryHandle(f, flags.contains(OpenFlag.APPEND));
    }

    private final class MemoryHandle implements FileHandle {
        private final File file;
        private final boolean append;

        MemoryHandle(File file, boolean append) {
            this.file = file;
            this.append = append;
        }

        @Override
        public int read(ByteBuffer dst, long position) {
            synchronized (MemoryStorage.this) {
                if (position >= file.length) {
                    return 0;
                }
                int n = (int) Math.min(dst.remaining(), file.length - position);
                dst.put(file.data, (int) position, n);
                return n;
            }
        }

        @Override
        public int write(ByteBuffer src, long position) throws IOException {
            synchronized (MemoryStorage.this) {
                long at = append ? file.length : position;
                int n = src.remaining();
                if (at + n > file.length) {
                    file.setLength(at + n);
                }
                src.get(file.data, (int) at, n);
                file.modified = file.changed = now();
                return n;
            }
        }

        @Override
        public void truncate(long size) throws IOException {
            synchronized (MemoryStorage.this) {
                file.setLength(size);
                file.modified = file.changed = now();
            }
        }

        @Override
        public void allocate(int mode, long offset, long length) throws IOException {
            boolean keepSize = (mode & KEEP_SIZE) != 0;
            boolean zero = (mode & (PUNCH_HOLE | ZERO_RANGE)) != 0;
            // the checks of vfs_fallocate, in its order
            if (offset < 0 || length <= 0) {
                throw new FileSystemException(null, null, "Invalid argument");
            }
            if ((mode & ~(KEEP_SIZE | PUNCH_HOLE | ZERO_RANGE)) != 0
                    || (mode & PUNCH_HOLE) != 0 && (!keepSize || (mode & ZERO_RANGE) != 0)) {
                throw new FileSystemException(null, null, "Operation not supported");
            }
            synchronized (MemoryStorage.this) {
                long end = offset + length;
                if (zero) {
                    // memory has no blocks to reserve or free: a hole and zeros read the same
                    long to = Math.min(end, file.length);
                    if (offset < to) {
                        Arrays.fill(file.data, (int) offset, (int) to, (byte) 0);
                    }
                    file.modified = file.changed = now();
                }
                if (!keepSize && end > file.length) {
                    file.setLength(end);
                    file.modified = file.changed = now();
                }
            }
        }

        @Override
        public void sync(boolean metadata) {
            // memory is as stable as it gets
        }

        @Override
        public long size() {
            synchronized (MemoryStorage.this) {
                return file.length;
            }
        }

        @Override
        public void setTimes(FileTime accessed, FileTime modified) {
            synchronized (MemoryStorage.this) {
                file.setTimes(accessed, modified, now());
            }
        }

        @Override
        public void setExecutable(int mode) {
            synchronized (MemoryStorage.this) {
                file.setExecutable(mode, now());
            }
        }

        @Override
        public long inode() {
            return file.inode;
        }

        @Override
        public Metadata metadata() {
            synchronized (MemoryStorage.this) {
                return new Metadata(EntryKind.FILE, file.length, file.created, file.modified, file.accessed,
                        file.changed, file.links, file.mode, file.inode);
            }
        }

        @Override
        public void close() {
        }
    }

    @Override
    public synchronized void truncate(VfsPath path, long size) throws IOException {
        File f = findFile(path);
        f.setLength(size);
        f.modified = f.changed = now();
    }

    @Override
    public synchronized void createDirectory(VfsPath path) throws IOException {
        Dir parent = parentOf(path, false);
        if (parent.children.containsKey(path.fileName())) {
            throw new FileAlreadyExistsException(path.toString());
        }
        parent.children.put(path.fileName(), new Dir(this));
        touchDir(parent);
    }

    @Override
    public synchronized void removeFile(VfsPath path) throws IOException {
        Dir parent = parentOf(path, false);
        Node n = parent.children.get(path.fileName());
        if (n == null) {
            throw new NoSuchFileException(path.toString());
        }
        if (n instanceof Dir) {
            throw new IsDirectoryException(path.toString());
        }
        parent.children.remove(path.fileName());
        n.links--;
        n.changed = now();
        touchDir(parent);
    }

    @Override
    public synchronized void removeDirectory(VfsPath path) throws IOException {
        Dir parent = parentOf(path, false);
        Node n = parent.children.get(path.fileName());
        if (n == null) {
            throw new NoSuchFileException(path.toString());
        }
        if (!(n instanceof Dir)) {
            throw new NotDirectoryException(path.toString());
        }
        if (!((Dir) n).children.isEmpty()) {
            throw new DirectoryNotEmptyException(path.toString());
        }
        parent.children.remove(path.fileName());
        touchDir(parent);
    }

    @Override
    public synchronized void setTimes(VfsPath path, FileTime accessed, FileTime modified) throws IOException {
        find(path).setTimes(accessed, modified, now());
    }

    @Override
    public synchronized void setExecutable(VfsPath path, int mode) throws IOException {
        find(path).setExecutable(mode, now());
    }

    @Override
    public synchronized void link(VfsPath existing, VfsPath newName) throws IOException {
        Node n = find(existing);
        if (n instanceof Dir) {
            throw new FileSystemException(existing.toString(), null, "Operation not permitted");
        }
        Dir parent = parentOf(newName, false);
        if (parent.children.containsKey(newName.fileName())) {
            throw new FileAlreadyExistsException(newName.toString());
        }
        parent.children.put(newName.fileName(), n);
        n.links++;
        n.changed = now();
        touchDir(parent);
    }

    @Override
    public String readLink(VfsPath path) throws IOException {
        throw new FileSystemException(path.toString(), null, "Invalid argument");
    }

    @Override
    public SpaceInfo space() {
        Runtime rt = Runtime.getRuntime();
        return new SpaceInfo(BLOCK, rt.maxMemory(), rt.maxMemory() - rt.totalMemory() + rt.freeMemory(),
                rt.maxMemory() - rt.totalMemory() + rt.freeMemory(), 255, 0, 0);
    }
}
