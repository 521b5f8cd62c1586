package dev.chibifs.store;

import dev.chibifs.sys.ErrnoException;
import dev.chibifs.sys.IsDirectoryException;
import dev.chibifs.sys.Linux;
import com.kenai.jffi.MemoryIO;
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
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Deque;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A store held in memory: the {@code memory[:SIZE]} scratch store, and filesystem semantics
 * without a disk for tests. It passes the same behaviour suite as {@link LocalStorage}.
 *
 * <p>File content lives outside the Java heap, in native chunks of {@link #CHUNK} bytes
 * (a file smaller than one chunk has one chunk of its own size, grown by doubling), so a
 * 256 MiB store needs no 256 MiB heap, and a file removed gives its memory back at once (once
 * its last name and open handle are gone). A region never written is a hole and costs nothing.
 * The size limit counts every file's length, holes included, from its creation until its memory
 * is freed, extended attributes' names and values, and {@link #NAME_COST} for each name (the tree
 * itself is on the heap: a million empty files filled it); past it a write, or a new name, fails
 * with ENOSPC ("No space left on device") and changes nothing.
 *
 * <p>Locking: one lock (this object) guards the tree and every file's bytes. Simple, and the
 * only way to make rename and unlink atomic against concurrent opens without lock ordering.
 */
public final class MemoryStorage implements Storage {

    /** Bytes per native chunk: small enough that a sparse or growing file wastes little, large enough to copy in one go. */
    static final int CHUNK = 64 * 1024;
    private static final int CHUNK_SHIFT = 16;
    /** The smallest chunk a small file gets. */
    private static final int MIN_CHUNK = 64;
    /**
     * What each name is charged against the limit: about what a name and its node take on the heap
     * (as an ext4 inode is 256 bytes). statfs counts the store's inodes in these.
     */
    static final long NAME_COST = 256;
    private static final long[] NO_CHUNKS = {};
    private static final MemoryIO NATIVE = MemoryIO.getInstance();

    private final Clock clock;
    private final AtomicLong inodes = new AtomicLong(1);
    private final Dir root;
    private final long limit;
    // bytes charged against the limit: every file's length until its memory is freed, attributes, names; guarded by this
    private long used;

    /** A store without a size limit. */
    public MemoryStorage() {
        this(Clock.systemUTC());
    }

    /** A store whose timestamps come from {@code clock}. */
    public MemoryStorage(Clock clock) {
        this(clock, Long.MAX_VALUE);
    }

    /** A store that holds at most {@code limit} bytes of file content. */
    public MemoryStorage(long limit) {
        this(Clock.systemUTC(), limit);
    }

    private MemoryStorage(Clock clock, long limit) {
        if (CHUNK != 1 << CHUNK_SHIFT) {
            throw new AssertionError("CHUNK and CHUNK_SHIFT disagree");
        }
        this.clock = clock;
        this.limit = limit;
        this.root = new Dir(this);
    }

    /** The size limit in bytes ({@link Long#MAX_VALUE}: none). */
    public long limit() {
        return limit;
    }

    /** Bytes held now, as the limit counts them (content, attributes, {@link #NAME_COST} a name). */
    public synchronized long used() {
        return used;
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
        /** Extended attributes by name; null until the first is set. */
        Map<String, byte[]> xattrs;
        /** Their names' and values' bytes, charged against the limit as file content is (on the Java heap, so bounded too). */
        long xattrBytes;

        Node(MemoryStorage s, int mode) {
            this.inode = s.inodes.getAndIncrement();
            this.created = this.modified = this.accessed = this.changed = s.now();
            this.mode = mode;
        }

        /** utimens: a null time is left alone. */
        void setTimes(FileTime accessed, FileTime modified, FileTime now) {
            if (accessed != null) {
                this.accessed = Storage.timeOrNow(accessed, now);
            }
            if (modified != null) {
                this.modified = Storage.timeOrNow(modified, now);
            }
            this.changed = now;
        }

        /** chmod of the execute bits only; the ctime moves whatever changed, as a disk's chmod moves it. */
        void setExecutable(int mode, FileTime now) {
            this.mode = (this.mode & ~0111) | (mode & 0111);
            this.changed = now;
        }
    }

    private static final class Dir extends Node {
        final Map<String, Node> children = new TreeMap<>();

        Dir(MemoryStorage s) {
            super(s, 0755);
        }
    }

    /**
     * A file's content in native chunks; callers hold the store's lock. Chunk {@code i} holds
     * bytes from {@code i * CHUNK}; address 0 is a hole (zeros). Only a file's only chunk may be
     * smaller than {@link #CHUNK} ({@code firstCapacity}).
     */
    private static final class File extends Node {
        private final MemoryStorage store;
        long[] chunks = NO_CHUNKS;
        int firstCapacity;
        long length;
        /** Open handles: the memory is freed when the last name and the last handle are gone. */
        int handles;
        boolean freed;
        /** Its locks; made at the first lock request. */
        InProcessLocks locks;
        /** Made without a name ({@link #openUnnamed}) and not named yet: a link may give it its first name. */
        boolean linkable;

        File(MemoryStorage s, int mode) {
            super(s, mode);
            this.store = s;
        }

        /** Sets the length, charging the difference to the store (ENOSPC past its limit, nothing changed). */
        void setLength(long size) throws IOException {
            if (size < 0) {
                throw ErrnoException.of(Linux.EINVAL, null, null);
            }
            if (size > length) {
                store.charge(size - length);
            } else {
                store.used -= length - size;
                cut(size);
            }
            length = size;
        }

        /** Frees the chunks wholly past {@code size} and zeros the rest of the one it ends in, so growing again reads zeros. */
        private void cut(long size) {
            int keep = (int) ((size + CHUNK - 1) >>> CHUNK_SHIFT);
            for (int i = keep; i < chunks.length; i++) {
                if (chunks[i] != 0) {
                    NATIVE.freeMemory(chunks[i]);
                }
            }
            if (keep < chunks.length) {
                chunks = Arrays.copyOf(chunks, keep);
            }
            if (keep == 0) {
                // a small first chunk's capacity, left behind, was taken for that of the whole first
                // chunk a later write past it made: what lay past the small one read as zeros after a
                // truncate (a tester's 3,000 bytes kept 64)
                firstCapacity = 0;
            }
            int tail = (int) (size & (CHUNK - 1));
            // a file grown by truncate has no chunks for its tail: then there is nothing to zero
            if (keep > 0 && keep <= chunks.length && tail != 0 && chunks[keep - 1] != 0) {
                long cap = capacity(keep - 1);
                if (tail < cap) {
                    NATIVE.setMemory(chunks[keep - 1] + tail, cap - tail, (byte) 0);
                }
            }
        }

        private long capacity(int i) {
            return chunks.length == 1 && firstCapacity > 0 ? firstCapacity : CHUNK;
        }

        /** The address of chunk {@code i}, allocated (zeroed) so that it holds at least {@code upTo} bytes. */
        private long writable(int i, int upTo) {
            if (i >= chunks.length) {
                if (chunks.length == 1 && firstCapacity > 0) {
                    grow(0, CHUNK); // a second chunk: the first becomes a whole one
                }
                chunks = Arrays.copyOf(chunks, i + 1);
            }
            if (chunks.length == 1) {
                if (chunks[0] == 0) {
                    firstCapacity = Math.max(MIN_CHUNK, Integer.highestOneBit(Math.max(upTo, 1) - 1) << 1);
                    firstCapacity = Math.min(CHUNK, Math.max(firstCapacity, upTo));
                    chunks[0] = NATIVE.allocateMemory(firstCapacity, true);
                } else if (firstCapacity > 0 && upTo > firstCapacity) {
                    grow(0, Math.min(CHUNK, Math.max(upTo, firstCapacity * 2)));
                }
                return chunks[0];
            }
            if (chunks[i] == 0) {
                chunks[i] = NATIVE.allocateMemory(CHUNK, true);
            }
            return chunks[i];
        }

        private void grow(int i, int capacity) {
            long old = chunks[i];
            long bigger = NATIVE.allocateMemory(capacity, true);
            if (old != 0) {
                NATIVE.copyMemory(old, bigger, firstCapacity);
                NATIVE.freeMemory(old);
            }
            chunks[i] = bigger;
            firstCapacity = capacity == CHUNK ? 0 : capacity;
        }

        /** Copies {@code n} bytes of {@code src} (from its position, which moves) to {@code at}; the length must cover them. */
        void put(ByteBuffer src, long at, int n) {
            while (n > 0) {
                int i = (int) (at >>> CHUNK_SHIFT);
                int off = (int) (at & (CHUNK - 1));
                int len = Math.min(n, CHUNK - off);
                long address = writable(i, off + len) + off;
                if (src.isDirect()) {
                    NATIVE.copyMemory(NATIVE.getDirectBufferAddress(src) + src.position(), address, len);
                    src.position(src.position() + len);
                } else if (src.hasArray()) {
                    NATIVE.putByteArray(address, src.array(), src.arrayOffset() + src.position(), len);
                    src.position(src.position() + len);
                } else {
                    byte[] b = new byte[len];
                    src.get(b);
                    NATIVE.putByteArray(address, b, 0, len);
                }
                at += len;
                n -= len;
            }
        }

        /** Copies {@code n} bytes from {@code at} into {@code dst} (at its position, which moves); holes read as zeros. */
        void get(ByteBuffer dst, long at, int n) {
            while (n > 0) {
                int i = (int) (at >>> CHUNK_SHIFT);
                int off = (int) (at & (CHUNK - 1));
                int len = Math.min(n, CHUNK - off);
                long address = i < chunks.length ? chunks[i] : 0;
                // what a small chunk does not reach, like a hole, was never written: zeros
                int stored = address == 0 ? 0 : (int) Math.max(0, Math.min(len, capacity(i) - off));
                if (dst.isDirect()) {
                    long to = NATIVE.getDirectBufferAddress(dst) + dst.position();
                    if (stored > 0) {
                        NATIVE.copyMemory(address + off, to, stored);
                    }
                    if (stored < len) {
                        NATIVE.setMemory(to + stored, len - stored, (byte) 0);
                    }
                    dst.position(dst.position() + len);
                } else {
                    byte[] b = new byte[len];
                    if (stored > 0) {
                        NATIVE.getByteArray(address + off, b, 0, stored);
                    }
                    dst.put(b);
                }
                at += len;
                n -= len;
            }
        }

        /** The whole content. */
        byte[] bytes() throws IOException {
            if (length > Integer.MAX_VALUE - 16) {
                throw ErrnoException.of(Linux.EFBIG, null, null);
            }
            byte[] out = new byte[(int) length];
            get(ByteBuffer.wrap(out), 0, out.length);
            return out;
        }

        /** Replaces the content with {@code data}, charging the difference first. */
        void replace(byte[] data) throws IOException {
            setLength(0);
            setLength(data.length);
            put(ByteBuffer.wrap(data), 0, data.length);
        }

        /** Gives the memory back, once: after its last name and handle are gone. */
        void free() {
            if (!freed) {
                freed = true;
                store.used -= length + xattrBytes;
                cut(0);
                length = 0;
            }
        }
    }

    /** Puts a new name {@code name} of {@code n} in {@code parent}, charging it first (ENOSPC: nothing changed). */
    private void addName(Dir parent, String name, Node n) throws IOException {
        charge(NAME_COST);
        parent.children.put(name, n);
    }

    /** Charges {@code bytes} more against the limit; caller holds the lock. */
    private void charge(long bytes) throws IOException {
        if (bytes > limit - used) {
            throw ErrnoException.of(Linux.ENOSPC, null, null);
        }
        used += bytes;
    }

    /**
     * One name of {@code n} is gone (its link count, so its ctime, changes: what its other names
     * show): a file without names and handles, or a tree taken away, gives its memory back.
     */
    private void released(Node n) {
        used -= NAME_COST;
        n.links--;
        n.changed = now();
        if (n instanceof File) {
            File f = (File) n;
            if (f.links <= 0 && f.handles == 0) {
                f.free();
            }
        } else if (n instanceof Dir) {
            used -= n.xattrBytes; // one name, now gone: a handle still open cannot set more (see setXattrOf)
            n.xattrBytes = 0;
            // a directory removed with what is in it (delete): everything below goes too
            for (Node c : ((Dir) n).children.values()) {
                released(c);
            }
        }
    }

    /** A symbolic link: its target text, never followed. */
    private static final class Link extends Node {
        final String target;

        Link(MemoryStorage s, String target) {
            super(s, 0777);
            this.target = target;
        }
    }

    /** A fifo or a socket: a name with a kind, never opened for data. */
    private static final class Special extends Node {
        final EntryKind kind;

        Special(MemoryStorage s, EntryKind kind, int mode) {
            super(s, mode);
            this.kind = kind;
        }
    }

    private static EntryKind kindOf(Node n) {
        if (n instanceof Dir) {
            return EntryKind.DIRECTORY;
        }
        if (n instanceof Link) {
            return EntryKind.SYMLINK;
        }
        if (n instanceof Special) {
            return ((Special) n).kind;
        }
        return EntryKind.FILE;
    }

    /** Why {@code n} is not a file to read or write, in LocalStorage's terms (EISDIR, ELOOP, EPERM). */
    private static IOException notRegular(Node n, VfsPath path) {
        if (n instanceof Dir) {
            return new IsDirectoryException(path.toString());
        }
        if (n instanceof Link) {
            return tooManyLinks(path);
        }
        return new OperationNotPermittedException(path.toString(),
                "not a regular file (fifos, sockets and devices are not served)");
    }

    /** ELOOP: the store follows no link, on the way or at the end (LocalStorage says the same). */
    private static IOException tooManyLinks(VfsPath path) {
        return ErrnoException.of(Linux.ELOOP, path.toString(), null);
    }

    // ---- lookup helpers; callers hold the lock ----

    private Node find(VfsPath path) throws IOException {
        Node n = root;
        for (String s : path.segments()) {
            if (n instanceof Link) {
                throw tooManyLinks(path);
            }
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
        if (n instanceof Link) {
            throw tooManyLinks(path);
        }
        if (!(n instanceof Dir)) {
            throw new NotDirectoryException(path.toString());
        }
        return (Dir) n;
    }

    private File findFile(VfsPath path) throws IOException {
        Node n = find(path);
        if (!(n instanceof File)) {
            throw notRegular(n, path);
        }
        return (File) n;
    }

    private Dir parentOf(VfsPath path, boolean create) throws IOException {
        if (path.isRoot()) {
            throw ErrnoException.of(Linux.EBUSY, path.toString(), null);
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
        return findFile(path).bytes();
    }

    @Override
    public synchronized void write(VfsPath path, byte[] data) throws IOException {
        Dir parent = parentOf(path, true);
        Node existing = parent.children.get(path.fileName());
        if (existing instanceof Dir) {
            throw new IsDirectoryException(path.toString());
        }
        File f = new File(this, existing == null ? 0644 : existing.mode);
        try {
            f.replace(data);
        } catch (IOException e) {
            f.free(); // past the limit: the old file stays as it was
            throw withPath(e, path);
        }
        if (existing == null) {
            try {
                addName(parent, path.fileName(), f);
            } catch (IOException e) {
                f.free();
                throw withPath(e, path);
            }
        } else {
            parent.children.put(path.fileName(), f);
            released(existing);
            used += NAME_COST; // the name stays, now f's: released() gave its charge back
        }
        touchDir(parent);
    }

    @Override
    public synchronized void append(VfsPath path, byte[] data) throws IOException {
        Dir parent = parentOf(path, true);
        Node n = parent.children.get(path.fileName());
        if (n != null && !(n instanceof File)) {
            throw notRegular(n, path);
        }
        // a new file is charged in full before it is named: an append past the limit makes no file (ENOSPC, nothing changed)
        File f = n == null ? new File(this, 0644) : (File) n;
        long end = f.length;
        try {
            f.setLength(end + data.length);
            if (n == null) {
                addName(parent, path.fileName(), f);
                touchDir(parent);
            }
        } catch (IOException e) {
            if (n == null) {
                f.free();
            }
            throw withPath(e, path);
        }
        f.put(ByteBuffer.wrap(data), end, data.length);
        f.modified = f.changed = now();
    }

    /** A failure of a file's content (ENOSPC) with the path it happened at, for messages. */
    private static IOException withPath(IOException e, VfsPath path) {
        if (e instanceof ErrnoException x && x.getFile() == null) {
            return new ErrnoException(x.errno(), path.toString(), x.getReason());
        }
        return e;
    }

    @Override
    public synchronized void delete(VfsPath path) throws IOException {
        Dir parent = parentOf(path, false);
        Node n = parent.children.remove(path.fileName());
        if (n == null) {
            throw new NoSuchFileException(path.toString());
        }
        released(n);
        touchDir(parent);
    }

    @Override
    public synchronized List<Entry> list(VfsPath path) throws IOException {
        List<Entry> out = new ArrayList<>();
        for (Map.Entry<String, Node> e : findDir(path).children.entrySet()) {
            out.add(new Entry(e.getKey(), kindOf(e.getValue())));
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
        List<Entry> entries = new ArrayList<>();
        long[] inodes;
        synchronized (this) {
            Map<String, Node> children = findDir(path).children;
            inodes = new long[children.size()];
            for (Map.Entry<String, Node> e : children.entrySet()) {
                inodes[entries.size()] = e.getValue().inode;
                entries.add(new Entry(e.getKey(), kindOf(e.getValue())));
            }
        }
        EntrySink.feed(entries, inodes, sink);
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
                addName(d, s, created);
                d.links++;
                touchDir(d);
                n = created;
            } else if (n instanceof Link) {
                throw tooManyLinks(path);
            } else if (!(n instanceof Dir)) {
                throw new NotDirectoryException(path.toString());
            }
            d = (Dir) n;
        }
    }

    @Override
    public synchronized void copy(VfsPath src, VfsPath dst) throws IOException {
        File from = findFile(src);
        write(dst, from.bytes());
        // like std::fs::copy in the seeds and LocalStorage: the copy takes the source's mode
        find(dst).mode = from.mode;
    }

    @Override
    public void rename(VfsPath src, VfsPath dst) throws IOException {
        rename(src, dst, RenameMode.REPLACE);
    }

    @Override
    public synchronized void rename(VfsPath src, VfsPath dst, RenameMode mode) throws IOException {
        Dir from = parentOf(src, false);
        Node n = from.children.get(src.fileName());
        if (n == null) {
            throw new NoSuchFileException(src.toString());
        }
        Dir to = parentOf(dst, false);
        Node target = to.children.get(dst.fileName());
        if (mode == RenameMode.NO_REPLACE && target != null) {
            throw new FileAlreadyExistsException(dst.toString());
        }
        if (mode == RenameMode.EXCHANGE && target == null) {
            throw new NoSuchFileException(dst.toString());
        }
        if (src.equals(dst)) {
            return;
        }
        // neither name may go below itself; an exchange moves the target too
        if ((n instanceof Dir && dst.startsWith(src))
                || (mode == RenameMode.EXCHANGE && target instanceof Dir && src.startsWith(dst))) {
            throw ErrnoException.of(Linux.EINVAL, src.toString(), dst.toString(), null);
        }
        if (mode == RenameMode.EXCHANGE) {
            from.children.put(src.fileName(), target);
            to.children.put(dst.fileName(), n);
            n.changed = now();
            target.changed = now();
            touchDir(from);
            touchDir(to);
            return;
        }
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
        }
        from.children.remove(src.fileName());
        to.children.put(dst.fileName(), n);
        if (target != null && target != n) {
            released(target);
        }
        n.changed = now();
        touchDir(from);
        touchDir(to);
    }

    @Override
    public synchronized Metadata metadata(VfsPath path) throws IOException {
        return metadataOf(find(path));
    }

    private Metadata metadataOf(Node n) {
        boolean dir = n instanceof Dir;
        // a link's size is its target's length in bytes, as lstat says
        long size = dir ? BLOCK_SIZE : n instanceof File ? ((File) n).length
                : n instanceof Link ? ((Link) n).target.getBytes(StandardCharsets.UTF_8).length : 0;
        long links = dir ? 2 + ((Dir) n).children.values().stream().filter(c -> c instanceof Dir).count() : n.links;
        return new Metadata(kindOf(n), size, n.created, n.modified, n.accessed, n.changed, links, n.mode, n.inode);
    }

    // ---- a mount's operations ----

    @Override
    public synchronized FileHandle open(VfsPath path, Set<OpenFlag> flags, int createMode) throws IOException {
        if (path.isRoot()) {
            throw notRegular(root, path); // a directory, as every other one: not parentOf's EBUSY
        }
        Dir parent = parentOf(path, false);
        Node n = parent.children.get(path.fileName());
        if (n != null && flags.contains(OpenFlag.CREATE_NEW)) {
            throw new FileAlreadyExistsException(path.toString());
        }
        boolean existed = n != null;
        if (n == null) {
            if (!flags.contains(OpenFlag.CREATE) && !flags.contains(OpenFlag.CREATE_NEW)) {
                throw new NoSuchFileException(path.toString());
            }
            n = new File(this, fileMode(createMode));
            addName(parent, path.fileName(), n);
            touchDir(parent);
        }
        if (!(n instanceof File)) {
            throw notRegular(n, path);
        }
        return openFile((File) n, flags, existed);
    }

    /** The mode of a new file: 0644, and the execute bits where {@code createMode} has the owner's. */
    private static int fileMode(int createMode) {
        return 0644 | ((createMode & 0100) != 0 ? 0111 : 0);
    }

    /** A handle of {@code f}, truncated first where {@code flags} say; under the store's monitor. */
    private MemoryHandle openFile(File f, Set<OpenFlag> flags, boolean existed) throws IOException {
        // an empty file truncated is stamped too, as open(2) does: make's `: > stamp` relies on it
        if (flags.contains(OpenFlag.TRUNCATE) && (f.length > 0 || existed)) {
            f.setLength(0);
            f.modified = f.changed = now();
        }
        f.handles++;
        MemoryHandle h = new MemoryHandle(f, flags.contains(OpenFlag.APPEND));
        h.opened = existed ? h.metadata() : null;
        return h;
    }

    /** A handle (or a hold) of {@code f} let go: with no name left either, its memory goes. Under the store's monitor. */
    private static void handleClosed(File f) {
        f.handles--;
        if (f.links <= 0 && f.handles == 0) {
            f.free();
        }
    }

    @Override
    public synchronized HeldFile hold(VfsPath path) throws IOException {
        Node n = find(path);
        if (!(n instanceof File)) {
            return null;
        }
        File f = (File) n;
        // held as a handle is: its memory stays while it is held, whatever becomes of its names
        f.handles++;
        return new HeldFile() {
            private boolean closed;

            @Override
            public Metadata metadata() {
                synchronized (MemoryStorage.this) {
                    return metadataOf(f);
                }
            }

            @Override
            public FileHandle open(Set<OpenFlag> flags) throws IOException {
                synchronized (MemoryStorage.this) {
                    if (closed || f.freed) {
                        throw new NoSuchFileException(path.toString());
                    }
                    return openFile(f, flags, true);
                }
            }

            @Override
            public void close() {
                synchronized (MemoryStorage.this) {
                    if (!closed) {
                        closed = true;
                        handleClosed(f);
                    }
                }
            }
        };
    }

    private final class MemoryHandle implements FileHandle {
        /** What an error through a handle names: it knows no name of its file. */
        private static final VfsPath UNNAMED = VfsPath.root();
        private final File file;
        private final boolean append;
        private boolean closed;
        /** Made at the first lock request through this handle. Guarded by the storage's monitor. */
        private InProcessLocks.View locks;
        /** The file as this open found it; null when the open made it. */
        private Metadata opened;

        MemoryHandle(File file, boolean append) {
            this.file = file;
            this.append = append;
        }

        MemoryStorage store() {
            return MemoryStorage.this;
        }

        @Override
        public FileHandle reopen(Set<OpenFlag> flags) throws IOException {
            synchronized (MemoryStorage.this) {
                if (closed) {
                    throw new java.nio.channels.ClosedChannelException();
                }
                return openFile(file, flags, true);
            }
        }

        @Override
        public Metadata opened() {
            return opened;
        }

        @Override
        public int read(ByteBuffer dst, long position) {
            synchronized (MemoryStorage.this) {
                if (position >= file.length) {
                    return 0;
                }
                int n = (int) Math.min(dst.remaining(), file.length - position);
                file.get(dst, position, n);
                return n;
            }
        }

        @Override
        public int write(ByteBuffer src, long position) throws IOException {
            return writeAt(src, position, append);
        }

        @Override
        public int writeInPlace(ByteBuffer src, long position) throws IOException {
            return writeAt(src, position, false);
        }

        private int writeAt(ByteBuffer src, long position, boolean atTheEnd) throws IOException {
            synchronized (MemoryStorage.this) {
                long at = atTheEnd ? file.length : position;
                int n = src.remaining();
                if (at + n > file.length) {
                    file.setLength(at + n);
                }
                file.put(src, at, n);
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
            boolean keepSize = (mode & Linux.FALLOC_FL_KEEP_SIZE) != 0;
            boolean zero = (mode & (Linux.FALLOC_FL_PUNCH_HOLE | Linux.FALLOC_FL_ZERO_RANGE)) != 0;
            FileHandle.checkAllocate(mode, offset, length);
            synchronized (MemoryStorage.this) {
                long end = offset + length;
                if (zero) {
                    // memory has no blocks to reserve or free: a hole and zeros read the same
                    long to = Math.min(end, file.length);
                    for (long at = offset; at < to; ) {
                        int n = (int) Math.min(to - at, CHUNK);
                        file.put(ByteBuffer.allocate(n), at, n);
                        at += n;
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
        public void closedOnce() {
            // nothing outlives the daemon to be told
        }

        @Override
        public boolean hearsCloses() {
            return false;
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
        public byte[] xattr(String name) throws IOException {
            synchronized (MemoryStorage.this) {
                return xattrOf(file, name, UNNAMED);
            }
        }

        @Override
        public List<String> xattrNames() {
            synchronized (MemoryStorage.this) {
                return xattrNamesOf(file);
            }
        }

        @Override
        public void setXattr(String name, byte[] value, XattrMode mode) throws IOException {
            synchronized (MemoryStorage.this) {
                setXattrOf(file, name, value, mode, UNNAMED);
            }
        }

        @Override
        public void removeXattr(String name) throws IOException {
            synchronized (MemoryStorage.this) {
                removeXattrOf(file, name, UNNAMED);
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

        /** The content lives in native memory: no file for the kernel to pass reads and writes to. */
        @Override
        public int passthroughDescriptor() {
            return -1;
        }

        @Override
        public FileLocks locks() {
            synchronized (MemoryStorage.this) {
                if (locks == null) {
                    if (file.locks == null) {
                        file.locks = new InProcessLocks(MemoryStorage.this);
                    }
                    locks = file.locks.view();
                }
                return locks;
            }
        }

        @Override
        public void close() {
            synchronized (MemoryStorage.this) {
                if (!closed) {
                    closed = true;
                    handleClosed(file);
                }
            }
            InProcessLocks.View l;
            synchronized (MemoryStorage.this) {
                l = locks;
            }
            if (l != null) {
                l.close();
            }
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
        addName(parent, path.fileName(), new Dir(this));
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
        released(n);
        touchDir(parent);
    }

    /** Looked at and removed under the store's lock: nothing comes between. */
    @Override
    public synchronized boolean removeDirectoryIfSame(VfsPath path, Metadata made) throws IOException {
        return Storage.super.removeDirectoryIfSame(path, made);
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
        released(n); // its attributes' charge comes back (a tester's rmdir loop filled the store for good)
        touchDir(parent);
    }

    /** A name of the handle's file, found by walking the tree (rare: a change through another open). */
    @Override
    public synchronized VfsPath pathOf(FileHandle handle) {
        if (!(handle instanceof MemoryHandle h) || h.file.links == 0) {
            return null;
        }
        Deque<Map.Entry<VfsPath, Dir>> todo = new ArrayDeque<>();
        todo.push(Map.entry(VfsPath.root(), root));
        while (!todo.isEmpty()) {
            Map.Entry<VfsPath, Dir> at = todo.pop();
            for (Map.Entry<String, Node> e : at.getValue().children.entrySet()) {
                if (e.getValue() == h.file) {
                    return at.getKey().child(e.getKey());
                }
                if (e.getValue() instanceof Dir d) {
                    todo.push(Map.entry(at.getKey().child(e.getKey()), d));
                }
            }
        }
        return null;
    }

    @Override
    public synchronized void setTimes(VfsPath path, FileTime accessed, FileTime modified) throws IOException {
        find(path).setTimes(accessed, modified, now());
    }

    /** A chown stores no owner here, yet moves the ctime, as on a disk (and as the local store does). */
    @Override
    public synchronized void ownerAsked(VfsPath path) throws IOException {
        find(path).changed = now();
    }

    @Override
    public synchronized void setExecutable(VfsPath path, int mode) throws IOException {
        Node n = find(path);
        if (n instanceof Link) {
            throw notRegular(n, path);
        }
        if (n instanceof Dir || n instanceof Special) {
            n.changed = now(); // as the other stores: a directory keeps its search bits; a fifo's grant nothing
            return;
        }
        n.setExecutable(mode, now());
    }

    @Override
    public synchronized byte[] xattr(VfsPath path, String name) throws IOException {
        return xattrOf(find(path), name, path);
    }

    @Override
    public synchronized List<String> xattrNames(VfsPath path) throws IOException {
        return xattrNamesOf(find(path));
    }

    @Override
    public synchronized void setXattr(VfsPath path, String name, byte[] value, XattrMode mode) throws IOException {
        setXattrOf(xattrHolder(path), name, value, mode, path);
    }

    @Override
    public synchronized void removeXattr(VfsPath path, String name) throws IOException {
        removeXattrOf(xattrHolder(path), name, path);
    }

    // of node n, by path or through an open file of it; path only names it in errors; under the monitor

    private static byte[] xattrOf(Node n, String name, VfsPath path) throws IOException {
        byte[] value = n.xattrs == null ? null : n.xattrs.get(name);
        if (value == null) {
            throw Storage.noXattr(path, name);
        }
        return value.clone();
    }

    private static List<String> xattrNamesOf(Node n) {
        return n.xattrs == null ? List.of() : List.copyOf(n.xattrs.keySet());
    }

    private void setXattrOf(Node n, String name, byte[] value, XattrMode mode, VfsPath path) throws IOException {
        byte[] before = n.xattrs == null ? null : n.xattrs.get(name);
        mode.check(path, name, before != null);
        if (n instanceof Dir && n.links <= 0) {
            throw new NoSuchFileException(String.valueOf(path)); // removed: its charge is given back already
        }
        // ENOSPC past the limit, nothing changed: unbounded, one context's values filled the daemon's heap
        long more = xattrCost(name, value) - (before == null ? 0 : xattrCost(name, before));
        charge(more);
        n.xattrBytes += more;
        if (n.xattrs == null) {
            n.xattrs = new TreeMap<>();
        }
        n.xattrs.put(name, value.clone());
        n.changed = now();
    }

    private void removeXattrOf(Node n, String name, VfsPath path) throws IOException {
        byte[] value = n.xattrs == null ? null : n.xattrs.remove(name);
        if (value == null) {
            throw Storage.noXattr(path, name);
        }
        long less = xattrCost(name, value);
        used -= less;
        n.xattrBytes -= less;
        n.changed = now();
    }

    private static long xattrCost(String name, byte[] value) {
        return name.getBytes(StandardCharsets.UTF_8).length + value.length;
    }

    /** The file or directory whose attributes change; a link or a special file is EPERM, as Linux says of user.* names. */
    private Node xattrHolder(VfsPath path) throws IOException {
        Node n = find(path);
        if (n instanceof Link || n instanceof Special) {
            throw Storage.noXattrsHere(path);
        }
        return n;
    }

    @Override
    public synchronized void link(VfsPath existing, VfsPath newName) throws IOException {
        Node n = find(existing);
        if (n instanceof Dir) {
            throw ErrnoException.forErrno(Linux.EPERM, existing.toString());
        }
        Dir parent = parentOf(newName, false);
        if (parent.children.containsKey(newName.fileName())) {
            throw new FileAlreadyExistsException(newName.toString());
        }
        addName(parent, newName.fileName(), n);
        n.links++;
        n.changed = now();
        touchDir(parent);
    }

    @Override
    public synchronized FileHandle openUnnamed(VfsPath directory, int mode) throws IOException {
        findDir(directory);
        File f = new File(this, fileMode(mode));
        f.links = 0;
        f.linkable = true;
        return openFile(f, EnumSet.of(OpenFlag.READ, OpenFlag.WRITE), false);
    }

    @Override
    public synchronized void link(FileHandle handle, VfsPath newName) throws IOException {
        if (!(handle instanceof MemoryHandle open) || open.store() != this) {
            throw ErrnoException.forErrno(Linux.EXDEV, newName.toString());
        }
        File f = open.file;
        if (open.closed || f.links <= 0 && !f.linkable) {
            // every name it had is gone: linkat(2) does not bring such a file back
            throw new NoSuchFileException(newName.toString());
        }
        Dir parent = parentOf(newName, false);
        if (parent.children.containsKey(newName.fileName())) {
            throw new FileAlreadyExistsException(newName.toString());
        }
        addName(parent, newName.fileName(), f);
        f.links++;
        f.linkable = false;
        f.changed = now();
        touchDir(parent);
    }

    @Override
    public synchronized String readLink(VfsPath path) throws IOException {
        Node n = find(path);
        if (!(n instanceof Link)) {
            throw new java.nio.file.NotLinkException(path.toString());
        }
        return ((Link) n).target;
    }

    @Override
    public synchronized void createSymlink(VfsPath link, String target) throws IOException {
        LocalStorage.checkTarget(link, target);
        create(link, new Link(this, target));
    }

    @Override
    public synchronized void createNode(VfsPath path, EntryKind kind, int mode) throws IOException {
        if (kind != EntryKind.FIFO && kind != EntryKind.SOCKET) {
            throw new OperationNotPermittedException(path.toString(),
                    "the store makes only fifos and sockets this way, not " + kind.name().toLowerCase(java.util.Locale.ROOT));
        }
        create(path, new Special(this, kind, 0644 | (mode & 0111)));
    }

    /** Puts a new node at {@code path}, whose parent must exist and whose name must be free. */
    private void create(VfsPath path, Node n) throws IOException {
        Dir parent = parentOf(path, false);
        if (parent.children.containsKey(path.fileName())) {
            throw new FileAlreadyExistsException(path.toString());
        }
        addName(parent, path.fileName(), n);
        touchDir(parent);
    }

    @Override
    public synchronized SpaceInfo space() {
        if (limit != Long.MAX_VALUE) {
            long free = Math.max(0, limit - used);
            return new SpaceInfo(BLOCK_SIZE, limit, free, free, Linux.NAME_MAX, limit / NAME_COST, free / NAME_COST);
        }
        Runtime rt = Runtime.getRuntime();
        return new SpaceInfo(BLOCK_SIZE, rt.maxMemory(), rt.maxMemory() - rt.totalMemory() + rt.freeMemory(),
                rt.maxMemory() - rt.totalMemory() + rt.freeMemory(), Linux.NAME_MAX, 0, 0);
    }
}
