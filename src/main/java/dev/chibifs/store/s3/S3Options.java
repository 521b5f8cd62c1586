package dev.chibifs.store.s3;

import dev.chibifs.config.ChibiHome;
import dev.chibifs.store.ContentHash;
import dev.chibifs.sys.OwnedDirectories;
import dev.chibifs.sys.Syscalls;

import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.function.LongSupplier;

/**
 * How an {@link S3Storage} runs: its local layer and its timing.
 *
 * @param cacheDir the local layer (content cache, journal); one store per directory, locked while open
 * @param flushAfter the write-back debounce: a file closed dirty is uploaded this long after its last close
 * @param validity how long a listing or HEAD of S3 is believed before it is asked again: the delay
 *        after which a change another host made is seen here
 * @param clock the wall clock: the times a file shows and the journal keeps, conflict copies' names
 * @param ticker monotonic milliseconds, the clock of every duration (the debounce, a listing's
 *        validity, the content cache's LRU order): a wall clock stepped back held uploads and froze
 *        listings for as long as the step. {@link #withClock} makes a test's clock both
 * @param host this host's name, in conflict copies ({@code <name>.conflict-<host>-<time>})
 * @param env the process environment, read for AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, AWS_REGION,
 *        AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN and AWS_PROFILE
 * @param background whether a thread of the store uploads what is due and keeps the content cache
 *        within {@code cacheSize}; false leaves it to {@link S3Storage#flushDue()} and
 *        {@link S3Storage#evictBeyondCacheSize()} (tests that move the clock themselves)
 * @param cacheSize the content cache's size in bytes, past which the content of files least recently
 *        used goes (fetched again at their next open); 0: no limit
 * @param prefetchBelow a file or link a listing shows of at most this many bytes is fetched whole with its
 *        attributes (a GET in place of a HEAD), so its first open asks S3 nothing; 0: attributes only
 * @param lockLease how long a lock's lease on S3 outlives a holder that stops renewing it (a host
 *        that died holding a lock): locks then exclude the processes of every host ({@link HostLocks});
 *        0: locks exclude within this daemon only
 * @param exclusiveCreates whether a create that must make the file (O_EXCL) makes its object on S3
 *        at once, conditional on there being none, so that of two hosts making one name the second
 *        fails with EEXIST; false: it is made here and goes up with the write-back, as any change
 */
public record S3Options(Path cacheDir, Duration flushAfter, Duration validity, Clock clock, LongSupplier ticker, String host,
                        Map<String, String> env, boolean background, long cacheSize, long prefetchBelow,
                        Duration lockLease, boolean exclusiveCreates) {

    public static final Duration DEFAULT_FLUSH_AFTER = Duration.ofSeconds(2);
    /** One second: a change on another host shows within it plus the round trip, inside the promised 2 s. */
    public static final Duration DEFAULT_VALIDITY = Duration.ofSeconds(1);
    /** 32 KiB: notes, task lists, JSON and most source files come with the listing that shows them. */
    public static final long DEFAULT_PREFETCH_BELOW = 32 * 1024;
    /** 30 s: a host that died holding a lock keeps the others out about as long as a stuck request would. */
    public static final Duration DEFAULT_LOCK_LEASE = Duration.ofSeconds(30);

    public S3Options {
        Objects.requireNonNull(cacheDir, "cacheDir");
        Objects.requireNonNull(clock, "clock");
        Objects.requireNonNull(ticker, "ticker");
        Objects.requireNonNull(env, "env");
        Objects.requireNonNull(lockLease, "lockLease");
        if (flushAfter.isNegative() || validity.isNegative() || cacheSize < 0 || prefetchBelow < 0 || lockLease.isNegative()) {
            throw new IllegalArgumentException("flush delay, validity, cache size, prefetch size and lock lease cannot be negative");
        }
        if (host == null || host.isBlank()) {
            host = "host";
        }
        host = host.replaceAll("[^A-Za-z0-9._-]", "_");
    }

    /** The defaults for a store kept in {@code cacheDir}, with the given environment. */
    public static S3Options defaults(Path cacheDir, Map<String, String> env) {
        return new S3Options(cacheDir, DEFAULT_FLUSH_AFTER, DEFAULT_VALIDITY, Clock.systemUTC(), S3Options::monotonicMillis,
                hostName(env), env, true, 0, DEFAULT_PREFETCH_BELOW, DEFAULT_LOCK_LEASE, false);
    }

    /**
     * The default cache directory of a store: {@code <home>/chibifs/cache/<store>}, where
     * {@code <store>} is {@link S3Spec#cacheName()} unless a directory of that name belongs to another
     * store (the name maps every character outside {@code [A-Za-z0-9._-]} to '_', so {@code team/x}
     * and {@code team_x} share it): then that name and a short hash of this store's bucket and key
     * prefix. The plain name stays for a store whose directory it already is, or one with no record of
     * its store (made before the record; {@link CacheOwner}), so an upgrade finds its journal there.
     */
    static Path defaultCacheDir(ChibiHome home, S3Spec spec) {
        Path cache = cachesOf(home);
        Path inHome = home.chibifsDir().resolve("cache").resolve(spec.cacheName()).resolve(S3Storage.JOURNAL_FILE);
        if (!cache.startsWith(home.chibifsDir()) && Files.isRegularFile(inHome, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
            // an upgrade: a root daemon kept its cache in the home before; what its journal holds is not
            // trusted (anyone who may write there may have written it), but must not vanish unsaid
            LoggerFactory.getLogger(S3Options.class).warn("S3 store {}: {} is not read: a daemon run as root keeps"
                    + " its caches where only root writes now ({}), and another user may write that home; changes an"
                    + " earlier chibifs left there unuploaded stay there (check them, then remove it)", spec, inHome,
                    cache);
        }
        Path plain = cache.resolve(spec.cacheName());
        CacheOwner owner;
        try {
            owner = Files.isDirectory(plain) ? CacheOwner.read(plain) : null;
        } catch (IOException unreadable) {
            owner = null; // the store's open says why, naming the file
        }
        return owner == null || owner.owns(spec) ? plain : cache.resolve(spec.cacheName() + "-" + spec.identityHash());
    }

    /** Where a daemon run as root keeps the caches of a home another user may write: {@link #cachesOf}. */
    public static final Path ROOT_CACHES = Path.of("/var/cache/chibifs");

    /**
     * The directory of a home's S3 caches: {@code <home>/chibifs/cache}; for a daemon run as root on a
     * home another user may write, {@code /var/cache/chibifs/<hash of the home's path>}. The store
     * uploads what its journal there says with root's credentials, and serves what its content files
     * hold: a tester who owned the home planted a journal and had root's daemon put files in another
     * context's home and chibi's flock registry, on every host of the bucket.
     */
    static Path cachesOf(ChibiHome home) {
        Path cache = home.chibifsDir().resolve("cache");
        if (Syscalls.geteuid() != 0) {
            return cache;
        }
        String why;
        try {
            why = OwnedDirectories.whyOthersMayWrite(cache);
        } catch (IOException unknown) {
            why = unknown.toString();
        }
        if (why == null) {
            return cache;
        }
        byte[] sha = ContentHash.digest().digest(
                home.dir().toAbsolutePath().normalize().toString().getBytes(java.nio.charset.StandardCharsets.UTF_8));
        return ROOT_CACHES.resolve(java.util.HexFormat.of().formatHex(sha, 0, HOME_HASH_BYTES));
    }

    /** Eight bytes of the home's path: two homes of one host never share a cache directory by it. */
    private static final int HOME_HASH_BYTES = 8;

    /**
     * The options of a store a mount names with {@code --store PREFIX=s3://...}: its cache in
     * {@code cacheDir}, else {@code <home>/chibifs/cache/<store>}; the debounce {@code flushAfter}, else 2 s;
     * the content cache kept within {@code cacheSize} bytes (0: no limit); files and links up to
     * {@code prefetchBelow} bytes fetched with the listing that shows them (null: 32 KiB); locks'
     * leases held for {@code lockLease} (null: 30 s; zero: locks reach this daemon only).
     */
    static S3Options forMount(ChibiHome home, String spec, Path cacheDir, Duration flushAfter,
                                     Duration metadataTtl, long cacheSize, Long prefetchBelow, Duration lockLease,
                                     Map<String, String> env) {
        Path dir = cacheDir != null ? cacheDir : defaultCacheDir(home, S3Spec.parse(spec));
        S3Options o = defaults(dir, env).withCacheSize(cacheSize);
        o = prefetchBelow == null ? o : o.withPrefetchBelow(prefetchBelow);
        o = flushAfter == null ? o : o.withFlushAfter(flushAfter);
        o = lockLease == null ? o : o.withLockLease(lockLease);
        return metadataTtl == null ? o : o.withValidity(metadataTtl);
    }

    S3Options withFlushAfter(Duration d) {
        return new S3Options(cacheDir, d, validity, clock, ticker, host, env, background, cacheSize, prefetchBelow, lockLease, exclusiveCreates);
    }

    S3Options withValidity(Duration d) {
        return new S3Options(cacheDir, flushAfter, d, clock, ticker, host, env, background, cacheSize, prefetchBelow, lockLease, exclusiveCreates);
    }

    /** The wall clock {@code c}, whose millis are the ticker too: a test moves both by moving it. */
    S3Options withClock(Clock c, boolean runInBackground) {
        return new S3Options(cacheDir, flushAfter, validity, c, c::millis, host, env, runInBackground, cacheSize, prefetchBelow,
                lockLease, exclusiveCreates);
    }

    /** The ticker {@code t} apart from the wall clock (tests: a wall clock stepped while time goes on). */
    S3Options withTicker(LongSupplier t) {
        return new S3Options(cacheDir, flushAfter, validity, clock, t, host, env, background, cacheSize, prefetchBelow, lockLease,
                exclusiveCreates);
    }

    /** Milliseconds from an arbitrary origin that never step (System.nanoTime): only differences mean anything. */
    static long monotonicMillis() {
        return System.nanoTime() / 1_000_000;
    }

    S3Options withHost(String h) {
        return new S3Options(cacheDir, flushAfter, validity, clock, ticker, h, env, background, cacheSize, prefetchBelow, lockLease, exclusiveCreates);
    }

    S3Options withCacheSize(long bytes) {
        return new S3Options(cacheDir, flushAfter, validity, clock, ticker, host, env, background, bytes, prefetchBelow, lockLease, exclusiveCreates);
    }

    S3Options withPrefetchBelow(long bytes) {
        return new S3Options(cacheDir, flushAfter, validity, clock, ticker, host, env, background, cacheSize, bytes, lockLease, exclusiveCreates);
    }

    S3Options withLockLease(Duration d) {
        return new S3Options(cacheDir, flushAfter, validity, clock, ticker, host, env, background, cacheSize, prefetchBelow, d, exclusiveCreates);
    }

    S3Options withExclusiveCreates(boolean on) {
        return new S3Options(cacheDir, flushAfter, validity, clock, ticker, host, env, background, cacheSize, prefetchBelow, lockLease, on);
    }

    private static String hostName(Map<String, String> env) {
        String h = env.get("HOSTNAME");
        if (h != null && !h.isBlank()) {
            return h;
        }
        try {
            return InetAddress.getLocalHost().getHostName();
        } catch (UnknownHostException e) {
            return "host";
        }
    }
}
