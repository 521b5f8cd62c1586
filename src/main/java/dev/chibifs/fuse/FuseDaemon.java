package dev.chibifs.fuse;

import dev.chibifs.router.Router;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * One mounted filesystem: starts libfuse's loop on threads of its own ({@link FuseLoop}), returns
 * once the kernel answers a request on the mountpoint (not after a sleep), and unmounts on request.
 */
public final class FuseDaemon {

    private static final Logger LOG = LoggerFactory.getLogger(FuseDaemon.class);

    /** Options every chibifs mount gets; the user's {@code -o} options come after and may override. */
    public static final List<String> DEFAULT_OPTIONS = List.of(
            "fsname=chibifs", "subtype=chibifs",
            // libfuse2 sends 4 KiB writes without these; over 128 KiB only with the wider request buffers
            // FuseLoop gives it (libfuse caps max_write at its buffer, less a page, otherwise)
            "big_writes", "max_write=" + FuseLoop.MAX_WRITE,
            // st_ino is the store's inode, so cp -a, tar and rsync -H see hard links as one file
            "use_ino");
    // no auto_cache: the open itself tells the kernel to keep a file's pages while its size, mtime
    // and ctime are unchanged (PageCache), so a file chibi rewrote in the store is read fresh by the
    // next open, without auto_cache's fgetattr after every open (kernel_cache would serve stale pages)
    // no hard_remove: with it, fstat of an unlinked open file is ENOENT in libfuse2; ChibiFuse
    // answers libfuse's rename to .fuse_hidden* by unlinking in the store and keeping a handle

    private final Path mountpoint;
    private final ChibiFuse fs;
    private final List<String> options;
    /** Null: plain listings. */
    private final DirectoryPlus directoryPlus;
    private final CompletableFuture<Integer> loop = new CompletableFuture<>();

    private FuseDaemon(Path mountpoint, ChibiFuse fs, List<String> options, boolean readdirplus) {
        this.mountpoint = mountpoint;
        this.fs = fs;
        this.options = options;
        if (readdirplus) {
            // entries go out with the timeouts libfuse gives its lookups: the last of each in the options, else 1 s
            this.directoryPlus = new DirectoryPlus(timeout(options, "entry_timeout"), timeout(options, "attr_timeout"));
            directoryPlus.attributesFrom(fs::plusAttributes);
        } else {
            this.directoryPlus = null;
        }
    }

    /** libfuse's value of option {@code name} in {@code options} (comma-separated lists, the last wins); 1 s when unset. */
    static double timeout(List<String> options, String name) {
        double seconds = 1.0;
        for (String list : options) {
            for (String o : list.split(",")) {
                if (o.startsWith(name + "=")) {
                    try {
                        seconds = Double.parseDouble(o.substring(name.length() + 1));
                    } catch (NumberFormatException e) {
                        // libfuse refuses to mount with it; no entry outlives what it would have said
                        seconds = 0;
                    }
                }
            }
        }
        return Math.max(0, seconds);
    }

    /** A daemon for {@code router} at {@code mountpoint}, not mounted yet: {@link #start} mounts it. */
    public static FuseDaemon create(Path mountpoint, Router router, CallerResolver callers, List<String> options,
                                    long mountUid, long mountGid) {
        return create(mountpoint, router, callers, options, mountUid, mountGid, 0, true);
    }

    /**
     * How long the kernel keeps names and attributes unless told otherwise: 30 s where a changed
     * directory's name can be made stale without unhashing it (Linux 6.2, {@link EntryExpiry}),
     * else 0, libfuse's defaults: unhashing fails getcwd of every process working in the directory.
     */
    public static int defaultKernelCacheSeconds() {
        return EntryExpiry.kernelExpiresOnly() ? 30 : 0;
    }

    /**
     * {@link #create}, with the kernel keeping names, attributes, missing names and listings for
     * {@code kernelCacheSeconds} (0: libfuse's defaults), kept true to the store by {@link KernelEntries}.
     */
    public static FuseDaemon create(Path mountpoint, Router router, CallerResolver callers, List<String> options,
                                    long mountUid, long mountGid, int kernelCacheSeconds) {
        return create(mountpoint, router, callers, options, mountUid, mountGid, kernelCacheSeconds, true);
    }

    /** {@link #create}, with listings that carry attributes ({@link DirectoryPlus}) when {@code readdirplus}. */
    public static FuseDaemon create(Path mountpoint, Router router, CallerResolver callers, List<String> options,
                                    long mountUid, long mountGid, int kernelCacheSeconds, boolean readdirplus) {
        ChibiFuse fs = new ChibiFuse(router, callers, mountUid, mountGid);
        List<String> all = new ArrayList<>();
        if (kernelCacheSeconds > 0) {
            if (fs.followStore()) {
                // changes to the store reach the kernel as invalidations, so it may cache names for long;
                // first, so that the user's own timeouts (later in the list) win
                all.add(KernelEntries.timeoutOptions(kernelCacheSeconds));
            } else {
                LOG.warn("--kernel-cache: the store's changes cannot be followed here; keeping libfuse's 1 s timeouts");
            }
        }
        all.addAll(options);
        return new FuseDaemon(mountpoint, fs, List.copyOf(all), readdirplus);
    }


    /** The options the mount gets: the timeouts of {@link KernelEntries} where the store is followed, then those asked for. */
    public List<String> options() {
        return options;
    }

    /**
     * Mounts and returns once the mount answers.
     *
     * @throws MountException with one clear line when the mount does not come up within {@code timeout}
     */
    public void start(Duration timeout) throws MountException {
        String[] args = {"-o", String.join(",", options)};
        // no jnr-fuse mount(): it runs libfuse's own loop, and registers an exit hook we do not want
        Thread t = new Thread(() -> {
            try {
                loop.complete(new FuseLoop(mountpoint, fs.operations(), fs.kernelInodes(), fs.kernelEntries(), directoryPlus)
                        .run(fs.getFSName(), args));
            } catch (Throwable e) {
                loop.complete(1);
                LOG.error("FUSE loop ended with an error", e);
            } finally {
                fs.kernelEntries().close();
            }
        }, "chibifs-fuse-loop");
        t.setDaemon(true);
        t.start();
        Instant deadline = Instant.now().plus(timeout);
        while (Instant.now().isBefore(deadline)) {
            if (loop.isDone()) {
                throw new MountException("libfuse could not mount " + mountpoint + " (its reason is on the line above)");
            }
            if (answers(mountpoint)) {
                return;
            }
            sleep(20);
        }
        Fusermount.unmount(mountpoint, true);
        throw new MountException("the mount at " + mountpoint + " did not answer within " + timeout.toSeconds() + " s");
    }

    /** True once the kernel lists a chibifs mount there and its daemon answers a request. */
    public static boolean answers(Path mountpoint) {
        try {
            if (MountTable.find(mountpoint).filter(MountTable.MountEntry::isChibifs).isEmpty()) {
                return false;
            }
            // The table and the probe are two looks: a dead daemon's mount detached between them (by
            // the next daemon clearing it) leaves the probe on the plain directory underneath, whose
            // ENOENT is not an answer. So the probe counts only on a mount, the same one after it.
            Path parent = mountpoint.toAbsolutePath().getParent();
            Object device = device(mountpoint);
            return (parent == null || !device.equals(device(parent)))
                    && daemonAnswers(mountpoint)
                    && device.equals(device(mountpoint));
        } catch (IOException e) {
            return false;
        }
    }

    private static Object device(Path dir) throws IOException {
        return Files.getAttribute(dir, "unix:dev");
    }

    /**
     * Asks the daemon itself: a lookup of a name that does not exist always reaches it, whereas a
     * stat of the mountpoint can be answered from attributes the kernel cached before the daemon
     * died. ENOENT means alive; "Transport endpoint is not connected" means dead.
     */
    private static boolean daemonAnswers(Path mountpoint) {
        try {
            Files.readAttributes(mountpoint.resolve(".chibifs-probe-" + System.nanoTime()), BasicFileAttributes.class);
            return true;
        } catch (java.nio.file.NoSuchFileException expected) {
            return true;
        } catch (IOException dead) {
            return false;
        }
    }

    /** Blocks until the FUSE loop ends (unmounted by anyone). */
    public void awaitUnmounted() {
        loop.join();
    }

    /**
     * Unmounts lazily (so a busy mount still detaches) and waits up to {@code wait} for the loop to
     * end; then closes every handle still open. Returns true when the loop ended in time.
     */
    public boolean unmount(Duration wait) {
        if (!loop.isDone()) {
            Fusermount.Result r = Fusermount.unmount(mountpoint, true);
            if (!r.ok() && !r.message().isEmpty() && !loop.isDone()) {
                LOG.warn("fusermount: {}", r.message());
            }
        }
        boolean ended;
        try {
            loop.get(wait.toMillis(), TimeUnit.MILLISECONDS);
            ended = true;
        } catch (Exception e) {
            ended = false;
        }
        int open = fs.openFiles().closeAll();
        if (open > 0) {
            LOG.info("closed {} file(s) still open at unmount", open);
        }
        return ended;
    }


    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Clears a mount left stale by a daemon that died ("Transport endpoint is not connected"); true if one was cleared. */
    public static boolean clearStale(Path mountpoint) throws IOException {
        if (MountTable.find(mountpoint).filter(e -> e.fsType().startsWith("fuse")).isEmpty()
                || daemonAnswers(mountpoint)) {
            return false;
        }
        Fusermount.Result r = Fusermount.unmount(mountpoint, true);
        if (!r.ok()) {
            throw new IOException("cannot clear the stale mount at " + mountpoint + ": " + r.message());
        }
        return true;
    }

    /** The options for a mount: defaults, {@code allow_other} when other users must reach it, then the user's. */
    public static List<String> optionsFor(boolean allowOther, List<String> userOptions) {
        List<String> all = new ArrayList<>(DEFAULT_OPTIONS);
        if (allowOther && !userOptions.contains("allow_other")) {
            all.add("allow_other");
        }
        all.addAll(userOptions);
        return all;
    }
}
