package dev.chibifs.router;

import dev.chibifs.config.ChibiHome;
import dev.chibifs.config.FlockRegistry;
import dev.chibifs.config.SiteIdentity;
import dev.chibifs.path.VfsPath;
import dev.chibifs.policy.SymlinkRule;
import dev.chibifs.policy.ZonePolicy;
import dev.chibifs.store.ContextsView;
import dev.chibifs.store.LocalStorage;
import dev.chibifs.store.MemoryStorage;
import dev.chibifs.store.ReadOnlyStorage;
import dev.chibifs.store.Storage;
import dev.chibifs.store.StoreSpec;
import dev.chibifs.sys.InvalidSpecException;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * The namespace a mount, a vfs command or a cache command serves, built in this one place: the
 * local store {@code <home>/vfs} at {@code /}, each {@code --store} at its prefix, chibi's
 * read-only views {@code /sys/contexts} and {@code /tools/sys}, and flock membership read from
 * chibi's registry and {@code site.json}.
 */
public final class Namespace implements java.io.Closeable {

    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(Namespace.class);

    /** chibi's view of its contexts. */
    public static final VfsPath CONTEXTS = VfsPath.of("/sys/contexts");
    /** chibi's virtual tool registry: read-only, empty or the directory {@code --tools-sys} names. */
    public static final VfsPath TOOLS_SYS = VfsPath.of("/tools/sys");
    /** chibi's name for {@code /tools/sys}, in refusals. */
    static final String TOOLS_SYS_NAME = "virtual tool registry";

    private final Router router;
    private final LocalStorage root;
    private final List<String> stores;
    /** The stores opened from {@code --store} specs by prefix, in the order opened; this namespace closes them. */
    private final java.util.Map<VfsPath, Storage> opened;

    private Namespace(Router router, LocalStorage root, List<String> stores, java.util.Map<VfsPath, Storage> opened) {
        this.router = router;
        this.root = root;
        this.stores = stores;
        this.opened = opened;
    }

    /**
     * Opens the namespace of {@code home} with {@code mounts} at their prefixes and
     * {@code toolsSys} (null: empty) at {@code /tools/sys}; a prefix named twice is an
     * {@link InvalidSpecException} naming it.
     */
    public static Namespace open(ChibiHome home, List<StoreMount> mounts, Path toolsSys) throws IOException {
        return open(home, mounts, toolsSys, SymlinkRule.ZONE);
    }

    /** {@link #open}, with {@code symlinks} deciding which symbolic links may be made or moved. */
    public static Namespace open(ChibiHome home, List<StoreMount> mounts, Path toolsSys,
                                 SymlinkRule symlinks) throws IOException {
        Set<VfsPath> seen = new HashSet<>();
        for (StoreMount m : mounts) {
            if (!seen.add(m.prefix())) {
                throw new InvalidSpecException("invalid --store '" + m.text() + "': " + m.prefix()
                        + " is named twice; one store per prefix");
            }
        }
        if (toolsSys != null && !Files.isDirectory(toolsSys)) {
            throw new InvalidSpecException("invalid --tools-sys '" + toolsSys + "': not an existing directory");
        }
        // --store /=SPEC serves the whole namespace in place of <home>/vfs (and replaces it in the router)
        boolean localRoot = mounts.stream().noneMatch(m -> m.prefix().isRoot());
        LocalStorage local = localRoot ? new LocalStorage(home.store()) : null;
        SiteIdentity site = new SiteIdentity(home);
        site.siteId(); // known before the first request: a request meanwhile takes what is known
        // without a local root the builder's first store is a placeholder: the / mount below replaces it
        Router.Builder b = Router.builder(localRoot ? local : new MemoryStorage(0)).flocks(site::siteId).symlinks(symlinks);
        List<String> described = new ArrayList<>();
        if (localRoot) {
            described.add("/=" + local.root());
        }
        java.util.Map<VfsPath, Storage> opened = new java.util.LinkedHashMap<>();
        // the root first, so that stores() lists / first
        mounts = new ArrayList<>(mounts);
        mounts.sort(java.util.Comparator.comparing((StoreMount m) -> !m.prefix().isRoot()));
        for (StoreMount m : mounts) {
            Storage store;
            try {
                store = m.spec().open();
            } catch (IOException | RuntimeException e) {
                // the stores already open hold locks (an S3 store's cache directory): let them go
                closeAll(opened.values());
                if (e instanceof IllegalArgumentException) {
                    throw e;
                }
                // one line naming the store: the failure's own text may name only a host path
                throw new IOException("cannot open --store '" + m.text() + "': " + e.getMessage(), e);
            }
            opened.put(m.prefix(), store);
            b.mount(m.prefix(), store);
            described.add(m.text());
        }
        // the view's flocks are the policy's: the router's registry reader, so both read it by one rule
        java.util.concurrent.atomic.AtomicReference<Router> built = new java.util.concurrent.atomic.AtomicReference<>();
        b.mount(CONTEXTS, new ContextsView(home.dir(), site::siteId, () -> {
            Router r = built.get();
            return r == null ? FlockRegistry.EMPTY : r.flockRegistry();
        }));
        described.add(CONTEXTS + "=view:" + home.dir().resolve("contexts"));
        Storage tools = toolsSys == null ? new MemoryStorage(0)
                : new LocalStorage(toolsSys.toAbsolutePath().normalize());
        b.mount(TOOLS_SYS, new ReadOnlyStorage(tools, TOOLS_SYS_NAME));
        described.add(TOOLS_SYS + "=" + (toolsSys == null ? "empty" : StoreSpec.READONLY + toolsSys.toAbsolutePath().normalize()));
        Router router = b.build();
        built.set(router);
        return new Namespace(router, local, List.copyOf(described), java.util.Collections.unmodifiableMap(opened));
    }

    /**
     * Closes the stores the {@code --store} options opened, each even when another fails: an S3
     * store uploads everything pending first. Call it once nothing serves the namespace any
     * more (after the FUSE session ended, at the end of a vfs command); the first failure is thrown.
     */
    @Override
    public void close() throws IOException {
        closeAll(opened.values());
    }

    private static void closeAll(java.util.Collection<Storage> stores) throws IOException {
        IOException first = null;
        for (Storage s : stores) {
            try {
                s.close();
            } catch (IOException | RuntimeException e) {
                LOG.warn("closing a store failed: {}", e.getMessage());
                if (first == null) {
                    first = e instanceof IOException io ? io : new IOException(e.getMessage(), e);
                }
            }
        }
        if (first != null) {
            throw first;
        }
    }

    public Router router() {
        return router;
    }

    /** The local store {@code <home>/vfs} at {@code /}; empty when {@code --store /=SPEC} serves the whole namespace. */
    public java.util.Optional<LocalStorage> rootStore() {
        return java.util.Optional.ofNullable(root);
    }

    /** By prefix, what each store does less safely than it should ({@link Storage#caution}); only those. */
    public java.util.Map<String, String> storeCautions() {
        return byPrefixName(told(Storage::caution));
    }

    /** By prefix, when each store next asks again for what failed ({@link Storage#nextTry}), where it waits to. */
    public java.util.Map<String, String> storeNextTries() {
        return byPrefixName(told(Storage::nextTry));
    }

    /** By prefix, what each store (the local one at / and those opened from a {@code --store} spec) has to tell ({@link Storage#state}), for {@code stats}. */
    public java.util.Map<String, String> storeStates() {
        return byPrefixName(told(Storage::state));
    }

    /** By prefix, what each store asked of S3 ({@link Storage#traffic}); only the stores that ask. */
    public java.util.Map<String, Storage.Traffic> storeTraffic() {
        return byPrefixName(told(Storage::traffic));
    }

    /** What waits to go up from every store that sends its changes elsewhere (S3), summed; null where none does. */
    public Storage.Uploads uploads() {
        Storage.Uploads sum = null;
        for (Storage store : opened.values()) {
            Storage.Uploads u = store.uploads();
            if (u != null) {
                sum = sum == null ? u : sum.plus(u);
            }
        }
        return sum;
    }

    /** By prefix, why each store fails its requests now ({@link Storage#unanswered}); only those. */
    public java.util.Map<String, String> storeTroubles() {
        return byPrefixName(told(Storage::unanswered));
    }

    /** By prefix, why each store that fails until someone acts fails ({@link Storage#failing()}). */
    public java.util.Map<String, String> storeFailures() {
        return byPrefixName(told(Storage::failing));
    }

    /** By prefix, what {@code what} tells of each store (the local one at / and those opened from a spec), where it tells anything. */
    private <T> java.util.Map<VfsPath, T> told(java.util.function.Function<Storage, T> what) {
        java.util.Map<VfsPath, T> told = new java.util.LinkedHashMap<>();
        if (root != null) {
            // the local store at / too: its disk failing (EIO), or unmounted, fails every request there
            T said = what.apply(root);
            if (said != null) {
                told.put(VfsPath.root(), said);
            }
        }
        opened.forEach((prefix, store) -> {
            T said = what.apply(store);
            if (said != null) {
                told.put(prefix, said);
            }
        });
        return told;
    }

    private static <T> java.util.Map<String, T> byPrefixName(java.util.Map<VfsPath, T> byPrefix) {
        java.util.Map<String, T> named = new java.util.LinkedHashMap<>();
        byPrefix.forEach((prefix, said) -> named.put(prefix.toString(), said));
        return named;
    }

    /** By prefix, why each store opened at a prefix below {@code /} does not answer ({@link Storage#unanswered}); only those. */
    public java.util.Map<VfsPath, String> unansweredBelowRoot() {
        java.util.Map<VfsPath, String> away = told(Storage::unanswered);
        away.keySet().removeIf(VfsPath::isRoot);
        return away;
    }

    /** {@link Storage#dropHeldAnswers} of every store. */
    public void dropHeldAnswers() {
        if (root != null) {
            root.dropHeldAnswers();
        }
        opened.values().forEach(Storage::dropHeldAnswers);
    }

    /**
     * {@link Storage#sync} of every store, the local one at {@code /} first; each is asked even after
     * one fails, and the first failure is thrown.
     */
    public void syncStores() throws IOException {
        List<Storage> all = new java.util.ArrayList<>();
        if (root != null) {
            all.add(root);
        }
        all.addAll(opened.values());
        IOException first = null;
        for (Storage s : all) {
            try {
                s.sync();
            } catch (IOException e) {
                LOG.warn("sync of a store failed: {}", e.getMessage());
                first = first == null ? e : first;
            }
        }
        if (first != null) {
            throw first;
        }
    }

    /** Each store as {@code PREFIX=SPEC}, {@code /} first, for logs and {@code status}. */
    public List<String> stores() {
        return stores;
    }
}
