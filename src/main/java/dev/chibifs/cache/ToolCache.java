package dev.chibifs.cache;

import dev.chibifs.path.Names;
import dev.chibifs.path.VfsPath;
import dev.chibifs.policy.Caller;
import dev.chibifs.policy.ContextNames;
import dev.chibifs.router.Router;
import dev.chibifs.store.Entry;
import dev.chibifs.store.EntryKind;
import dev.chibifs.store.Metadata;
import dev.chibifs.sys.Errors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.file.NoSuchFileException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BooleanSupplier;

/**
 * The tool-output cache in {@code /sys/tool_cache/<context>/<id>}: entries are written and removed
 * as SYSTEM through the router (so the zone policy is the same one a mount enforces) and read by
 * anyone. Only regular files directly inside a context's directory are entries; anything else
 * found there (links, directories, temporaries of a write in progress) is left alone.
 */
public final class ToolCache {

    /** Where every context's cache directory lives. */
    public static final VfsPath ROOT = VfsPath.of("/sys/tool_cache");

    private static final Logger LOG = LoggerFactory.getLogger(ToolCache.class);

    /** The most days a {@link Duration} holds. */
    private static final long MAX_EXPIRY_DAYS = Long.MAX_VALUE / 86_400;

    private final Router router;
    private final Clock clock;

    /** A cache over {@code router}; {@code clock} stamps ids and decides what has expired. */
    public ToolCache(Router router, Clock clock) {
        this.router = router;
        this.clock = clock;
    }

    /** The directory of one context's entries. */
    public static VfsPath directoryOf(String context) {
        return ROOT.child(ContextNames.validate(context));
    }

    /**
     * Stores {@code output} as SYSTEM and returns its path. The write is atomic (a temporary file
     * renamed into place), so a reader sees the whole entry or none.
     */
    public VfsPath put(String context, String tool, String argsJson, byte[] output) throws IOException {
        return put(context, tool, argsJson, ToolOutput.of(output));
    }

    /** {@link #put(String, String, String, byte[])} of an output that may be in a temporary file, written a buffer at a time. */
    public VfsPath put(String context, String tool, String argsJson, ToolOutput output) throws IOException {
        VfsPath dir = directoryOf(context);
        VfsPath path = dir.child(CacheId.of(tool, argsJson, output, clock.instant()));
        // its directories made as the vfs commands' writes make theirs: gone again if the entry fails
        try (var made = router.makeParents(Caller.SYSTEM, path); java.io.InputStream in = output.open()) {
            router.write(Caller.SYSTEM, path, in, dev.chibifs.store.Precondition.NONE);
            made.keep();
        }
        return path;
    }

    /**
     * The entries of one context, or when {@code context} is null of every directory the sweep looks
     * into (valid context name or not), by directory then id.
     */
    public List<CachedEntry> list(String context) throws IOException {
        List<CachedEntry> out = new ArrayList<>();
        for (String ctx : context == null ? contexts() : List.of(ContextNames.validate(context))) {
            for (Entry e : entriesOf(ctx)) {
                VfsPath p = ROOT.child(ctx).child(e.name());
                try {
                    Metadata m = router.metadata(Caller.SYSTEM, p);
                    if (m.isFile()) {
                        out.add(new CachedEntry(ctx, e.name(), p, m.size(), m.modified().toInstant()));
                    }
                } catch (NoSuchFileException vanished) {
                    // removed since the listing: not an entry any more
                }
            }
        }
        return out;
    }

    /**
     * The age past which an entry goes, for chibi's {@code tool_cache_max_age_days}: one day more
     * than it says, as chibi counts (so 0 keeps what is less than a day old, and the default 7
     * removes what was last modified more than 8 days ago).
     */
    public static Duration expiry(long maxAgeDays) {
        if (maxAgeDays < 0) {
            throw new IllegalArgumentException("a negative max age: " + maxAgeDays);
        }
        // chibi takes any u64; past this a Duration overflows, and it is already older than any date
        return Duration.ofDays(Math.min(maxAgeDays, MAX_EXPIRY_DAYS - 1) + 1);
    }

    /** The cutoff {@code maxAge} before now, or {@link Instant#MIN} when that is before any date (nothing is old enough). */
    private Instant cutoff(Duration maxAge) {
        Instant now = clock.instant();
        return maxAge.compareTo(Duration.between(Instant.MIN, now)) >= 0 ? Instant.MIN : now.minus(maxAge);
    }

    /**
     * Removes every entry whose modification time is more than {@code maxAge} before now, logging
     * each removal; an entry that vanishes or cannot be read or removed is logged and skipped. Stops
     * early, between entries, once {@code stopRequested} says so. Returns the paths removed.
     */
    public List<VfsPath> removeOlderThan(Duration maxAge, BooleanSupplier stopRequested) throws IOException {
        return removeOlderThan(maxAge, stopRequested, (p, e) -> LOG.warn("tool cache: cannot check or remove {}: {}",
                printable(p.toString()), describe(e)), true);
    }

    /**
     * {@link #removeOlderThan(Duration, BooleanSupplier)} for a caller that reports itself: it tells
     * {@code failed} of each entry that could not be checked or removed, and logs neither those
     * nor the removals (a command prints them as its own lines, not as a logger's).
     */
    public List<VfsPath> removeOlderThan(Duration maxAge, BooleanSupplier stopRequested,
                                         java.util.function.BiConsumer<VfsPath, Exception> failed) throws IOException {
        return removeOlderThan(maxAge, stopRequested, failed, false);
    }

    private List<VfsPath> removeOlderThan(Duration maxAge, BooleanSupplier stopRequested,
                                          java.util.function.BiConsumer<VfsPath, Exception> failed,
                                          boolean logRemovals) throws IOException {
        List<VfsPath> removed = new ArrayList<>();
        if (!isCacheDirectory()) {
            return removed;
        }
        Instant cutoff = cutoff(maxAge);
        for (String ctx : contexts()) {
            List<Entry> entries;
            try {
                entries = entriesOf(ctx);
            } catch (IOException e) {
                failed.accept(ROOT.child(ctx), e);
                continue;
            }
            for (Entry e : entries) {
                if (stopRequested.getAsBoolean()) {
                    return removed;
                }
                VfsPath p = ROOT.child(ctx).child(e.name());
                try {
                    Instant modified = removeIfExpired(p, cutoff);
                    if (modified != null) {
                        removed.add(p);
                        if (logRemovals) {
                            LOG.info("tool cache: removed {} (modified {}, before {})", printable(p.toString()),
                                    modified, cutoff);
                        }
                    }
                } catch (NoSuchFileException vanished) {
                    LOG.debug("tool cache: {} vanished before it could be checked", printable(p.toString()));
                } catch (IOException | RuntimeException ex) {
                    failed.accept(p, ex);
                }
            }
        }
        return removed;
    }

    /** Removes {@code p} when it is a regular file modified before {@code cutoff}; returns when it was modified, or null when kept. */
    private Instant removeIfExpired(VfsPath p, Instant cutoff) throws IOException {
        // metadata never follows a link: a link or directory planted here is reported as such and skipped
        Metadata m = router.metadata(Caller.SYSTEM, p);
        if (!m.isFile()) {
            LOG.debug("tool cache: skipping {} ({}), not a regular file", printable(p.toString()), m.kind());
            return null;
        }
        Instant modified = m.modified().toInstant();
        if (!modified.isBefore(cutoff)) {
            return null;
        }
        router.removeFile(Caller.SYSTEM, p);
        return modified;
    }

    /**
     * A duration in its two largest units, as the command line takes durations: 3d4h, 12m5s, 2s, 1h;
     * negative for an entry modified in the future (a clock set wrong where it was written), e.g.
     * -5m, so it does not pass for a new one. Whole seconds.
     */
    public static String shown(Duration d) {
        if (d.isNegative()) {
            return "-" + shown(d.negated());
        }
        long s = d.getSeconds();
        long[] sizes = {86_400, 3_600, 60, 1};
        String[] units = {"d", "h", "m", "s"};
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < sizes.length && b.length() == 0; i++) {
            if (s >= sizes[i] || i == sizes.length - 1) {
                b.append(s / sizes[i]).append(units[i]);
                if (i + 1 < sizes.length && (s % sizes[i]) / sizes[i + 1] > 0) {
                    b.append((s % sizes[i]) / sizes[i + 1]).append(units[i + 1]);
                }
            }
        }
        return b.toString();
    }

    /** A failure as one plain line: what the system said and the file, no Java class names. */
    public static String describe(Exception e) {
        if (e instanceof IOException io) {
            return Errors.describe(io);
        }
        String m = e.getMessage();
        return printable(m == null ? e.getClass().getSimpleName() : m);
    }

    /** {@code s} for one line of a log or of output: {@link Names#shown(String)}. */
    public static String printable(String s) {
        return Names.shown(s);
    }

    /**
     * Removes one context's cache directory with everything in it; returns how many files (anything
     * but a directory, in subdirectories too) went with it, which is what was removed, entries or not;
     * empty when the context had no directory.
     */
    public java.util.OptionalInt clear(String context) throws IOException {
        VfsPath dir = directoryOf(context);
        int files;
        try {
            files = filesUnder(dir);
            router.delete(Caller.SYSTEM, dir);
        } catch (NoSuchFileException absent) {
            return java.util.OptionalInt.empty();
        }
        return java.util.OptionalInt.of(files);
    }

    private int filesUnder(VfsPath dir) throws IOException {
        int n = 0;
        for (Entry e : router.list(Caller.SYSTEM, dir)) {
            n += e.kind() == EntryKind.DIRECTORY ? filesUnder(dir.child(e.name())) : 1;
        }
        return n;
    }

    private boolean isCacheDirectory() throws IOException {
        try {
            Metadata m = router.metadata(Caller.SYSTEM, ROOT);
            if (!m.isDirectory()) {
                LOG.warn("tool cache: {} is a {}, not a directory; nothing swept", ROOT, m.kind());
                return false;
            }
            return true;
        } catch (NoSuchFileException absent) {
            return false;
        }
    }

    /**
     * The directories under the root, whatever their names, as chibi's {@code cleanup_all_tool_caches}
     * looks into every one (a directory made by hand, or by an older chibi, is swept too, not kept
     * forever); links, files and names that are not UTF-8 are skipped.
     */
    private List<String> contexts() throws IOException {
        List<String> out = new ArrayList<>();
        List<Entry> entries;
        try {
            entries = router.list(Caller.SYSTEM, ROOT);
        } catch (NoSuchFileException absent) {
            return out;
        }
        for (Entry e : entries) {
            if (e.kind() == EntryKind.DIRECTORY && addressable(e.name())) {
                out.add(e.name());
            }
        }
        return out;
    }

    /**
     * False for a name whose bytes are not UTF-8: the store hands it over with U+FFFD in their place
     * and refuses it back (EILSEQ), so it cannot be looked at or removed. chibi cannot make a
     * {@code VfsPath} of it either and skips it ({@code continue}); so does the cache, in silence,
     * every sweep, rather than fail or warn about the same planted name forever.
     */
    private static boolean addressable(String name) {
        return name.indexOf('\uFFFD') < 0;
    }

    private List<Entry> entriesOf(String ctx) throws IOException {
        List<Entry> out = new ArrayList<>();
        try {
            for (Entry e : router.list(Caller.SYSTEM, ROOT.child(ctx))) {
                if (e.kind() == EntryKind.FILE && addressable(e.name())) {
                    out.add(e);
                }
            }
        } catch (NoSuchFileException absent) {
            // a context that never cached anything
        }
        return out;
    }
}
