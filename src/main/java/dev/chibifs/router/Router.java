package dev.chibifs.router;

import dev.chibifs.path.VfsPath;
import dev.chibifs.policy.Caller;
import dev.chibifs.policy.Membership;
import dev.chibifs.policy.Zone;
import dev.chibifs.policy.SymlinkRule;
import dev.chibifs.policy.ZonePolicy;
import dev.chibifs.store.ChangeFeed;
import dev.chibifs.store.ChangeListener;
import dev.chibifs.store.Entry;
import dev.chibifs.store.EntryKind;
import dev.chibifs.store.EntrySink;
import dev.chibifs.store.FileHandle;
import dev.chibifs.store.FileLocks;
import dev.chibifs.store.HeldFile;
import dev.chibifs.store.Metadata;
import dev.chibifs.store.OpenFlag;
import dev.chibifs.store.OwnMoves;
import dev.chibifs.store.Precondition;
import dev.chibifs.store.ReadOnlyStore;
import dev.chibifs.store.ReadOnlyStoreException;
import dev.chibifs.store.RenameMode;
import dev.chibifs.store.OperationNotPermittedException;
import dev.chibifs.store.SpaceInfo;
import dev.chibifs.store.Storage;
import dev.chibifs.store.XattrMode;
import dev.chibifs.sys.ErrnoException;
import dev.chibifs.sys.Linux;
import dev.chibifs.config.FlockRegistry;
import dev.chibifs.sys.Errors;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Deque;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one way into storage: checks the zone policy for the caller before every operation, then
 * hands the operation to the storage mounted at the longest matching prefix (with that prefix
 * stripped). Every front end (the FUSE adapter, the command line, the tool cache) goes through
 * here, so they all enforce the same policy with the same messages.
 *
 * <p>A store mounted at a prefix shows in its parent's listings (whether or not the parent
 * store has a directory of that name), cannot be removed or renamed (EBUSY), and nothing is
 * renamed or linked across two stores ({@link CrossDeviceException}, EXDEV).
 */
public final class Router {

    private record Mount(VfsPath prefix, Storage storage) {
    }

    /** Where a path lands: a storage and the path inside it. */
    public record Target(Storage storage, VfsPath path) {
    }

    private static final Logger LOG = LoggerFactory.getLogger(Router.class);
    /** The last name of {@link #unnamedIn}: never looked up, so a file really named so is no matter. */
    private static final String UNNAMED = "#unnamed";

    // sorted longest prefix first; immutable after construction, so lookups need no lock
    private final List<Mount> mounts;
    /** Which symbolic link targets may be made or moved (mount --symlinks). */
    private final SymlinkRule symlinks;
    /**
     * This process's side of {@link #lockMoves}, one per store (a move never crosses stores): shared
     * for plain moves, exclusive for what places a link.
     */
    private final Map<Storage, ReentrantReadWriteLock> moves = new ConcurrentHashMap<>();
    // the names of the mount points directly in each directory that has some
    private final Map<VfsPath, List<String>> mountPointsIn;
    // a mount point below each directory that holds one, at any depth: asked at every create and
    // remove, so looked up rather than found by a walk of the prefixes
    private final Map<VfsPath, VfsPath> mountPointBelow;
    private final Membership membership;

    private Router(List<Mount> mounts, Membership membership, SymlinkRule symlinks) {
        this.mounts = mounts;
        Map<VfsPath, List<String>> in = new HashMap<>();
        for (Mount m : mounts) {
            if (!m.prefix().isRoot()) {
                in.computeIfAbsent(m.prefix().parent(), k -> new ArrayList<>()).add(m.prefix().fileName());
            }
        }
        in.replaceAll((k, v) -> List.copyOf(v));
        this.mountPointsIn = Map.copyOf(in);
        Map<VfsPath, VfsPath> below = new HashMap<>();
        for (Mount m : mounts) {
            for (VfsPath p = m.prefix().isRoot() ? null : m.prefix().parent(); p != null; p = p.isRoot() ? null : p.parent()) {
                below.putIfAbsent(p, m.prefix());
            }
        }
        this.mountPointBelow = Map.copyOf(below);
        this.membership = membership;
        this.symlinks = symlinks;
    }

    /** A router with one storage at {@code /}. */
    public static Router of(Storage root) {
        return builder(root).build();
    }

    /** Starts a router whose root storage is {@code root}; more can be mounted under prefixes. */
    public static Builder builder(Storage root) {
        return new Builder(root);
    }

    /** Collects prefix mounts before the router is built. */
    public static final class Builder {
        private final List<Mount> mounts = new ArrayList<>();
        private Supplier<Optional<String>> siteId;
        private SymlinkRule symlinks = SymlinkRule.ZONE;

        private Builder(Storage root) {
            mounts.add(new Mount(VfsPath.root(), root));
        }

        /** Serves every path at or below {@code prefix} from {@code storage}. */
        public Builder mount(VfsPath prefix, Storage storage) {
            mounts.removeIf(m -> m.prefix().equals(prefix));
            mounts.add(new Mount(prefix, storage));
            return this;
        }

        /**
         * Grants flock writes by chibi's registry ({@code /flocks/registry.json}, read fresh from
         * the store serving it) for contexts of the site {@code siteId} names when asked. Without
         * this, nobody is a member of any flock.
         */
        public Builder flocks(Supplier<Optional<String>> siteId) {
            this.siteId = siteId;
            return this;
        }

        /** Which symbolic link targets may be made or moved; {@link SymlinkRule#ZONE} unless set. */
        public Builder symlinks(SymlinkRule rule) {
            this.symlinks = java.util.Objects.requireNonNull(rule);
            return this;
        }

        public Router build() {
            List<Mount> sorted = new ArrayList<>(mounts);
            sorted.sort(Comparator.comparingInt((Mount m) -> m.prefix().depth()).reversed());
            List<Mount> frozen = List.copyOf(sorted);
            Membership members = Membership.NONE;
            if (siteId != null) {
                Target t = resolve(frozen, VfsPath.of(Zone.FLOCK_REGISTRY_PATH));
                members = new RegistryMembership(t.storage(), t.path(), siteId);
            }
            return new Router(frozen, members, symlinks);
        }
    }

    /** The storage and inner path that serve {@code path}. */
    public Target resolve(VfsPath path) {
        return resolve(mounts, path);
    }

    private static Target resolve(List<Mount> mounts, VfsPath path) {
        Mount m = mountOf(mounts, path);
        if (m.prefix().isRoot()) {
            return new Target(m.storage(), path);
        }
        String rest = path.toString().substring(m.prefix().toString().length());
        return new Target(m.storage(), rest.isEmpty() ? VfsPath.root() : VfsPath.of(rest));
    }

    /** The mount serving {@code path}: the longest prefix (mounts are kept longest first). */
    private static Mount mountOf(List<Mount> mounts, VfsPath path) {
        // by index: an iterator per request was garbage the JIT did not always remove
        for (int i = 0; i < mounts.size(); i++) {
            if (path.startsWith(mounts.get(i).prefix())) {
                return mounts.get(i);
            }
        }
        throw new IllegalStateException("no storage at / for " + path);
    }

    private Target sameStorage(VfsPath a, VfsPath b, Target ta) throws IOException {
        Target tb = resolve(b);
        if (ta.storage() != tb.storage()) {
            throw CrossDeviceException.betweenStores(a.toString(), b.toString());
        }
        return tb;
    }

    /** True when a store other than the root's is mounted at {@code path}. */
    boolean isMountPoint(VfsPath path) {
        if (path.isRoot()) {
            return false;
        }
        List<String> names = mountPointsIn.get(path.parent());
        return names != null && names.contains(path.fileName());
    }

    /** Every prefix a store is mounted at, longest first, {@code /} last. */
    public List<VfsPath> prefixes() {
        List<VfsPath> out = new ArrayList<>();
        mounts.forEach(m -> out.add(m.prefix()));
        return out;
    }

    /**
     * Where a change of {@code path} lands; a store that cannot write is refused here, with the
     * namespace path, before it is asked.
     */
    private Target writable(VfsPath path) throws ReadOnlyStoreException {
        Target t = resolve(path);
        if (t.storage() instanceof ReadOnlyStore) {
            throw new ReadOnlyStoreException(path.toString(), ((ReadOnlyStore) t.storage()).storeName());
        }
        return t;
    }

    /**
     * {@link #writable} for a change that may create {@code path} or its parents: every name at most
     * NAME_MAX bytes (ENAMETOOLONG), as a local store's own file system requires, so a memory or S3
     * store, which could keep longer names, never holds one that a mount could not give the kernel.
     */
    private Target creatable(VfsPath path) throws IOException {
        for (String name : path.segments()) {
            checkNameLength(name);
        }
        return writable(path);
    }

    /**
     * {@link #creatable} for what is not a directory: a path holding a store's mount point is a
     * directory in the namespace (a mount makes it so), so a file there is EISDIR; made through the
     * vfs commands, which make no such directory, it stopped the next mount over that store.
     */
    private Target fileCreatable(VfsPath path) throws IOException {
        Optional<VfsPath> held = mountPointBelow(path);
        if (held.isPresent()) {
            throw ErrnoException.of(Linux.EISDIR, path.toString(), "it holds " + held.get()
                    + ", where a store is mounted");
        }
        return creatable(path);
    }

    /** ENAMETOOLONG for a name longer than NAME_MAX bytes of UTF-8. */
    public static void checkNameLength(String name) throws ErrnoException {
        // a UTF-16 unit is at most 3 UTF-8 bytes: only a long name needs counting
        if (name.length() > Linux.NAME_MAX / 3 && name.getBytes(StandardCharsets.UTF_8).length > Linux.NAME_MAX) {
            throw ErrnoException.of(Linux.ENAMETOOLONG, name, "a name has at most "
                    + Linux.NAME_MAX + " bytes");
        }
    }

    // ---- policy checks ----

    /** chibi's flock registry as the policy reads it now (empty without flocks, or when it grants nothing): what {@code /sys/contexts} shows. */
    public FlockRegistry flockRegistry() {
        return membership instanceof RegistryMembership r ? r.current() : FlockRegistry.EMPTY;
    }

    /** Whether {@code caller} may write {@code path}: {@code access(W_OK)} and the modes a mount shows. */
    public boolean mayWrite(Caller caller, VfsPath path) {
        return ZonePolicy.mayWrite(caller, path, membership);
    }

    /** Whether {@code path} is served by a read-only store (a {@code readonly:} store, chibi's views): nobody writes it. */
    public boolean isReadOnly(VfsPath path) {
        // asked of every attribute reply: the store alone, without resolve's path within it
        return mountOf(mounts, path).storage() instanceof ReadOnlyStore;
    }

    /** Throws {@link PolicyDeniedException} unless {@code caller} may write {@code path}. */
    public void checkWrite(Caller caller, VfsPath path) throws PolicyDeniedException {
        if (!ZonePolicy.mayWrite(caller, path, membership)) {
            throw new PolicyDeniedException(path.toString(), ZonePolicy.denial(caller, path, membership));
        }
    }

    /**
     * Throws {@link PolicyDeniedException} unless {@code caller} may remove or rename away
     * {@code path}, and {@link MountPointBusyException} for a store's mount point.
     */
    public void checkRemove(Caller caller, VfsPath path) throws IOException {
        checkRemovePolicy(caller, path);
        checkNotBusy(path);
    }

    private void checkRemovePolicy(Caller caller, VfsPath path) throws PolicyDeniedException {
        if (!ZonePolicy.mayRemove(caller, path, membership)) {
            throw new PolicyDeniedException(path.toString(), ZonePolicy.denial(caller, path, membership));
        }
    }

    /**
     * EBUSY for a store's mount point, or a directory holding one: the store below would be left
     * unreachable or behind, since a prefix is fixed at mount. Judged after the policy, as Linux
     * judges permission before a mount's EBUSY: a denied move is EACCES.
     */
    private void checkNotBusy(VfsPath path) throws MountPointBusyException {
        if (isMountPoint(path)) {
            throw new MountPointBusyException(path.toString());
        }
        Optional<VfsPath> held = mountPointBelow(path);
        if (held.isPresent()) {
            throw new MountPointBusyException(path.toString(), held.get().toString());
        }
    }

    /** A store's mount point strictly below {@code path}, if there is one. */
    private Optional<VfsPath> mountPointBelow(VfsPath path) {
        return Optional.ofNullable(mountPointBelow.get(path));
    }

    // ---- reads: always allowed ----

    public byte[] read(Caller caller, VfsPath path) throws IOException {
        Target t = resolve(path);
        return t.storage().read(t.path());
    }

    public List<Entry> list(Caller caller, VfsPath path) throws IOException {
        Target t = resolve(path);
        List<String> points = mountPointsIn.get(path);
        if (points == null) {
            return t.storage().list(t.path());
        }
        List<Entry> out = new ArrayList<>();
        for (Entry e : t.storage().list(t.path())) {
            if (!points.contains(e.name())) {
                out.add(e);
            }
        }
        points.forEach(n -> out.add(new Entry(n, EntryKind.DIRECTORY)));
        out.sort(Comparator.comparing(Entry::name));
        return out;
    }

    /** {@link #list} one at a time, in the directory's own order, without a list (readdir). */
    public void forEachEntry(Caller caller, VfsPath path, EntrySink sink) throws IOException {
        Target t = resolve(path);
        long tag = tagOf(t.storage());
        EntrySink tagged = tag == 0 ? sink : (name, offset, length, kind, inode) ->
                sink.accept(name, offset, length, kind, inode == 0 ? 0 : taggedInode(inode, tag));
        List<String> points = mountPointsIn.get(path);
        if (points == null) {
            t.storage().forEachEntry(t.path(), tagged);
            return;
        }
        // the parent store's own entry of a mount point's name is hidden by the mount, as in a kernel
        List<byte[]> hidden = new ArrayList<>();
        points.forEach(n -> hidden.add(n.getBytes(StandardCharsets.UTF_8)));
        boolean[] more = {true};
        t.storage().forEachEntry(t.path(), (name, offset, length, kind, inode) -> {
            for (byte[] h : hidden) {
                if (h.length == length && java.util.Arrays.equals(h, 0, length, name, offset, offset + length)) {
                    return true;
                }
            }
            return more[0] = tagged.accept(name, offset, length, kind, inode);
        });
        for (int i = 0; i < hidden.size() && more[0]; i++) {
            more[0] = sink.accept(hidden.get(i), 0, hidden.get(i).length, EntryKind.DIRECTORY, 0);
        }
    }

    public boolean exists(Caller caller, VfsPath path) throws IOException {
        Target t = resolve(path);
        return t.storage().exists(t.path());
    }

    public Metadata metadata(Caller caller, VfsPath path) throws IOException {
        Target t = resolve(path);
        Metadata m = t.storage().metadata(t.path());
        long tag = tagOf(t.storage());
        return tag == 0 ? m : tagged(m, tag);
    }

    /** fsync of a directory: reading it is enough, as on a disk ({@link Storage#syncDirectory}). */
    public void syncDirectory(Caller caller, VfsPath directory) throws IOException {
        Target t = resolve(directory);
        t.storage().syncDirectory(t.path());
    }

    /** Whether the store of {@code path} may keep a request waiting long ({@link Storage#answersMayWaitLong}). */
    public boolean mayWaitLong(VfsPath path) {
        return resolve(path).storage().answersMayWaitLong();
    }

    /** Whether any store here may keep a request waiting long: where none may, no path need be asked. */
    public boolean anyMayWaitLong() {
        return mounts.stream().anyMatch(m -> m.storage().answersMayWaitLong());
    }

    /**
     * How long from now what the store of directory {@code dir} says of the names in it holds
     * ({@link Storage#answersHeld}); a store mounted at one of those names answers for itself.
     */
    public Duration answersHeld(VfsPath dir) {
        Target t = resolve(dir);
        return t.storage().answersHeld(t.path());
    }

    /**
     * Tells {@code listener} of each file a store moves to another name by itself ({@link
     * Storage#tellOwnMoves}), by namespace paths. Reading needs no permission, so this checks none.
     */
    public void tellOwnMoves(OwnMoves listener) {
        for (Mount m : mounts) {
            m.storage().tellOwnMoves((from, to) -> listener.moved(outer(m, from), outer(m, to)));
        }
    }

    /** The namespace path of {@code inner}, a path in {@code m}'s store. */
    private static VfsPath outer(Mount m, VfsPath inner) {
        if (m.prefix().isRoot()) {
            return inner;
        }
        return inner.isRoot() ? m.prefix() : VfsPath.of(m.prefix() + inner.toString());
    }

    /** {@link Storage#answersExpire} of the store of directory {@code dir}. */
    public boolean answersExpire(VfsPath dir) {
        return resolve(dir).storage().answersExpire();
    }

    /** {@link Storage#standsIn} of the store of directory {@code dir}. */
    public boolean standsIn(VfsPath dir) {
        return resolve(dir).storage().standsIn();
    }

    /**
     * {@link #metadata} of names in directory {@code dir}, for a listing that carries attributes:
     * the directory's store may hold it open across the names (see {@link Storage#siblings}). A
     * name where another store is mounted is that store's root. A directory that cannot be opened
     * (gone meanwhile) fails each name as {@link #metadata} would.
     */
    public Siblings siblings(VfsPath dir) {
        Target t = resolve(dir);
        Storage.Siblings inStore;
        try {
            inStore = t.storage().siblings(t.path());
        } catch (IOException gone) {
            inStore = name -> {
                throw gone;
            };
        }
        return new Siblings(this, dir, t.storage(), inStore, mountPointsIn.getOrDefault(dir, List.of()));
    }

    /** The metadata of names in one directory, and the store each is in; closed when done. */
    public static final class Siblings implements AutoCloseable {
        private final Router router;
        private final VfsPath dir;
        private final Storage storage;
        private final Storage.Siblings inStore;
        private final List<String> mountPoints;
        private final long tag;

        private Siblings(Router router, VfsPath dir, Storage storage, Storage.Siblings inStore, List<String> mountPoints) {
            this.router = router;
            this.dir = dir;
            this.storage = storage;
            this.inStore = inStore;
            this.mountPoints = mountPoints;
            this.tag = router.tagOf(storage);
        }

        public Metadata metadata(String name) throws IOException {
            if (mountPoints.contains(name)) {
                return router.metadata(null, dir.child(name));
            }
            Metadata m = inStore.metadata(name);
            return tag == 0 ? m : tagged(m, tag);
        }

        /** {@link Storage.Siblings#unconfirmed}; null for a mount point's name. */
        public Metadata unconfirmed(String name) throws IOException {
            if (mountPoints.contains(name)) {
                return null;
            }
            Metadata m = inStore.unconfirmed(name);
            return m == null || tag == 0 ? m : tagged(m, tag);
        }

        /** The store {@code name} is in. */
        public Storage storage(String name) {
            return mountPoints.contains(name) ? router.resolve(dir.child(name)).storage() : storage;
        }

        @Override
        public void close() {
            inStore.close();
        }
    }

    // ---- inode numbers: each store counts its own, so those of every store but the root's carry its tag ----

    /** Bits of a store's own inode numbers kept; the store's tag goes above them. */
    private static final long INODE_BITS = 0x00ff_ffff_ffff_ffffL;

    /** A prefix store's inode number {@code inode} with its store's {@code tag} above it. */
    private static long taggedInode(long inode, long tag) {
        return (inode & INODE_BITS) | tag;
    }

    /**
     * 0 for the root store, whose inode numbers pass unchanged; otherwise the store's index in
     * the top byte, so no two stores' files share an inode number (tar, cp -a and find take
     * equal numbers on one file system for one file).
     */
    private long tagOf(Storage storage) {
        int last = mounts.size() - 1;
        if (mounts.get(last).storage() == storage) {
            return 0;
        }
        for (int i = 0; i < last; i++) {
            if (mounts.get(i).storage() == storage) {
                return (long) (i + 1) << 56;
            }
        }
        return 0;
    }

    private static Metadata tagged(Metadata m, long tag) {
        if (m == null) {
            return null;
        }
        return new Metadata(m.kind(), m.size(), m.created(), m.modified(), m.accessed(), m.changed(), m.links(),
                m.mode(), taggedInode(m.inode(), tag), m.blocks(), m.device());
    }

    /** A handle of a store whose inode numbers carry a tag. */
    private record TaggedHandle(FileHandle h, long tag) implements FileHandle {
        @Override
        public int read(java.nio.ByteBuffer dst, long position) throws IOException {
            return h.read(dst, position);
        }

        @Override
        public int write(java.nio.ByteBuffer src, long position) throws IOException {
            return h.write(src, position);
        }

        @Override
        public int writeInPlace(java.nio.ByteBuffer src, long position) throws IOException {
            return h.writeInPlace(src, position);
        }

        @Override
        public void truncate(long size) throws IOException {
            h.truncate(size);
        }

        @Override
        public void allocate(int mode, long offset, long length) throws IOException {
            h.allocate(mode, offset, length);
        }

        @Override
        public void sync(boolean metadata) throws IOException {
            h.sync(metadata);
        }

        @Override
        public void closedOnce() throws IOException {
            h.closedOnce();
        }

        @Override
        public boolean hearsCloses() {
            return h.hearsCloses();
        }

        @Override
        public long inode() throws IOException {
            return taggedInode(h.inode(), tag);
        }

        @Override
        public Metadata opened() {
            return tagged(h.opened(), tag);
        }

        @Override
        public Metadata metadata() throws IOException {
            return tagged(h.metadata(), tag);
        }

        @Override
        public long size() throws IOException {
            return h.size();
        }

        @Override
        public void setTimes(FileTime accessed, FileTime modified) throws IOException {
            h.setTimes(accessed, modified);
        }

        @Override
        public void setExecutable(int mode) throws IOException {
            h.setExecutable(mode);
        }

        @Override
        public FileLocks locks() throws IOException {
            return h.locks();
        }

        @Override
        public byte[] xattr(String name) throws IOException {
            return h.xattr(name);
        }

        @Override
        public List<String> xattrNames() throws IOException {
            return h.xattrNames();
        }

        @Override
        public void setXattr(String name, byte[] value, XattrMode mode) throws IOException {
            h.setXattr(name, value, mode);
        }

        @Override
        public void removeXattr(String name) throws IOException {
            h.removeXattr(name);
        }

        @Override
        public int passthroughDescriptor() throws IOException {
            return h.passthroughDescriptor();
        }

        @Override
        public FileHandle reopen(Set<OpenFlag> flags) throws IOException {
            FileHandle again = h.reopen(flags);
            return again == null ? null : new TaggedHandle(again, tag);
        }

        @Override
        public void copiedHere(FileHandle from, long fromOffset, long toOffset, long length) throws IOException {
            h.copiedHere(from instanceof TaggedHandle t ? t.h() : from, fromOffset, toOffset, length);
        }

        @Override
        public void close() throws IOException {
            h.close();
        }
    }

    public String readLink(Caller caller, VfsPath path) throws IOException {
        Target t = resolve(path);
        return t.storage().readLink(t.path());
    }

    public SpaceInfo space(VfsPath path) throws IOException {
        return resolve(path).storage().space();
    }

    // ---- writes: policy first, so a denied write touches nothing ----

    public void write(Caller caller, VfsPath path, byte[] data) throws IOException {
        write(caller, path, data, Precondition.NONE);
    }

    public void append(Caller caller, VfsPath path, byte[] data) throws IOException {
        append(caller, path, data, Precondition.NONE);
    }

    /** A conditional write (--if-match, --if-none-match): the store checks and writes as one step. */
    public void write(Caller caller, VfsPath path, byte[] data, Precondition condition) throws IOException {
        checkWrite(caller, path);
        Target t = fileCreatable(path);
        t.storage().write(t.path(), data, condition, stillMayWrite(caller, path));
    }

    /**
     * {@link #write(Caller, VfsPath, byte[], Precondition)} of what {@code data} gives to its end,
     * as the store's {@link Storage#write(VfsPath, java.io.InputStream, Precondition, Storage.Guard)}
     * takes it (a buffer at a time where it can); the policy is judged before a byte is read.
     */
    public void write(Caller caller, VfsPath path, java.io.InputStream data, Precondition condition) throws IOException {
        checkWrite(caller, path);
        Target t = fileCreatable(path);
        t.storage().write(t.path(), data, condition, stillMayWrite(caller, path));
    }

    public void append(Caller caller, VfsPath path, byte[] data, Precondition condition) throws IOException {
        checkWrite(caller, path);
        Target t = fileCreatable(path);
        t.storage().append(t.path(), data, condition, stillMayWrite(caller, path));
    }

    /** Replaces a file with what {@code rewrite} makes of its content, read as the store's {@link Storage#rewrite} says. */
    public void rewrite(Caller caller, VfsPath path, Storage.Rewrite rewrite, Precondition condition) throws IOException {
        checkWrite(caller, path);
        Target t = fileCreatable(path);
        t.storage().rewrite(t.path(), rewrite, condition, stillMayWrite(caller, path));
    }

    /**
     * The policy judged again when the store makes the change: a change waits for the file's
     * locks (up to --lock-wait), and a context removed from a flock meanwhile is refused then,
     * as at its next request, not let through on the answer it got before the wait.
     */
    private Storage.Guard stillMayWrite(Caller caller, VfsPath path) {
        return () -> checkWrite(caller, path);
    }

    /** The ETag of a file (everyone may read it). */
    public String etag(Caller caller, VfsPath path) throws IOException {
        Target t = resolve(path);
        return t.storage().etag(t.path());
    }

    public void delete(Caller caller, VfsPath path) throws IOException {
        checkRemove(caller, path);
        Target t = writable(path);
        t.storage().delete(t.path());
    }

    public void mkdir(Caller caller, VfsPath path) throws IOException {
        checkWrite(caller, path);
        if (isMountPoint(path)) {
            return; // the mounted store's root is a directory already
        }
        Target t = creatable(path);
        t.storage().mkdir(t.path());
    }

    /**
     * Makes the missing directories above {@code path}, one mkdir(2) each, for a change about to
     * create it (the vfs commands' write, append, cp, mv), and hands them back so that a change
     * that fails removes them again: a failed change leaves no trace. The policy judges the parent,
     * as {@link #mkdir} does (who may write {@code /home/bob/x} may make {@code /home} on the way).
     * One that another process made meanwhile (EEXIST) is not this change's, so never removed.
     */
    public MadeParents makeParents(Caller caller, VfsPath path) throws IOException {
        VfsPath parent = path.parent();
        MadeParents made = new MadeParents();
        if (parent == null || parent.isRoot()) {
            return made;
        }
        checkWrite(caller, parent);
        Deque<VfsPath> missing = new ArrayDeque<>();
        for (VfsPath p = parent; !p.isRoot() && !isMountPoint(p) && !exists(caller, p); p = p.parent()) {
            missing.push(p);
        }
        try {
            for (VfsPath p : missing) {
                Target t = creatable(p);
                try {
                    t.storage().createDirectory(t.path());
                    made.deepestFirst.add(0, new Made(p, t.storage().metadata(t.path())));
                } catch (IOException e) {
                    if (Errors.errno(e) != Linux.EEXIST) {
                        throw e;
                    }
                    // made by another process between the look and the mkdir: used, and left to it
                }
            }
        } catch (IOException | RuntimeException e) {
            made.close();
            throw e;
        }
        if (!made.deepestFirst.isEmpty()) {
            unsettled(made);
        }
        return made;
    }

    /**
     * The {@link MadeParents} of changes still under way, removed by a shutdown hook: SIGINT,
     * SIGTERM and SIGHUP (Ctrl-C on a write reading a slow pipe) end the JVM through its shutdown
     * hooks without unwinding the change's try, which left the parents it made, empty. The store's
     * named temporaries are removed the same way; kill -9 runs nothing.
     */
    private static final Set<MadeParents> UNSETTLED = new HashSet<>();
    private static boolean unsettledHooked;

    private static void unsettled(MadeParents made) {
        synchronized (UNSETTLED) {
            if (!unsettledHooked) {
                try {
                    Runtime.getRuntime().addShutdownHook(new Thread(Router::removeUnsettledParents, "chibifs-made-parents"));
                    unsettledHooked = true;
                } catch (IllegalStateException exiting) {
                    // the JVM is already on its way out: the change's own close, if it runs, removes them
                }
            }
            UNSETTLED.add(made);
        }
    }

    private static void settled(MadeParents made) {
        synchronized (UNSETTLED) {
            UNSETTLED.remove(made);
        }
    }

    /** Removes the parents of every change still under way, as the shutdown hook does. */
    static void removeUnsettledParents() {
        List<MadeParents> all;
        synchronized (UNSETTLED) {
            all = new ArrayList<>(UNSETTLED);
        }
        // each closed outside the set's lock: close takes its own, then the set's, as keep does
        all.forEach(MadeParents::close);
    }

    /**
     * The directories {@link #makeParents} made for one change: {@link #close} removes them again,
     * deepest first and each only while empty (rmdir), unless the change succeeded and said
     * {@link #keep}, never a zone root ({@code /home/<ctx>} and the like stay, as {@link
     * ZonePolicy#mayRemove} keeps them), and each only while its name still holds the directory made (another process
     * may have moved ours away and made its own there: by path alone, theirs went and ours stayed).
     * The race left open, as with any rmdir: another process that found one of them
     * there (its mkdir -p, its write) and had not put anything in it yet finds it gone (ENOENT);
     * one that did put something in keeps it, and the directories above it.
     */
    public final class MadeParents implements AutoCloseable {
        private final List<Made> deepestFirst = new ArrayList<>();
        private boolean kept;

        private MadeParents() {
        }

        /** The change succeeded: what it made stays. */
        public synchronized void keep() {
            kept = true;
            settled(this);
        }

        @Override
        public synchronized void close() {
            if (kept) {
                return;
            }
            kept = true;
            settled(this);
            for (Made m : deepestFirst) {
                if (ZonePolicy.isZoneRoot(m.path)) {
                    // kept as the namespace's own: a mount started meanwhile found it there and took it
                    // for its skeleton, and every one above it is a zone root too
                    return;
                }
                try {
                    Target t = writable(m.path);
                    if (!t.storage().removeDirectoryIfSame(t.path(), m.directory)) {
                        return; // not ours at that name now: what is above it holds it
                    }
                } catch (IOException | RuntimeException inUseOrGone) {
                    return; // what is above it is not empty either
                }
            }
        }
    }

    /** One directory {@link #makeParents} made: its path, and what it was right after the mkdir. */
    private record Made(VfsPath path, Metadata directory) {
    }

    /** Copies a file: read on the source (always), write on the destination. */
    public void copy(Caller caller, VfsPath src, VfsPath dst) throws IOException {
        checkWrite(caller, dst);
        Target ts = resolve(src);
        Target td = fileCreatable(dst);
        Storage.Guard guard = stillMayWrite(caller, dst);
        if (ts.storage() == td.storage()) {
            ts.storage().copy(ts.path(), td.path(), guard);
        } else {
            td.storage().write(td.path(), ts.storage().read(ts.path()), Precondition.NONE, guard);
        }
    }

    /**
     * Renames: write on both names, and neither may be a zone root. A symbolic link moved, or one
     * inside a moved directory, must keep its target inside its (new) zone, and a file moved into
     * another zone may leave no hard link behind outside what moves; else EXDEV: mv then copies,
     * recreating link by link through {@link #symlink}, where the rule refuses only the links that
     * would leave (EPERM, naming each), and the source stays for what did not copy.
     */
    public void rename(Caller caller, VfsPath src, VfsPath dst) throws IOException {
        rename(caller, src, dst, RenameMode.REPLACE);
    }

    /** renameat2(2): {@link #rename(Caller, VfsPath, VfsPath)} as {@code mode} says; an exchange moves both names, so both carry their links. */
    public void rename(Caller caller, VfsPath src, VfsPath dst, RenameMode mode) throws IOException {
        checkRemovePolicy(caller, src);
        checkRemovePolicy(caller, dst);
        checkNotBusy(src);
        checkNotBusy(dst);
        // across stores first, as Linux answers EXDEV before EROFS: mv then copies out of a read-only store
        Target ts = resolve(src);
        Target td = sameStorage(src, dst, ts);
        writable(src);
        creatable(dst); // what holds a mount point is busy, above
        boolean crossZone = !ZonePolicy.zoneRoot(src).equals(ZonePolicy.zoneRoot(dst));
        if (symlinks == SymlinkRule.ANY && !crossZone) {
            ts.storage().rename(ts.path(), td.path(), mode); // carries nothing that is judged
            return;
        }
        // into another zone: judged and moved with every other move and hard link held out (rare)
        for (boolean exclusive = crossZone; ; exclusive = true) {
            try (Storage.MoveLock held = lockMoves(ts.storage(), exclusive)) {
                if (!exclusive && (carriesLinks(ts) || mode == RenameMode.EXCHANGE && carriesLinks(td))) {
                    continue; // a link or a directory: judged and moved with every other move held out
                }
                if (exclusive) {
                    checkCarried(ts, src, dst);
                    if (mode == RenameMode.EXCHANGE) {
                        checkCarried(td, dst, src);
                    }
                }
                ts.storage().rename(ts.path(), td.path(), mode);
                return;
            }
        }
    }

    /**
     * Holds the moves that could carry a symbolic link out of its zone apart, in this process
     * ({@link #moves}) and in every process using {@code storage} ({@link Storage#lockMoves}), so
     * that no link is placed between a move's judgement and the move itself.
     *
     * <p>The race it closes: a rename of a directory judged by walking it (the links it carries)
     * while another thread, mount or vfs command makes a link deep inside it, whose target is
     * inside the zone where it is made and outside it once the directory is moved up; the kernel
     * locks only the directories a rename names, never the moved directory's subdirectories.
     * Hence: whatever places a link (a symlink made, a link or a directory moved, a hard link of a
     * link) does so exclusively, and every other rename or hard link holds the lock shared while it
     * finds that what it moves is none of those. Under a shared lock nothing can place a link, so a
     * name found to be a file stays free of links until the move is made (it may become an empty
     * directory, or one of plain files, which carry none). Unlocked changes (mkdir, create, unlink)
     * place none.
     *
     * <p>The same for hard links, with {@code --symlinks any} too: a move into another zone counts
     * the names of what it moves exclusively, and every hard link is made under the shared lock, so
     * none is added to a file between that count and the move.
     */
    private Storage.MoveLock lockMoves(Storage storage, boolean exclusive) throws IOException {
        ReentrantReadWriteLock both = moves.computeIfAbsent(storage, any -> new ReentrantReadWriteLock());
        Lock lock = exclusive ? both.writeLock() : both.readLock();
        lock.lock();
        try {
            Storage.MoveLock inStore = storage.lockMoves(exclusive);
            return () -> {
                try {
                    inStore.close();
                } finally {
                    lock.unlock();
                }
            };
        } catch (IOException | RuntimeException | Error e) {
            lock.unlock();
            throw e;
        }
    }

    /** Whether {@code t} is a symbolic link or a directory: what must move under the exclusive {@link #lockMoves}. */
    private static boolean carriesLinks(Target t) throws IOException {
        EntryKind kind = t.storage().metadata(t.path()).kind();
        return kind == EntryKind.SYMLINK || kind == EntryKind.DIRECTORY;
    }

    /**
     * Refuses (EXDEV) a move of {@code src} to {@code dst} that would carry what must not go: a
     * symbolic link to where its target leaves the zone (the link itself, or any link in a moved
     * directory, walked whole), or, into another zone, a file with a hard link outside what moves.
     * Such a link would stay a second name of the file in the zone it left, writable there by
     * whoever that zone lets write (bob links alice's draft in /shared, alice moves it home, and
     * bob's name writes it in her home). Called under the exclusive {@link #lockMoves}, so no
     * link of either kind is placed meanwhile.
     *
     * <p>A link's target is judged from the link's directory, so only the depth of that directory
     * below its zone root matters: a move that stays in the same (non-root) zone and goes no
     * shallower cannot make any target leave, and is not walked (zones do not nest below a zone
     * root other than {@code /}, as in chibi). Any other move of a directory is walked: cross-zone
     * moves are rare and correctness beats speed there.
     */
    private void checkCarried(Target ts, VfsPath src, VfsPath dst) throws IOException {
        if (src.equals(dst)) {
            return;
        }
        boolean judgeLinks = symlinks != SymlinkRule.ANY;
        VfsPath zone = ZonePolicy.zoneRoot(src);
        boolean crossZone = !zone.equals(ZonePolicy.zoneRoot(dst));
        Metadata m = ts.storage().metadata(ts.path());
        if (!m.isDirectory()) {
            // a file, a symbolic link, a fifo or a socket: any of them may have other names
            if (crossZone && m.links() > 1) {
                throw hardLinksLeft(src, dst, src);
            }
            if (m.kind() == EntryKind.SYMLINK && judgeLinks) {
                checkCarried(src, dst, ts.storage().readLink(ts.path()));
            }
            return;
        }
        boolean walkLinks = judgeLinks && (zone.isRoot() || crossZone || dst.depth() < src.depth());
        if (!walkLinks && !crossZone) {
            return;
        }
        // a file's names not met in the tree yet, by inode: one left at the end stays behind
        Map<Long, Long> namesLeft = new HashMap<>();
        Map<Long, VfsPath> firstMet = new HashMap<>();
        // depth first with a stack of our own: a deep tree must not overflow the thread's
        Deque<VfsPath> todo = new ArrayDeque<>();
        todo.push(VfsPath.root());
        while (!todo.isEmpty()) {
            VfsPath rel = todo.pop();
            VfsPath inner = join(ts.path(), rel);
            for (Entry e : ts.storage().list(inner)) {
                if (e.kind() == EntryKind.DIRECTORY) {
                    todo.push(rel.child(e.name()));
                    continue;
                }
                if (e.kind() == EntryKind.SYMLINK && walkLinks) {
                    checkCarried(join(src, rel).child(e.name()), join(dst, rel).child(e.name()),
                            ts.storage().readLink(inner.child(e.name())));
                }
                if (crossZone) {
                    Metadata f = ts.storage().metadata(inner.child(e.name()));
                    if (f.links() > 1) {
                        namesLeft.merge(f.inode(), f.links() - 1, (left, one) -> left - 1);
                        firstMet.putIfAbsent(f.inode(), join(src, rel).child(e.name()));
                    }
                }
            }
        }
        for (Map.Entry<Long, Long> left : namesLeft.entrySet()) {
            if (left.getValue() > 0) {
                throw hardLinksLeft(src, dst, firstMet.get(left.getKey()));
            }
        }
    }

    private CrossDeviceException hardLinksLeft(VfsPath src, VfsPath dst, VfsPath file) {
        LOG.debug("rename of {} to {}: refused (EXDEV): {} has a hard link that would stay in {}", src, dst, file,
                ZonePolicy.zoneRoot(src));
        return new CrossDeviceException(src.toString(), dst.toString(), "moving '" + src + "' to '" + dst
                + "' is refused: '" + file + "' has a hard link outside it, which would stay a name of the file in "
                + ZonePolicy.zoneRoot(src));
    }

    /** {@code base} with the relative path {@code rel} (given as a path from the root) below it. */
    private static VfsPath join(VfsPath base, VfsPath rel) {
        VfsPath p = base;
        for (String s : rel.segments()) {
            p = p.child(s);
        }
        return p;
    }

    private void checkCarried(VfsPath from, VfsPath to, String target) throws IOException {
        String why = symlinks.carryRefusal(to, target);
        if (why != null) {
            LOG.debug("rename would move symbolic link {} -> {} to {}: refused (EXDEV): {}", from, target, to, why);
            throw new CrossDeviceException(from.toString(), to.toString(), "moving the symbolic link '" + from
                    + "' -> '" + target + "' to '" + to + "' is refused (--symlinks " + symlinks.option() + "): " + why);
        }
    }

    /**
     * Opens a file; any flag that could change it (write, append, create, truncate) needs write
     * permission, so a denied create leaves no file behind.
     */
    public FileHandle open(Caller caller, VfsPath path, Set<OpenFlag> flags, int createMode) throws IOException {
        mayOpen(caller, path, flags);
        Target t = resolve(path);
        return tagged(t.storage().open(t.path(), flags, createMode), t.storage());
    }

    /**
     * The file at {@code path} held by what it is (see {@link Storage#hold}), its metadata and opens
     * tagged as {@link #metadata} and {@link #open} tag them; null where the store holds no such file.
     */
    public HeldFile hold(VfsPath path) throws IOException {
        Target t = resolve(path);
        HeldFile held = t.storage().hold(t.path());
        long tag = tagOf(t.storage());
        if (held == null || tag == 0) {
            return held;
        }
        return new HeldFile() {
            @Override
            public Metadata metadata() throws IOException {
                return tagged(held.metadata(), tag);
            }

            @Override
            public FileHandle open(Set<OpenFlag> flags) throws IOException {
                return new TaggedHandle(held.open(flags), tag);
            }

            @Override
            public void close() {
                held.close();
            }
        };
    }

    /** {@link #open} of the file {@code held} at {@code path} (which may name another file by now): the policy of {@code path}. */
    public FileHandle open(Caller caller, VfsPath path, HeldFile held, Set<OpenFlag> flags) throws IOException {
        mayOpen(caller, path, flags);
        return held.open(flags);
    }

    /**
     * The path the policy judges a change made through open {@code handle} (one of this router's,
     * last known as {@code last}) by: where its file is now, since it may have moved behind the
     * mount, perhaps into a zone that protects it. {@code last} where it still names that very file
     * (the common case, asked of the store by name); else where the store says the file is
     * ({@link Storage#pathOf}); else {@code last} for a file with no name left.
     *
     * @throws ErrnoException ESTALE where the file has a name the store cannot tell, or one that
     *         lands in another store mounted over it now
     */
    public VfsPath whereNow(FileHandle handle, VfsPath last) throws IOException {
        Mount m = mountOf(mounts, last);
        FileHandle own = handle instanceof TaggedHandle t ? t.h() : handle;
        if (names(m.storage(), resolve(last).path(), own)) {
            return last;
        }
        VfsPath inStore = m.storage().pathOf(own);
        VfsPath now = inStore == null ? null : join(m.prefix(), inStore);
        if (now != null && mountOf(mounts, now) == m) {
            return now;
        }
        if (inStore == null && own.metadata().links() == 0) {
            return last;
        }
        throw ErrnoException.of(Linux.ESTALE, last.toString(), "where its file is now is not known");
    }

    /** Whether {@code path} in {@code storage} names the file open as {@code handle} (a name, not a link to it). */
    private static boolean names(Storage storage, VfsPath path, FileHandle handle) throws IOException {
        try {
            Metadata m = storage.metadata(path);
            return m.kind() == EntryKind.FILE && m.links() > 0 && m.inode() == handle.inode();
        } catch (java.nio.file.NoSuchFileException | java.nio.file.NotDirectoryException gone) {
            return false;
        }
    }

    /**
     * {@link #open} of the file {@code open} (a handle from this router) is open on, whatever its
     * names now, none too (see {@link FileHandle#reopen}): the policy of {@code path}, its last
     * name. Null where its store opens files by name only.
     */
    public FileHandle reopen(Caller caller, VfsPath path, FileHandle open, Set<OpenFlag> flags) throws IOException {
        mayOpen(caller, path, flags);
        return open.reopen(flags);
    }

    private void mayOpen(Caller caller, VfsPath path, Set<OpenFlag> flags) throws IOException {
        if (flags.contains(OpenFlag.WRITE) || flags.contains(OpenFlag.APPEND) || flags.contains(OpenFlag.CREATE)
                || flags.contains(OpenFlag.CREATE_NEW) || flags.contains(OpenFlag.TRUNCATE)) {
            checkWrite(caller, path);
            if (flags.contains(OpenFlag.CREATE) || flags.contains(OpenFlag.CREATE_NEW)) {
                fileCreatable(path);
            } else {
                writable(path);
            }
        }
    }

    private FileHandle tagged(FileHandle h, Storage storage) {
        long tag = tagOf(storage);
        return tag == 0 ? h : new TaggedHandle(h, tag);
    }

    public void truncate(Caller caller, VfsPath path, long size) throws IOException {
        checkWrite(caller, path);
        Target t = writable(path);
        t.storage().truncate(t.path(), size);
    }

    public void createDirectory(Caller caller, VfsPath path) throws IOException {
        checkWrite(caller, path);
        Target t = creatable(path);
        t.storage().createDirectory(t.path());
    }

    public void removeFile(Caller caller, VfsPath path) throws IOException {
        checkRemove(caller, path);
        Target t = writable(path);
        t.storage().removeFile(t.path());
    }

    public void removeDirectory(Caller caller, VfsPath path) throws IOException {
        checkRemovePolicy(caller, path);
        if (!isMountPoint(path) && mountPointBelow(path).isPresent()) {
            // its listing shows what leads to the mount point, whatever its own store holds: not empty
            throw Errors.of(Linux.ENOTEMPTY, path.toString());
        }
        checkNotBusy(path);
        Target t = writable(path);
        t.storage().removeDirectory(t.path());
    }

    public void setTimes(Caller caller, VfsPath path, FileTime accessed, FileTime modified) throws IOException {
        checkWrite(caller, path);
        Target t = writable(path);
        t.storage().setTimes(t.path(), accessed, modified);
    }

    /** An extended attribute's value (everyone may read it). */
    public byte[] xattr(Caller caller, VfsPath path, String name) throws IOException {
        Target t = resolve(path);
        return t.storage().xattr(t.path(), name);
    }

    /** The names of a path's extended attributes (everyone may read them). */
    public List<String> xattrNames(Caller caller, VfsPath path) throws IOException {
        Target t = resolve(path);
        return t.storage().xattrNames(t.path());
    }

    /** setxattr: allowed where the caller may write, as setting any attribute is. */
    public void setXattr(Caller caller, VfsPath path, String name, byte[] value, XattrMode mode) throws IOException {
        checkWrite(caller, path);
        Target t = writable(path);
        t.storage().setXattr(t.path(), name, value, mode);
    }

    /** removexattr: allowed where the caller may write. */
    public void removeXattr(Caller caller, VfsPath path, String name) throws IOException {
        checkWrite(caller, path);
        Target t = writable(path);
        t.storage().removeXattr(t.path(), name);
    }

    /** chmod: allowed where the caller may write; only the execute bits reach the store, and they grant nothing. */
    public void chmod(Caller caller, VfsPath path, int mode) throws IOException {
        checkWrite(caller, path);
        Target t = writable(path);
        t.storage().setExecutable(t.path(), mode);
    }

    /**
     * chown: allowed where the caller may write, and stores nothing (path is policy, owners grant
     * nothing); the ctime moves, and a read-only store refuses it, as on a disk.
     */
    public void chown(Caller caller, VfsPath path) throws IOException {
        checkWrite(caller, path);
        Target t = writable(path);
        t.storage().ownerAsked(t.path());
    }

    /**
     * chown(f, -1, -1), which names no owner: a disk lets anyone ask it, and moves the ctime, or
     * refuses it EROFS where the file system is read-only, as a store here does (it answered 0).
     */
    public void chownToNone(VfsPath path) throws IOException {
        Target t = writable(path);
        t.storage().ownerAsked(t.path());
    }

    /**
     * Hard link, only inside one zone, so no file gets a writable name in a zone that protects it.
     * A hard link of a symbolic link is a link in another directory, judged there as a rename is
     * (EPERM, as symlink: nothing would copy it instead).
     */
    public void link(Caller caller, VfsPath existing, VfsPath newName) throws IOException {
        checkLink(caller, existing, newName);
        Target te = resolve(existing);
        Target tn = sameStorage(existing, newName, te);
        writable(existing);
        fileCreatable(newName);
        // shared at least: a move into another zone counts a file's names (see checkCarried)
        for (boolean exclusive = false; ; exclusive = true) {
            try (Storage.MoveLock held = lockMoves(te.storage(), exclusive)) {
                boolean link = symlinks != SymlinkRule.ANY && te.storage().metadata(te.path()).kind() == EntryKind.SYMLINK;
                if (link && !exclusive) {
                    continue; // a link placed anew: with every other move held out (see lockMoves)
                }
                if (link) {
                    String target = te.storage().readLink(te.path());
                    String why = symlinks.carryRefusal(newName, target);
                    if (why != null) {
                        throw denied(newName, target, why);
                    }
                }
                te.storage().link(te.path(), tn.path());
                return;
            }
        }
    }

    /**
     * EACCES where the caller may not write one of the names (a link would make a file it may not
     * write writable elsewhere); EXDEV where it may write both but they are in two zones: as between
     * two file systems, programs that link where they can (git, cargo, pnpm) then copy.
     */
    private void checkLink(Caller caller, VfsPath existing, VfsPath newName) throws IOException {
        if (!ZonePolicy.mayLink(caller, existing, newName, membership)) {
            if (mayWrite(caller, existing) && mayWrite(caller, newName)) {
                throw new CrossDeviceException(existing.toString(), newName.toString(),
                        "hard links cannot cross zones ('" + existing + "' -> '" + newName + "')");
            }
            VfsPath denied = mayWrite(caller, newName) ? existing : newName;
            throw new PolicyDeniedException(newName.toString(), ZonePolicy.denial(caller, denied, membership));
        }
    }

    /**
     * The path an unnamed file in {@code directory} goes by for the policy and in messages: a new
     * name there, which is what open(2) with O_TMPFILE makes as far as the policy is concerned.
     */
    public static VfsPath unnamedIn(VfsPath directory) {
        return directory.child(UNNAMED);
    }

    /**
     * open(2) with O_TMPFILE: a file with no name in {@code directory} (see {@link Storage#openUnnamed}),
     * where the caller may make a new name, so a denied one leaves nothing, as a denied create does.
     */
    public FileHandle openUnnamed(Caller caller, VfsPath directory, int mode) throws IOException {
        VfsPath name = unnamedIn(directory);
        checkWrite(caller, name);
        Target t = creatable(name);
        return tagged(t.storage().openUnnamed(t.path().parent(), mode), t.storage());
    }

    /**
     * linkat(2) of an open file ({@code handle}, from this router), last known as {@code lastName}
     * (an unnamed file's {@link #unnamedIn}): {@link #link}'s rules, one zone and one store.
     */
    public void link(Caller caller, FileHandle handle, VfsPath lastName, VfsPath newName) throws IOException {
        Target tn = sameStorage(lastName, newName, writable(lastName));
        fileCreatable(newName);
        // shared: a move into another zone counts the file's names meanwhile (see checkCarried), so
        // where the file is stays so until the link is made; judged there
        try (Storage.MoveLock held = lockMoves(tn.storage(), false)) {
            checkLink(caller, whereNow(handle, lastName), newName);
            tn.storage().link(handle instanceof TaggedHandle tagged ? tagged.h() : handle, tn.path());
        }
    }

    /** The rule that judges symbolic link targets here. */
    SymlinkRule symlinkRule() {
        return symlinks;
    }

    /**
     * symlink(2): a write of {@code link} in its zone (EACCES where the caller may not write), then
     * the link rule on {@code target} (EPERM, {@link SymlinkDeniedException}, with one debug line).
     * The target is stored as text; nothing here or in the store follows it.
     */
    public void symlink(Caller caller, VfsPath link, String target) throws IOException {
        checkWrite(caller, link);
        Target t = fileCreatable(link);
        String why = symlinks.refusal(link, target);
        if (why != null) {
            throw denied(link, target, why);
        }
        // judged by where it is made: no directory above it may move up meanwhile (see lockMoves)
        try (Storage.MoveLock held = symlinks == SymlinkRule.ANY ? Storage.MoveLock.NONE : lockMoves(t.storage(), true)) {
            t.storage().createSymlink(t.path(), target);
        }
    }

    private SymlinkDeniedException denied(VfsPath link, String target, String why) {
        LOG.debug("symbolic link {} -> {}: refused (--symlinks {}): {}", link, target, symlinks.option(), why);
        return new SymlinkDeniedException(link.toString(), "symbolic link '" + link + "' -> '" + target
                + "' refused (--symlinks " + symlinks.option() + "): " + why);
    }

    /**
     * mknod(2): a write of {@code path} (EACCES where the caller may not write). Fifos and sockets
     * are names the store keeps (the kernel serves a fifo's data itself; the daemon never opens one);
     * a FILE is an empty regular file; device nodes, and anything else, are refused (EPERM): a device
     * node in a shared tree is a way out of every sandbox.
     */
    public void mknod(Caller caller, VfsPath path, EntryKind kind, int mode) throws IOException {
        checkWrite(caller, path);
        Target t = fileCreatable(path);
        switch (kind) {
            case FIFO, SOCKET -> t.storage().createNode(t.path(), kind, mode);
            case FILE -> t.storage().open(t.path(), Set.of(OpenFlag.WRITE, OpenFlag.CREATE_NEW), mode).close();
            default -> throw new OperationNotPermittedException(path.toString(),
                    "only files, fifos and sockets can be made with mknod: device nodes are refused,"
                            + " a device node in a shared tree is a way out of every sandbox");
        }
    }

    /**
     * Changes to names in followed directories of every storage, whoever makes them: a key from
     * {@link ChangeFeed#follow} (of a namespace path) tells the listener which directory. Reading
     * needs no permission, so this checks none.
     */
    public ChangeFeed changes(ChangeListener listener) {
        if (mounts.size() == 1) {
            return mounts.get(0).storage().changes(listener);
        }
        List<ChangeFeed> feeds = new ArrayList<>();
        for (int i = 0; i < mounts.size(); i++) {
            feeds.add(mounts.get(i).storage().changes(new KeyedListener(listener, (long) i << 32)));
        }
        return new ChangeFeed() {
            // the root store decides: a directory of a store that cannot be followed (memory, a
            // view) fails its follow and keeps brief kernel timeouts, the rest keeps the long ones
            @Override
            public boolean active() {
                return feeds.get(feeds.size() - 1).active();
            }

            @Override
            public long follow(VfsPath directory) {
                Target t = resolve(directory);
                for (int i = 0; i < mounts.size(); i++) {
                    if (mounts.get(i).storage() == t.storage()) {
                        long key = feeds.get(i).follow(t.path());
                        return key < 0 ? -1 : (long) i << 32 | key;
                    }
                }
                return -1;
            }

            @Override
            public void unfollow(long key) {
                feeds.get((int) (key >>> 32)).unfollow(key & 0xffffffffL);
            }

            @Override
            public void catchUp() {
                feeds.forEach(ChangeFeed::catchUp);
            }

            @Override
            public void close() {
                feeds.forEach(ChangeFeed::close);
            }
        };
    }

    /** One storage's events, with its index in the high half of every key. */
    private record KeyedListener(ChangeListener listener, long high) implements ChangeListener {
        @Override
        public void changed(long dir, String name, boolean renamed, boolean modified) {
            listener.changed(high | dir, name, renamed, modified);
        }

        @Override
        public void removed(long dir, String name) {
            listener.removed(high | dir, name);
        }

        @Override
        public void directoryChanged(long dir) {
            listener.directoryChanged(high | dir);
        }

        @Override
        public void directoryGone(long dir) {
            listener.directoryGone(high | dir);
        }

        @Override
        public void eventsLost() {
            listener.eventsLost();
        }

        @Override
        public void storeReplaced() {
            listener.storeReplaced();
        }

        @Override
        public void batchTold() {
            listener.batchTold();
        }
    }

    /**
     * The directories {@link #createNamespace} makes where they are missing, parents first: the zone
     * roots and the homes of {@code contexts}. A mount's check that the store can be written looks
     * only where one is missing: a store set up whole by another user mounts as it is.
     */
    public static List<String> namespaceDirectories(Collection<String> contexts) {
        List<String> dirs = new ArrayList<>(List.of("/shared", "/home", "/sys", "/sys/tool_cache",
                "/site", "/flocks", "/tools", "/tools/shared", "/tools/home", "/tools/flocks"));
        for (String c : contexts) {
            // a context may write its own /home and /tools/home, but make neither: their parents are SYSTEM's
            dirs.add("/home/" + Caller.context(c).name());
            dirs.add("/tools/home/" + Caller.context(c).name());
        }
        return dirs;
    }

    /**
     * Creates the zone roots ({@code /shared}, {@code /home}, {@code /sys}, {@code /sys/tool_cache},
     * and chibi 0.10's {@code /site}, {@code /flocks}, {@code /tools}, {@code /tools/shared},
     * {@code /tools/home}, {@code /tools/flocks}), the home and tools home of every named context,
     * and the parents of every store's mount point, as SYSTEM; what
     * exists already is left alone, so a read-only store at one of them is no failure.
     */
    public void createNamespace(Collection<String> contexts) throws IOException {
        List<String> dirs = namespaceDirectories(contexts);
        // the namespace's own, sorted: what a read-only store lacking them is told it lacks
        java.util.SortedSet<String> own = new java.util.TreeSet<>(dirs);
        // the directories a store's mount point is reached through, with (one of) the prefixes needing them
        Map<String, VfsPath> reachingPrefix = new HashMap<>();
        for (Mount m : mounts) {
            for (VfsPath p = m.prefix().parent(); p != null && !p.isRoot(); p = p.parent()) {
                dirs.add(p.toString());
                reachingPrefix.putIfAbsent(p.toString(), m.prefix());
            }
        }
        dirs.sort(Comparator.comparingInt(String::length));
        IOException away = null;
        for (String d : dirs) {
            VfsPath p = VfsPath.of(d);
            try {
                makeIfMissing(p, reachingPrefix.get(d));
            } catch (UnreachablePrefixException | ErrnoException e) {
                if (readOnly(e) && own.contains(d)) {
                    // an empty read-only store: what it lacks, not a prefix the user never gave, is the story
                    throw lacking(own, p, e);
                }
                if (e instanceof UnreachablePrefixException) {
                    throw e;
                }
                if (!mayWaitLong(p)) {
                    throw e;
                }
                away = away == null ? e : away;
            } catch (IOException e) {
                if (!mayWaitLong(p)) {
                    throw e;
                }
                // a store across a network that does not answer (S3 away): the others' are made
                away = away == null ? e : away;
            }
        }
        if (away != null) {
            throw new StoreAwayException(away);
        }
    }

    private static boolean readOnly(IOException e) {
        Throwable c = e instanceof UnreachablePrefixException ? e.getCause() : e;
        return c instanceof ErrnoException x && x.errno() == Linux.EROFS;
    }

    /** {@code failure}, making {@code failed}, said as what its read-only store lacks of {@code dirs}. */
    private ReadOnlyStoreLacksException lacking(java.util.SortedSet<String> dirs, VfsPath failed, IOException failure)
            throws IOException {
        Storage store = resolve(failed).storage();
        List<String> missing = new ArrayList<>();
        for (String d : dirs) {
            VfsPath p = VfsPath.of(d);
            if (resolve(p).storage() == store && !exists(Caller.SYSTEM, p)) {
                missing.add(d);
            }
        }
        ReadOnlyStoreLacksException e = new ReadOnlyStoreLacksException(mountOf(mounts, failed).prefix(), missing);
        e.initCause(failure);
        return e;
    }

    /** Makes directory {@code p} as SYSTEM where it is missing; {@code prefix}: a store's mount point it leads to, or null. */
    private void makeIfMissing(VfsPath p, VfsPath prefix) throws IOException {
        if (exists(Caller.SYSTEM, p)) {
            if (prefix != null && !isMountPoint(p) && !metadata(Caller.SYSTEM, p).isDirectory()) {
                throw new UnreachablePrefixException(prefix, p + " is not a directory in its store");
            }
        } else if (ZonePolicy.mayWrite(Caller.SYSTEM, p, membership)) {
            try {
                mkdir(Caller.SYSTEM, p);
            } catch (ErrnoException e) {
                // a read-only store, or a file on the way; anything else (S3 away) is the caller's to judge
                if (prefix == null || e.errno() != Linux.EROFS && e.errno() != Linux.ENOTDIR) {
                    throw e;
                }
                UnreachablePrefixException u = new UnreachablePrefixException(prefix, p
                        + " is missing and its store cannot make it (" + e.getMessage() + ")");
                u.initCause(e);
                throw u;
            }
        }
    }
}
