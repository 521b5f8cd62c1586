package dev.chibifs.store.s3;

import dev.chibifs.path.Names;
import dev.chibifs.path.VfsPath;
import dev.chibifs.store.ContentHash;
import dev.chibifs.store.s3.Overlay.Node;
import dev.chibifs.store.s3.Overlay.Tomb;
import dev.chibifs.store.s3.S3Storage.MovedFrom;
import dev.chibifs.sys.Linux;

import static dev.chibifs.store.s3.S3Storage.META_SHA;
import static dev.chibifs.store.s3.S3Storage.META_MTIME;
import static dev.chibifs.store.s3.S3Storage.META_MODE;
import static dev.chibifs.store.s3.Overlay.NOT_APPENDS;
import static dev.chibifs.store.s3.S3Storage.SNAPSHOT_TRIES;
import static dev.chibifs.store.s3.S3Storage.COPY_RATHER_THAN_PUT_FROM;
import static dev.chibifs.store.s3.S3Storage.DONE_TOMB_MILLIS;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileTime;
import java.security.DigestOutputStream;
import java.security.MessageDigest;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.locks.ReentrantLock;

/**
 * What goes up to S3 from an {@link S3Storage}'s local layer, when, and what happens when another
 * host got there first.
 *
 * <p>A background thread ({@link #flushLoop}) looks every {@link #TICK_MILLIS} for dirty nodes whose
 * debounce has passed and for pending tombstones, while there are any (else it sleeps until the next
 * eviction, or until {@link #wake} says there are); an fsync ({@link #flushNode}), {@code chibifs sync}
 * and close go at once ({@link #pass}). Directories' markers go first, then files, several at a
 * time, then the deletes; last the removes that let a lock go, once every change made here before
 * them is up ({@link #deleteReleases}), those changes going at once. An upload that must follow a
 * pending delete (a file where a directory was removed, or the reverse: {@link #pendingDeletesMet})
 * goes after the deletes ({@link #uploadAfterDeletes}). Each upload is conditional on the object being what this host last saw
 * (If-Match its ETag, If-None-Match: * for a new name). When it is not: a file only appended to
 * here gets its new bytes put at the end of the other host's version ({@link #mergeAppends});
 * anything else stays here as {@code <name>.conflict-<host>-<time>} beside theirs ({@link #conflict}).
 * Where S3 already has the bytes (a rename, a change of attributes alone), S3 copies them
 * ({@link #uploadedInPlace}, {@link #uploadedAsCopy}). A failed request marks the store as in an
 * outage ({@link #noteOutage}); the loop then backs off, and the first pass that gets through ends it.
 * A failure does not end a pass: the object is tried again at the next, and the pass's other uploads
 * and deletes go on, but for what must come after it ({@link HeldBack}): the old names of a file
 * that failed, what is in a directory whose marker failed, a name at its cap after a file closed
 * before it, a lock file's remove after the changes made before it (but those S3 refuses away
 * from the lock, as a flock's release goes past them: {@link HeldBack#holdingLock}); so at the
 * journal's replay after a restart, which stops at its first failure only for S3 away, or for a
 * journal an earlier version wrote ({@link #replay}). An
 * object S3 refused has a retry time of its own ({@link #refusedLately}): the flusher's passes go
 * on at their pace for everything else, and neither they nor a pass for one directory's sake (its
 * fsync, a lock let go) ask again for it before then; only S3 away backs the loop off.
 *
 * <p>Locking: the store's monitor guards its overlay (nodes, tombstones, the journal) and is never
 * held over a request to S3: each step reads what it needs under it, asks S3 without it, and then
 * checks under it again that the node is still what it read (its generation). The
 * {@link #flushLock} makes passes (and the journal's replay) one at a time. An fsync takes no
 * such store-wide lock: it waits only for what its own file needs (see {@link #flushNode}). One
 * upload of a file, and one of a key, at a time is kept by {@link #claim}; a pass's deletes exclude
 * fsyncs' uploads, and claims of names removed here, by {@link #deletesOrFsyncs}. All are taken before the store's
 * monitor, never while holding it.
 */
final class WriteBack {

    /** Logged as the store: its lines (conflicts, merges, outages) are what an operator looks for there. */
    private static final Logger LOG = LoggerFactory.getLogger(S3Storage.class);

    /** How often the background flusher looks for due uploads; no request to S3 when nothing is due. */
    private static final long TICK_MILLIS = 100;
    private static final long BACKOFF_FIRST_MILLIS = 500;
    /** At most this long between a return of S3 and the first upload after it. */
    private static final long BACKOFF_MAX_MILLIS = 5_000;
    /** How often the write-back thread keeps the content cache within its size, and makes the room a full cache disk wanted. */
    private static final long EVICT_EVERY_MILLIS = 5_000;
    /** Lost uploads a file remembers (the newest are dropped past it): each a SHA-256, 64 bytes. */
    private static final int MAX_LOST_UPLOADS = 16;
    /** How many times a merge of appends meets yet another version before this host's goes up as a conflict copy. */
    private static final int MERGE_TRIES = 5;
    /** An upload in parts begun this long ago and not completed was left by a host that stopped. */
    private static final Duration UPLOADS_LEFT_AFTER = Duration.ofDays(1);
    private static final DateTimeFormatter CONFLICT_TIME =
            DateTimeFormatter.ofPattern("yyyyMMdd'T'HHmmss'Z'").withZone(ZoneOffset.UTC);

    private final S3Storage store;
    private final S3Spec spec;
    /** The last failure to copy a file for its upload, and when it was said: said again after a minute. Guarded by this. */
    private String copyFailure;
    private long copyFailureSaidAt;
    private static final long COPY_FAILURE_REPEAT_MILLIS = 60_000;
    private final Bucket bucket;
    private final S3Options options;
    private final Path uploadDir;
    private final ReentrantLock flushLock = new ReentrantLock();
    /**
     * A pass's deletes (exclusive) against fsyncs' uploads (shared). A delete chosen before an
     * fsync's upload began would otherwise run beside it: the old name of a file moved, whose move
     * the fsync sends (another host then saw neither name), or a name made again and fsynced after
     * the pass listed its tombstone (its new object deleted). Fair: fsyncs in a row do not hold
     * the deletes back for good. A claim of a name removed here holds it shared too, from its look at
     * the name's tombstone until the name is made ({@link #noDeletesSent}).
     */
    private final java.util.concurrent.locks.ReentrantReadWriteLock deletesOrFsyncs = new java.util.concurrent.locks.ReentrantReadWriteLock(true);
    /**
     * Held by a claim sending the delete of its name ({@link #deleteForClaim}) over the check that the
     * delete is still pending and the request: two claims of one name here send it once, and the
     * second's DELETE does not take the first's new object. Never the store's monitor, which is never
     * held over a request.
     */
    private final Object claimDeletes = new Object();
    /** Files and directories being uploaded now, by a pass or an fsync ({@link #claim}); guarded by {@link #claims}. */
    private final Set<Node> uploading = new java.util.HashSet<>();
    /** The keys they go up under; guarded by {@link #claims}. */
    private final Set<String> uploadingKeys = new java.util.HashSet<>();
    private final Object claims = new Object();
    /** How often an fsync waiting for its own file's upload (or a lock) looks whether S3 has become known to be away. */
    private static final long FSYNC_LOOKS_EVERY_MILLIS = 100;
    /** How many uploads run at once in a write-back pass. */
    private static final int UPLOADERS = 4;
    private final java.util.concurrent.ExecutorService uploaders = Bucket.daemonThreads(UPLOADERS, "s3-upload");

    // ---- guarded by the store's monitor ----
    /** Until when the flusher waits after a failure, on the store's ticker (never the wall clock, which may step). */
    private long backoffUntil = Long.MIN_VALUE;
    private long backoff;
    /** Why the last write-back failed with S3 away or this host failing, until one gets through; null while S3 takes them. */
    private String outage;
    /**
     * What S3 refuses ({@link #noteRefused}) and was said in the log, by key: each is said once, and
     * again when its refusal changes or after it went. One refusal is no outage: said as one, with a
     * "reachable again" after each listing that got through, the two lines alternated in the log for
     * as long as the object stayed refused.
     */
    private final Map<String, String> refusalsSaid = new LinkedHashMap<>();
    /**
     * The bytes of files read here to send them (hashed, or copied aside as they are hashed) since the
     * store opened: {@code chibifs umount} counts them as progress, as it does the bytes sent. A file
     * of 3 GiB was read for 10 s before its first byte went up (the object's metadata carries its
     * SHA-256), so one past about 40 GiB was told "stalled" (2 minutes with nothing sent) while it was
     * being hashed.
     */
    private final java.util.concurrent.atomic.LongAdder readToSend = new java.util.concurrent.atomic.LongAdder();
    /** When uploads in parts left behind are looked for again, on the store's ticker (see {@link #abortUploadsLeft}). */
    private long nextUploadsLeftCheck = Long.MIN_VALUE;
    /** The flusher sleeps past {@link #TICK_MILLIS}: nothing waited to go up when it looked. */
    private boolean idle;
    /**
     * What S3 refused in the last pass ({@link Bucket.Refused}), by the key its failure was counted
     * under, each with its refusal and its own retry time (on the store's ticker: 0.5 s after the
     * first refusal, doubling at each to 5 s, as the store-wide backoff), until which the flusher's
     * passes and a pass for one directory's sake take it as refused again without asking
     * ({@link HeldBack#refusedAgain}). A pass for one directory's sake asked S3 again: with s3proxy's
     * 500 for a name it cannot store, with the client's retries, and SQLite in rollback mode, which
     * fsyncs its directory at each commit, took 34 s for 20 transactions, not 4. And the flusher's
     * whole loop backed off as for S3 away, so every other change of the store went up to 5 s late.
     * A sync, a umount, and a pass for the refused object's own directory still ask.
     */
    private Map<String, Refusal> refusedLately = Map.of();

    /**
     * S3's refusal of an object, taken as its answer until {@code until} on the store's ticker, which
     * is {@code backoff} after it was last asked; to its delete (or the check before it) or to its
     * upload, which are not taken for each other (a file whose change S3 refused, then removed, is
     * deleted).
     */
    private record Refusal(Bucket.Refused error, long until, boolean delete, long backoff) {
    }

    /**
     * The wait after the {@code refused}th refusal in a row of one change: 0.5 s after the first,
     * doubling at each to 5 s, as {@link HeldBack#failed} doubles it from one pass to the next.
     */
    static long backoffAfter(int refused) {
        return refused <= 1 ? BACKOFF_FIRST_MILLIS
                : Math.min(BACKOFF_FIRST_MILLIS << Math.min(refused - 1, 16), BACKOFF_MAX_MILLIS);
    }

    /** How many times S3 refused {@code n}'s upload ({@link Node#refusals}). */
    private int uploadRefusals(Node n) {
        synchronized (store) {
            return n.refusals.count();
        }
    }

    /** How many times S3 refused the delete of {@code k} ({@link Tomb#refusals}). */
    private int deleteRefusals(String k) {
        synchronized (store) {
            Tomb t = k == null ? null : store.overlay.tombs.get(k);
            return t == null ? 0 : t.refusals.count();
        }
    }

    WriteBack(S3Storage store, S3Spec spec, Bucket bucket, S3Options options, Path uploadDir) {
        this.store = store;
        this.spec = spec;
        this.bucket = bucket;
        this.options = options;
        this.uploadDir = uploadDir;
        this.nextEviction = options.ticker().getAsLong(); // the first pass evicts
        removeLeftCopies(uploadDir);
    }

    /**
     * What an earlier run left in the upload directory (copies of uploads under way, merges kept for
     * logs open, when it stopped) is nobody's now: the cache directory's lock is this store's, and the
     * journal's replay makes its uploads afresh. Kept, a 1 GiB log's merge took its room for good.
     */
    private static void removeLeftCopies(Path uploadDir) {
        try (var left = Files.list(uploadDir)) {
            for (Path copy : (Iterable<Path>) left::iterator) {
                Files.deleteIfExists(copy);
            }
        } catch (IOException e) {
            LOG.debug("copies left in {} not removed: {}", uploadDir, e.getMessage());
        }
    }

    /**
     * What S3 has of a file kept open to append to, since a merge with another host's lines: its
     * writers append to the copy here, which therefore cannot become the merge, so {@code file}
     * keeps S3's version {@code etag} ({@code size} bytes) beside it. The end of that version is
     * this host's bytes up to {@code localUpTo}; it stands while the node is still based on
     * {@code baseBefore} under {@code key}, and was appended to only since. {@code atEnd}: a SHA-256
     * that has read the whole file, so the next upload hashes only the bytes it adds (a 1 GiB log's
     * merge took seconds to hash again at each upload); never updated, copied first. {@code movedFrom}:
     * the key S3 has the merge under ({@code etag} there) where the file moved since, else null.
     */
    record KeptMerge(String key, String baseBefore, long localUpTo, String etag, long size, Path file,
                     MessageDigest atEnd, String movedFrom) {

        /** The merge's version under {@link #key}: null where it moved since (S3 has none of it there). */
        String etagHere() {
            return movedFrom == null ? etag : null;
        }
    }

    /** {@code d} updated with the bytes of {@code file} from {@code from} to its end. */
    private static MessageDigest digestOf(Path file, long from, MessageDigest d) throws IOException {
        try (FileChannel in = FileChannel.open(file, StandardOpenOption.READ)) {
            java.nio.ByteBuffer buf = java.nio.ByteBuffer.allocate(1 << 16);
            for (long at = from; in.read(buf.clear(), at) > 0; at += buf.position()) {
                d.update(buf.flip());
            }
        }
        return d;
    }

    /** What {@code d} has read so far, without ending it. */
    private static String hexSoFar(MessageDigest d) {
        return ContentHash.hex(copyOf(d));
    }

    private static MessageDigest copyOf(MessageDigest d) {
        try {
            return (MessageDigest) d.clone();
        } catch (CloneNotSupportedException e) {
            throw new IllegalStateException("this JDK's SHA-256 cannot be copied", e);
        }
    }

    /** Drops {@code n}'s kept merge, if any, with its file. Under the monitor. */
    static void dropKeptMerge(Node n) {
        KeptMerge kept = n.keptMerge;
        if (kept == null) {
            return;
        }
        n.keptMerge = null;
        try {
            Files.deleteIfExists(kept.file());
        } catch (IOException e) {
            LOG.debug("kept merge {} not removed: {}", kept.file(), e.getMessage());
        }
    }

    /**
     * {@code n}'s kept merge where it still stands for the object {@code k} (S3 has it there, and
     * the file was only appended to since), else null. Under the monitor.
     */
    static KeptMerge keptMergeUnder(Node n, String k) {
        KeptMerge kept = n.keptMerge;
        return kept != null && kept.etagHere() != null && kept.key().equals(k)
                && java.util.Objects.equals(kept.baseBefore(), n.remoteEtag) && n.appendsFrom == kept.localUpTo()
                ? kept : null;
    }

    /**
     * {@code n}, whose kept merge {@code kept} stands under its old key, moves to the object {@code k}:
     * the merge goes with it (logrotate's {@code mv log log.1}, the writer going on), so its upload
     * there is the merge with this host's appends since, whole (S3 has none of it under that name),
     * and not this host's copy, which lacks the other host's lines (a tester's `mv` lost them). The
     * old name's delete stays conditional on the version before the merge, so refused, until the
     * merge is up under the new one ({@link #mergeWentUp}): a kill before that leaves the other
     * host's lines under the old name, as the merge is not journaled. Under the monitor, before the
     * move's tombstone.
     */
    static void moveKeptMerge(Node n, KeptMerge kept, String k) {
        n.keptMerge = new KeptMerge(k, null, kept.localUpTo(), kept.etag(), kept.size(), kept.file(), kept.atEnd(),
                kept.key());
    }

    /**
     * The rest of {@link #moveKeptMerge} once the move is done. Where it replaced a file, whose
     * version is the base of the upload under the new name, the merge is dropped: the appends
     * since could otherwise be journaled as following that other file's bytes. Under the monitor.
     */
    static void movedWithKeptMerge(Node n) {
        if (n.keptMerge == null || n.keptMerge.movedFrom() == null) {
            return;
        }
        if (n.remoteEtag != null) {
            dropKeptMerge(n);
            return;
        }
        n.appendsFrom = n.keptMerge.localUpTo(); // no base: a restart that lost the merge puts the copy here whole
    }

    /**
     * {@code n} emptied here (logrotate's copytruncate, {@code : > log} while a writer holds it):
     * what it holds next replaces the merge this host put itself, which S3 has, and not the
     * version before it, which S3 no longer has (the upload met its own merge and went up as a
     * conflict copy). Whether its base changed so. Under the monitor.
     */
    static boolean emptied(Node n) {
        KeptMerge kept = n.keptMerge;
        if (kept == null || kept.etagHere() == null || !java.util.Objects.equals(kept.baseBefore(), n.remoteEtag)) {
            return false;
        }
        n.remoteEtag = kept.etag(); // the next upload drops the merge: it is no longer the base
        return true;
    }

    /** {@code n}'s kept merge, where an upload from {@code base} with appends from {@code appendsFrom} under {@code k} goes on from it; else null (and any other is dropped). Under the monitor. */
    private static KeptMerge keptMergeFor(Node n, String k, String base, long appendsFrom) {
        KeptMerge kept = n.keptMerge;
        if (kept != null && !(kept.key().equals(k) && java.util.Objects.equals(kept.baseBefore(), base)
                && appendsFrom == kept.localUpTo())) {
            dropKeptMerge(n); // rewritten, renamed or taken from S3 since: what it kept is no base
            return null;
        }
        return kept;
    }

    /** Stops the upload threads (the store is closing; a pass under way has ended). */
    void stop() {
        // the steps never begun are cancelled: inParallelEach waits for each, and waited for ever
        for (Runnable never : uploaders.shutdownNow()) {
            if (never instanceof java.util.concurrent.Future<?> f) {
                f.cancel(false);
            }
        }
    }

    /**
     * Why the last write-back failed, or null; under the store's monitor. S3 away first; else the
     * refusal of an object said last, with how many more there are.
     */
    String outage() {
        if (outage != null || refusalsSaid.isEmpty()) {
            return outage;
        }
        String last = null;
        for (String why : refusalsSaid.values()) {
            last = why;
        }
        int more = refusalsSaid.size() - 1;
        return more == 0 ? last : last + " (and " + more + " more refused)";
    }

    /**
     * When the write-back next asks S3 for what failed, for {@code stats} and {@code status}:
     * {@code next try in 4.2 s} (the soonest retry time of what S3 refused, or the end of the backoff
     * while S3 is away), or {@code next try due now}; null where nothing waits for one. A change
     * refused 20 times said only that it failed, not whether, or when, it would be asked again.
     * Under the monitor.
     */
    String nextTry() {
        long soonest;
        if (outage != null) {
            soonest = backoffUntil;
        } else if (refusedLately.isEmpty()) {
            return null;
        } else {
            soonest = refusedLately.values().stream().mapToLong(Refusal::until).min().getAsLong();
        }
        long now = store.ticks();
        // compared, not subtracted first: an outage a request found before any backoff has Long.MIN_VALUE
        return soonest <= now ? "next try due now" : "next try in " + seconds(soonest - now);
    }

    /** A wait of {@code millis} as the state and the log say it: {@code 4.2 s}. */
    private static String seconds(long millis) {
        return String.format(java.util.Locale.ROOT, "%.1f s", millis / 1000.0);
    }

    /** Directories before what is in them (a node removed meanwhile, with no path, first). */
    private static final Comparator<Node> SHALLOWEST_FIRST = Comparator.comparingInt(n -> n.path == null ? 0 : n.path.depth());

    /**
     * Uploads {@code nodes}: the directories (their markers) one at a time, in order, then the files
     * at once. A failure is {@code held}'s and the others go on, but what lies below a directory whose
     * marker failed waits with it (a directory's marker before what is in it). Where {@code deferring},
     * one whose PUT must follow a delete pending here ({@link #pendingDeletesMet}) waits for the pass's
     * deletes ({@link HeldBack#afterDeletes}), with what is below it.
     */
    private void uploadInOrder(List<Node> nodes, HeldBack held, boolean deferring) {
        List<Node> files = new ArrayList<>();
        Map<VfsPath, Integer> belowUnmarked = new LinkedHashMap<>();
        for (Node n : nodes) {
            VfsPath p;
            String key;
            boolean afterDeletes;
            synchronized (store) {
                p = n.path;
                key = store.objectKeyOf(n);
                afterDeletes = deferring && p != null && (held.deferredAbove(p) || !pendingDeletesMet(key).isEmpty());
            }
            VfsPath unmarked = p == null ? null : held.unmarkedAbove(p);
            if (unmarked != null) {
                belowUnmarked.merge(unmarked, 1, Integer::sum);
                held.waitsAt(key);
            } else if (afterDeletes) {
                held.deferUntilDeletes(n, p);
            } else if (held.refusedAgain(key)) {
                if (n.dir && p != null) {
                    held.unmarked.add(p);
                }
            } else if (n.dir) {
                try {
                    uploadTry(n, held.refusedLastTime(key) || sentPast(n));
                } catch (MetPendingDelete e) {
                    held.metDeletes.add(n);
                } catch (IOException e) {
                    held.failed(e, key, uploadRefusals(n));
                    if (p != null) {
                        held.unmarked.add(p);
                    }
                }
            } else {
                files.add(n);
            }
        }
        Set<Node> refusedLastTime = new java.util.HashSet<>();
        for (Node n : files) {
            if (held.refusedLastTime(store.objectKeyOf(n)) || sentPast(n)) {
                refusedLastTime.add(n);
            }
        }
        for (Map.Entry<Node, IOException> f : inParallelEach(files, n -> uploadTry(n, refusedLastTime.contains(n)))) {
            if (f.getValue() instanceof MetPendingDelete) {
                held.metDeletes.add(f.getKey());
            } else {
                held.failed(f.getValue(), store.objectKeyOf(f.getKey()), uploadRefusals(f.getKey()));
            }
        }
        belowUnmarked.forEach((d, count) -> held.waits(count + (count == 1 ? " file or directory in " + d + " waits"
                : " files and directories in " + d + " wait") + " for its marker"));
    }

    /**
     * A pass's upload of {@code n}; one S3 refused at its last try ({@code refusedBefore}) takes S3's
     * error at its first attempt ({@link Bucket#answeredOnce}): its retry is this write-back's own
     * backoff, and the client's retries of a 500 (about 1.5 s) held the pass, 4 uploads at a time,
     * and every lock release waiting for it, at each try.
     */
    private void uploadTry(Node n, boolean refusedBefore) throws IOException {
        if (refusedBefore) {
            Bucket.answeredOnce(() -> {
                upload(n, false);
                return null;
            });
        } else {
            upload(n, false);
        }
    }

    /** Failures said in the one exception of a pass, at most; the rest are counted. */
    private static final int FAILURES_SAID = 5;

    /**
     * What a pass could not send, and what waits for it: one line each in the exception it ends with,
     * which {@code chibifs sync} and the log at umount show. A failure no longer ends the pass: each
     * object that fails is tried again at the next, on its own, and every other change and delete
     * goes up meanwhile (the first failure ended it, and an upload S3 kept refusing, a key a bucket
     * policy denied, held back every delete of the store for good: a removed secret stayed readable on
     * the other hosts). Each is one thread's: a pass's, or a claim's sending its name's delete
     * ({@link #deleteForClaim}).
     */
    private final class HeldBack {
        /**
         * The directory key a pass is for (its entries S3 is asked for again), or null: for the whole
         * store, which asks for everything when {@link #asksAll}, else (the flusher's) for what S3
         * refused only once its retry time has come.
         */
        private final String concern;
        private final boolean asksAll;
        /** {@link #refusedLately} when the pass began. */
        private final Map<String, Refusal> refusedBefore;
        /** What S3 refused in this pass, asked or not: the next {@link #refusedLately}. */
        private final Map<String, Refusal> refusals = new java.util.HashMap<>();
        /** Whether the pass has come to its deletes ({@link #deletePending}). */
        boolean deleting;
        private final List<IOException> failures = new ArrayList<>();
        private final List<String> waits = new ArrayList<>();
        /** {@link #waits}, each with every name it cuts short ({@link #inFull}). */
        private final List<String> waitsInFull = new ArrayList<>();
        /** What S3 refused at the journal's replay in this pass ({@link #replay}): the pass does not ask again. */
        final Set<Node> refusedAtReplay = new java.util.HashSet<>();
        /** Directories whose markers failed in this pass. */
        final List<VfsPath> unmarked = new ArrayList<>();
        /**
         * What goes up after the pass's deletes, in the order it was met: a PUT that must follow a
         * delete pending here ({@link #pendingDeletesMet}), and what is below such a directory.
         * Each stays dirty, and journaled so, until it is up: a crash between the delete and its
         * PUT leaves it to send at the next start.
         */
        final List<Node> afterDeletes = new ArrayList<>();
        /**
         * What was sent past its deletes ({@link #uploadAfterDeletes}) and met what one of them still
         * holds, on a server over a file system ({@link MetPendingDelete}): still dirty, not failed.
         */
        final List<Node> metDeletes = new ArrayList<>();
        /** The directories among {@link #afterDeletes}: what is in them goes after their markers. */
        private final List<VfsPath> deferredDirs = new ArrayList<>();
        /** The keys of what failed and of what waits for it, as far as known: where the pass left S3 behind. */
        private final Set<String> keys = new java.util.TreeSet<>();
        /** The keys S3 answered with a refusal ({@link Bucket.Refused}). */
        private final Set<String> refusedKeys = new java.util.TreeSet<>();
        /** Whether every failure was S3 refusing one object, not S3 away nor this host failing. */
        private boolean refusalsOnly = true;
        /** Whether S3 answered a request of the pass with a refusal (not one taken as refused again). */
        boolean answered;

        HeldBack(String concern, boolean asksAll) {
            this.concern = concern;
            this.asksAll = asksAll && concern == null;
            synchronized (store) {
                refusedBefore = refusedLately;
            }
        }

        /** {@code e} failed the change of the object at {@code key} (null: not known, or none left). */
        void failed(IOException e, String key) {
            failed(e, key, 0);
        }

        /**
         * As {@link #failed(IOException, String)}, for a change S3 has refused {@code refused} times
         * (this one included, those before a restart too: its journal's count), which its first retry
         * time here goes on from ({@link #backoffAfter}): after a restart it began at 0.5 s again.
         */
        void failed(IOException e, String key, int refused) {
            failures.add(e);
            waitsAt(key);
            if (e instanceof Bucket.Refused r) {
                answered = true;
                refusedKeys.add(r.key());
                keys.add(r.key());
                if (key != null) {
                    refusedNow(r, key, refused);
                }
            } else {
                refusalsOnly = false;
            }
        }

        /**
         * {@code e} failed the DeleteObjects of {@code batch} whole: each of its keys refused, with a
         * retry time of its own, where it is S3's refusal; the failure said once. The batch was
         * counted under its first key alone, and the rest were asked again at every tick.
         */
        void failedBatch(IOException e, List<String> batch) {
            if (!(e instanceof Bucket.Refused r)) {
                failed(e, null);
                batch.forEach(this::waitsAt);
                return;
            }
            failures.add(e);
            answered = true;
            for (String k : batch) {
                refusedKeys.add(k);
                keys.add(k);
                refusedNow(r, k, deleteRefusals(k));
            }
        }

        private void refusedNow(Bucket.Refused r, String key, int refused) {
            Refusal last = refusedBefore.get(key);
            long wait = last == null || last.delete() != deleting ? backoffAfter(refused)
                    : Math.min(last.backoff() * 2, BACKOFF_MAX_MILLIS);
            refusals.put(key, new Refusal(r, store.ticks() + wait, deleting, wait));
        }

        /**
         * Whether the change at {@code key} fails again at once, as S3 refused it at the last pass,
         * without asking S3: before its retry time, in a flusher's pass or one for a directory it is
         * not in. Counted as that failure again, with what waits for it.
         */
        boolean refusedAgain(String key) {
            Refusal r = key == null || asksAll ? null : refusedBefore.get(key);
            if (r == null || r.delete() != deleting || store.ticks() >= r.until()
                    || (concern != null && Unsent.entryOf(key, concern))) {
                return false;
            }
            failures.add(r.error());
            refusedKeys.add(r.error().key());
            keys.add(r.error().key());
            waitsAt(key);
            refusals.put(key, r);
            return true;
        }

        /** Whether S3 refused the upload at {@code key} at its last try (its retry time has come). */
        boolean refusedLastTime(String key) {
            Refusal r = key == null ? null : refusedBefore.get(key);
            return r != null && !r.delete();
        }

        /** The change at {@code key} waits for a failure (null: not known). */
        void waitsAt(String key) {
            if (key != null) {
                keys.add(key);
            }
        }

        /**
         * What of {@code before} (what was changed here before the remove of the lock {@code lockKey}
         * and is not on S3) the remove waits for; it goes all the same, past the rest, when none, by a
         * flock's rule ({@link Unsent#leftBehindBeside}): what this pass left behind for S3 refusing
         * an object, S3 answering, away from the lock. One not tried yet is waited for, and all of
         * them where a failure was not a refusal. What {@code chibifs sync} names as what the lock
         * waits for: it named every change made before the remove, the objects S3 refused elsewhere
         * too, and a tester removed files the lock did not wait for.
         */
        List<String> holdingLock(Collection<String> before, String lockKey) {
            if (!refusalsOnly || failures.isEmpty() || bucket.unreachable()) {
                return List.copyOf(before);
            }
            List<String> holding = new ArrayList<>();
            for (String k : before) {
                if (!keys.contains(k) || Unsent.besideLock(k, lockKey)) {
                    holding.add(k);
                }
            }
            return holding;
        }

        /** Every change of the store waits (the journal's replay): nothing can be said to have gone up. */
        void allWait() {
            refusalsOnly = false;
        }

        /** What the pass left behind, for its caller; under the flush lock, after its last request. */
        Unsent unsent() {
            synchronized (store) {
                refusedLately = Map.copyOf(refusals);
            }
            return new Unsent(thrown(), Set.copyOf(keys), Set.copyOf(refusedKeys), refusalsOnly && !bucket.unreachable());
        }

        boolean any() {
            return !failures.isEmpty();
        }

        void waits(String line) {
            waits(line, line);
        }

        /** A line of what waits, and the same naming everything it cuts short, for {@code chibifs sync}. */
        void waits(String line, String inFull) {
            waits.add(line);
            waitsInFull.add(inFull);
        }

        /** {@code n}, at {@code p}, goes up after the pass's deletes ({@link #afterDeletes}). */
        void deferUntilDeletes(Node n, VfsPath p) {
            if (!afterDeletes.contains(n)) {
                afterDeletes.add(n);
            }
            if (n.dir) {
                deferredDirs.add(p);
            }
        }

        /** Whether {@code p} is below a directory whose marker goes up after the pass's deletes. */
        boolean deferredAbove(VfsPath p) {
            for (VfsPath d : deferredDirs) {
                if (!p.equals(d) && p.startsWith(d)) {
                    return true;
                }
            }
            return false;
        }

        /** {@link #afterDeletes} for another round, taken out: those that still wait are deferred again. */
        List<Node> takeAfterDeletes() {
            List<Node> these = new ArrayList<>(afterDeletes);
            afterDeletes.clear();
            deferredDirs.clear();
            return these;
        }

        /** The directory whose marker failed that {@code p} is in (or is), or null. */
        VfsPath unmarkedAbove(VfsPath p) {
            for (VfsPath d : unmarked) {
                if (p.startsWith(d)) {
                    return d;
                }
            }
            return null;
        }

        /** The pass's failure: the failures, each once, then what waits for them, one line each. */
        IOException thrown() {
            if (failures.size() == 1 && waits.isEmpty()) {
                return failures.get(0);
            }
            Set<String> said = new java.util.LinkedHashSet<>();
            for (IOException e : failures) {
                said.add(String.valueOf(e.getMessage()));
            }
            List<String> lines = new ArrayList<>();
            for (String m : said) {
                if (lines.size() == FAILURES_SAID) {
                    lines.add((said.size() - FAILURES_SAID) + " more requests failed");
                    break;
                }
                lines.add(m);
            }
            List<String> full = new ArrayList<>(lines);
            lines.addAll(waits);
            if (waits.equals(waitsInFull)) {
                return new Bucket.Unavailable(String.join("\n", lines), failures.get(0));
            }
            full.addAll(waitsInFull);
            return new CutShort(String.join("\n", lines), String.join("\n", full), failures.get(0));
        }
    }

    /**
     * What a pass could not send: its {@code failure} (the one exception of {@link HeldBack#thrown}),
     * the keys of what failed or waits for a failure, those S3 refused, and whether the failures were
     * S3 refusing objects alone ({@code refusalsOnly}: S3 answered, the pass ran to its end, and
     * everything else went up). A caller that needs one directory or one file up, not the whole store
     * (an fsync of a directory, a lock let go), may go on when none of those keys is its concern: an
     * object S3 refuses for good (a key a bucket policy denies, a name its backend cannot store) else
     * failed every such call in the store for as long as it stayed.
     */
    record Unsent(IOException failure, Set<String> keys, Set<String> refused, boolean refusalsOnly) {

        /**
         * Whether the pass left behind an entry of the directory whose keys begin with
         * {@code dirKey} (a file, a link, a subdirectory's marker; an upload, a delete or an old name
         * waiting there), or may have (a failure that was not S3 refusing one object).
         */
        boolean leftBehindIn(String dirKey) {
            if (!refusalsOnly) {
                return true;
            }
            for (String k : keys) {
                if (entryOf(k, dirKey)) {
                    return true;
                }
            }
            return false;
        }

        /**
         * Whether the pass left behind, or may have, what a lock on the object {@code lockKey} waits
         * for even where S3 refuses it ({@link #besideLock}). A lock let go (a flock's lease, a lock
         * file's or directory's remove) goes past the rest, objects S3 refuses elsewhere, which holding
         * on would not send: held, a lock stayed on S3 for as long as any object of the store was
         * refused (a name S3 cannot store, a key a policy denies), and every other host was kept out.
         */
        boolean leftBehindBeside(String lockKey) {
            if (!refusalsOnly) {
                return true;
            }
            for (String k : keys) {
                if (besideLock(k, lockKey)) {
                    return true;
                }
            }
            return false;
        }

        /**
         * Whether {@code key} is beside the lock object {@code lockKey}: an entry of the directory it is
         * in (the locked file, SQLite's journal beside a database, an old name waiting there), or, for
         * a lock directory's marker, below it. What changes there under the lock the next holder reads
         * (a take lists that directory again), so a refusal there holds the lock as S3 away does.
         */
        static boolean besideLock(String key, String lockKey) {
            String name = lockKey.endsWith("/") ? lockKey.substring(0, lockKey.length() - 1) : lockKey;
            return entryOf(key, name.substring(0, name.lastIndexOf('/') + 1))
                    || (lockKey.endsWith("/") && key.startsWith(lockKey));
        }

        /** Whether {@code key} is an entry of the directory whose keys begin with {@code dirKey} (a subdirectory by its marker). */
        static boolean entryOf(String key, String dirKey) {
            if (key.length() <= dirKey.length() || !key.startsWith(dirKey)) {
                return false;
            }
            String rest = key.substring(dirKey.length(), key.endsWith("/") ? key.length() - 1 : key.length());
            return !rest.isEmpty() && rest.indexOf('/') < 0;
        }
    }

    /**
     * What the journal held changed but not uploaded at start, in the order of its last change
     * there: uploaded first, one at a time in that order. At once and several at a time, as a flush
     * sends what is due, a file written last (a READY marker after the data) went up among the first
     * after a daemon was killed, and another host saw it with 3 of the 30 files written before it.
     */
    private volatile List<Node> replayed = List.of();

    /**
     * Why the changes from before this start are held back (the first of them failed, in a journal an
     * earlier version wrote, which does not say what waits for what), or null: every
     * fsync and flush fails meanwhile, and nothing later goes up. Status reads it ({@link S3Storage#failing}).
     */
    private volatile String replayHeld;

    /** Why the changes journaled before this start do not go up, or null where they went or are going. */
    String replayHeld() {
        return replayHeld;
    }

    /**
     * What the journal held at start, counted for the log's line of what became of it, or null once
     * said: the first pass that ends past the journal's uploads and the deletes after them says it,
     * uploads and deletes together, as the line at start counted them ("3 changes ... go up first",
     * then "of the 2 changes": a tester's, the old name's delete of a rename left out). Under the flush lock.
     */
    private ReplayTally replayTally;

    private static final class ReplayTally {
        final int uploads;
        /** The deletes (lock releases too) the journal held, by key: each done once no longer pending there. */
        final Map<String, Tomb> deletes;
        /** The uploads' replay ran to its end (else S3 went away: the pass after it says). */
        boolean uploaded;
        int refused;
        int belowRefused;

        ReplayTally(int uploads, Map<String, Tomb> deletes) {
            this.uploads = uploads;
            this.deletes = deletes;
            this.uploaded = uploads == 0;
        }
    }

    /**
     * The journal's changes to upload first, in order (see {@link #replayed}), and its deletes,
     * which go after them as in any pass; before the flusher starts.
     */
    void replayedInOrder(List<Node> nodes, Map<String, Tomb> deletes) {
        replayed = nodes;
        replayTally = nodes.isEmpty() && deletes.isEmpty() ? null : new ReplayTally(nodes.size(), Map.copyOf(deletes));
    }

    /**
     * Logs what became of the changes the journal held at start, once the uploads' replay ran to its
     * end: the deletes the pass did not do wait (for an upload that failed, or S3 refused them).
     */
    private void sayReplayed(HeldBack held) {
        ReplayTally t = replayTally;
        if (t == null || !t.uploaded) {
            return;
        }
        replayTally = null;
        int deletesRefused = 0;
        int deletesWaiting = 0;
        int markersWaiting = 0;
        synchronized (store) {
            for (Map.Entry<String, Tomb> e : t.deletes.entrySet()) {
                Tomb now = store.overlay.tombs.get(e.getKey());
                if (now != e.getValue() || !now.pending) {
                    continue; // done, or made again here since (not a change from before the stop)
                }
                Refusal r = held.refusals.get(e.getKey());
                if (r != null && r.delete()) {
                    deletesRefused++;
                } else if (e.getKey().endsWith("/")) {
                    markersWaiting++;
                } else {
                    deletesWaiting++;
                }
            }
        }
        int refused = t.refused + deletesRefused;
        int total = t.uploads + t.deletes.size();
        int wentUp = total - refused - t.belowRefused - deletesWaiting - markersWaiting;
        String forWhat = " waiting for " + (refused + t.belowRefused > 0 ? "them" : "what failed");
        String waiting = (refused == 0 ? "" : ", " + refused + " refused by S3 and retried on their own backoff")
                + (t.belowRefused == 0 ? "" : ", " + t.belowRefused + " waiting with a refused directory's marker")
                + (deletesWaiting == 0 ? "" : ", " + deletesWaiting + (deletesWaiting == 1 ? " delete" : " deletes")
                        + " (an old name's, a lock's release)" + forWhat)
                + (markersWaiting == 0 ? "" : ", " + markersWaiting + (markersWaiting == 1 ? " directory's marker" : " directories' markers")
                        + forWhat);
        LOG.info("S3 store {}: of the {} changes from before the last stop, {} went up{}", spec, total, wentUp, waiting);
    }

    /**
     * Uploads what the journal held at start, in its order ({@link #replayed}), for a pass ({@code held}
     * its); holds the flush lock. Whether the pass ends here, its changes waiting: S3 away or this
     * host failing (the replay goes on from there next time), or any failure where the journal was
     * written by an earlier version, which does not say what waits for what
     * ({@link Overlay#dependenciesKnown}). Else a change S3 refuses waits as in any pass, with what
     * depends on it: what is in a directory whose marker it refused (here and in the pass), the
     * deletes of its old names ({@link #deletePending}), a lock let go beside it
     * ({@link HeldBack#holdingLock}); the rest of the replay, and every later change, go on (one
     * refused name, after a restart, kept every lock this host let go held on S3 for good).
     */
    private boolean replay(HeldBack held) {
        synchronized (store) {
            replaying = true;
        }
        try {
            return replayInOrder(held);
        } finally {
            synchronized (store) {
                replaying = false;
            }
        }
    }

    private boolean replayInOrder(HeldBack held) {
        List<Node> inOrder = replayed;
        boolean dependenciesKnown;
        synchronized (store) {
            dependenciesKnown = store.overlay.dependenciesKnown;
        }
        int belowRefused = 0;
        for (int i = 0; i < inOrder.size(); i++) {
            Node n = inOrder.get(i);
            VfsPath p;
            String key;
            boolean afterDeletes;
            synchronized (store) {
                p = n.path;
                key = p == null ? null : store.objectKeyOf(n);
                afterDeletes = p != null && (held.deferredAbove(p) || !pendingDeletesMet(key).isEmpty());
            }
            if (p != null && held.unmarkedAbove(p) != null) {
                held.waitsAt(key); // its directory's marker was refused: it waits with it, as in a pass
                belowRefused++;
                continue;
            }
            if (afterDeletes) {
                // after the deletes, as in a pass: the pass this replay is part of sends it (a flush
                // of one file's, a later one), and it stays dirty meanwhile
                held.deferUntilDeletes(n, p);
                continue;
            }
            try {
                // with the client's retries, each: a 500 that passes (S3's InternalError) keeps its
                // change in its place, where taken at once the change would go up after changes made
                // after it (a READY before its data: a tester's, at a restart with one name refused
                // for good anywhere in the journal). A name S3 refuses with a 500 every time
                // (s3proxy's, for a name its file system cannot store) costs those retries, about
                // 1.5 s, once here; its retries on its own backoff are asked once each. One S3 refused
                // before (the journal says so) is asked once: that 1.5 s came back at every start
                boolean refusedBefore;
                synchronized (store) {
                    refusedBefore = n.refusals.count() > 0;
                }
                uploadTry(n, refusedBefore); // one no longer dirty (gone, renamed and sent) is passed over
            } catch (IOException e) {
                failedRequest(e);
                if (e instanceof Bucket.Refused && dependenciesKnown) {
                    held.failed(e, key, uploadRefusals(n));
                    held.refusedAtReplay.add(n);
                    if (n.dir && p != null) {
                        held.unmarked.add(p);
                    }
                    continue;
                }
                replayed = inOrder.subList(i, inOrder.size()); // from where it failed, next time
                held.failed(e, null);
                held.allWait();
                int behind = inOrder.size() - i - 1;
                if (dependenciesKnown) {
                    // S3 away: the pass ends, every change waits; the log says so (noteOutage)
                    return true;
                }
                // a journal an earlier version wrote keeps no old names (Node.oldNames): no delete may go
                // before the changes made before the stop are up, nor may those overtake each other
                replayHeld = "a change from before this start (journaled by an earlier version of chibifs, which does"
                        + " not say what waits for what) does not go up (" + firstLine(e)
                        + "), and " + (behind == 0 ? "" : behind + " more of them and ") + "every change made since"
                        + " wait behind it: fsync fails (EIO), and they stay in the cache directory for the next start"
                        + " (chibifs sync names it; removing or renaming that file lets the rest go)";
                held.waits((behind == 0 ? "" : behind + " more changes from before this start wait behind it, in the order"
                        + " they were made; ") + "every change and delete made since waits for "
                        + (behind == 0 ? "it" : "them"));
                return true;
            }
        }
        ReplayTally t = replayTally;
        if (t != null) {
            t.refused = held.refusedAtReplay.size();
            t.belowRefused = belowRefused;
            t.uploaded = true; // said with the deletes after them (sayReplayed)
        }
        replayed = List.of();
        replayHeld = null;
        synchronized (store) {
            store.overlay.dependenciesKnown = true; // what was journaled without them is up: the next compaction says so
        }
        return false;
    }

    /** The journal's replay is uploading (what the log says of a refusal then); guarded by the store's monitor. */
    private boolean replaying;

    private static String firstLine(IOException e) {
        String m = String.valueOf(e.getMessage());
        int nl = m.indexOf('\n');
        return nl < 0 ? m : m.substring(0, nl);
    }

    /**
     * A pass: what is due ({@code all}: everything pending) goes up, then the deletes. What it could
     * not send ({@link Unsent}), or null when everything went. A pass for the directory whose keys
     * begin with {@code concern} (null: for the whole store) takes what S3 refused at the last pass
     * elsewhere as refused again, without asking, before its retry time ({@link #refusedLately}); so
     * does the flusher's (not {@code all}) for every such object.
     */
    Unsent pass(boolean all, String concern) throws IOException {
        flushLock.lock();
        try {
            HeldBack held = new HeldBack(concern, all);
            if (!replayed.isEmpty() && replay(held)) {
                return held.unsent();
            }
            List<Node> due = new ArrayList<>();
            List<Node> ahead = new ArrayList<>();
            List<Node> capped = new ArrayList<>();
            long now = store.ticks();
            synchronized (store) {
                Set<Node> beforeReleases = all ? Set.of() : changesBeforeReleases();
                for (Node n : store.overlay.dirtyNodes) {
                    if (all || n.due <= now || beforeReleases.contains(n)) {
                        due.add(n);
                        if (!all && n.due <= now && store.overlay.dueAtItsCap(n)) {
                            capped.add(n);
                        }
                    }
                }
                if (!capped.isEmpty()) {
                    // a name forced up at its cap while changes go on (a ref git moves at each commit) may
                    // point at files closed a moment before, which the debounce still holds back (the
                    // commit's objects): those go up first, so another host that sees the name finds
                    // what it names (git log there failed, exit 128, until they followed)
                    for (Node n : store.overlay.dirtyNodes) {
                        if (n.writers == 0 && n.due > now) {
                            ahead.add(n);
                        }
                    }
                }
                // directories (their markers) before what is in them, one at a time; then the files,
                // several at once. Sorted here, under the monitor: a rename or unlink meanwhile changes
                // paths, and a sort whose keys change under it fails ("Comparison method violates its
                // general contract", seen with tar, mv and rm -rf racing the flusher)
                due.sort(SHALLOWEST_FIRST);
                ahead.sort(SHALLOWEST_FIRST);
            }
            // what S3 refused at the replay just now is not asked again in this pass
            due.removeAll(held.refusedAtReplay);
            ahead.removeAll(held.refusedAtReplay);
            uploadInOrder(ahead, held, true);
            if (held.any() && !capped.isEmpty()) {
                // what went up at its cap may name a file of those that failed: it waits for them
                due.removeAll(capped);
                for (Node n : capped) {
                    held.waitsAt(store.objectKeyOf(n));
                }
                held.waits(capped.size() + " changes forced up at the debounce's cap wait for the files closed before them");
            }
            uploadInOrder(due, held, true);
            if (held.any() && bucket.unreachable()) {
                sayReplayed(held);
                return held.unsent(); // S3 away: each delete would fail at once; they wait with the rest
            }
            // after the pass's uploads have all ended, failed or not: a delete never runs beside
            // an upload of its key, and what waits for a failed one is left out (deletePending)
            boolean deleted = deletesAlone(held);
            deleted |= uploadAfterDeletes(held, all);
            sayReplayed(held);
            if (held.any()) {
                forgetDoneTombs();
                Unsent unsent = held.unsent();
                refusalsNoLongerSaid(held.refusals.values());
                if (unsent.refusalsOnly() && held.answered) {
                    recovered(); // S3 answered this pass, refusing some objects: an outage before it is over
                }
                return unsent;
            }
            if (!due.isEmpty() || deleted) {
                recovered();
            }
            synchronized (store) {
                refusedLately = Map.of();
            }
            refusalsNoLongerSaid(List.of());
            return null;
        } finally {
            flushLock.unlock();
        }
    }

    /** {@link #deletePending}, under {@link #deletesOrFsyncs}' exclusive side; the flush lock held. */
    private boolean deletesAlone(HeldBack held) throws IOException {
        deletesOrFsyncs.writeLock().lock();
        try {
            return deletePending(held);
        } finally {
            deletesOrFsyncs.writeLock().unlock();
        }
    }

    /**
     * Uploads what the pass held back for a delete pending here ({@link HeldBack#afterDeletes}), now
     * that its deletes went, then the deletes that waited for those uploads (their old names); again
     * while each round sends some (a delete that waited for an upload deferred itself). What none of
     * a round could send waits for the next pass: its delete failed (said with that failure), or
     * waits for a change not due yet. A pass for everything ({@code all}: sync, umount) sends that
     * last kind anyway, as before: nothing later would, and sync must not end with it still here.
     * Whether any deletes were done. Under the flush lock.
     */
    private boolean uploadAfterDeletes(HeldBack held, boolean all) throws IOException {
        boolean deleted = false;
        while (!held.afterDeletes.isEmpty()) {
            List<Node> these = held.takeAfterDeletes();
            synchronized (store) {
                these.sort(SHALLOWEST_FIRST); // under the monitor, as the pass's own sort
            }
            uploadInOrder(these, held, true);
            if (held.afterDeletes.size() == these.size()) {
                List<Node> left = held.takeAfterDeletes();
                if (held.any()) {
                    for (Node n : left) {
                        held.waitsAt(store.objectKeyOf(n));
                    }
                    held.waits(left.size() == 1 ? "1 change waits for the delete of what was at its name before it"
                            : left.size() + " changes wait for the deletes of what was at their names before them");
                    return deleted;
                }
                if (!all && !inARing(left)) {
                    return deleted; // still dirty: the next pass
                }
                deleted |= sendPastDeletes(left, held);
            }
            deleted |= deletesAlone(held);
        }
        return deleted;
    }

    /**
     * Sends {@code nodes} past the deletes pending here that they wait for. S3 keeps x and x/ apart,
     * and these go up. A server over a file system does not: what met a name such a delete still
     * holds comes back ({@link MetPendingDelete}), and goes after that delete, sent first
     * ({@link #oldNamesLetGo}). A directory and a file swapped by three renames wait so in a ring,
     * which the PUT broke with a conflict copy of the file there (4 of 4). Whether any delete was done.
     * Under the flush lock.
     */
    private boolean sendPastDeletes(List<Node> nodes, HeldBack held) throws IOException {
        synchronized (store) {
            nodes.sort(SHALLOWEST_FIRST);
            sentPastDeletes.addAll(nodes);
        }
        try {
            uploadInOrder(nodes, held, false);
        } finally {
            synchronized (store) {
                sentPastDeletes.removeAll(nodes);
            }
        }
        if (held.metDeletes.isEmpty()) {
            return false;
        }
        List<Node> met = new ArrayList<>(held.metDeletes);
        held.metDeletes.clear();
        if (!oldNamesLetGo(met, held)) {
            return false;
        }
        boolean deleted = deletesAlone(held);
        synchronized (store) {
            met.sort(SHALLOWEST_FIRST);
        }
        uploadInOrder(met, held, false);
        return deleted;
    }

    /**
     * fsync of {@code n}, one of uploads that wait for deletes that wait for them ({@link #inARing}: a
     * directory and a file swapped): sends them all as a pass would ({@link #sendPastDeletes}), then
     * the deletes they held. Before, the fsync sent the PUT, which a server over a file system kept as a
     * conflict copy, and the fsync failed. False where {@code n} is in no such ring. Throws where one of
     * them failed.
     */
    private boolean sentAsRing(Node n) throws IOException {
        List<Node> ring = new ArrayList<>();
        synchronized (store) {
            if (!n.dirty || n.path == null) {
                return false;
            }
            Map<String, Node> waiting = oldNamesWaiting();
            ring.add(n);
            for (int i = 0; i < ring.size(); i++) {
                for (String k : deletesWaitedFor(List.of(ring.get(i)))) {
                    Node w = waiting.get(k);
                    if (w != null && w.path != null && !ring.contains(w)) {
                        ring.add(w);
                    }
                }
            }
        }
        if (ring.size() < 2 || !inARing(ring)) {
            return false;
        }
        awaitForFsync(flushLock, n);
        try {
            HeldBack held = new HeldBack(null, true);
            sendPastDeletes(ring, held);
            deletesAlone(held);
            if (held.any()) {
                throw held.thrown();
            }
            return true;
        } finally {
            flushLock.unlock();
        }
    }

    /**
     * The uploads {@link #uploadAfterDeletes} sends past the deletes they wait for, for now; guarded by
     * the store's monitor. A failure of theirs that such a delete explains is {@link MetPendingDelete}.
     */
    private final Set<Node> sentPastDeletes = new java.util.HashSet<>();

    /**
     * Whether {@code n} is sent past its deletes now ({@link #sentPastDeletes}): its upload takes S3's
     * error at its first attempt, as one refused before does ({@link #uploadTry}), since a server over a
     * file system answers such a PUT under a file with a 500 at every attempt (about 1.5 s of retries).
     */
    private boolean sentPast(Node n) {
        synchronized (store) {
            return sentPastDeletes.contains(n);
        }
    }

    /**
     * An upload sent past a delete pending here met the name that delete still holds, on a server over
     * a file system: the PUT of x answered 412 while x/ was there (nothing under x itself), or a PUT
     * under x/ 500 while the file x was. No conflict and no refusal: it goes after that delete.
     */
    private static final class MetPendingDelete extends IOException {
        MetPendingDelete(String message) {
            super(message);
        }
    }

    /**
     * {@link MetPendingDelete} where {@code e}, S3's answer to the upload of {@code n} at {@code p}
     * (object {@code key}), is a name a delete pending here still holds ({@link #metPendingDelete}),
     * its key no longer in flight; else nothing.
     */
    private void requireNoPendingDeleteMet(Node n, VfsPath p, String key, IOException e) throws IOException {
        if (metPendingDelete(n, key, e)) {
            synchronized (store) {
                store.overlay.inflight.remove(key);
            }
            throw new MetPendingDelete(p + " met what a delete pending here still holds: " + e.getMessage());
        }
    }

    /**
     * Whether {@code n}'s upload to {@code key}, sent past the deletes it waits for, failed as one that
     * met a name such a delete still holds ({@link MetPendingDelete}): {@code nothingThere} asks S3 that
     * {@code key} holds no object, where the failure was a failed condition.
     */
    private boolean metPendingDelete(Node n, String key, IOException e) throws IOException {
        synchronized (store) {
            if (!sentPastDeletes.contains(n) || pendingDeletesMet(key).isEmpty()) {
                return false;
            }
        }
        if (e instanceof Bucket.PreconditionFailed) {
            return key.endsWith("/") || bucket.head(key) == null;
        }
        return e instanceof Bucket.Refused r && r.status() >= 500;
    }

    /**
     * The deletes pending here that the uploads of {@code nodes} wait for ({@link #pendingDeletesMet}).
     * Under the monitor.
     */
    private Set<String> deletesWaitedFor(Collection<Node> nodes) {
        Set<String> out = new java.util.TreeSet<>();
        for (Node n : nodes) {
            out.addAll(pendingDeletesMet(store.objectKeyOf(n)));
        }
        return out;
    }

    /**
     * Whether the uploads {@code left}, each waiting for a delete pending here, and the deletes they
     * wait for, each waiting for one of them (the old name of a name moved), wait on each other alone:
     * no later pass would send any of them. Under no lock; takes the monitor.
     */
    private boolean inARing(List<Node> left) {
        synchronized (store) {
            Map<String, Node> waiting = oldNamesWaiting();
            Set<Node> these = new java.util.HashSet<>(left);
            Set<String> deletes = deletesWaitedFor(left);
            for (String k : deletes) {
                Node w = waiting.get(k);
                if (w == null && k.endsWith("/") && deletes.stream().anyMatch(d -> d.length() > k.length() && d.startsWith(k))) {
                    continue; // a marker, which waits for the deletes in it (sendDeletes)
                }
                if (w == null || !these.contains(w)) {
                    return false;
                }
            }
            return !deletes.isEmpty();
        }
    }

    /**
     * Lets the deletes that {@code met}'s uploads wait for go before them, where each waits only for
     * the upload of one of {@code met} (its new name): the content each of those goes up with is
     * here (fetched if not), so nothing of it needs the old object. Another host sees neither name
     * for the moment between the delete and the PUT, as a swap by three renames on a server over a
     * file system cannot avoid. Whether any was let go; those left wait, said in {@code held}.
     */
    private boolean oldNamesLetGo(List<Node> met, HeldBack held) throws IOException {
        Set<Node> these = new java.util.HashSet<>(met);
        for (Node n : met) {
            boolean fetch;
            synchronized (store) {
                fetch = !n.dir && n.path != null && !n.cached;
            }
            if (fetch) {
                store.fetches.fetch(n);
            }
        }
        int letGo = 0;
        List<String> waits = new ArrayList<>();
        synchronized (store) {
            Map<String, Node> waiting = oldNamesWaiting();
            for (String k : deletesWaitedFor(met)) {
                Node w = waiting.get(k);
                if (w == null) {
                    continue;
                }
                if (!these.contains(w) || w.path == null || (!w.dir && !w.cached)) {
                    waits.add(k);
                    continue;
                }
                if (w.oldNames != null) {
                    w.oldNames.remove(k);
                }
                if (w.movedFrom != null && w.movedFrom.key().equals(k)) {
                    w.movedFrom = null;
                }
                store.journal.put(w);
                letGo++;
            }
            store.journal.commit();
        }
        if (letGo > 0) {
            LOG.debug("S3 store {}: {} deletes of old names go before the uploads of their new names, which wait on"
                    + " each other's names (a swap, on a server over a file system)", spec, letGo);
        }
        for (String k : waits) {
            held.waitsAt(k);
        }
        if (!waits.isEmpty()) {
            held.waits(waits.size() + " deletes and the uploads they hold wait on each other: " + waits);
        }
        return letGo > 0;
    }

    /**
     * The keys of the pending deletes that must reach S3 before a PUT of {@code key}: the marker
     * {@code key/} of a directory removed where a file or link is made now, with the deletes below it
     * (a rename's old names among them may wait while the marker goes), and the file of a name
     * now a directory above {@code key} (a directory made where a file was removed). S3 keeps such
     * keys apart, but a server over a file system (s3proxy, MinIO's fs mode) cannot hold both: it
     * answered 412 to the PUT of x while the directory x/ was there, so `rmdir x; echo file > x`
     * within the debounce ended as a conflict copy of x beside nothing; and 500 to a PUT of x/y
     * while the file x was (the marker x/ waits too: it names that directory). The pass's deletes
     * come after its uploads, so such a PUT waits for them ({@link #uploadAfterDeletes}). Under the
     * monitor.
     */
    private List<String> pendingDeletesMet(String key) {
        if (key == null || key.isEmpty()) {
            return List.of();
        }
        List<String> met = new ArrayList<>(1);
        Map<String, Tomb> tombs = store.overlay.tombs;
        if (!key.endsWith("/") && pending(tombs.get(key + "/"))) {
            met.add(key + "/");
            // and what was in it: its marker may go while a delete below waits (an old name whose new
            // one is not up), and such a server keeps the directory for what is left in it (412 to x)
            String in = key + "/";
            for (Map.Entry<String, Tomb> t : tombs.entrySet()) {
                if (t.getKey().startsWith(in) && !t.getKey().equals(in) && t.getValue().pending) {
                    met.add(t.getKey());
                }
            }
        }
        for (int i = key.indexOf('/'); i > 0; i = key.indexOf('/', i + 1)) {
            String above = key.substring(0, i); // of a marker x/ too: the file x
            if (pending(tombs.get(above))) {
                met.add(above);
            }
        }
        return met;
    }

    private static boolean pending(Tomb t) {
        return t != null && t.pending;
    }

    /**
     * The changes that removes of names claimed here wait for ({@link Overlay.Release}): they go up
     * in this pass, not after their debounce, so a lock let go by a remove reaches the other hosts
     * about as soon as without the wait, as a flock's release pushes. Under the monitor.
     */
    private Set<Node> changesBeforeReleases() {
        Set<Node> out = new java.util.HashSet<>();
        for (Tomb t : store.overlay.tombs.values()) {
            if (t.pending && t.release != null) {
                t.release.changes().forEach((n, gen) -> {
                    if (n.dirty && n.settledGen < gen) {
                        out.add(n);
                    }
                });
            }
        }
        return out;
    }

    /**
     * Deletes the objects of pending tombstones that wait for no upload; under the flush lock and
     * {@link #deletesOrFsyncs}. A delete that fails is {@code held}'s, and the others go on. The
     * removes that let a lock go come last, each once every change and delete made here before it
     * is on S3 ({@link Overlay.Release}). Whether any were done.
     */
    private boolean deletePending(HeldBack held) throws IOException {
        held.deleting = true;
        List<String> deletes;
        int oldNamesWaiting = 0;
        boolean releases = false;
        Set<VfsPath> newNames = new java.util.TreeSet<>();
        Set<String> stillThere = new java.util.HashSet<>();
        synchronized (store) {
            // the old name of something moved goes after its new one is up, which the debounce may
            // put off (renamed again, a chmod since): deleted sooner, another host saw neither name
            // (renames 0.1 s apart: none for 4-7 s). The old object of a file moved is also what its
            // upload copies
            // (an upload that failed leaves its node dirty: its old names wait on, pass after pass)
            Map<String, Node> waiting = oldNamesWaiting();
            deletes = new ArrayList<>();
            for (Map.Entry<String, Tomb> e : store.overlay.tombs.entrySet()) {
                if (!e.getValue().pending) {
                    continue;
                }
                if (e.getValue().release != null) {
                    releases = true; // after the others (deleteReleases)
                    continue;
                }
                Node newName = waiting.get(e.getKey());
                if (newName == null) {
                    deletes.add(e.getKey());
                } else {
                    stillThere.add(e.getKey());
                    oldNamesWaiting++;
                    held.waitsAt(e.getKey());
                    if (newName.path != null) {
                        newNames.add(newName.path);
                    }
                }
            }
        }
        List<Object> markersWaiting = new ArrayList<>();
        Set<String> failed = sendDeletes(deletes, held, markersWaiting, stillThere);
        if (held.any() && oldNamesWaiting > 0) {
            String line = (oldNamesWaiting == 1 ? "1 delete of an old name waits for the upload of its new name"
                    : oldNamesWaiting + " deletes of old names wait for the uploads of their new names")
                    + " (another host would see neither): ";
            held.waits(line + said(newNames), line + inFull(newNames));
        }
        if (!markersWaiting.isEmpty()) {
            String line = markersWaiting.size() == 1 ? "1 directory's marker waits for the deletes in it: "
                    : markersWaiting.size() + " directories' markers wait for the deletes in them: ";
            held.waits(line + said(markersWaiting), line + inFull(markersWaiting));
        }
        boolean released = releases && deleteReleases(held);
        return (!deletes.isEmpty() && failed.isEmpty()) || released;
    }

    /** The old names whose deletes wait for the uploads of their new names, by key, each with its node. Under the monitor. */
    private Map<String, Node> oldNamesWaiting() {
        Map<String, Node> waiting = new java.util.HashMap<>();
        for (Node n : store.overlay.dirtyNodes) {
            if (n.movedFrom != null) {
                waiting.put(n.movedFrom.key(), n);
            }
            if (n.oldNames != null) {
                for (String k : n.oldNames) {
                    waiting.put(k, n);
                }
            }
        }
        return waiting;
    }

    /**
     * Deletes the objects of the pending tombstones {@code deletes}: the files several at once, then
     * the markers deepest first, each once nothing below it failed (else added to {@code
     * markersWaiting}, by its directory). The keys not deleted; the failures are {@code held}'s.
     */
    private Set<String> sendDeletes(List<String> deletes, HeldBack held, List<Object> markersWaiting) throws IOException {
        return sendDeletes(deletes, held, markersWaiting, Set.of());
    }

    /**
     * As above, where the objects {@code stillThere} stay for now (old names waiting for their new
     * ones): a marker above one of them waits with it. On S3 that changes nothing seen (the object
     * keeps its directory listed); on a server over a file system the directory stays for it, and the
     * marker's delete pending keeps a file made at its name waiting for it too ({@link #pendingDeletesMet}):
     * gone before, the file's PUT met the directory (412, a conflict copy).
     */
    private Set<String> sendDeletes(List<String> deletes, HeldBack held, List<Object> markersWaiting, Set<String> stillThere)
            throws IOException {
        Set<String> refusedAgain = new java.util.HashSet<>();
        for (String k : deletes) {
            if (held.refusedAgain(k)) {
                refusedAgain.add(k);
            }
        }
        // files several at once, then markers deepest first: a directory's contents before it
        List<String> markers = new ArrayList<>();
        List<String> objects = new ArrayList<>();
        for (String k : deletes) {
            if (!refusedAgain.contains(k)) {
                (k.endsWith("/") ? markers : objects).add(k);
            }
        }
        Set<String> failed = deleteObjects(objects, held);
        failed.addAll(refusedAgain);
        markers.sort(Comparator.comparingInt(String::length).reversed());
        for (String k : markers) {
            if (failed.stream().anyMatch(f -> f.startsWith(k)) || stillThere.stream().anyMatch(f -> f.startsWith(k))) {
                // a directory's contents before it: one of them is still there
                VfsPath dir = store.journal.pathOfKey(k.substring(0, k.length() - 1));
                markersWaiting.add(dir == null ? k : dir);
                failed.add(k);
                held.waitsAt(k);
                continue;
            }
            try {
                deleteOne(k);
            } catch (IOException e) {
                held.failed(e, k, deleteRefusals(k));
                failed.add(k);
            }
        }
        return failed;
    }

    /**
     * Deletes the objects of names claimed here and removed since, each once nothing made here
     * before its remove waits any more ({@link Overlay#releaseWaitsFor}): after the pass's uploads
     * and its other deletes, which it may have waited for. One that still waits (an upload that
     * failed, a delete held back, a release before it that waits) goes at a later pass; the others
     * go on. Past objects S3 refuses elsewhere it goes now, as a flock's release does
     * ({@link HeldBack#holdingLock}), said in one warning ({@link #saidLetGoPast}). Whether any were done.
     */
    private boolean deleteReleases(HeldBack held) throws IOException {
        List<String> ready = new ArrayList<>();
        Map<String, List<String>> undecided = new LinkedHashMap<>();
        synchronized (store) {
            for (Map.Entry<String, Tomb> e : store.overlay.tombs.entrySet()) {
                Tomb t = e.getValue();
                if (!t.pending || t.release == null) {
                    continue;
                }
                List<String> before = store.overlay.releaseWaitsFor(t);
                if (before.isEmpty()) {
                    ready.add(e.getKey());
                } else {
                    undecided.put(e.getKey(), before);
                }
            }
        }
        // a remove that waits for another's is decided after it: that one is then left behind, and
        // this one may go past it, or goes now, and this one at the next pass (their deletes in order)
        Set<String> going = new java.util.HashSet<>(ready);
        Map<String, List<String>> pastRefused = new LinkedHashMap<>();
        Set<String> waitedFor = new java.util.TreeSet<>();
        Set<String> kept = new java.util.TreeSet<>();
        for (boolean decided = true; decided; ) {
            decided = false;
            for (java.util.Iterator<Map.Entry<String, List<String>>> it = undecided.entrySet().iterator(); it.hasNext(); ) {
                Map.Entry<String, List<String>> e = it.next();
                List<String> before = e.getValue();
                if (before.stream().anyMatch(undecided::containsKey)) {
                    continue;
                }
                it.remove();
                decided = true;
                Set<String> holding = new java.util.TreeSet<>(held.holdingLock(before, e.getKey()));
                before.stream().filter(going::contains).forEach(holding::add); // a release before it, going now
                if (holding.isEmpty()) {
                    going.add(e.getKey());
                    pastRefused.put(e.getKey(), before);
                } else {
                    kept.add(e.getKey());
                    waitedFor.addAll(holding);
                    held.waitsAt(e.getKey());
                }
            }
        }
        ready.addAll(pastRefused.keySet());
        synchronized (store) {
            for (String k : ready) {
                Tomb t = store.overlay.tombs.get(k);
                t.sent = true; // whatever its answer: a claim of the name no longer takes it over unlooked (S3Storage.claimOnS3)
                t.refused = false;
            }
        }
        if (!kept.isEmpty() && held.any()) {
            // the locks by name: a tester read only the keys waited for, and could not tell which
            // lock another host was kept from, nor that one of those keys was itself a lock
            // sync names every change the lock waits for, the status and log lines a few: a user told
            // to remove what is named could not see the rest of "…, and 5 more" (a tester's)
            String line = kept.size() == 1 ? "the lock " + said(kept) + ", let go here, stays held on S3 until these changes"
                    + " made here before it are up (it goes past the others): " : kept.size() + " locks let go here stay held on S3 ("
                    + said(kept) + ") until these changes made here before them are up (they go past the others): ";
            String lineInFull = kept.size() == 1 ? line : kept.size() + " locks let go here stay held on S3 (" + String.join(", ", kept)
                    + ") until these changes made here before them are up (they go past the others): ";
            held.waits(line + said(waitedFor), lineInFull + inFull(waitedFor));
        }
        pastRefused.forEach((k, before) -> saidLetGoPast(k, "released", held.refusedKeys,
                (int) before.stream().filter(b -> !held.refusedKeys.contains(b)).count()));
        List<String> markers = new ArrayList<>();
        List<String> objects = new ArrayList<>();
        for (String k : ready) {
            if (!held.refusedAgain(k)) {
                (k.endsWith("/") ? markers : objects).add(k);
            }
        }
        Set<String> failed = new java.util.HashSet<>();
        for (Map.Entry<String, IOException> f : inParallelEach(objects, this::deleteClaim)) {
            held.failed(f.getValue(), f.getKey(), deleteRefusals(f.getKey()));
            failed.add(f.getKey());
        }
        for (String k : markers) {
            try {
                deleteClaim(k);
            } catch (IOException e) {
                held.failed(e, k, deleteRefusals(k));
                failed.add(k);
            }
        }
        return !(objects.isEmpty() && markers.isEmpty()) && failed.isEmpty();
    }

    /**
     * Deletes the object {@code k} of a name claimed here and removed since (a lock let go), only
     * while it is still this host's claim ({@link #stillClaimedHere}): else another host has claimed
     * the name since, and the release is done. A DELETE whose answer was lost after S3 did it, sent
     * again, deleted that host's claim (two holders), which {@link #stillAsSeen} could not tell from
     * this host's: both empty, one ETag (a marker: none). So a HEAD goes before each DELETE, which
     * goes once ({@link Bucket#deleteIfOurs}). What remains is the round trip between the two: S3
     * must delete this host's claim and take another's in those milliseconds, which only an earlier
     * DELETE of this host's reaching S3 late (its attempt timed out here) or another host breaking
     * the lock could do. An If-Match on the DELETE would not close it: AWS takes one with an ETag,
     * which two claims share, s3proxy answers it 501, and AWS's If-Match-Last-Modified-Time, which
     * would tell them apart, is for its directory buckets only.
     */
    /** Leads the refusal of a lock's release: S3 refusing an object does not say that other hosts wait. */
    static final String RELEASE_REFUSED = "a lock let go here stays held on S3, kept from other hosts, until its release goes: ";

    private void deleteClaim(String k) throws IOException {
        String madeBy;
        String etag;
        synchronized (store) {
            Tomb t = store.overlay.tombs.get(k);
            if (t == null || !t.pending || t.release == null) {
                return; // taken over by a name made here again
            }
            madeBy = t.release.madeBy();
            etag = t.etag;
        }
        Bucket.Head left;
        try {
            left = askedForDelete(k, () -> bucket.deleteIfOurs(k, h -> stillClaimedHere(h, madeBy, etag)));
        } catch (IOException e) {
            IOException said = e;
            if (e instanceof Bucket.Refused r) {
                if (r.deleteNotDone()) {
                    synchronized (store) {
                        Tomb t = store.overlay.tombs.get(k);
                        if (t != null && t.pending && t.release != null) {
                            t.refused = true; // the same host taking the lock again may keep the claim (S3Storage.claimOnS3)
                        }
                    }
                }
                // what stats, status, sync and umount say: umount said "1 change to upload" and
                // nothing of the lock its leaving journaled kept from every other host (tester's coord6 finding 3)
                said = r.leading(RELEASE_REFUSED);
            }
            failedRequest(said);
            throw said;
        }
        synchronized (store) {
            if (left != null) {
                LOG.info("S3 store {}: kept object {}: another host claimed it after this host let the lock go", spec, k);
            }
            deleted(k);
            store.journal.commit();
        }
    }

    /**
     * Whether {@code h}, the object S3 has at a lock's name, is still the claim this host made
     * with {@code madeBy}; one with no {@link S3Storage#META_MADE_BY} (uploaded anew here since, as
     * {@code : > lock} stamps it) by its ETag, {@code etag}, as {@link #stillAsSeen} judges.
     */
    static boolean stillClaimedHere(Bucket.Head h, String madeBy, String etag) {
        String by = h.meta() == null ? null : h.meta().get(S3Storage.META_MADE_BY);
        return by != null ? by.equals(madeBy) : etag == null || etag.equals(h.etag());
    }

    /**
     * The objects S3 refused when a lock was last let go past them ({@link #saidLetGoPast}): a SQLite
     * transaction lets its lock go several times, a script takes and removes its lock file in a
     * loop, and each would warn again.
     */
    private volatile Set<String> refusedLetGoPast = Set.of();

    /**
     * Says that the lock on {@code lock} was {@code how} ("released", "lowered to a read lock") with
     * the objects {@code refused} S3 refuses, and {@code waiting} more changes waiting for them, not
     * on S3: the one wording of a flock's lease ({@link HostLocks}) and a lock file's or directory's
     * remove ({@link #deleteReleases}). A warning, said again only when what is refused changes.
     */
    void saidLetGoPast(Object lock, String how, Set<String> refused, int waiting) {
        String what = how + " with " + refused.size() + (refused.size() == 1 ? " change" : " changes") + " S3 refuses: "
                + said(refused) + (waiting > 0 ? " (and " + waiting + " that wait for them)" : "")
                + "; they are tried again, and what they are is said again when it changes";
        if (refused.equals(refusedLetGoPast)) {
            LOG.debug("S3 store {}: the lock on {} {}", spec, lock, what);
        } else {
            refusedLetGoPast = Set.copyOf(refused);
            LOG.warn("S3 store {}: the lock on {} {}", spec, lock, what);
        }
    }

    /** Names (paths, keys) said in one line, at most; the rest are counted. */
    private static final int NAMES_SAID = 5;

    /** {@code names} in one line: the first {@link #NAMES_SAID}, and how many more (the lock log's too). */
    static String said(Collection<?> names) {
        List<String> out = new ArrayList<>();
        for (Object n : names) {
            if (out.size() == NAMES_SAID) {
                out.add("and " + (names.size() - NAMES_SAID) + " more");
                break;
            }
            out.add(n.toString());
        }
        return String.join(", ", out);
    }

    /**
     * {@code names} all, for {@code chibifs sync}: in the line where {@link #said} would cut none,
     * else one a line below it.
     */
    static String inFull(Collection<?> names) {
        if (names.size() <= NAMES_SAID) {
            return said(names);
        }
        StringBuilder out = new StringBuilder("these " + names.size() + ":");
        for (Object n : names) {
            out.append("\n  ").append(n);
        }
        return out.toString();
    }

    /**
     * A pass's failure whose lines cut a list of names short ({@link #said}), as status and the log
     * say it; {@link #inFull} names them all, as {@code chibifs sync} says it (S3Storage.sync).
     */
    static final class CutShort extends Bucket.Unavailable {
        final String inFull;

        CutShort(String message, String inFull, Throwable cause) {
            super(message, cause);
            this.inFull = inFull;
        }
    }

    private void deleteOne(String k) throws IOException {
        try {
            askedForDelete(k, () -> {
                bucket.delete(k);
                return null;
            });
        } catch (IOException e) {
            failedRequest(e);
            throw e;
        }
        synchronized (store) {
            deleted(k);
            store.journal.commit();
        }
    }

    /**
     * Deletes the objects {@code keys} of pending tombstones: a thousand with each request (an
     * {@code rm -rf} of 10,000 files is ten requests, not 10,000 one at a time, which a umount would
     * wait for), those a batch did not remove one by one. The keys not deleted for a failure
     * ({@code held}'s), which their directories' markers wait for.
     */
    private Set<String> deleteObjects(List<String> tombstoned, HeldBack held) throws IOException {
        Set<String> failed = new java.util.HashSet<>();
        // sorted: a batch said again leads with the same key (the tombs' map's order changed it)
        Map<String, String> asSeen = stillAsSeen(tombstoned, held, failed);
        List<String> keys = asSeen.keySet().stream().sorted().toList();
        // those S3 refused before in batches of their own, asked once (askedForDelete): with the
        // others, a 500 for them cost the client's retries at each retry and after every restart
        List<List<String>> batches = new ArrayList<>();
        Map<Boolean, List<String>> byRefused = new java.util.TreeMap<>();
        for (String k : keys) {
            byRefused.computeIfAbsent(deleteRefusals(k) > 0, r -> new ArrayList<>()).add(k);
        }
        for (List<String> some : byRefused.values()) {
            for (int i = 0; i < some.size(); i += Bucket.MAX_DELETE_BATCH) {
                batches.add(some.subList(i, Math.min(some.size(), i + Bucket.MAX_DELETE_BATCH)));
            }
        }
        List<String> left = new ArrayList<>();
        for (List<String> batch : batches) {
            // each as the version this host saw, where S3 takes the condition (a DeleteObjects' ETag):
            // a tester's rename of a directory of 1,000 files on host A deleted lines host B wrote into
            // 7 of them between A's listing and its delete, 0.3-0.7 s apart against s3proxy
            Map<String, String> ifMatch = new java.util.HashMap<>();
            if (bucket.takesConditionalDeletes()) {
                batch.forEach(k -> {
                    if (asSeen.get(k) != null) {
                        ifMatch.put(k, asSeen.get(k));
                    }
                });
            }
            if (batch.size() == 1 && ifMatch.isEmpty()) {
                left.addAll(batch); // one request either way
                continue;
            }
            Bucket.NotDeleted notDeleted;
            try {
                notDeleted = askedForDelete(batch, () -> bucket.deleteAll(batch, ifMatch));
            } catch (IOException e) {
                failedRequest(e);
                held.failedBatch(e, batch);
                failed.addAll(batch);
                continue;
            }
            Set<String> again = new java.util.HashSet<>(notDeleted.again());
            synchronized (store) {
                for (String k : batch) {
                    if (notDeleted.changed().contains(k)) {
                        keptWrittenSince(k);
                    } else if (!again.contains(k) && !notDeleted.refused().containsKey(k)) {
                        deleted(k);
                    }
                }
                store.journal.commit();
            }
            left.addAll(notDeleted.again());
            // S3's refusal of each, taken as it: a DELETE of each would only hear it again
            refusedDeletes(notDeleted.refused());
            // said as a DELETE's refusal is (the log's warning, stats, status, umount): S3's answer
            // for a key in a batch was taken in silence, and stats said "answers"
            noteRefusedInBatch(notDeleted.refused());
            notDeleted.refused().forEach((k, r) -> {
                held.failed(r, k, deleteRefusals(k));
                failed.add(k);
            });
        }
        for (Map.Entry<String, IOException> f : inParallelEach(left, this::deleteOne)) {
            held.failed(f.getValue(), f.getKey(), deleteRefusals(f.getKey()));
            failed.add(f.getKey());
        }
        return failed;
    }

    /**
     * Runs {@code request}, for the delete of {@code k} (or the check before it): asked once
     * ({@link Bucket#answeredOnce}) where S3 refused that delete before ({@link Tomb#refusals}),
     * here or before a restart, as an upload is; a refusal now is journaled ({@link #refusedDeletes}).
     */
    private <T> T askedForDelete(String k, Bucket.IOSupplier<T> request) throws IOException {
        return askedForDelete(List.of(k), request);
    }

    /** As {@link #askedForDelete(String, Bucket.IOSupplier)}, for one request for the deletes of {@code keys}, all refused before or none. */
    private <T> T askedForDelete(List<String> keys, Bucket.IOSupplier<T> request) throws IOException {
        try {
            return deleteRefusals(keys.get(0)) > 0 ? Bucket.answeredOnce(request) : request.get();
        } catch (Bucket.Refused r) {
            refusedDeletes(keys, r);
            throw r;
        }
    }

    /**
     * Journals that S3 refused the deletes of {@code keys}, {@code r}, as {@link #refusedUpload}
     * does for an upload: the replay after a restart asks once for each, and its retries go on from
     * the backoff they had reached: else a delete S3 refuses every time costs the client's retries
     * again at every start.
     */
    private void refusedDeletes(List<String> keys, Bucket.Refused r) {
        Map<String, Bucket.Refused> each = new java.util.LinkedHashMap<>();
        keys.forEach(k -> each.put(k, r));
        refusedDeletes(each);
    }

    /** As {@link #refusedDeletes(List, Bucket.Refused)}, for keys S3 refused each with its own answer (in a DeleteObjects). */
    private void refusedDeletes(Map<String, Bucket.Refused> refused) {
        if (refused.isEmpty()) {
            return;
        }
        synchronized (store) {
            refused.forEach((k, r) -> {
                Tomb t = store.overlay.tombs.get(k);
                if (t != null && t.pending) {
                    t.refusals = t.refusals.and(r, options.clock().millis());
                    store.journal.refused(k, t);
                }
            });
            try {
                store.journal.commit();
            } catch (IOException e) {
                LOG.debug("S3 store {}: cannot journal that S3 refused the delete of {}: {}", spec, said(refused.keySet()), e.getMessage());
            }
        }
    }

    /** A directory with at least this many objects to delete is listed to check them, not asked each with a HEAD. */
    static final int LISTED_FROM = 8;

    /**
     * Of the objects {@code keys} whose tombstones wait, those S3 still holds as this host last saw
     * them (or that it never saw with an ETag). A delete held back (the debounce, S3 away, a crash
     * and the journal) went out unconditioned and removed what another host wrote at that name
     * since: a tester's append on host B, synced, was deleted 20 s later by host A's rename of the
     * file before it. Another host's newer object now stays, as on one disk a name made again after
     * a remove is another file, and the tombstone is done. S3-compatible servers do not all take an
     * If-Match on a delete (s3proxy: 501), so the check is a listing of each directory with several
     * ({@link #LISTED_FROM}) and a HEAD of the others. Each key goes with the ETag it was checked at
     * (null where none was known), which the delete names where S3 takes it ({@link #deleteObjects});
     * elsewhere what another host writes between the check and the delete is still lost. One whose
     * check failed ({@code held}'s) is added to {@code failed} and not deleted.
     */
    private Map<String, String> stillAsSeen(List<String> keys, HeldBack held, Set<String> failed) throws IOException {
        Map<String, String> seen = new java.util.HashMap<>();
        Map<String, List<String>> byDirectory = new java.util.LinkedHashMap<>();
        synchronized (store) {
            for (String k : keys) {
                Tomb t = store.overlay.tombs.get(k);
                if (t != null && t.pending && t.etag != null) {
                    seen.put(k, t.etag);
                    byDirectory.computeIfAbsent(k.substring(0, k.lastIndexOf('/') + 1), d -> new ArrayList<>()).add(k);
                }
            }
        }
        Map<String, String> now = new java.util.concurrent.ConcurrentHashMap<>();
        Set<String> gone = java.util.concurrent.ConcurrentHashMap.newKeySet();
        List<String> asked = new ArrayList<>();
        // one that cannot be checked is not deleted; the others are
        for (Map.Entry<String, List<String>> d : byDirectory.entrySet()) {
            if (d.getValue().size() < LISTED_FROM) {
                asked.addAll(d.getValue());
                continue;
            }
            Set<String> wanted = new java.util.HashSet<>(d.getValue());
            try {
                for (Bucket.Listed o : bucket.list(d.getKey(), true).objects()) {
                    if (wanted.remove(o.key())) {
                        now.put(o.key(), o.etag());
                    }
                }
            } catch (IOException e) {
                failedRequest(e);
                held.failed(e, null);
                d.getValue().forEach(held::waitsAt);
                failed.addAll(d.getValue());
                continue;
            }
            gone.addAll(wanted);
        }
        for (Map.Entry<String, IOException> f : inParallelEach(asked, k -> {
            Bucket.Head h = askedForDelete(k, () -> bucket.head(k));
            if (h == null) {
                gone.add(k);
            } else {
                now.put(k, h.etag());
            }
        })) {
            failedRequest(f.getValue());
            held.failed(f.getValue(), f.getKey(), deleteRefusals(f.getKey()));
            failed.add(f.getKey());
        }
        Map<String, String> out = new java.util.LinkedHashMap<>();
        synchronized (store) {
            boolean done = false;
            for (String k : keys) {
                if (failed.contains(k)) {
                    continue;
                }
                String expected = seen.get(k);
                if (expected == null || expected.equals(now.get(k))) {
                    out.put(k, expected);
                } else {
                    if (!gone.contains(k)) {
                        keptWrittenSince(k);
                    } else {
                        deleted(k); // nothing of ours left to remove there
                    }
                    done = true;
                }
            }
            if (done) {
                store.journal.commit();
            }
        }
        return out;
    }

    /**
     * S3 has at {@code k} a version another host wrote after this host removed or moved the one it
     * saw: it stays, and the tombstone is done, as on one disk a name made again after a remove is
     * another file. Under the monitor.
     */
    private void keptWrittenSince(String k) {
        LOG.info("S3 store {}: kept object {}: another host wrote it after this host removed or moved its earlier version",
                spec, k);
        deleted(k); // nothing of ours left to remove there
    }

    /** S3 no longer has the object {@code k}: its tombstone is done; under the monitor. */
    private void deleted(String k) {
        Tomb t = store.overlay.tombs.get(k);
        if (t != null && t.pending) {
            if (t.refusals.count() > 0) {
                tookAfterRefusing("the delete of " + bucket.uriOf(k), t.refusals);
            }
            t.pending = false;
            t.release = null; // what it waited for need not be kept
            t.doneSeq = ++store.overlay.seq;
            t.doneAt = store.ticks();
            store.journal.untomb(k);
        }
    }

    interface Step<T> {
        void run(T item) throws IOException;
    }

    /**
     * Runs {@code step} for each item, {@link #UPLOADERS} at a time: a request is a round trip of its
     * own (about 10 ms to a server on loopback, more to a real one), so one at a time a tar of thousands
     * of files would take minutes to reach S3. The items are independent; the first failure is thrown
     * once all have ended.
     */
    <T> void inParallel(List<T> items, Step<T> step) throws IOException {
        List<Map.Entry<T, IOException>> failed = inParallelEach(items, step);
        if (!failed.isEmpty()) {
            throw failed.get(0).getValue();
        }
    }

    /** As {@link #inParallel}, with each item that failed and its failure, in the items' order, once all have ended. */
    <T> List<Map.Entry<T, IOException>> inParallelEach(List<T> items, Step<T> step) {
        List<Map.Entry<T, IOException>> failed = new ArrayList<>();
        if (items.size() <= 1) {
            for (T item : items) {
                try {
                    step.run(item);
                } catch (IOException e) {
                    failed.add(Map.entry(item, e));
                }
            }
            return failed;
        }
        List<java.util.concurrent.Future<?>> running = new ArrayList<>();
        for (T item : items) {
            running.add(uploaders.submit(() -> {
                step.run(item);
                return null;
            }));
        }
        // every one is waited for, even when interrupted: none may run on past its pass, whose deletes follow
        boolean interrupted = false;
        for (int i = 0; i < running.size(); i++) {
            java.util.concurrent.Future<?> f = running.get(i);
            while (true) {
                try {
                    f.get();
                    break;
                } catch (java.util.concurrent.ExecutionException e) {
                    Throwable c = e.getCause();
                    IOException io = c instanceof IOException x ? x : new IOException("upload failed: " + c, c);
                    failed.add(Map.entry(items.get(i), io));
                    break;
                } catch (java.util.concurrent.CancellationException e) {
                    failed.add(Map.entry(items.get(i), new IOException("the store stopped before it ran")));
                    break;
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
        return failed;
    }

    /**
     * fsync: uploads this file now, returning once S3 has it. It waits only for what this file
     * needs: an upload of it (or of its key) under way, its new parents' markers, the journal's
     * replay while one is left, a pass's deletes; never another file's upload (a 2-byte fsync waited
     * 70 s for a pass sending a 2 GiB file when it took the pass's lock).
     */
    void flushNode(Node n) throws IOException {
        flushNode(n, new java.util.HashSet<>());
    }

    /** {@link #flushNode(Node)}; {@code underWay}: see {@link #deletesFirstFor}. */
    private void flushNode(Node n, Set<Node> underWay) throws IOException {
        underWay.add(n);
        if (!replayed.isEmpty()) {
            // what was changed before the last stop goes up first, in its order, as at the first pass:
            // a file fsynced now (a READY marker) would otherwise reach S3 before what it follows
            awaitForFsync(flushLock, n);
            try {
                HeldBack held = new HeldBack(null, true);
                if (!replayed.isEmpty() && replay(held)) {
                    // what the replay holds back goes first (S3 away, or a journal an earlier version
                    // wrote, whose first refusal holds every change since): the fsync fails, as status says
                    throw held.unsent().failure();
                }
                held.unsent(); // what S3 refused waits for its retry time, as after a pass
            } finally {
                flushLock.unlock();
            }
        }
        if (underWay.size() == 1) {
            sentAsRing(n); // where it is in one, its upload went with it: what follows finds it clean
        }
        deletesFirstFor(n, underWay);
        awaitForFsync(deletesOrFsyncs.readLock(), n);
        try {
            VfsPath p;
            synchronized (store) {
                if (!n.dirty || n.path == null) {
                    return;
                }
                p = n.path; // read once: an unlink meanwhile sets it to null
            }
            mkdirsFirst(p.parent(), n);
            upload(n, true);
            // the sync of the journal without the monitor: under it, every other request (a lookup, an
            // open, a close) waited for the disk, tens to hundreds of ms an fsync on a loaded machine
            CacheFile journalFile;
            synchronized (store) {
                journalFile = store.journal.toForce();
            }
            store.journal.forceAndClose(journalFile);
        } finally {
            deletesOrFsyncs.readLock().unlock();
        }
    }

    /**
     * fsync: sends now the deletes that must reach S3 before the PUT of {@code n} or of its new
     * parents' markers ({@link #pendingDeletesMet}), with the deletes below such a marker, as a pass
     * would send them first ({@link #uploadAfterDeletes}); under {@link #deletesOrFsyncs}' exclusive
     * side, as a pass's deletes. One that waits for the upload of an old name's new one (a directory
     * moved aside, then a file made at its name) has that upload sent first, as an fsync of it
     * would: before, the PUT went at once and met the moved directory's marker, a conflict copy on a
     * server over a file system (tester, 5 of 5). {@code underWay}: the nodes whose fsync is under
     * way on this thread, never sent again (moves in a ring, x to y and y to x, wait for each other:
     * the PUT goes as before, where {@link #sentAsRing} has not sent them). One that waits for a
     * lock's release is left to a pass. Throws where one failed: the PUT would be refused, or kept as
     * a conflict copy, on a server over a file system.
     */
    private void deletesFirstFor(Node n, Set<Node> underWay) throws IOException {
        List<String> deletes = new ArrayList<>();
        Set<Node> uploadsFirst = new java.util.LinkedHashSet<>();
        for (boolean newNamesSent = false; ; newNamesSent = true) {
            deletes.clear();
            uploadsFirst.clear();
            synchronized (store) {
                if (!n.dirty || n.path == null) {
                    return;
                }
                List<String> puts = new ArrayList<>();
                puts.add(store.objectKey(n.path, n));
                for (VfsPath p = n.path.parent(); !p.isRoot(); p = p.parent()) {
                    Node d = store.overlay.nodes.get(p);
                    if (d != null && d.dirty) {
                        puts.add(store.dirKey(p));
                    }
                }
                Set<String> met = new java.util.TreeSet<>();
                for (String put : puts) {
                    met.addAll(pendingDeletesMet(put));
                }
                if (met.isEmpty()) {
                    return;
                }
                Map<String, Node> waiting = oldNamesWaiting();
                store.overlay.tombs.forEach((k, t) -> {
                    if (t.pending && t.release == null
                            && met.stream().anyMatch(m -> k.equals(m) || m.endsWith("/") && k.startsWith(m))) {
                        Node newName = waiting.get(k);
                        if (newName == null) {
                            deletes.add(k);
                        } else if (!underWay.contains(newName)) {
                            uploadsFirst.add(newName);
                        }
                    }
                });
            }
            if (newNamesSent || uploadsFirst.isEmpty()) {
                break;
            }
            for (Node newName : uploadsFirst) {
                flushNode(newName, underWay);
            }
        }
        if (deletes.isEmpty() || deletesOrFsyncs.getReadHoldCount() > 0) {
            return; // (a thread holding the shared side, a claim's, would wait for itself: a pass sends them)
        }
        awaitForFsync(deletesOrFsyncs.writeLock(), n);
        try {
            HeldBack held = new HeldBack(null, true);
            held.deleting = true;
            sendDeletes(deletes, held, new ArrayList<>());
            if (held.any()) {
                throw held.thrown();
            }
        } finally {
            deletesOrFsyncs.writeLock().unlock();
        }
    }

    /**
     * Takes {@link #deletesOrFsyncs}' shared side for a claim of a name this host removed, and returns
     * it, to be let go once the name is made here (S3Storage's claimOnS3): meanwhile no pass sends a
     * delete, so a tombstone still pending is one whose delete is not under way, and stays so. Waits
     * only while a pass's deletes are under way, never for its uploads, nor for an fsync's: a pass
     * waiting for its deletes' turn behind an fsync (fair) is passed, as the claim is short.
     */
    java.util.concurrent.locks.Lock noDeletesSent() throws IOException {
        java.util.concurrent.locks.Lock shared = deletesOrFsyncs.readLock();
        if (shared.tryLock()) {
            return shared;
        }
        try {
            shared.lockInterruptibly();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new java.io.InterruptedIOException("a create waiting for the deletes under way interrupted");
        }
        return shared;
    }

    /**
     * Sends now the delete of the object {@code k}, removed here, for a claim of its name that must
     * not wait for a pass: one whose delete waits for nothing (not a release, not an old name whose
     * new one is not up). The caller holds {@link #noDeletesSent}. Checked as a pass's is: another
     * host's object written there since stays ({@link #stillAsSeen}). Throws where it failed.
     */
    void deleteForClaim(String k) throws IOException {
        synchronized (claimDeletes) {
            synchronized (store) {
                Tomb t = store.overlay.tombs.get(k);
                if (t == null || !t.pending) {
                    return; // sent by another claim of the name here, or made again meanwhile
                }
            }
            HeldBack held = new HeldBack(null, true);
            held.deleting = true;
            deleteObjects(List.of(k), held);
            if (held.any()) {
                throw held.thrown();
            }
        }
    }

    /**
     * Waits until this host is uploading nothing under the key {@code k}: a claim of a name whose
     * node went (removed, moved) while it went up, which then leaves a tombstone there. The end of an
     * upload wakes it ({@link #upload(Node, boolean)}); a rename's copy does not, hence the bound.
     */
    void awaitNoUploadOf(String k) throws IOException {
        synchronized (claims) {
            while (true) {
                synchronized (store) {
                    if (!store.overlay.inflight.contains(k)) {
                        return;
                    }
                }
                try {
                    claims.wait(FSYNC_LOOKS_EVERY_MILLIS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new java.io.InterruptedIOException("a create waiting for the upload of " + k + " interrupted");
                }
            }
        }
    }

    /**
     * Takes {@code lock} for an fsync of {@code n}: while S3 is known to be away the fsync answers at
     * once (EIO), as every request then does, not after the holder has waited out its upload's
     * deadline (up to a minute).
     */
    private void awaitForFsync(java.util.concurrent.locks.Lock lock, Node n) throws IOException {
        try {
            while (!lock.tryLock(FSYNC_LOOKS_EVERY_MILLIS, java.util.concurrent.TimeUnit.MILLISECONDS)) {
                bucket.refuseWhileUnreachable("put", String.valueOf(n.path));
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new java.io.InterruptedIOException("fsync of " + n.path + " interrupted");
        }
    }

    /** The markers of new parent directories go up before a file fsynced inside them ({@code n}). */
    private void mkdirsFirst(VfsPath dir, Node n) throws IOException {
        List<Node> dirs = new ArrayList<>();
        synchronized (store) {
            for (VfsPath p = dir; !p.isRoot(); p = p.parent()) {
                Node d = store.overlay.nodes.get(p);
                if (d != null && d.dirty) {
                    dirs.add(0, d);
                }
            }
        }
        for (Node d : dirs) {
            upload(d, true);
        }
    }

    /**
     * Uploads {@code n} once no other upload of it, or of the key it goes up under, is under way
     * (one waits for the other): two at once, each conditional on the version before, the second
     * met the first's object (412) and kept this host's own content as a conflict copy. An
     * {@code fsync} waiting looks whether S3 has become known to be away, as in {@link #awaitForFsync}.
     * One claim at a time per thread, so claims cannot deadlock.
     */
    private void upload(Node n, boolean fsync) throws IOException {
        String k = claim(n, fsync);
        try {
            upload(n);
            synchronized (store) {
                if (n.refusals.count() > 0) {
                    // the key, as the refusal's warning named it, and the path the mount shows
                    tookAfterRefusing(k == null ? "an upload" : "the upload of " + bucket.uriOf(k) + (n.path == null ? "" : " (" + n.path + ")"),
                            n.refusals);
                }
                n.refusals = Overlay.Refusals.NONE;
            }
        } catch (Bucket.Refused r) {
            refusedUpload(n, r);
            throw r;
        } finally {
            synchronized (claims) {
                uploading.remove(n);
                if (k != null) {
                    uploadingKeys.remove(k);
                }
                claims.notifyAll();
            }
        }
    }

    /**
     * Journals that S3 refused {@code n}'s upload, {@code r}: the replay after a restart asks S3 for it
     * once, as the passes here do after its first refusal. A mark the journal cannot take costs those
     * retries once more at the next start, no more.
     */
    private void refusedUpload(Node n, Bucket.Refused r) {
        synchronized (store) {
            n.refusals = n.refusals.and(r, options.clock().millis());
            if (!n.dirty || n.path == null) {
                return;
            }
            try {
                store.journal.refused(n);
                store.journal.commit();
            } catch (IOException e) {
                LOG.debug("S3 store {}: cannot journal that S3 refused {}: {}", spec, n.path, e.getMessage());
            }
        }
    }

    /** Waits for and takes the claim on {@code n} and its key ({@link #upload(Node, boolean)}); the key claimed, or null. */
    private String claim(Node n, boolean fsync) throws IOException {
        while (true) {
            String k;
            synchronized (store) {
                k = n.path == null ? null : store.objectKey(n.path, n);
            }
            synchronized (claims) {
                if (!uploading.contains(n) && (k == null || !uploadingKeys.contains(k))) {
                    // the key read again: a rename between the two reads claims the new one
                    String now;
                    synchronized (store) {
                        now = n.path == null ? null : store.objectKey(n.path, n);
                    }
                    if (java.util.Objects.equals(k, now)) {
                        uploading.add(n);
                        if (k != null) {
                            uploadingKeys.add(k);
                        }
                        return k;
                    }
                    continue;
                }
                try {
                    claims.wait(FSYNC_LOOKS_EVERY_MILLIS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new java.io.InterruptedIOException("upload of " + n.path + " interrupted");
                }
            }
            if (fsync) {
                bucket.refuseWhileUnreachable("put", String.valueOf(n.path));
            }
        }
    }

    /**
     * {@link #conflict} for an upload read where the file is: the copy kept beside theirs is made
     * from a snapshot, which must still be the content that went up ({@code sha}). False when the
     * file changed since: nothing done.
     */
    private boolean conflictFromSnapshot(Node n, VfsPath p, long gen, String sha, Map<String, String> meta)
            throws IOException {
        return fromSnapshot(n, gen, sha, snap -> conflict(n, p, gen, snap, sha, meta));
    }

    /** What keeps a copy of a file's content, from a snapshot of it ({@link #fromSnapshot}). */
    @FunctionalInterface
    private interface CopyKept {
        void keep(Path snap) throws IOException;
    }

    /**
     * Has {@code keep} make a copy of {@code n} from a snapshot, which must still be the content that
     * went up ({@code sha}); false, with nothing done, where the file changed since.
     */
    private boolean fromSnapshot(Node n, long gen, String sha, CopyKept keep) throws IOException {
        Path snap = uploadDir.resolve(n.ino + "." + gen);
        try {
            if (!snapshot(store.dataFile(n.ino), snap).equals(sha)) {
                return false;
            }
            keep.keep(snap);
            return true;
        } finally {
            Files.deleteIfExists(snap);
        }
    }

    private static void deleteSnapshot(Path snap) throws IOException {
        if (snap != null) {
            Files.deleteIfExists(snap);
        }
    }

    /** Says, once in a while, why file {@code p} waits: only this says it (a failure to reach S3 is said where it is noted). */
    private synchronized void failedToCopy(VfsPath p, IOException e) {
        String why = p + " (" + e.getMessage() + ")";
        long now = S3Options.monotonicMillis();
        if (!why.equals(copyFailure) || now - copyFailureSaidAt > COPY_FAILURE_REPEAT_MILLIS) {
            copyFailure = why;
            copyFailureSaidAt = now;
            LOG.warn("S3 store {}: cannot copy {} for its upload: tried again every few seconds", spec, why);
        }
    }

    /** Copies {@code file} to {@code snap}; the SHA-256 of what was copied. */
    private String snapshot(Path file, Path snap) throws IOException {
        MessageDigest md = ContentHash.digest();
        try (FileChannel in = FileChannel.open(file, StandardOpenOption.READ);
             OutputStream out = Files.newOutputStream(snap);
             DigestOutputStream dout = new DigestOutputStream(out, md)) {
            countedAsRead(java.nio.channels.Channels.newInputStream(in)).transferTo(dout);
        }
        return ContentHash.hex(md);
    }

    /** The SHA-256 of {@code file}, read to send it: counted in {@link #readToSend}. */
    private String hashToSend(Path file) throws IOException {
        try (InputStream in = countedAsRead(Files.newInputStream(file))) {
            return ContentHash.of(in);
        }
    }

    private InputStream countedAsRead(InputStream in) {
        return new FilterInputStream(in) {
            @Override
            public int read() throws IOException {
                int b = super.read();
                if (b >= 0) {
                    readToSend.increment();
                }
                return b;
            }

            @Override
            public int read(byte[] buf, int off, int len) throws IOException {
                int n = super.read(buf, off, len);
                if (n > 0) {
                    readToSend.add(n);
                }
                return n;
            }
        };
    }

    /** The bytes of files read here to send them since the store opened: {@link #readToSend}. */
    long readToSend() {
        return readToSend.sum();
    }

    /** Uploads one dirty node, conditional on S3 having what this host last saw. Holds its claim ({@link #upload(Node, boolean)}). */
    private void upload(Node n) throws IOException {
        if (n.dir) {
            uploadMarker(n);
            return;
        }
        if (uploadedInPlace(n) || uploadedAsCopy(n)) {
            return;
        }
        store.fetches.fetch(n);
        for (int attempt = 0; ; attempt++) {
            VfsPath p;
            long gen;
            String base;
            Map<String, String> meta = new LinkedHashMap<>();
            synchronized (store) {
                if (!n.dirty || n.path == null) {
                    return;
                }
                p = n.path;
                gen = n.gen;
                base = n.remoteEtag;
                putAttributes(n, meta);
            }
            // a file that goes up in parts is read where it is, each part checked against the writes
            // since (nobody sees the object before the last part); others, and a file that kept changing
            // through every try, from a snapshot: what goes up is one version even while a handle writes on
            Path data = store.dataFile(n.ino);
            boolean direct;
            try {
                direct = attempt < SNAPSHOT_TRIES && bucket.inParts(Files.size(data));
            } catch (NoSuchFileException e) {
                store.cacheDirectoryGone(); // said, if it is why
                return; // removed meanwhile: nothing to upload
            }
            // the copy that goes up; null where the file itself does
            Path snap = direct ? null : uploadDir.resolve(n.ino + "." + gen);
            String sha;
            try {
                sha = direct ? hashToSend(data) : snapshot(data, snap);
            } catch (NoSuchFileException e) {
                deleteSnapshot(snap);
                store.cacheDirectoryGone(); // said, if it is why
                return; // removed meanwhile: nothing to upload
            } catch (IOException e) {
                // the cache disk full, most likely: a partial copy must not take the room it needs
                try {
                    deleteSnapshot(snap);
                } catch (IOException noCopyThere) {
                    // where the copy could not even begin (its directory gone), nothing is left of it
                }
                if (!direct && attempt < SNAPSHOT_TRIES) {
                    // the file goes up from where it is, in parts each checked against the writes since,
                    // as a large file does: a copy it had no room for (bytes, or inodes) kept it, and every
                    // file after it in the pass, from going up at all, and its fsync failed (a tester's
                    // 12 MiB file on an 8 MiB cache held back a 13-byte one for good)
                    direct = true;
                    snap = null;
                    sha = hashToSend(data);
                } else {
                    failedToCopy(p, e);
                    throw e;
                }
            }
            Path source = direct ? data : snap;
            long appendsFrom;
            long upTo;
            synchronized (store) {
                if (n.gen != gen && attempt < SNAPSHOT_TRIES) {
                    deleteSnapshot(snap);
                    continue;
                }
                gen = n.gen;
                appendsFrom = n.appendsFrom;
                upTo = n.size;
            }
            if (!direct) {
                upTo = Files.size(snap); // what went up, should the file have grown since
            }
            long readGen = gen;
            java.util.function.BooleanSupplier unchanged = direct ? () -> {
                synchronized (store) {
                    return n.gen == readGen && n.path != null;
                }
            } : null;
            meta.put(META_SHA, sha);
            String k = store.objectKey(p, n);
            KeptMerge kept;
            synchronized (store) {
                store.overlay.inflight.add(k);
                kept = keptMergeFor(n, k, base, appendsFrom);
            }
            try {
                if (kept != null) {
                    if (uploadOntoKeptMerge(n, p, k, gen, kept, source, upTo, unchanged, meta) == Merge.DONE) {
                        return;
                    }
                    continue; // changed here or on S3 meanwhile: the next attempt reads again
                }
                String etag;
                try {
                    if (appendsFrom != NOT_APPENDS && appendsFrom >= upTo && base != null) {
                        // nothing appended since S3 had this host's appends (in version base, or in a merge
                        // with another host's lines made while the file stayed open here): the PUT on the
                        // condition of base succeeds only where S3 still has base. Sent where a merge or
                        // another host replaced it, a log kept open went up whole only to be refused, at
                        // the pass after each merge and at its close (5 MiB to learn what a HEAD tells)
                        Bucket.Head now = bucket.head(k);
                        if (now != null && now.etag() != null && !now.etag().equals(base)) {
                            throw new Bucket.PreconditionFailed(k + ": S3 no longer has version " + base);
                        }
                    }
                    // a file only appended to since S3's version: S3 copies that version's bytes, which
                    // are the file's up to appendsFrom (where a merge left base behind the object, the
                    // copy's If-Match fails as the PUT's would, and the appends merge again)
                    etag = putOnce(k, source, meta, base, sha, unchanged, appendsFrom == NOT_APPENDS ? 0 : appendsFrom);
                } catch (Bucket.Missing e) {
                    if (appendsFrom == NOT_APPENDS || appendsFrom == 0 || appendsFrom >= upTo) {
                        // removed on S3 since this host saw it: a change made here outlives a delete made there
                        etag = putOnce(k, source, meta, null, sha, unchanged, 0);
                    } else {
                        // only appended to since, onto the version that went: its appends alone go up
                        // (mergeAppends onto no version), not that version's bytes again
                        Merge merge = mergeAppends(n, p, k, gen, source, appendsFrom, upTo, upTo, meta, unchanged);
                        if (merge == Merge.AGAIN) {
                            continue;
                        }
                        if (merge == Merge.CONFLICT) {
                            if (!direct) {
                                conflict(n, p, gen, snap, sha, meta);
                            } else if (!conflictFromSnapshot(n, p, gen, sha, meta)) {
                                continue;
                            }
                        }
                        return;
                    }
                }
                synchronized (store) {
                    wentUp(n, p, k, gen, etag, sha);
                    if (n.dirty && n.appendsFrom != NOT_APPENDS && n.path != null) {
                        n.appendsFrom = upTo; // appended to while it went up: S3 has what was before
                        store.journal.put(n);
                        store.journal.commit();
                        if (n.writers > 0) {
                            n.firstDirty = store.ticks();
                            n.due = store.overlay.dueWhileOpen(n);
                        }
                    }
                }
            } catch (Bucket.PreconditionFailed e) {
                requireNoPendingDeleteMet(n, p, k, e);
                Bucket.Head ours = attempt < SNAPSHOT_TRIES ? lostUploadThere(n, k) : null;
                if (ours != null) {
                    // not another host's change: this host's own upload that landed unbeknownst to it
                    bucket.landedUnanswered(ours.size());
                    synchronized (store) {
                        n.remoteEtag = ours.etag();
                        S3Storage.uploaded(n, ours.modified()); // its answer lost: no Date of it
                        n.lostUploads = null;
                    }
                    continue; // the finally block drops this snapshot; the next attempt takes another
                }
                if (appendsFrom != NOT_APPENDS) {
                    Merge merge = mergeAppends(n, p, k, gen, source, appendsFrom, upTo, upTo, meta, unchanged);
                    if (merge == Merge.DONE) {
                        return;
                    }
                    if (merge == Merge.AGAIN) {
                        continue;
                    }
                }
                if (!direct) {
                    conflict(n, p, gen, snap, sha, meta);
                } else if (!conflictFromSnapshot(n, p, gen, sha, meta)) {
                    continue; // written to meanwhile: the next attempt reads it again
                }
            } catch (Bucket.SourceChanged e) {
                continue; // written to or removed while it went up: aborted; the next attempt reads again, or ends
            } catch (IOException e) {
                if (direct && e instanceof NoSuchFileException && !Files.exists(data)) {
                    continue; // removed while it went up (its cached content with it): the next attempt ends
                }
                if (Bucket.uploadGone(e) && attempt < SNAPSHOT_TRIES) {
                    // S3 answers, and nothing here failed: no outage to report, or to recover from
                    LOG.warn("S3 store {}: the upload in parts of {} was aborted on S3 before it completed (by another"
                            + " host that took it for one left behind, or a lifecycle rule); it goes up again", spec, p);
                    continue;
                }
                requireNoPendingDeleteMet(n, p, k, e);
                VfsPath file = fileAbove(e, p, k, false);
                if (file != null) {
                    if (!direct) {
                        keptBesideFile(n, p, gen, file, snap, sha, meta);
                    } else if (!fromSnapshot(n, gen, sha, keptBesideFile(n, p, readGen, file, sha, meta))) {
                        continue; // written to meanwhile: the next attempt reads it again
                    }
                    return;
                }
                synchronized (store) {
                    if (n.lostUploads == null) {
                        n.lostUploads = new ArrayList<>(1);
                    }
                    if (n.lostUploads.size() < MAX_LOST_UPLOADS) {
                        n.lostUploads.add(sha);
                    }
                }
                failedRequest(e);
                throw e;
            } finally {
                synchronized (store) {
                    store.overlay.inflight.remove(k);
                    if (kept != null && n.keptMerge == kept) {
                        // not gone up: the kept merge is S3's version again, without the appends added
                        try (FileChannel f = FileChannel.open(kept.file(), StandardOpenOption.WRITE)) {
                            f.truncate(kept.size());
                        } catch (IOException e) {
                            dropKeptMerge(n);
                        }
                    }
                }
                deleteSnapshot(snap);
            }
            return;
        }
    }

    /**
     * Uploads what {@code n} appended since its kept merge ({@code kept}) at the end of that merge:
     * S3 copies the merge where it is a part or more and only the appended bytes go up, with no
     * download. Without it, the copy here, which lacks the other host's lines, went up to be refused
     * at every later upload and at the close, each time merged from a download of the whole object
     * (a tester's 31.6 MiB log came down every 10 s while its writer stayed open). DONE where S3 has
     * them; AGAIN where the file changed meanwhile, or S3 has neither the merge nor a version that
     * continues it (the kept merge is then dropped: the next attempt merges as any appends do).
     */
    private Merge uploadOntoKeptMerge(Node n, VfsPath p, String k, long gen, KeptMerge kept, Path source, long upTo,
                                      java.util.function.BooleanSupplier unchanged, Map<String, String> ours)
            throws IOException {
        try (FileChannel in = FileChannel.open(source, StandardOpenOption.READ);
             FileChannel out = FileChannel.open(kept.file(), StandardOpenOption.WRITE, StandardOpenOption.APPEND)) {
            for (long at = kept.localUpTo(); at < upTo; ) {
                at += in.transferTo(at, upTo - at, out);
            }
        }
        if (unchanged != null && !unchanged.getAsBoolean()) {
            return Merge.AGAIN; // read where the file is, and written to meanwhile
        }
        long size = Files.size(kept.file());
        try {
            Bucket.Head onS3;
            MessageDigest atEnd = kept.atEnd();
            if (size == kept.size() && kept.etagHere() != null) {
                // nothing appended since (the close, most often): whether S3 still has the merge is all to ask
                onS3 = bucket.head(k);
                if (onS3 == null || !kept.etag().equals(onS3.etag())) {
                    throw new Bucket.PreconditionFailed(k + ": S3 no longer has the merge " + kept.etag());
                }
            } else {
                atEnd = digestOf(kept.file(), kept.size(), copyOf(kept.atEnd()));
                String sha = hexSoFar(atEnd);
                Map<String, String> meta = new LinkedHashMap<>(ours);
                meta.put(META_SHA, sha);
                String etag = putOnce(k, kept.file(), meta, kept.etagHere(), sha, null, kept.size());
                onS3 = new Bucket.Head(size, null, etag, meta);
            }
            synchronized (store) {
                mergeWentUp(n, p, k, gen, upTo, kept.file(), onS3, atEnd);
            }
            return Merge.DONE;
        } catch (Bucket.PreconditionFailed e) {
            // another host appended again: this host's appends go at the end of theirs, which
            // continue the merge (only their new bytes come down)
            // (moved since its merge, and another host made the new name meanwhile: all of it goes at their end)
            long ofOurs = kept.etagHere() == null ? 0 : kept.size();
            if (mergeAppends(n, p, k, gen, kept.file(), ofOurs, size, upTo, ours, null) == Merge.DONE) {
                return Merge.DONE;
            }
        } catch (Bucket.Missing e) {
            // removed on S3 meanwhile (rotated away): as appends onto no version, below
        }
        synchronized (store) {
            if (n.keptMerge == kept) {
                dropKeptMerge(n);
            }
        }
        return Merge.AGAIN;
    }

    /** How a {@link #mergeAppends} ended. */
    private enum Merge {
        /** Theirs with this host's appends is on S3. */
        DONE,
        /** The file changed here, or went from S3, meanwhile: the upload tries again. */
        AGAIN,
        /** Another host's version kept coming: this host's goes up as a conflict copy. */
        CONFLICT
    }

    /**
     * Another host changed the object {@code k} of {@code n} since this host's base, and every change
     * made here since was an append: this host's appended bytes (those of {@code source} from
     * {@code from} to {@code upTo}) go up at the end of theirs, conditional on theirs, as two
     * {@code >>} through one host would have left the file (theirs first: it reached S3 first).
     * The object keeps their attributes; its mtime is the later. Where another host removed the
     * object (logrotate's {@code mv log log.1}, an {@code rm}), the appended bytes alone go up as the
     * file anew, with this host's attributes, as a {@code >>} after the rename makes it on one disk:
     * the whole file went up again, and every line rotated into {@code log.1} was in both files (a
     * tester's 861 lines, session 66). Holds the upload's claim.
     */
    private Merge mergeAppends(Node n, VfsPath p, String k, long gen, Path source, long from, long upTo,
                               long localUpTo, Map<String, String> ours, java.util.function.BooleanSupplier unchanged)
            throws IOException {
        Path merged = uploadDir.resolve(n.ino + "." + gen + ".merged");
        try {
            for (int attempt = 0; attempt < MERGE_TRIES; attempt++) {
                Bucket.Head theirs = from >= Bucket.MIN_PART_BYTES ? theirsFromTheirTail(k, source, from, merged) : null;
                if (theirs == null) {
                    theirs = bucket.get(k, merged);
                }
                boolean gone = theirs == null;
                if (gone && from == upTo) {
                    return Merge.AGAIN; // removed on S3 meanwhile, nothing appended here: the file goes up as it is
                }
                if (gone) {
                    CacheFile.replace(merged).close(); // the appends begin the file
                    theirs = new Bucket.Head(0, null, null, ours);
                }
                try (FileChannel in = FileChannel.open(source, StandardOpenOption.READ);
                     FileChannel out = FileChannel.open(merged, StandardOpenOption.WRITE, StandardOpenOption.APPEND)) {
                    for (long at = from; at < upTo; ) {
                        at += in.transferTo(at, upTo - at, out);
                    }
                }
                if (unchanged != null && !unchanged.getAsBoolean()) {
                    return Merge.AGAIN; // read where the file is, and written to meanwhile
                }
                MessageDigest atEnd = digestOf(merged, 0, ContentHash.digest());
                String sha = hexSoFar(atEnd);
                Map<String, String> meta = new LinkedHashMap<>(theirs.meta());
                meta.put(META_SHA, sha);
                meta.put(META_MTIME, Long.toString(Math.max(millisOf(ours.get(META_MTIME)), mtimeOf(theirs))));
                String etag;
                if (from == upTo) {
                    etag = theirs.etag(); // nothing of this host's left to add: theirs is the merge
                } else {
                    try {
                        // their version begins the merge: S3 copies it where it is a part or more
                        // (none: only if S3 still has no object there)
                        etag = putOnce(k, merged, meta, theirs.etag(), sha, null, theirs.size());
                    } catch (Bucket.PreconditionFailed again) {
                        continue; // changed there once more: this host's appends go at the end of that
                    }
                }
                if (gone) {
                    LOG.info("merged: {} was removed on S3 since this host last saw it (moved away, as logrotate does,"
                            + " or deleted); this host's {} bytes appended since went up as the file anew, without the"
                            + " {} before them", p, upTo - from, from);
                } else if (from == upTo) {
                    LOG.info("merged: {} changed on S3 since this host last saw it; this host had appended nothing"
                            + " since, so that version is the file here now", p);
                } else {
                    LOG.info("merged: {} changed on S3 since this host last saw it; this host's {} appended bytes "
                            + "are now at the end of that version", p, upTo - from);
                }
                // with nothing added, the object is theirs as it came, attributes and all
                Bucket.Head onS3 = from == upTo ? theirs : new Bucket.Head(Files.size(merged), null, etag, meta);
                synchronized (store) {
                    mergeWentUp(n, p, k, gen, localUpTo, merged, onS3, atEnd);
                }
                return Merge.DONE;
            }
            return Merge.CONFLICT;
        } finally {
            Files.deleteIfExists(merged);
        }
    }

    /**
     * The other host's version of {@code k} written to {@code merged} with only its bytes past
     * {@code from} downloaded: where it begins with the first {@code from} bytes of {@code source},
     * the version this host's appends went onto (most often, as the other host appended to it too),
     * which the SHA-256 in its metadata confirms. Null where not, or not asked: the caller downloads
     * it whole.
     */
    private Bucket.Head theirsFromTheirTail(String k, Path source, long from, Path merged) {
        try {
            Bucket.Head h = bucket.head(k);
            String sha = h == null ? null : h.meta().get(META_SHA);
            if (sha == null || h.size() < from) {
                return null;
            }
            try (CacheFile mine = CacheFile.openForReading(source); CacheFile out = CacheFile.replace(merged)) {
                if (!store.continues(k, h.etag(), h.size(), sha, mine, from, out)) {
                    return null;
                }
                out.writeAll(mine.range(0, from), 0); // their first bytes are these
            }
            return h;
        } catch (IOException e) {
            LOG.debug("S3 store {}: {} not merged from its new bytes alone: {}", spec, k, e.getMessage());
            return null;
        }
    }


    private static long millisOf(String meta) {
        try {
            return meta == null ? 0 : Long.parseLong(meta);
        } catch (NumberFormatException e) {
            return 0;
        }
    }

    /** The mtime {@code h} says its object's content has: its own metadata's, else S3's time. */
    private static long mtimeOf(Bucket.Head h) {
        long meta = millisOf(h.meta().get(META_MTIME));
        return meta != 0 || h.modified() == null ? meta : h.modified().toEpochMilli();
    }

    /**
     * S3 has {@code merged} ({@code h}): another host's version with {@code n}'s appends, as it was at
     * generation {@code gen}, up to {@code upTo}, at its end; {@code atEnd} has read it. Under the monitor.
     */
    private void mergeWentUp(Node n, VfsPath p, String k, long gen, long upTo, Path merged, Bucket.Head h,
                             MessageDigest atEnd) throws IOException {
        KeptMerge was = n.keptMerge;
        if (was != null && was.movedFrom() != null) {
            // the other host's lines are up under the new name: the old one may go, merge and all
            Overlay.Tomb t = store.overlay.tombs.get(was.movedFrom());
            if (t != null && t.pending && t.release == null) {
                store.overlay.tombstone(was.movedFrom(), was.etag());
                store.journal.commit();
            }
        }
        if (n.path == null || !n.path.equals(p)) {
            dropKeptMerge(n);
            wentUp(n, p, k, gen, h.etag(), null); // renamed or removed meanwhile: as any upload then
            return;
        }
        if (n.gen == gen && n.size == upTo && n.writers == 0) {
            // the merge is its content from now on; handles open keep what they read (close-to-open)
            if (n.keptMerge != null && !n.keptMerge.file().equals(merged)) {
                dropKeptMerge(n); // merged again past it (another host appended again): it leaked, one per log
            }
            Files.move(merged, store.dataFile(n.ino), StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            n.keptMerge = null; // its file was the merge, if it was kept
            n.cached = true;
            n.size = h.size();
            n.gen++;
            store.fromMeta(n, h);
            wentUp(n, p, k, n.gen, h.etag(), n.sha);
            return;
        }
        // changed here meanwhile, or open to write: this host's copy lacks theirs, so its base stays
        // the version before the merge; the merge is kept beside it, and its next upload adds what
        // came since at the merge's end (uploadOntoKeptMerge)
        Path keep = uploadDir.resolve(n.ino + ".merge");
        if (!merged.equals(keep)) {
            Files.move(merged, keep, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        }
        n.keptMerge = n.appendsFrom == NOT_APPENDS ? null
                : new KeptMerge(k, n.remoteEtag, upTo, h.etag(), h.size(), keep, atEnd, null);
        if (n.keptMerge == null) {
            Files.deleteIfExists(keep);
        }
        store.overlay.seq++;
        n.settledGen = Math.max(n.settledGen, gen); // its appends up to gen are on S3
        n.oldNames = null; // up under this name: the old ones may go (settled() says so where it is no merge)
        if (n.appendsFrom != NOT_APPENDS) {
            n.appendsFrom = upTo;
            store.journal.put(n);
            store.journal.commit();
        }
        n.firstDirty = store.ticks();
        // an appender still open with nothing new waits for its next append (writing) or its close
        n.due = n.writers == 0 ? store.ticks() : n.gen == gen ? Long.MAX_VALUE : store.overlay.dueWhileOpen(n);
    }

    /**
     * S3 has {@code n} as it was at generation {@code gen}, at {@code p} (key {@code k}) under
     * {@code etag}; {@code sha} is the content's SHA-256 where this host read it. Under the monitor.
     */
    private void wentUp(Node n, VfsPath p, String k, long gen, String etag, String sha) throws IOException {
        store.overlay.seq++;
        store.overlay.inflight.remove(k);
        if (n.path == null || !n.path.equals(p)) {
            // renamed or removed while it went up: the name it went up under must go again
            Node there = store.overlay.nodes.get(p);
            if (there != null && !there.dir && there.link == n.link) {
                there.remoteEtag = etag;
                store.uploaded(there);
            } else {
                store.overlay.tombstone(k, etag);
                if (n.path != null) {
                    store.overlay.movedAway(p, n);
                }
            }
        } else {
            n.remoteEtag = etag;
            store.uploaded(n);
            n.lostUploads = null;
            n.syncedSeq = store.overlay.seq;
            n.settledGen = Math.max(n.settledGen, gen); // changed since it was read: up to gen went up
            if (n.gen == gen) {
                store.overlay.settled(n);
                if (sha != null) {
                    n.sha = sha;
                    n.shaGen = gen;
                }
            }
            store.journal.put(n);
        }
        store.journal.commit();
    }

    /**
     * Uploads a change of {@code n}'s attributes alone (chmod, touch, setfattr) where this host does
     * not hold its content, and so has not changed it, or holds it unchanged (its SHA-256 the
     * object's) from {@link S3Storage#COPY_RATHER_THAN_PUT_FROM} on: S3 copies the object onto itself with the
     * new metadata (a HEAD for the metadata it keeps, and the copy), so the content neither comes down
     * nor goes up. False where that is not so, or S3 refused (the object changed or went since): the
     * upload then fetches the object as it is now, where it is not here, and puts it back, as for
     * any change. Holds the upload's claim.
     */
    private boolean uploadedInPlace(Node n) throws IOException {
        VfsPath p;
        String k;
        String base;
        long size;
        String sha;
        synchronized (store) {
            if (!n.dirty || n.path == null || n.link || n.remoteEtag == null || n.fetching != null
                    || (n.cached && !unchangedHere(n))) {
                return false;
            }
            p = n.path;
            k = store.objectKey(p, n);
            base = n.remoteEtag;
            size = n.size;
            sha = n.cached ? n.sha : null;
        }
        Bucket.Head h = bucket.head(k);
        if (h == null || !base.equals(h.etag()) || (sha != null && !sha.equals(h.meta().get(META_SHA)))) {
            return false;
        }
        long gen;
        Map<String, String> meta = new LinkedHashMap<>(h.meta()); // its SHA-256, and what other tools put there
        synchronized (store) {
            if (n.cached != (sha != null) || (sha != null && !unchangedHere(n)) || !p.equals(n.path)
                    || !base.equals(n.remoteEtag)) {
                return false; // fetched, written or moved meanwhile: goes up as any
            }
            gen = n.gen;
            putAttributes(n, meta);
            store.overlay.inflight.add(k);
        }
        String etag = copiedForUpload(p, k, () -> bucket.replaceMetadata(k, base, size, meta));
        if (etag == null) {
            return false;
        }
        synchronized (store) {
            wentUp(n, p, k, gen, etag, null);
        }
        return true;
    }

    /** A copy S3 makes in place of an upload's PUT; its ETag. */
    @FunctionalInterface
    private interface CopyRequest {
        String run() throws IOException;
    }

    /**
     * Has S3 make {@code copy} for the upload of the file at {@code p}, key {@code k} (in flight, as
     * an upload is): its ETag, or null where S3 refused it (changed or gone since, the name taken, or
     * no copies there), and the upload then puts the content as any does.
     */
    private String copiedForUpload(VfsPath p, String k, CopyRequest copy) throws IOException {
        try {
            return copy.run();
        } catch (Bucket.PreconditionFailed | Bucket.Missing | Bucket.Refused e) {
            LOG.debug("S3 store {}: {} not copied by S3, put instead: {}", spec, p, e.getMessage());
            synchronized (store) {
                store.overlay.inflight.remove(k);
            }
            return null;
        } catch (IOException e) {
            synchronized (store) {
                store.overlay.inflight.remove(k);
            }
            failedRequest(e);
            throw e;
        }
    }

    /**
     * Uploads {@code n}, moved here from the name it had unchanged in S3, as a copy of that object
     * ({@link Node#movedFrom}): S3 moves the bytes. False where that is not so, or S3 refused (the old
     * object changed or went, or the new name is taken): the upload then puts the content, which is
     * here. Holds the upload's claim; the delete of the old name waits for it ({@link #deletesOrFsyncs}).
     */
    private boolean uploadedAsCopy(Node n) throws IOException {
        MovedFrom from;
        VfsPath p;
        String k;
        String base;
        long size;
        long gen;
        Map<String, String> meta; // null: the old object's, unchanged
        hashCopied(n);
        synchronized (store) {
            from = n.movedFrom;
            n.movedFrom = null; // one try
            if (from == null || !n.dirty || n.path == null || !n.cached) {
                return false;
            }
            if (n.gen == from.gen()) {
                meta = null;
            } else if (from.sha() != null && n.shaGen == n.gen && from.sha().equals(n.sha)) {
                // its attributes changed since the move (a chmod after a mv), its content did not
                meta = new LinkedHashMap<>();
                putAttributes(n, meta);
                meta.put(META_SHA, n.sha);
            } else {
                return false;
            }
            p = n.path;
            k = store.objectKey(p, n);
            base = n.remoteEtag;
            size = n.size;
            gen = n.gen;
            store.overlay.inflight.add(k);
        }
        String etag;
        try {
            etag = copiedForUpload(p, k, () -> bucket.copy(from.key(), from.etag(), size, k, base, meta));
        } catch (IOException e) {
            synchronized (store) {
                n.movedFrom = from; // S3 away: tried again with the upload
            }
            throw e;
        }
        if (etag == null) {
            return false;
        }
        synchronized (store) {
            wentUp(n, p, k, gen, etag, null);
        }
        return true;
    }

    /**
     * Where a copy wrote {@code n} whole from an object ({@link MovedFrom#COPIED}): hashes its content,
     * outside the monitor (the hash its upload would take anyway), and records it as the content's
     * SHA-256 when it is the object's and nothing wrote since, so {@link #uploadedAsCopy} copies it.
     */
    private void hashCopied(Node n) throws IOException {
        MovedFrom from;
        long gen;
        synchronized (store) {
            from = n.movedFrom;
            if (from == null || from.gen() != MovedFrom.COPIED || !n.cached) {
                return;
            }
            gen = n.gen;
        }
        String sha;
        try {
            sha = ContentHash.of(store.dataFile(n.ino));
        } catch (NoSuchFileException e) {
            return; // removed meanwhile
        }
        synchronized (store) {
            if (n.gen == gen && sha.equals(from.sha())) {
                n.sha = sha;
                n.shaGen = gen;
            }
        }
    }

    /** Whether {@code n}, held here, is large enough to copy and its SHA-256 still known (its content unchanged since); under the monitor. */
    private static boolean unchangedHere(Node n) {
        return n.sha != null && n.shaGen == n.gen && n.size >= COPY_RATHER_THAN_PUT_FROM;
    }

    /** The metadata that carries {@code n}'s attributes, in {@code meta}; under the monitor. */
    private static void putAttributes(Node n, Map<String, String> meta) {
        meta.put(META_MODE, Integer.toOctalString(n.mode & 0777));
        meta.put(META_MTIME, Long.toString(n.mtime.toMillis()));
        if (n.xattrs != null) {
            meta.put(ObjectXattrs.META_KEY, ObjectXattrs.encode(n.xattrs));
        } else {
            meta.remove(ObjectXattrs.META_KEY);
        }
    }

    /**
     * The object at {@code key} (its HEAD) when it is one of {@code n}'s lost uploads (the same
     * content: its SHA-256 in the object's metadata), else null.
     */
    private Bucket.Head lostUploadThere(Node n, String key) throws IOException {
        List<String> lost;
        synchronized (store) {
            lost = n.lostUploads == null ? null : List.copyOf(n.lostUploads);
        }
        if (lost == null) {
            return null;
        }
        Bucket.Head now = bucket.head(key);
        return now != null && lost.contains(now.meta().get(META_SHA)) ? now : null;
    }

    /**
     * A conditional PUT that tells its own success from a conflict: when an attempt lands but its answer
     * is lost, the client's retry finds the object changed (412) -- by itself. An object that already
     * holds exactly this content is no conflict either, whoever put it there.
     */
    private String putOnce(String key, Path snap, Map<String, String> meta, String base, String sha) throws IOException {
        return putOnce(key, snap, meta, base, sha, null, 0);
    }

    /**
     * As above, from a file that may change meanwhile when {@code unchanged} is not null, and whose
     * first {@code kept} bytes are those of version {@code base}, which S3 may copy rather than
     * receive ({@link Bucket#put(String, Path, Map, String, java.util.function.BooleanSupplier, long)}).
     */
    private String putOnce(String key, Path from, Map<String, String> meta, String base, String sha,
                           java.util.function.BooleanSupplier unchanged, long kept) throws IOException {
        if (bucket.inParts(Files.size(from)) || kept >= Bucket.MIN_PART_BYTES) {
            abortUploadsLeft();
        }
        try {
            return bucket.put(key, from, meta, base, unchanged, kept);
        } catch (Bucket.PreconditionFailed e) {
            Bucket.Head now = bucket.head(key);
            if (now != null && sha.equals(now.meta().get(META_SHA)) && now.size() == Files.size(from)) {
                LOG.debug("S3 store {}: {} already holds this content", spec, key);
                // an earlier attempt's, whose answer was lost (another host putting these very bytes
                // at the same moment is rarer): they went up
                bucket.landedUnanswered(now.size());
                return now.etag();
            }
            throw e;
        }
    }

    /**
     * Before an upload in parts, at most once a day: aborts the uploads in parts under this store's
     * prefix begun over a day ago, which a host that stopped mid-upload left (S3 keeps and bills their
     * parts until a lifecycle rule removes them). A day, as `rclone cleanup` does: no upload here runs
     * that long. A day by S3's clock, not this host's: a host a day ahead aborted another host's
     * 400 MiB upload under way (`rclone cleanup` has that hazard).
     */
    private void abortUploadsLeft() {
        long now = store.ticks();
        synchronized (store) {
            if (now < nextUploadsLeftCheck) {
                return;
            }
            nextUploadsLeftCheck = now + UPLOADS_LEFT_AFTER.toMillis();
        }
        String prefix = spec.keyPrefix().isEmpty() ? "" : spec.keyPrefix() + "/";
        try {
            int aborted = bucket.abortUploadsOlderThan(prefix, UPLOADS_LEFT_AFTER);
            if (aborted > 0) {
                LOG.info("S3 store {}: aborted {} upload(s) in parts begun over a day ago and never completed"
                        + " (a host stopped mid-upload)", spec, aborted);
            }
        } catch (IOException | RuntimeException e) {
            LOG.debug("S3 store {}: uploads in parts left behind not looked for: {}", spec, e.getMessage());
        }
    }

    private void uploadMarker(Node d) throws IOException {
        VfsPath p;
        synchronized (store) {
            if (!d.dirty || d.path == null) {
                return;
            }
            p = d.path;
            store.overlay.inflight.add(store.dirKey(p));
        }
        try {
            bucket.put(store.dirKey(p), new byte[0], Map.of(), null);
        } catch (Bucket.PreconditionFailed e) {
            requireNoPendingDeleteMet(d, p, store.dirKey(p), e);
            // already there, made by another host or before a crash: as good
        } catch (IOException e) {
            requireNoPendingDeleteMet(d, p, store.dirKey(p), e);
            VfsPath file = fileAbove(e, p, store.dirKey(p), true);
            if (file != null && markerBesideFile(d, p, file)) {
                return;
            }
            failedRequest(e);
            synchronized (store) {
                store.overlay.inflight.remove(store.dirKey(p));
            }
            throw e;
        }
        synchronized (store) {
            store.overlay.inflight.remove(store.dirKey(p));
            if (d.path != null && d.path.equals(p)) {
                store.markerOnS3(d);
            } else {
                store.overlay.seq++;
                store.overlay.tombstone(store.dirKey(p), null);
                if (d.path != null) {
                    store.overlay.movedAway(p, d);
                }
            }
            store.journal.commit();
        }
    }

    /**
     * Another host changed the object since this host last saw it: its version stays, this host's goes
     * up beside it as {@code <name>.conflict-<host>-<time>}, and the name shows theirs from the next open.
     */
    private void conflict(Node n, VfsPath p, long gen, Path snap, String sha, Map<String, String> meta) throws IOException {
        Instant stamp;
        synchronized (store) {
            if (n.conflictMet == null) {
                n.conflictMet = options.clock().instant();
                if (n.path != null && n.dirty) {
                    // before the copy goes up: a restart after it names the copy alike, and putOnce
                    // finds it there, where it made a second copy of the same content
                    store.journal.put(n);
                    store.journal.commit();
                }
            }
            stamp = n.conflictMet;
        }
        VfsPath copy = null;
        String copyKey = null;
        String copyEtag = null;
        Bucket.Head theirs;
        try {
            for (int i = 0; copyEtag == null; i++) {
                copy = conflictName(p, options.host(), stamp, i);
                copyKey = store.objectKey(copy, n);
                if (copyNameTakenHere(copy, n, p)) {
                    // an earlier conflict's copy of this name in the same second, whose content putOnce
                    // would take for this one's, landed unanswered (a tester's second writer of one
                    // content lost what it wrote after)
                    continue;
                }
                try {
                    // putOnce: a first attempt that landed with its answer lost is this copy, not a reason
                    // for a second one under the next number (seen under load: two identical copies)
                    copyEtag = putOnce(copyKey, snap, meta, null, sha);
                } catch (Bucket.PreconditionFailed taken) {
                    // another copy of that name exists: the next number
                }
            }
            theirs = bucket.head(store.objectKey(p, n));
        } catch (IOException e) {
            // called from the upload's catch of the precondition, past its own catch of the rest: a
            // copy S3 refused (a key too long for it, a policy) was retried at every pass without a word
            failedRequest(e);
            throw e;
        }
        try {
            settleConflict(n, p, gen, snap, sha, copy, copyKey, copyEtag, theirs);
        } finally {
            tellOwnMoves();
        }
    }

    /** {@link #conflict}'s end, once this host's version went up as {@code copy} ({@code copyEtag}): the name and the copy here. */
    private void settleConflict(Node n, VfsPath p, long gen, Path snap, String sha, VfsPath copy, String copyKey,
                                String copyEtag, Bucket.Head theirs) throws IOException {
        synchronized (store) {
            n.conflictMet = null;
            // the name and its copy change here, not through a request: what was held of the directory is not
            store.listings.expireListing(p.parent());
            store.overlay.seq++;
            if (n.path == null || !n.path.equals(p)) {
                // renamed or removed here while its copy went up: this host's version is where it went,
                // or its remove, so the copy goes again. Kept, a `mv` at that moment left this host's
                // content twice (the copy and the new name, 150 MB each) and an `rm` brought it back
                store.overlay.tombstone(copyKey, copyEtag);
                store.journal.commit();
                LOG.warn("conflict: {} changed on S3 since this host last saw it, and was moved or removed here while"
                        + " this host's version went up beside it as {}: that copy goes again", p, copy);
                return;
            }
            LOG.warn("conflict: {} changed on S3 since this host last saw it; this host's version is kept as {}", p, copy);
            if (!n.link && store.overlay.nodes.get(copy) == null
                    && store.overlay.nodes.get(copy.parent()) != null) {
                keptAsCopy(n, p, copy, gen, copyEtag, sha, theirs);
                store.journal.commit();
                return;
            }
            long ino = store.overlay.nextIno++;
            Files.copy(snap, store.dataFile(ino), StandardCopyOption.REPLACE_EXISTING);
            Node c = new Node(ino, false, n.link, store.now(), n.mode);
            c.size = Files.size(store.dataFile(ino));
            c.cached = true;
            c.remoteEtag = copyEtag;
            store.uploaded(c);
            c.xattrs = n.xattrs; // what went up with it: maps are replaced, never changed, so one may be shared
            c.sha = sha;
            c.shaGen = c.gen;
            c.syncedSeq = store.overlay.seq;
            if (store.overlay.nodes.get(copy) == null && store.overlay.nodes.get(copy.parent()) != null) {
                store.overlay.attach(copy, c);
                store.journal.put(c);
            } else {
                Files.deleteIfExists(store.dataFile(ino));
            }
            if (n.path != null && n.path.equals(p) && n.gen == gen) {
                contentWentAsCopy(n);
                if (theirs == null || n.link) {
                    n.remoteEtag = null;
                    store.journal.gone(p);
                    store.overlay.detach(n);
                }
                if (theirs != null && n.link) {
                    // their link is a new node: the kernel keeps a link's target by node (CACHE_SYMLINKS)
                    Node l = store.overlay.newLink();
                    l.remoteEtag = theirs.etag();
                    l.size = theirs.size();
                    l.mtime = l.ctime = FileTime.from(theirs.modified() == null ? Instant.now() : theirs.modified());
                    l.syncedSeq = store.overlay.seq;
                    store.overlay.attach(p, l);
                } else if (theirs != null) {
                    n.remoteEtag = theirs.etag();
                    n.size = theirs.size();
                    n.mtime = n.ctime = FileTime.from(theirs.modified() == null ? Instant.now() : theirs.modified());
                    n.gen++;
                    store.fromMeta(n, theirs);
                    store.journal.put(n);
                }
            }
            // else: changed again here meanwhile; its base stays the old ETag, so that upload conflicts too
            store.journal.commit();
        }
    }

    /**
     * {@link #conflict}'s end for a file still at {@code p}: this host's version keeps its node, and
     * so its inode, its locks and every handle open on it, under the name of its copy, which S3 now
     * has as {@code copyEtag}; {@code theirs} comes in at {@code p} as a new node, fetched at its
     * first open (a rename of the local file, as Syncthing keeps its conflicts). Before, the node
     * turned into theirs and its version became a new node, so that what a process still holding the
     * file open wrote after the conflict went nowhere, with "to send: 0" (`b1` kept in the copy, the
     * `b2` written after it lost). Now it goes up onto the copy; so does a change made here while the
     * copy went up ({@code n.gen} past {@code gen}), which before met their version again and became
     * a second copy. The kernel finds the new node at the name once its entry expires, or at once
     * where it opens the name by the node it held (ESTALE, then a lookup). Under the store's monitor.
     */
    private void keptAsCopy(Node n, VfsPath p, VfsPath copy, long gen, String copyEtag, String sha, Bucket.Head theirs) {
        movesToTell.add(new VfsPath[] {p, copy});
        store.journal.gone(p);
        store.dropFormer(n); // the former content of the name, which another host's next version there may extend
        dropKeptMerge(n);
        store.overlay.rename(n, copy);
        n.remoteEtag = copyEtag;
        store.uploaded(n);
        n.listedEtag = null;
        n.doubted = null;
        n.movedFrom = null;
        n.lostUploads = null;
        n.appendsFrom = NOT_APPENDS; // its base is the copy's version now, whose end is not where appends began
        n.syncedSeq = store.overlay.seq;
        n.settledGen = Math.max(n.settledGen, gen);
        if (n.gen == gen) {
            store.overlay.settled(n);
            n.sha = sha;
            n.shaGen = gen;
        }
        store.journal.put(n);
        if (theirs != null) {
            Node t = store.overlay.newNode(false, n.mode);
            t.remoteEtag = theirs.etag();
            t.size = theirs.size();
            t.mtime = t.ctime = FileTime.from(theirs.modified() == null ? Instant.now() : theirs.modified());
            store.fromMeta(t, theirs);
            t.syncedSeq = store.overlay.seq;
            store.overlay.attach(p, t);
            store.journal.put(t);
        }
    }

    /**
     * The moves {@link #keptAsCopy} made, from and to, for {@link #tellOwnMoves}: the mount's node
     * table has the file under its old name, which stands for another host's file now, and the kernel
     * holds that name for it until its entry expires. Guarded by the store's monitor.
     */
    private final List<VfsPath[]> movesToTell = new ArrayList<>();

    /** Tells the store's {@link S3Storage#ownMoves} of {@link #movesToTell}; not under the monitor, so the listener may ask the store. */
    private void tellOwnMoves() {
        List<VfsPath[]> told;
        synchronized (store) {
            if (movesToTell.isEmpty()) {
                return;
            }
            told = List.copyOf(movesToTell);
            movesToTell.clear();
        }
        for (VfsPath[] move : told) {
            try {
                store.ownMoves.moved(move[0], move[1]);
            } catch (RuntimeException e) {
                LOG.warn("S3 store {}: telling the mount that {} is {} now failed", spec, move[0], move[1], e);
            }
        }
    }

    /**
     * When each name another host made a file of, where this host wrote below it, met that
     * ({@link #keptBesideFile}): what this host wrote there in one pass goes to one copy. Dropped a
     * minute after. Guarded by the store's monitor.
     */
    private final Map<VfsPath, Instant> filesMet = new java.util.HashMap<>();
    private static final long FILE_MET_KEPT_MILLIS = 60_000;

    /**
     * The name above {@code p} (or {@code p} itself, for a directory's marker) that is a file on a
     * server over a file system, where the request for {@code key} failed with {@code e}
     * ({@link Bucket#fileAbove}), or null: S3's own error, retried as any.
     */
    private VfsPath fileAbove(IOException e, VfsPath p, String key, boolean dir) {
        if (!(e instanceof Bucket.Refused r) || r.status() < 500) {
            return null;
        }
        String file = bucket.fileAbove(key);
        if (file == null) {
            return null;
        }
        synchronized (store) {
            if (pending(store.overlay.tombs.get(file))) {
                return null; // a file this host removed: the upload waits for its delete (pendingDeletesMet)
            }
            for (VfsPath a = dir ? p : p.parent(); !a.isRoot(); a = a.parent()) {
                if (store.objectKey(a, false, false).equals(file)) {
                    return a;
                }
            }
        }
        return null;
    }

    /**
     * Where {@code p} goes when {@code file}, a directory above it here, is a file on the server:
     * under {@code <file>.conflict-<host>-<time>}, by the same names below it.
     */
    private VfsPath besideFile(VfsPath p, VfsPath file, int i) {
        Instant stamp;
        synchronized (store) {
            Instant now = options.clock().instant();
            filesMet.values().removeIf(at -> now.toEpochMilli() - at.toEpochMilli() > FILE_MET_KEPT_MILLIS);
            stamp = filesMet.computeIfAbsent(file, f -> now);
        }
        VfsPath copy = conflictName(file, options.host(), stamp, i);
        List<String> below = p.segments();
        for (String name : below.subList(file.depth(), below.size())) {
            copy = copy.child(name);
        }
        return copy;
    }

    /**
     * Another host made a file of {@code file}, a directory here that this host wrote {@code p} in
     * ({@code rm -r c1; echo x > c1} there, {@code echo mine > c1/other} here). S3 keeps the two apart,
     * and both hosts then show the directory; but a server over a file system (s3proxy, MinIO's fs mode)
     * cannot hold a key below a file, and answered 500 to this upload at every pass, for good. As a
     * shared disk that syncs would (Dropbox keeps a "conflicted copy" of what it cannot place), nothing
     * of either host is dropped and neither is put over the other: their file keeps its name, and what
     * this host wrote in the directory goes up beside it as a copy of the directory,
     * {@code c1.conflict-<host>-<time>/other}, its names below the directory as they were, every file of
     * one pass in one copy; what was in the directory and not changed here stays removed, as they
     * removed it. Logged as a conflict; the name here shows their file from the next lookup.
     */
    private CopyKept keptBesideFile(Node n, VfsPath p, long gen, VfsPath file, String sha, Map<String, String> meta) {
        return snap -> keptBesideFile(n, p, gen, file, snap, sha, meta);
    }

    private void keptBesideFile(Node n, VfsPath p, long gen, VfsPath file, Path snap, String sha, Map<String, String> meta)
            throws IOException {
        VfsPath copy = null;
        String copyEtag = null;
        try {
            for (int i = 0; copy == null; i++) {
                VfsPath c = besideFile(p, file, i);
                if (copyNameTakenHere(c, n, file)) {
                    continue;
                }
                try {
                    copyEtag = putOnce(store.objectKey(c, n), snap, meta, null, sha);
                    copy = c;
                } catch (Bucket.PreconditionFailed taken) {
                    // another copy of that name exists: the next number
                }
            }
        } catch (IOException e) {
            failedRequest(e);
            throw e;
        }
        LOG.warn("conflict: {} is a file on S3 (another host's) where {} was written here, and S3 holds nothing below"
                + " a file; this host's version is kept as {}", file, p, copy);
        try {
            settleBesideFile(n, p, gen, file, copy, copyEtag, sha);
        } finally {
            tellOwnMoves();
        }
    }

    /** {@link #keptBesideFile}'s end, once this host's version went up as {@code copy} ({@code copyEtag}). */
    private void settleBesideFile(Node n, VfsPath p, long gen, VfsPath file, VfsPath copy, String copyEtag, String sha)
            throws IOException {
        synchronized (store) {
            store.listings.expireListing(file.parent());
            store.overlay.seq++;
            if (n.path != null && n.path.equals(p) && !n.link && store.overlay.nodes.get(copy) == null) {
                // as a file's conflict: the node, and a writer holding it, goes on at the copy, which
                // before was a node of no name (a tester's `b2`, written and fsync'd after, went
                // nowhere; one writing all along left a second copy). Its directories as S3 has them
                directoriesOnS3(copy.parent());
                keptAsCopy(n, p, copy, gen, copyEtag, sha, null);
                store.journal.commit();
                return;
            }
            if (n.path != null && n.path.equals(p) && n.gen == gen) {
                contentWentAsCopy(n);
                n.remoteEtag = null;
                store.journal.gone(p);
                store.overlay.detach(n);
            }
            // else: changed again here meanwhile, and goes up again, to the copy again
            store.journal.commit();
        }
    }

    /**
     * Whether {@code c}, a conflict copy's name for {@code n}, is another's here: a file other than
     * {@code n} at it ({@code n} null: {@code c} is a directory, and any file at it), or, where
     * {@code c} is a name in a copy of the directory that file {@code file} now stands where, a file
     * at a directory above it, up to the copy itself (for a file's own copy, {@code file} is the file's
     * name, and no directory above is looked at). A copy's time stands for a
     * minute, so a second clash of one directory in it met the first's copy, whose `sub` was a file
     * where its own was a directory: 500 to every PUT for that minute, and the directory's marker
     * reported kept where that file stayed (tester).
     */
    private boolean copyNameTakenHere(VfsPath c, Node n, VfsPath file) {
        synchronized (store) {
            Node there = store.overlay.nodes.get(c);
            if (there != null && there != n && (n != null || !there.dir)) {
                return true;
            }
            for (VfsPath d = c.parent(); d != null && d.depth() >= file.depth(); d = d.parent()) {
                Node above = store.overlay.nodes.get(d);
                if (above != null && !above.dir) {
                    return true;
                }
            }
            return false;
        }
    }

    /** Directory {@code dir} and those above it that are not here yet, as S3 has them (keys below them). Under the monitor. */
    private void directoriesOnS3(VfsPath dir) {
        if (store.overlay.nodes.containsKey(dir)) {
            return;
        }
        directoriesOnS3(dir.parent());
        Node d = store.overlay.newNode(true, S3Storage.DIR_MODE);
        d.dirOnRemote = true;
        store.overlay.attach(dir, d);
    }

    /**
     * {@link #keptBesideFile} for directory {@code d} at {@code p}, made here: its marker goes into the
     * copy, and the directory here is as S3 had it, so a listing that shows the file takes its place
     * once nothing of this host's is left in it. False where S3 refused that marker too.
     */
    private boolean markerBesideFile(Node d, VfsPath p, VfsPath file) {
        VfsPath copy = besideFile(p, file, 0);
        for (int i = 1; copyNameTakenHere(copy, null, file); i++) {
            copy = besideFile(p, file, i);
        }
        try {
            bucket.put(store.dirKey(copy), new byte[0], Map.of(), null);
        } catch (Bucket.PreconditionFailed e) {
            // already there: as good
        } catch (IOException e) {
            return false;
        }
        LOG.warn("conflict: {} is a file on S3 (another host's) where directory {} was made here, and S3 holds nothing"
                + " below a file; this host's directory is kept as {}", file, p, copy);
        synchronized (store) {
            store.overlay.inflight.remove(store.dirKey(p));
            store.listings.expireListing(file.parent());
            if (d.path != null && d.path.equals(p)) {
                store.markerOnS3(d);
            }
            try {
                store.journal.commit();
            } catch (IOException e) {
                LOG.debug("S3 store {}: cannot journal that {} went up as {}: {}", spec, p, copy, e.getMessage());
            }
        }
        return true;
    }

    /**
     * {@code n}'s content went up as a conflict copy, a node of its own here, and its name stands for
     * another host's version: nothing of it waits to go up, and its next open fetches. Under the monitor.
     */
    private void contentWentAsCopy(Node n) {
        store.overlay.settled(n);
        n.cached = false;
        n.sha = null;
        n.shaGen = -1;
        n.syncedSeq = store.overlay.seq;
    }

    /**
     * The {@code i}th name (from 0) of a conflict copy of {@code p} kept by {@code host} at {@code at}:
     * the name cut short (and a long host name too) where the whole would pass NAME_MAX bytes, as no
     * lookup could then reach the copy (a 224-byte name made one every mount refused).
     */
    static VfsPath conflictName(VfsPath p, String host, Instant at, int i) {
        String marker = ".conflict-";
        String time = "-" + CONFLICT_TIME.format(at) + (i == 0 ? "" : "-" + i);
        String first = p.fileName().substring(0, p.fileName().offsetByCodePoints(0, 1)); // the name shows, however long the host's
        String hostShown = Names.cutToUtf8Bytes(host, Linux.NAME_MAX - S3Storage.utf8Length(first) - marker.length() - time.length());
        String suffix = marker + hostShown + time;
        String name = Names.cutToUtf8Bytes(p.fileName(), Linux.NAME_MAX - S3Storage.utf8Length(suffix));
        return p.parent().child(name + suffix);
    }

    /** A request of the write-back failed: S3 refusing one object ({@link Bucket.Refused}) is not S3 away. */
    private void failedRequest(IOException e) {
        if (e instanceof Bucket.Refused r) {
            noteRefused(r);
        } else {
            noteOutage(e);
        }
    }

    /** S3 away, or this host failing to send: the whole store waits. */
    void noteOutage(IOException e) {
        synchronized (store) {
            if (outage == null) {
                LOG.warn("S3 store {}: {}; changes wait here and are retried", spec, e.getMessage());
            }
            outage = e.getMessage();
        }
    }

    /** S3 answered, refusing one object: said once for its key ({@link #refusalsSaid}); no outage. */
    private void noteRefused(Bucket.Refused e) {
        String key = String.valueOf(e.key());
        String why = String.valueOf(e.getMessage());
        synchronized (store) {
            if (!why.equals(refusalsSaid.put(key, why))) {
                LOG.warn("S3 store {}: {}; that change waits here and is retried, and {}", spec, why, whatElseWaits());
            }
        }
    }

    /**
     * S3 answered a DeleteObjects refusing the deletes of some of its keys ({@code refused}, by key),
     * as a bucket policy denying deletes does: each key is said once, as {@link #noteRefused} says
     * one, but in one warning for the batch. An {@code rm -rf} of a denied tree logged a warning
     * per file, up to a thousand a batch (a tester's finding, session 72).
     */
    private void noteRefusedInBatch(Map<String, Bucket.Refused> refused) {
        List<Bucket.Refused> unsaid = new ArrayList<>();
        synchronized (store) {
            refused.forEach((k, r) -> {
                if (!String.valueOf(r.getMessage()).equals(refusalsSaid.put(k, String.valueOf(r.getMessage())))) {
                    unsaid.add(r);
                }
            });
            if (unsaid.size() == 1) {
                LOG.warn("S3 store {}: {}; that change waits here and is retried, and {}", spec, unsaid.get(0).getMessage(),
                        whatElseWaits());
            } else if (!unsaid.isEmpty()) {
                Map<String, List<String>> keysByAnswer = new java.util.TreeMap<>();
                for (Bucket.Refused r : unsaid) {
                    keysByAnswer.computeIfAbsent(String.valueOf(r.code()), c -> new ArrayList<>()).add(bucket.uriOf(r.key()));
                }
                List<String> answers = new ArrayList<>();
                keysByAnswer.forEach((code, keys) -> answers.add(code + " for " + keys.size() + " (" + said(keys) + ")"));
                LOG.warn("S3 store {}: S3 refused the deletes of {} objects in one delete-batch (answered HTTP 200): {};"
                        + " those changes wait here and are retried, and {}", spec, unsaid.size(), String.join("; ", answers),
                        whatElseWaits());
            }
        }
    }

    /** What a refusal's warning says of the other changes, which wait for it or go on. Under the monitor. */
    private String whatElseWaits() {
        // at the replay of a journal an earlier version wrote the rest waits (it keeps no old names):
        // a tester read "every other goes on" while nothing else went up, another host's lock included
        return replaying && !store.overlay.dependenciesKnown
                ? "every change made before this start after it and since waits behind it (the journal, written"
                        + " by an earlier version of chibifs, does not say what waits for what; removing or"
                        + " renaming that file lets them go)"
                : "every other goes on but what waits for it (in a directory it is the marker of, its old"
                        + " names, a lock let go beside it)";
    }

    /**
     * Says, once, that S3 took a change it had refused: the warning of its refusal was the last word
     * on it in the log, and an operator who mended a bucket policy read nothing of its effect. How
     * long it waited is left out where the journal did not say when it was first refused (one an
     * earlier version wrote).
     */
    private void tookAfterRefusing(String what, Overlay.Refusals refusals) {
        int times = refusals.count();
        String waited = refusals.firstMillis() == 0 ? "" : " over " + seconds(Math.max(0, options.clock().millis() - refusals.firstMillis()));
        LOG.info("S3 store {}: {} went up, after S3 refused it {} time{}{}", spec, what, times, times == 1 ? "" : "s", waited);
    }

    /**
     * The refusals said that a pass which asked for everything did not meet again (gone up, or
     * gone): said again should S3 refuse them once more. {@code still}: the keys it met refused.
     */
    private void refusalsNoLongerSaid(Collection<Refusal> still) {
        Set<String> keys = new java.util.HashSet<>();
        for (Refusal r : still) {
            keys.add(String.valueOf(r.error().key()));
        }
        synchronized (store) {
            refusalsSaid.keySet().retainAll(keys);
        }
    }

    /**
     * Whether S3 is away, or this host failed to send, since the last pass that got through: what
     * S3 has could not be fetched again (not so where it only refuses objects); under the monitor.
     */
    boolean away() {
        return outage != null;
    }

    /** The flusher's wait after a pass that failed now; under the store's monitor. */
    private long nextBackoff() {
        return backoff == 0 ? BACKOFF_FIRST_MILLIS : Math.min(backoff * 2, BACKOFF_MAX_MILLIS);
    }

    void recovered() {
        synchronized (store) {
            if (outage != null) {
                LOG.info("S3 store {}: reachable again, {} changes to send", spec, store.pendingChanges());
                outage = null;
            }
            backoff = 0;
        }
        forgetDoneTombs();
    }

    /** Drops the tombstones whose deletes were done long enough ago; also in a pass where something failed, which deletes now. */
    private void forgetDoneTombs() {
        synchronized (store) {
            long now = store.ticks();
            store.overlay.tombs.values().removeIf(t -> !t.pending && now - t.doneAt > DONE_TOMB_MILLIS);
        }
    }

    /**
     * A node turned dirty or an object was tombstoned: an idle flusher looks now. Without the
     * sleep it replaces, an idle S3 daemon woke ten times a second to find nothing to do.
     */
    void wake() {
        synchronized (store) {
            if (idle) {
                idle = false;
                store.notifyAll();
            }
        }
    }

    /** Whether the flusher sleeps for want of anything to do (tests). */
    boolean idle() {
        synchronized (store) {
            return idle;
        }
    }

    /** Under the store's monitor: nothing to upload, delete, replay or retry. */
    private boolean nothingWaits() {
        return replayed.isEmpty() && outage == null && !bucket.unreachable() && store.pendingChanges() == 0
                && !store.copies.leftOvers();
    }

    /** When the flusher next keeps the content cache within its size, on the store's ticker; its thread's alone. */
    private long nextEviction;

    void flushLoop() {
        while (true) {
            synchronized (store) {
                if (store.closed) {
                    return;
                }
                boolean sleptIdle = nothingWaits();
                idle = sleptIdle;
                try {
                    store.wait(sleptIdle ? Math.max(1, nextEviction - store.ticks()) : TICK_MILLIS);
                } catch (InterruptedException e) {
                    return;
                }
                boolean woken = sleptIdle && !idle;
                idle = false;
                if (store.closed) {
                    return;
                }
                if (woken) {
                    // its pass a tick from now, as when the loop never slept: a pass at once, while
                    // the writer goes on, sent each write of a run (flush_after 0) on its own
                    continue;
                }
            }
            tick();
        }
    }

    /**
     * One look of the flusher ({@link #flushLoop}; tests call it with their clock): the content cache
     * kept within its size when due, then a pass for what is due, unless the loop backs off. It backs
     * off only when the pass met more than S3 refusing objects (S3 away, this host failing): those
     * have their own retry times ({@link #refusedLately}), and a backoff of the whole pass for them
     * held every other change of the store up to 5 s past its debounce.
     */
    void tick() {
        synchronized (store) {
            if (store.ticks() < backoffUntil) {
                return;
            }
        }
        if (store.ticks() >= nextEviction) {
            nextEviction = store.ticks() + EVICT_EVERY_MILLIS;
            try {
                store.evictBeyondCacheSize();
            } catch (IOException | RuntimeException e) {
                LOG.warn("S3 store {}: keeping the content cache within {} bytes failed: {}", spec,
                        options.cacheSize(), e.toString());
            }
            store.makeRoomWanted();
        }
        Unsent unsent;
        try {
            unsent = store.passDue();
        } catch (IOException | RuntimeException e) {
            backOff();
            if (e instanceof RuntimeException) {
                LOG.warn("S3 store {}: write-back failed: {}", spec, e.toString());
            }
            return;
        }
        // what filled the disk may have gone up in this pass: its room is made now, not at the next
        // eviction pass (status said the disk full of changes not sent for 5 s with "to send: 0")
        store.makeRoomWanted();
        if (unsent != null && !unsent.refusalsOnly()) {
            backOff();
        } else if (unsent != null) {
            synchronized (store) {
                backoff = 0; // S3 answered: a later outage backs off from the first step again
            }
        }
    }

    private void backOff() {
        synchronized (store) {
            backoff = nextBackoff();
            backoffUntil = store.ticks() + backoff;
        }
    }
}
