package dev.chibifs.store;

import dev.chibifs.path.VfsPath;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;

/**
 * Any store, shown read-only: reads pass through, every change fails with
 * {@link ReadOnlyStoreException} before the store underneath is asked. {@code readonly:DIR} is a
 * {@link LocalStorage} of DIR behind this (which never follows a link found in DIR, so nothing
 * outside DIR is reachable), and an empty {@code /tools/sys} a {@link MemoryStorage}.
 */
public final class ReadOnlyStorage implements ReadOnlyStore {

    private static final Set<OpenFlag> CHANGING = EnumSet.of(OpenFlag.WRITE, OpenFlag.APPEND, OpenFlag.CREATE,
            OpenFlag.CREATE_NEW, OpenFlag.TRUNCATE);

    private final Storage inner;
    private final String name;

    /** {@code inner} read-only; {@code name} goes into every refusal ("readonly:/srv/docs"). */
    public ReadOnlyStorage(Storage inner, String name) {
        this.inner = inner;
        this.name = name;
    }

    @Override
    public String storeName() {
        return name;
    }

    @Override
    public byte[] read(VfsPath path) throws IOException {
        return inner.read(path);
    }

    /** The inner store's, which may remember it. */
    @Override
    public String etag(VfsPath path) throws IOException {
        return inner.etag(path);
    }

    @Override
    public List<Entry> list(VfsPath path) throws IOException {
        return inner.list(path);
    }

    /** As the store behind it: a directory on a stopped FUSE daemon or NFS server holds requests as S3 does. */
    @Override
    public boolean answersMayWaitLong() {
        return inner.answersMayWaitLong();
    }

    @Override
    public boolean exists(VfsPath path) throws IOException {
        return inner.exists(path);
    }

    @Override
    public Metadata metadata(VfsPath path) throws IOException {
        return inner.metadata(path);
    }

    @Override
    public byte[] xattr(VfsPath path, String name) throws IOException {
        return inner.xattr(path, name);
    }

    @Override
    public List<String> xattrNames(VfsPath path) throws IOException {
        return inner.xattrNames(path);
    }

    @Override
    public FileHandle open(VfsPath path, Set<OpenFlag> flags, int createMode) throws IOException {
        refuseChanges(path, flags);
        return new ReadOnlyHandle(inner.open(path, flags, createMode), path);
    }

    private void refuseChanges(VfsPath path, Set<OpenFlag> flags) throws ReadOnlyStoreException {
        for (OpenFlag f : flags) {
            if (CHANGING.contains(f)) {
                throw refused(path);
            }
        }
    }

    @Override
    public HeldFile hold(VfsPath path) throws IOException {
        HeldFile held = inner.hold(path);
        if (held == null) {
            return null;
        }
        return new HeldFile() {
            @Override
            public Metadata metadata() throws IOException {
                return held.metadata();
            }

            @Override
            public FileHandle open(Set<OpenFlag> flags) throws IOException {
                refuseChanges(path, flags);
                return new ReadOnlyHandle(held.open(flags), path);
            }

            @Override
            public void close() {
                held.close();
            }
        };
    }

    @Override
    public void forEachEntry(VfsPath path, EntrySink sink) throws IOException {
        inner.forEachEntry(path, sink);
    }

    @Override
    public List<Entry> entries(VfsPath path) throws IOException {
        return inner.entries(path);
    }

    @Override
    public String readLink(VfsPath path) throws IOException {
        return inner.readLink(path);
    }

    @Override
    public SpaceInfo space() throws IOException {
        return inner.space();
    }

    @Override
    public ChangeFeed changes(ChangeListener listener) {
        return inner.changes(listener);
    }

    @Override
    public Duration answersHeld(VfsPath directory) {
        return inner.answersHeld(directory);
    }

    @Override
    public boolean standsIn() {
        return inner.standsIn();
    }

    @Override
    public void close() throws IOException {
        inner.close();
    }

    /** A handle opened for reading: reads and stats pass, every change is refused. */
    private final class ReadOnlyHandle implements ReadOnlyFileHandle {
        private final FileHandle h;
        private final VfsPath path;

        ReadOnlyHandle(FileHandle h, VfsPath path) {
            this.h = h;
            this.path = path;
        }

        @Override
        public ReadOnlyStoreException refusal() {
            return refused(path);
        }

        @Override
        public int read(ByteBuffer dst, long position) throws IOException {
            return h.read(dst, position);
        }

        @Override
        public long inode() throws IOException {
            return h.inode();
        }

        @Override
        public Metadata opened() {
            return h.opened();
        }

        @Override
        public Metadata metadata() throws IOException {
            return h.metadata();
        }

        @Override
        public long size() throws IOException {
            return h.size();
        }

        /** A lock changes no file: SQLite reading a database takes a read lock. A write lock needs a writable open (EBADF). */
        @Override
        public FileLocks locks() throws IOException {
            return h.locks();
        }

        @Override
        public void close() throws IOException {
            h.close();
        }
    }
}
