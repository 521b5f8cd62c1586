package dev.chibifs.fuse;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * What the kernel was told from a store's held answers (an S3 listing, valid for a while, in a
 * directory whose changes are not followed), until when it may keep it: names and nodes
 * ({@link NodeTable.Node#heldUntil}), names told missing, and listings, which are dropped when the
 * answers stop holding. {@code chibifs sync} makes the kernel ask again about all of it
 * ({@link #expireHeldAnswers}).
 */
final class HeldAnswers {

    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(HeldAnswers.class);
    /** How many names told missing from held answers are remembered for {@link #expireHeldAnswers}. */
    static final int MISSING_NAMES_KEPT = 4096;
    /** How long {@link #expireHeldAnswers} waits for the kernel to take its notices (each may wait for a directory's lock). */
    private static final Duration NOTICES_WRITTEN_WITHIN = Duration.ofSeconds(10);
    /** How long an open waits for the drop of a name it may have come through ({@link #awaitNameDrop}). */
    private static final Duration NAME_DROP_WAIT = Duration.ofMillis(100);
    /**
     * How long after a name's drop was posted, once written, an open by its node is taken as not come
     * through it (FuseFileSystem.requireNoNameDropPending): a path walk sends its OPEN microseconds
     * after it found the name, and none finds it once the kernel took the notice. One whose walk found
     * the name just before the kernel took a notice that waited long (for the directory's lock) is
     * taken so too: the window is that wait, not the second.
     */
    static final Duration NAME_DROP_SETTLED = Duration.ofSeconds(1);

    /** A name told missing in directory node {@code parent}. */
    private record MissingName(long parent, String name) {
        @Override
        public int hashCode() {
            return NodeTable.nameHash(parent, name);
        }
    }

    /** Where a dropped held listing is told (the session's notices); null before INIT. */
    private volatile NoticeWriter noticeWriter;
    /** Whether an INVAL_ENTRY may stale a name without unhashing it (set at INIT, before {@link #noticeWriter}). */
    private volatile boolean namesExpireOnly;
    /**
     * Names the kernel was told are missing in a directory whose store held its answers, until when it
     * may keep that ({@link System#nanoTime}); for {@link #expireHeldAnswers}. At most
     * {@link #MISSING_NAMES_KEPT}: past that a name is not remembered, and {@link #missingNotKeptUntil}
     * says until when such a name may be kept.
     */
    private final ConcurrentHashMap<MissingName, Long> heldMissing = new ConcurrentHashMap<>();
    private final AtomicLong missingNotKeptUntil = new AtomicLong();
    /** Drops the listings the kernel keeps while their store holds its answers; made at the first. Guarded by this. */
    private ListingExpiry heldListings;
    private final NodeTable nodes;
    /** Each request thread's buffer for a notification (the file system's). */
    private final ThreadLocal<FuseReply> notices;

    HeldAnswers(NodeTable nodes, ThreadLocal<FuseReply> notices) {
        this.nodes = nodes;
        this.notices = notices;
    }

    /**
     * Notifications that may wait in the kernel go through {@code writer}: the session's; {@code
     * expireOnly}: the kernel can stale a name without unhashing it.
     */
    void noticesThrough(NoticeWriter writer, boolean expireOnly) {
        this.namesExpireOnly = expireOnly;
        this.noticeWriter = writer;
    }

    /** The session ended: no listing is dropped any more. */
    synchronized void stopDroppingListings() {
        if (heldListings != null) {
            heldListings.close();
        }
    }

    /** For tests: held listings are dropped by {@code timer}'s tasks at {@code clock}'s times. Before the session starts. */
    synchronized void dropHeldListingsWith(ListingExpiry.Timer timer, LongSupplier clock) {
        heldListings = new ListingExpiry(0, this::dropHeldListing, timer, clock);
    }

    synchronized ListingExpiry heldListings() {
        if (heldListings == null) {
            heldListings = ListingExpiry.start(0, this::dropHeldListing);
        }
        return heldListings;
    }

    /**
     * The kernel holds names for files the store now has under another name only ({@link
     * NodeTable#takeStaleInKernel}): told to drop each, it looks each up again at its next use; the
     * notices are posted at {@code clock}'s time, read only where there are some (this is on every
     * lookup). Files only, so unhashing one where the kernel cannot stale it harms no working
     * directory. Not in a directory the store's feed follows, whose event for the name tells the
     * kernel (ChangeFollower).
     */
    void dropStaleNames(java.time.Clock clock) {
        java.util.List<NodeTable.StaleName> names = nodes.takeStaleInKernel();
        NoticeWriter w = noticeWriter;
        if (names.isEmpty() || w == null) {
            return;
        }
        long now = clock.millis();
        for (NodeTable.StaleName s : names) {
            NodeTable.Link l = s.link();
            if (l.parent().followKey >= 0) {
                continue;
            }
            s.node().nameDropPostedAt = now;
            s.node().nameDropNotice = w.post(notices.get().invalEntry(l.parent().id, l.name(),
                    namesExpireOnly ? FuseProtocol.EXPIRE_ONLY : 0));
        }
    }

    /**
     * Waits, at most {@link #NAME_DROP_WAIT}, until notice {@code number} is written: it takes its
     * directory's lock in the kernel, which no request waiting here holds (an open's walk has let it go).
     * True once it is written.
     */
    boolean awaitNameDrop(long number) throws InterruptedException {
        NoticeWriter w = noticeWriter;
        if (w != null && !w.awaitWritten(number, NAME_DROP_WAIT.toNanos())) {
            LOG.debug("a name's drop was not taken by the kernel within {} ms", NAME_DROP_WAIT.toMillis());
            return false;
        }
        return w != null;
    }

    /** The store's answers about {@code dir} no longer hold: the kernel lists it again at its next listing. */
    private void dropHeldListing(NodeTable.Node dir) {
        NoticeWriter w = noticeWriter;
        if (w != null) {
            w.post(notices.get().invalInode(dir.id, 0, 0));
        }
    }

    /**
     * The kernel keeps node {@code n}'s name and attributes, told in the reply being written, as long
     * as {@code kept} and {@code attr} say: where that came from its store's held answers, until when
     * is remembered ({@link NodeTable.Node#heldUntil}) for {@link #expireHeldAnswers}.
     */
    static void toldHeld(NodeTable.Node n, FuseFileSystem.Timeouts kept, FuseReply.Validity attr) {
        if (kept.held()) {
            long until = System.nanoTime() + Math.max(kept.entry().nanosTotal(), attr.nanosTotal());
            // two replies at once may leave the earlier deadline: the later one's own reply is at most
            // as old, and its validity as long, so the kernel keeps neither past a few microseconds more
            long had = n.heldUntil;
            n.heldUntil = had == 0 ? until : later(had, until);
        }
    }

    /** The kernel keeps {@code name} in {@code dir} as missing for {@code negative}, told from its store's held answers. */
    void toldMissing(NodeTable.Node dir, String name, FuseReply.Validity negative) {
        long until = System.nanoTime() + negative.nanosTotal();
        if (heldMissing.size() >= MISSING_NAMES_KEPT) {
            long now = System.nanoTime();
            heldMissing.values().removeIf(t -> t - now <= 0);
        }
        if (heldMissing.size() < MISSING_NAMES_KEPT) {
            heldMissing.merge(new MissingName(dir.id, name), until, HeldAnswers::later);
        } else {
            missingNotKeptUntil.accumulateAndGet(until, HeldAnswers::later);
        }
    }

    /**
     * Makes the kernel ask again about every name and node it was told from its stores' held answers
     * and may still keep (an S3 listing, which the stores have just let go of: {@code chibifs sync}),
     * and returns once it has been told. Each name is staled (INVAL_ENTRY, EXPIRE_ONLY) and each
     * node's attributes dropped (INVAL_INODE), so the next path walk, stat or open asks the daemon,
     * which lists again. Answers it cannot reach that way are waited out instead, and how long that
     * is, is returned: names told missing past {@link #MISSING_NAMES_KEPT}, and every answer where
     * the kernel cannot stale a name without unhashing it (before Linux 6.2: unhashing a directory
     * fails getcwd of every process working in it). A reply written meanwhile from an answer read
     * before the stores let go may still land after its notice (a window of microseconds, with
     * requests under way during the sync): the kernel keeps it, at most as long as it said.
     */
    Duration expireHeldAnswers() throws InterruptedException {
        NoticeWriter w = noticeWriter;
        if (w == null) {
            return Duration.ZERO; // before INIT: the kernel was told nothing
        }
        long now = System.nanoTime();
        long last = 0;
        long waitUntil = now;
        for (NodeTable.Node n : nodes.all()) {
            long until = n.heldUntil;
            if (until == 0 || until - now <= 0) {
                continue;
            }
            if (!namesExpireOnly) {
                waitUntil = later(waitUntil, until);
                continue;
            }
            NodeTable.Link link = n.link;
            if (link != null) {
                w.post(notices.get().invalEntry(link.parent().id, link.name(), FuseProtocol.EXPIRE_ONLY));
            }
            last = w.post(notices.get().invalInode(n.id, -1, 0));
        }
        for (Map.Entry<MissingName, Long> e : heldMissing.entrySet()) {
            long until = e.getValue();
            if (until - now > 0 && !namesExpireOnly) {
                waitUntil = later(waitUntil, until);
            } else if (until - now > 0) {
                last = w.post(notices.get().invalEntry(e.getKey().parent(), e.getKey().name(), FuseProtocol.EXPIRE_ONLY));
            }
            heldMissing.remove(e.getKey(), until);
        }
        waitUntil = later(waitUntil, missingNotKeptUntil.get());
        if (last != 0 && !w.awaitWritten(last, NOTICES_WRITTEN_WITHIN.toNanos())) {
            LOG.warn("the kernel took over {} s to take what chibifs sync told it; it may keep some answers"
                    + " until they expire", NOTICES_WRITTEN_WITHIN.toSeconds());
        }
        return Duration.ofNanos(Math.max(0, waitUntil - System.nanoTime()));
    }

    /** The later of two {@link System#nanoTime} deadlines (compared by difference, as nanoTime may wrap). */
    private static long later(long a, long b) {
        return b - a > 0 ? b : a;
    }
}
