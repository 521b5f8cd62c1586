package dev.chibifs.store.s3;

import dev.chibifs.path.VfsPath;
import dev.chibifs.store.FileHandle;
import dev.chibifs.store.FileLocks;
import dev.chibifs.store.InProcessLocks;
import dev.chibifs.store.Metadata;
import dev.chibifs.store.OpenFlag;
import dev.chibifs.store.XattrMode;
import dev.chibifs.store.s3.S3Storage.MovedFrom;
import dev.chibifs.store.s3.Overlay.Node;
import dev.chibifs.sys.ErrnoException;
import dev.chibifs.sys.Errors;
import dev.chibifs.sys.Linux;

import static dev.chibifs.store.s3.S3Storage.COPY_RATHER_THAN_PUT_FROM;
import static dev.chibifs.store.s3.S3Storage.FETCHES;
import static dev.chibifs.store.s3.Overlay.NOT_APPENDS;
import static dev.chibifs.store.s3.S3Storage.SNAPSHOT_TRIES;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.Set;

/**
 * A file of an {@link S3Storage} open through the mount: reads and writes go to the node's file in
 * the content cache, which a handle opened for reading before the file was fetched fetches at its
 * first read or write; a read-only handle of a download in ranges reads it as it arrives; a read
 * past the end of a version another host extended takes the new bytes ({@link #follow}). Every
 * write marks the node dirty for the write-back; the last writer's close starts its debounce.
 *
 * <p>Locking: the store's monitor guards the node and this handle's fields, as marked, and is never
 * held over a request to S3 or a fetch. {@link #follow} holds this handle's own monitor, so that
 * two reads of one handle do not add the same bytes at once, and takes the store's inside it.
 */
final class ObjectHandle implements FileHandle {
    private static final Logger LOG = LoggerFactory.getLogger(ObjectHandle.class);

    private final S3Storage store;
    private final Node node;
    /**
     * The content; null until the first read or write of a handle that opened a file not fetched
     * yet for writing ({@link #content}), so that an open that only sets attributes ({@code
     * touch}) does not fetch it. Set once, under the store's monitor; read without it once set
     * (volatile), so that reads, the hot path, do not take the store's monitor.
     */
    private volatile CacheFile ch;
    private final boolean writer;
    private final boolean append;
    /** Its open made the file, whose generation was then {@link #madeGen}. */
    private final boolean made;
    private final long madeGen;
    /** As the open left the file (truncated); null when it made it. Set by the store before the open returns. */
    Metadata opened;
    private boolean closed;
    /** Made at the first lock request through this handle; guarded by the store's monitor. */
    private InProcessLocks.View localLocks;
    /** {@link #localLocks}, and the leases that make them reach other hosts where the store has them. */
    private FileLocks locks;
    /** {@link Node#replaced} when {@link #ch} was set; guarded by the store's monitor (read without, on the hot path). */
    private long contentSeen;
    /** Contents this handle read before another host's version replaced them; closed with it (a read may be on one). */
    private java.util.List<CacheFile> retired;
    /** The copy from another file under way through this handle ({@link #copiedHere}); guarded by the store's monitor. */
    private CopyRun copyRun;

    /** The download it reads as it arrives, or null. */
    private final Bucket.Download download;
    /** Where the file is larger than the cache disk: its reads, from S3 into memory; else null. */
    private final RangeReads.Reader ranged;
    /**
     * A writer's reads before its first write, of a file the cache has no room for: {@link
     * #rangesUntilWritten}. Set once, under the store's monitor, for the node's generation {@link
     * #writerRangesGen}; closed with the handle (a read may still be on it).
     */
    private volatile RangeReads.Reader writerRanges;
    private long writerRangesGen;
    /** Whether the cache was asked for room for a writer's reads and had it: asked once per handle. */
    private volatile boolean cacheTakesIt;
    /**
     * The node's generation when this handle's content was last compared with the node's
     * ({@link #follow}); guarded by the store's monitor.
     */
    private long seenGen;

    /** Made under the store's monitor. */
    ObjectHandle(S3Storage store, Node node, CacheFile ch, boolean writer, boolean append, boolean made) {
        this(store, node, ch, writer, append, made, null, null);
    }

    /** A read-only handle of {@code download}'s file; made under the store's monitor. */
    ObjectHandle(S3Storage store, Node node, CacheFile ch, Bucket.Download download) {
        this(store, node, ch, false, false, false, download, null);
    }

    /**
     * A read-only handle of a file larger than the cache disk, read through {@code ranged}; made under
     * the store's monitor. A write or truncate through it fetches as any, and fails ENOSPC saying why.
     */
    ObjectHandle(S3Storage store, Node node, RangeReads.Reader ranged) {
        this(store, node, null, false, false, false, null, ranged);
    }

    private ObjectHandle(S3Storage store, Node node, CacheFile ch, boolean writer, boolean append, boolean made,
                         Bucket.Download download, RangeReads.Reader ranged) {
        this.store = store;
        node.opens++;
        this.node = node;
        this.ch = ch;
        this.writer = writer;
        this.append = append;
        this.made = made;
        this.madeGen = node.gen;
        this.opened = made ? null : store.metadataOf(node);
        this.download = download;
        this.ranged = ranged;
        this.seenGen = node.gen;
        this.contentSeen = node.replaced;
    }

    /** Whether its open made the file (what {@link S3Storage#append} takes away again when its write fails). */
    boolean madeItsFile() {
        return made;
    }

    @Override
    public Metadata opened() {
        return opened;
    }

    /** The content, fetched first where this handle has none yet. */
    private CacheFile content() throws IOException {
        CacheFile set = ch;
        if (set != null && node.replaced == contentSeen) {
            return set;
        }
        for (int attempt = 0; ; attempt++) {
            synchronized (store) {
                if (ch != null && node.replaced != contentSeen && download == null && !node.dirty) {
                    // a file locked here, whose content another host replaced: processes that share a
                    // file under locks (SQLite) read what the last holder wrote, as on one disk
                    if (retired == null) {
                        retired = new java.util.ArrayList<>(1);
                    }
                    retired.add(ch);
                    ch = null;
                    seenGen = node.gen;
                }
                contentSeen = node.replaced;
                if (ch != null) {
                    return ch;
                }
                if (node.cached) {
                    ch = CacheFile.openForWriting(store.dataFile(node.ino));
                    return ch;
                }
                if (attempt >= SNAPSHOT_TRIES) {
                    throw ErrnoException.of(Linux.EBUSY, String.valueOf(node.path), "changed while it was fetched");
                }
            }
            store.fetches.fetch(node);
        }
    }

    @Override
    public int read(ByteBuffer dst, long position) throws IOException {
        if (ranged != null) {
            return ranged.read(dst, position); // the version it opened, to its end: what another host adds is not followed
        }
        if (download != null) {
            download.await(position, dst.remaining());
        }
        if (writer && ch == null) {
            RangeReads.Reader r = rangesUntilWritten();
            if (r != null) {
                return r.read(dst, position);
            }
        }
        CacheFile c = content();
        int n = c.read(dst, position);
        if (dst.hasRemaining() && follow(c)) {
            n += c.read(dst, position + n);
        }
        return n;
    }

    /**
     * Where this writer has not fetched its file and the cache has no room for it, the version it
     * opened read from S3 in ranges (as a read-only open of such a file reads), until its first
     * write fetches it (and fails ENOSPC, saying why, where there is still no room). SQLite opens
     * read-write only to read: a database larger than the cache disk failed ENOSPC at its first
     * read. Null where the file is cached, changed here or being fetched, or its version moved on
     * since the reads began: the read then fetches, as before.
     */
    private RangeReads.Reader rangesUntilWritten() throws IOException {
        RangeReads.Reader r = writerRanges;
        long size;
        synchronized (store) {
            if (ch != null || !rangeable()) {
                return null;
            }
            if (r != null) {
                return writerRangesGen == node.gen ? r : null;
            }
            size = node.size;
        }
        if (cacheTakesIt || store.cacheCanTake(size)) { // a statfs: asked once, not at every read
            cacheTakesIt = true;
            return null;
        }
        synchronized (store) {
            if (ch != null || !rangeable() || node.size != size) {
                return null;
            }
            if (writerRanges == null) {
                writerRangesGen = node.gen;
                store.fetches.sayReadInRanges(node.path, size);
                writerRanges = store.rangeReads.open(store.objectKey(node.path, node), node.remoteEtag, size);
            }
            return writerRangesGen == node.gen ? writerRanges : null;
        }
    }

    /** Whether the node is a version S3 has whole and this host has not fetched: under the store's monitor. */
    private boolean rangeable() {
        return !node.cached && !node.dirty && node.download == null && node.fetching == null && node.path != null
                && node.remoteEtag != null;
    }

    /**
     * A read of this read-only handle ran past the end of its content {@code c} while the node
     * moved on to another version (another host's upload): where that version is this content with
     * more at its end (a log appended on another host, which goes up while open), the new bytes are
     * added to this handle's copy and true is answered, so that a reader following the file
     * ({@code tail -f}, which polls with fstat and reads on) reads them. Any other change leaves
     * the handle with what it opened (close-to-open). The copy is the handle's own: the cache
     * dropped its file when the listing showed the new version, and several handles that share
     * it add the same bytes at the same offsets.
     */
    private synchronized boolean follow(CacheFile c) {
        synchronized (store) {
            if (writer || (download != null && !download.ended()) || closed || node.gen == seenGen || node.dirty
                    || node.writers > 0) {
                return false;
            }
        }
        Boolean followed = followByRange(c);
        if (followed != null) {
            return followed;
        }
        try {
            return followFetched(c);
        } catch (IOException e) {
            // S3 away, the file removed meanwhile, the cache disk full: the reader has what it had,
            // and may ask again
            LOG.debug("S3 store {}: {} not followed: {}", store.spec, node.path, e.getMessage());
            return false;
        }
    }

    /**
     * {@link #follow} without fetching the new version whole: where it is not cached here but its
     * SHA-256 is known (its object's metadata), only its bytes past this handle's content come
     * down, and they are added where this content followed by them is that version, as its hash
     * says. Null where that cannot be asked (cached, hash unknown, S3 away): the caller fetches it.
     */
    private Boolean followByRange(CacheFile c) {
        String key;
        String etag;
        String sha;
        long theirs;
        long gen;
        synchronized (store) {
            if (node.cached || node.path == null || node.remoteEtag == null || node.sha == null || node.shaGen != node.gen) {
                return null;
            }
            key = store.objectKey(node.path, node);
            etag = node.remoteEtag;
            sha = node.sha;
            theirs = node.size;
            gen = node.gen;
        }
        Path part = store.dataDir.resolve(node.ino + ".fetch" + FETCHES.incrementAndGet());
        try {
            long mine = c.size();
            boolean extended = false;
            if (theirs > mine) {
                try (CacheFile added = CacheFile.replace(part)) {
                    if (store.continues(key, etag, theirs, sha, c, mine, added)) {
                        c.writeAll(added.range(mine, theirs - mine), mine);
                        extended = true;
                    }
                }
            }
            synchronized (store) {
                seenGen = gen;
            }
            return extended;
        } catch (IOException e) {
            LOG.debug("S3 store {}: {} not followed by its new bytes: {}", store.spec, node.path, e.getMessage());
            return null;
        } finally {
            try {
                Files.deleteIfExists(part);
            } catch (IOException e) {
                LOG.debug("S3 store {}: {} left in the cache: {}", store.spec, part, e.getMessage());
            }
        }
    }

    /** {@link #follow} by the node's new version fetched whole and compared with this content {@code c}. */
    private boolean followFetched(CacheFile c) throws IOException {
        store.fetches.fetch(node);
        long gen;
        CacheFile now;
        synchronized (store) {
            if (!node.cached || node.dirty || node.writers > 0 || node.path == null) {
                return false;
            }
            gen = node.gen;
            now = CacheFile.openForReading(store.dataFile(node.ino));
        }
        try (now) {
            long mine = c.size();
            long theirs = now.size();
            boolean extended = theirs > mine && c.samePrefix(now, mine);
            if (extended) {
                c.writeAll(now.range(mine, theirs - mine), mine);
            }
            synchronized (store) {
                seenGen = gen;
            }
            return extended;
        }
    }

    /**
     * Follows a copy_file_range served through this handle from another of this store: once the
     * copies, each going on where the last ended, have written a file S3 holds whole from its
     * start (cp asks 64 MiB at a time), its upload may be a copy of that object
     * ({@link MovedFrom#COPIED}, checked by the content's hash when it goes up). Anything else
     * ends the run.
     */
    @Override
    public void copiedHere(FileHandle from, long fromOffset, long toOffset, long length) {
        synchronized (store) {
            CopyRun run = copyRun;
            copyRun = null;
            if (!(from instanceof ObjectHandle source) || source.store != store || fromOffset != toOffset
                    || fromOffset != (run == null ? 0 : run.upTo()) || (run != null && run.source() != source.node)) {
                return;
            }
            Node s = source.node;
            if (s.dirty || s.link || s.remoteEtag == null || s.path == null || s.sha == null || s.shaGen != s.gen
                    || s.size < COPY_RATHER_THAN_PUT_FROM || (run != null && !s.remoteEtag.equals(run.etag()))) {
                return;
            }
            long upTo = fromOffset + length;
            if (upTo < s.size) {
                copyRun = new CopyRun(s, s.remoteEtag, upTo);
            } else if (upTo == s.size && node.size == s.size && node.path != null && node != s) {
                node.movedFrom = new MovedFrom(store.objectKey(s.path, s), s.remoteEtag, s.sha, MovedFrom.COPIED);
            }
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
        CacheFile ch = content();
        synchronized (store) {
            requireLockNotLost();
            store.journalRoom(node.path); // see S3Storage.requireRoom
            long at = atTheEnd ? ch.size() : position;
            requireObjectSize(at + src.remaining());
            store.overlay.writing(node, atTheEnd ? at : NOT_APPENDS, made && node.gen == madeGen);
            store.journal.commit();
            long found = ch.size();
            int from = src.position();
            int n;
            for (int tries = 1; ; tries++) {
                try {
                    n = ch.write(src, at);
                    break;
                } catch (IOException e) {
                    // a disk that filled midway kept the part written, past the size the node says: an
                    // append after it landed beyond those bytes (and they went up with it). Cut back.
                    cutBackTo(ch, found);
                    // a full disk whose content already on S3 can leave takes the write once it has
                    if (Errors.errno(e) != Linux.ENOSPC || !store.makeRoom(src.limit() - from, String.valueOf(node.path), true)
                            || tries >= S3Storage.ROOM_TRIES) {
                        throw e;
                    }
                    src.position(from);
                }
            }
            node.size = ch.size();
            store.overlay.touch(node);
            return n;
        }
    }

    /** Cuts {@code ch} back to {@code size} where a failed write grew it; quietly, as the undo of a failure. */
    private static void cutBackTo(CacheFile ch, long size) {
        try {
            if (ch.size() > size) {
                ch.truncate(size);
            }
        } catch (IOException | RuntimeException failing) {
            // the failure being told is the one that matters
        }
    }

    @Override
    public void truncate(long size) throws IOException {
        CacheFile ch = content();
        synchronized (store) {
            requireLockNotLost();
            store.journalRoom(node.path);
            if (size == 0 && WriteBack.emptied(node) && node.path != null) {
                store.journal.put(node);
            }
            store.overlay.writing(node, NOT_APPENDS, false);
            store.journal.commit();
            setLength(ch, size);
            node.size = ch.size();
            store.overlay.touch(node);
        }
    }

    private void setLength(CacheFile ch, long size) throws IOException {
        requireObjectSize(size);
        if (size != ch.size()) {
            ch.truncate(size);
        }
    }

    @Override
    public void allocate(int mode, long offset, long length) throws IOException {
        boolean keepSize = (mode & Linux.FALLOC_FL_KEEP_SIZE) != 0;
        boolean zero = (mode & (Linux.FALLOC_FL_PUNCH_HOLE | Linux.FALLOC_FL_ZERO_RANGE)) != 0;
        FileHandle.checkAllocate(mode, offset, length);
        CacheFile ch = content();
        synchronized (store) {
            requireLockNotLost();
            store.journalRoom(node.path);
            long end = offset + length;
            long cur = ch.size();
            if (!keepSize) {
                requireObjectSize(end);
            }
            if (zero) {
                // an object has no blocks to reserve or free: a hole and zeros read the same
                long to = Math.min(end, cur);
                ByteBuffer zeros = ByteBuffer.allocate((int) Math.min(1 << 16, Math.max(0, to - offset)));
                for (long at = offset; at < to; ) {
                    zeros.clear().limit((int) Math.min(zeros.capacity(), to - at));
                    at += ch.write(zeros, at);
                }
            }
            if (!keepSize && end > cur) {
                setLength(ch, end);
            }
            if (zero || (!keepSize && end > cur)) {
                store.overlay.writing(node, NOT_APPENDS, false);
                store.journal.commit();
                node.size = ch.size();
                store.overlay.touch(node);
            }
        }
    }

    /**
     * The journal records the file as no writer open, where this is its only writer and it changed
     * it: a restart uploads it as done. A crash tester killed the daemon just after {@code echo new >
     * f} returned, before the kernel's RELEASE: the restart took f for half written, kept "new" as a
     * conflict copy and showed the old content (a new file: only the copy), 9 times of 9. A write
     * after this, through another descriptor of the open, records the writer again
     * ({@link Overlay#writing}).
     */
    @Override
    public boolean hearsCloses() {
        return writer;
    }

    @Override
    public void closedOnce() throws IOException {
        synchronized (store) {
            if (!writer || closed || !node.dirty || node.writers != 1 || node.closedOnce || node.path == null) {
                return;
            }
            node.closedOnce = true;
            store.journal.put(node);
            store.journal.commit();
        }
    }

    @Override
    public void sync(boolean metadata) throws IOException {
        synchronized (store) {
            requireLockNotLost();
        }
        store.writeBack.flushNode(node);
    }

    /** EIO while a lock taken through this handle was lost on S3 ({@link HostLocks.View#requireNotLost}). Under the store's monitor. */
    private void requireLockNotLost() throws ErrnoException {
        if (locks instanceof HostLocks.View leased) {
            leased.requireNotLost();
        }
    }

    private void requireObjectSize(long size) throws ErrnoException {
        if (size > Bucket.MAX_OBJECT_BYTES) {
            // past it the file could never be uploaded
            throw ErrnoException.of(Linux.EFBIG, String.valueOf(node.path),
                    "an S3 object holds at most " + (Bucket.MAX_OBJECT_BYTES >> 40) + " TiB");
        }
    }

    /** The file this is a handle of. */
    Node node() {
        return node;
    }

    @Override
    public long inode() {
        return node.ino;
    }

    @Override
    public Metadata metadata() {
        synchronized (store) {
            return store.metadataOf(node);
        }
    }

    @Override
    public long size() throws IOException {
        // a file still downloading is as long as the object; its file, only as far as ranges came
        if (download != null && !download.ended()) {
            return download.head().size();
        }
        if (ranged != null) {
            return ranged.size();
        }
        CacheFile set = ch;
        if (set != null && node.replaced == contentSeen) {
            return set.size();
        }
        synchronized (store) {
            return ch == null || node.replaced != contentSeen ? node.size : ch.size();
        }
    }

    @Override
    public void setTimes(FileTime accessed, FileTime modified) throws IOException {
        synchronized (store) {
            store.journalRoom(node.path);
            store.setTimesOf(node, accessed, modified);
            store.journal.commit();
        }
    }

    @Override
    public void setExecutable(int mode) throws IOException {
        synchronized (store) {
            store.journalRoom(node.path);
            store.setExecutableOf(node, mode);
            store.journal.commit();
        }
    }

    /**
     * The node's attributes, whatever became of its name: an open file renamed over keeps the ones it
     * had, and its changes, until its last handle closes (fsetxattr of a descriptor, as on a disk).
     */
    @Override
    public byte[] xattr(String name) throws IOException {
        return store.xattrOf(store.withXattrsKnown(node, shown()), shown(), name);
    }

    @Override
    public java.util.List<String> xattrNames() throws IOException {
        return store.xattrNamesOf(store.withXattrsKnown(node, shown()));
    }

    @Override
    public void setXattr(String name, byte[] value, XattrMode mode) throws IOException {
        store.requireRoom();
        store.setXattrOf(store.xattrsToChange(node, shown()), shown(), name, value, mode);
    }

    @Override
    public void removeXattr(String name) throws IOException {
        store.requireRoom();
        store.removeXattrOf(store.xattrsToChange(node, shown()), shown(), name);
    }

    /** The name errors give: the file's own, or the root's where it has none left. */
    private VfsPath shown() {
        synchronized (store) {
            return node.path != null ? node.path : VfsPath.root();
        }
    }

    /** Never: every write must pass through here to mark the file dirty for its upload. */
    @Override
    public int passthroughDescriptor() {
        return -1;
    }

    /** By name only: an open's content and upload are the overlay node's, which a name leads to. */
    @Override
    public FileHandle reopen(Set<OpenFlag> flags) {
        return null;
    }

    /** Locks exclude within this daemon and, where the store has leases ({@link HostLocks}), on every host. */
    @Override
    public FileLocks locks() {
        synchronized (store) {
            if (locks == null) {
                if (node.locks == null) {
                    node.locks = new InProcessLocks(store);
                    node.lease = new HostLocks.Lease();
                }
                localLocks = node.locks.view();
                locks = store.hostLocks == null ? localLocks : store.hostLocks.view(node, localLocks);
            }
            return locks;
        }
    }

    @Override
    public void close() throws IOException {
        CacheFile content;
        synchronized (store) {
            if (closed) {
                return;
            }
            closed = true;
            node.opens--;
            if (node.opens == 0 && node.path == null && !node.dir) {
                store.overlay.dropDetachedContent(node); // kept for the opens its removal found (Overlay.detach)
            }
            if (localLocks != null) {
                localLocks.close();
            }
            if (writer) {
                node.writers--;
                if (node.dirty && node.writers == 0 && node.path != null) {
                    // closed dirty: the debounce starts now, and the journal has the final attributes
                    store.overlay.schedule(node);
                    store.journal.put(node);
                    store.journal.commit();
                }
            }
            content = ch;
        }
        try {
            if (localLocks != null && store.hostLocks != null) {
                // not under the store's monitor: letting a lease go pushes first
                store.hostLocks.settle(node);
            }
        } finally {
            if (ranged != null) {
                ranged.close();
            }
            if (writerRanges != null) {
                writerRanges.close();
            }
            if (retired != null) {
                for (CacheFile c : retired) {
                    c.close();
                }
            }
            if (content != null) {
                content.close();
            }
        }
    }

    /** A copy of {@code source}, version {@code etag}, written from its start up to {@code upTo} so far. */
    private record CopyRun(Node source, String etag, long upTo) {
    }
}
