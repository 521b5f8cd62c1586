package dev.chibifs.store;

import dev.chibifs.sys.ErrnoException;
import dev.chibifs.sys.IsDirectoryException;
import dev.chibifs.sys.Linux;
import dev.chibifs.path.VfsPath;

import java.io.Closeable;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.NoSuchFileException;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * Dumb storage for the namespace: no policy, no FUSE. Paths arrive validated; failures are the
 * JDK's {@code java.nio.file} exceptions ({@code NoSuchFileException},
 * {@code FileAlreadyExistsException}, {@code DirectoryNotEmptyException}, ...) plus
 * {@link IsDirectoryException}, so one place above can map them to errno.
 *
 * <p>The first ten operations are chibi's backend trait; the rest are what a mount needs.
 */
public interface Storage extends Closeable {

    /**
     * The block size stores report (st_blksize, statfs's bsize) where they have no disk's own, and
     * a directory's size, as ext4 shows one.
     */
    int BLOCK_SIZE = 4096;

    /** The whole content of a file. */
    byte[] read(VfsPath path) throws IOException;

    /** Creates or replaces a file atomically (readers see the old or the new content, never a mix); creates parents. */
    void write(VfsPath path, byte[] data) throws IOException;

    /** Appends to a file, creating it and its parents when absent. */
    void append(VfsPath path, byte[] data) throws IOException;

    /** Removes a file, or a directory with everything below it. */
    void delete(VfsPath path) throws IOException;

    /** The entries of a directory with their kinds, sorted by name. */
    default List<Entry> list(VfsPath path) throws IOException {
        List<Entry> out = entries(path);
        out.sort(java.util.Comparator.comparing(Entry::name));
        return out;
    }

    /** Whether anything exists at the path (a symbolic link counts, and is not followed). */
    boolean exists(VfsPath path) throws IOException;

    /** Creates a directory and any missing parents; an existing directory is fine. */
    void mkdir(VfsPath path) throws IOException;

    /** Copies a file atomically to {@code dst}, replacing it; creates the parents of {@code dst}. */
    void copy(VfsPath src, VfsPath dst) throws IOException;

    /** rename(2): moves {@code src} to {@code dst} atomically, replacing a file or an empty directory there. */
    void rename(VfsPath src, VfsPath dst) throws IOException;

    /**
     * renameat2(2): {@link #rename} as {@code mode} says. This default suits a store that cannot
     * do better: it checks for a target before the move (another writer may come between), and
     * cannot exchange (EINVAL, which is what renameat2 says on a file system without it).
     */
    default void rename(VfsPath src, VfsPath dst, RenameMode mode) throws IOException {
        switch (mode) {
            case REPLACE -> rename(src, dst);
            case NO_REPLACE -> {
                if (exists(dst)) {
                    throw new FileAlreadyExistsException(dst.toString());
                }
                rename(src, dst);
            }
            case EXCHANGE -> throw ErrnoException.of(Linux.EINVAL, src.toString(),
                    dst.toString(), "this store cannot exchange two names");
        }
    }

    /** Size, kind, times, link count and mode bits; never follows a symbolic link. */
    Metadata metadata(VfsPath path) throws IOException;

    /**
     * {@link #metadata} of names in one directory, one after another: a listing that carries
     * attributes (READDIRPLUS) asks a few hundred at a time. A store may hold the directory open
     * across them; this default asks {@link #metadata} of each path.
     */
    default Siblings siblings(VfsPath directory) throws IOException {
        return name -> metadata(directory.child(name));
    }

    /** The metadata of names in one directory (see {@link #siblings}); closed when done. */
    interface Siblings extends AutoCloseable {
        Metadata metadata(String name) throws IOException;

        /**
         * Where {@link #metadata} of {@code name} would wait for the store's backing, what the store
         * has without asking, for a listing to send now with attributes the kernel must not keep (an
         * S3 listing gives a file's size, not its mtime and execute bits, which a HEAD asks: a stat
         * then asks again, and waits for it). Null where {@link #metadata} waits for nothing.
         */
        default Metadata unconfirmed(String name) throws IOException {
            return null;
        }

        @Override
        default void close() {
        }
    }

    /**
     * How long from now this store's answers about the names in directory {@code directory} (which
     * names it holds, their files' attributes) stay as they are unless changed through this store
     * object: a store that believes a listing for a while says how much of that is left, and the
     * kernel may keep those answers as long. {@link Duration#ZERO} where the store cannot say
     * (its changes are followed through {@link #changes}, or not at all).
     */
    default Duration answersHeld(VfsPath directory) {
        return Duration.ZERO;
    }

    /**
     * Whether this store's answers about a directory hold for exactly what {@link #answersHeld} says,
     * so that once it says zero they hold for nothing (an S3 listing past its validity: the next
     * question lists again), rather than "cannot say".
     */
    default boolean answersExpire() {
        return false;
    }

    /**
     * Whether what answers in this store's place now is not the store (another file system mounted
     * there): a name it lacks is not to be kept missing, since the store may come back with nothing
     * to tell the kernel, whose cached misses never reach the daemon to notice.
     */
    default boolean standsIn() {
        return false;
    }

    /**
     * Lets go of every answer held ({@link #answersHeld}): the next question about any directory asks
     * the backing again, so that what another host changed shows at once ({@code chibifs sync}).
     * Nothing by default: a store that holds none.
     */
    default void dropHeldAnswers() {
    }

    /**
     * Tells {@code listener} of each file this store moves to another name by itself ({@link
     * OwnMoves}), told after the move, on the store's own thread and holding none of its locks;
     * replaces the listener told before. Nothing by default: a store that moves nothing by itself.
     */
    default void tellOwnMoves(OwnMoves listener) {
    }

    // ---- what a mount needs ----

    /** Opens a file for positional reads and writes. */
    FileHandle open(VfsPath path, Set<OpenFlag> flags, int createMode) throws IOException;

    /**
     * The regular file at {@code path}, held so that it can be opened after its name is gone or
     * names another file; null where it is no regular file, or the store cannot hold one (each
     * open then goes by name).
     */
    default HeldFile hold(VfsPath path) throws IOException {
        return null;
    }

    /**
     * The entries of a directory with their kinds, in no particular order, handed to {@code sink}
     * as they are read: the listing readdir needs, in the same memory for any number of entries.
     */
    void forEachEntry(VfsPath path, EntrySink sink) throws IOException;

    /** {@link #forEachEntry} into a list, names decoded as UTF-8. */
    default List<Entry> entries(VfsPath path) throws IOException {
        List<Entry> out = new ArrayList<>();
        forEachEntry(path, (name, offset, length, kind, inode) ->
                out.add(new Entry(new String(name, offset, length, StandardCharsets.UTF_8), kind)));
        return out;
    }

    /** Sets the size of a file, cutting or zero-extending it. */
    void truncate(VfsPath path, long size) throws IOException;

    /** mkdir(2): one directory, whose parent must exist; fails if anything is there. */
    void createDirectory(VfsPath path) throws IOException;

    /** unlink(2): removes a file; a directory is refused with {@link IsDirectoryException}. */
    void removeFile(VfsPath path) throws IOException;

    /** rmdir(2): removes an empty directory. */
    void removeDirectory(VfsPath path) throws IOException;

    /**
     * {@link #removeDirectory}, only while {@code path} still names the directory {@code made}
     * describes ({@link Metadata#sameFileAs}): false, with nothing removed, where the name now holds
     * another (ours moved away and one made in its place) or nothing. This default looks, then
     * removes, and another process may come between; a store that can do both through one held
     * directory or under one lock does.
     */
    default boolean removeDirectoryIfSame(VfsPath path, Metadata made) throws IOException {
        Metadata now;
        try {
            now = metadata(path);
        } catch (NoSuchFileException gone) {
            return false;
        }
        if (!now.isDirectory() || !now.sameFileAs(made)) {
            return false;
        }
        removeDirectory(path);
        return true;
    }

    /**
     * For {@link #setTimes}: the store's own now, as utimensat's UTIME_NOW (`touch`). Stamped by
     * the clock the store's own writes use, not the daemon's: ext4 stamps a write by a coarse clock
     * that runs a few ms behind the JDK's, so a file written right after a `touch` by the JDK's time
     * looked older than the stamp, and make rebuilt it again. Compared by identity.
     */
    FileTime NOW = FileTime.fromMillis(Long.MIN_VALUE);

    /** {@code time}, or {@code now} where it is {@link #NOW}: for stores whose clock is the daemon's. */
    static FileTime timeOrNow(FileTime time, FileTime now) {
        return time == NOW ? now : time;
    }

    /** Sets access and modification times ({@link #NOW}: the store's clock's); a null time stays as it is. */
    void setTimes(VfsPath path, FileTime accessed, FileTime modified) throws IOException;

    /**
     * Sets the execute bits (mode &amp; 0111) of a file; read and write bits are not the store's
     * business, so a mode whose execute bits the file has already changes no bit. A directory's
     * bits do not change either: its search bits are what lets chibi and a daemon that is not root
     * into it, and the mount shows directories' modes from the policy anyway. Either way the ctime
     * moves, as every chmod a disk accepts moves it (ext4, and {@code chmod +x} here).
     */
    void setExecutable(VfsPath path, int mode) throws IOException;

    /** link(2): a second name for an existing file. */
    void link(VfsPath existing, VfsPath newName) throws IOException;

    /**
     * open(2) with O_TMPFILE: a new regular file in {@code directory} with no name, read and
     * written through the handle, and gone when the handle closes unless {@link #link(FileHandle,
     * VfsPath)} names it first. A store without hard links has no such files: EOPNOTSUPP, which
     * programs take as "make a named temporary file instead", as they do on file systems without.
     */
    default FileHandle openUnnamed(VfsPath directory, int mode) throws IOException {
        throw noUnnamedFiles(directory);
    }

    /**
     * linkat(2) of an open file: {@code newName} names the file {@code handle} (one of this store's)
     * is open on, an unnamed one too. A file that had names and lost them all stays gone (ENOENT),
     * as on a disk.
     */
    default void link(FileHandle handle, VfsPath newName) throws IOException {
        throw noUnnamedFiles(newName);
    }

    /** What a store without unnamed files says of {@link #openUnnamed} and of naming an open file. */
    private static ErrnoException noUnnamedFiles(VfsPath path) {
        return ErrnoException.of(Linux.EOPNOTSUPP, path.toString(), "this store keeps no unnamed files");
    }

    /** The target text of a symbolic link found in the store (never followed). */
    String readLink(VfsPath path) throws IOException;

    /**
     * symlink(2): creates {@code link} as a symbolic link whose target is the text {@code target},
     * stored as given; the store never resolves or follows it (which targets are allowed is the
     * router's rule). Fails if anything is at {@code link}; an empty target is ENOENT, as symlink(2).
     * A store without symbolic links refuses with {@link OperationNotPermittedException}.
     */
    default void createSymlink(VfsPath link, String target) throws IOException {
        throw new OperationNotPermittedException(link.toString(), "this store holds no symbolic links");
    }

    /**
     * mknod(2) of a {@link EntryKind#FIFO} or {@link EntryKind#SOCKET}: a name only, never opened
     * for data by the store (the kernel serves a fifo's data itself). Other kinds, and a store that
     * holds no such names, are refused with {@link OperationNotPermittedException}; only the execute
     * bits of {@code mode} are kept, as for files.
     */
    default void createNode(VfsPath path, EntryKind kind, int mode) throws IOException {
        throw new OperationNotPermittedException(path.toString(), "this store holds no fifos or sockets");
    }

    /**
     * Where the store has the file of {@code handle} (one of its own) now, or, where no name is left,
     * where it last had it; null where the store cannot tell. The router judges a change made
     * through an open file by it, as the file may have moved since its open, behind the mount.
     */
    default VfsPath pathOf(FileHandle handle) throws IOException {
        return null;
    }

    /**
     * Holds this store's other users (every mount of it, the vfs commands) out of the moves that
     * could carry a symbolic link out of its zone while the router judges one and makes it:
     * {@code exclusive} for whatever places a link (symlink, a link or directory moved, a hard link
     * of a link), shared for every other rename and hard link (see {@code Router#rename}). Blocks
     * until granted; closed once the change is made. A store no other process changes needs none
     * (this default): the router's own lock holds this process's threads apart.
     */
    default MoveLock lockMoves(boolean exclusive) throws IOException {
        return MoveLock.NONE;
    }

    /** What {@link #lockMoves} holds, until closed. */
    interface MoveLock extends AutoCloseable {
        MoveLock NONE = () -> { };

        @Override
        void close();
    }

    /** Space figures for statfs. */
    SpaceInfo space() throws IOException;

    // ---- extended attributes (user.* names only: the mount refuses other namespaces before a store is asked) ----

    /**
     * The value of extended attribute {@code name} of the file or directory at {@code path};
     * ENODATA ({@link ErrnoException}) when it has none by that name. A store that keeps none
     * (this default) says ENODATA for every name of a path that exists.
     */
    default byte[] xattr(VfsPath path, String name) throws IOException {
        metadata(path);
        throw noXattr(path, name);
    }

    /** The names of the extended attributes of {@code path}, in no particular order; none in a store that keeps none. */
    default List<String> xattrNames(VfsPath path) throws IOException {
        metadata(path);
        return List.of();
    }

    /**
     * setxattr(2): sets extended attribute {@code name} of the file or directory at {@code path}
     * to {@code value}, as {@code mode} says. A store that keeps none (this default) refuses with
     * EOPNOTSUPP, as a file system without them does.
     */
    default void setXattr(VfsPath path, String name, byte[] value, XattrMode mode) throws IOException {
        metadata(path);
        throw ErrnoException.of(Linux.EOPNOTSUPP, path.toString(), "this store keeps no extended attributes");
    }

    /** removexattr(2): removes extended attribute {@code name}; ENODATA when there is none by that name (always, in a store that keeps none). */
    default void removeXattr(VfsPath path, String name) throws IOException {
        metadata(path);
        throw noXattr(path, name);
    }

    /** What changing an attribute of a symbolic link, fifo or socket says: EPERM, as Linux says of user.* names there. */
    static OperationNotPermittedException noXattrsHere(VfsPath path) {
        return new OperationNotPermittedException(path.toString(), "only regular files and directories have user extended attributes");
    }

    /** What getxattr and removexattr say of a name a path has no attribute by. */
    static ErrnoException noXattr(VfsPath path, String name) {
        return ErrnoException.of(Linux.ENODATA, path.toString(), "no attribute " + name);
    }

    // ---- ETags (seed 004) ----

    /**
     * The ETag of a file: the SHA-256 of its content as 64 hex digits ({@link ContentHash}). This
     * default hashes the content at every call; a store that can remembers it per change.
     */
    default String etag(VfsPath path) throws IOException {
        try (FileHandle file = open(path, java.util.EnumSet.of(OpenFlag.READ), 0)) {
            return ContentHash.of(file::read, file.size());
        }
    }

    /**
     * {@link #write(VfsPath, byte[])} only if the file meets {@code condition}; else
     * {@link EtagMismatchException} and nothing changed. The check and the write are one step for
     * the writers of this store object (this default locks it); a store shared with other writers
     * says in its own override what more it promises.
     */
    default void write(VfsPath path, byte[] data, Precondition condition) throws IOException {
        synchronized (this) {
            condition.check(path, currentEtag(path));
            write(path, data);
        }
    }

    /** {@link #append(VfsPath, byte[])} only if the file meets {@code condition}, as {@link #write(VfsPath, byte[], Precondition)}. */
    default void append(VfsPath path, byte[] data, Precondition condition) throws IOException {
        synchronized (this) {
            condition.check(path, currentEtag(path));
            append(path, data);
        }
    }

    /**
     * What a change checks again at the moment it is made, before anything is touched: the
     * policy, judged when the change was asked, may have changed while it waited for a lock.
     */
    @FunctionalInterface
    interface Guard {
        Guard NONE = () -> { };

        void check() throws IOException;
    }

    /** {@link #write(VfsPath, byte[], Precondition)}, with {@code guard} checked first; a store whose writes wait checks it after the wait. */
    default void write(VfsPath path, byte[] data, Precondition condition, Guard guard) throws IOException {
        guard.check();
        if (condition.none()) {
            write(path, data); // no ETag to ask: nothing hashed
        } else {
            write(path, data, condition);
        }
    }

    /** {@link #append(VfsPath, byte[], Precondition)}, with {@code guard} checked first; a store whose writes wait checks it after the wait. */
    default void append(VfsPath path, byte[] data, Precondition condition, Guard guard) throws IOException {
        guard.check();
        if (condition.none()) {
            append(path, data); // no ETag to ask: nothing hashed
        } else {
            append(path, data, condition);
        }
    }

    /** {@link #copy(VfsPath, VfsPath)}, with {@code guard} checked first; a store whose copies wait for the destination's locks checks it after the wait. */
    default void copy(VfsPath src, VfsPath dst, Guard guard) throws IOException {
        guard.check();
        copy(src, dst);
    }

    /**
     * {@link #write(VfsPath, byte[], Precondition, Guard)} of the bytes {@code data} gives, to its
     * end. This default reads them all into memory first, which suits a store that holds its files
     * in memory (MemoryStorage) or sends each as one upload (S3); a store that can write a large
     * content a piece at a time (the local store) overrides it so a command holds only a buffer.
     */
    default void write(VfsPath path, java.io.InputStream data, Precondition condition, Guard guard) throws IOException {
        write(path, data.readAllBytes(), condition, guard);
    }

    /** What {@link #rewrite} makes of a file's content. */
    @FunctionalInterface
    interface Rewrite {
        byte[] apply(byte[] current) throws IOException;
    }

    /**
     * Replaces the file with what {@code rewrite} makes of its content (chibi's file_edit), if the
     * content read meets {@code condition}; the write is then made only if the file is still what
     * was read. This default reads, then writes as two steps: a change by another writer between
     * them is lost, unless the condition asks an ETag. A store whose writes wait for the file's
     * locks reads under them instead (the local store). {@code guard} is checked before the write.
     */
    default void rewrite(VfsPath path, Rewrite rewrite, Precondition condition, Guard guard) throws IOException {
        byte[] current = read(path);
        String read = ContentHash.of(current);
        condition.check(path, read);
        write(path, rewrite.apply(current), condition.ifMatch() != null ? Precondition.matching(read) : condition, guard);
    }

    /** The ETag of the file at {@code path}, null when nothing is there. */
    default String currentEtag(VfsPath path) throws IOException {
        try {
            return etag(path);
        } catch (java.nio.file.NoSuchFileException | java.nio.file.NotDirectoryException e) {
            return null;
        }
    }

    /**
     * Whether an answer may wait long on something beyond this host (S3 across a network), so a
     * caller that serves other requests on the same thread hands it to another. False: local disk or memory.
     */
    default boolean answersMayWaitLong() {
        return false;
    }

    /**
     * Makes everything written so far last where this store keeps it, returning once it does:
     * changes waiting to go up sent (S3), or the file system under the store synced (what
     * {@code sync} would do, which never reaches a FUSE daemon). {@code chibifs sync}. Nothing by
     * default: a store in memory, or one nothing writes.
     */
    default void sync() throws IOException {
    }

    /**
     * fsync(2) of the directory {@code directory}: its names as they are now (made, removed, renamed
     * in or out) last where this store keeps them once it returns, as the fsync of a directory after
     * a rename makes the rename durable on a disk (SQLite, git, editors' atomic saves). Nothing by
     * default: a store in memory, or one nothing writes.
     */
    default void syncDirectory(VfsPath directory) throws IOException {
    }

    /**
     * What the store is doing, in one line for {@code chibifs stats} (the S3 store: whether S3
     * answers, what waits for it, what was asked of it), or null when there is nothing to tell.
     */
    default String state() {
        return null;
    }

    /**
     * What this store asked of where it keeps its content (S3) since it opened, for {@code stats
     * --json}; null for a store that asks nothing elsewhere.
     */
    default Traffic traffic() {
        return null;
    }

    /** {@code requests} made, by kind; the content's bytes that came down and went up (not what S3 copied itself). */
    record Traffic(java.util.Map<String, Long> requests, long bytesDown, long bytesUp) {
    }

    /**
     * What waits to go up to where this store sends its changes (S3), and what has gone so far:
     * {@code chibifs umount} waits while that moves. Null for a store that sends nothing elsewhere.
     */
    default Uploads uploads() {
        return null;
    }

    /**
     * {@code changes} waiting (files, directories, deletes), {@code bytes} of the files among them,
     * {@code sentBytes} sent since the store opened, {@code readBytes} of files read here to send them
     * (hashed before their first byte goes, a second or more a GiB) since it opened.
     */
    record Uploads(int changes, long bytes, long sentBytes, long readBytes) {
        public static final Uploads NONE = new Uploads(0, 0, 0, 0);

        public Uploads plus(Uploads o) {
            return new Uploads(changes + o.changes, bytes + o.bytes, sentBytes + o.sentBytes, readBytes + o.readBytes);
        }
    }

    /**
     * A chown, which stores no owner (owners come from the path): moves what a disk moves, the
     * ctime, where the store keeps one, and fails as the store's file system fails a change (a
     * read-only one: EROFS); elsewhere it only looks that {@code path} is there.
     */
    default void ownerAsked(VfsPath path) throws IOException {
        metadata(path);
    }

    /** Why the store does not answer now (an S3 endpoint away), or null when it does or cannot be away. */
    default String unanswered() {
        return null;
    }

    /**
     * Why the store fails now until someone acts (an S3 store's cache directory gone, an upload S3
     * refuses holding back every other), or null: unlike {@link #unanswered()}, not a wait that
     * ends by itself. {@code chibifs status} calls such a mount failing.
     */
    default String failing() {
        return null;
    }

    /**
     * When the store next asks again for what failed (an S3 store's write-back: {@code next try in
     * 4.2 s}), or null where nothing waits for a retry. {@code chibifs status} says it after
     * {@link #unanswered()}, which alone said that a change failed, not whether it would be tried again.
     */
    default String nextTry() {
        return null;
    }

    /**
     * What the store does less safely than it should, though it answers (an S3 store whose server
     * has no DeleteObjects: lock releases that may be sent twice), or null. {@code chibifs status}
     * says it and calls the mount active still.
     */
    default String caution() {
        return null;
    }

    /**
     * A feed of the changes to names in directories of this store, told to {@code listener}; until
     * it is closed. {@link ChangeFeed#NONE} where changes cannot be seen.
     */
    default ChangeFeed changes(ChangeListener listener) {
        return ChangeFeed.NONE;
    }

    @Override
    default void close() throws IOException {
    }
}
