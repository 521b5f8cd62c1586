package dev.chibifs.router;

import dev.chibifs.path.VfsPath;
import dev.chibifs.policy.Caller;
import dev.chibifs.policy.ZonePolicy;
import dev.chibifs.store.ChangeFeed;
import dev.chibifs.store.ChangeListener;
import dev.chibifs.store.Entry;
import dev.chibifs.store.EntrySink;
import dev.chibifs.store.FileHandle;
import dev.chibifs.store.Metadata;
import dev.chibifs.store.OpenFlag;
import dev.chibifs.store.Precondition;
import dev.chibifs.store.SpaceInfo;
import dev.chibifs.store.Storage;

import java.io.IOException;
import java.nio.file.FileSystemException;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.Set;

/**
 * The one way into storage: checks the zone policy for the caller before every operation, then
 * hands the operation to the storage mounted at the longest matching prefix (with that prefix
 * stripped). Every front end (the FUSE adapter, the command line, the tool cache) goes through
 * here, so they all enforce the same policy with the same messages.
 */
public final class Router {

    private record Mount(VfsPath prefix, Storage storage) {
    }

    /** Where a path lands: a storage and the path inside it. */
    public record Target(Storage storage, VfsPath path) {
    }

    // sorted longest prefix first; immutable after construction, so lookups need no lock
    private final List<Mount> mounts;

    private Router(List<Mount> mounts) {
        this.mounts = mounts;
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

        private Builder(Storage root) {
            mounts.add(new Mount(VfsPath.root(), root));
        }

        /** Serves every path at or below {@code prefix} from {@code storage}. */
        public Builder mount(VfsPath prefix, Storage storage) {
            mounts.removeIf(m -> m.prefix().equals(prefix));
            mounts.add(new Mount(prefix, storage));
            return this;
        }

        public Router build() {
            List<Mount> sorted = new ArrayList<>(mounts);
            sorted.sort(Comparator.comparingInt((Mount m) -> m.prefix().depth()).reversed());
            return new Router(List.copyOf(sorted));
        }
    }

    /** The storage and inner path that serve {@code path}. */
    public Target resolve(VfsPath path) {
        // by index: an iterator per request was garbage the JIT did not always remove
        for (int i = 0; i < mounts.size(); i++) {
            Mount m = mounts.get(i);
            if (path.startsWith(m.prefix())) {
                if (m.prefix().isRoot()) {
                    return new Target(m.storage(), path);
                }
                String rest = path.toString().substring(m.prefix().toString().length());
                return new Target(m.storage(), rest.isEmpty() ? VfsPath.root() : VfsPath.of(rest));
            }
        }
        throw new IllegalStateException("no storage at / for " + path);
    }

    private Target sameStorage(VfsPath a, VfsPath b, Target ta) throws IOException {
        Target tb = resolve(b);
        if (ta.storage() != tb.storage()) {
            throw new FileSystemException(a.toString(), b.toString(), "Invalid cross-device link");
        }
        return tb;
    }

    // ---- policy checks ----

    /** Throws {@link PolicyDeniedException} unless {@code caller} may write {@code path}. */
    public void checkWrite(Caller caller, VfsPath path) throws PolicyDeniedException {
        if (!ZonePolicy.mayWrite(caller, path)) {
            throw new PolicyDeniedException(path.toString(), ZonePolicy.denial(caller, path));
        }
    }

    /** Throws {@link PolicyDeniedException} unless {@code caller} may remove or rename away {@code path}. */
    public void checkRemove(Caller caller, VfsPath path) throws PolicyDeniedException {
        if (!ZonePolicy.mayRemove(caller, path)) {
            throw new PolicyDeniedException(path.toString(), ZonePolicy.denial(caller, path));
        }
    }

    // ---- reads: always allowed ----

    public byte[] read(Caller caller, VfsPath path) throws IOException {
        Target t = resolve(path);
        return t.storage().read(t.path());
    }

    public List<Entry> list(Caller caller, VfsPath path) throws IOException {
        Target t = resolve(path);
        return t.storage().list(t.path());
    }

    /** {@link #list} one at a time, in the directory's own order, without a list (readdir). */
    public void forEachEntry(Caller caller, VfsPath path, EntrySink sink) throws IOException {
        Target t = resolve(path);
        t.storage().forEachEntry(t.path(), sink);
    }

    public boolean exists(Caller caller, VfsPath path) throws IOException {
        Target t = resolve(path);
        return t.storage().exists(t.path());
    }

    public Metadata metadata(Caller caller, VfsPath path) throws IOException {
        Target t = resolve(path);
        return t.storage().metadata(t.path());
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
        checkWrite(caller, path);
        Target t = resolve(path);
        t.storage().write(t.path(), data);
    }

    public void append(Caller caller, VfsPath path, byte[] data) throws IOException {
        checkWrite(caller, path);
        Target t = resolve(path);
        t.storage().append(t.path(), data);
    }

    /** A conditional write (--if-match, --if-none-match): the store checks and writes as one step. */
    public void write(Caller caller, VfsPath path, byte[] data, Precondition condition) throws IOException {
        checkWrite(caller, path);
        Target t = resolve(path);
        t.storage().write(t.path(), data, condition);
    }

    public void append(Caller caller, VfsPath path, byte[] data, Precondition condition) throws IOException {
        checkWrite(caller, path);
        Target t = resolve(path);
        t.storage().append(t.path(), data, condition);
    }

    /** The ETag of a file (everyone may read it). */
    public String etag(Caller caller, VfsPath path) throws IOException {
        Target t = resolve(path);
        return t.storage().etag(t.path());
    }

    public void delete(Caller caller, VfsPath path) throws IOException {
        checkRemove(caller, path);
        Target t = resolve(path);
        t.storage().delete(t.path());
    }

    public void mkdir(Caller caller, VfsPath path) throws IOException {
        checkWrite(caller, path);
        Target t = resolve(path);
        t.storage().mkdir(t.path());
    }

    /** Copies a file: read on the source (always), write on the destination. */
    public void copy(Caller caller, VfsPath src, VfsPath dst) throws IOException {
        checkWrite(caller, dst);
        Target ts = resolve(src);
        Target td = resolve(dst);
        if (ts.storage() == td.storage()) {
            ts.storage().copy(ts.path(), td.path());
        } else {
            td.storage().write(td.path(), ts.storage().read(ts.path()));
        }
    }

    /** Renames: write on both names, and neither may be a zone root. */
    public void rename(Caller caller, VfsPath src, VfsPath dst) throws IOException {
        checkRemove(caller, src);
        checkRemove(caller, dst);
        Target ts = resolve(src);
        Target td = sameStorage(src, dst, ts);
        ts.storage().rename(ts.path(), td.path());
    }

    /**
     * Opens a file; any flag that could change it (write, append, create, truncate) needs write
     * permission, so a denied create leaves no file behind.
     */
    public FileHandle open(Caller caller, VfsPath path, Set<OpenFlag> flags, int createMode) throws IOException {
        if (flags.contains(OpenFlag.WRITE) || flags.contains(OpenFlag.APPEND) || flags.contains(OpenFlag.CREATE)
                || flags.contains(OpenFlag.CREATE_NEW) || flags.contains(OpenFlag.TRUNCATE)) {
            checkWrite(caller, path);
        }
        Target t = resolve(path);
        return t.storage().open(t.path(), flags, createMode);
    }

    public void truncate(Caller caller, VfsPath path, long size) throws IOException {
        checkWrite(caller, path);
        Target t = resolve(path);
        t.storage().truncate(t.path(), size);
    }

    public void createDirectory(Caller caller, VfsPath path) throws IOException {
        checkWrite(caller, path);
        Target t = resolve(path);
        t.storage().createDirectory(t.path());
    }

    public void removeFile(Caller caller, VfsPath path) throws IOException {
        checkRemove(caller, path);
        Target t = resolve(path);
        t.storage().removeFile(t.path());
    }

    public void removeDirectory(Caller caller, VfsPath path) throws IOException {
        checkRemove(caller, path);
        Target t = resolve(path);
        t.storage().removeDirectory(t.path());
    }

    public void setTimes(Caller caller, VfsPath path, FileTime accessed, FileTime modified) throws IOException {
        checkWrite(caller, path);
        Target t = resolve(path);
        t.storage().setTimes(t.path(), accessed, modified);
    }

    /** chmod: allowed where the caller may write; only the execute bits reach the store, and they grant nothing. */
    public void chmod(Caller caller, VfsPath path, int mode) throws IOException {
        checkWrite(caller, path);
        Target t = resolve(path);
        t.storage().setExecutable(t.path(), mode);
    }

    /** chown: allowed where the caller may write, and changes nothing (path is policy, owners grant nothing). */
    public void chown(Caller caller, VfsPath path) throws IOException {
        checkWrite(caller, path);
        Target t = resolve(path);
        t.storage().metadata(t.path());
    }

    /** Hard link, only inside one zone, so no file gets a writable name in a zone that protects it. */
    public void link(Caller caller, VfsPath existing, VfsPath newName) throws IOException {
        if (!ZonePolicy.mayLink(caller, existing, newName)) {
            VfsPath denied = ZonePolicy.mayWrite(caller, newName) ? existing : newName;
            String reason = ZonePolicy.mayWrite(caller, existing) && ZonePolicy.mayWrite(caller, newName)
                    ? "hard links cannot cross zones ('" + existing + "' -> '" + newName + "')"
                    : ZonePolicy.denial(caller, denied);
            throw new PolicyDeniedException(newName.toString(), reason);
        }
        Target te = resolve(existing);
        Target tn = sameStorage(existing, newName, te);
        te.storage().link(te.path(), tn.path());
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
            @Override
            public boolean active() {
                return feeds.stream().allMatch(ChangeFeed::active);
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
        public void batchTold() {
            listener.batchTold();
        }
    }

    /**
     * Creates the zone roots ({@code /shared}, {@code /home}, {@code /sys}, {@code /sys/tool_cache})
     * and the home of every named context, as SYSTEM.
     */
    public void createNamespace(Collection<String> contexts) throws IOException {
        List<String> dirs = new ArrayList<>(List.of("/shared", "/home", "/sys", "/sys/tool_cache"));
        for (String c : contexts) {
            dirs.add("/home/" + Caller.context(c).name());
        }
        for (String d : dirs) {
            mkdir(Caller.SYSTEM, VfsPath.of(d));
        }
    }
}
