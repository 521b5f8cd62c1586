package dev.chibifs.fuse;

import dev.chibifs.store.HeldFile;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Requests answered ESTALE, and the files held for the kernel's retries of them.
 *
 * <p>An OPEN, GETATTR or ACCESS of a node whose name now stands for another file (replaced behind the
 * kernel's cached name, or renamed over through the mount after the caller's path walk) is answered
 * ESTALE: the kernel then looks the name up again (LOOKUP_REVAL) and retries the call (open, stat,
 * access), once, so the caller gets the file the name stands for now, never one replaced before its
 * call began. A file replaced again between that lookup and the retried request (a status file
 * rewritten with write-and-rename many times a second) failed the retry too, and the caller saw
 * "Stale file handle", which no disk gives. So a lookup of that name by the thread just answered
 * stale (a request carries the caller's thread id) holds the file it finds ({@link HeldFile}), and
 * that thread's next request about the node, the retried one, reaches that file if its name has
 * moved on: the file the name stood for during the call, as a disk would have given it.
 *
 * <p>Only that request may, and only of its kind: an OPEN retried opens the file held, a GETATTR
 * or ACCESS retried reads its metadata. Any later request, of that thread or another, that finds the
 * node replaced is answered ESTALE and reaches what the name stands for then. A file held for longer
 * read a version replaced before the open began (a reader told by chibi "it is written" read the
 * old text). A stat's retry often sends no GETATTR (the lookup's reply has the attributes): what it
 * leaves serves the thread's next GETATTR of that node within {@link #RETRY_WITHIN}, never an open.
 *
 * <p>Nothing is held but after an ESTALE, so a usual request costs a look at an empty map. The
 * threads remembered and the files held are bounded; past the bound a request is answered ESTALE as
 * before.
 */
final class StaleNames {

    /** How long after an ESTALE its retry may come (it comes at once; a bound, not a wait). */
    static final Duration RETRY_WITHIN = Duration.ofSeconds(1);
    /** Threads remembered at most, in each map; past it the expired go, and if that is not enough, all. */
    static final int THREADS = 256;
    /** Files held at most, mount-wide; each is a descriptor, and keeps a removed file's space until FORGET. */
    static final int HELD = 1024;

    /** The node, by the name, a thread's request was answered stale about, when, and whether it was an OPEN. */
    private record Stale(NodeTable.Node node, NodeTable.Link name, Instant at, boolean open) {
    }

    /** The node a thread's retry looked up, whose held file its retried request may use, of that kind. */
    private record Retry(NodeTable.Node node, Instant at, boolean open) {
    }

    private final ConcurrentMap<Integer, Stale> answered = new ConcurrentHashMap<>();
    private final ConcurrentMap<Integer, Retry> retries = new ConcurrentHashMap<>();
    private final AtomicInteger held = new AtomicInteger();

    /** A request ({@code open}: an OPEN) of thread {@code tid} about node {@code n}, named {@code name}, was answered ESTALE at {@code now}. */
    void answered(int tid, NodeTable.Node n, NodeTable.Link name, boolean open, Instant now) {
        put(answered, tid, new Stale(n, name, now, open), now, Stale::at);
    }

    /**
     * Whether thread {@code tid}'s request ({@code open}: an OPEN) about node {@code n} is the
     * kernel's retry of one about that same node answered stale just before: its walk found no
     * other node, as where there is no name to walk again (an open of /proc/PID/fd/N).
     */
    boolean askedAgain(int tid, NodeTable.Node n, boolean open, Clock clock) {
        if (answered.isEmpty()) {
            return false;
        }
        Stale s = answered.get(tid);
        return s != null && s.node() == n && s.open() == open && recent(s.at(), clock.instant());
    }

    /**
     * Whether a LOOKUP of {@code name} in {@code parent} by thread {@code tid} is the kernel's retry
     * of a request answered stale just before, so it should hold the file it finds. There may be two:
     * the revalidation's, whose node the kernel forgets at once when it is not the one it had, then
     * a fresh one.
     */
    boolean retrying(int tid, NodeTable.Node parent, String name, Clock clock) {
        if (answered.isEmpty()) {
            return false;
        }
        Stale s = answered.get(tid);
        return s != null && s.name().parent() == parent && s.name().name().equals(name) && recent(s.at(), clock.instant());
    }

    /**
     * The retry's lookup by thread {@code tid} gave node {@code n}, holding {@code file} (kept if
     * the node holds none yet; else closed here): the thread's next request about {@code n} may use
     * it, if of the kind answered stale.
     */
    void lookedUp(int tid, NodeTable.Node n, HeldFile file, Instant now) {
        boolean kept;
        synchronized (n) {
            // a node is one file (its identity), so one it holds already is this one
            kept = n.held == null && held.incrementAndGet() <= HELD;
            if (kept) {
                n.held = file;
            } else if (n.held == null) {
                held.decrementAndGet();
            }
        }
        if (!kept) {
            file.close();
        }
        Stale s = answered.get(tid);
        put(retries, tid, new Retry(n, now, s != null && s.open()), now, Retry::at);
    }

    /**
     * The file thread {@code tid} may reach node {@code n} through in this request ({@code open}: an
     * OPEN; else a GETATTR or ACCESS), its retried one: null unless its retry's lookup gave {@code n}
     * just before, after a request of this kind was answered stale. Call once per such request: it
     * is the thread's only chance.
     */
    HeldFile retried(int tid, NodeTable.Node n, boolean open, Clock clock) {
        if (retries.isEmpty()) {
            return null;
        }
        Retry r = retries.remove(tid);
        if (r == null || r.node() != n || r.open() != open || !recent(r.at(), clock.instant())) {
            return null;
        }
        synchronized (n) {
            // no FORGET of n can close it while it is used: the kernel holds the inode it asks about
            return n.held;
        }
    }

    /** Node {@code n} left the table: the file it held, if any, is let go. */
    void forgotten(NodeTable.Node n) {
        HeldFile file;
        synchronized (n) {
            file = n.held;
            n.held = null;
        }
        if (file != null) {
            held.decrementAndGet();
            file.close();
        }
    }

    /** Files held now (for tests). */
    int held() {
        return held.get();
    }

    private static boolean recent(Instant at, Instant now) {
        return !at.isBefore(now.minus(RETRY_WITHIN));
    }

    private static <V> void put(ConcurrentMap<Integer, V> map, int tid, V value, Instant now,
                                java.util.function.Function<V, Instant> at) {
        if (map.size() >= THREADS) {
            map.values().removeIf(v -> !recent(at.apply(v), now));
            if (map.size() >= THREADS) {
                map.clear();
            }
        }
        map.put(tid, value);
    }
}
