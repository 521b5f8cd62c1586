package dev.chibifs.store.s3;

import dev.chibifs.sys.DaemonThreads;
import dev.chibifs.store.ContentHash;
import dev.chibifs.store.FileLocks;
import dev.chibifs.store.InProcessLocks;
import dev.chibifs.store.LockState;
import dev.chibifs.store.LockType;
import dev.chibifs.store.s3.Overlay.Node;
import dev.chibifs.sys.ErrnoException;
import dev.chibifs.sys.Linux;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.NoSuchFileException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * Locks on the files of an S3 store that exclude the processes of every host sharing the bucket,
 * not only this daemon's. While a process here holds a lock on a file, this daemon holds a lease
 * on the file's object in the bucket: SHARED while every lock held here is a read lock, EXCLUSIVE
 * while one is a write lock. A lease covers the whole file, whatever bytes are locked (a read lock
 * here and a write lock on other bytes elsewhere conflict, where one disk would let both be).
 *
 * <p>A lease is an object {@code .chibifs-locks/<object key>/<holder>.<n>.<life>ms.<S|X>} at the
 * bucket's top (the same for every store over the bucket, whatever its prefix), {@code life} its
 * holder's {@link #ttl}, by which every host judges it: hosts mounted with different
 * {@code --lock-lease} once judged a live holder's lease by their own, and a shorter one took the
 * lock from it (a lease without one, an older daemon's, is judged by this host's). To take one a
 * host puts its own, then lists the file's leases: S3 lists every object put before the listing began, so of two
 * hosts putting at once at least one sees the other; one that meets a conflicting lease takes its
 * put back and answers "not now" (both may, and their lock waits try again). A holder puts its
 * leases again every {@link #ttl} / 3; a lease whose LastModified is more than {@link #ttl} before
 * S3's time (the one just put, or a listing's Date header: S3's clock against itself, a host's only
 * where S3 sends no Date) is a dead holder's: ignored, and deleted by the next host to take a lease.
 * A renewal (conditional on the lease's ETag) that S3 answers with the lease gone or replaced finds
 * it so deleted while this host was cut off: the lease is lost ({@link #lost}), never put again.
 *
 * <p>Taking a lease from none is a pull: the file's directory is listed again and the file's
 * version compared ({@link S3Storage#pullForLock}), and the handles open here read the version S3
 * has. Letting one go is a push: everything this host changed goes up first
 * ({@link S3Storage#pushAll}), so the next holder reads it; so is stepping down from EXCLUSIVE to
 * SHARED, which waits for the renewal. A push S3 does not take keeps the lease, and the renewal
 * tries it again, unless all it left behind is objects S3 refused outside the locked file's
 * directory ({@link #pushedForLettingGo}).
 *
 * <p>Locking: each file's {@link Lease} monitor orders its takes, lets-go and renewals, and is held
 * over the requests to S3 they make (a lock request on that file waits for them, which is the lock
 * being handed over). It is taken before the store's monitor, never inside it: nothing holding the
 * store's monitor calls in here ({@link ObjectHandle#close} settles after letting it go).
 */
final class HostLocks implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(HostLocks.class);

    /** Where the leases are, at the bucket's top: no store lists it ({@link Bucket#list}). */
    static final String KEYS = ".chibifs-locks/";
    /**
     * After a conflict with another host, how long this host answers the processes it refused "not
     * now" without asking S3: a waiting lock is tried again every 50 ms at most ({@code LockWaits}),
     * as SQLite's busy handler tries, which would otherwise be three requests each time, for each
     * waiting process. A process not refused asks S3: the holder may have let go meanwhile, and
     * SQLite opening a database asks once, with no busy handler (benchmarks.md, session 49).
     */
    private static final Duration BUSY_BACKOFF = Duration.ofMillis(200);

    enum Level {
        NONE, SHARED, EXCLUSIVE;

        static Level of(LockType type) {
            return switch (type) {
                case READ -> SHARED;
                case WRITE -> EXCLUSIVE;
                case UNLOCK -> NONE;
            };
        }

        String suffix() {
            return this == EXCLUSIVE ? ".X" : ".S";
        }
    }

    /** One file's lease here. Its fields are guarded by its own monitor. */
    static final class Lease {
        private Level level = Level.NONE;
        /** The object key the lease is on, and the lease object's own key; null while none is held. */
        private String objectKey;
        private String leaseKey;
        /** The lease object's ETag: the If-Match of its renewal, which fails if it went meanwhile. */
        private String etag;
        private long renewedAt;
        private long busyUntil;
        /** The requests {@link #busyUntil} answers: the lock owners refused, each with its process. */
        private final Set<Asker> refused = new HashSet<>();
        /**
         * Whether the warning that it stays held on S3 was said since it last went down as its locks
         * did: each unlock, close and release of an owner tries again, a dozen within 60 ms for one
         * SQLite transaction, and each would say it again.
         */
        private boolean keptSaid;
        /**
         * Since when the lease went without a renewal that took, once one failed: its last put that
         * took ({@link #renewedAt}, not the failure, which came a third of the lease later, or a whole
         * request timeout later when S3 did not answer: a 100 s gap was said to be 10 s), and how many
         * ticks failed since: S3 away for an hour failed every tick (a third of the lease), each a
         * warning. One warning says it, one line says when it is renewed again. Cleared when the lease goes.
         */
        private long unrenewedSince;
        private int renewalsFailed;
        /** The lock owners granted a lock here while it was held, each with its process, for the lost lease's error. */
        private final Map<Long, Integer> pids = new HashMap<>();
        /**
         * The owners whose lock went with a lease this host found lost ({@link #lost}): their writes and
         * fsyncs fail until they unlock, close, or are granted a lock again. Read by writes under the
         * store's monitor, which is taken after this lease's, never before: so no monitor guards it.
         */
        private final Set<Long> lost = ConcurrentHashMap.newKeySet();
    }

    /** Who asks for a lock: its owner, and the process it asks for (a new one may have the owner of one gone). */
    private record Asker(long owner, int pid) {
    }

    private final S3Storage store;
    private final Bucket bucket;
    /**
     * This daemon among the bucket's holders: the host's name, its cache directory's lineage and a
     * token of this run, so two mounts of one host differ, and so do two runs over one cache.
     */
    private final String holder;
    /**
     * The start of the holder of every run over this cache directory: one not {@link #holder} is a
     * run before this one, dead since this one holds the directory's lock, its leases dead at once
     * rather than after their life (a daemon killed -9 and mounted again was kept out of its own
     * SQLite database for 30 s).
     */
    private final String lineage;
    /** What a lease object holds: its holder, for a person looking at the bucket. */
    private final byte[] body;
    private final Duration ttl;
    /** The nodes holding a lease (or owing a push before letting one go), for the renewal. */
    private final Map<Node, Boolean> holding = new ConcurrentHashMap<>();
    private final ScheduledExecutorService renewer;
    /** Lease objects this holder has put, for their keys. */
    private final AtomicLong taken = new AtomicLong();
    /** {@link #BUSY_BACKOFF}, but for tests that must see a retry answered without asking S3, whatever the machine's pace. */
    private volatile long busyBackoffNanos = BUSY_BACKOFF.toNanos();
    /**
     * This host's monotonic time, by which leases fall due for renewal: a test stands it still to
     * cut a holder off from S3 as an outage does, or moves it on by a whole outage at once.
     */
    private volatile LongSupplier nanos = System::nanoTime;

    HostLocks(S3Storage store, Bucket bucket, String host, String cacheLineage, Duration ttl) {
        this.store = store;
        this.bucket = bucket;
        this.lineage = host + "-" + cacheLineage + "-";
        this.holder = lineage + UUID.randomUUID().toString().substring(0, 8);
        this.ttl = ttl;
        this.body = (holder + "\n").getBytes(StandardCharsets.UTF_8);
        this.renewer = DaemonThreads.timer("s3-lock-leases");
        long every = Math.max(1, ttl.toMillis() / 3);
        renewer.scheduleWithFixedDelay(this::renewAll, every, every, TimeUnit.MILLISECONDS);
    }

    /** For tests: how long a refused process is answered "not now" without asking S3. */
    void busyBackoff(Duration d) {
        busyBackoffNanos = d.toNanos();
    }

    /** For tests: the time by which renewals fall due, instead of {@link System#nanoTime}. */
    void clock(LongSupplier nanos) {
        this.nanos = nanos;
    }

    /** How many files this daemon holds a lease on now (for {@code chibifs stats}). */
    int held() {
        return holding.size();
    }

    /**
     * The locks of {@code node} as one handle sees them: {@code local}, the handle's view of
     * {@link Node#locks}, which decides among this daemon's processes, and the leases.
     */
    FileLocks view(Node node, InProcessLocks.View local) {
        return new View(node, local);
    }

    final class View implements FileLocks {
        private final Node node;
        private final InProcessLocks.View local;
        /** The owners that took a lock through this handle: its writes fail while one's is lost. */
        private final Set<Long> owners = ConcurrentHashMap.newKeySet();

        View(Node node, InProcessLocks.View local) {
            this.node = node;
            this.local = local;
        }

        @Override
        public LockState testLock(long owner, LockType type, long start, long end) throws IOException {
            LockState here = local.testLock(owner, type, start, end);
            if (here.type() != LockType.UNLOCK || type == LockType.UNLOCK) {
                return here;
            }
            Level theirs;
            try {
                theirs = strongestElsewhere(node, Level.of(type));
            } catch (IOException e) {
                throw unavailable(node, e);
            }
            if (theirs == Level.NONE) {
                return here;
            }
            // another host's lock: no process here holds it (pid 0), and it covers the whole file
            return new LockState(theirs == Level.EXCLUSIVE ? LockType.WRITE : LockType.READ, 0, Long.MAX_VALUE, 0);
        }

        @Override
        public boolean tryLock(long owner, LockType type, long start, long end) throws IOException {
            return tryLock(owner, 0, type, start, end);
        }

        @Override
        public boolean tryLock(long owner, int pid, LockType type, long start, long end) throws IOException {
            if (type == LockType.UNLOCK) {
                local.tryLock(owner, type, start, end);
                settle(node);
                forgetGone();
                return true;
            }
            if (local.testLock(owner, type, start, end).type() != LockType.UNLOCK) {
                return false; // a process here holds it: no need to ask S3
            }
            Lease lease = node.lease;
            synchronized (lease) {
                if (!raiseOrRefuse(node, lease, Level.of(type), new Asker(owner, pid))) {
                    return false;
                }
                boolean done = local.tryLock(owner, pid, type, start, end);
                if (done) {
                    granted(lease, owner, pid);
                }
                lowerOrKeep(node, lease);
                return done;
            }
        }

        @Override
        public boolean tryFlock(long owner, LockType type) throws IOException {
            return tryFlock(owner, 0, type);
        }

        @Override
        public boolean tryFlock(long owner, int pid, LockType type) throws IOException {
            if (type == LockType.UNLOCK) {
                local.tryFlock(owner, type);
                settle(node);
                forgetGone();
                return true;
            }
            Lease lease = node.lease;
            synchronized (lease) {
                boolean raised = false;
                try {
                    raised = raiseOrRefuse(node, lease, Level.of(type), new Asker(owner, pid));
                } finally {
                    if (!raised) {
                        // as Linux: a conversion that meets a conflict has already let the old lock go
                        local.tryFlock(owner, LockType.UNLOCK);
                    }
                }
                boolean done = raised && local.tryFlock(owner, type);
                if (done) {
                    granted(lease, owner, pid);
                }
                lowerOrKeep(node, lease);
                return done;
            }
        }

        @Override
        public void releaseOwner(long owner) throws IOException {
            local.releaseOwner(owner);
            settle(node);
            forgetGone();
        }

        /**
         * A lock granted through this handle, under a lease held now: one this owner lost before is
         * behind it (a lease taken since a loss is a take, which pulled what other hosts wrote).
         * Under the lease's monitor.
         */
        private void granted(Lease lease, long owner, int pid) {
            owners.add(owner);
            lease.pids.put(owner, pid);
            lease.lost.remove(owner);
        }

        private void forgetGone() {
            owners.removeIf(owner -> !node.locks.holds(owner));
        }

        /**
         * EIO while an owner that locked through this handle holds a lock whose lease was lost, as the
         * Linux NFS client fails I/O under a lock it could not recover: the process believes it
         * excludes every host, and another host may have held the lock, and written, since.
         */
        void requireNotLost() throws ErrnoException {
            for (Long owner : owners) {
                if (node.lease.lost.contains(owner)) {
                    throw ErrnoException.of(Linux.EIO, String.valueOf(node.path), "the lock taken"
                            + " through this descriptor was lost on S3 (another host may have held it since); unlock"
                            + " or close it, then lock again");
                }
            }
        }
    }

    /** After locks here went ({@code ObjectHandle}'s close, an unlock): the lease follows them down. */
    void settle(Node node) {
        Lease lease = node.lease;
        synchronized (lease) {
            lowerOrKeep(node, lease);
        }
    }

    /** {@link #lower}, or the lease kept as it is for the renewal to let go: an unlock itself never fails. */
    private void lowerOrKeep(Node node, Lease lease) {
        lease.pids.keySet().removeIf(owner -> !node.locks.holds(owner));
        lease.lost.removeIf(owner -> !node.locks.holds(owner));
        try {
            lower(node, lease, false);
            lease.keptSaid = false;
        } catch (IOException e) {
            if (lease.keptSaid) {
                LOG.debug("S3 store {}: the lock on {} still stays held on S3: {}", store.spec, node.path, e.getMessage());
            } else {
                lease.keptSaid = true;
                LOG.warn("S3 store {}: the lock on {} stays held on S3 until what this host changed goes up: {}",
                        store.spec, node.path, e.getMessage());
            }
        }
    }

    /** {@link #raise}, where S3 not answering is ENOLCK: a lock other hosts could not see is none. */
    private boolean raiseOrRefuse(Node node, Lease lease, Level want, Asker asker) throws IOException {
        try {
            return raise(node, lease, want, asker);
        } catch (NoSuchFileException e) {
            throw e;
        } catch (IOException e) {
            throw unavailable(node, e);
        }
    }

    private ErrnoException unavailable(Node node, IOException cause) {
        ErrnoException e = ErrnoException.of(Linux.ENOLCK, String.valueOf(node.path),
                "the lock's lease on S3 could not be asked (" + cause.getMessage() + ")");
        e.initCause(cause);
        return e;
    }

    /**
     * Holds at least {@code want} on {@code node}'s object; false when another host holds a lease
     * that conflicts, or did a moment ago when {@code asker} asked. A lease taken from none pulls.
     * Under the lease's monitor.
     */
    private boolean raise(Node node, Lease lease, Level want, Asker asker) throws IOException {
        if (lease.level.compareTo(want) >= 0) {
            return true;
        }
        long now = nanos.getAsLong();
        if (now - lease.busyUntil < 0 && lease.refused.contains(asker)) {
            return false;
        }
        String objectKey = lease.objectKey != null ? lease.objectKey : store.objectKeyOf(node);
        if (objectKey == null) {
            return true; // removed while open: no other host can open it to lock it
        }
        if (!lease.refused.isEmpty() && strongestElsewhere(node, want) != Level.NONE) {
            // refused a moment ago, and the other host holds it still: one listing says so, where a
            // take puts a lease, lists and deletes it again (a lock waiting on another host cost
            // about 19 requests a second, two of them LIST or PUT, S3's dearer kind)
            lease.busyUntil = nanos.getAsLong() + busyBackoffNanos;
            lease.refused.add(asker);
            return false;
        }
        String mine = leaseKey(objectKey, want);
        String etag = bucket.put(mine, body, Map.of(), null);
        boolean conflict;
        boolean heldListed = false;
        try {
            Bucket.Level leases = bucket.list(leasesOf(objectKey), false);
            Instant putAt = null;
            for (Bucket.Listed o : leases.objects()) {
                if (o.key().equals(mine)) {
                    putAt = o.modified();
                }
                heldListed |= o.key().equals(lease.leaseKey);
            }
            conflict = conflicts(leases, objectKey, want, putAt);
            removeDead(leases, objectKey, putAt);
        } catch (IOException | RuntimeException e) {
            deleteQuietly(mine); // else it would keep the others out until it expired
            throw e;
        }
        if (lease.leaseKey != null && !heldListed) {
            // a read lock's lease raised to a write lock's, found gone before its renewal could say so:
            // lost as there, and this take is then from none, so it pulls what the other host wrote
            lost(node, lease, new IOException(lease.leaseKey + " is not among the file's leases on S3 any more"));
        }
        if (conflict) {
            bucket.delete(mine);
            // all refused share one wait (from when the conflict was seen), so however many processes
            // wait here, S3 is asked about once per wait; they are forgotten once the lease is taken
            lease.busyUntil = nanos.getAsLong() + busyBackoffNanos;
            lease.refused.add(asker);
            return false;
        }
        Level had = lease.level;
        if (lease.leaseKey != null && !lease.leaseKey.equals(mine)) {
            bucket.delete(lease.leaseKey);
        }
        lease.refused.clear();
        lease.level = want;
        lease.objectKey = objectKey;
        lease.leaseKey = mine;
        lease.etag = etag;
        lease.renewedAt = now;
        holding.put(node, Boolean.TRUE);
        if (had == Level.NONE) {
            store.pullForLock(node);
        }
        return true;
    }

    /**
     * Deletes the leases among {@code leases} that no holder put again for longer than a lease lives
     * before {@code now} (S3's time of our own put; null: none is judged so), and this cache
     * directory's previous runs': a killed daemon's, which nobody else removes. They count for
     * nothing already; gone, they cost no listing anything. A holder that was only paused that long
     * puts its lease again at its next renewal.
     */
    private void removeDead(Bucket.Level leases, String objectKey, Instant now) {
        String base = leasesOf(objectKey);
        for (Bucket.Listed o : leases.objects()) {
            String name = o.key().substring(base.length());
            boolean outlived = now != null && !name.startsWith(holder + ".") && o.modified() != null
                    && o.modified().plus(lifeOf(name)).isBefore(now);
            if (outlived || previousRun(name)) {
                deleteQuietly(o.key());
            }
        }
    }

    /** Whether the lease named {@code name} is a previous run's over this cache directory (so dead). */
    private boolean previousRun(String name) {
        return name.startsWith(lineage) && !name.startsWith(holder + ".");
    }

    /** Whether a lease of another live holder among {@code leases} conflicts with {@code want}. */
    private boolean conflicts(Bucket.Level leases, String objectKey, Level want, Instant putAt) {
        for (Level theirs : othersLive(leases, objectKey, putAt)) {
            if (want == Level.EXCLUSIVE || theirs == Level.EXCLUSIVE) {
                return true;
            }
        }
        return false;
    }

    /** The strongest lease another live holder has on {@code node}'s object, as far as it conflicts with {@code want}. */
    private Level strongestElsewhere(Node node, Level want) throws IOException {
        String objectKey = store.objectKeyOf(node);
        if (objectKey == null) {
            return Level.NONE;
        }
        Bucket.Level leases = bucket.list(leasesOf(objectKey), false);
        // S3's time of the listing (its Date header), else this host's: no lease of ours was just put
        // to read S3's clock off, and the newest lease listed is no clock (a dead holder's, left
        // alone, would stay the newest and count as live for ever: SQLite's F_GETLK then found its
        // database locked by a host killed minutes before)
        Instant now = leases.answered() != null ? leases.answered() : store.now().toInstant();
        for (Bucket.Listed o : leases.objects()) {
            if (o.modified() != null && o.modified().isAfter(now)) {
                now = o.modified(); // S3's clock is at least this far on
            }
        }
        Level found = Level.NONE;
        for (Level theirs : othersLive(leases, objectKey, now)) {
            if ((want == Level.EXCLUSIVE || theirs == Level.EXCLUSIVE) && theirs.compareTo(found) > 0) {
                found = theirs;
            }
        }
        return found;
    }

    /**
     * The levels of the leases among {@code leases} of holders other than this one and alive: put
     * again no longer than {@link #ttl} before {@code now}, a time S3 gave (null: all count).
     */
    private List<Level> othersLive(Bucket.Level leases, String objectKey, Instant now) {
        String base = leasesOf(objectKey);
        List<Level> out = new ArrayList<>();
        for (Bucket.Listed o : leases.objects()) {
            String name = o.key().substring(base.length());
            if (name.startsWith(holder + ".") || previousRun(name)) {
                continue;
            }
            if (now != null && o.modified() != null && o.modified().plus(lifeOf(name)).isBefore(now)) {
                continue; // not renewed for longer than a lease lives: its holder is gone
            }
            out.add(name.endsWith(Level.EXCLUSIVE.suffix()) ? Level.EXCLUSIVE : Level.SHARED);
        }
        return out;
    }

    /**
     * Lets the lease go when no lock here needs it; what this host changed goes up first. From
     * EXCLUSIVE down to SHARED only when {@code downgrade} (the renewal's): a SQLite commit steps down
     * to its read lock and lets that go a moment later, and one step then costs a push and two
     * requests fewer; another host's reader waits for the renewal meanwhile. Under the lease's
     * monitor; throws, holding the lease as it was, when the push fails where it matters (see
     * {@link #pushedForLettingGo}).
     */
    private void lower(Node node, Lease lease, boolean downgrade) throws IOException {
        Level need = Level.of(node.locks.strongest()); // set before the lease, never taken back
        if (lease.level.compareTo(need) <= 0 || (need != Level.NONE && !downgrade)) {
            return;
        }
        pushedForLettingGo(node, lease, need);
        if (need == Level.NONE) {
            bucket.delete(lease.leaseKey);
            lease.level = Level.NONE;
            lease.leaseKey = null;
            lease.etag = null;
            lease.objectKey = null;
            holding.remove(node);
            renewedAgain(node, lease); // S3 answered: a lease taken later starts with no outage of its own
            return;
        }
        String shared = leaseKey(lease.objectKey, need);
        String etag = bucket.put(shared, body, Map.of(), null);
        bucket.delete(lease.leaseKey);
        lease.level = need;
        lease.leaseKey = shared;
        lease.etag = etag;
        lease.renewedAt = nanos.getAsLong();
    }

    /**
     * The push before a lease goes down. It fails, and the lease stays, while S3 is away or a change
     * in the locked file's directory did not go up: the file itself, and what changes beside it under
     * its lock (SQLite's journal and {@code -wal}; the take's pull lists that directory again for
     * them). Objects S3 refuses elsewhere do not hold it: held, a released lock stayed held for as
     * long as any file of the store was refused (a name S3 cannot store, a key a policy denies),
     * and every other host got EAGAIN, while the pass had sent everything else and holding on sends
     * nothing more. They are named in one warning, said again when they change; and S3 is not asked
     * for them again at each letting go before their retry times.
     */
    private void pushedForLettingGo(Node node, Lease lease, Level need) throws IOException {
        String key = lease.objectKey;
        String dir = key.substring(0, key.lastIndexOf('/') + 1);
        WriteBack.Unsent unsent = store.pushAll(dir);
        if (unsent == null) {
            return;
        }
        if (unsent.leftBehindBeside(key)) {
            throw unsent.failure();
        }
        store.writeBack.saidLetGoPast(node.path, need == Level.NONE ? "released" : "lowered to a read lock",
                unsent.refused(), unsent.keys().size() - unsent.refused().size());
    }

    /**
     * Every lease held is put again before it could pass for a dead holder's; one held stronger than
     * its locks need goes down, and a push owed is tried again.
     */
    private void renewAll() {
        long due = TimeUnit.MILLISECONDS.toNanos(Math.max(1, ttl.toMillis() / 3));
        for (Node node : holding.keySet()) {
            Lease lease = node.lease;
            synchronized (lease) {
                try {
                    // renewed before it is lowered: a step down puts a new lease whatever became of the
                    // old one, and so would take again, unasked, a lease lost while S3 was away
                    if (lease.leaseKey != null && nanos.getAsLong() - lease.renewedAt >= due - due / 10) {
                        try {
                            lease.etag = bucket.put(lease.leaseKey, body, Map.of(), lease.etag);
                        } catch (Bucket.Missing | Bucket.PreconditionFailed e) {
                            if (e instanceof Bucket.Missing || lease.etag != null) {
                                lost(node, lease, e);
                                continue;
                            }
                            throw e; // no ETag to renew it by (its put answered none): not a sign of loss
                        }
                        lease.renewedAt = nanos.getAsLong();
                    }
                    lower(node, lease, true);
                } catch (IOException | RuntimeException e) {
                    unrenewed(node, lease, e);
                    continue;
                }
                // a failed tick left renewedAt behind, so the tick after it asks S3 again: no
                // failure here means S3 answered (the put, or the lease let go)
                renewedAgain(node, lease);
            }
        }
    }

    /**
     * S3 answered that the lease is gone or replaced: another host's take deleted it as a dead
     * holder's while this host could not renew it, and may have held the lock, and written, since.
     * Putting it again would be that take's lock twice; so the lease is let go as it stands, the
     * processes here holding a lock under it are told (an error, and EIO at their writes and fsyncs,
     * {@link View#requireNotLost}), and their locks here stay, excluding this host's other processes,
     * until they unlock: a new lock request takes a fresh lease as any take does (a pull included).
     * Under the lease's monitor.
     */
    private void lost(Node node, Lease lease, IOException answer) {
        List<String> holders = new ArrayList<>();
        for (Map.Entry<Long, Integer> e : lease.pids.entrySet()) {
            if (node.locks.holds(e.getKey())) {
                lease.lost.add(e.getKey());
                holders.add(e.getValue() > 0 ? "pid " + e.getValue() : "a process not named");
            }
        }
        long without = Duration.ofNanos(nanos.getAsLong() - lease.renewedAt).toMillis();
        LOG.error("S3 store {}: the lock on {} is lost: {} ({} ms after its last renewal; it lives {} ms): another host may"
                        + " have held the lock since. {}; a new lock request takes a fresh lease", store.spec, node.path,
                answer.getMessage(), without, ttl.toMillis(), holders.isEmpty()
                        ? "No process here holds it any more"
                        : "Held here by " + String.join(", ", holders) + ": their writes and fsyncs through the"
                        + " descriptors they locked with fail (EIO) until they unlock or close");
        lease.level = Level.NONE;
        lease.leaseKey = null;
        lease.etag = null;
        lease.objectKey = null;
        lease.renewalsFailed = 0;
        lease.unrenewedSince = 0;
        holding.remove(node);
    }

    /** A renewal that failed: warned of once while they keep failing, then only in the debug log. */
    private void unrenewed(Node node, Lease lease, Exception e) {
        if (lease.renewalsFailed++ == 0) {
            lease.unrenewedSince = lease.renewedAt;
            LOG.warn("S3 store {}: the lock on {} not renewed: {} (tried again every {} ms, said again when it takes"
                            + " or when S3 says it is lost)",
                    store.spec, node.path, e.getMessage(), Math.max(1, ttl.toMillis() / 3));
        } else {
            LOG.debug("S3 store {}: the lock on {} still not renewed ({} tries): {}",
                    store.spec, node.path, lease.renewalsFailed, e.getMessage());
        }
    }

    /** After {@link #unrenewed}: says once how long the lease went without, and whether others could have taken it. */
    private void renewedAgain(Node node, Lease lease) {
        if (lease.renewalsFailed == 0) {
            return;
        }
        Duration without = Duration.ofNanos(nanos.getAsLong() - lease.unrenewedSince);
        String what = lease.leaseKey != null ? "renewed again" : "let go";
        LOG.info("S3 store {}: the lock on {} {} after {} ms without ({} renewals failed){}", store.spec, node.path, what,
                without.toMillis(), lease.renewalsFailed,
                without.compareTo(ttl) > 0 ? "; that is longer than the lease lives (" + ttl.toMillis()
                        + " ms): another host may have taken the lock meanwhile" : "");
        lease.renewalsFailed = 0;
        lease.unrenewedSince = 0;
    }

    /** For tests: the most renewals of one lease held here that failed in a row (0: every last one took). */
    int renewalsFailed() {
        int most = 0;
        for (Node node : holding.keySet()) {
            synchronized (node.lease) {
                most = Math.max(most, node.lease.renewalsFailed);
            }
        }
        return most;
    }

    private void deleteQuietly(String key) {
        try {
            bucket.delete(key);
        } catch (IOException | RuntimeException e) {
            LOG.info("S3 store {}: lease {} is left to expire in {}: {}", store.spec, key, ttl, e.getMessage());
        }
    }

    /**
     * The prefix of the leases on {@code objectKey}: the key itself below {@link #KEYS}, or, where that
     * would leave a lease's key past S3's limit, a SHA-256 of it below {@link #KEYS} twice (no store
     * takes a name there, so no such prefix is another file's; "//" would be, but S3-compatible
     * servers such as s3proxy's file backend refuse an empty part in a key). A long path's lock was
     * else refused by S3 (KeyTooLongError) on every host.
     */
    static String leasesOf(String objectKey) {
        String plain = KEYS + objectKey + "/";
        if (plain.getBytes(java.nio.charset.StandardCharsets.UTF_8).length + LEASE_NAME_BYTES <= S3Storage.MAX_KEY_BYTES) {
            return plain;
        }
        return KEYS + KEYS + ContentHash.sha256Hex(objectKey.getBytes(java.nio.charset.StandardCharsets.UTF_8)) + "/";
    }

    /** Room kept for a lease's own name below its prefix: the holder (host name, run) and its take, life and level. */
    private static final int LEASE_NAME_BYTES = 256;

    /** A new lease object's key: each take its own, so a look at the bucket tells one take from the next. */
    private String leaseKey(String objectKey, Level level) {
        return leasesOf(objectKey) + holder + "." + taken.incrementAndGet() + "." + ttl.toMillis() + LIFE_UNIT + level.suffix();
    }

    private static final String LIFE_UNIT = "ms";

    /** How long the lease named {@code name} lives without renewal: what its holder put in its name, else this host's. */
    Duration lifeOf(String name) {
        int end = name.length() - Level.EXCLUSIVE.suffix().length();
        int dot = end > 0 ? name.lastIndexOf('.', end - 1) : -1;
        if (dot >= 0 && name.startsWith(LIFE_UNIT, end - LIFE_UNIT.length())) {
            String digits = name.substring(dot + 1, end - LIFE_UNIT.length());
            if (!digits.isEmpty() && digits.length() <= 12 && digits.chars().allMatch(Character::isDigit)) {
                return Duration.ofMillis(Long.parseLong(digits));
            }
        }
        return ttl;
    }

    @Override
    public void close() {
        close(true);
    }

    /**
     * Stops renewing; lets every lease go when {@code pushed} (the store's last push took), else
     * leaves them to expire.
     */
    void close(boolean pushed) {
        renewer.shutdownNow();
        if (pushed) {
            for (Node node : holding.keySet()) {
                Lease lease = node.lease;
                synchronized (lease) {
                    if (lease.leaseKey != null) {
                        deleteQuietly(lease.leaseKey);
                    }
                    lease.level = Level.NONE;
                    lease.leaseKey = null;
                }
            }
        }
        holding.clear();
    }
}
