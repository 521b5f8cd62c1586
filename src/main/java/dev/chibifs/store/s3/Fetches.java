package dev.chibifs.store.s3;

import dev.chibifs.path.VfsPath;
import dev.chibifs.store.s3.Overlay.Node;
import dev.chibifs.sys.ErrnoException;
import dev.chibifs.sys.Errors;
import dev.chibifs.sys.IsDirectoryException;
import dev.chibifs.sys.Linux;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.IdentityHashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

import static dev.chibifs.store.s3.S3Storage.FETCHES;
import static dev.chibifs.store.s3.S3Storage.SNAPSHOT_TRIES;

/**
 * Files' content coming down from S3 into the cache: one GET per file however many opens want it
 * at once ({@code Node.fetching}, which a listing's ask for a small file's attributes joins), a
 * large file read in ranges as they arrive ({@link #streamingHandle}), and content kept only if
 * the node did not change while it came ({@code Node.gen}). S3 is asked outside the store's
 * monitor; the overlay is read and changed under it.
 */
final class Fetches {

    private static final Logger LOG = LoggerFactory.getLogger(Fetches.class);

    private final S3Storage store;
    private final Bucket bucket;

    Fetches(S3Storage store, Bucket bucket) {
        this.store = store;
        this.bucket = bucket;
    }

    /**
     * The bytes the fetches under way will take on the cache disk, each counted whole from its start
     * to its end (what it wrote already is counted twice, with the disk's free space: a file the
     * cache could take goes in ranges rather than one it could not fails). Six opens at once of
     * files that each fitted the room but not together each began a download that failed ENOSPC.
     * Guarded by the store's monitor.
     */
    private final Map<CompletableFuture<Void>, Long> reserved = new IdentityHashMap<>();
    private long reservedBytes;

    /** {@link #reserved} in all; under the store's monitor. */
    long reservedBytes() {
        return reservedBytes;
    }

    /** Fetch {@code mine} of {@code bytes} begins; under the store's monitor. */
    private void reserve(CompletableFuture<Void> mine, long bytes) {
        reserved.put(mine, bytes);
        reservedBytes += bytes;
    }

    /** Makes sure the data file of {@code n} holds its content, fetching it from S3 when not. */
    void fetch(Node n) throws IOException {
        fetch(n, true);
    }

    /**
     * {@link #fetch(Node)}; {@code sayFull}: where the cache disk has no room for it and none can be
     * made, that is said in the log and in {@link S3Storage#failing} (false: a read-only open, which
     * then reads the file in ranges, {@link #rangedHandle(Node, VfsPath, boolean)}, and nothing failed).
     */
    void fetch(Node n, boolean sayFull) throws IOException {
        // whether the content here is still the object's: asked once more where the ask this one
        // joined began before the doubt (a HEAD S3 does not answer leaves it, and the content here)
        for (int ask = 0; ask < 2 && store.inDoubt(n); ask++) {
            store.listings.learnAttributes(n, false);
        }
        int roomTries = 0;
        for (int attempt = 0; ; attempt++) {
            VfsPath p;
            long gen;
            long expected;
            CompletableFuture<Void> underway;
            CompletableFuture<Void> mine = null;
            synchronized (store) {
                if (n.dir) {
                    throw new IsDirectoryException(String.valueOf(n.path));
                }
                if (!n.dirty) {
                    n.lastUsed = store.ticks(); // an upload's fetch of its own content is no use of it
                }
                if (n.cached) {
                    return;
                }
                p = n.path;
                gen = n.gen;
                expected = n.size;
                if (p == null) {
                    throw new NoSuchFileException("(removed)");
                }
                boolean small = store.listings.fetchedWithAttributes(n);
                underway = n.fetching != null ? n.fetching : small ? n.askingAttributes : null;
                if (underway == null) {
                    mine = new CompletableFuture<>();
                    n.fetching = mine;
                    reserve(mine, expected);
                    if (small && !n.attributesKnown) {
                        // a listing's ask for its attributes (learnAttributes) waits for this GET, which brings them
                        n.askingAttributes = mine;
                    }
                }
            }
            if (underway != null) {
                // another open's GET of this file, or a listing's of this small file, is under way: its
                // content is ours (the opens of a large file another host made download it once)
                underway.join();
                continue;
            }
            try {
                if (attempt == 0) {
                    store.roomFor(expected, p.toString());
                }
                if (fetched(n, p, gen, expected)) {
                    return;
                }
            } catch (IOException e) {
                // a full cache disk: content already on S3 leaves it, and the download is asked again
                if (Errors.errno(e) != Linux.ENOSPC || !store.makeRoom(expected, p.toString(), sayFull)
                        || ++roomTries >= S3Storage.ROOM_TRIES) {
                    throw e;
                }
                continue;
            } finally {
                fetchEnded(n, mine);
            }
            if (attempt >= SNAPSHOT_TRIES) {
                throw ErrnoException.of(Linux.EBUSY, p.toString(), "changed while it was fetched");
            }
        }
    }

    /** The fetch {@code mine} of {@code n} has ended: the opens and asks that joined it look again. */
    private void fetchEnded(Node n, CompletableFuture<Void> mine) {
        synchronized (store) {
            Long bytes = reserved.remove(mine);
            if (bytes != null) {
                reservedBytes -= bytes;
            }
            if (n.fetching == mine) {
                n.fetching = null;
            }
        }
        store.listings.askEnded(n, mine);
    }

    /**
     * A read-only handle of a file the cache cannot take ({@link S3Storage#cacheCanTake}: larger than
     * its disk, or than the room it has and could make), which reads it from S3 in ranges
     * into memory ({@link RangeReads}), the version this open sees (by its ETag; s3proxy's file
     * backend lists none for an object put there by hand, and then by its size); null where the file fits the
     * cache, is cached, or has changes here (the open then goes on as any). Its read failed ENOSPC at
     * once: a 30 MiB object could not be read through a 20 MiB tmpfs cache.
     */
    ObjectHandle rangedHandle(Node n, VfsPath path) throws IOException {
        return rangedHandle(n, path, false);
    }

    /**
     * {@link #rangedHandle(Node, VfsPath)}; {@code noRoom}: whatever {@link S3Storage#cacheCanTake}
     * says, for an open whose fetch found no room all the same (opens at once, each asked before the
     * others' downloads began).
     */
    ObjectHandle rangedHandle(Node n, VfsPath path, boolean noRoom) throws IOException {
        for (int ask = 0; ask < 2 && store.inDoubt(n); ask++) {
            store.listings.learnAttributes(n, false); // the version read is the one S3 has (see fetch)
        }
        long size;
        synchronized (store) {
            if (n.dir || n.link || n.cached || n.dirty || n.download != null) {
                return null;
            }
            size = n.size;
        }
        if (!noRoom && store.cacheCanTake(size)) {
            return null;
        }
        synchronized (store) {
            if (store.overlay.nodes.get(path) != n || n.cached || n.dirty || n.size != size) {
                return null; // changed meanwhile: the open looks again, as any
            }
            sayReadInRanges(path, size);
            return new ObjectHandle(store, n, store.rangeReads.open(store.objectKey(path, n), n.remoteEtag, size));
        }
    }

    /** Says that {@code path}, {@code size} bytes, is read in ranges: once, not at each of its opens. Under the store's monitor. */
    void sayReadInRanges(VfsPath path, long size) {
        if (!path.equals(store.tooLargeRead)) {
            store.tooLargeRead = path;
            LOG.info("S3 store {}: {} ({} MiB) is more than its cache directory has room for: read from S3 in ranges,"
                    + " without the cache", store.spec, path, size >> 20);
        }
    }

    /**
     * A read-only handle of a file too large for one GET that is not cached yet, reading its download
     * as the ranges arrive (the first such open starts it; writers and plain fetches wait for it
     * whole); null where the file is cached, small, changed here or already being fetched whole, or
     * its first range failed: the open then fetches it as any.
     */
    ObjectHandle streamingHandle(Node n, VfsPath path) throws IOException {
        CompletableFuture<Void> mine = new CompletableFuture<>();
        long gen;
        long expected;
        Path file;
        synchronized (store) {
            if (store.overlay.nodes.get(path) != n || n.dir || n.link || n.cached || n.dirty || !bucket.inParts(n.size)
                    || n.former != null) { // most likely only its end is new: fetched, that alone comes
                return null;
            }
            if (n.download != null) {
                return downloadHandle(n, n.download);
            }
            if (n.fetching != null) {
                return null;
            }
            n.fetching = mine;
            reserve(mine, n.size);
            gen = n.gen;
            expected = n.size;
            file = store.dataDir.resolve(n.ino + ".fetch" + FETCHES.incrementAndGet());
        }
        Bucket.Download d;
        try {
            // its ranges make room as they come (Bucket.roomFor); none is asked for a file the disk cannot hold
            store.requireFits(expected, path.toString());
            d = bucket.download(store.objectKey(path, n), file, expected);
        } catch (IOException | RuntimeException e) {
            LOG.debug("S3 store {}: {} not downloaded in ranges: {}", store.spec, path, e.getMessage());
            d = null;
        }
        if (d == null) {
            Files.deleteIfExists(file);
            fetchEnded(n, mine);
            return null;
        }
        Bucket.Download download = d;
        try {
            synchronized (store) {
                if (!n.cached && n.gen == gen) {
                    n.size = d.head().size(); // the object's now, should it have changed since it was listed
                }
                // before anything can keep (move) or remove the file: it is opened here first
                n.download = d;
                return downloadHandle(n, d);
            }
        } finally {
            d.whenEnded(failure -> downloadEnded(n, download, gen, mine, failure));
        }
    }

    /**
     * A read-only handle of the file download {@code d} fills; under the monitor. Open to write all
     * the same: once the download has ended, the handle adds to it what another host appends
     * ({@link ObjectHandle#follow}), by then to its own copy, the cache having dropped the file.
     */
    private ObjectHandle downloadHandle(Node n, Bucket.Download d) throws IOException {
        return new ObjectHandle(store, n, CacheFile.openForWriting(d.file()), d);
    }

    /** The download of {@code n} has ended: its content is kept unless it failed or the node changed since generation {@code gen}. */
    private void downloadEnded(Node n, Bucket.Download d, long gen, CompletableFuture<Void> mine,
                               IOException failure) {
        try {
            synchronized (store) {
                n.download = null;
                if (failure == null && n.path != null && n.gen == gen && !n.cached) {
                    keepFetched(n, d.file(), d.head());
                }
            }
        } catch (IOException | RuntimeException e) {
            failure = e instanceof IOException io ? io : new IOException(e);
        } finally {
            try {
                Files.deleteIfExists(d.file());
            } catch (IOException e) {
                LOG.debug("S3 store {}: {} left in the cache: {}", store.spec, d.file(), e.getMessage());
            }
            fetchEnded(n, mine);
        }
        if (failure != null && Errors.errno(failure) == Linux.ENOSPC) {
            // said once, with the cache directory and how full it is, by the room that could not be made
            LOG.debug("S3 store {}: download of {} failed: {}", store.spec, n.path, failure.getMessage());
        } else if (failure != null) {
            LOG.warn("S3 store {}: download of {} failed: {}", store.spec, n.path, failure.getMessage());
        }
    }

    /**
     * One download of {@code n} at {@code p}, thought {@code expected} bytes, its content kept unless the
     * node changed meanwhile from generation {@code gen} (false).
     */
    private boolean fetched(Node n, VfsPath p, long gen, long expected) throws IOException {
        Path part = store.dataDir.resolve(n.ino + ".fetch" + FETCHES.incrementAndGet());
        String key = store.objectKey(p, n);
        Bucket.Head h = fromFormer(n, key, part);
        if (h == null) {
            h = bucket.get(key, part, expected);
        }
        synchronized (store) {
            try {
                if (h == null) {
                    // gone from S3; what this host had of it was only attributes
                    if (n.path != null && n.gen == gen) {
                        store.journal.gone(n.path);
                        store.overlay.detach(n);
                        store.journal.commit();
                    }
                    throw new NoSuchFileException(p.toString());
                }
                if (n.path != null && n.gen == gen && !n.cached) {
                    keepFetched(n, part, h);
                    return true;
                }
                return n.cached;
            } finally {
                Files.deleteIfExists(part);
            }
        }
    }

    /**
     * The object {@code key} of {@code n} written to {@code part} with only its bytes past {@code n}'s
     * former content ({@link Node#former}) downloaded, where it is that content with bytes added (a
     * log another host appended to), which the SHA-256 in its metadata confirms: a GET of the range
     * instead of a GET of the whole, and a HEAD before it where this host has not heard of the version.
     * Null where not, or no former content is kept: the caller downloads it whole.
     */
    private Bucket.Head fromFormer(Node n, String key, Path part) throws IOException {
        S3Storage.Former former;
        Version heard;
        synchronized (store) {
            former = n.former;
            if (former == null) {
                return null;
            }
            // the version this host last heard of, its SHA-256 with it (a stat's HEAD, a >>'s lookup)
            heard = n.sha != null && n.shaGen == n.gen && n.remoteEtag != null && !n.dirty && n.size > former.size()
                    ? new Version(n.remoteEtag, n.size, n.sha) : null;
        }
        try (CacheFile mine = CacheFile.openForReading(former.file()); CacheFile out = CacheFile.replace(part)) {
            Bucket.Head h;
            boolean continues;
            if (heard != null) {
                // its new bytes alone, of that version: the answer says what a HEAD would, so none is
                // asked (a >> to a stale log cost two); another version since fails it, and all comes
                h = bucket.getPart(key, heard.etag(), former.size(), heard.size() - former.size(), out);
                continues = S3Storage.hashesTo(heard.sha(), mine, former.size(), out, heard.size());
            } else {
                h = bucket.head(key);
                String sha = h == null ? null : h.meta().get(S3Storage.META_SHA);
                continues = sha != null && h.size() >= former.size()
                        && store.continues(key, h.etag(), h.size(), sha, mine, former.size(), out);
            }
            if (continues) {
                out.writeAll(mine.range(0, former.size()), 0);
                return h;
            }
        } catch (IOException e) {
            // another version came meanwhile, or the copy went: the whole object, as without one
            LOG.debug("S3 store {}: {} not fetched from its new bytes alone: {}", store.spec, key, e.getMessage());
        }
        Files.deleteIfExists(part);
        return null;
    }

    /** A version of an object: its ETag, size and SHA-256. */
    private record Version(String etag, long size, String sha) {
    }

    /** The content GET {@code h} brought to {@code part} is now {@code n}'s, with its attributes; under the monitor. */
    void keepFetched(Node n, Path part, Bucket.Head h) throws IOException {
        Files.move(part, store.dataFile(n.ino), StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        store.dropFormer(n);
        n.cached = true;
        n.lastUsed = store.ticks();
        n.remoteEtag = h.etag();
        n.size = h.size();
        if (!n.dirty) {
            store.fromMeta(n, h);
        }
        // else only its attributes changed here (chmod, touch, setfattr of a file not fetched yet,
        // and this is the fetch of its upload): the object's are older, and would undo the change
        n.syncedSeq = store.overlay.seq;
        store.journal.put(n);
        store.journal.commit();
    }
}
