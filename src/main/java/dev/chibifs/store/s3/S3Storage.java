package dev.chibifs.store.s3;

import dev.chibifs.sys.Linux;
import dev.chibifs.sys.ErrnoException;
import dev.chibifs.sys.Errors;

import dev.chibifs.path.VfsPath;
import dev.chibifs.store.ContentHash;
import dev.chibifs.store.Entry;
import dev.chibifs.store.EntrySink;
import dev.chibifs.store.EtagMismatchException;
import dev.chibifs.store.Precondition;
import dev.chibifs.store.FileHandle;
import dev.chibifs.store.HeldFile;
import dev.chibifs.store.LateCloses;
import dev.chibifs.sys.IsDirectoryException;
import dev.chibifs.store.Metadata;
import dev.chibifs.store.OpenFlag;
import dev.chibifs.store.SpaceInfo;
import dev.chibifs.store.Storage;
import dev.chibifs.store.WholeStoreFailure;
import dev.chibifs.store.XattrMode;
import dev.chibifs.store.s3.Overlay.Node;
import dev.chibifs.store.s3.Overlay.Tomb;
import dev.chibifs.sys.OwnedDirectories;
import dev.chibifs.sys.Syscalls;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.FileTime;
import java.security.MessageDigest;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.ReentrantLock;
import java.util.regex.Pattern;

/**
 * A store in an S3 bucket, shared by every host that mounts it, with seed 004's local layer in a
 * cache directory in front of it.
 *
 * <p>The bucket: the file {@code /shared/tasks.md} is the object {@code <keyprefix>/shared/tasks.md},
 * byte for byte, so any S3 tool reads the namespace; a directory is a key prefix, with a zero-byte
 * marker object {@code <keyprefix>/shared/} for every directory made here (an empty one needs it).
 *
 * <p>The local layer: every name this host knows is a {@link Node} in the {@link Overlay} (size, times,
 * mode, content hash, and the ETag of the S3 object it came from), with a directory index of the
 * names below each directory; the content of every file opened here is a file in
 * {@code <cache>/data}. A change is made there and shows at once in stat, listings and reads; the
 * file is uploaded {@link S3Options#flushAfter()} after its last close (fsync: at once, returning
 * when S3 has it); deletes leave a tombstone until S3 has done them, so no stale listing brings the
 * name back. Every change to the overlay is journaled in {@code <cache>/journal} before it is told
 * done, and re-read at open: what was closed and not yet uploaded is uploaded then.
 *
 * <p>Several hosts: a listing or a HEAD is believed for {@link S3Options#validity()}, then asked
 * again, so a change another host uploaded shows here within it (its content from the next open;
 * close-to-open consistency). Every upload is conditional on the object being what this host last
 * saw (If-Match its ETag, If-None-Match: * for a new one): when another host got there first, its
 * version stays and this host's is uploaded beside it as {@code <name>.conflict-<host>-<time>},
 * and logged; unless every change made here since was an append ({@code >>}): then this host's
 * appended bytes go up at the end of theirs, as two appends through one host would have left the
 * file. {@link WriteBack} does the uploads, merges and conflict copies. Hard links cannot be kept
 * in S3: {@link #link} refuses them.
 *
 * <p>Symbolic links: the link {@code x} is the object {@code x.rclonelink} holding its target's text,
 * as {@code rclone --links} keeps them, so a listing tells a link from a file with no request per
 * name and {@code rclone copy --links} makes them links again on a disk. A file's name may not end in
 * {@code .rclonelink} (EINVAL): the bucket could not tell it from a link.
 *
 * <p>Locking: one lock (this object) guards the overlay, never held over a request to S3; the
 * write-back's locks (its passes one at a time, one upload of a file or key at a time, a pass's
 * deletes apart from fsyncs: see {@link WriteBack}) are taken before this lock, never after. The
 * write-back reads and changes the overlay under this same lock.
 */
public final class S3Storage implements Storage {

    private static final Logger LOG = LoggerFactory.getLogger(S3Storage.class);

    /** User metadata on every object uploaded here: its SHA-256, execute bits and mtime. */
    static final String META_SHA = "chibi-sha256";
    static final String META_MODE = "chibi-mode";
    static final String META_MTIME = "chibi-mtime";
    /**
     * Who put an O_EXCL create's empty object or a mkdir's marker with {@code --exclusive-creates}
     * ({@link #claimOnS3(VfsPath, String, byte[], Map)}): two hosts' claims are otherwise alike (no bytes,
     * the same mode, maybe the same millisecond), and a PUT whose answer was lost takes an object
     * with the metadata it sent for its own.
     */
    static final String META_MADE_BY = "chibi-made-by";

    /** What ends the key of a symbolic link's object (rclone's convention, with {@code --links}). */
    static final String LINK_SUFFIX = ".rclonelink";

    static final int FILE_MODE = 0644;
    static final int DIR_MODE = 0755;
    /**
     * A file S3 has and this host holds unchanged goes up as a copy S3 makes (after a rename, or a
     * change of attributes alone) from this size on: a copy costs two requests (a HEAD, the copy),
     * and a smaller PUT about one.
     */
    static final long COPY_RATHER_THAN_PUT_FROM = 1L << 20;
    /** A tombstone whose delete S3 has done is kept this long for listings that started before it. */
    static final long DONE_TOMB_MILLIS = 60_000;
    static final int SNAPSHOT_TRIES = 3;
    /**
     * How often a download, a range of one or a write that found the cache disk full makes room
     * ({@link #makeRoom}) and tries again: a range may find the room it made taken by the other
     * ranges coming at once, and a write retried finds its own part written before the failure.
     */
    static final int ROOM_TRIES = 5;
    /** A content file used this recently stays in the cache whatever its size (see {@link #evictBeyondCacheSize}). */
    static final long EVICT_AFTER_MILLIS = 60_000;
    /** How many content files go under one hold of the monitor. */
    private static final int EVICT_BATCH = 64;
    static final java.util.concurrent.atomic.AtomicLong FETCHES = new java.util.concurrent.atomic.AtomicLong();

    final S3Spec spec;
    private final Bucket bucket;
    final S3Options options;
    final Path dataDir;
    /**
     * Removes cached content off the store's monitor and the request: on a disk that discards freed
     * blocks, freeing a file's was half of an UNLINK here (338 us of daemon time, `s40/s3rmperf.sh`).
     */
    final LateCloses lateCloses = new LateCloses();
    private final Path uploadDir;
    /** Every change to the overlay, journaled before it is told done. */
    final JournalRecords journal;
    private final FileChannel lockFile;
    private final FileLock cacheLock;
    /** What this open added to the cache directory, undone where S3 refuses the store. */
    private final MadeAtOpen made;
    final WriteBack writeBack;
    final Listings listings;
    /** Content coming down into the cache. */
    final Fetches fetches;
    /** Files larger than the cache disk, read from S3 into memory instead. */
    final RangeReads rangeReads;
    /** The copies S3 makes for the moves under way, and those a stop left behind. */
    final CopiesUnderWay copies;
    /** Locks that reach the bucket's other hosts; null where {@link S3Options#lockLease} is 0. */
    final HostLocks hostLocks;
    private final Thread flusher;
    /** What this host knows of the store; guarded by this store's monitor. */
    final Overlay overlay;
    boolean closed;

    /** A pool of {@code count} threads that never keep the JVM alive (close() stops them, a crash need not). */
    private S3Storage(S3Spec spec, Bucket bucket, S3Options options) throws IOException {
        this.spec = spec;
        this.bucket = bucket;
        this.options = options;
        Path dir = options.cacheDir();
        String untrusted = OwnedDirectories.whyOthersMayWrite(dir);
        if (untrusted != null) {
            // the journal there is uploaded with this daemon's credentials, its content files served as the files'
            throw ErrnoException.of(Linux.EACCES, dir.toString(), "the cache directory is not this user's"
                    + " alone (" + untrusted + "), and what another user put there would go up to S3 as this daemon's"
                    + " changes; give --cache-dir a directory only uid " + Syscalls.geteuid()
                    + " and root can write");
        }
        this.made = new MadeAtOpen(dir);
        createCacheDirectory(dir);
        boolean newLock = made.missing(LOCK_FILE);
        this.lockFile = FileChannel.open(dir.resolve(LOCK_FILE), StandardOpenOption.CREATE, StandardOpenOption.READ,
                StandardOpenOption.WRITE);
        FileLock l;
        try {
            l = lockFile.tryLock();
        } catch (IOException | OverlappingFileLockException e) {
            l = null; // the second: this very JVM holds it (two stores with one cache directory)
        }
        if (l == null) {
            lockFile.close();
            throw ErrnoException.of(Linux.EBUSY, dir.toString(), "the cache directory is in use by another chibifs (one store per cache directory);"
                    + " give this one a --cache-dir DIR of its own");
        }
        this.cacheLock = l;
        if (newLock) {
            made.made(LOCK_FILE);
        }
        String lineage;
        try {
            lineage = lineage(lockFile);
            // under the lock, so that what a refused open made is known to be its own
            this.dataDir = createUnderLock(dir, DATA_DIR);
            this.dataDirKey = fileKey(dataDir);
            this.uploadDir = createUnderLock(dir, UPLOAD_DIR);
            CacheOwner before = CacheOwner.claim(dir, spec, bucket.where()); // before the journal: another store's changes must not go up here
            if (!CacheOwner.of(spec, bucket.where()).equals(before)) {
                made.ownerWritten(before);
            }
            if (made.missing(JOURNAL_FILE)) {
                made.made(JOURNAL_FILE);
            }
        } catch (IOException | RuntimeException e) {
            lockFile.close(); // lets the lock go
            throw e;
        }
        this.overlay = new Overlay(this);
        this.copies = new CopiesUnderWay(this, bucket);
        this.journal = new JournalRecords(this, dir.resolve(JOURNAL_FILE));
        this.writeBack = new WriteBack(this, spec, bucket, options, uploadDir);
        this.listings = new Listings(this, spec, bucket, options);
        this.fetches = new Fetches(this, bucket);
        this.rangeReads = new RangeReads(bucket);
        bucket.roomFor = (key, bytes) -> makeRoom(bytes, key, true); // a download in ranges, on a full cache disk
        this.hostLocks = options.lockLease().isZero() ? null : new HostLocks(this, bucket, options.host(), lineage, options.lockLease());
        synchronized (this) {
            journal.replay();
        }
        this.flusher = new Thread(writeBack::flushLoop, "s3-writeback " + spec);
        flusher.setDaemon(true);
        if (options.background()) {
            flusher.start();
        }
    }

    /** The cache directory's lock file and subdirectories. */
    private static final String LOCK_FILE = "lock";
    /** A {@link #lineage}: hex digits, as many as a run's token in a lease's holder. */
    private static final Pattern LINEAGE = Pattern.compile("[0-9a-f]{8}");

    /**
     * The token of the daemons that used this cache directory, one after another, kept in its lock
     * file (made when there is none): it names this host's lock leases ({@link HostLocks}), so a
     * daemon restarted after kill -9 knows its previous run's leases as a dead holder's at once.
     * They kept its own SQLite database locked for the lease's life (30 s) after a remount. Only one
     * daemon at a time holds the lock file, so a lease of the lineage not this run's is a dead run's.
     */
    private static String lineage(FileChannel lockFile) throws IOException {
        ByteBuffer buf = ByteBuffer.allocate(64);
        int n = lockFile.read(buf, 0); // nine bytes of a local file come in one read
        String recorded = new String(buf.array(), 0, Math.max(n, 0), StandardCharsets.US_ASCII).trim();
        if (LINEAGE.matcher(recorded).matches()) {
            return recorded;
        }
        String made = UUID.randomUUID().toString().substring(0, 8);
        lockFile.truncate(0);
        lockFile.write(ByteBuffer.wrap((made + "\n").getBytes(StandardCharsets.US_ASCII)), 0);
        lockFile.force(true);
        return made;
    }
    private static final String DATA_DIR = "data";
    private static final String UPLOAD_DIR = "upload";

    /**
     * Makes the cache directory {@code dir} and those above it. A link to nowhere there (or a file)
     * is named as such: createDirectories said only the path (FileAlreadyExistsException).
     */
    private static void createCacheDirectory(Path dir) throws IOException {
        try {
            dev.chibifs.sys.MadeDirectories.createDirectories(dir);
        } catch (FileAlreadyExistsException e) {
            String what = Files.isSymbolicLink(dir)
                    ? "is a symbolic link to " + Files.readSymbolicLink(dir) + ", which is no directory"
                    + " (make the directory it names, or give --cache-dir a directory)"
                    : "is there and is no directory (give --cache-dir a directory)";
            throw ErrnoException.of(Linux.ENOTDIR, null, "the cache directory " + dir + " " + what);
        }
    }

    /** Makes {@code name} in the cache directory, noted as this open's where it was not there. */
    private Path createUnderLock(Path dir, String name) throws IOException {
        boolean missing = made.missing(name);
        Path p = dev.chibifs.sys.MadeDirectories.createDirectories(dir.resolve(name));
        if (missing) {
            made.made(name);
        }
        return p;
    }

    /**
     * Opens the store {@code spec} ({@code s3://BUCKET/KEYPREFIX[?endpoint=URL&region=R]}) with its local
     * layer in {@code options.cacheDir()}; what the journal there holds unflushed is uploaded first.
     * Nothing is asked of S3 until the store is used.
     */
    public static S3Storage open(String spec, S3Options options) throws IOException {
        S3Spec parsed = S3Spec.parse(spec);
        S3Storage s = open(parsed, Bucket.connect(parsed, options.env()), options);
        try {
            s.askS3();
        } catch (IOException | RuntimeException e) {
            try {
                // changes of an earlier run stay in the cache for the next open; what this open made goes
                s.close(true);
            } catch (IOException | RuntimeException notClosed) {
                e.addSuppressed(notClosed);
            }
            throw e;
        }
        return s;
    }

    /**
     * One question to S3 at open (the first key below the prefix), once there are credentials to ask
     * with. A bucket that does not exist, credentials S3 refuses or another region are S3's own
     * answer: the store does not open, with that answer, rather than mounting a tree every operation
     * of which fails EIO. An endpoint that does not answer (or answers 5xx) is no reason: what the
     * cache holds is served meanwhile, what changes there goes up once it answers.
     */
    private void askS3() throws IOException {
        bucket.requireCredentials();
        try {
            bucket.probe(dirKey(VfsPath.root()));
        } catch (Bucket.Refused e) {
            if (e.isClientError()) {
                throw new IOException("S3 store " + spec + " at " + bucket.where() + ": " + e.reason()
                        + " to a listing of its prefix; check the bucket's name, its region and the credentials", e);
            }
            writeBack.noteOutage(e);
        } catch (Bucket.Unavailable e) {
            writeBack.noteOutage(e);
        }
    }

    static S3Storage open(S3Spec spec, Bucket bucket, S3Options options) throws IOException {
        try {
            return new S3Storage(spec, bucket, options);
        } catch (IOException | RuntimeException e) {
            bucket.close();
            throw e;
        }
    }

    // ---- keys ----

    private String key(VfsPath p) {
        return spec.key(p.isRoot() ? "" : p.relative());
    }

    /** The prefix of everything below directory {@code p}, ending with '/' (empty for the bucket's top). */
    String dirKey(VfsPath p) {
        String k = key(p);
        return k.isEmpty() ? "" : k + "/";
    }

    /** The object that holds {@code n} at {@code p}: a directory's marker, a link's {@code .rclonelink}, a file's own key. */
    String objectKey(VfsPath p, Node n) {
        return objectKey(p, n.dir, n.link);
    }

    String objectKey(VfsPath p, boolean dir, boolean link) {
        return dir ? dirKey(p) : link ? key(p) + LINK_SUFFIX : key(p);
    }

    /** The name of the link an object named {@code objectName} holds, or null when it holds a file. */
    static String linkName(String objectName) {
        return objectName.length() > LINK_SUFFIX.length() && objectName.endsWith(LINK_SUFFIX)
                ? objectName.substring(0, objectName.length() - LINK_SUFFIX.length()) : null;
    }

    /** A file or link may not be named as a link's object is: the bucket could not tell one from the other. */
    private void requireStorableName(VfsPath p) throws IOException {
        refuseLeaseKeys(p);
        requireKeyFits(p, key(p));
        if (linkName(p.fileName()) != null) {
            throw ErrnoException.of(Linux.EINVAL, p.toString(), "a name ending in " + LINK_SUFFIX
                    + " is how an S3 store keeps a symbolic link, so no file or link of its own may have one");
        }
    }

    /**
     * A store at the bucket's top (no key prefix) would hold the locks' leases as a directory of its
     * own: hidden from listings, but any writer could make or remove a lease there, keeping every
     * host out of a file or letting two hold it at once. Those names are no file's.
     */
    private void refuseLeaseKeys(VfsPath p) throws IOException {
        // every lookup asks, for each name of the path: judged by its first name, with no key built
        // ("/.chibifs-locks" is as long as ".chibifs-locks/")
        String path = p.toString();
        int n = HostLocks.KEYS.length();
        if (spec.keyPrefix().isEmpty() && path.regionMatches(1, HostLocks.KEYS, 0, n - 1)
                && (path.length() == n || path.charAt(n) == '/')) {
            throw ErrnoException.of(Linux.EINVAL, p.toString(),
                    HostLocks.KEYS.substring(0, HostLocks.KEYS.length() - 1) + " at the bucket's top holds the locks' leases");
        }
    }

    /**
     * S3's longest key is {@value #MAX_KEY_BYTES} bytes of UTF-8: a longer name is refused here
     * (ENAMETOOLONG), where S3 would refuse its upload after the write had returned, and the change
     * would never reach another host.
     */
    private void requireKeyFits(VfsPath p, String key) throws IOException {
        requireKeyFits(p, key.getBytes(java.nio.charset.StandardCharsets.UTF_8).length);
    }

    private static void requireKeyFits(VfsPath p, int keyBytes) throws IOException {
        if (keyBytes > MAX_KEY_BYTES) {
            throw ErrnoException.of(Linux.ENAMETOOLONG, p.toString(), "its S3 key would be "
                    + keyBytes + " bytes, where S3 takes " + MAX_KEY_BYTES + " at most");
        }
    }

    static int utf8Length(String s) {
        return s.getBytes(java.nio.charset.StandardCharsets.UTF_8).length;
    }

    /** The journal's name in the cache directory. */
    static final String JOURNAL_FILE = "journal";

    /** The longest key S3 takes, in bytes of UTF-8. */
    static final int MAX_KEY_BYTES = 1024;

    Path dataFile(long ino) {
        return dataDir.resolve(Long.toString(ino));
    }

    FileTime now() {
        return FileTime.from(options.clock().instant());
    }

    /**
     * Now on the store's monotonic ticker ({@link S3Options#ticker}), in milliseconds: for durations
     * only (when a file is due, a listing expires, content was last used), never shown or kept.
     */
    long ticks() {
        return options.ticker().getAsLong();
    }


    /**
     * What is left of the validity of {@code directory}'s last listing: until then a lookup, stat or
     * listing there is answered from what this host has, with no request, so the kernel may keep
     * those answers as long. Zero for a directory not listed, or listed too long ago (the next
     * question lists it again; while S3 does not answer, what stands may change whenever it does).
     */
    @Override
    public synchronized Duration answersHeld(VfsPath directory) {
        return listings.answersHeld(directory);
    }

    /** A listing holds for its validity, and nothing after it: see {@link Storage#answersExpire}. */
    @Override
    public boolean answersExpire() {
        return true;
    }

    /** Every listing expires: the next question about a directory lists it again (while S3 answers). */
    @Override
    public synchronized void dropHeldAnswers() {
        listings.expireAll();
    }

    /** Told of each conflict that keeps this host's file under its copy's name ({@link WriteBack}). */
    @Override
    public void tellOwnMoves(dev.chibifs.store.OwnMoves listener) {
        ownMoves = listener;
    }

    /** Where {@link #tellOwnMoves} tells; never under the store's monitor. */
    volatile dev.chibifs.store.OwnMoves ownMoves = (from, to) -> { };

    /**
     * {@code n} went up from this host: the time S3 gave the object is not known (a PUT answers
     * none) but is no later than when S3 answered the upload, by S3's own clock (its Date header):
     * the clock a listing's LastModified is on, so a host whose clock runs ahead of S3's still sees
     * another host's put after its own. Only from a server that sends no Date, this host's wall clock
     * (not the store's clock: that one stands still in tests, where S3's does not).
     */
    void uploaded(Node n) {
        uploaded(n, bucket.uploadAnswered());
        listings.uploadAnswered(n);
    }

    /** As {@link #uploaded(Node)}, where S3 said the time it gave the object ({@code modified}: a HEAD's). */
    static void uploaded(Node n, Instant modified) {
        n.listedModified = null;
        n.uploadedAt = modified != null ? modified : Instant.now();
    }

    synchronized boolean inDoubt(Node n) {
        return n.doubted != null;
    }

    /**
     * What {@code n}'s content was before another host's version came ({@code size} bytes, SHA-256
     * {@code sha}), moved to {@code file} in the upload directory ({@link Node#former}).
     */
    record Former(long size, String sha, Path file) {
    }

    /**
     * Forgets the content cached of {@code n}, which S3 no longer has; under the monitor. Where it
     * is a part or more and its SHA-256 is known, it is kept aside as {@link Node#former}: another
     * host's version is most often it with lines added, and the next open then downloads only those
     * (a host appending to a shared 31.6 MiB log downloaded all of it at every `echo >>`).
     */
    void dropContent(Node n) {
        if (n.cached) {
            dropFormer(n);
            try {
                if (n.path != null && n.sha != null && n.shaGen == n.gen && n.size >= Bucket.MIN_PART_BYTES) {
                    // moved, not copied: open handles keep reading their descriptor of it
                    Path file = uploadDir.resolve(n.ino + ".former");
                    Files.move(dataFile(n.ino), file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
                    n.former = new Former(n.size, n.sha, file);
                } else {
                    lateCloses.delete(dataFile(n.ino)); // stale; open handles keep their copy
                }
            } catch (IOException e) {
                LOG.warn("cannot remove stale cached content of {}: {}", n.path, e.getMessage());
            }
        }
        n.cached = false;
        n.sha = null;
        n.shaGen = -1;
        n.doubted = null;
        if (n.locks != null) {
            n.replaced++;
        }
    }

    /** Drops {@code n}'s {@link Node#former} content, if any; under the monitor. */
    void dropFormer(Node n) {
        Former f = n.former;
        if (f == null) {
            return;
        }
        n.former = null;
        try {
            lateCloses.delete(f.file());
        } catch (IOException e) {
            LOG.debug("S3 store {}: {} left in the cache: {}", spec, f.file(), e.getMessage());
        }
    }

    /** The key of {@code n}'s object, or null once it is removed. */
    synchronized String objectKeyOf(Node n) {
        return n.path == null ? null : objectKey(n.path, n);
    }

    /**
     * A lock on {@code n} now excludes every other host ({@link HostLocks}): what they changed
     * before letting go is seen here now, not after the listings' validity. Its directory is listed
     * again (a name another host made or removed under the lock, as SQLite's journal), and the
     * files there that S3 holds in another version lose their content here; those open for writing,
     * which a listing leaves alone, are asked one by one (the file itself; SQLite in WAL mode locks
     * the {@code -shm}, and its database and {@code -wal} beside it change under that lock), and so
     * are the files made here empty that S3 listed meanwhile (the {@code -wal} SQLite made before it
     * locked). Their open handles read the new versions. Best effort: where S3 does not answer, what
     * is known stands.
     */
    void pullForLock(Node n) {
        VfsPath p;
        synchronized (this) {
            p = n.path;
            if (p == null || p.isRoot()) {
                return;
            }
            listings.expireListing(p.parent());
        }
        try {
            lookup(p);
            for (int ask = 0; ask < 2 && inDoubt(n); ask++) {
                listings.learnAttributes(n, false);
            }
            List<Node> compared = new ArrayList<>();
            synchronized (this) {
                for (String name : overlay.children(p.parent())) {
                    Node s = overlay.nodes.get(p.parent().child(name));
                    if (s != null && !s.dir && (s.writers > 0 && !s.dirty || Listings.madeEmptyHere(s))) {
                        compared.add(s);
                    }
                }
            }
            for (Node s : compared) {
                listings.pullVersion(s); // a listing leaves a file open for writing, or changed here, as it was
            }
        } catch (IOException e) {
            LOG.debug("S3 store {}: {} not compared with S3 at its lock: {}", spec, p, e.getMessage());
        }
    }

    /**
     * The node at {@code p}, or null; its directory is listed again when that listing is stale. The
     * directories above it are not: known here is enough, as the listing of the last one says when
     * they are gone (it comes back empty), and a stat costs one request per validity, not one per level.
     */
    private Node lookup(VfsPath p) throws IOException {
        if (p.isRoot()) {
            return overlay.root;
        }
        refuseLeaseKeys(p);
        Node parent = ancestor(p.parent());
        if (parent == null) {
            return null;
        }
        if (!parent.dir) {
            throw new NotDirectoryException(p.toString());
        }
        synchronized (this) {
            Node n = overlay.nodes.get(p);
            if (listings.standsUnlisted(p, n)) {
                return n;
            }
        }
        listings.refresh(p.parent());
        synchronized (this) {
            return overlay.nodes.get(p);
        }
    }

    private Node ancestor(VfsPath dir) throws IOException {
        synchronized (this) {
            Node n = overlay.nodes.get(dir);
            if (n != null) {
                return n;
            }
        }
        return lookup(dir);
    }

    private Node find(VfsPath p) throws IOException {
        Node n = lookup(p);
        if (n == null) {
            throw new NoSuchFileException(p.toString());
        }
        return n;
    }

    /** The file at {@code p}: a directory is EISDIR and a link ELOOP, as an open with O_NOFOLLOW says. */
    private Node findFile(VfsPath p) throws IOException {
        if (p.isRoot()) {
            throw new IsDirectoryException(p.toString()); // a directory, as every other one: not parentOf's EBUSY
        }
        Node n = find(p);
        if (n.dir) {
            throw new IsDirectoryException(p.toString());
        }
        if (n.link) {
            throw notFollowed(p);
        }
        return n;
    }

    /** ELOOP: the store follows no link (LocalStorage and MemoryStorage say the same). */
    private static IOException notFollowed(VfsPath p) {
        return ErrnoException.of(Linux.ELOOP, p.toString(), null);
    }

    private Node findDir(VfsPath p) throws IOException {
        Node n = find(p);
        if (!n.dir) {
            throw new NotDirectoryException(p.toString());
        }
        return n;
    }

    /** The parent directory of {@code p}, which must exist (as mknod(2): ENOENT, ENOTDIR). */
    private Node parentOf(VfsPath p) throws IOException {
        if (p.isRoot()) {
            throw ErrnoException.of(Linux.EBUSY, p.toString(), null);
        }
        Node parent;
        try {
            parent = lookup(p.parent());
        } catch (NotDirectoryException e) {
            throw new NotDirectoryException(p.toString());
        }
        if (parent == null) {
            throw new NoSuchFileException(p.toString());
        }
        if (!parent.dir) {
            throw new NotDirectoryException(p.toString());
        }
        listings.refresh(p.parent());
        return parent;
    }

    void fromMeta(Node n, Bucket.Head h) {
        n.attributesKnown = true;
        Map<String, String> meta = h.meta();
        String sha = meta.get(META_SHA);
        if (sha != null && ContentHash.isEtag(sha)) {
            n.sha = sha;
            n.shaGen = n.gen;
        }
        if (!n.link) {
            n.xattrs = ObjectXattrs.decode(meta.get(ObjectXattrs.META_KEY));
        }
        try {
            if (meta.containsKey(META_MODE) && !n.link) { // a link's bits are always 0777
                n.mode = (n.mode & ~0111) | (Integer.parseInt(meta.get(META_MODE), 8) & 0111);
            }
            if (meta.containsKey(META_MTIME)) {
                n.mtime = FileTime.fromMillis(Long.parseLong(meta.get(META_MTIME)));
            }
        } catch (NumberFormatException e) {
            // another tool's metadata: S3's own times stand
        }
    }

    // ---- the seeds' operations ----

    @Override
    public byte[] read(VfsPath path) throws IOException {
        try (ObjectHandle ranged = fetches.rangedHandle(findFile(path), path)) {
            if (ranged != null) {
                // larger than the cache disk (chibifs cat, a move to another store): from S3, as a mount reads it
                if (ranged.size() > Integer.MAX_VALUE - 16) {
                    throw ErrnoException.of(Linux.EFBIG, path.toString(), null);
                }
                ByteBuffer buf = ByteBuffer.allocate((int) ranged.size());
                while (buf.hasRemaining() && ranged.read(buf, buf.position()) > 0) {
                    // each read ends at a chunk's end
                }
                return buf.position() == buf.capacity() ? buf.array() : java.util.Arrays.copyOf(buf.array(), buf.position());
            }
        }
        try (CacheFile ch = openContent(path)) {
            long size = ch.size();
            if (size > Integer.MAX_VALUE - 16) {
                throw ErrnoException.of(Linux.EFBIG, path.toString(), null);
            }
            ByteBuffer buf = ByteBuffer.allocate((int) size);
            ch.read(buf, 0); // short only if the file ends sooner
            return buf.position() == buf.capacity() ? buf.array() : java.util.Arrays.copyOf(buf.array(), buf.position());
        }
    }

    /** The current content of the file at {@code path}, open: a later replace does not change it. */
    private CacheFile openContent(VfsPath path) throws IOException {
        for (int attempt = 0; ; attempt++) {
            Node n = findFile(path);
            fetches.fetch(n);
            synchronized (this) {
                // the node now at the path: a write may have replaced n since, and that is as good
                Node cur = overlay.nodes.get(path);
                if (cur != null && !cur.dir && cur.cached) {
                    return CacheFile.openForReading(dataFile(cur.ino));
                }
            }
            if (attempt >= SNAPSHOT_TRIES) {
                throw ErrnoException.of(Linux.EBUSY, path.toString(), "changed while it was opened");
            }
        }
    }

    @Override
    public void write(VfsPath path, byte[] data) throws IOException {
        replace(path, data.length, tmp -> {
            try (CacheFile f = CacheFile.create(tmp)) {
                f.write(ByteBuffer.wrap(data), 0);
            }
        }, -1);
    }

    private interface Filler {
        void fill(Path tmp) throws IOException;
    }

    /**
     * Creates or replaces a file with new content of {@code bytes} (a new inode), atomically; creates
     * parents. A full cache disk makes room from content already on S3 first ({@link #makeRoom}).
     */
    private void replace(VfsPath path, long bytes, Filler content, int mode) throws IOException {
        requireRoom();
        if (path.isRoot()) {
            throw new IsDirectoryException(path.toString());
        }
        requireStorableName(path);
        mkdir(path.parent());
        Node existing = lookup(path);
        if (existing != null && existing.dir) {
            throw new IsDirectoryException(path.toString());
        }
        if (existing != null && mode < 0) {
            listings.learnAttributes(existing, false); // the new content keeps the old file's mode
        }
        long ino;
        synchronized (this) {
            ino = overlay.nextIno++;
        }
        Path tmp = dataDir.resolve(ino + ".new");
        try {
            for (int tries = 1; ; tries++) {
                try {
                    content.fill(tmp);
                    break;
                } catch (IOException e) {
                    Files.deleteIfExists(tmp);
                    if (dev.chibifs.sys.Errors.errno(e) != Linux.ENOSPC || !makeRoom(bytes, path.toString(), true)
                            || tries >= ROOM_TRIES) {
                        throw e;
                    }
                }
            }
            synchronized (this) {
                Node old = overlay.nodes.get(path);
                if (old != null && old.dir) {
                    throw new IsDirectoryException(path.toString());
                }
                if (overlay.nodes.get(path.parent()) == null) {
                    throw new NoSuchFileException(path.toString());
                }
                Files.move(tmp, dataFile(ino), StandardCopyOption.ATOMIC_MOVE);
                Node n = new Node(ino, false, false, now(), mode >= 0 ? mode : old == null || old.link ? FILE_MODE : old.mode);
                n.size = Files.size(dataFile(ino));
                n.cached = true;
                if (old != null) {
                    if (old.link) {
                        overlay.bury(path, old); // its object is another key than the file's
                    } else {
                        n.remoteEtag = old.remoteEtag;
                    }
                    overlay.detach(old);
                }
                overlay.placeMade(path, n);
                if (old != null) {
                    overlay.tookNameOf(n, old);
                }
                journal.commit();
            }
        } finally {
            Files.deleteIfExists(tmp);
        }
    }

    @Override
    public void append(VfsPath path, byte[] data) throws IOException {
        mkdir(path.parent());
        try (FileHandle h = open(path, Set.of(OpenFlag.WRITE, OpenFlag.APPEND, OpenFlag.CREATE), FILE_MODE)) {
            try {
                h.write(ByteBuffer.wrap(data), 0);
            } catch (IOException | RuntimeException e) {
                // one append is one write, as the local store's: the handle cut back what part went in
                // (a cache disk full midway); a file this append made goes too, empty as it was made
                if (h instanceof ObjectHandle o && o.madeItsFile()) {
                    removeIfStillEmpty(path, o.node());
                }
                throw e;
            }
        }
    }

    /** Removes {@code n} from {@code path} while the name still holds it, empty; quietly, as the undo of a failure. */
    private void removeIfStillEmpty(VfsPath path, Node n) {
        try {
            synchronized (this) {
                if (overlay.nodes.get(path) == n && n.size == 0) {
                    unname(path, n);
                }
            }
        } catch (IOException | RuntimeException failing) {
            // the failure being told is the one that matters
        }
    }

    @Override
    public void delete(VfsPath path) throws IOException {
        requireRoom();
        Node n = find(path);
        if (n == overlay.root) {
            throw ErrnoException.of(Linux.EBUSY, path.toString(), null);
        }
        if (n.dir) {
            listings.listTree(path);
        }
        synchronized (this) {
            if (n.path == null) {
                throw new NoSuchFileException(path.toString());
            }
            for (Node m : overlay.subtree(path)) {
                overlay.bury(m.path, m);
                journal.gone(m.path);
                overlay.detach(m);
            }
            overlay.touch(overlay.nodes.get(path.parent()));
            overlay.needMarker(path.parent());
            journal.commit();
        }
    }

    @Override
    public List<Entry> entries(VfsPath path) throws IOException {
        return listing(path).entries();
    }

    @Override
    public void forEachEntry(VfsPath path, EntrySink sink) throws IOException {
        // a snapshot, handed on outside the lock: the sink is the caller's code
        Listing l = listing(path);
        EntrySink.feed(l.entries(), l.inodes(), sink);
    }

    /** A directory's entries and, in the same order, their inode numbers. */
    private record Listing(List<Entry> entries, long[] inodes) {
    }

    private Listing listing(VfsPath path) throws IOException {
        findDir(path);
        listings.refresh(path);
        synchronized (this) {
            java.util.Set<String> names = overlay.children(path);
            List<Entry> out = new ArrayList<>(names.size());
            long[] inodes = new long[names.size()];
            for (String name : names) {
                Node n = overlay.nodes.get(path.child(name));
                if (n != null) {
                    inodes[out.size()] = n.ino;
                    out.add(new Entry(name, n.kind()));
                }
            }
            return new Listing(out, inodes);
        }
    }

    @Override
    public boolean exists(VfsPath path) throws IOException {
        try {
            return lookup(path) != null;
        } catch (NotDirectoryException e) {
            return false;
        }
    }

    @Override
    public void mkdir(VfsPath path) throws IOException {
        requireRoom();
        if (path.isRoot()) {
            return;
        }
        mkdir(path.parent());
        Node n = lookup(path);
        if (n != null) {
            if (!n.dir) {
                throw new NotDirectoryException(path.toString());
            }
            return;
        }
        requireKeyFits(path, dirKey(path));
        synchronized (this) {
            n = overlay.nodes.get(path);
            if (n == null) {
                makeDir(path);
                journal.commit();
            } else if (!n.dir) {
                throw new NotDirectoryException(path.toString());
            }
        }
    }

    private Node makeDir(VfsPath path) {
        Node d = overlay.newNode(true, DIR_MODE);
        overlay.placeMade(path, d);
        d.due = ticks(); // no debounce for a marker: other hosts see the directory sooner
        // the parent's listing showed no such prefix, so S3 had nothing below it then: that listing
        // stands for this directory's own until it expires (a tar or a venv asks one LIST less per
        // directory, and one made while S3 is away can be filled)
        listings.listedAsItsParent(path);
        return d;
    }

    @Override
    public void copy(VfsPath src, VfsPath dst) throws IOException {
        int mode;
        try (CacheFile from = openContent(src)) {
            synchronized (this) {
                mode = overlay.nodes.get(src) == null ? FILE_MODE : overlay.nodes.get(src).mode;
            }
            // like std::fs::copy in the seeds and LocalStorage: the copy takes the source's mode
            replace(dst, from.size(), tmp -> {
                try (CacheFile to = CacheFile.create(tmp)) {
                    to.copyFrom(from);
                }
            }, mode);
        }
    }

    /** The overlay's name of the handle's file: renames by other hosts move it when a listing finds them. */
    @Override
    public synchronized VfsPath pathOf(FileHandle handle) {
        return handle instanceof ObjectHandle o ? o.node().path : null;
    }

    @Override
    public void rename(VfsPath src, VfsPath dst) throws IOException {
        requireRoom();
        Node n = find(src);
        if (n == overlay.root) {
            throw ErrnoException.of(Linux.EBUSY, src.toString(), null);
        }
        parentOf(dst);
        if (src.equals(dst)) {
            return;
        }
        if (n.dir && dst.startsWith(src)) {
            throw ErrnoException.of(Linux.EINVAL, src.toString(), dst.toString(), null);
        }
        if (!n.dir) {
            requireStorableName(dst);
            requireKeyFits(dst, objectKey(dst, n));
        } else {
            requireKeyFits(dst, dirKey(dst));
        }
        Node target = lookup(dst);
        if (target != null && target.dir) {
            listings.refresh(dst);
        }
        keepContentOfOpen(target);
        // S3 cannot rename: everything moved goes up anew under its new name. What this host does not
        // hold S3 copies there itself; the rest goes up from here, so its content must be here first,
        // and stay (pinned: the content cache keeps it) until the move is made
        List<Node> files;
        if (n.dir) {
            listings.listTree(src);
            synchronized (this) {
                List<Node> tree = overlay.subtree(src);
                // every key below moves from src's to dst's: the longest must still fit
                int longest = tree.stream().mapToInt(m -> utf8Length(objectKey(m.path, m))).max().orElse(0);
                requireKeyFits(dst, longest - utf8Length(key(src)) + utf8Length(key(dst)));
                files = tree.stream().filter(m -> !m.dir).toList();
                pin(files, 1);
            }
        } else {
            files = List.of(n);
            synchronized (this) {
                pin(files, 1);
            }
        }
        List<String> copying = new ArrayList<>();
        Copies copies = Copies.NONE;
        boolean moved = false;
        try {
            copies = copyOnS3(n, src, dst, files, copying);
            for (Node f : files) {
                if (!copies.copied().containsKey(f)) {
                    fetchUnlessGone(f);
                }
            }
            moveFetched(n, src, dst, copies.copied());
            moved = true;
        } finally {
            synchronized (this) {
                pin(files, -1);
                overlay.inflight.removeAll(copying);
                moved = moved || dst.equals(n.path); // failed once made: the copies are its files now
            }
            endCopies(copies, moved);
        }
    }

    /** What S3 copied for a move, journaled as move {@code move} ({@link CopiesUnderWay}; 0: none). */
    private record Copies(long move, Map<Node, Copied> copied) {
        static final Copies NONE = new Copies(0, Map.of());
    }

    /** The end of a move's copies: kept where {@code moved}, else removed; its record ended once nothing is left. */
    private void endCopies(Copies c, boolean moved) {
        if (c.move() == 0) {
            return;
        }
        boolean gone = moved || dropCopies(c.copied().values());
        synchronized (this) {
            if (gone) {
                copies.end(c.move());
            } else {
                copies.leftBehind(c.move());
            }
        }
    }

    /**
     * {@link #fetch}, for a file a move carries: one removed meanwhile, here or by another host
     * since this host listed it (S3 answers its GET with 404, and the fetch takes it out of the
     * overlay), is left behind, as if that delete had come before the move.
     */
    private void fetchUnlessGone(Node f) throws IOException {
        try {
            fetches.fetch(f);
        } catch (NoSuchFileException e) {
            synchronized (this) {
                if (f.path != null) {
                    throw e;
                }
            }
        }
    }

    /** A file of a move that S3 copied to its new name, from the version this node had at generation {@code gen}. */
    private record Copied(String key, String etag, long gen) {
    }

    /**
     * The object {@code key}, ETag {@code etag}, a file held here had under its old name, with its
     * content's SHA-256 {@code sha} where known; {@code gen} the node's generation once moved. It holds
     * the node's content while the generation is still {@code gen}, or while the node's SHA-256 is
     * still known and the same (its attributes changed since).
     */
    record MovedFrom(String key, String etag, String sha, long gen) {
        /**
         * The generation of a source that a copy wrote here whole ({@link ObjectHandle#copiedHere}) rather
         * than one a move brought: the content holds the object's bytes if it still hashes to
         * {@link #sha}, checked at the upload, and the new file's attributes go up with it.
         */
        static final long COPIED = -1;
    }

    /**
     * Has S3 copy to their names under {@code dst} the files moved from {@code src} that this host
     * does not hold and has not changed: a rename would otherwise download each only to upload it
     * again (a HEAD and a copy each, S3 moving the bytes). Each copy is conditional on the object
     * still being the version this host saw, and on its new name being free; one refused (changed
     * or removed there since, its new name taken) or too large for one copy is left out, and moves
     * as the others do. Their keys are added to {@code copying}, as uploads in flight: a listing
     * under way does not take them for another host's files.
     */
    private Copies copyOnS3(Node n, VfsPath src, VfsPath dst, List<Node> files, List<String> copying)
            throws IOException {
        record Job(Node node, long gen, String from, String etag, long size, String to) {
        }
        List<Job> jobs = new ArrayList<>();
        long move;
        synchronized (this) {
            if (n.path == null || !n.path.equals(src)) {
                throw new NoSuchFileException(src.toString());
            }
            refuseMove(n, dst, overlay.nodes.get(dst));
            for (Node f : files) {
                if (f.cached || f.dirty || f.link || f.remoteEtag == null || f.path == null
                        || f.fetching != null) {
                    continue;
                }
                VfsPath to = moved(f.path, src, dst);
                String toKey = objectKey(to, f);
                Tomb t = overlay.tombs.get(toKey);
                if (overlay.nodes.containsKey(to) || (t != null && t.pending)) {
                    continue; // an object there is replaced by an upload, under its If-Match
                }
                jobs.add(new Job(f, f.gen, objectKey(f.path, f), f.remoteEtag, f.size, toKey));
                copying.add(toKey);
            }
            if (!jobs.isEmpty() && n.dir) {
                copying.add(dirKey(dst));
            }
            if (jobs.isEmpty()) {
                return Copies.NONE;
            }
            // journaled before the first copy: a kill -9 meanwhile left them under the new name for good
            move = copies.begin(jobs.stream().map(j -> new CopiesUnderWay.Copy(j.from(), j.etag(), j.to())).toList());
            overlay.inflight.addAll(copying);
        }
        Map<Node, Copied> copied = new java.util.concurrent.ConcurrentHashMap<>();
        Copies made = new Copies(move, copied);
        try {
            writeBack.inParallel(jobs, j -> {
                try {
                    copied.put(j.node(), new Copied(j.to(), bucket.copy(j.from(), j.etag(), j.size(), j.to(), null, null), j.gen()));
                } catch (Bucket.PreconditionFailed | Bucket.Missing | Bucket.Refused e) {
                    // refused is not away: a server without copies, or one that refused this one
                    LOG.debug("S3 store {}: {} not copied by S3, moved from here: {}", spec, j.from(), e.getMessage());
                }
            });
        } catch (IOException e) {
            endCopies(made, false);
            throw e;
        }
        return made;
    }

    /** Removes the copies of a move that did not happen; false where one is left in S3. */
    private boolean dropCopies(java.util.Collection<Copied> copied) {
        boolean all = true;
        for (Copied c : copied) {
            try {
                bucket.delete(c.key());
            } catch (IOException e) {
                all = false;
                LOG.warn("S3 store {}: the copy {} of a rename that failed is left in S3 until S3 answers: {}", spec,
                        c.key(), e.getMessage());
            }
        }
        return all;
    }

    /** Where {@code p}, at or below {@code src}, is once {@code src} has moved to {@code dst}. */
    private static VfsPath moved(VfsPath p, VfsPath src, VfsPath dst) {
        return VfsPath.of(dst + p.toString().substring(src.toString().length()));
    }

    /** Adds {@code by} to the count of what holds each of {@code files} in the content cache; under the monitor. */
    private static void pin(List<Node> files, int by) {
        for (Node f : files) {
            f.opens += by;
        }
    }

    /** Why {@code n} cannot move over {@code target} at {@code dst}, thrown; under the monitor. */
    private void refuseMove(Node n, VfsPath dst, Node target) throws IOException {
        if (target != null) {
            if (target.dir && !n.dir) {
                throw new IsDirectoryException(dst.toString());
            }
            if (!target.dir && n.dir) {
                throw new NotDirectoryException(dst.toString());
            }
            if (target.dir && !overlay.children(dst).isEmpty()) {
                throw new DirectoryNotEmptyException(dst.toString());
            }
        }
    }

    /** The rest of {@link #rename}, once the content of everything moved is here or {@code copied} by S3. */
    private void moveFetched(Node n, VfsPath src, VfsPath dst, Map<Node, Copied> copied) throws IOException {
        Node target;
        synchronized (this) {
            if (n.path == null || !n.path.equals(src)) {
                throw new NoSuchFileException(src.toString());
            }
            target = overlay.nodes.get(dst);
            refuseMove(n, dst, target);
            List<Node> moving = overlay.subtree(src);
            if (moving.stream().anyMatch(m -> !m.dir && !m.cached && !copied.containsKey(m))) {
                throw ErrnoException.of(Linux.EBUSY, src.toString(), dst.toString(), "changed while it was renamed");
            }
            // the object replaced in place is the If-Match of the upload under the new name; a link
            // replacing a file, or a file a link, leaves the other's object to delete (another key)
            boolean sameKey = target != null && !target.dir && target.link == n.link;
            String targetEtag = sameKey ? target.etagOnS3() : null;
            boolean targetDirOnRemote = target != null && target.dir && target.dirOnRemote;
            if (target != null) {
                if (!target.dir && !sameKey) {
                    overlay.bury(dst, target);
                }
                journal.gone(dst);
                overlay.detach(target);
            }
            // parents before children, so each lands under its moved parent
            moving.sort(Comparator.comparingInt(m -> m.path.depth()));
            if (!copied.isEmpty()) {
                overlay.seq++; // copies S3 made for this move: a listing begun before them does not remove their nodes
            }
            List<Node> mergesMoved = new ArrayList<>(0);
            for (Node m : moving) {
                VfsPath from = m.path;
                VfsPath to = moved(from, src, dst);
                String oldKey = objectKey(from, m);
                WriteBack.KeptMerge merge = WriteBack.keptMergeUnder(m, oldKey);
                if (merge != null) {
                    WriteBack.moveKeptMerge(m, merge, objectKey(to, m)); // before the old name's tombstone
                    mergesMoved.add(m);
                }
                // a file held here and unchanged is copied by S3 from its old name when it goes up
                // (not one with a kept merge: S3's object is that merge, which the copy here lacks)
                boolean copyLater = !m.dir && !m.link && m.cached && !m.dirty && m.remoteEtag != null
                        && m.size >= COPY_RATHER_THAN_PUT_FROM && merge == null;
                String oldEtag = m.remoteEtag;
                overlay.bury(from, m);
                overlay.movedAway(from, m);
                journal.gone(from);
                overlay.rename(m, to);
                m.remoteEtag = null;
                m.dirOnRemote = m.marker = false;
                overlay.resurrect(to, m);
                m.ctime = now();
                Copied c = copied.get(m);
                if (c != null) {
                    m.remoteEtag = c.etag();
                    uploaded(m);
                    m.syncedSeq = overlay.seq;
                    if (!m.dirty && m.gen == c.gen()) {
                        // S3 holds it under its new name: nothing to upload. A fetch of the old object
                        // still under way is not kept (another ETag, should S3 have copied in one part
                        // what was put in several)
                        boolean shaKnown = m.shaGen == m.gen;
                        m.gen++;
                        if (shaKnown) {
                            m.shaGen = m.gen;
                        }
                        m.oldNames = null; // up under its new name already: the old ones may go
                        journal.put(m);
                        continue;
                    }
                }
                boolean wasDirty = m.dirty;
                overlay.changed(m, true); // moved, not written: what is known of its content stays
                if (!wasDirty) {
                    m.due = ticks(); // the old name waits to go from S3: the new one goes up at once
                }
                if (m == n && target != null) {
                    overlay.tookNameOf(m, target);
                }
                m.movedFrom = copyLater ? new MovedFrom(oldKey, oldEtag, m.shaGen == m.gen ? m.sha : null, m.gen) : null;
            }
            if (n.dir) {
                n.dirOnRemote = n.dirOnRemote || targetDirOnRemote;
            } else if (targetEtag != null) {
                n.remoteEtag = targetEtag;
            }
            mergesMoved.forEach(WriteBack::movedWithKeptMerge);
            journal.put(n);
            overlay.touch(overlay.nodes.get(src.parent()));
            overlay.touch(overlay.nodes.get(dst.parent()));
            overlay.needMarker(src.parent());
            journal.commit();
        }
    }

    /**
     * A file a listing showed whose attributes are not asked yet (a HEAD, under way in the
     * background since the listing: {@link Listings#learnAttributes}) is {@link
     * Storage.Siblings#unconfirmed}: its size and S3's time, as listed, and no execute bits.
     */
    @Override
    public Siblings siblings(VfsPath directory) {
        return new Siblings() {
            /**
             * From the listing the names came from (a directory listing, which brought it up to date),
             * not listed again: a READDIRPLUS of a directory of 5,000 files another host made, whose
             * listing's validity (1 s) ran out part-way through, listed the whole directory again
             * for the next name, and again each time the slow listing itself outlasted its validity:
             * `ls` took up to 38 s. A name gone since is missing, as from a directory listing.
             */
            @Override
            public Metadata metadata(String name) throws IOException {
                VfsPath p = directory.child(name);
                Node n;
                synchronized (S3Storage.this) {
                    n = overlay.nodes.get(p);
                }
                if (n == null) {
                    throw new NoSuchFileException(p.toString());
                }
                return attributesOf(n);
            }

            @Override
            public Metadata unconfirmed(String name) {
                VfsPath p = directory.child(name);
                synchronized (S3Storage.this) {
                    Node n = overlay.nodes.get(p);
                    return n != null && !n.dir && !n.link && !n.attributesKnown ? metadataOf(n) : null;
                }
            }
        };
    }

    @Override
    public Metadata metadata(VfsPath path) throws IOException {
        return attributesOf(find(path));
    }

    /** {@link #metadataOf} node {@code n}, its attributes asked of S3 first where a listing did not give them. */
    private Metadata attributesOf(Node n) throws IOException {
        synchronized (this) {
            if (n.attributesKnown) {
                return metadataOf(n);
            }
        }
        listings.learnAttributes(n, true);
        synchronized (this) {
            return metadataOf(n);
        }
    }

    Metadata metadataOf(Node n) {
        long links;
        if (n.dir) {
            links = 2;
            if (n.path != null) {
                for (String name : overlay.children(n.path)) {
                    Node c = overlay.nodes.get(n.path.child(name));
                    if (c != null && c.dir) {
                        links++;
                    }
                }
            }
        } else {
            links = n.path == null ? 0 : 1;
        }
        return new Metadata(n.kind(), n.size, n.birth, n.mtime, n.atime, n.ctime, links, n.mode, n.ino);
    }

    // ---- a mount's operations ----

    @Override
    public FileHandle open(VfsPath path, Set<OpenFlag> flags, int createMode) throws IOException {
        try {
            return openOrMake(path, flags, createMode);
        } catch (ErrnoException e) {
            throw inCacheOf(path, e);
        }
    }

    /**
     * {@code e} said of {@code path}, where it names a file of the cache directory: the log's line of
     * a failing cache file system named the cache's file ("CREATE of node 3: .../cache9/data/17:
     * Input/output error"), not the one the user made. The same reason for every such file: the log
     * says it once per cause.
     */
    private ErrnoException inCacheOf(VfsPath path, ErrnoException e) {
        String file = e.getFile();
        if (file == null || !Path.of(file).startsWith(dataDir)) {
            return e;
        }
        ErrnoException said = new ErrnoException(e.errno(), path.toString(), e.getReason() + " in its cache directory");
        said.initCause(e);
        return said;
    }

    private FileHandle openOrMake(VfsPath path, Set<OpenFlag> flags, int createMode) throws IOException {
        boolean write = flags.contains(OpenFlag.WRITE) || flags.contains(OpenFlag.APPEND);
        boolean create = flags.contains(OpenFlag.CREATE) || flags.contains(OpenFlag.CREATE_NEW);
        if (write || create) {
            requireRoom();
        }
        if (path.isRoot()) {
            throw new IsDirectoryException(path.toString());
        }
        for (int attempt = 0; ; attempt++) {
            parentOf(path);
            Node n = lookup(path);
            if (n != null && flags.contains(OpenFlag.CREATE_NEW)) {
                throw new FileAlreadyExistsException(path.toString());
            }
            int madeMode = FILE_MODE | ((createMode & 0100) != 0 ? 0111 : 0);
            boolean claiming = n == null && flags.contains(OpenFlag.CREATE_NEW) && options.exclusiveCreates();
            FileTime claimedAt = claiming ? now() : null;
            try (Claim claim = claiming ? claimOnS3(path, madeMode, claimedAt) : Claim.NONE) {
                String claimed = claim.etag();
                if (n != null && n.dir) {
                    throw new IsDirectoryException(path.toString());
                }
                if (n != null && n.link) {
                    throw notFollowed(path);
                }
                if (n != null && !flags.contains(OpenFlag.TRUNCATE)) {
                    ObjectHandle ranged = write ? null : fetches.rangedHandle(n, path);
                    if (ranged != null) {
                        return ranged;
                    }
                    ObjectHandle streaming = write ? null : fetches.streamingHandle(n, path);
                    if (streaming != null) {
                        return streaming;
                    }
                    if (!write) {
                        try {
                            fetches.fetch(n, false); // a writer fetches at its first read or write (ObjectHandle.content)
                        } catch (IOException e) {
                            // no room made for it: read in ranges, as a file the cache cannot take is
                            ObjectHandle noRoom = Errors.errno(e) == Linux.ENOSPC ? fetches.rangedHandle(n, path, true) : null;
                            if (noRoom == null) {
                                throw e;
                            }
                            return noRoom;
                        }
                    }
                } else if (n != null) {
                    listings.learnAttributes(n, false); // its content goes, its mode stays: asked now, or 0644 would go up
                }
                synchronized (this) {
                    Node now = overlay.nodes.get(path);
                    if (now == null) {
                        if (!create || overlay.nodes.get(path.parent()) == null) {
                            throw new NoSuchFileException(path.toString());
                        }
                        requireStorableName(path);
                        Node c = overlay.newNode(false, madeMode);
                        CacheFile.replace(dataFile(c.ino)).close();
                        c.cached = true;
                        overlay.placeMade(path, c);
                        if (claimed != null) {
                            c.mtime = c.ctime = c.atime = claimedAt;
                            madeOnS3(c, claimed, claim.madeBy(), ContentHash.EMPTY_SHA256);
                        }
                        journal.commit();
                        return handle(c, write, flags.contains(OpenFlag.APPEND), true);
                    }
                    if (claimed != null && Listings.madeEmptyHere(now)) {
                        now.remoteEtag = claimed; // made here meanwhile by another open: the object this one made is its
                        now.claimMadeBy = claim.madeBy();
                        journal.put(now);
                    }
                    if (now.dir) {
                        throw new IsDirectoryException(path.toString());
                    }
                    if (now.link) {
                        throw notFollowed(path);
                    }
                    if (now != n && flags.contains(OpenFlag.CREATE_NEW)) {
                        throw new FileAlreadyExistsException(path.toString());
                    }
                    if (flags.contains(OpenFlag.TRUNCATE) && !now.cached) {
                        // its content is about to go: no need to fetch it
                        CacheFile.replace(dataFile(now.ino)).close();
                        now.cached = true;
                        now.size = 0;
                    }
                    if (now.cached || (write && now == n)) {
                        ObjectHandle h = handle(now, write, flags.contains(OpenFlag.APPEND), false);
                        // an empty file truncated is stamped (and goes up) too, as open(2) does: make's `: > stamp`
                        if (flags.contains(OpenFlag.TRUNCATE)) {
                            h.truncate(0);
                            h.opened = metadataOf(now);
                        }
                        return h;
                    }
                }
            }
            if (attempt >= SNAPSHOT_TRIES) {
                throw ErrnoException.of(Linux.EBUSY, path.toString(), "changed while it was opened");
            }
        }
    }

    /**
     * {@code --exclusive-creates}: the empty object of a file an O_EXCL create makes, put now, only
     * if S3 has none of that name (If-None-Match), so that where another host made it first (a lock
     * file, a claim made with {@code set -o noclobber}) this create fails, as on one disk, instead of
     * both going on and one ending as a conflict copy. Where this host removed the name a moment ago
     * and its delete has not gone yet, that delete is sent first, at once; the claim waits for no
     * upload but that of the name's own object. Its ETag, in a {@link Claim} to close once the name is
     * made here; null where the object S3 has is this host's still and no pass may delete it now (a
     * lock removed and taken again here, an old name whose new one is not up): the file is made here
     * taking it over, as without the option.
     *
     * @throws FileAlreadyExistsException S3 has it (the directory is listed again at the next look)
     */
    private Claim claimOnS3(VfsPath path, int mode, FileTime madeAt) throws IOException {
        return claimOnS3(path, objectKey(path, false, false), new byte[0], attributes(mode, madeAt, ContentHash.EMPTY_SHA256));
    }

    /** The metadata an object made by a claim carries: what the write-back would upload with it. */
    private static Map<String, String> attributes(int mode, FileTime madeAt, String sha) {
        Map<String, String> meta = new LinkedHashMap<>();
        meta.put(META_MODE, Integer.toOctalString(mode & 0777));
        meta.put(META_MTIME, Long.toString(madeAt.toMillis()));
        meta.put(META_SHA, sha);
        return meta;
    }

    /**
     * {@link #claimOnS3(VfsPath, int, FileTime)} for the object {@code key} that holds {@code path}:
     * a file's, a symbolic link's (its target's text, so that no other host ever reads the link
     * half made), or a directory's marker (empty, with no metadata but {@link #META_MADE_BY}). A
     * directory another tool made by putting objects below it has no marker, and is judged by this
     * host's listing alone, as without the option.
     */
    private Claim claimOnS3(VfsPath path, String key, byte[] body, Map<String, String> meta) throws IOException {
        requireStorableName(path);
        java.util.concurrent.locks.Lock noDeletes = null;
        boolean passed = false;
        boolean looked = false;
        try {
            for (Removed r = removedHere(key); r != Removed.NOTHING; r = removedHere(key)) {
                if (noDeletes == null) {
                    // a tombstone stays pending from before a pass chooses its delete until after S3 has
                    // answered it: S3 may have done the delete and another host claimed the name meanwhile
                    // (mkdir locks handed on quickly had two holders), and a name made here again while the
                    // delete is under way is taken by it. So no pass sends a delete from here until the
                    // name is made, and one under way is waited for (its deletes alone, not its uploads)
                    noDeletes = writeBack.noDeletesSent();
                    continue;
                }
                if (r == Removed.REFUSED) {
                    // S3 answered the release's delete that it did not do it (a 400, 405: a gateway
                    // refusing DeleteObjects a while), and no pass may send it now: the claim is still
                    // on S3, this host's, and is taken over as a release not yet sent is (below), once a
                    // HEAD finds it so. Sending it again first was refused again, and the same host's
                    // mkdir of its own lock failed with EIO (tester's coord6 finding 2). The HEAD, not the
                    // answer alone: a gateway that answered 400 after S3 had done the delete would have
                    // had this host take over a name another host may hold since (both holding)
                    if (!looked) {
                        looked = true;
                        if (stillClaimedHere(key)) {
                            Claim kept = new Claim(null, null, noDeletes);
                            noDeletes = null;
                            return kept;
                        }
                    }
                    r = Removed.SENT; // gone, or another host's: the pass finds the release done
                }
                switch (r) {
                    case UPLOADING -> {
                        noDeletes.unlock();
                        noDeletes = null;
                        writeBack.awaitNoUploadOf(key); // then a tombstone, whose delete is this claim's
                    }
                    case DELETE -> writeBack.deleteForClaim(key); // at once, not after a pass's uploads (a large file: minutes)
                    // the object is still this host's, and no other host can have taken the name: made
                    // here it takes that object over (Overlay.resurrect) while no delete can be sent.
                    // A release (the remove of a lock claimed here) waits for every change made here
                    // before it (Overlay.Release), which may be a large file going up: the lock taken
                    // again here need not wait for those, since it never left this host on S3 (as
                    // though taken again before the remove), and they stay dirty, so the next remove's
                    // release waits for them. Sending its delete now would let the lock go on S3
                    // before what was written under it is up. An old name's delete waits for its new
                    // name's upload, which no pass may be sending (git's index.lock renamed to index)
                    case TAKE_OVER -> {
                        Claim kept = new Claim(null, null, noDeletes);
                        noDeletes = null;
                        return kept;
                    }
                    // the release's delete was sent and not answered done: S3 may have done it, and
                    // another host claimed the name. A pass sends it again, after what it waits for
                    case SENT -> {
                        if (passed) {
                            throw new Bucket.Unavailable("the delete of " + key + ", a lock removed here, has not been"
                                    + " answered: whether another host may hold it is not known", null);
                        }
                        noDeletes.unlock();
                        noDeletes = null;
                        WriteBack.Unsent unsent = writeBack.pass(false, dirKey(path.parent()));
                        if (unsent != null && removedHere(key) == Removed.SENT) {
                            throw unsent.failure();
                        }
                        passed = true;
                    }
                }
            }
            String madeBy = options.host() + "-" + Long.toHexString(java.util.concurrent.ThreadLocalRandom.current().nextLong());
            meta.put(META_MADE_BY, madeBy);
            try {
                Claim made = new Claim(bucket.put(key, body, meta, null), madeBy, noDeletes);
                noDeletes = null;
                synchronized (this) {
                    Tomb t = overlay.tombs.get(key);
                    if (t != null && !t.pending) {
                        // a lock this host let go, which another host may have held since: what it wrote
                        // beside the lock is read from S3, as a flock's take pulls its directory. This
                        // host's listing, still valid, knew the lock gone by its own remove and served
                        // its own old counter (two hosts taking turns within the metadata TTL: 26-28 of
                        // 30 increments). A claim S3 refused lists the directory again anyway, and a new
                        // name lists nothing: tar xf, which creates every file with O_EXCL, asks no more
                        listings.expireListing(path.parent());
                    }
                }
                return made;
            } catch (Bucket.PreconditionFailed taken) {
                synchronized (this) {
                    listings.expireListing(path.parent());
                }
                throw new FileAlreadyExistsException(path.toString(), null, "File exists (made on another host first)");
            }
        } finally {
            if (noDeletes != null) {
                noDeletes.unlock();
            }
        }
    }

    /**
     * What a claim got: the ETag of the object it put on S3 and the {@link #META_MADE_BY} it put it
     * with, or nulls where the name is made here taking over the object that this host removed
     * ({@link #claimOnS3(VfsPath, String, byte[], Map)}); and, where this host had removed the name,
     * the write-back's deletes held off until the name is made here (closed then): a pending
     * tombstone's delete sent meanwhile would take it.
     */
    private record Claim(String etag, String madeBy, java.util.concurrent.locks.Lock noDeletes) implements AutoCloseable {
        static final Claim NONE = new Claim(null, null, null);

        @Override
        public void close() {
            if (noDeletes != null) {
                noDeletes.unlock();
            }
        }
    }

    /** What stands between a claim and S3 where this host removed the name: see {@link #removedHere}. */
    private enum Removed {
        /** Nothing: S3 has no object of this host's there. */
        NOTHING,
        /** Its object is going up, the name having gone meanwhile. */
        UPLOADING,
        /** A delete that waits for nothing: the claim sends it. */
        DELETE,
        /** A delete no pass may send now: the name made here takes the object over. */
        TAKE_OVER,
        /** A release's delete sent, its answer not come: S3 may have done it. */
        SENT,
        /** A release's delete S3 answered it did not do: the claim is still on S3 where a HEAD finds it. */
        REFUSED
    }

    /** Where this host removed the object {@code key}, or is uploading it, so that S3 may still hold it: what its delete waits for. */
    private synchronized Removed removedHere(String key) {
        if (overlay.inflight.contains(key)) {
            return Removed.UPLOADING;
        }
        Tomb t = overlay.tombs.get(key);
        if (t == null || !t.pending) {
            return Removed.NOTHING;
        }
        if (deleteWaitsForAnUpload(key)) {
            return Removed.TAKE_OVER;
        }
        if (t.release != null) {
            return !t.sent ? Removed.TAKE_OVER : t.refused ? Removed.REFUSED : Removed.SENT;
        }
        return Removed.DELETE;
    }

    /**
     * Whether S3's object {@code key} is still the claim whose release this host holds back there
     * (WriteBack's stillClaimedHere): a HEAD, made while no pass may send that release.
     */
    private boolean stillClaimedHere(String key) throws IOException {
        String madeBy;
        String etag;
        synchronized (this) {
            Tomb t = overlay.tombs.get(key);
            if (t == null || !t.pending || t.release == null) {
                return false;
            }
            madeBy = t.release.madeBy();
            etag = t.etag;
        }
        Bucket.Head now = bucket.head(key);
        return now != null && WriteBack.stillClaimedHere(now, madeBy, etag);
    }

    /**
     * Whether the delete of the object {@code key}, removed here, waits for the upload of what was
     * moved from it, as {@link WriteBack}'s deletePending holds it back (another host would see
     * neither name).
     */
    private synchronized boolean deleteWaitsForAnUpload(String key) {
        for (Node n : overlay.dirtyNodes) {
            if (n.movedFrom != null && n.movedFrom.key().equals(key) || n.oldNames != null && n.oldNames.contains(key)) {
                return true;
            }
        }
        return false;
    }

    /**
     * {@code n}, made by this open or symlink, is on S3 as {@link #claimOnS3(VfsPath, String, byte[], Map)}
     * put it: holding what hashes to {@code sha}, under {@code etag}, made by {@code madeBy}. A
     * mutation S3 has done ({@link Overlay#seq}): a listing that began before the claim and does not
     * show it must not take the name away. Under the monitor.
     */
    private void madeOnS3(Node n, String etag, String madeBy, String sha) {
        n.remoteEtag = etag;
        n.claimMadeBy = madeBy;
        uploaded(n);
        n.sha = sha;
        n.shaGen = n.gen;
        agreesWithS3(n);
    }

    /**
     * {@code d}'s marker is on S3, put by this host: by its mkdir's claim, or by the write-back
     * ({@link WriteBack}'s uploadMarker). Under the monitor.
     */
    void markerOnS3(Node d) {
        d.dirOnRemote = d.marker = true;
        listings.uploadAnswered(d);
        agreesWithS3(d);
    }

    /** {@code n} is as this host just put it on S3: a mutation S3 has done ({@link Overlay#seq}). Under the monitor. */
    private void agreesWithS3(Node n) {
        overlay.settled(n);
        n.syncedSeq = ++overlay.seq;
        journal.put(n);
    }

    /**
     * The content of the object at {@code path} as it is now, its cache file kept open (the cache
     * drops the file as the object changes or goes; the descriptor keeps it). Read only: a write
     * through it would upload over whatever the name stands for by then.
     */
    @Override
    public HeldFile hold(VfsPath path) throws IOException {
        Node n = lookup(path);
        if (n == null) {
            throw new NoSuchFileException(path.toString());
        }
        if (n.dir || n.link) {
            return null;
        }
        long uncached;
        synchronized (this) {
            uncached = n.cached || n.dirty ? -1 : n.size;
        }
        if (uncached >= 0 && !cacheCanTake(uncached)) {
            return null; // read from S3 in ranges by each open (RangeReads): nothing to hold, the request goes by name
        }
        fetches.fetch(n);
        synchronized (this) {
            if (overlay.nodes.get(path) != n || !n.cached) {
                return null; // changed while it was fetched: nothing held, the request goes by name
            }
            return new HeldObject(this, n, metadataOf(n), CacheFile.openForReading(dataFile(n.ino)), path);
        }
    }

    /** Caller holds the lock; {@code made}: this open made the file. */
    private ObjectHandle handle(Node n, boolean write, boolean append, boolean made) throws IOException {
        // a file not fetched yet is fetched at the handle's first read or write
        CacheFile ch = n.cached ? CacheFile.openForWriting(dataFile(n.ino)) : null;
        if (write) {
            n.writers++;
            // an open writer puts the upload off to its last close (schedule), unless the file was only
            // appended to (dueWhileOpen): a file this open made, or one changed before it, was due a
            // debounce after that, and went up half written
            n.due = overlay.dueWhileOpen(n);
        }
        return new ObjectHandle(this, n, ch, write, append, made);
    }

    void setTimesOf(Node n, FileTime accessed, FileTime modified) throws IOException {
        FileTime now = now();
        if (accessed != null) {
            n.atime = Storage.timeOrNow(accessed, now);
        }
        if (modified != null) {
            n.mtime = Storage.timeOrNow(modified, now);
        }
        n.ctime = now;
        if (!n.dir && modified != null) {
            // S3 keeps the mtime in the object's metadata, which only an upload changes
            overlay.attributesChanged(n);
        } else if (n.path != null) {
            journal.put(n);
        }
    }

    void setExecutableOf(Node n, int mode) throws IOException {
        int wanted = (n.mode & ~0111) | (mode & 0111);
        // a link's bits are always 0777, as on Linux; a directory keeps its search bits, as in every store
        if (wanted != n.mode && !n.link && !n.dir) {
            n.mode = wanted;
            n.ctime = now();
            overlay.attributesChanged(n);
        } else if (!n.link) {
            // no bit to change, yet a chmod moves the ctime, as on a disk: here only, as an atime's
            // change is, with no upload (S3 keeps no ctime)
            n.ctime = now();
            if (n.path != null) {
                journal.put(n);
            }
        }
    }

    @Override
    public void truncate(VfsPath path, long size) throws IOException {
        try (FileHandle h = open(path, Set.of(OpenFlag.WRITE), 0)) {
            h.truncate(size);
        }
    }

    @Override
    public void createDirectory(VfsPath path) throws IOException {
        requireRoom();
        requireNewName(path);
        requireKeyFits(path, dirKey(path));
        try (Claim claim = options.exclusiveCreates() ? claimOnS3(path, dirKey(path), new byte[0], new LinkedHashMap<>()) : Claim.NONE) {
            synchronized (this) {
                requireStillNew(path);
                Node d = makeDir(path);
                // the marker is this host's claim on S3 whether or not it came with an ETag: a claim
                // whose answer was lost is known by a HEAD, which s3proxy answers with none for a
                // marker, and a test of the ETag took the lock for made here only, its rmdir deleting
                // nothing (the lock held on S3 for ever) or going as an ordinary delete
                if (claim.madeBy() != null) {
                    d.claimMadeBy = claim.madeBy(); // before markerOnS3 journals it: a restart keeps the claim
                    markerOnS3(d);
                }
                journal.commit();
            }
        }
    }

    /** As mkdir(2) and symlink(2) check: a parent directory, and nothing at {@code p} (S3 asked, so outside the lock). */
    private void requireNewName(VfsPath p) throws IOException {
        parentOf(p);
        if (lookup(p) != null) {
            throw new FileAlreadyExistsException(p.toString());
        }
    }

    /** {@link #requireNewName} again under the monitor, where the name is then made: a race may have made or removed one since. */
    private void requireStillNew(VfsPath p) throws IOException {
        if (overlay.nodes.containsKey(p)) {
            throw new FileAlreadyExistsException(p.toString());
        }
        if (overlay.nodes.get(p.parent()) == null) {
            throw new NoSuchFileException(p.toString());
        }
    }

    @Override
    public void removeFile(VfsPath path) throws IOException {
        requireRoom();
        parentOf(path);
        Node n = find(path);
        if (n.dir) {
            throw new IsDirectoryException(path.toString());
        }
        keepContentOfOpen(n);
        synchronized (this) {
            if (overlay.nodes.get(path) != n) {
                throw new NoSuchFileException(path.toString());
            }
            unname(path, n);
        }
    }

    /** Takes the file {@code n} from its name {@code path}; the caller holds the monitor and found it there. */
    private void unname(VfsPath path, Node n) throws IOException {
        overlay.bury(path, n);
        journal.gone(path);
        overlay.detach(n);
        n.ctime = now();
        overlay.touch(overlay.nodes.get(path.parent()));
        overlay.needMarker(path.parent());
        journal.commit();
    }

    @Override
    public void removeDirectory(VfsPath path) throws IOException {
        requireRoom();
        parentOf(path);
        Node n = find(path);
        if (!n.dir) {
            throw new NotDirectoryException(path.toString());
        }
        listings.refresh(path);
        synchronized (this) {
            if (overlay.nodes.get(path) != n) {
                throw new NoSuchFileException(path.toString());
            }
            if (!overlay.children(path).isEmpty()) {
                throw new DirectoryNotEmptyException(path.toString());
            }
            overlay.bury(path, n);
            journal.gone(path);
            overlay.detach(n);
            overlay.touch(overlay.nodes.get(path.parent()));
            overlay.needMarker(path.parent());
            journal.commit();
        }
    }

    @Override
    public void setTimes(VfsPath path, FileTime accessed, FileTime modified) throws IOException {
        requireRoom();
        Node n = find(path);
        synchronized (this) {
            setTimesOf(n, accessed, modified);
            journal.commit();
        }
    }

    @Override
    public void setExecutable(VfsPath path, int mode) throws IOException {
        requireRoom();
        Node n = find(path);
        synchronized (this) {
            setExecutableOf(n, mode);
            journal.commit();
        }
    }

    /**
     * A chown stores no owner, yet moves the ctime, as on a disk: here only, as a chmod that changes
     * no bit moves it, with no upload (S3 keeps no ctime).
     */
    @Override
    public void ownerAsked(VfsPath path) throws IOException {
        requireRoom();
        Node n = find(path);
        synchronized (this) {
            n.ctime = now();
            if (n.path != null) {
                journal.put(n);
            }
            journal.commit();
        }
    }

    // ---- extended attributes: a file's go up with it, in its object's metadata ----

    @Override
    public byte[] xattr(VfsPath path, String name) throws IOException {
        return xattrOf(withXattrsKnown(find(path), path), path, name);
    }

    @Override
    public List<String> xattrNames(VfsPath path) throws IOException {
        return xattrNamesOf(withXattrsKnown(find(path), path));
    }

    @Override
    public void setXattr(VfsPath path, String name, byte[] value, XattrMode mode) throws IOException {
        requireRoom();
        setXattrOf(xattrsToChange(find(path), path), path, name, value, mode);
    }

    @Override
    public void removeXattr(VfsPath path, String name) throws IOException {
        requireRoom();
        removeXattrOf(xattrsToChange(find(path), path), path, name);
    }

    /** Attribute {@code name} of node {@code n}, named {@code shown} in errors. */
    byte[] xattrOf(Node n, VfsPath shown, String name) throws IOException {
        synchronized (this) {
            byte[] value = n.xattrs == null ? null : n.xattrs.get(name);
            if (value == null) {
                throw Storage.noXattr(shown, name);
            }
            return value.clone();
        }
    }

    List<String> xattrNamesOf(Node n) {
        synchronized (this) {
            return n.xattrs == null ? List.of() : List.copyOf(n.xattrs.keySet());
        }
    }

    /**
     * Sets attribute {@code name} of node {@code n}. A node no name leads to any more (an open file
     * renamed over) keeps it until its last handle closes, as a disk's unlinked inode does.
     */
    void setXattrOf(Node n, VfsPath shown, String name, byte[] value, XattrMode mode) throws IOException {
        synchronized (this) {
            mode.check(shown, name, n.xattrs != null && n.xattrs.containsKey(name));
            Map<String, byte[]> changed = n.xattrs == null ? new TreeMap<>() : new TreeMap<>(n.xattrs);
            changed.put(name, value.clone());
            if (!ObjectXattrs.fit(changed)) {
                throw ErrnoException.of(Linux.ENOSPC, shown.toString(), "an S3 object's "
                        + "metadata (2 KiB in all) holds no more extended attributes");
            }
            n.xattrs = changed;
            n.ctime = now();
            overlay.attributesChanged(n); // S3 keeps them in the object's metadata, which only an upload changes
            journal.commit();
        }
    }

    void removeXattrOf(Node n, VfsPath shown, String name) throws IOException {
        synchronized (this) {
            if (n.xattrs == null || !n.xattrs.containsKey(name)) {
                throw Storage.noXattr(shown, name);
            }
            Map<String, byte[]> changed = new TreeMap<>(n.xattrs);
            changed.remove(name);
            n.xattrs = changed.isEmpty() ? null : changed;
            n.ctime = now();
            overlay.attributesChanged(n);
            journal.commit();
        }
    }

    /**
     * Node {@code n}, its object's attributes asked (a HEAD) where a listing showed it: an
     * attribute changed before would else upload with the others missing. EIO where S3 does not
     * answer, rather than say a file has none. A node no name leads to has all it will have.
     */
    Node withXattrsKnown(Node n, VfsPath shown) throws IOException {
        listings.learnAttributes(n, false);
        synchronized (this) {
            if (!n.attributesKnown && n.path != null) {
                throw ErrnoException.of(Linux.EIO, shown.toString(), "S3 did not answer for the file's extended attributes");
            }
        }
        return n;
    }

    /** {@link #withXattrsKnown}, for a change: only a file has an object whose metadata can keep them. */
    Node xattrsToChange(Node n, VfsPath shown) throws IOException {
        withXattrsKnown(n, shown);
        if (n.link) {
            throw Storage.noXattrsHere(shown);
        }
        if (n.dir) {
            throw ErrnoException.of(Linux.EOPNOTSUPP, shown.toString(),
                    "an S3 store keeps extended attributes of files only (a directory may have no object)");
        }
        return n;
    }

    @Override
    public void link(VfsPath existing, VfsPath newName) throws IOException {
        find(existing);
        throw ErrnoException.of(Linux.EPERM, existing.toString(), newName.toString(), "an S3 store cannot keep hard links (one object per name)");
    }

    /** The link's target: its object's content, fetched once (a GET) like a file's. */
    @Override
    public String readLink(VfsPath path) throws IOException {
        for (int attempt = 0; ; attempt++) {
            Node n = find(path);
            if (!n.link) {
                throw new java.nio.file.NotLinkException(path.toString());
            }
            fetches.fetch(n);
            synchronized (this) {
                if (overlay.nodes.get(path) == n && n.cached) {
                    return new String(Files.readAllBytes(dataFile(n.ino)), StandardCharsets.UTF_8);
                }
            }
            if (attempt >= SNAPSHOT_TRIES) {
                throw ErrnoException.of(Linux.EBUSY, path.toString(), "changed while it was read");
            }
        }
    }

    /**
     * Makes the link here at once; its object {@code <name>.rclonelink}, holding the target's text,
     * goes up as a closed file's does, {@link S3Options#flushAfter()} later. With
     * {@code --exclusive-creates} it goes up now, only if S3 has none of that name, as an O_EXCL
     * create's file does: {@code ln -s} is a lock (emacs's {@code .#file}, scripts), and every host
     * took it.
     */
    @Override
    public void createSymlink(VfsPath link, String target) throws IOException {
        requireRoom();
        if (target.isEmpty()) {
            throw new NoSuchFileException(link.toString());
        }
        requireStorableName(link);
        String key = objectKey(link, false, true);
        requireKeyFits(link, key); // its object is the name and LINK_SUFFIX
        requireNewName(link);
        byte[] text = target.getBytes(StandardCharsets.UTF_8);
        String sha = ContentHash.of(text);
        FileTime claimedAt = now();
        try (Claim claim = options.exclusiveCreates()
                ? claimOnS3(link, key, text, attributes(Overlay.LINK_MODE, claimedAt, sha)) : Claim.NONE) {
            synchronized (this) {
                requireStillNew(link);
                Node n = overlay.newLink();
                // through a descriptor of ours, so a full cache disk is ENOSPC (the JDK's Files.write carries no errno)
                try (CacheFile f = CacheFile.replace(dataFile(n.ino))) {
                    f.write(java.nio.ByteBuffer.wrap(text), 0);
                } catch (IOException e) {
                    Files.deleteIfExists(dataFile(n.ino));
                    throw e;
                }
                n.size = text.length;
                n.cached = true;
                overlay.placeMade(link, n);
                if (claim.etag() != null) {
                    n.mtime = n.ctime = n.atime = claimedAt;
                    madeOnS3(n, claim.etag(), claim.madeBy(), sha);
                }
                journal.commit();
            }
        }
    }

    /**
     * Before the name of {@code n} goes (an unlink, a replace): an open file whose content was never
     * fetched (a writer fetches at its first read or write, so that touch costs no download) gets it
     * now, since a file with no name can no longer be fetched by one, and its handle must go on
     * working, as on a disk.
     */
    private void keepContentOfOpen(Node n) throws IOException {
        boolean wanted;
        synchronized (this) {
            wanted = n != null && !n.dir && !n.link && n.opens > 0 && !n.cached;
        }
        if (wanted) {
            fetches.fetch(n);
        }
    }

    /**
     * Before a change: room on the cache disk for its journal records, or ENOSPC while nothing has
     * changed (see {@link Journal#ensureRoom}). The room left is far more than one operation needs,
     * so operations that pass here together all find it. Likewise EIO where the cache's file system
     * fails as a whole ({@link Journal#requireWrites}).
     */
    synchronized void requireRoom() throws IOException {
        if (cacheDirectoryGone()) {
            throw ErrnoException.of(Linux.EIO, null, "the S3 store's cache directory "
                    + dataDir.getParent() + " has gone: mount again");
        }
        try {
            journal.requireWrites();
            journalRoom(null);
        } catch (IOException e) {
            int errno = dev.chibifs.sys.Errors.errno(e);
            if (!WholeStoreFailure.mayBe(errno)) {
                throw e;
            }
            // the log named no file, or the cache's own (a tester's "MKDIR of node 3: Input/output error")
            throw ErrnoException.of(errno, null, "its cache directory " + dataDir.getParent()
                    + " fails: the change was not made");
        }
    }

    /**
     * Room for the next change's journal records ({@link JournalRecords#requireRoom}), made where the
     * cache disk is full and content already on S3 can leave it ({@link #makeRoom}), for the change of
     * {@code what} (null: a change of names); under the monitor.
     */
    void journalRoom(VfsPath what) throws IOException {
        try {
            journal.requireRoom();
        } catch (IOException e) {
            if (dev.chibifs.sys.Errors.errno(e) != Linux.ENOSPC || !makeRoom(0, what == null ? null : what.toString(), true)) {
                throw e;
            }
            journal.requireRoom();
        }
    }

    /** Set once the cache directory was found gone while mounted. */
    private volatile boolean cacheGone;
    /** The data directory as opened (device and inode): one of the same name put in its place is not it. */
    private final Object dataDirKey;

    /** The device and inode of {@code dir}, or null where it is not there. */
    private static Object fileKey(Path dir) {
        try {
            BasicFileAttributes a = Files.readAttributes(dir, java.nio.file.attribute.BasicFileAttributes.class);
            return a.isDirectory() ? a.fileKey() : null;
        } catch (IOException gone) {
            return null;
        }
    }

    /**
     * Whether the cache directory has gone from under this store (removed by hand, or by a cleaner of
     * /tmp): a file missing from it is then no file removed meanwhile, and changes not yet up, whose
     * content was there, are lost. Said once, with what was lost; every change fails from then on,
     * where writes went on into nothing and status said all was well.
     */
    boolean cacheDirectoryGone() {
        if (cacheGone) {
            return true;
        }
        if (dataDirKey != null && dataDirKey.equals(fileKey(dataDir))) {
            return false;
        }
        List<String> lost;
        synchronized (this) {
            if (cacheGone) {
                return true;
            }
            cacheGone = true;
            lost = overlay.nodes.values().stream().filter(n -> n.dirty && n.path != null && !n.dir)
                    .map(n -> n.path.toString()).sorted().toList();
        }
        LOG.error("S3 store {}: its cache directory {} has gone (removed or replaced while mounted): {} change(s) not yet"
                        + " uploaded are lost{}; every change fails (EIO) until the store is mounted again", spec,
                dataDir.getParent(), lost.size(), lost.isEmpty() ? "" : ": " + String.join(", ", lost.subList(0, Math.min(20, lost.size())))
                        + (lost.size() > 20 ? ", ..." : ""));
        return true;
    }

    @Override
    public SpaceInfo space() {
        // a bucket has no size; say a large one, as s3fs and goofys do. Names are chibi's (at most
        // NAME_MAX bytes, as on its own disk), though a key could hold longer ones
        long big = 1L << 50;
        return new SpaceInfo(BLOCK_SIZE, big, big, big, Linux.NAME_MAX, INODES_SHOWN, INODES_SHOWN);
    }

    /**
     * A bucket counts no inodes either; 0 free (df -i's "-") made tools that check for free inodes
     * before they write refuse, so a large count, free, as s3fs and goofys give: under 2^32, which a
     * 32-bit statfs still holds.
     */
    private static final long INODES_SHOWN = 1_000_000_000L;

    // ---- ETags ----

    /** The SHA-256 of the file's content: remembered per change, from S3's metadata, or computed once. */
    @Override
    public String etag(VfsPath path) throws IOException {
        Node n = findFile(path);
        String remote;
        long seen;
        synchronized (this) {
            if (n.shaGen == n.gen && n.sha != null) {
                return n.sha;
            }
            remote = n.cached || n.dirty ? null : n.remoteEtag;
            seen = n.gen;
        }
        if (remote != null) {
            // uploaded by a chibifs: the object's metadata has it, no need for the content
            Bucket.Head h = bucket.head(key(path));
            String sha = h == null ? null : h.meta().get(META_SHA);
            if (sha != null && ContentHash.isEtag(sha) && remote.equals(h.etag())) {
                synchronized (this) {
                    if (n.gen == seen) {
                        n.sha = sha;
                        n.shaGen = seen;
                    }
                }
                return sha;
            }
        }
        long gen;
        FileChannel content;
        for (int attempt = 0; ; attempt++) {
            fetches.fetch(n);
            synchronized (this) {
                // opened here: the content cache may let it go (or a change elsewhere drop it) once fetched
                if (n.cached) {
                    gen = n.gen;
                    content = FileChannel.open(dataFile(n.ino), StandardOpenOption.READ);
                    break;
                }
            }
            if (attempt >= SNAPSHOT_TRIES) {
                throw ErrnoException.of(Linux.EBUSY, path.toString(), "changed while it was read");
            }
        }
        String sha;
        try (FileChannel ch = content) {
            sha = ContentHash.of(ch::read, ch.size());
        }
        synchronized (this) {
            if (n.gen == gen) {
                n.sha = sha;
                n.shaGen = gen;
            }
        }
        return sha;
    }

    /** Conditional writes, one at a time: the check and the change they guard are one step here. */
    private final ReentrantLock conditional = new ReentrantLock();

    /**
     * A conditional write: checked against what S3 has now (the listing asked again, not believed for
     * the validity), made here, and uploaded at once, conditional on the object being what was
     * checked. When another host changed it in between, theirs stays, this content is kept beside it
     * as a conflict copy, and the write fails with the ETag the file has now.
     */
    @Override
    public void write(VfsPath path, byte[] data, Precondition condition) throws IOException {
        conditionally(path, condition, () -> write(path, data));
    }

    @Override
    public void append(VfsPath path, byte[] data, Precondition condition) throws IOException {
        conditionally(path, condition, () -> append(path, data));
    }

    private interface Change {
        void run() throws IOException;
    }

    private void conditionally(VfsPath path, Precondition condition, Change change) throws IOException {
        requireRoom();
        if (condition.none()) {
            change.run();
            return;
        }
        conditional.lock();
        try {
            if (!path.isRoot()) {
                synchronized (this) {
                    listings.forget(path.parent());
                }
            }
            condition.check(path, currentEtag(path));
            change.run();
            Node n = findFile(path);
            synchronized (this) {
                n.appendsFrom = Overlay.NOT_APPENDS; // checked against one version: another's is a conflict, not a merge
                if (n.dirty && n.path != null) {
                    journal.put(n);
                    journal.commit();
                }
            }
            String mine = etag(path);
            writeBack.flushNode(n);
            String now = currentEtag(path);
            if (!mine.equals(now)) {
                throw new EtagMismatchException(path.toString(), condition, now);
            }
        } finally {
            conditional.unlock();
        }
    }

    // ---- write-back ----

    /** Uploads and deletes whatever is due now (by the store's ticker), as the flusher's pass does. */
    public void flushDue() throws IOException {
        WriteBack.Unsent unsent = passDue();
        if (unsent != null) {
            throw unsent.failure();
        }
    }

    /**
     * The flusher's pass: what is due now goes up; what it could not send is returned (null:
     * nothing), and what S3 refused at an earlier pass is not asked for again before its retry time.
     */
    WriteBack.Unsent passDue() throws IOException {
        askAgainIfUnreachable(); // the flusher's own thread: it may wait the whole question out
        copies.removeLeftOvers();
        return writeBack.pass(false, null);
    }

    /**
     * Everything pending goes up now ({@link #flushAll}): {@code chibifs sync}, which names all that
     * waits, where the failure's message cuts a list short for status and the log.
     */
    @Override
    public void sync() throws IOException {
        try {
            flushAll();
        } catch (WriteBack.CutShort e) {
            throw new Bucket.Unavailable(e.inFull, e);
        }
    }

    /**
     * fsync of a directory: everything pending goes up, as at {@code chibifs sync}, not that
     * directory's changes alone. The write-back can claim one file's upload (an fsync's), but no
     * directory's pending names: a delete goes only in a pass, after the new name of what it moved,
     * which may be in another directory. Waiting for what is pending now keeps that order. It fails
     * only when the pass left an entry of this directory behind, or S3 is away: an object S3 refuses
     * elsewhere (another agent's file) failed every directory's fsync with EIO, and SQLite in
     * rollback mode, which fsyncs its directory at each commit, went ten times slower. Nor does it
     * ask S3 again for what it refused elsewhere before that refusal's retry time.
     */
    @Override
    public void syncDirectory(VfsPath directory) throws IOException {
        String key = dirKey(directory);
        WriteBack.Unsent unsent = pushAll(key);
        if (unsent != null && unsent.leftBehindIn(key)) {
            throw unsent.failure();
        }
    }

    /** Uploads and deletes everything pending, returning once S3 has it all (umount, SIGTERM, tests). */
    public void flushAll() throws IOException {
        copies.removeLeftOvers(); // a move's copies the last stop left: they are what a listing would show
        WriteBack.Unsent unsent = pushAll(null);
        if (unsent != null) {
            throw unsent.failure();
        }
    }

    /**
     * As {@link #flushAll}, but what the pass could not send is returned (null: nothing), for a
     * caller that needs only part of the store up; S3 known to be away still throws. A caller that
     * needs only the directory whose keys begin with {@code concern} up (null: the whole store) has
     * what S3 refused elsewhere at the last pass taken as refused again, without asking, before
     * each refusal's retry time ({@link WriteBack#pass}).
     */
    WriteBack.Unsent pushAll(String concern) throws IOException {
        if (pendingChanges() > 0) {
            askBrieflyIfUnreachable(); // else a umount would wait through the client's retries for nothing
        }
        return writeBack.pass(true, concern);
    }

    /**
     * While S3 is known to be away no request asks it ({@link Bucket}): the write-back asks for them
     * all, at its backoff's pace, and lets them through once S3 answers. Not under the
     * {@link WriteBack#flushLock}, which an fsync waits for while the journal's replay is left: the
     * question may take the client's retries.
     */
    private void askAgainIfUnreachable() throws IOException {
        if (bucket.unreachable()) {
            bucket.probe(dirKey(VfsPath.root()));
            writeBack.recovered();
        }
    }

    /**
     * {@link #askAgainIfUnreachable} for a caller someone waits on ({@code chibifs sync}, a
     * directory's fsync, umount): the question goes in the background, one at a time, and the caller
     * waits for it {@link #PROBE_WAIT_MILLIS} at most, then fails as S3 is away. Asked in the
     * caller's thread, each sync and each directory fsync waited out the client's 30 s limit while S3
     * hung (a tester's SIGSTOPped server: 31-33 s a call, every call), where S3 known to be away is to
     * answer at once; S3 back answers the question in milliseconds.
     */
    private void askBrieflyIfUnreachable() throws IOException {
        if (!bucket.unreachable()) {
            return;
        }
        CompletableFuture<Void> asked;
        synchronized (this) {
            if (probing == null || probing.isDone()) {
                CompletableFuture<Void> mine = new CompletableFuture<>();
                probing = mine;
                Thread t = new Thread(() -> {
                    try {
                        askAgainIfUnreachable();
                        mine.complete(null);
                    } catch (IOException | RuntimeException e) {
                        mine.completeExceptionally(e);
                    }
                }, "s3-probe");
                t.setDaemon(true);
                t.start();
            }
            asked = probing;
        }
        try {
            asked.get(PROBE_WAIT_MILLIS, TimeUnit.MILLISECONDS);
        } catch (TimeoutException stillAsking) {
            bucket.refuseWhileUnreachable("list", dirKey(VfsPath.root()));
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            throw cause instanceof IOException io ? io : new IOException(String.valueOf(cause), cause);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new java.io.InterruptedIOException("interrupted while S3 was asked whether it is back");
        }
    }

    /** How long {@link #askBrieflyIfUnreachable} waits for S3's answer. */
    private static final long PROBE_WAIT_MILLIS = 2_000;

    /** The question {@link #askBrieflyIfUnreachable} put in the background, or null; guarded by the monitor. */
    private CompletableFuture<Void> probing;

    /**
     * Keeps the content cache within {@link S3Options#cacheSize}: past it, the content files of the
     * files least recently used go, down to nine tenths of it, and each is fetched again at its next
     * open. Only a file S3 has as it is here goes: never one with changes not yet uploaded, nor one
     * open or being renamed (a reader would keep the evicted copy while a later writer changed a
     * fetched one; a rename uploads what it fetched), nor one used in the last
     * {@link #EVICT_AFTER_MILLIS} (what was just read is the likeliest to be read again). So the cache
     * can pass the size by what is open or was used in the last minute. Nothing goes while S3 is
     * known to be unreachable, but it goes while S3 only refuses objects. Returns the bytes that went.
     */
    public long evictBeyondCacheSize() throws IOException {
        long limit = options.cacheSize();
        long usedBefore = ticks() - EVICT_AFTER_MILLIS;
        long total = 0;
        long formersFreed = 0;
        // each with its lastUsed as read under the monitor: a sort by a value that moves may fail
        List<Map.Entry<Node, Long>> clean = new ArrayList<>();
        synchronized (this) {
            if (limit <= 0 || closed || writeBack.away() || bucket.unreachable()) {
                // while S3 is away, what went could not be read again; an object S3 refuses is no
                // reason (the cache grew past its size for as long as one stayed refused)
                return 0;
            }
            List<Node> formers = new ArrayList<>();
            for (Node n : overlay.nodes.values()) {
                if (!n.dir && n.cached) {
                    total += n.size;
                    if (evictable(n, usedBefore)) {
                        clean.add(Map.entry(n, n.lastUsed));
                    }
                }
                if (n.former != null) {
                    total += n.former.size();
                    formers.add(n);
                }
                if (n.keptMerge != null) {
                    total += n.keptMerge.size(); // never goes (its log is open), but takes room all the same
                }
            }
            // past the size, the copies kept only to spare a download go first
            for (int i = 0; i < formers.size() && total > limit; i++) {
                total -= formers.get(i).former.size();
                formersFreed += formers.get(i).former.size();
                dropFormer(formers.get(i));
            }
        }
        if (total <= limit) {
            return formersFreed;
        }
        clean.sort(Map.Entry.comparingByValue());
        long over = total - (limit - limit / 10);
        long freed = 0;
        // in batches, each under the monitor and each node judged again: the store is not held up by a
        // large eviction, and what was opened or changed since the list was made stays
        for (int i = 0; i < clean.size() && freed < over; ) {
            synchronized (this) {
                for (int end = Math.min(i + EVICT_BATCH, clean.size()); i < end && freed < over; i++) {
                    Node n = clean.get(i).getKey();
                    if (n.path == null || !n.cached || !evictable(n, usedBefore)) {
                        continue;
                    }
                    lateCloses.delete(dataFile(n.ino));
                    n.cached = false;
                    freed += n.size;
                    journal.put(n); // a restart asks S3 for it again
                }
                journal.commit();
            }
        }
        if (total - freed > limit) {
            LOG.debug("S3 store {}: content cache at {} bytes, over {}: the rest is in use", spec, total - freed, limit);
        }
        return formersFreed + freed;
    }

    /** Whether the content of {@code n} may leave the cache (see {@link #evictBeyondCacheSize}); under the monitor. */
    private static boolean evictable(Node n, long usedBefore) {
        return !n.dirty && n.opens == 0 && n.remoteEtag != null && n.lastUsed < usedBefore;
    }

    /**
     * Room on the cache disk for {@code bytes} more where a write into it (a download, a change) found
     * none (ENOSPC), the content cache having no {@code --cache-size} or its disk being smaller: what
     * {@link #evictBeyondCacheSize} would let go goes, copies kept beside first, then the files least
     * recently used, those of the last minute too (a full disk cannot wait out the grace), until
     * {@code bytes} and {@link Journal#ROOM} are free. Clean content filled the disk and none went, so
     * every download and new write failed ENOSPC until the user removed files. Nothing goes while S3
     * is away (it could not be read again). True when anything went, or the room is free now: the
     * caller tries again, at most {@link #ROOM_TRIES} times. False when not: where the write was {@code refused}
     * (not only foreseen, {@link #roomFor}), said once in the log and in {@link #failing}, with
     * {@code what} (the file that wanted the room) and how full the disk is.
     */
    boolean makeRoom(long bytes, String what, boolean refused) {
        long want = bytes + Journal.ROOM;
        if (want > totalSpace()) {
            return false; // all that could go would not be room enough (see requireFits)
        }
        long freed = 0;
        long dirty = 0;
        long open = 0;
        long downloading = 0;
        // under the monitor throughout, the closes too: a second caller (the ranges of a download fail
        // together) found the room the first made not back yet, nothing left to go, and failed
        synchronized (this) {
            lateCloses.flush(); // what was removed comes back first
            long free = usableSpace();
            if (free >= want) {
                return true; // others made it meanwhile
            }
            if (closed) {
                return false;
            }
            if (writeBack.away() || bucket.unreachable()) {
                // what is on S3 could not be read again: nothing leaves, and the disk is said full all the same
                if (refused) {
                    noRoom(want, "its cache directory " + dataDir.getParent() + " is full (" + fullness()
                            + "), and nothing in it can leave while S3 cannot be reached" + (what == null ? "" : " (for " + what + ")"));
                }
                return false;
            }
            List<Map.Entry<Node, Long>> clean = new ArrayList<>();
            for (Node n : overlay.nodes.values()) {
                if (n.former != null && free + freed < want) {
                    freed += n.former.size();
                    dropFormer(n);
                }
                if (!n.dir && n.cached) {
                    if (evictable(n, Long.MAX_VALUE)) {
                        clean.add(Map.entry(n, n.lastUsed));
                    } else if (n.dirty || n.remoteEtag == null) {
                        dirty += n.size;
                    } else {
                        open += n.size;
                    }
                }
                if (n.download != null) {
                    downloading += n.size;
                }
            }
            clean.sort(Map.Entry.comparingByValue());
            boolean evicted = false;
            for (int i = 0; i < clean.size() && free + freed < want; i++) {
                Node n = clean.get(i).getKey();
                try {
                    lateCloses.delete(dataFile(n.ino));
                } catch (IOException e) {
                    LOG.debug("S3 store {}: {} left in the cache: {}", spec, dataFile(n.ino), e.getMessage());
                    continue;
                }
                n.cached = false;
                freed += n.size;
                journal.put(n); // a restart asks S3 for it again
                evicted = true;
            }
            if (evicted) {
                try {
                    journal.commit();
                } catch (IOException e) {
                    // the records say only "fetch it again": a restart that misses them finds no file and fetches it
                    LOG.debug("S3 store {}: evictions not journaled: {}", spec, e.getMessage());
                }
            }
            if (freed == 0) {
                if (!refused) {
                    return false;
                }
                noRoom(want, "its cache directory " + dataDir.getParent() + " is full (" + fullness()
                        + "), and nothing in it can leave to make room" + (what == null ? "" : " for " + what)
                        + String.format(Locale.ROOT, ": %.1f MiB of changes not yet sent, %.1f MiB of open files, %.1f MiB"
                        + " of downloads under way", dirty / (double) (1 << 20), open / (double) (1 << 20),
                        downloading / (double) (1 << 20)));
                return false;
            }
            roomless = null;
            lateCloses.flush(); // the space is back before the caller tries again
        }
        LOG.info("S3 store {}: its cache directory {} was full: {} MiB of content already on S3 left it{}", spec,
                dataDir.getParent(), String.format(Locale.ROOT, "%.1f", freed / (double) (1 << 20)),
                what == null ? "" : " for " + what);
        return true;
    }

    /** The cache disk has not the {@code want} bytes a write needed, for reason {@code why}: said once, and in {@link #failing}. Under the monitor. */
    private void noRoom(long want, String why) {
        roomWanted = want;
        if (roomless == null) {
            LOG.warn("S3 store {}: {}", spec, why);
        }
        roomless = why;
    }

    /**
     * Before a download of {@code bytes} for {@code what}: room made where the cache disk has too
     * little ({@link #makeRoom}), so that the download is not asked twice, once to fail ENOSPC
     * partway. ENOSPC at once where the whole disk is smaller: the whole cache went, the download
     * came as far as the disk took it, and the read failed all the same. One statfs where there is room.
     */
    void roomFor(long bytes, String what) throws IOException {
        if (usableSpace() < bytes + Journal.ROOM) {
            requireFits(bytes, what);
            makeRoom(bytes, what, false);
        }
    }

    /** ENOSPC where {@code bytes} for {@code what} are more than the whole cache disk holds (see {@link #roomFor}). */
    void requireFits(long bytes, String what) throws IOException {
        if (!fitsCacheDisk(bytes)) {
            long disk = totalSpace();
            String why = String.format(Locale.ROOT, "%.1f MiB, larger than the disk of its cache directory %s (%.1f MiB):"
                    + " it is read from S3 in ranges, but cannot be changed or copied through this cache",
                    bytes / (double) (1 << 20), dataDir.getParent(), disk / (double) (1 << 20));
            synchronized (this) {
                if (!what.equals(tooLargeSaid)) {
                    tooLargeSaid = what;
                    LOG.warn("S3 store {}: {} is {}", spec, what, why);
                }
            }
            throw ErrnoException.of(Linux.ENOSPC, what, why);
        }
    }

    /**
     * Whether a file of {@code bytes} fits the whole cache disk, with the journal's room: one that
     * does not cannot be written through this cache.
     */
    boolean fitsCacheDisk(long bytes) {
        return bytes + Journal.ROOM <= totalSpace();
    }

    /**
     * Whether the cache can take a download of {@code bytes} now: the disk has them free for this
     * process with the journal's room, or would once the content that may leave went ({@link
     * #makeRoom}). A file it cannot take is read from S3 in ranges into memory ({@link RangeReads}).
     * The disk's size alone let such a file be fetched to fail ENOSPC, and say the store failing:
     * the blocks count the journal's files, others' files and ext4's reserve for root (a 53 MiB file
     * on a 64 MiB ext4 with 50.2 MiB usable; 31 MiB on a 32 MiB tmpfs after one write). One statfs;
     * the nodes are counted only where the free space is not enough.
     */
    boolean cacheCanTake(long bytes) {
        long want = bytes + Journal.ROOM;
        Syscalls.Statfs disk = cacheDisk(); // one statfs for both: asked at each open of a file not cached
        if (disk == null) {
            return true; // cannot be asked: fetched, and the download says what fails
        }
        long free = disk.available() * disk.unit();
        if (want > disk.blocks() * disk.unit()) {
            return false;
        }
        long couldLeave = 0;
        synchronized (this) {
            free -= fetches.reservedBytes(); // what downloads under way will take
            if (free >= want) {
                return true;
            }
            if (writeBack.away() || bucket.unreachable()) {
                return false; // nothing leaves while S3 could not give it back
            }
            for (Node n : overlay.nodes.values()) {
                if (!n.dir && n.cached && evictable(n, Long.MAX_VALUE)) {
                    couldLeave += n.size;
                }
                if (n.former != null) {
                    couldLeave += n.former.size();
                }
                if (free + couldLeave >= want) {
                    return true;
                }
            }
        }
        return false;
    }

    /** The last file read from S3 in ranges for being larger than the cache disk: said once, not at each of its opens. Guarded by the monitor. */
    VfsPath tooLargeRead;

    /** The last file {@link #roomFor} said was too large for the cache disk: said once, not at each of its reads. */
    private String tooLargeSaid;

    /**
     * Why the cache disk has no room for what it is asked (see {@link #makeRoom}), or null; the
     * room that was wanted then, {@link #roomWanted}, being free again ends it. Guarded by the monitor.
     */
    private String roomless;
    private long roomWanted;

    /**
     * While the cache disk is full ({@link #roomless}): the room then wanted made once content can
     * leave, its changes sent meanwhile (the write-back's eviction pass). Status said the disk full,
     * and the writes refused, until a download happened to make room.
     */
    void makeRoomWanted() {
        long wanted;
        synchronized (this) {
            if (roomless == null) {
                return;
            }
            wanted = roomWanted;
        }
        if (stillRoomless() != null) {
            makeRoom(wanted - Journal.ROOM, null, false);
        }
    }

    /** {@link #roomless}, or null once its disk has the room again (files removed, changes sent and let go). */
    private String stillRoomless() {
        synchronized (this) {
            if (roomless == null) {
                return null;
            }
        }
        long free = usableSpace();
        synchronized (this) {
            if (roomless != null && free >= roomWanted) {
                roomless = null;
                LOG.info("S3 store {}: its cache directory {} has room again", spec, dataDir.getParent());
            }
            return roomless;
        }
    }

    /** Bytes the cache disk has free for this process; 0 where it cannot be asked (taken as full). */
    private long usableSpace() {
        Syscalls.Statfs s = cacheDisk();
        return s == null ? 0 : s.available() * s.unit();
    }

    /** The cache disk's size in bytes; Long.MAX_VALUE where it cannot be asked (nothing is refused as too large). */
    private long totalSpace() {
        Syscalls.Statfs s = cacheDisk();
        return s == null ? Long.MAX_VALUE : s.blocks() * s.unit();
    }

    /**
     * What statfs says of the cache disk, or null: three system calls, asked before each download
     * ({@link #roomFor}). Files.getFileStore reads the mount table each time, 0.1 ms a file.
     */
    private Syscalls.Statfs cacheDisk() {
        String name = dataDir.toString();
        try {
            int fd = Syscalls.openat(Linux.AT_FDCWD, name, Linux.O_PATH | Linux.O_DIRECTORY, 0, name);
            try {
                return Syscalls.fstatfs(fd);
            } finally {
                Syscalls.close(fd);
            }
        } catch (IOException e) {
            return null;
        }
    }

    /** How full the cache disk is, as "19.9 of 20.0 MiB used". */
    private String fullness() {
        long total = totalSpace();
        return total == Long.MAX_VALUE ? "size unknown" : String.format(Locale.ROOT, "%.1f of %.1f MiB used",
                (total - usableSpace()) / (double) (1 << 20), total / (double) (1 << 20));
    }

    /** The requests this store made to S3 so far, by kind (list, head, get, put, delete). */
    public Map<String, Long> requests() {
        return bucket.requests();
    }

    /** Content bytes moved so far, down and up (tests). */
    long[] bytesMoved() {
        return bucket.bytesMoved();
    }

    /** Every answer not in the local layer waits for S3, across a network. */
    @Override
    public boolean answersMayWaitLong() {
        return true;
    }

    @Override
    public String unanswered() {
        String failing = failing();
        if (failing != null) {
            return failing;
        }
        String away = bucket.unreachableReason();
        if (away != null) {
            return away;
        }
        synchronized (this) {
            return writeBack.outage();
        }
    }

    @Override
    public String caution() {
        return bucket.oneByOne();
    }

    @Override
    public synchronized String nextTry() {
        return writeBack.nextTry();
    }

    @Override
    public String failing() {
        if (cacheGone) {
            return "its cache directory " + dataDir.getParent() + " has gone: every change fails";
        }
        String cache = cacheFails();
        if (cache == null) {
            cache = stillRoomless();
        }
        return cache != null ? cache : writeBack.replayHeld();
    }

    /** The last {@link #cacheFails()} said, null while the cache answers: said in the log once per change. */
    private String cacheFailed;

    /**
     * Why the cache directory's file system fails as a whole now (its disk: EIO; read-only after
     * its errors: EROFS), or null; looked at whenever status or stats asks. Callers got EIO, what
     * waited stayed, and stats said "answers; to upload: 2", status active, with no trouble line.
     */
    private String cacheFails() {
        int errno = WholeStoreFailure.of(dataDir);
        int waiting = errno == 0 ? 0 : pendingChanges();
        String now = errno == 0 ? null : "its cache directory " + dataDir.getParent() + " " + WholeStoreFailure.answers(errno)
                + ": every change fails, and " + waiting + " change(s) to send wait there";
        String before;
        synchronized (this) {
            before = cacheFailed;
            cacheFailed = now;
        }
        if (!java.util.Objects.equals(before, now)) {
            if (now != null) {
                LOG.error("S3 store {}: {}", spec, now);
            } else {
                LOG.warn("S3 store {}: its cache directory {} answers again", spec, dataDir.getParent());
            }
        }
        return now;
    }

    @Override
    public Traffic traffic() {
        long[] moved = bucket.bytesMoved();
        return new Traffic(bucket.requests(), moved[0], moved[1]);
    }

    @Override
    public String state() {
        String away = bucket.unreachableReason();
        String failing;
        String nextTry;
        int waiting;
        long[] cached;
        synchronized (this) {
            failing = writeBack.outage();
            nextTry = nextTry();
            waiting = pendingChanges();
            cached = cacheUse();
        }
        String cache = cacheGone ? null : cacheFails();
        if (cache == null && !cacheGone) {
            cache = stillRoomless();
        }
        String health = cacheGone ? "its cache directory " + dataDir.getParent() + " has gone: every change fails"
                : cache != null ? cache
                : away != null ? "unreachable: " + away
                : failing != null ? "answers, but the last write-back failed: " + failing + (nextTry == null ? "" : "; " + nextTry)
                : "answers";
        long[] moved = bucket.bytesMoved();
        return spec + " at " + bucket.where() + ": " + health + "; to send: " + waiting + "; requests: "
                + bucket.requests() + String.format(Locale.ROOT, "; content: %.1f MiB down, %.1f MiB up",
                moved[0] / (double) (1 << 20), moved[1] / (double) (1 << 20))
                + String.format(Locale.ROOT, "; cache: %.1f MiB in %,d %s%s", cached[0] / (double) (1 << 20), cached[1],
                        cached[1] == 1 ? "file" : "files",
                        cached[2] == 0 ? "" : String.format(Locale.ROOT, " and %.1f MiB beside them", cached[2] / (double) (1 << 20)))
                + (options.cacheSize() <= 0 ? "" : String.format(Locale.ROOT, " (kept under %.1f MiB)",
                        options.cacheSize() / (double) (1 << 20)))
                + (hostLocks == null ? "; locks: this daemon's only" : "; locks: " + hostLocks.held() + " held on S3")
                + (options.exclusiveCreates() ? "; O_EXCL creates, mkdirs and symlinks made on S3 at once" : "")
                + (caution() == null ? "" : "; " + caution());
    }

    /**
     * The content cache's use: bytes and files of content held, and bytes beside them (merges kept
     * for logs open here, copies kept to download only what another host appended), which {@code
     * status} showed nowhere though they can double a log's room. Under the monitor.
     */
    private long[] cacheUse() {
        long bytes = 0;
        long files = 0;
        long beside = 0;
        for (Node n : overlay.nodes.values()) {
            if (!n.dir && n.cached) {
                bytes += n.size;
                files++;
            }
            if (n.former != null) {
                beside += n.former.size();
            }
            if (n.keptMerge != null) {
                beside += n.keptMerge.size();
            }
        }
        return new long[]{bytes, files, beside};
    }

    @Override
    public Uploads uploads() {
        long bytes = 0;
        int changes;
        synchronized (this) {
            changes = pendingChanges();
            for (Node n : overlay.dirtyNodes) {
                if (!n.dir) {
                    bytes += n.size;
                }
            }
        }
        return new Uploads(changes, bytes, bucket.bytesMoved()[1], writeBack.readToSend());
    }

    /** How many changes wait for S3. */
    public synchronized int pendingChanges() {
        int n = overlay.dirtyNodes.size();
        for (Tomb t : overlay.tombs.values()) {
            if (t.pending) {
                n++;
            }
        }
        return n;
    }

    /**
     * Whether version {@code etag} of object {@code key} ({@code size} bytes, SHA-256 {@code sha}) is
     * the first {@code from} bytes of {@code prefix} followed by more: those come down (one ranged
     * GET) into {@code into} at their own offsets, and the hash of both says. How a follow and a merge
     * move only what another host appended.
     */
    boolean continues(String key, String etag, long size, String sha, CacheFile prefix, long from,
                              CacheFile into) throws IOException {
        if (size > from) {
            bucket.getPart(key, etag, from, size - from, into);
        }
        return hashesTo(sha, prefix, from, into, size);
    }

    /** Whether {@code prefix}'s first {@code from} bytes, then {@code rest}'s up to {@code size}, hash to {@code sha}. */
    static boolean hashesTo(String sha, CacheFile prefix, long from, CacheFile rest, long size) throws IOException {
        MessageDigest d = ContentHash.digest();
        prefix.digest(d, 0, from);
        rest.digest(d, from, size - from);
        return sha.equals(ContentHash.hex(d));
    }

    @Override
    public void close() throws IOException {
        close(false);
    }

    /** {@code undoOpen}: S3 refused the store at open, and what the open added to the cache directory goes. */
    private void close(boolean undoOpen) throws IOException {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
            notifyAll();
        }
        // not interrupted: an interrupt during FileChannel I/O closes the channel for every thread
        // (the journal's among them); the flusher ends its pass and sees closed
        joinFlusher();
        IOException failed = null;
        try {
            flushAll();
        } catch (IOException e) {
            failed = e;
            LOG.warn("S3 store {}: {} changes not sent at close stay in {} for the next start: {}",
                    spec, pendingChanges(), options.cacheDir(), e.getMessage());
        }
        if (hostLocks != null) {
            // with changes left here its leases stay until they expire: the next holder would read without them
            hostLocks.close(failed == null);
        }
        synchronized (this) {
            try {
                if (!cacheDirectoryGone()) { // said already; nothing is left to keep for a next start
                    journal.compact();
                }
                journal.close();
            } finally {
                writeBack.stop();
                listings.stop();
                lateCloses.close();
                bucket.close();
                if (undoOpen) {
                    made.undo(); // before the lock goes: no other chibifs is in the directory meanwhile
                }
                cacheLock.release();
                lockFile.close();
            }
        }
        if (failed != null) {
            throw failed;
        }
    }

    private void joinFlusher() {
        boolean interrupted = false;
        while (flusher.isAlive()) {
            try {
                flusher.join();
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    /** Stops without flushing, as a daemon killed with -9 would (tests of the journal). */
    void crash() throws IOException {
        synchronized (this) {
            closed = true;
            notifyAll();
        }
        joinFlusher();
        if (hostLocks != null) {
            hostLocks.close(false); // renews nothing more, deletes nothing: its leases stay, as a killed one's
        }
        synchronized (this) {
            writeBack.stop();
            listings.stop();
            journal.close();
            bucket.close();
            cacheLock.release();
            lockFile.close();
        }
    }
}
