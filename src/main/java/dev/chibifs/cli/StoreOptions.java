package dev.chibifs.cli;

import dev.chibifs.path.Names;
import dev.chibifs.config.ChibiHome;
import dev.chibifs.path.VfsPath;
import dev.chibifs.policy.SymlinkRule;
import dev.chibifs.router.Namespace;
import dev.chibifs.router.StoreMount;
import dev.chibifs.store.StoreSpec;
import dev.chibifs.store.s3.S3Options;
import dev.chibifs.store.s3.S3StoreSpec;
import dev.chibifs.sys.InvalidSpecException;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/** The stores a namespace mounts beside {@code <home>/vfs}: the same options on mount, the vfs and the cache commands. */
final class StoreOptions {

    @Option(names = "--store", paramLabel = "PREFIX=SPEC",
            description = "Serve PREFIX and below from another store (repeatable; the policy is the path's, as"
                    + " everywhere): memory[:SIZE] (in the daemon's memory, empty at mount, ENOSPC past SIZE, default"
                    + " 256M), readonly:DIR (DIR read-only; its links are shown, never followed by the daemon) or"
                    + " s3://BUCKET/KEYPREFIX[?endpoint=URL&region=R] (an S3 bucket shared by several hosts; credentials"
                    + " from the environment (AWS_*, a profile, an instance role), never the command line; /=s3://... serves"
                    + " the whole namespace)."
                    + " A rename or hard link across stores is"
                    + " EXDEV (mv copies).")
    List<String> stores = new ArrayList<>();

    @Option(names = "--tools-sys", paramLabel = "DIR",
            description = "Show DIR read-only at /tools/sys (chibi's tool registry; default: empty).")
    Path toolsSys;

    @Option(names = "--cache-dir", paramLabel = "DIR",
            description = "The S3 store's local layer (content cache, journal of changes not yet sent); one"
                    + " process per directory. Default: <home>/chibifs/cache/<store>. A vfs command run while a"
                    + " mount holds that directory needs its own.")
    Path cacheDir;

    @Option(names = "--flush-after", paramLabel = "DURATION", converter = DurationConverter.class,
            description = "How long after its last close a changed file goes up to S3 (e.g. 500ms, 2s). Default: 2s.")
    Duration flushAfter;

    @Option(names = "--metadata-ttl", paramLabel = "DURATION", converter = DurationConverter.class,
            description = "How long the S3 store believes what S3 last listed (names, sizes, times) before it asks"
                    + " again (on a mount, the kernel keeps it as long): the longest another host's upload can"
                    + " take to show here. Longer saves a LIST per directory looked at per period. Default: 1s.")
    Duration metadataTtl;

    @Option(names = "--cache-size", paramLabel = "SIZE", converter = SizeConverter.class,
            description = "Keep the S3 store's content cache within SIZE (e.g. 512M, 20G): past it, the content of"
                    + " the files least recently used goes, and is fetched again at their next open. Changes not yet"
                    + " uploaded, open files and files used in the last minute stay. Default: no limit.")
    Long cacheSize;

    @Option(names = "--prefetch-below", paramLabel = "SIZE", converter = SizeConverter.OrZero.class,
            description = "A file or link of at most SIZE that an S3 listing shows (one another host made) comes"
                    + " whole with its attributes: a GET in place of a HEAD, and its first open asks S3 nothing."
                    + " 0: attributes only, each file's content at its first open. Default: 32K.")
    Long prefetchBelow;

    /** The shortest lease a lock on S3 may have: renewed every third of it, each time a PUT. */
    static final Duration MIN_LOCK_LEASE = Duration.ofSeconds(3);

    @Option(names = "--lock-lease", paramLabel = "DURATION", converter = DurationConverter.class,
            description = "A lock on a file of an S3 store keeps every host's processes out (flock, fcntl, SQLite):"
                    + " the daemon holds a lease object in the bucket while a process here holds a lock, renewed"
                    + " every third of DURATION. A host that dies holding one keeps the others out this long."
                    + " At least 3s; default: 30s.")
    Duration lockLease;

    @Option(names = "--local-locks",
            description = "Locks on an S3 store keep out this daemon's processes only and ask S3 nothing: fewer"
                    + " requests, for a bucket one host writes.")
    boolean localLocks;

    @Option(names = "--exclusive-creates",
            description = "A create that must make the file (O_EXCL: set -o noclobber, lock files such as git's)"
                    + ", a mkdir and a symlink (ln -s locks) make their object on an S3 store at once, only if"
                    + " the bucket has none of that name, so of two hosts making one name the second gets"
                    + " EEXIST. One PUT per such"
                    + " create, before it returns. Default: made here, and up with the write-back.")
    boolean exclusiveCreates;

    /** How long the S3 store at the root believes a listing ({@code --metadata-ttl}); null where the root store is not S3. */
    Duration rootListingValidity() {
        boolean s3Root = mounts().stream().anyMatch(m -> m.prefix().isRoot() && m.spec() instanceof S3StoreSpec);
        return !s3Root ? null : metadataTtl != null ? metadataTtl : S3Options.DEFAULT_VALIDITY;
    }

    /** The parsed {@code --store} options; a bad one is a usage error naming the value and the rule. */
    List<StoreMount> mounts() {
        return mounts(() -> {
            throw new IllegalStateException("stores parsed for checking are not opened");
        }, Map.of());
    }

    private List<StoreMount> mounts(Supplier<ChibiHome> home, Map<String, String> env) {
        StoreSpec.Kind s3 = S3StoreSpec.kind(home, cacheDir, flushAfter, metadataTtl, cacheSize == null ? 0 : cacheSize,
                prefetchBelow, localLocks ? Duration.ZERO : lockLease, exclusiveCreates, env);
        List<StoreMount> out = new ArrayList<>();
        Map<VfsPath, String> typed = new HashMap<>();
        for (String s : stores) {
            StoreMount m;
            try {
                m = StoreMount.parse(s, s3);
            } catch (InvalidSpecException e) {
                throw new UsageException(e.getMessage());
            }
            // here, not only in Namespace: its message shows the parsed spec (memory:256M), not what was typed
            if (typed.putIfAbsent(m.prefix(), s) != null) {
                throw new UsageException("invalid --store '" + StoreSpec.shown(s) + "': " + m.prefix()
                        + " is named twice (also --store '" + StoreSpec.shown(typed.get(m.prefix())) + "'); one store per prefix");
            }
            out.add(m);
        }
        if (toolsSys != null && toolsSys.toString().isEmpty()) {
            throw new UsageException("invalid --tools-sys '': name a directory (an empty one showed the working directory)");
        }
        if (cacheDir != null && cacheDir.toString().isEmpty()) {
            throw new UsageException("invalid --cache-dir '': name a directory (an empty one was the working directory)");
        }
        if (cacheDir != null && HomeConverter.unexpandedTilde(cacheDir.toString()) != null) {
            throw new UsageException("invalid --cache-dir '" + cacheDir + "': " + HomeConverter.unexpandedTilde(cacheDir.toString()));
        }
        if (toolsSys != null && !Files.isDirectory(toolsSys)) {
            throw new UsageException("invalid --tools-sys '" + toolsSys + "': not an existing directory");
        }
        List<StoreMount> buckets = out.stream().filter(m -> m.spec() instanceof S3StoreSpec).toList();
        for (int i = 0; i < buckets.size(); i++) {
            for (int j = 0; j < i; j++) {
                if (((S3StoreSpec) buckets.get(i).spec()).overlaps((S3StoreSpec) buckets.get(j).spec())) {
                    throw new UsageException("invalid --store '" + buckets.get(i).text() + "': its objects are also"
                            + " --store '" + buckets.get(j).text() + "''s (one bucket, key prefixes one inside the other),"
                            + " which would put one object behind two caches; serve them through one store");
                }
            }
        }
        long s3Stores = buckets.size();
        if ((cacheDir != null || flushAfter != null || metadataTtl != null || cacheSize != null || prefetchBelow != null
                || lockLease != null || localLocks || exclusiveCreates) && s3Stores == 0) {
            throw new UsageException("--cache-dir, --cache-size, --flush-after, --metadata-ttl, --prefetch-below,"
                    + " --lock-lease, --local-locks and --exclusive-creates are for an S3 store:"
                    + " add --store PREFIX=s3://BUCKET/KEYPREFIX");
        }
        if (lockLease != null && lockLease.compareTo(MIN_LOCK_LEASE) < 0) {
            // renewed every third of it: a 1 ms lease made 729 PUTs for one flock held 5 s, and guarded nothing
            throw new UsageException("invalid --lock-lease '" + lockLease.toString().substring(2).toLowerCase(java.util.Locale.ROOT)
                    + "': at least " + MIN_LOCK_LEASE.toSeconds() + "s (it is renewed every third of it, a PUT to S3 each"
                    + " time); --local-locks keeps locks in this daemon");
        }
        if (lockLease != null && localLocks) {
            throw new UsageException("--lock-lease and --local-locks cannot go together: a local lock has no lease");
        }
        if (cacheDir != null && s3Stores > 1) {
            // one store per cache directory (the second would be refused with EBUSY): say so before mounting
            throw new UsageException("invalid --cache-dir '" + cacheDir + "': it holds one S3 store's cache and "
                    + s3Stores + " are named; leave it out (each gets <home>/chibifs/cache/<store>)");
        }
        return out;
    }

    /**
     * The host directories the namespace shows ({@code readonly:DIR}, {@code --tools-sys}) with what
     * shows each, absolute: a mountpoint or a cache directory inside one would be served by the mount.
     */
    Map<Path, String> shownDirectories() {
        Map<Path, String> shown = new java.util.LinkedHashMap<>();
        for (StoreMount m : mounts()) {
            m.spec().shownDirectory().ifPresent(d -> shown.put(d, "--store " + m.text()));
        }
        if (toolsSys != null) {
            shown.put(toolsSys.toAbsolutePath().normalize(), "--tools-sys");
        }
        return shown;
    }

    /**
     * Refuses a {@code --cache-dir} inside {@code store} (the S3 journal where every context reads and
     * writes it), or, with a {@code mountpoint}, inside it (the cache under the mount it serves) or
     * holding it. Both real paths, links followed.
     */
    void requireCacheDirOutside(Path store, Path mountpoint) {
        if (cacheDir == null) {
            return;
        }
        Path dir = MountCommand.realMountpoint(cacheDir);
        String why = dir.startsWith(store) ? "it is inside the store " + store + ", where every context could read and"
                + " write it" : mountpoint == null ? null : mountpoint.startsWith(dir) ? "the mountpoint " + Names.shown(mountpoint)
                + " is inside it" : dir.startsWith(mountpoint) ? "it is inside the mountpoint " + Names.shown(mountpoint) : null;
        if (why != null) {
            throw new UsageException("invalid --cache-dir '" + cacheDir.toAbsolutePath().normalize() + "': " + why
                    + "; choose a directory outside " + (mountpoint == null ? "it" : "both"));
        }
    }

    /** The namespace of {@code home} with these stores. */
    Namespace open(ChibiHome home, Map<String, String> env) throws IOException {
        return open(home, env, SymlinkRule.ZONE);
    }

    /**
     * {@link #open(ChibiHome, Map)} with the mount's rule for symbolic links; {@code env} gives an
     * S3 store its endpoint, region and credentials. The caller closes the namespace when done.
     */
    Namespace open(ChibiHome home, Map<String, String> env, SymlinkRule symlinks) throws IOException {
        requireCacheDirOutside(MountCommand.realMountpoint(home.store()), null);
        try {
            return Namespace.open(home, mounts(() -> home, env), toolsSys, symlinks);
        } catch (InvalidSpecException e) {
            throw new UsageException(e.getMessage());
        }
    }

    /** These options again, for the daemon's own command line (no credential: the daemon inherits the environment). */
    List<String> arguments() {
        List<String> out = new ArrayList<>();
        for (StoreMount m : mounts()) {
            out.add("--store");
            out.add(m.text());
        }
        if (toolsSys != null) {
            out.add("--tools-sys");
            out.add(toolsSys.toAbsolutePath().normalize().toString());
        }
        if (cacheDir != null) {
            out.add("--cache-dir");
            out.add(cacheDir.toAbsolutePath().normalize().toString());
        }
        if (flushAfter != null) {
            out.add("--flush-after");
            out.add(flushAfter.toString());
        }
        if (metadataTtl != null) {
            out.add("--metadata-ttl");
            out.add(metadataTtl.toString());
        }
        if (cacheSize != null) {
            out.add("--cache-size");
            out.add(Long.toString(cacheSize));
        }
        if (prefetchBelow != null) {
            out.add("--prefetch-below");
            out.add(Long.toString(prefetchBelow));
        }
        if (lockLease != null) {
            out.add("--lock-lease");
            out.add(lockLease.toString());
        }
        if (localLocks) {
            out.add("--local-locks");
        }
        if (exclusiveCreates) {
            out.add("--exclusive-creates");
        }
        return out;
    }
}
