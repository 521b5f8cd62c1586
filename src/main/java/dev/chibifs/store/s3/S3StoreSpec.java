package dev.chibifs.store.s3;

import dev.chibifs.config.ChibiHome;
import dev.chibifs.store.Storage;
import dev.chibifs.store.StoreSpec;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.function.Supplier;

/**
 * {@code --store PREFIX=s3://BUCKET/KEYPREFIX[?endpoint=URL&region=R]}: an {@link S3Storage}
 * opened with {@link S3Options#forMount}. The spec is checked when parsed (a bad one stops the
 * command before anything is mounted); the home, needed only for the default cache directory,
 * is asked for when the store is opened.
 *
 * @param spec the spec as written: it names no credential (those come from the environment; {@link S3Spec#parse}
 *        refuses an endpoint with a password), so it may go on the daemon's command line and into {@code status}
 */
public record S3StoreSpec(String spec, Supplier<ChibiHome> home, Path cacheDir, Duration flushAfter,
                          Duration metadataTtl, long cacheSize, Long prefetchBelow, Duration lockLease,
                          boolean exclusiveCreates, Map<String, String> env)
        implements StoreSpec {

    /**
     * The S3 kind for {@link StoreSpec#parse(String, Kind)}: every store it parses keeps its
     * cache in {@code cacheDir} (null: {@code <home>/chibifs/cache/<store>}) and waits
     * {@code flushAfter} (null: 2 s) before uploading a closed file, believes a listing for
     * {@code metadataTtl} (null: 1 s), keeps its content cache within {@code cacheSize} bytes
     * (0: no limit), fetches the files of at most {@code prefetchBelow} bytes a listing shows
     * (null: 32 KiB), holds the leases of its locks for {@code lockLease} (null: 30 s; zero:
     * locks reach this daemon only), and with {@code exclusiveCreates} makes each O_EXCL create's
     * object on S3 at once ({@link S3Options#exclusiveCreates}).
     */
    public static Kind kind(Supplier<ChibiHome> home, Path cacheDir, Duration flushAfter, Duration metadataTtl,
                            long cacheSize, Long prefetchBelow, Duration lockLease, boolean exclusiveCreates,
                            Map<String, String> env) {
        return s -> {
            if (!s.startsWith(S3Spec.SCHEME)) {
                return null;
            }
            S3Spec.parse(s); // refuses a malformed spec now, naming it and the rule
            return new S3StoreSpec(s, home, cacheDir == null ? null : cacheDir.toAbsolutePath().normalize(),
                    flushAfter, metadataTtl, cacheSize, prefetchBelow, lockLease, exclusiveCreates, env);
        };
    }

    /**
     * Whether this store's objects are some of {@code other}'s, or theirs some of this one's: one
     * bucket, the same endpoint (or one unnamed), and key prefixes one inside the other. Two such stores
     * in one daemon put one object behind two caches, neither knowing of the other's writes.
     */
    public boolean overlaps(S3StoreSpec other) {
        S3Spec a = S3Spec.parse(spec);
        S3Spec b = S3Spec.parse(other.spec);
        if (!a.bucket().equals(b.bucket())
                || a.endpoint() != null && b.endpoint() != null && !a.endpoint().equals(b.endpoint())) {
            return false;
        }
        return within(a.keyPrefix(), b.keyPrefix()) || within(b.keyPrefix(), a.keyPrefix());
    }

    private static boolean within(String key, String prefix) {
        return prefix.isEmpty() || key.equals(prefix) || key.startsWith(prefix + "/");
    }

    /** A bucket keeps what is written and is shared: it may be the whole namespace. */
    @Override
    public boolean servesRoot() {
        return true;
    }

    @Override
    public String text() {
        return spec;
    }

    @Override
    public Storage open() throws IOException {
        return S3Storage.open(spec, S3Options.forMount(home.get(), spec, cacheDir, flushAfter, metadataTtl, cacheSize,
                prefetchBelow, lockLease, env).withExclusiveCreates(exclusiveCreates));
    }
}
