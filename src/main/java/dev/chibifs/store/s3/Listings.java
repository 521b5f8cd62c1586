package dev.chibifs.store.s3;

import dev.chibifs.path.InvalidVfsPathException;
import dev.chibifs.path.VfsPath;
import dev.chibifs.store.s3.Overlay.Node;
import dev.chibifs.store.s3.Overlay.Tomb;

import static dev.chibifs.store.s3.S3Storage.DIR_MODE;
import static dev.chibifs.store.s3.S3Storage.DONE_TOMB_MILLIS;
import static dev.chibifs.store.s3.S3Storage.FETCHES;
import static dev.chibifs.store.s3.S3Storage.FILE_MODE;
import static dev.chibifs.store.s3.S3Storage.LINK_SUFFIX;
import static dev.chibifs.store.s3.S3Storage.META_SHA;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;

/**
 * What S3 says of an {@link S3Storage}'s directories, merged into its overlay: what another host
 * made, changed or removed shows here from the next listing.
 *
 * <p>A directory is listed again once its last listing is older than the validity
 * ({@link #refresh}); until then its answers stand, and the kernel may keep them as long
 * ({@link #answersHeld}). A listing is merged with the local layer winning ({@link #apply}): a name
 * changed or made here and not yet up stays as it is here, a tombstone keeps a name deleted here from
 * coming back, and a name is dropped only on S3's word, asked again when a listing may have been cut
 * short ({@link #confirmMissing}). A listing carries no metadata, so the files it shows are asked
 * their execute bits and mtime (or, small ones, fetched whole) in the background
 * ({@link #learnAttributes}), which a stat waits for.
 *
 * <p>Locking: requests to S3 are made without the store's monitor; what they answer is merged under
 * it, checked against the store's sequence of changes ({@code startSeq}: a listing that began before
 * a change made here does not undo it).
 */
final class Listings {

    /** Logged as the store, whose lines they are. */
    private static final Logger LOG = LoggerFactory.getLogger(S3Storage.class);

    /** Up to this many names missing from a listing are asked after one by one; more, by a second listing. */
    private static final int CONFIRM_ONE_BY_ONE = 16;
    /** How many HEADs ask at once for the attributes of files a listing showed (see {@link #learnAttributes}). */
    private static final int ATTRIBUTE_ASKERS = 8;
    private final java.util.concurrent.ExecutorService attributeAskers = Bucket.daemonThreads(ATTRIBUTE_ASKERS, "s3-attributes");
    /** Files a directory's listing placed, whose attributes its refresh asks ahead of a stat ({@link #askWantedAttributes}). */
    private final List<Node> attributesWanted = new ArrayList<>();
    /**
     * When each directory was last listed (the store's ticker at the request). Under the store's monitor.
     * Kept past the directory: its removal or rename, here or by another host, leaves the entry,
     * which {@link #listed} sweeps out once the map has doubled since its last sweep (an S3 soak
     * grew it by every directory made and removed, about 100 a round, for good).
     */
    private final Map<VfsPath, Long> listedAt = new HashMap<>();
    /**
     * When each directory's own listing last showed something below it (its marker, a file, a
     * subdirectory), on the clock of {@link #listedAt}: S3 had the directory then, so a lookup of it
     * within the validity needs no listing of its parent ({@link #standsUnlisted}). Under the store's
     * monitor; swept with {@link #listedAt}, and emptied whenever answers are let go of.
     */
    private final Map<VfsPath, Long> shownAt = new HashMap<>();
    /**
     * The listings under way, by directory: a question about a directory being listed waits for
     * that listing rather than making its own (git's preload threads, or the lookups of one `ls`,
     * in a directory whose validity just ran out made one LIST each). Under the store's monitor.
     */
    private final Map<VfsPath, Underway> underway = new HashMap<>();
    /**
     * How many times answers were let go of ({@link #forget}, {@link #expireListing},
     * {@link #expireAll}): a listing begun before that may miss the change it was let go for
     * (`chibifs sync` right after another host wrote), so it is not waited for. Under the monitor.
     */
    private long letGo;

    /** A listing under way, and the {@link #letGo} count when it began. */
    private record Underway(java.util.concurrent.CompletableFuture<Void> done, long letGo) {
    }

    /** How big {@link #listedAt} was after its last sweep, at least {@link #SWEPT_AT_LEAST}. */
    private int sweptAt = SWEPT_AT_LEAST;
    private static final int SWEPT_AT_LEAST = 1024;

    private final S3Storage store;
    private final S3Spec spec;
    private final Bucket bucket;
    private final S3Options options;

    Listings(S3Storage store, S3Spec spec, Bucket bucket, S3Options options) {
        this.store = store;
        this.spec = spec;
        this.bucket = bucket;
        this.options = options;
    }

    /** Stops the threads that ask attributes (the store is closing). */
    void stop() {
        attributeAskers.shutdownNow();
    }

    /**
     * What is left of the validity of {@code directory}'s last listing; zero for one not listed, or
     * listed too long ago. Under the store's monitor.
     */
    Duration answersHeld(VfsPath directory) {
        Long at = listedAt.get(directory);
        long left = at == null ? 0 : at + options.validity().toMillis() - store.ticks();
        return left > 0 ? Duration.ofMillis(left) : Duration.ZERO;
    }

    /**
     * A directory just made here: its parent's listing showed no such prefix, so S3 had nothing below
     * it then, and that listing stands for the new directory's own until it expires. Under the store's
     * monitor.
     */
    void listedAsItsParent(VfsPath made) {
        Long parentListed = listedAt.get(made.parent());
        if (parentListed != null) {
            listed(made, parentListed);
        }
    }

    /**
     * Directory {@code dir} was listed at {@code at}. Entries of directories the store no longer has
     * go when the map has doubled since it was last swept: amortized, one lookup per entry added.
     * Under the store's monitor.
     */
    private void listed(VfsPath dir, long at) {
        listedAt.put(dir, at);
        if (listedAt.size() >= 2 * sweptAt) {
            listedAt.keySet().removeIf(d -> {
                Node n = store.overlay.nodes.get(d);
                return n == null || !n.dir;
            });
            shownAt.keySet().retainAll(listedAt.keySet());
            sweptAt = Math.max(SWEPT_AT_LEAST, listedAt.size());
        }
    }

    /**
     * Whether directory node {@code n} at {@code p} is known to be on S3 without listing its parent:
     * a listing younger than the validity showed something below it (its own, or one of a directory
     * below it), or S3 answered this host's upload of a key below it since. Another host's removal
     * of it before then would have left that listing empty (or the upload put a key below it again),
     * and one after it need not show before the validity runs out. Each path walk to a directory
     * looked into at least once a validity (git's .git/objects/xx, a build's output) otherwise listed
     * every directory above it each validity as the kernel looked the names up again: /shared, the
     * repository, .git. Under the store's monitor.
     */
    boolean standsUnlisted(VfsPath p, Node n) {
        Long at = shownAt.get(p);
        return n != null && n.dir && at != null && store.ticks() - at < options.validity().toMillis();
    }

    /**
     * S3 answered this host's upload of {@code n} (a file, a link, a directory's marker) just now:
     * every directory above it (a marker's own too) had a key below it then. Under the store's monitor.
     */
    void uploadAnswered(Node n) {
        if (n.path != null) {
            somethingBelow(n.dir ? n.path : n.path.parent(), store.ticks());
        }
    }

    /** S3 had a key below {@code dir}, so below each directory above it too, at {@code at}. Under the monitor. */
    private void somethingBelow(VfsPath dir, long at) {
        for (VfsPath d = dir; ; d = d.parent()) {
            shownAt.merge(d, at, Math::max);
            if (d.isRoot()) {
                return;
            }
        }
    }

    /** How many directories' listings are remembered (tests). */
    int remembered() {
        synchronized (store) {
            return listedAt.size();
        }
    }

    /** The next question about {@code dir} lists it again, whatever its validity; under the store's monitor. */
    void forget(VfsPath dir) {
        listedAt.remove(dir);
        shownAt.clear();
        letGo++;
    }

    /**
     * Lists directory {@code dir} from S3 unless its last listing is younger than the validity, or
     * waits for the listing of it already under way.
     */
    void refresh(VfsPath dir) throws IOException {
        while (true) {
            long now = store.ticks();
            long startSeq;
            Underway mine = null;
            java.util.concurrent.CompletableFuture<Void> theirs = null;
            synchronized (store) {
                Long at = listedAt.get(dir);
                if (at != null && now - at < options.validity().toMillis()) {
                    return;
                }
                Underway u = underway.get(dir);
                if (u != null && u.letGo() == letGo) {
                    theirs = u.done();
                } else {
                    mine = new Underway(new java.util.concurrent.CompletableFuture<>(), letGo);
                    underway.put(dir, mine);
                }
                startSeq = store.overlay.seq;
            }
            if (theirs != null) {
                if (awaitListing(theirs)) {
                    return;
                }
                continue;
            }
            try {
                list(dir, now, startSeq);
                mine.done().complete(null);
                return;
            } catch (IOException | RuntimeException | Error e) {
                mine.done().completeExceptionally(e);
                throw e;
            } finally {
                synchronized (store) {
                    underway.remove(dir, mine);
                }
            }
        }
    }

    /**
     * Waits for another thread's listing, and fails as it failed; false where its thread was
     * interrupted (a process killed while it listed), which says nothing of S3: list again.
     */
    private static boolean awaitListing(java.util.concurrent.CompletableFuture<Void> listing) throws IOException {
        try {
            listing.get();
            return true;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new java.io.InterruptedIOException("waiting for a listing: interrupted");
        } catch (java.util.concurrent.ExecutionException e) {
            Throwable cause = e.getCause();
            if (cause instanceof java.io.InterruptedIOException) {
                return false;
            } else if (cause instanceof IOException io) {
                throw io;
            } else if (cause instanceof RuntimeException r) {
                throw r;
            } else if (cause instanceof Error err) {
                throw err;
            }
            throw new IOException(cause);
        }
    }

    /** Lists directory {@code dir} from S3, asked at {@code now}, and merges what it says as of {@code startSeq}. */
    private void list(VfsPath dir, long now, long startSeq) throws IOException {
        Bucket.Level level;
        try {
            level = bucket.list(store.dirKey(dir), true);
        } catch (IOException e) {
            synchronized (store) {
                if (listedAt.containsKey(dir) || store.journal.namedAtOpen(dir)) {
                    // S3 unreachable: what was last seen stands (logged once per outage by the
                    // flusher); after a restart, what the journal kept of the directory: its files
                    // cached or not yet uploaded are read and written on, others show once S3 answers
                    store.writeBack.noteOutage(e);
                    return;
                }
            }
            throw e;
        }
        Set<String> stillThere = confirmMissing(dir, level, startSeq);
        synchronized (store) {
            apply(dir, level, startSeq, stillThere);
            // believed from its answer, not its request: an S3 answering in more than the validity
            // (1.5 s a request against 1 s) gave listings stale on arrival, each lookup listed its
            // parents again, and an `ls -l` of three files took 40 s
            long answered = Math.max(now, store.ticks());
            listed(dir, answered);
            if (level.objects().isEmpty() && level.prefixes().isEmpty()) {
                shownAt.remove(dir);
            } else {
                somethingBelow(dir, answered);
            }
            store.journal.commit();
            askWantedAttributes();
        }
        store.writeBack.recovered();
    }

    /**
     * Every listing expires now ({@link S3Storage#dropHeldAnswers}); what was listed still serves
     * while S3 is away. Under the store's monitor.
     */
    void expireAll() {
        long expired = store.ticks() - options.validity().toMillis();
        listedAt.replaceAll((dir, at) -> Math.min(at, expired));
        shownAt.clear();
        letGo++;
    }

    /**
     * The directory changed here other than through a request: its answers are held no longer and
     * the next question lists it again; what was listed still serves while S3 is away.
     */
    void expireListing(VfsPath dir) {
        listedAt.computeIfPresent(dir, (d, at) -> at - options.validity().toMillis());
        shownAt.clear();
        letGo++;
    }

    /**
     * Asks, {@link #ATTRIBUTE_ASKERS} at a time, for the attributes of the files listings showed
     * since the last call, so that a stat or a READDIRPLUS of a directory another host filled waits
     * for about one HEAD, not one per file in turn. Under the monitor.
     */
    private void askWantedAttributes() {
        if (store.closed) {
            attributesWanted.clear();
            return;
        }
        for (Node n : attributesWanted) {
            attributeAskers.execute(() -> learnAttributes(n, true));
        }
        attributesWanted.clear();
    }

    /**
     * Makes the attributes of {@code n} its object's own: its execute bits and mtime are in the object's
     * metadata, which a listing does not give, and a file shown without them would not run ({@code
     * EACCES}) and would look changed to {@code git}, {@code make} or {@code rsync}. One HEAD, or the
     * answer of the one already under way; with {@code withContent}, a file of at most
     * {@link S3Options#prefetchBelow} bytes not yet here is fetched instead (a GET), its content kept as an
     * open's fetch keeps it. Where S3 does not answer, or the object changed since the listing, what
     * the listing said stands (the next stat asks again).
     */
    void learnAttributes(Node n, boolean withContent) {
        java.util.concurrent.CompletableFuture<Void> theirs;
        java.util.concurrent.CompletableFuture<Void> mine = new java.util.concurrent.CompletableFuture<>();
        VfsPath p;
        String etag;
        long gen;
        Bucket.Listed doubted;
        boolean fetching;
        synchronized (store) {
            if ((n.attributesKnown && n.doubted == null) || n.path == null || store.closed) {
                return;
            }
            theirs = n.askingAttributes;
            if (theirs == null) {
                n.askingAttributes = mine;
            }
            p = n.path;
            etag = n.remoteEtag;
            gen = n.gen;
            doubted = n.doubted;
            fetching = withContent && fetchedWithAttributes(n);
        }
        if (theirs != null) {
            theirs.join(); // completed normally, whatever the HEAD said
            return;
        }
        Path part = fetching ? store.dataDir.resolve(n.ino + ".fetch" + FETCHES.incrementAndGet()) : null;
        try {
            Bucket.Head h = fetching ? bucket.get(store.objectKey(p, n), part) : bucket.head(store.objectKey(p, n));
            synchronized (store) {
                if (doubted != null) {
                    if (n.doubted == doubted && p.equals(n.path)) {
                        settleDoubt(n, doubted, h);
                    }
                } else if (h != null && p.equals(n.path) && !n.attributesKnown && etag != null
                        && etag.equals(n.remoteEtag) && etag.equals(h.etag())) {
                    if (fetching && n.gen == gen && fetchedWithAttributes(n)) {
                        store.fetches.keepFetched(n, part, h);
                    } else {
                        store.fromMeta(n, h);
                    }
                }
            }
        } catch (IOException | RuntimeException e) {
            LOG.debug("S3 store {}: attributes of {} not asked: {}", spec, p, e.getMessage());
        } finally {
            try {
                if (part != null) {
                    Files.deleteIfExists(part);
                }
            } catch (IOException e) {
                LOG.debug("S3 store {}: {} left in the cache: {}", spec, part, e.getMessage());
            }
            askEnded(n, mine);
        }
    }

    /**
     * What the HEAD {@code h} says of {@code n}'s object, {@code doubted} in a listing: the content
     * cached here, with the object's attributes, where its SHA-256 is this content's; else the object's
     * new version, fetched at the next open. Under the monitor.
     */
    private void settleDoubt(Node n, Bucket.Listed doubted, Bucket.Head h) throws IOException {
        n.doubted = null;
        Bucket.Listed now = h == null ? doubted : new Bucket.Listed(doubted.key(), h.size(), h.modified(), etagOr(h, doubted.etag()));
        if (h != null && n.cached && now.etag() != null && now.etag().equals(doubted.etag()) && h.size() == n.size
                && Objects.equals(n.sha, h.meta().get(META_SHA))) {
            n.remoteEtag = now.etag();
            n.listedModified = doubted.modified();
            n.uploadedAt = null;
            if (!n.dirty) {
                store.fromMeta(n, h);
            }
        } else if (n.dirty) {
            // its attributes changed here meanwhile (a change of content fetches first, settling
            // this): they stay, and its upload fetches the new content
            store.dropContent(n);
            n.remoteEtag = now.etag();
            n.size = now.size();
        } else {
            fromListing(n, now, n.syncedSeq);
            n.gen++;
            if (h != null) {
                store.fromMeta(n, h); // after the new generation: the SHA-256 it gives is this version's
            }
        }
        store.journal.put(n);
        store.journal.commit();
    }

    /** The ask {@code mine} for {@code n}'s attributes has ended: those who joined it look again. */
    void askEnded(Node n, java.util.concurrent.CompletableFuture<Void> mine) {
        synchronized (store) {
            if (n.askingAttributes == mine) {
                n.askingAttributes = null;
            }
        }
        mine.complete(null);
    }

    /**
     * Whether a HEAD for {@code n}'s attributes had better be a GET of it all (see {@link #learnAttributes}):
     * its content comes with its attributes for about the same round trip, and its first open then asks
     * S3 nothing (an agent reading the notes another host left waits for no request per file). Under
     * the monitor.
     */
    boolean fetchedWithAttributes(Node n) {
        // a link's content is its target: a listing of node_modules/.bin or a venv's bin reads them all
        return !n.dir && !n.cached && !n.dirty && n.size <= options.prefetchBelow();
    }

    /**
     * The names known here that {@code level} does not show but S3 still has. A name is dropped only
     * on S3's word, and a listing is not always the whole word: a server may end one short while
     * deletes run in the same prefix (s3proxy's file system store does). Each missing name is asked
     * once more -- a HEAD for a file, one key below it for a directory -- or, when many are missing
     * (another host removed a tree), the directory is listed again: when both listings show the same
     * names, the missing ones go; when they differ, none does until a later listing.
     */
    private Set<String> confirmMissing(VfsPath dir, Bucket.Level level, long startSeq) throws IOException {
        List<VfsPath> missing = new ArrayList<>();
        synchronized (store) {
            Set<String> listed = names(dir, level);
            for (String name : store.overlay.children(dir)) {
                Node n = store.overlay.nodes.get(dir.child(name));
                if (!listed.contains(name) && n != null && removedElsewhere(n, startSeq)) {
                    missing.add(n.path);
                }
            }
        }
        Set<String> stillThere = new TreeSet<>();
        if (missing.isEmpty()) {
            return stillThere;
        }
        if (missing.size() > CONFIRM_ONE_BY_ONE) {
            Set<String> first = names(dir, level);
            Set<String> again = names(dir, bucket.list(store.dirKey(dir), true));
            // two listings that disagree were cut short or raced a change: drop nothing on their word now
            boolean agree = again.equals(first);
            for (VfsPath p : missing) {
                if (!agree || again.contains(p.fileName())) {
                    stillThere.add(p.fileName());
                }
            }
            return stillThere;
        }
        for (VfsPath p : missing) {
            Node n;
            synchronized (store) {
                n = store.overlay.nodes.get(p);
            }
            boolean there = n != null && (n.dir ? bucket.anyUnder(store.dirKey(p)) : bucket.head(store.objectKey(p, n)) != null);
            if (there) {
                stillThere.add(p.fileName());
            }
        }
        return stillThere;
    }

    /** The names a listing of {@code dir} shows, files, links and directories. */
    private Set<String> names(VfsPath dir, Bucket.Level level) {
        String prefix = store.dirKey(dir);
        Set<String> out = new java.util.HashSet<>();
        for (Bucket.Listed o : level.objects()) {
            String name = o.key().substring(prefix.length());
            String linked = store.linkName(name);
            out.add(linked == null ? name : linked);
        }
        for (String pre : level.prefixes()) {
            out.add(pre.substring(prefix.length(), pre.length() - 1));
        }
        return out;
    }

    /** Merges a listing of {@code dir} into the overlay: the local layer wins over what S3 says. */
    private void apply(VfsPath dir, Bucket.Level level, long startSeq, Set<String> stillThere) throws IOException {
        Node d = store.overlay.nodes.get(dir);
        if (d == null || !d.dir) {
            return;
        }
        String prefix = store.dirKey(dir);
        Set<String> seen = new TreeSet<>();
        Set<String> dirsListed = new HashSet<>();
        for (String pre : level.prefixes()) {
            dirsListed.add(pre.substring(prefix.length(), pre.length() - 1));
        }
        Set<String> filesListed = new HashSet<>();
        List<Bucket.Listed> links = new ArrayList<>();
        for (Bucket.Listed o : level.objects()) {
            String name = o.key().substring(prefix.length());
            if (name.isEmpty()) {
                d.marker = d.dirOnRemote = true;
            } else if (store.linkName(name) != null) {
                links.add(o);
            } else {
                filesListed.add(name);
                VfsPath p = dirsListed.contains(name) ? null : childOrNull(dir, name);
                Node n = p == null ? null : store.overlay.nodes.get(p);
                if (n != null && n.dir && removedElsewhere(n, startSeq)) {
                    // another host replaced the directory with a file (rmdir d; echo > d): the file
                    // shows; a directory kept here stayed for good, and what was put in it went up
                    // under a file's name
                    dropSubtree(n);
                }
                placeListed(dir, name, o, false, startSeq, seen);
            }
        }
        for (String pre : level.prefixes()) {
            String name = pre.substring(prefix.length(), pre.length() - 1);
            VfsPath p = childOrNull(dir, name);
            if (p == null || buried(pre, startSeq)) {
                continue;
            }
            Node n = store.overlay.nodes.get(p);
            if (n == null && (store.overlay.inflight.contains(pre) || onlyWhatThisHostRemoves(pre, startSeq))) {
                continue;
            }
            seen.add(name);
            if (n != null && !n.dir && (n.link || !filesListed.contains(name)) && removedElsewhere(n, startSeq)) {
                // a file here another host replaced with a directory, or a link here beside another
                // host's directory of the name (both objects stay: a link gives way to a file or
                // directory of its name, below, as on every host that lists them): the directory
                // shows; keeping the node here had this host show its own version for good
                dropSubtree(n);
                n = null;
            }
            if (n == null) {
                n = store.overlay.newNode(true, DIR_MODE);
                n.dirOnRemote = true;
                n.syncedSeq = startSeq;
                store.overlay.attach(p, n);
            } else if (n.dir) {
                n.dirOnRemote = true;
            }
        }
        for (Bucket.Listed o : links) {
            String name = store.linkName(o.key().substring(prefix.length()));
            if (!seen.contains(name)) { // a file or directory of the same name (put there by another tool) wins
                placeListed(dir, name, o, true, startSeq, seen);
            }
        }
        for (String name : List.copyOf(store.overlay.children(dir))) {
            if (seen.contains(name) || stillThere.contains(name)) {
                continue;
            }
            Node n = store.overlay.nodes.get(dir.child(name));
            if (n != null && removedElsewhere(n, startSeq)) {
                dropSubtree(n);
            }
        }
        long now = store.ticks();
        store.overlay.tombs.values().removeIf(t -> !t.pending && (t.doneSeq < startSeq || now - t.doneAt > DONE_TOMB_MILLIS));
    }

    /** Forgets {@code n} and all below it, gone from S3 with nothing of it pending here. Under the store's monitor. */
    private void dropSubtree(Node n) {
        for (Node gone : store.overlay.subtree(n.path)) {
            store.journal.gone(gone.path);
            store.overlay.detach(gone);
        }
    }

    /** Merges one listed object, a file's or a link's, into the overlay as the child {@code name} of {@code dir}. */
    private void placeListed(VfsPath dir, String name, Bucket.Listed o, boolean link, long startSeq, Set<String> seen) {
        VfsPath p = childOrNull(dir, name);
        if (p == null || buried(o.key(), startSeq)) {
            return;
        }
        Node n = store.overlay.nodes.get(p);
        if (n == null && store.overlay.inflight.contains(o.key())) {
            return;
        }
        seen.add(name);
        if (n != null) {
            n.listedEtag = o.etag();
        }
        boolean settled = n != null && !n.dir && !n.dirty && n.writers == 0 && n.syncedSeq <= startSeq;
        if (settled && (n.link != link || (link && !Objects.equals(n.remoteEtag, o.etag())) || replacedShorter(n, o))) {
            // another host made the name a link, a file, or another link: a new node, as the kernel
            // keeps a link's target by node (CACHE_SYMLINKS); or put a shorter file there
            store.journal.gone(p);
            store.overlay.detach(n);
            n = null;
        }
        if (n == null) {
            n = link ? store.overlay.newLink() : store.overlay.newNode(false, FILE_MODE);
            fromListing(n, o, startSeq);
            store.overlay.attach(p, n);
            attributesWanted.add(n);
        } else if (settled && n.link == link && !Objects.equals(n.remoteEtag, o.etag())) {
            if (!link && n.cached && n.sha != null && n.shaGen == n.gen && n.size == o.size()) {
                // maybe the same content: the HEAD that asks its attributes tells (learnAttributes)
                n.doubted = o;
                n.attributesKnown = false;
            } else {
                // changed by another host: new attributes now, the new content from the next open
                fromListing(n, o, startSeq);
                n.gen++;
                store.journal.put(n);
            }
            attributesWanted.add(n);
        } else if (settled) {
            if (putAgainElsewhere(n, o.modified())) {
                // put again by another host with the same content: its attributes changed there (a
                // chmod +x, a touch, a setfattr); the content here is still the object's. A link too:
                // made again with the same target (rm and ln -s, a venv made over an old one) or a
                // touch -h gives it a new mtime, which only its metadata tells
                n.attributesKnown = false;
                attributesWanted.add(n);
            }
            n.listedModified = o.modified();
            n.uploadedAt = null;
        }
    }

    /**
     * Whether settled file node {@code n}'s name now holds a shorter object: another file, never
     * {@code n} appended to, which gets a node of its own, as a local file system's rename over the
     * name would (a log rotated by `mv log log.1` and a new `log`). So `tail -F` here sees the name
     * stand for another file and opens it, and an open handle keeps the attributes of what it reads.
     * Not while a lock was ever taken on it here: a process that locks the name must meet the holders
     * of the node it had.
     */
    private static boolean replacedShorter(Node n, Bucket.Listed o) {
        return !n.link && n.locks == null && !Objects.equals(n.remoteEtag, o.etag()) && o.size() < n.size;
    }

    /**
     * Whether the object of settled node {@code n}, listed with its ETag unchanged and time
     * {@code listed}, was put again by another host: a time other than the one listed before, or,
     * where this host uploaded it since, one later than S3's answer to that upload. Both are S3's
     * clock, not this host's, and to the second: this host's own never looks later, and another
     * host's put shows from the second after that answer, however far this host's clock is off.
     */
    private static boolean putAgainElsewhere(Node n, Instant listed) {
        if (listed == null) {
            return false;
        }
        if (n.listedModified != null) {
            return !listed.equals(n.listedModified);
        }
        return n.uploadedAt != null && listed.isAfter(n.uploadedAt);
    }

    /** Whether a node S3 no longer lists was removed by another host (and not just made here). */
    private boolean removedElsewhere(Node n, long startSeq) {
        if (n == store.overlay.root || n.syncedSeq > startSeq) {
            return false;
        }
        for (Node m : store.overlay.subtree(n.path)) {
            if (m.dirty || m.writers > 0 || m.syncedSeq > startSeq) {
                return false;
            }
        }
        return true;
    }

    /**
     * Where S3 holds another version of file {@code n} than the one here, and {@code n} has not
     * changed here since: that version's attributes now, its content at the next read. A listing
     * leaves a file open for writing as it is (its writer may be about to change it); a lock's pull
     * may not, as the lock says no host writes the file meanwhile (SQLite keeps its database open
     * for writing between transactions). One HEAD, where the listing the pull made just before shows
     * another version than the one here ({@link Node#listedEtag}).
     *
     * <p>A file this host made empty and has not written or put on S3 ({@link #madeEmptyHere}) takes
     * S3's version too, where another host put one under that name first: on one disk the open that
     * made it would have opened theirs. SQLite opens, and makes, a database's {@code -wal} before it
     * locks; the other host's frames there, pushed as its lock went, are what this host's lock must
     * show (else they are lost, and this host's empty file goes up beside theirs as a conflict copy).
     */
    void pullVersion(Node n) throws IOException {
        VfsPath p;
        long gen;
        synchronized (store) {
            if (n.path == null || n.dir || n.link || (n.dirty && !madeEmptyHere(n))
                    || Objects.equals(n.listedEtag, n.remoteEtag)) {
                return; // the listing just made shows the version here (for a file made here: none)
            }
            p = n.path;
            gen = n.gen;
        }
        String key = store.objectKey(p, n);
        Bucket.Head h = bucket.head(key);
        synchronized (store) {
            String theirs = h == null ? null : etagOr(h, n.listedEtag);
            if (h == null || n.gen != gen || !p.equals(n.path) || Objects.equals(theirs, n.remoteEtag)) {
                return;
            }
            if (n.dirty) {
                if (!madeEmptyHere(n) || store.overlay.inflight.contains(key)) {
                    return; // going up already: its upload meets theirs and says so
                }
                store.overlay.settled(n);
                LOG.debug("S3 store {}: {} made empty here takes the version another host put first", spec, p);
            }
            fromListing(n, new Bucket.Listed(key, h.size(), h.modified(), theirs), store.overlay.seq);
            if (n.locks == null) {
                n.replaced++; // its handles read the new version too (dropContent moves it for a locked file)
            }
            n.gen++;
            store.fromMeta(n, h);
            store.journal.put(n);
            store.journal.commit();
        }
    }

    /**
     * The ETag HEAD {@code h} says, or where it says none (s3proxy's file backend sends none for some
     * objects) the one the listing just made showed: the version it asked about.
     */
    private static String etagOr(Bucket.Head h, String listed) {
        return h.etag() != null ? h.etag() : listed;
    }

    /** A file made empty here, unwritten since, that S3 has never had from this host. Under the store's monitor. */
    static boolean madeEmptyHere(Node n) {
        return n.dirty && !n.dir && !n.link && n.size == 0 && n.remoteEtag == null && n.movedFrom == null;
    }

    private void fromListing(Node n, Bucket.Listed o, long startSeq) {
        store.dropContent(n);
        n.remoteEtag = o.etag();
        n.listedModified = o.modified();
        n.uploadedAt = null;
        n.size = o.size();
        FileTime t = o.modified() == null ? store.now() : FileTime.from(o.modified());
        n.mtime = n.ctime = n.atime = t;
        n.syncedSeq = startSeq;
        n.attributesKnown = false; // a stat asks (learnAttributes); a listing also asks ahead of it
    }

    /**
     * Whether listed prefix {@code pre}, a directory with no node here, may be only keys below it
     * that this host removed: a directory removed here before its marker went up has no tombstone of
     * its own, and an upload under it that landed after the removal (rm -rf right after mv of a
     * tree, the write-back mid-pass) leaves its object until its delete goes. S3 lists the prefix
     * until then; without this a listing of the parent brought the directory back, and rmdir of the
     * parent failed (ENOTEMPTY). A directory another host filled meanwhile shows once those deletes
     * are done. Under the store's monitor.
     */
    private boolean onlyWhatThisHostRemoves(String pre, long startSeq) {
        for (String k : store.overlay.tombs.keySet()) {
            if (k.startsWith(pre) && buried(k, startSeq)) {
                return true;
            }
        }
        for (String k : store.overlay.inflight) {
            if (k.startsWith(pre)) {
                return true;
            }
        }
        return false;
    }

    private boolean buried(String key, long startSeq) {
        Tomb t = store.overlay.tombs.get(key);
        return t != null && (t.pending || t.doneSeq > startSeq);
    }

    private static VfsPath childOrNull(VfsPath dir, String name) {
        if (name.isEmpty() || name.contains("/")) {
            return null;
        }
        try {
            return dir.child(name);
        } catch (InvalidVfsPathException e) {
            return null; // a key no path can name (".", "..", "a//b"): not part of the namespace
        }
    }

    /** Every name below directory {@code dir} in S3 (a rename or delete of a whole tree needs them all). */
    void listTree(VfsPath dir) throws IOException {
        long startSeq;
        synchronized (store) {
            startSeq = store.overlay.seq;
        }
        Bucket.Level all = bucket.list(store.dirKey(dir), false);
        synchronized (store) {
            String prefix = store.dirKey(dir);
            for (Bucket.Listed o : all.objects()) {
                String rel = o.key().substring(prefix.length());
                boolean marker = rel.endsWith("/");
                if (marker) {
                    rel = rel.substring(0, rel.length() - 1);
                }
                String linked = marker ? null : store.linkName(rel.substring(rel.lastIndexOf('/') + 1));
                if (linked != null) {
                    rel = rel.substring(0, rel.length() - LINK_SUFFIX.length());
                }
                if (rel.isEmpty() || buried(o.key(), startSeq)) {
                    continue;
                }
                VfsPath p;
                try {
                    p = VfsPath.of(dir.isRoot() ? "/" + rel : dir + "/" + rel);
                } catch (InvalidVfsPathException e) {
                    continue;
                }
                if (!placeDirs(p.parent(), startSeq)) {
                    continue;
                }
                Node n = store.overlay.nodes.get(p);
                if (n == null) {
                    n = linked != null ? store.overlay.newLink() : store.overlay.newNode(marker, marker ? DIR_MODE : FILE_MODE);
                    if (marker) {
                        n.dirOnRemote = n.marker = true;
                        n.syncedSeq = startSeq;
                    } else {
                        fromListing(n, o, startSeq);
                    }
                    store.overlay.attach(p, n);
                }
            }
            // no HEAD ahead for these: the tree is about to be fetched (a rename) or removed (a delete)
            store.journal.commit();
        }
    }

    /** Directory nodes down to {@code dir} for a key found below it; false where a file is in the way. */
    private boolean placeDirs(VfsPath dir, long startSeq) {
        Node n = store.overlay.nodes.get(dir);
        if (n != null) {
            return n.dir;
        }
        if (!placeDirs(dir.parent(), startSeq) || buried(store.dirKey(dir), startSeq)) {
            return false;
        }
        n = store.overlay.newNode(true, DIR_MODE);
        n.dirOnRemote = true;
        n.syncedSeq = startSeq;
        store.overlay.attach(dir, n);
        return true;
    }
}
