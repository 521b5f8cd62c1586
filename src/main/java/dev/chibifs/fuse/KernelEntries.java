package dev.chibifs.fuse;

import dev.chibifs.path.VfsPath;
import dev.chibifs.router.Router;
import dev.chibifs.store.ChangeFeed;
import dev.chibifs.store.ChangeListener;
import dev.chibifs.store.Metadata;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * Keeps what the kernel caches of names and attributes true to the store, so that it may cache
 * them for long (chibifs mount --kernel-cache) instead of libfuse's 1 s, and remember missing names too.
 * The store changes behind the mount (chibi writes it directly; every agent's mount is another
 * daemon), so every directory the kernel looks names up in is followed ({@link ChangeFeed}), and
 * each change there becomes an invalidation: FUSE_NOTIFY_INVAL_ENTRY for the name (the next walk
 * looks it up again; only expired, not unhashed, where the kernel can: {@link EntryExpiry}), the
 * directory's attributes and kept listing, and the attributes of every kernel inode that shows a
 * changed file (an open descriptor's fstat, as in {@code tail -f}, walks no name) or a changed
 * directory (its own watch tells; "." of a process working in it walks no name either). A
 * change the kernel has heard of already, because it was made through this mount, is left alone:
 * {@link KernelAttributes} says the kernel's last reply about the file matches the store, and for
 * a new name, that the kernel's last entry reply about the file was by that name, made after the
 * name was last invalidated (see {@link #invalidatedAt}: in between, a lookup could have cached its absence).
 * A directory that cannot be followed (a file system inotify cannot follow mounted inside the
 * store, no watches left) is {@link #brief}: replies about what is in it keep libfuse's 1 s.
 *
 * <p>The race: a lookup reads the store, a change lands, its invalidation reaches the kernel, and
 * only then does the lookup's reply arrive, to be cached for the full timeout. So every change told
 * counts ({@link #changesSeen}), before it is told, and a lookup during which the count moved has
 * its entry invalidated once more after its reply is sent ({@link #lookedUp}). A change the kernel
 * has heard of needs no count: a lookup racing it replies what the kernel already has.
 *
 * <p>Invalidations of names take the directory's inode lock in the kernel, which requests in flight
 * in that directory hold: they are sent from the feed's thread or from {@link #later}, never from a
 * request thread, whose blocking could leave no thread to finish the request holding the lock.
 */
final class KernelEntries implements ChangeListener {

    private static final Logger LOG = LoggerFactory.getLogger(KernelEntries.class);

    /** The mount options for timeouts of {@code seconds}; the user's own {@code -o} come later and win. */
    static String timeoutOptions(int seconds) {
        return "entry_timeout=" + seconds + ",attr_timeout=" + seconds + ",negative_timeout=" + seconds;
    }

    private static final int ENOENT = 2;
    /** What {@link #followedKey} says of a directory that is not followed. */
    private static final long UNFOLLOWED = -1;
    /**
     * How long a directory that could not be followed is kept briefly before following it is tried
     * again (it may have been missing for a moment, or watches freed): libfuse's own timeouts.
     */
    static final long BRIEF_NANOS = TimeUnit.SECONDS.toNanos(1);
    /** Paths of unfollowed directories remembered one by one; past this many, every reply is kept briefly. */
    private static final int UNFOLLOWED_PATHS = 10_000;
    /** Slots of {@link #invalidatedAt}; names that share one only lose the shortcut for each other. */
    private static final int NAME_SLOTS = 4096;

    /** The mounted session's notifications; each returns 0 or -errno. */
    interface Notifier {
        int invalidateEntry(long parent, byte[] name);

        /** A directory's attributes and the listing the kernel caches of it (FOPEN_CACHE_DIR). */
        int invalidateDirectory(long nodeid);
    }

    private static final Notifier NOWHERE = new Notifier() {
        @Override
        public int invalidateEntry(long parent, byte[] name) {
            return 0;
        }

        @Override
        public int invalidateDirectory(long nodeid) {
            return 0;
        }
    };

    /** A followed store directory: the path it was last looked up by, and the kernel inodes that show it. */
    private static final class Followed {
        volatile VfsPath path;
        volatile long[] nodes;

        Followed(VfsPath path, long node) {
            this.path = path;
            this.nodes = new long[] {node};
        }
    }

    private final Router router;
    private final KernelInodes kernelInodes;
    private final KernelAttributes kernelAttributes;
    /** Kernel inode of a followed directory -> the key its store directory is followed under. */
    private final ConcurrentMap<Long, Long> keys = new ConcurrentHashMap<>();
    /**
     * Kernel inode of a directory that could not be followed -> when to try again (System.nanoTime):
     * a lookup there costs one map lookup, not a failing inotify_add_watch, until then.
     */
    private final ConcurrentMap<Long, Long> retryAt = new ConcurrentHashMap<>();
    /**
     * The store directories that could not be followed (a file system inotify cannot follow, such as
     * NFS or FUSE mounted inside the store; out of watches): what the kernel learns of them no change
     * would correct, so it keeps it for libfuse's 1 s, not the mount's long timeouts ({@link #brief}).
     */
    private final Set<VfsPath> unfollowed = ConcurrentHashMap.newKeySet();
    /** Set once {@link #unfollowed} would grow past {@link #UNFOLLOWED_PATHS}: every reply is kept briefly. */
    private volatile boolean allBrief;
    private final ConcurrentMap<Long, Followed> followed = new ConcurrentHashMap<>();
    /**
     * The paths {@link #followed} directories were last looked in by ({@link #follows}). A directory
     * renamed behind the mount keeps its old path here until a lookup names it again: what the
     * kernel caches of a directory now at that path is then kept long, as before this set.
     */
    private final Set<VfsPath> followedPaths = ConcurrentHashMap.newKeySet();
    /**
     * Moves on before each change is told to the kernel; see the race above. From 1: a reply made
     * before any change is told is newer than {@link #invalidatedAt}'s 0, "never invalidated".
     */
    private final AtomicLong changes = new AtomicLong(1);
    /**
     * The count when an entry was last invalidated, per slot of (directory, name): after that an
     * earlier entry reply says nothing of what the kernel has for the name (the walk that followed
     * may have cached it missing). Used on the feed's thread only.
     */
    private final long[] invalidatedAt = new long[NAME_SLOTS];
    /**
     * The directories' kernel inodes whose listing and attributes this batch of changes has dropped
     * already, and whether the kernel still had each ({@link #batchTold}). Used on the feed's thread only.
     */
    private final Map<Long, Boolean> droppedThisBatch = new HashMap<>();
    private final ExecutorService later = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "chibifs-invalidate");
        t.setDaemon(true);
        return t;
    });
    private volatile ChangeFeed feed = ChangeFeed.NONE;
    /** Guarded by {@link #sending}: written under its write lock, used under its read lock. */
    private Notifier notifier = NOWHERE;
    /**
     * The notifications use libfuse's channel, which unmounting frees: {@link #notifyWith}(null)
     * waits for those in flight on the feed's and {@link #later}'s threads, so none runs after.
     */
    private final ReentrantReadWriteLock sending = new ReentrantReadWriteLock();

    KernelEntries(Router router, KernelInodes kernelInodes, KernelAttributes kernelAttributes) {
        this.router = router;
        this.kernelInodes = kernelInodes;
        this.kernelAttributes = kernelAttributes;
    }

    /** Starts following the store (before mounting: {@link #following} decides the mount's timeouts). */
    void start() {
        feed = router.changes(this);
    }

    /**
     * Whether changes to the store reach the kernel, so long timeouts are safe; lookups need
     * telling ({@link #lookingIn}, {@link #lookedUp}) only then.
     */
    boolean following() {
        return feed.active();
    }

    /** Where invalidations go: the mounted session, or nowhere before mount and after unmount. */
    void notifyWith(Notifier notifier) {
        sending.writeLock().lock();
        try {
            this.notifier = notifier == null ? NOWHERE : notifier;
        } finally {
            sending.writeLock().unlock();
        }
    }

    private int invalidateEntry(long parent, byte[] name) {
        sending.readLock().lock();
        try {
            return notifier.invalidateEntry(parent, name);
        } finally {
            sending.readLock().unlock();
        }
    }

    private int invalidateDirectory(long node) {
        sending.readLock().lock();
        try {
            return notifier.invalidateDirectory(node);
        } finally {
            sending.readLock().unlock();
        }
    }

    void close() {
        feed.close();
        later.shutdown();
    }

    /**
     * A lookup of a name in {@code directory}, kernel inode {@code node}, is being served: from
     * now on a change there reaches the kernel. Before the store is read, so a change after that
     * read raises an event. Also for a listing of {@code directory} (an opendir names its kernel
     * inode): true when changes there are followed, so the kernel may keep the listing.
     */
    boolean lookingIn(VfsPath directory, long node) {
        if (node == 0) {
            return false;
        }
        Long key = keys.get(node);
        if (key != null) {
            Followed f = followed.get(key);
            if (f != null && !f.path.equals(directory)) {
                moved(f, directory); // renamed through the mount: the kernel inode, and the watch, stayed
            }
            return true;
        }
        Long retry = retryAt.get(node);
        if (retry != null && System.nanoTime() - retry < 0) {
            return false;
        }
        long k = feed.follow(directory);
        if (k < 0) {
            if (retryAt.size() > UNFOLLOWED_PATHS) {
                retryAt.clear(); // inodes the kernel forgot: they cost a retry each, not memory
            }
            retryAt.put(node, System.nanoTime() + BRIEF_NANOS);
            if (!allBrief && unfollowed.add(directory) && unfollowed.size() > UNFOLLOWED_PATHS) {
                allBrief = true;
                unfollowed.clear();
            }
            return false;
        }
        followed.compute(k, (kk, f) -> {
            if (f == null) {
                followedPaths.add(directory);
                return new Followed(directory, node);
            }
            moved(f, directory);
            if (Arrays.stream(f.nodes).noneMatch(n -> n == node)) {
                long[] more = Arrays.copyOf(f.nodes, f.nodes.length + 1);
                more[f.nodes.length] = node;
                f.nodes = more;
            }
            return f;
        });
        keys.put(node, k);
        if (retry != null) {
            retryAt.remove(node);
        }
        if (!unfollowed.isEmpty()) {
            unfollowed.remove(directory);
        }
        return true;
    }

    private void moved(Followed f, VfsPath directory) {
        if (!f.path.equals(directory)) {
            followedPaths.remove(f.path);
            f.path = directory;
        }
        followedPaths.add(directory);
    }

    /**
     * Whether changes in {@code directory} reach the kernel: without that, nothing tells it when the
     * directory's own mtime and link count change, though its parent's watch tells of its name.
     */
    boolean follows(VfsPath directory) {
        return followedPaths.contains(directory);
    }

    /**
     * Whether what the kernel learns of names and attributes in {@code directory} must be kept
     * only briefly, because no change there would reach it: the directory could not be followed.
     */
    boolean brief(VfsPath directory) {
        return briefAbout(directory, true);
    }

    /**
     * {@link #brief} for a reply about {@code path}: of the path itself when it is a directory, else
     * of its parent, which is made only when some directory is brief (every attribute reply asks).
     */
    boolean briefAbout(VfsPath path, boolean directory) {
        return allBrief || !unfollowed.isEmpty() && unfollowed.contains(directory ? path : path.parent());
    }

    /** The key the directory of kernel inode {@code node} is followed under; -1 when none (for tests). */
    long followedKey(long node) {
        Long key = keys.get(node);
        return key == null ? UNFOLLOWED : key;
    }

    /** The count of changes told so far; a lookup reads it before it reads the store. */
    long changesSeen() {
        return changes.get();
    }

    /**
     * A lookup of {@code path} in kernel inode {@code parent}, begun when the count was
     * {@code before}, has replied: if changes were told meanwhile, its entry may be older than one
     * of them, and is invalidated again.
     */
    void lookedUp(long before, long parent, VfsPath path) {
        if (changes.get() == before || path.isRoot()) {
            return;
        }
        byte[] name = path.fileName().getBytes(StandardCharsets.UTF_8);
        later.execute(() -> invalidateEntry(parent, name));
    }

    /**
     * A listing of kernel inode {@code directory}, begun when the count was {@code before}, has
     * replied: if changes were told meanwhile, the kernel may cache a listing older than one of
     * them, and the listing is invalidated again.
     */
    void listed(long before, long directory) {
        if (changes.get() != before) {
            later.execute(() -> invalidateDirectory(directory));
        }
    }

    @Override
    public void changed(long dir, String name, boolean renamed, boolean modified) {
        Followed f = followed.get(dir);
        if (f == null) {
            return;
        }
        // one look at the store for both: taken after every event the feed read, so it is as new as either needs
        Metadata now = metadata(f.path.child(name));
        if (renamed) {
            nameChanged(f, dir, name, now);
        }
        if (modified) {
            fileChanged(f, dir, name, now);
        }
    }

    /** {@code name} in followed directory {@code f} came, went or names another file; {@code now} is what is there. */
    private void nameChanged(Followed f, long dir, String name, Metadata now) {
        int slot = slot(dir, name);
        if (now != null && (now.isFile() && now.links() == 1 || now.isDirectory())
                && kernelAttributes.knownAs(now, f.path.child(name), invalidatedAt[slot])) {
            // the file's one name, as the kernel heard it in an entry reply (a create or mkdir through this mount):
            // the kernel has the name right, and its directory it invalidated itself; a change of the
            // file's attributes is told apart (modified)
            return;
        }
        invalidatedAt[slot] = changes.incrementAndGet();
        byte[] bytes = name.getBytes(StandardCharsets.UTF_8);
        for (long node : f.nodes) {
            if (stillKnown(dir, node)) {
                invalidateEntry(node, bytes);
            }
        }
    }

    /**
     * Drops the listing, mtime, link count and other attributes the kernel has of directory
     * {@code dir}'s kernel inode {@code node}, once per batch (an rm of 5,000 files told it 5,000
     * times): false when the kernel has forgotten that inode (ENOENT), which is then forgotten here too.
     */
    private boolean stillKnown(long dir, long node) {
        Boolean known = droppedThisBatch.get(node);
        if (known == null) {
            known = invalidateDirectory(node) != -ENOENT;
            droppedThisBatch.put(node, known);
            if (!known) {
                forget(dir, node);
            }
        }
        return known;
    }

    @Override
    public void batchTold() {
        droppedThisBatch.clear();
    }

    /** The file or directory {@code now} at {@code name} in followed directory {@code f} changed its content or attributes. */
    private void fileChanged(Followed f, long dir, String name, Metadata now) {
        if (now != null && now.isDirectory()) {
            // its name still shows the same directory: its own watch tells of its attributes
            // (directoryChanged), or, unfollowed, the kernel keeps them for 1 s only; and an entry
            // invalidation unhashes a directory where the kernel cannot merely expire it (before
            // Linux 6.2), which fails getcwd of every process working in it
            return;
        }
        if (now != null && now.isFile() && kernelAttributes.current(now)) {
            return; // the kernel was told these very attributes (a setattr through this mount, say)
        }
        long counted = changes.incrementAndGet();
        if (now != null && now.isFile() && changedElsewhere(now.inode())) {
            return; // every kernel inode of it known, and told: no entry, so no directory lock, needed
        }
        // a name only looked up, whose kernel inode no request named: the next walk looks it up again
        invalidatedAt[slot(dir, name)] = counted;
        byte[] bytes = name.getBytes(StandardCharsets.UTF_8);
        for (long node : f.nodes) {
            invalidateEntry(node, bytes);
        }
    }

    @Override
    public void directoryChanged(long dir) {
        Followed f = followed.get(dir);
        if (f == null) {
            return;
        }
        Metadata now = metadata(f.path);
        if (now == null || kernelAttributes.current(now)) {
            return; // gone (its own event tells of that), or a chmod or touch through this mount, whose reply told the kernel
        }
        changes.incrementAndGet();
        // "." of a process working in the directory walks no name: its parent's event cannot reach that
        for (long node : f.nodes) {
            stillKnown(dir, node);
        }
    }

    private static int slot(long dir, String name) {
        return (Long.hashCode(dir) * 31 + name.hashCode()) & (NAME_SLOTS - 1);
    }

    /** The store's file or directory at {@code path} now; null when there is none. */
    private Metadata metadata(VfsPath path) {
        try {
            return router.metadata(null, path);
        } catch (IOException | RuntimeException gone) {
            return null;
        }
    }

    /** Invalidates the attributes of every kernel inode known to show {@code inode}; false when none is known. */
    private boolean changedElsewhere(long inode) {
        sending.readLock().lock();
        try {
            // through the same channel as ours: not after unmount
            return notifier != NOWHERE && kernelInodes.changedElsewhere(inode);
        } finally {
            sending.readLock().unlock();
        }
    }

    @Override
    public void directoryGone(long dir) {
        changes.incrementAndGet();
        Followed f = followed.remove(dir);
        if (f != null) {
            followedPaths.remove(f.path);
            for (long node : f.nodes) {
                keys.remove(node, dir);
            }
        }
    }

    @Override
    public void eventsLost() {
        Arrays.fill(invalidatedAt, changes.incrementAndGet());
        LOG.warn("the store's change queue overflowed: names changed outside this mount may show stale until the"
                + " kernel's timeouts run out");
        // what can be done: every followed directory's attributes, and each name still in it
        for (Followed f : followed.values()) {
            for (long node : f.nodes) {
                invalidateDirectory(node);
                try {
                    router.forEachEntry(null, f.path, (name, offset, length, kind) -> {
                        invalidateEntry(node, Arrays.copyOfRange(name, offset, offset + length));
                        return true;
                    });
                } catch (IOException | RuntimeException gone) {
                    // the directory went; its own event says so
                }
            }
        }
    }

    private void forget(long dir, long node) {
        keys.remove(node, dir);
        followed.computeIfPresent(dir, (k, f) -> {
            long[] left = Arrays.stream(f.nodes).filter(x -> x != node).toArray();
            if (left.length == 0) {
                followedPaths.remove(f.path);
                return null;
            }
            f.nodes = left;
            return f;
        });
    }
}
