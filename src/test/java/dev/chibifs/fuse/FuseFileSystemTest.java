package dev.chibifs.fuse;

import dev.chibifs.path.VfsPath;
import dev.chibifs.policy.Caller;
import dev.chibifs.router.Router;
import dev.chibifs.store.MemoryStorage;
import dev.chibifs.store.XattrMode;
import dev.chibifs.store.Metadata;
import dev.chibifs.sys.Linux;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;

import static dev.chibifs.fuse.FakeKernel.body;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The file system's operations by node, driven through a real {@link FuseSession} by a fake
 * kernel that speaks the protocol's byte layouts, against {@link MemoryStorage}: no mount.
 */
@Timeout(20)
class FuseFileSystemTest {

    private final dev.chibifs.testing.MutableClock clock = new dev.chibifs.testing.MutableClock(java.time.Instant.parse("2026-11-28T00:00:00Z"));
    private final MemoryStorage store = new MemoryStorage(clock);
    /** What the fake kernel offers at INIT, unless a test connects again offering more. */
    private static final long OFFERED = FuseProtocol.DO_READDIRPLUS | FuseProtocol.PARALLEL_DIROPS
            | FuseProtocol.ASYNC_READ | FuseProtocol.MAX_PAGES | FuseProtocol.INIT_EXT | FuseProtocol.WRITEBACK_CACHE;

    private FakeKernel kernel;
    /** What the next {@link #connect} mounts, and the kernel timeouts it asks for. */
    private Router router = Router.of(store);
    private FuseFileSystem.Timeouts timeouts = FuseFileSystem.Timeouts.of(1, 1, 0);
    private final RequestStats stats = new RequestStats();
    private FuseFileSystem fs;
    private FuseSession session;
    /** Whom every request of the next {@link #connect} comes from. */
    private Caller caller = Caller.context("alice");

    @BeforeEach
    void start() throws Exception {
        Router.of(store).createNamespace(List.of("alice", "bob"));
        connect(OFFERED);
    }

    /** A new session over the same store, the kernel offering {@code offered} at INIT. */
    private void connect(long offered) throws Exception {
        connect(offered, 1);
    }

    /** As {@link #connect(long)}, with {@code workers} workers. */
    private void connect(long offered, int workers) throws Exception {
        connect(offered, new FuseSession.Settings(1 << 20, workers, true, false, false));
    }

    private void connect(long offered, FuseSession.Settings settings) throws Exception {
        kernel = new FakeKernel();
        fs = new FuseFileSystem(router, CallerResolver.fixed(caller), 1000, 1000, timeouts, true);
        fs.clock(clock);
        session = new FuseSession(kernel, fs, settings, stats);
        session.start();
        FakeKernel.Reply init = kernel.init(offered);
        assertEquals(0, init.error());
        assertEquals(7, init.int32(0));
        assertEquals(38, init.int32(4), "the kernel's minor, not ours, when it is older");
        long granted = init.int32(12) & 0xffffffffL;
        assertTrue((granted & FuseProtocol.DO_READDIRPLUS) != 0);
        assertTrue((granted & FuseProtocol.PARALLEL_DIROPS) != 0);
        assertEquals(0, granted & FuseProtocol.WRITEBACK_CACHE, "chibi writes the store behind us: no writeback cache");
        assertEquals(1 << 20, init.int32(20), "max_write");
        assertEquals(256, init.body().getShort(28), "max_pages");
    }

    @AfterEach
    void stop() {
        kernel.close();
        session.ended().join();
    }

    private long lookup(long parent, String name) throws Exception {
        FakeKernel.Reply r = kernel.call(FuseProtocol.LOOKUP, parent, body().name(name));
        assertEquals(0, r.error(), "lookup " + name);
        return r.int64(0);
    }

    /** CREATE: returns {node id, fh}. */
    private long[] create(long parent, String name) throws Exception {
        FakeKernel.Reply r = kernel.call(FuseProtocol.CREATE, parent,
                body().int32(Linux.O_WRONLY | Linux.O_CREAT).int32(0100644).int32(022).int32(0).name(name));
        assertEquals(0, r.error(), "create " + name);
        return new long[]{r.int64(0), r.int64(FuseProtocol.ENTRY_OUT)};
    }

    private FakeKernel.Reply write(long node, long fh, long offset, String text) throws Exception {
        byte[] data = text.getBytes(StandardCharsets.UTF_8);
        return kernel.call(FuseProtocol.WRITE, node,
                body().int64(fh).int64(offset).int32(data.length).int32(0).int64(0).int32(0).int32(0).bytes(data));
    }

    /** A new file in /shared with {@code text} written and closed; returns its node id. */
    private long written(String name, String text) throws Exception {
        long[] f = create(lookup(FuseProtocol.ROOT_ID, "shared"), name);
        write(f[0], f[1], 0, text);
        release(f[0], f[1]);
        return f[0];
    }

    /** A new empty file {@code name} in {@code parent}, created and closed; returns its node id. */
    private long closedNew(long parent, String name) throws Exception {
        long[] f = create(parent, name);
        release(f[0], f[1]);
        return f[0];
    }

    private void release(long node, long fh) throws Exception {
        assertEquals(0, kernel.call(FuseProtocol.RELEASE, node, body().int64(fh).int32(0).int32(0).int64(0)).error());
    }

    @Test
    void aFileCreatedWrittenAndReadBackThroughTheProtocol() throws Exception {
        long shared = lookup(FuseProtocol.ROOT_ID, "shared");
        long[] created = create(shared, "tasks.md");
        FakeKernel.Reply w = write(created[0], created[1], 0, "- ship it\n");
        assertEquals(0, w.error());
        assertEquals(10, w.int32(0));
        release(created[0], created[1]);
        assertArrayEquals("- ship it\n".getBytes(StandardCharsets.UTF_8), store.read(VfsPath.of("/shared/tasks.md")));

        FakeKernel.Reply open = kernel.call(FuseProtocol.OPEN, created[0], body().int32(Linux.O_RDONLY).int32(0));
        long fh = open.int64(0);
        FakeKernel.Reply read = kernel.call(FuseProtocol.READ, created[0],
                body().int64(fh).int64(2).int32(4096).int32(0).int64(0).int32(0).int32(0));
        assertEquals("ship it\n", StandardCharsets.UTF_8.decode(read.body()).toString());
        assertEquals(1, stats.count("READ"));
        assertEquals(1, stats.count("WRITE"));
    }

    private FakeKernel.Reply openToRead(long node) throws Exception {
        FakeKernel.Reply r = kernel.call(FuseProtocol.OPEN, node, body().int32(Linux.O_RDONLY).int32(0));
        assertEquals(0, r.error());
        return r;
    }

    /**
     * Every open file holds a descriptor of the daemon's: one agent opening a file 19,000 times left
     * the others "Too many open files" for cat, create and ls. Past its share a caller's own opens
     * fail, EMFILE, and a release gives one back.
     */
    @Test
    void aCallerPastItsShareOfOpenFilesGetsEmfileForItsNextOpen() throws Exception {
        long f = written("held", "x");
        long shared = lookup(FuseProtocol.ROOT_ID, "shared");
        fs.openFiles.share(2);
        long first = openToRead(f).int64(0);
        openToRead(f);
        assertEquals(-Linux.EMFILE, kernel.call(FuseProtocol.OPEN, f, body().int32(Linux.O_RDONLY).int32(0)).error());
        assertEquals(-Linux.EMFILE, kernel.call(FuseProtocol.CREATE, shared,
                body().int32(Linux.O_WRONLY | Linux.O_CREAT).int32(0100644).int32(022).int32(0).name("new")).error());
        assertFalse(store.exists(VfsPath.of("/shared/new")), "a refused create leaves nothing");
        release(f, first);
        openToRead(f);
    }

    /** Rewrites a store file in place, as chibi's own write would change it behind the mount. */
    private void rewrite(String path, String text) throws Exception {
        try (var h = store.open(VfsPath.of(path), java.util.EnumSet.of(dev.chibifs.store.OpenFlag.WRITE,
                dev.chibifs.store.OpenFlag.TRUNCATE), 0)) {
            h.write(ByteBuffer.wrap(text.getBytes(StandardCharsets.UTF_8)), 0);
        }
    }

    /** Replaces a store file as a status file is replaced: a new file renamed over the name (chibi, another host). */
    private void replace(String path, String text) throws Exception {
        store.write(VfsPath.of(path + ".tmp"), text.getBytes(StandardCharsets.UTF_8));
        store.rename(VfsPath.of(path + ".tmp"), VfsPath.of(path));
    }

    private FakeKernel.Reply read(long node, long fh) throws Exception {
        return kernel.call(FuseProtocol.READ, node, body().int64(fh).int64(0).int32(4096).int32(0).int64(0).int32(0).int32(0));
    }

    /** The node a path walk found for /shared/status (v1), which {@code replacement} has replaced since. */
    private long lookedUpThenReplaced(long shared, String replacement) throws Exception {
        replace("/shared/status", "v1");
        long walked = lookup(shared, "status");
        replace("/shared/status", replacement);
        return walked;
    }

    private int openError(long node) throws Exception {
        return kernel.call(FuseProtocol.OPEN, node, body().int32(Linux.O_RDONLY).int32(0)).error();
    }

    @Test
    void anOpenRetriedAfterEstaleOpensWhatItsLookupFoundThoughReplacedAgain() throws Exception {
        long shared = lookup(FuseProtocol.ROOT_ID, "shared");
        long walked = lookedUpThenReplaced(shared, "v2");
        // the caller's path walk found a file replaced since: the kernel is told to look the name up again
        assertEquals(-Linux.ESTALE, openError(walked));
        // the retry, from the same thread: the revalidation's LOOKUP, whose node the kernel forgets at
        // once as it is not the one it had, a fresh LOOKUP, then the OPEN once more
        long revalidated = lookup(shared, "status");
        kernel.send(FuseProtocol.FORGET, revalidated, body().int64(1));
        long retried = lookup(shared, "status");
        assertNotEquals(walked, retried);
        replace("/shared/status", "v3"); // and replaced again before the retried OPEN
        FakeKernel.Reply open = openToRead(retried);
        assertEquals("v2", StandardCharsets.UTF_8.decode(read(retried, open.int64(0)).body()).toString(),
                "the file the name stood for during the open, as a disk gives it");
        release(retried, open.int64(0));

        // only the retried request: the thread's next open, begun after v4 replaced the file its
        // kernel still names, reads what the name stands for then, never the v2 held for the retry
        replace("/shared/status", "v4");
        assertEquals(-Linux.ESTALE, openError(retried));
        long fresh = lookup(shared, "status");
        FakeKernel.Reply again = openToRead(fresh);
        assertEquals("v4", StandardCharsets.UTF_8.decode(read(fresh, again.int64(0)).body()).toString());
        release(fresh, again.int64(0));

        // nor another thread's lookup of a name answered stale to this one
        replace("/shared/status", "v5");
        assertEquals(-Linux.ESTALE, openError(fresh));
        kernel.pid = 4321;
        long others = lookup(shared, "status");
        replace("/shared/status", "v6");
        assertEquals(-Linux.ESTALE, openError(others));
        kernel.pid = 1234;

        // nor a retry that comes too late
        long late = lookup(shared, "status");
        clock.advance(StaleNames.RETRY_WITHIN.plusSeconds(1));
        replace("/shared/status", "v7");
        assertEquals(-Linux.ESTALE, openError(late));

        // the files held for the retries go with their nodes
        assertEquals(3, fs.staleNames.held(), "v2, v4 and v6, looked up by this thread after an ESTALE");
        for (long node : new long[] {retried, fresh, late}) {
            kernel.send(FuseProtocol.FORGET, node, body().int64(1));
        }
        lookup(FuseProtocol.ROOT_ID, "shared"); // a request after the FORGETs, which have no reply to wait for
        assertEquals(0, fs.staleNames.held(), "let go at their nodes' FORGET");
    }

    private FakeKernel.Reply getattr(long node) throws Exception {
        return kernel.call(FuseProtocol.GETATTR, node, body().int32(0).int32(0).int64(0));
    }

    @Test
    void aStatOfAFileReplacedSinceItsLookupIsRetriedAndReachesWhatTheRetryFound() throws Exception {
        long shared = lookup(FuseProtocol.ROOT_ID, "shared");
        long walked = lookedUpThenReplaced(shared, "v22");
        // not ENOENT, which stat(1) showed as a file replaced a moment ago missing: the kernel looks again
        assertEquals(-Linux.ESTALE, getattr(walked).error());
        long retried = lookup(shared, "status");
        replace("/shared/status", "v333"); // and again before the retried GETATTR
        FakeKernel.Reply attr = getattr(retried);
        assertEquals(0, attr.error());
        assertEquals(3, attr.int64(16 + 8), "the size of v22, the file the retry's lookup found");
        assertEquals(0, attr.int32(16 + 64), "nlink: replaced");
        // what a stat's retry held is never opened: an open is answered ESTALE, and finds v333
        assertEquals(-Linux.ESTALE, openError(retried));

        // gone behind the mount: ESTALE, and the kernel's lookup then says ENOENT
        long current = lookup(shared, "status");
        store.removeFile(VfsPath.of("/shared/status"));
        assertEquals(-Linux.ESTALE, getattr(current).error());
        assertEquals(-Linux.ENOENT, kernel.call(FuseProtocol.LOOKUP, shared, body().name("status")).error());
    }

    /**
     * fstat of an open directory (and fdopendir's, so listdir's) sends a GETATTR without a handle,
     * which the kernel does not retry on ESTALE: a rename of the directory through this mount between
     * the request's path and its look in the store failed it ("Stale file handle" from find).
     */
    @Test
    void aStatOfADirectoryRenamedOnThisMountDuringItFindsItByItsNewName() throws Exception {
        HeldCall held = holdingFirst("metadata", "/p/dd");
        long shared = lookup(FuseProtocol.ROOT_ID, "shared");
        assertEquals(0, kernel.call(FuseProtocol.MKDIR, shared, body().int32(040755).int32(022).name("p")).error());
        long p = lookup(shared, "p");
        assertEquals(0, kernel.call(FuseProtocol.MKDIR, p, body().int32(040755).int32(022).name("dd")).error());
        long dd = lookup(p, "dd");

        held.armed.set(true);
        long stat = kernel.send(FuseProtocol.GETATTR, dd, body().int32(0).int32(0).int64(0));
        assertTrue(held.reached.await(5, java.util.concurrent.TimeUnit.SECONDS), "the GETATTR took its path");
        assertEquals(0, kernel.call(FuseProtocol.RENAME, p, body().int64(p).name("dd").name("tmp")).error());
        held.released.countDown();
        FakeKernel.Reply attr = kernel.reply();
        assertEquals(stat, attr.unique());
        assertEquals(0, attr.error(), "not ESTALE: the directory is there, renamed");
        assertEquals(040000, attr.int32(16 + 60) & 0170000, "a directory's mode");
    }

    /**
     * An open whose node a rename through this mount moves while it looks (a swap of two names by
     * three renames, as a tester's loop did) opens the node's file by its new name. It was ESTALE,
     * and where the name moved again before the kernel's one retry, the program saw "Stale file
     * handle", where a disk opens the file its walk found.
     */
    @Test
    void anOpenOfAFileRenamedOnThisMountDuringItOpensItByItsNewName() throws Exception {
        HeldCall held = holdingFirst("open", "/p/a");
        long shared = lookup(FuseProtocol.ROOT_ID, "shared");
        assertEquals(0, kernel.call(FuseProtocol.MKDIR, shared, body().int32(040755).int32(022).name("p")).error());
        store.write(VfsPath.of("/shared/p/a"), "file a".getBytes(StandardCharsets.UTF_8));
        store.write(VfsPath.of("/shared/p/b"), "file b".getBytes(StandardCharsets.UTF_8));
        long p = lookup(shared, "p");
        long a = lookup(p, "a");
        lookup(p, "b");

        held.armed.set(true);
        long open = kernel.send(FuseProtocol.OPEN, a, body().int32(Linux.O_RDONLY).int32(0));
        assertTrue(held.reached.await(5, java.util.concurrent.TimeUnit.SECONDS), "the OPEN took its path");
        assertEquals(0, kernel.call(FuseProtocol.RENAME, p, body().int64(p).name("a").name("t")).error());
        assertEquals(0, kernel.call(FuseProtocol.RENAME, p, body().int64(p).name("b").name("a")).error());
        held.released.countDown();
        FakeKernel.Reply opened = kernel.reply();
        assertEquals(open, opened.unique());
        assertEquals(0, opened.error(), "not ESTALE: the file is there, renamed");
        assertEquals("file a", StandardCharsets.UTF_8.decode(read(a, opened.int64(0)).body()).toString());
        release(a, opened.int64(0));
    }

    /**
     * FSYNCDIR reaches the directory's store, for a caller that only reads the directory (as on a
     * disk: fsync needs a descriptor, not write access). It was answered with nothing done.
     */
    @Test
    void aDirectorysFsyncReachesItsStoreForACallerThatOnlyReadsIt() throws Exception {
        List<VfsPath> synced = new java.util.concurrent.CopyOnWriteArrayList<>();
        router = Router.of(around((dev.chibifs.store.Storage) store, dev.chibifs.store.Storage.class, (m, a) -> {
            if (m.getName().equals("syncDirectory")) {
                synced.add((VfsPath) a[0]);
            }
            return null;
        }));
        stop();
        connect(OFFERED);
        store.mkdir(VfsPath.of("/home/bob/x"));
        long x = lookup(lookup(lookup(FuseProtocol.ROOT_ID, "home"), "bob"), "x");

        FakeKernel.Reply r = kernel.call(FuseProtocol.FSYNCDIR, x, body().int64(0).int32(0).int32(0));

        assertEquals(0, r.error(), "alice reads bob's directory, and may fsync it");
        assertEquals(List.of(VfsPath.of("/home/bob/x")), synced);
    }

    @Test
    void aDirectoryReplacedByALinkAsItIsMadeIsStaleNotALinksEntry() throws Exception {
        VfsPath d = VfsPath.of("/shared/d");
        router = Router.of(around((dev.chibifs.store.Storage) store, dev.chibifs.store.Storage.class, (m, a) -> {
            if (m.getName().equals("createDirectory") && d.equals(a[0])) {
                try {
                    // made, then at once replaced by another mount: a link by the same name
                    store.createDirectory(d);
                    store.removeDirectory(d);
                    store.createSymlink(d, "elsewhere");
                } catch (java.io.IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
                return Boolean.TRUE;
            }
            return null;
        }));
        stop();
        connect(OFFERED);
        long shared = lookup(FuseProtocol.ROOT_ID, "shared");

        FakeKernel.Reply made = kernel.call(FuseProtocol.MKDIR, shared, body().int32(040755).int32(022).name("d"));

        // a link's entry for a MKDIR fails it with EIO in the kernel; ESTALE runs mkdir(2) again
        assertEquals(-Linux.ESTALE, made.error());
        assertEquals("elsewhere", store.readLink(d), "what the other mount made stays");
    }

    @Test
    void aCreateOfANameThatBecameALinkBehindTheKernelIsStaleSoTheKernelFollowsTheLink() throws Exception {
        long shared = lookup(FuseProtocol.ROOT_ID, "shared");
        store.createSymlink(VfsPath.of("/shared/x"), "target");

        FakeKernel.Reply r = kernel.call(FuseProtocol.CREATE, shared,
                body().int32(Linux.O_WRONLY | Linux.O_CREAT).int32(0100644).int32(022).int32(0).name("x"));

        // open(2) follows a link; ELOOP would fail it where the kernel, walking again, follows it
        assertEquals(-Linux.ESTALE, r.error());
        assertFalse(store.exists(VfsPath.of("/shared/target")), "nothing made through the link by the daemon");
    }

    @Test
    void anOpenOfAFileWhoseNameBecameALinkBehindTheKernelIsStaleSoTheKernelFollowsTheLink() throws Exception {
        long x = written("x", "file");
        store.removeFile(VfsPath.of("/shared/x"));
        store.createSymlink(VfsPath.of("/shared/x"), "target");

        FakeKernel.Reply r = kernel.call(FuseProtocol.OPEN, x, body().int32(Linux.O_RDONLY).int32(0));

        assertEquals(-Linux.ESTALE, r.error(), "not ELOOP: open(2) follows the link it walks to again");
    }

    /** The offsets of the INVAL_INODE notifications of {@code node} so far (-1: attributes only). */
    private List<Long> invalidated(long node) {
        return kernel.notifications(FuseProtocol.NOTIFY_INVAL_INODE).stream()
                .filter(r -> r.int64(0) == node).map(r -> r.int64(8)).toList();
    }

    private static boolean keepsPages(FakeKernel.Reply open) {
        return (open.int32(8) & FuseProtocol.FOPEN_KEEP_CACHE) != 0;
    }

    /** The content of NOTIFY_STORE {@code n} for node {@code node}, from offset 0. */
    private static String stored(FakeKernel.Reply n, long node) {
        assertEquals(node, n.int64(0));
        assertEquals(0, n.int64(8));
        ByteBuffer data = n.body().position(24);
        assertEquals(n.int32(16), data.remaining());
        return StandardCharsets.UTF_8.decode(data).toString();
    }

    @Test
    void aSmallFileGoesIntoTheKernelsPagesAtOpenAndStaysThereWhileItIsTheSame() throws Exception {
        store.write(VfsPath.of("/shared/notes"), "hello\n".getBytes(StandardCharsets.UTF_8));
        long notes = lookup(lookup(FuseProtocol.ROOT_ID, "shared"), "notes");

        FakeKernel.Reply first = openToRead(notes);
        assertTrue(keepsPages(first), "its pages are its whole content, just stored");
        List<FakeKernel.Reply> stores = kernel.notifications(FuseProtocol.NOTIFY_STORE);
        assertEquals(1, stores.size());
        assertEquals("hello\n", stored(stores.get(0), notes));
        assertEquals(List.of(), invalidated(notes), "no page to drop, and the attributes are what the lookup said");
        FakeKernel.Reply second = openToRead(notes); // while the first is open: nothing stored under a reader
        assertTrue(keepsPages(second));
        release(notes, first.int64(0));
        release(notes, second.int64(0));
        FakeKernel.Reply third = openToRead(notes);
        assertTrue(keepsPages(third));
        assertEquals(1, kernel.notifications(FuseProtocol.NOTIFY_STORE).size(), "unchanged: stored once");

        // changed behind the mount while the third is open: dropped at the open, reads fill them again
        rewrite("/shared/notes", "bye\n");
        FakeKernel.Reply changed = openToRead(notes);
        assertFalse(keepsPages(changed), "another open is still reading: nothing is stored under it");
        release(notes, changed.int64(0));
        release(notes, third.int64(0));
        // changed again, shorter, nothing open: what the kernel had goes first, then the new content
        rewrite("/shared/notes", "ok\n");
        assertTrue(keepsPages(openToRead(notes)));
        assertEquals(List.of(-1L, 0L), invalidated(notes),
                "the attributes at the change, then every page, from offset 0 (attributes too), before the store");
        stores = kernel.notifications(FuseProtocol.NOTIFY_STORE);
        assertEquals(2, stores.size());
        assertEquals("ok\n", stored(stores.get(1), notes));
        assertEquals(0, stats.count("READ"));
    }

    @Test
    void aLargeFileOrAWriteIsNotStoredAtOpenAReadAfterAWriteIsOnce() throws Exception {
        store.write(VfsPath.of("/shared/big"), new byte[FuseFileSystem.STORED_AT_OPEN + 1]);
        store.write(VfsPath.of("/shared/small"), "x".getBytes(StandardCharsets.UTF_8));
        long shared = lookup(FuseProtocol.ROOT_ID, "shared");
        assertFalse(keepsPages(openToRead(lookup(shared, "big"))), "read as ever: nothing known of its pages");
        long small = lookup(shared, "small");
        FakeKernel.Reply w = kernel.call(FuseProtocol.OPEN, small, body().int32(Linux.O_RDWR).int32(0));
        assertEquals(0, w.error());
        assertFalse(keepsPages(w));
        assertTrue(kernel.notifications(FuseProtocol.NOTIFY_STORE).isEmpty());
        // a writer's pages hold what it wrote, and nothing says the store file holds only that (chibi or
        // another mount may have written meanwhile): the next read drops them, and has the whole stored once
        write(small, w.int64(0), 1, "y");
        release(small, w.int64(0));
        FakeKernel.Reply read = openToRead(small);
        assertTrue(keepsPages(read));
        release(small, read.int64(0));
        assertTrue(keepsPages(openToRead(small)));
        List<FakeKernel.Reply> stores = kernel.notifications(FuseProtocol.NOTIFY_STORE);
        assertEquals(1, stores.size());
        assertEquals("xy", stored(stores.get(0), small));
        assertTrue(invalidated(small).contains(0L));
    }

    private static boolean readsDirectly(FakeKernel.Reply open) {
        return (open.int32(8) & FuseProtocol.FOPEN_DIRECT_IO) != 0;
    }

    @Test
    void whereReadsAreServedAFileJustModifiedOrOpenForWritingIsReadPastThePageCache() throws Exception {
        stop();
        connect(OFFERED | FuseProtocol.DIRECT_IO_ALLOW_MMAP);
        store.write(VfsPath.of("/shared/status"), "v1\n".getBytes(StandardCharsets.UTF_8));
        long status = lookup(lookup(FuseProtocol.ROOT_ID, "shared"), "status");

        FakeKernel.Reply justWritten = openToRead(status);
        assertTrue(readsDirectly(justWritten), "modified a moment ago: maybe being rewritten, read directly");
        assertTrue(keepsPages(justWritten), "whatever pages the kernel has are left as they are");
        assertTrue(kernel.notifications(FuseProtocol.NOTIFY_STORE).isEmpty());
        release(status, justWritten.int64(0));

        clock.advance(FuseFileSystem.CHANGING_FOR);
        FakeKernel.Reply atRest = openToRead(status);
        assertFalse(readsDirectly(atRest), "at rest: through the page cache, its content stored");
        assertEquals(1, kernel.notifications(FuseProtocol.NOTIFY_STORE).size());
        release(status, atRest.int64(0));

        FakeKernel.Reply writer = kernel.call(FuseProtocol.OPEN, status, body().int32(Linux.O_WRONLY).int32(0));
        assertEquals(0, writer.error());
        assertFalse(readsDirectly(writer), "writes go through the page cache as ever");
        assertTrue(readsDirectly(openToRead(status)), "open for writing on the mount: read directly");
        release(status, writer.int64(0));

        FakeKernel.Reply read = openToRead(status);
        assertFalse(readsDirectly(read));
        assertEquals("v1\n", StandardCharsets.UTF_8.decode(kernel.call(FuseProtocol.READ, status,
                body().int64(read.int64(0)).int64(0).int32(4096).int32(0).int64(0).int32(0).int32(0)).body()).toString());
    }

    @Test
    void withoutSharedMappingsOfDirectFilesEveryReadGoesThroughThePageCache() throws Exception {
        store.write(VfsPath.of("/shared/status"), "v1\n".getBytes(StandardCharsets.UTF_8));
        long status = lookup(lookup(FuseProtocol.ROOT_ID, "shared"), "status");
        assertFalse(readsDirectly(openToRead(status)), "a MAP_SHARED mmap of it would fail ENODEV");
        FakeKernel.Reply append = kernel.call(FuseProtocol.OPEN, lookup(lookup(FuseProtocol.ROOT_ID, "shared"), "status"),
                body().int32(Linux.O_WRONLY | Linux.O_APPEND).int32(0));
        assertFalse(readsDirectly(append), "nor an append");
    }

    @Test
    void whereWritesAreServedAnAppendGoesPastThePageCacheInOneWrite() throws Exception {
        stop();
        connect(OFFERED | FuseProtocol.DIRECT_IO_ALLOW_MMAP);
        long shared = lookup(FuseProtocol.ROOT_ID, "shared");
        // through the page cache a line ending in a page it did not fill from its start came as two
        // WRITEs, and another mount's append could land between them
        FakeKernel.Reply created = kernel.call(FuseProtocol.CREATE, shared,
                body().int32(Linux.O_WRONLY | Linux.O_CREAT | Linux.O_APPEND).int32(0100644).int32(022).int32(0).name("log"));
        assertEquals(0, created.error());
        long log = created.int64(0);
        int createdOpen = created.int32(FuseProtocol.ENTRY_OUT + 8);
        assertEquals(FuseProtocol.FOPEN_DIRECT_IO | FuseProtocol.FOPEN_KEEP_CACHE,
                createdOpen & (FuseProtocol.FOPEN_DIRECT_IO | FuseProtocol.FOPEN_KEEP_CACHE), "`echo >> log` that makes it");
        FakeKernel.Reply append = kernel.call(FuseProtocol.OPEN, log, body().int32(Linux.O_WRONLY | Linux.O_APPEND).int32(0));
        assertTrue(readsDirectly(append), "`echo >> log`");
        assertEquals(0, write(log, append.int64(0), 0, "one\n").error());
        release(log, append.int64(0));
        FakeKernel.Reply rewrite = kernel.call(FuseProtocol.OPEN, log, body().int32(Linux.O_WRONLY).int32(0));
        assertFalse(readsDirectly(rewrite), "a write in place goes through the page cache as ever");
    }

    @Test
    void aReadOnlyOpenWithAppendOfAFileTheCallerMayOnlyReadIsAllowed() throws Exception {
        store.write(VfsPath.of("/home/bob/notes"), "bob's".getBytes(StandardCharsets.UTF_8));
        long notes = lookup(lookup(lookup(FuseProtocol.ROOT_ID, "home"), "bob"), "notes");
        FakeKernel.Reply r = kernel.call(FuseProtocol.OPEN, notes, body().int32(Linux.O_RDONLY | Linux.O_APPEND).int32(0));
        assertEquals(0, r.error());
        release(notes, r.int64(0));
        for (int flags : new int[] {Linux.O_WRONLY | Linux.O_APPEND, Linux.O_RDONLY | Linux.O_TRUNC}) {
            // open(2) of such a file on a disk refuses both: one writes, the other truncates
            assertEquals(-Linux.EACCES, kernel.call(FuseProtocol.OPEN, notes, body().int32(flags).int32(0)).error());
        }
        assertEquals("bob's", new String(store.read(VfsPath.of("/home/bob/notes")), StandardCharsets.UTF_8));
    }

    @Test
    void aLinkReplacedByADirectoryBehindTheKernelIsStaleSoItWalksAgain() throws Exception {
        store.createSymlink(VfsPath.of("/shared/current"), "v1");
        long shared = lookup(FuseProtocol.ROOT_ID, "shared");
        long link = lookup(shared, "current");
        assertEquals("v1", StandardCharsets.UTF_8.decode(kernel.call(FuseProtocol.READLINK, link, body()).body()).toString());
        store.delete(VfsPath.of("/shared/current"));
        store.mkdir(VfsPath.of("/shared/current"));
        assertEquals(-Linux.ESTALE, kernel.call(FuseProtocol.READLINK, link, body()).error(), "not EINVAL, which ends the walk");
    }

    /**
     * The kernel opens a fifo and connects a socket without asking the daemon, so on a uid-mapped mount
     * an unmapped uid wrote into a fifo of bob's home (a tester's finding): the lookup, the one request
     * it sends, is refused to a caller that may not write the name's zone, and is sent at every use,
     * neither kept nor given by a listing.
     */
    @Test
    void aChannelIsLookedUpAtEveryUseAndOnlyByThoseWhoMayWriteWhereItIs() throws Exception {
        store.createNode(VfsPath.of("/home/bob/ff"), dev.chibifs.store.EntryKind.FIFO, 0644);
        store.createNode(VfsPath.of("/home/bob/sock"), dev.chibifs.store.EntryKind.SOCKET, 0644);
        store.createNode(VfsPath.of("/shared/ff"), dev.chibifs.store.EntryKind.FIFO, 0644);
        long bob = lookup(lookup(FuseProtocol.ROOT_ID, "home"), "bob");
        for (String name : new String[] {"ff", "sock"}) {
            assertEquals(-Linux.EACCES, kernel.call(FuseProtocol.LOOKUP, bob, body().name(name)).error(), name);
        }
        FakeKernel.Reply shared = kernel.call(FuseProtocol.LOOKUP, lookup(FuseProtocol.ROOT_ID, "shared"), body().name("ff"));
        assertEquals(0, shared.error());
        // struct fuse_entry_out: nodeid, generation, entry_valid, attr_valid, entry_valid_nsec, attr_valid_nsec
        assertEquals(0, shared.int64(16), "entry_valid");
        assertEquals(0, shared.int32(32), "entry_valid_nsec");

        long fh = kernel.call(FuseProtocol.OPENDIR, bob, body().int32(0).int32(0)).int64(0);
        FakeKernel.Reply list = kernel.call(FuseProtocol.READDIRPLUS, bob,
                body().int64(fh).int64(0).int32(65536).int32(0).int64(0).int32(0).int32(0));
        Map<String, Long> nodes = new java.util.TreeMap<>();
        for (int at = 0; at < list.body().limit(); ) {
            int nameLength = list.int32(at + FuseProtocol.ENTRY_OUT + 16);
            byte[] name = new byte[nameLength];
            list.body().get(at + FuseProtocol.DIRENTPLUS, name);
            nodes.put(new String(name, StandardCharsets.UTF_8), list.int64(at));
            at += FuseReply.align8(FuseProtocol.DIRENTPLUS + nameLength);
        }
        assertEquals(0L, nodes.get("ff"), "listed, with no node: its use looks it up");
        assertEquals(0L, nodes.get("sock"));
    }

    @Test
    void aDeniedCreateIsEaccesAndLeavesNothing() throws Exception {
        long home = lookup(FuseProtocol.ROOT_ID, "home");
        long bob = lookup(home, "bob");
        FakeKernel.Reply r = kernel.call(FuseProtocol.CREATE, bob,
                body().int32(Linux.O_WRONLY | Linux.O_CREAT).int32(0100644).int32(022).int32(0).name("x"));
        assertEquals(-Linux.EACCES, r.error());
        assertFalse(store.exists(VfsPath.of("/home/bob/x")));
        assertEquals(1L, stats.snapshot().denials().get("alice"));
    }

    @Test
    void theNamesOfAHardLinkedFileAreOneNode() throws Exception {
        long shared = lookup(FuseProtocol.ROOT_ID, "shared");
        long a = closedNew(shared, "a");
        FakeKernel.Reply link = kernel.call(FuseProtocol.LINK, shared, body().int64(a).name("b"));
        assertEquals(0, link.error());
        assertEquals(a, link.int64(0), "one file, one node");
        assertEquals(2, link.int32(40 + 64), "nlink");
        assertEquals(a, lookup(shared, "b"));
        // the first name goes; the node lives on by its other name
        assertEquals(0, kernel.call(FuseProtocol.UNLINK, shared, body().name("a")).error());
        FakeKernel.Reply attr = kernel.call(FuseProtocol.GETATTR, a, body().int32(0).int32(0).int64(0));
        assertEquals(0, attr.error());
        assertEquals(1, attr.int32(16 + 64), "nlink after the unlink");
    }

    /**
     * Session 67: a snapshot of the store mounted inside it (at /shared/snap here) has the live
     * files' inode numbers and birth times on another device. Keyed without the device, the two
     * a.txt were one node, showing one size for both, and the snapshot's /shared was the live
     * /shared, a directory inside itself: ESTALE at every listing.
     */
    @Test
    void aFileSystemMountedInsideTheStoreWithTheSameNumbersIsOtherNodes() throws Exception {
        kernel.close();
        session.ended().join();
        store.write(VfsPath.of("/shared/a.txt"), "live version, longer now\n".getBytes(StandardCharsets.UTF_8));
        store.mkdir(VfsPath.of("/shared/snap"));
        store.mkdir(VfsPath.of("/shared/snap/shared"));
        store.write(VfsPath.of("/shared/snap/shared/a.txt"), "snapshot version\n".getBytes(StandardCharsets.UTF_8));
        long snapshotDevice = 7;
        String snap = "/shared/snap";
        dev.chibifs.store.Storage snapshotInside = (dev.chibifs.store.Storage) java.lang.reflect.Proxy.newProxyInstance(
                dev.chibifs.store.Storage.class.getClassLoader(), new Class<?>[] {dev.chibifs.store.Storage.class},
                (proxy, method, args) -> {
                    try {
                        Object result = method.invoke(store, args);
                        if (method.getName().equals("metadata") && args.length == 1 && args[0] instanceof VfsPath p
                                && p.toString().startsWith(snap)) {
                            // what the snapshot's file system says: the live file's number and birth, its own size
                            Metadata m = (Metadata) result;
                            String live = p.toString().substring(snap.length());
                            Metadata twin = store.metadata(live.isEmpty() ? VfsPath.root() : VfsPath.of(live));
                            return new Metadata(m.kind(), m.size(), twin.created(), m.modified(), m.accessed(),
                                    m.changed(), m.links(), m.mode(), twin.inode(), m.blocks(), snapshotDevice);
                        }
                        return result;
                    } catch (java.lang.reflect.InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
        router = Router.of(snapshotInside);
        connect(OFFERED);
        long shared = lookup(FuseProtocol.ROOT_ID, "shared");
        FakeKernel.Reply live = kernel.call(FuseProtocol.LOOKUP, shared, body().name("a.txt"));
        long snapshot = lookup(shared, "snap");
        FakeKernel.Reply snapshotShared = kernel.call(FuseProtocol.LOOKUP, snapshot, body().name("shared"));
        assertEquals(0, snapshotShared.error(), "the snapshot's /shared is no directory inside itself");
        assertNotEquals(shared, snapshotShared.int64(0));
        FakeKernel.Reply old = kernel.call(FuseProtocol.LOOKUP, snapshotShared.int64(0), body().name("a.txt"));
        assertEquals(0, old.error());

        assertNotEquals(live.int64(0), old.int64(0), "two files, two nodes");
        int size = FuseProtocol.ENTRY_OUT - FuseProtocol.ATTR + 8;
        assertEquals(25, live.int64(size));
        assertEquals(17, old.int64(size), "the snapshot's own size");
        assertEquals(25, getattr(live.int64(0)).int64(16 + 8));
        assertEquals(17, getattr(old.int64(0)).int64(16 + 8));
        FakeKernel.Reply opened = kernel.call(FuseProtocol.OPENDIR, snapshotShared.int64(0), body().int32(0).int32(0));
        assertEquals(0, opened.error(), "a listing of the snapshot's /shared opens");
    }

    /**
     * A file moved behind the kernel's back in a directory no feed follows (an S3 store's conflict
     * keeps this host's file under its copy's name, and the other host's version comes in at the
     * name): the lookup of the new name finds the node the kernel holds by the old one, and the kernel
     * is told to drop the old one. It kept it until it expired, and an `echo new > name` after a look
     * at the copy truncated and wrote the copy (a tester's S3 hosts: this host's version lost).
     */
    @Test
    void aLookupFindingAFileMovedBehindTheKernelTellsItToDropTheOldName() throws Exception {
        long shared = lookup(FuseProtocol.ROOT_ID, "shared");
        long f = keptAsCopyBehindTheKernel();
        int entriesBefore = kernel.notifications(FuseProtocol.NOTIFY_INVAL_ENTRY).size();

        assertEquals(f, lookup(shared, "doc.conflict-b"), "the file the kernel holds, at its new name");
        // an open by the node, sent before the kernel took the notice, may have come through the old
        // name: stale, once the notice is written
        assertEquals(-Linux.ESTALE, kernel.call(FuseProtocol.OPEN, f, body().int32(Linux.O_WRONLY | Linux.O_TRUNC).int32(0)).error());

        List<String> dropped = kernel.notifications(FuseProtocol.NOTIFY_INVAL_ENTRY).stream().skip(entriesBefore)
                .map(n -> n.int64(0) + "/" + StandardCharsets.UTF_8.decode(n.body().slice(16, n.int32(8)))).toList();
        assertEquals(List.of(shared + "/doc"), dropped);
        long now = lookup(shared, "doc"); // the kernel's retry walks the path again
        assertNotEquals(f, now, "the name's new file");
        FakeKernel.Reply opened = kernel.call(FuseProtocol.OPEN, f, body().int32(Linux.O_RDONLY).int32(0));
        assertEquals(0, opened.error(), "an open by the copy's name, once the notice is out");
        release(f, opened.int64(0));
        assertEquals("mine", new String(store.read(VfsPath.of("/shared/doc.conflict-b")), StandardCharsets.UTF_8));
    }

    /**
     * A file the store moves by itself (an S3 conflict keeps this host's file, with its open handles,
     * under its copy's name) is told to the mount at once: the kernel is told to drop the old name,
     * and an open by the node past the notice reaches the copy, as a reopen through /proc/self/fd/N
     * does. Nothing told either before something looked up the copy: `stat name` showed this host's
     * file until the entry expired, and the reopen, which the kernel cannot retry, was ESTALE.
     */
    @Test
    void aFileTheStoreMovesByItselfIsToldToTheKernelAtOnce() throws Exception {
        // the store at a prefix, as an S3 store is: its paths and inode numbers are not the namespace's
        MemoryStorage team = new MemoryStorage(clock);
        java.util.concurrent.atomic.AtomicReference<dev.chibifs.store.OwnMoves> moves = new java.util.concurrent.atomic.AtomicReference<>();
        router = Router.builder(store).mount(VfsPath.of("/shared/team"),
                around((dev.chibifs.store.Storage) team, dev.chibifs.store.Storage.class, (m, a) -> {
                    if (m.getName().equals("tellOwnMoves")) {
                        moves.set((dev.chibifs.store.OwnMoves) a[0]);
                    }
                    return null;
                })).build();
        stop();
        connect(OFFERED);
        long dir = lookup(lookup(FuseProtocol.ROOT_ID, "shared"), "team");
        long[] created = create(dir, "doc");
        long f = created[0];
        write(f, created[1], 0, "mine");
        release(f, created[1]);
        team.rename(VfsPath.of("/doc"), VfsPath.of("/doc.conflict-b"));
        team.write(VfsPath.of("/doc"), "theirs".getBytes(StandardCharsets.UTF_8));

        moves.get().moved(VfsPath.of("/doc"), VfsPath.of("/doc.conflict-b"));

        FakeKernel.Reply dropped = kernel.awaitNotification(n -> n.unique() == 0
                && n.int64(0) == dir && StandardCharsets.UTF_8.decode(n.body().slice(16, n.int32(8))).toString().equals("doc"));
        assertEquals(dir, dropped.int64(0), "INVAL_ENTRY of the old name");
        // an open by the node at once may have come through the old name: stale, as after a lookup
        assertEquals(-Linux.ESTALE, kernel.call(FuseProtocol.OPEN, f, body().int32(Linux.O_WRONLY | Linux.O_TRUNC).int32(0)).error());
        moves.get().moved(VfsPath.of("/doc"), VfsPath.of("/doc.conflict-b")); // told twice: nothing more
        clock.advance(HeldAnswers.NAME_DROP_SETTLED);
        FakeKernel.Reply reopened = kernel.call(FuseProtocol.OPEN, f, body().int32(Linux.O_WRONLY | Linux.O_APPEND).int32(0));
        assertEquals(0, reopened.error(), "a reopen by the node once the name's drop settled: the copy");
        assertEquals(0, write(f, reopened.int64(0), 0, " more").error());
        release(f, reopened.int64(0));
        assertEquals("mine more", new String(team.read(VfsPath.of("/doc.conflict-b")), StandardCharsets.UTF_8));
        assertEquals("theirs", new String(team.read(VfsPath.of("/doc")), StandardCharsets.UTF_8));
        assertEquals(f, lookup(dir, "doc.conflict-b"), "the copy's name finds the node");
        assertNotEquals(f, lookup(dir, "doc"), "the name finds the other file");
    }

    /**
     * /shared/doc, written here (its node returned), moved to doc.conflict-b behind the kernel's back,
     * and another file at its name: what an S3 conflict does.
     */
    private long keptAsCopyBehindTheKernel() throws Exception {
        long f = written("doc", "mine");
        store.rename(VfsPath.of("/shared/doc"), VfsPath.of("/shared/doc.conflict-b"));
        store.write(VfsPath.of("/shared/doc"), "theirs".getBytes(StandardCharsets.UTF_8));
        return f;
    }

    /**
     * An open by a node whose old name's drop was posted and written a while ago came by the node, not
     * by that name: a reopen through /proc/self/fd after a look at the copy was ESTALE once.
     */
    @Test
    void anOpenByANodeLongAfterItsOldNameWasDroppedIsNotStale() throws Exception {
        long shared = lookup(FuseProtocol.ROOT_ID, "shared");
        long f = keptAsCopyBehindTheKernel();
        assertEquals(f, lookup(shared, "doc.conflict-b"));
        kernel.awaitNotification(n -> n.unique() == 0 && n.int64(0) == shared);

        clock.advance(HeldAnswers.NAME_DROP_SETTLED);
        FakeKernel.Reply opened = kernel.call(FuseProtocol.OPEN, f, body().int32(Linux.O_RDONLY).int32(0));

        assertEquals(0, opened.error());
        release(f, opened.int64(0));
    }

    @Test
    void aLinkOfAHardLinkedFileWhoseFirstNameWentBehindTheMountIsMadeFromANameLeft() throws Exception {
        long shared = lookup(FuseProtocol.ROOT_ID, "shared");
        long f = closedNew(shared, "f2");
        // another mount: mv f2 g1; ln g1 g2
        store.rename(VfsPath.of("/shared/f2"), VfsPath.of("/shared/g1"));
        store.link(VfsPath.of("/shared/g1"), VfsPath.of("/shared/g2"));
        assertEquals(f, lookup(shared, "g1"), "the same file: the node the kernel holds, known by f2 first");

        FakeKernel.Reply link = kernel.call(FuseProtocol.LINK, shared, body().int64(f).name("g3"));

        assertEquals(0, link.error(), "ln g1 g3");
        assertEquals(f, link.int64(0));
        assertEquals(store.metadata(VfsPath.of("/shared/g1")).inode(), store.metadata(VfsPath.of("/shared/g3")).inode());
    }

    @Test
    void aLinkOfAFileWhoseNameNowStandsForAnotherIsStaleSoTheKernelLooksItUpAgain() throws Exception {
        long shared = lookup(FuseProtocol.ROOT_ID, "shared");
        long old = closedNew(shared, "g1");
        store.write(VfsPath.of("/shared/f2"), "new".getBytes(StandardCharsets.UTF_8));
        store.rename(VfsPath.of("/shared/f2"), VfsPath.of("/shared/g1")); // another mount's mv f2 g1

        assertEquals(-Linux.ESTALE, kernel.call(FuseProtocol.LINK, shared, body().int64(old).name("g2")).error());
        assertFalse(store.exists(VfsPath.of("/shared/g2")), "not a link of the file the kernel did not name");
        long now = lookup(shared, "g1"); // linkat's retry: a lookup again, then LINK of what it found
        assertEquals(0, kernel.call(FuseProtocol.LINK, shared, body().int64(now).name("g2")).error());
        assertEquals(store.metadata(VfsPath.of("/shared/g1")).inode(), store.metadata(VfsPath.of("/shared/g2")).inode());
    }

    @Test
    void aTruncateByAHardLinkedFilesNameReachesItWhereItsFirstNameWentBehindTheMount() throws Exception {
        long shared = lookup(FuseProtocol.ROOT_ID, "shared");
        long f = closedNew(shared, "f0");
        // another mount: mv f0 f1; ln f1 g1; then mv g1 f3 here
        store.rename(VfsPath.of("/shared/f0"), VfsPath.of("/shared/f1"));
        store.link(VfsPath.of("/shared/f1"), VfsPath.of("/shared/g1"));
        assertEquals(f, lookup(shared, "g1"), "the same file: the node the kernel holds, known by f0 first");
        assertEquals(0, kernel.call(FuseProtocol.RENAME, shared, body().int64(shared).name("g1").name("f3")).error());

        assertEquals(0, truncate(f, 3).error(), "truncate -s 3 f3");
        assertEquals(3, store.metadata(VfsPath.of("/shared/f3")).size());
    }

    @Test
    void aTruncateByANameNowAnotherFilesIsStaleSoTheKernelLooksItUpAgain() throws Exception {
        long shared = lookup(FuseProtocol.ROOT_ID, "shared");
        long old = closedNew(shared, "g1");
        store.write(VfsPath.of("/shared/f2"), "new file".getBytes(StandardCharsets.UTF_8));
        store.rename(VfsPath.of("/shared/f2"), VfsPath.of("/shared/g1")); // another mount's mv f2 g1

        assertEquals(-Linux.ESTALE, truncate(old, 3).error());
        assertEquals(8, store.metadata(VfsPath.of("/shared/g1")).size(), "not the file the kernel did not name");
    }

    @Test
    void fchmodAndFutimensOfAFileReplacedBehindTheMountActOnTheCallersOpenFile() throws Exception {
        kernel.pid = THIS_PROCESS;
        long shared = lookup(FuseProtocol.ROOT_ID, "shared");
        long[] old = create(shared, "f"); // kept open, as tar keeps the file it extracts
        write(old[0], old[1], 0, "old");
        // another mount: ln f kept; echo new > f.new; mv f.new f
        store.link(VfsPath.of("/shared/f"), VfsPath.of("/shared/kept"));
        store.write(VfsPath.of("/shared/f.new"), "new file".getBytes(StandardCharsets.UTF_8));
        store.rename(VfsPath.of("/shared/f.new"), VfsPath.of("/shared/f"));
        long newModified = store.metadata(VfsPath.of("/shared/f")).modified().toMillis();

        // fchmod(fd, 0755) and futimens(fd, ...) come without the handle, from the process that opened it
        assertEquals(0, setattr(old[0], FuseProtocol.FATTR_MODE, 0, 0100755).error(), "fchmod");
        kernel.pid = anotherThreadOfThisProcess();
        assertEquals(0, setattr(old[0], FuseProtocol.FATTR_MTIME, 1_000_000, 0).error(), "futimens by another thread");

        Metadata kept = store.metadata(VfsPath.of("/shared/kept"));
        assertEquals(0111, kept.mode() & 0111, "the open file's mode");
        assertEquals(1_000_000_000L, kept.modified().toMillis(), "the open file's times");
        Metadata other = store.metadata(VfsPath.of("/shared/f"));
        assertEquals(0, other.mode() & 0111, "not the file that has its name now");
        assertEquals(newModified, other.modified().toMillis());
        release(old[0], old[1]);
    }

    @Test
    void aChmodByANameNowAnotherFilesFromAnotherProcessThanTheOpenersIsStale() throws Exception {
        kernel.pid = THIS_PROCESS;
        long shared = lookup(FuseProtocol.ROOT_ID, "shared");
        long[] old = create(shared, "f");
        store.write(VfsPath.of("/shared/f.new"), "new file".getBytes(StandardCharsets.UTF_8));
        store.rename(VfsPath.of("/shared/f.new"), VfsPath.of("/shared/f")); // another mount's mv f.new f

        kernel.pid = 1; // chmod +x f by another process, through the name the kernel still has for the open file
        assertEquals(-Linux.ESTALE, setattr(old[0], FuseProtocol.FATTR_MODE, 0, 0100755).error(), "looked up again");
        assertEquals(0, store.metadata(VfsPath.of("/shared/f")).mode() & 0111);
        kernel.pid = THIS_PROCESS;
        release(old[0], old[1]);
    }

    @Test
    void fchmodAndFsetxattrOfAFileReplacedBehindTheMountActOnItForAProcessHoldingADescriptorOfIt(@org.junit.jupiter.api.io.TempDir java.nio.file.Path proc)
            throws Exception {
        kernel.pid = THIS_PROCESS;
        long[] old = openThenReplacedBehind();
        // a child the opener forked holds the descriptor (its /proc says so); a process that did not fork holds none
        int child = 4242;
        int stranger = 4243;
        long ino = store.metadata(VfsPath.of("/shared/kept")).inode();
        java.nio.file.Files.createDirectories(proc.resolve(child + "/fdinfo"));
        java.nio.file.Files.writeString(proc.resolve(child + "/fdinfo/3"), "pos:\t0\nflags:\t0100002\nmnt_id:\t45\nino:\t" + ino + "\n");
        fs.mounted(new HeldDescriptors(proc, 45, "0:42"));

        kernel.pid = stranger;
        assertEquals(-Linux.ESTALE, setattr(old[0], FuseProtocol.FATTR_MODE, 0, 0100755).error(), "chmod by the name: looked up again");
        assertEquals(-Linux.ESTALE, setxattr(old[0], "user.k", "v", 0).error());
        kernel.pid = child;
        assertEquals(0, setattr(old[0], FuseProtocol.FATTR_MODE, 0, 0100755).error(), "fchmod of the inherited descriptor");
        assertEquals(0, setxattr(old[0], "user.k", "v", 0).error(), "fsetxattr of it");

        assertEquals(0111, store.metadata(VfsPath.of("/shared/kept")).mode() & 0111, "the open file's mode");
        assertEquals(List.of("user.k"), store.xattrNames(VfsPath.of("/shared/kept")));
        assertEquals(0, store.metadata(VfsPath.of("/shared/f")).mode() & 0111, "not the file that has its name now");
        assertEquals(List.of(), store.xattrNames(VfsPath.of("/shared/f")));
        kernel.pid = THIS_PROCESS;
        release(old[0], old[1]);
    }

    /**
     * git's opendir of a directory another mount's gc removed a moment before: the kernel opened it
     * (zero-message opendir) and glibc's fstat of it was ESTALE, which the kernel does not retry, and
     * git printed "unable to open ...: Stale file handle" (a tester's finding). A process holding a
     * descriptor of it is shown it removed, as a disk shows it; any other is answered ESTALE as before,
     * and looks the name up again.
     */
    @Test
    void aDirectoryRemovedBehindTheMountIsShownRemovedToAProcessHoldingItOpen(@org.junit.jupiter.api.io.TempDir java.nio.file.Path proc)
            throws Exception {
        store.mkdir(VfsPath.of("/shared/objects"));
        long shared = lookup(FuseProtocol.ROOT_ID, "shared");
        long objects = lookup(shared, "objects");
        long ino = store.metadata(VfsPath.of("/shared/objects")).inode();
        store.delete(VfsPath.of("/shared/objects"));
        int opener = 4242;
        java.nio.file.Files.createDirectories(proc.resolve(opener + "/fdinfo"));
        java.nio.file.Files.writeString(proc.resolve(opener + "/fdinfo/3"), "pos:\t0\nflags:\t0200000\nmnt_id:\t45\nino:\t" + ino + "\n");
        fs.mounted(new HeldDescriptors(proc, 45, "0:42"));

        kernel.pid = 4243;
        assertEquals(-Linux.ESTALE, kernel.call(FuseProtocol.GETATTR, objects, body().int32(0).int32(0).int64(0)).error(),
                "a stat by the name: looked up again");
        kernel.pid = opener;
        FakeKernel.Reply fstat = kernel.call(FuseProtocol.GETATTR, objects, body().int32(0).int32(0).int64(0));
        assertEquals(0, fstat.error(), "fstat of the open directory");
        // struct fuse_attr_out: attr_valid, attr_valid_nsec, dummy, then fuse_attr: ino, size, blocks, times, mode, nlink
        assertEquals(0, fstat.int32(16 + 8 * 3 + 8 * 3 + 4 * 3 + 4), "no links: removed");
        kernel.pid = THIS_PROCESS;
    }

    /** The test's own process, whose threads /proc lists: what a request from the process that opened a file carries. */
    private static final int THIS_PROCESS = (int) ProcessHandle.current().pid();

    private static int anotherThreadOfThisProcess() throws java.io.IOException {
        try (var threads = java.nio.file.Files.list(java.nio.file.Path.of("/proc/self/task"))) {
            return threads.map(t -> Integer.parseInt(t.getFileName().toString())).filter(t -> t != THIS_PROCESS)
                    .findAny().orElseThrow();
        }
    }

    /** SETATTR without a handle, as fchmod(2) and futimens(2) send it: {@code valid}, an mtime in seconds, a mode. */
    private FakeKernel.Reply setattr(long node, int valid, long mtime, int mode) throws Exception {
        return kernel.call(FuseProtocol.SETATTR, node, body().int32(valid).int32(0)
                .int64(0).int64(0).int64(0).int64(0).int64(mtime).int64(0)
                .int32(0).int32(0).int32(0).int32(mode).int32(0).int32(0).int32(0).int32(0));
    }

    /** chmod 600 keeps no bit, yet moves the ctime, and the reply's attributes show the new one. */
    @Test
    void aChmodOfBitsNotKeptMovesTheCtimeTheReplyShows() throws Exception {
        long f = written("f", "x");
        java.time.Instant later = clock.instant().plusSeconds(5);
        clock.advance(java.time.Duration.ofSeconds(5));

        FakeKernel.Reply r = setattr(f, FuseProtocol.FATTR_MODE, 0, 0100600);

        assertEquals(0, r.error());
        assertEquals(later.getEpochSecond(), r.int64(16 + 40), "the reply's ctime");
        assertEquals(later, store.metadata(VfsPath.of("/shared/f")).changed().toInstant());
        assertEquals(0644, r.int32(16 + 60) & 07777, "the mode the path gives");
    }

    @Test
    void anOpenThatTruncatesAHardLinkedFileWhoseFirstNameIsAnotherFilesNowTruncatesThatFileOnly() throws Exception {
        long shared = lookup(FuseProtocol.ROOT_ID, "shared");
        long f = closedNew(shared, "f0");
        // another mount: mv f0 f1; ln f1 g1; then mv g1 f3 here; then a new f0 there
        store.rename(VfsPath.of("/shared/f0"), VfsPath.of("/shared/f1"));
        store.link(VfsPath.of("/shared/f1"), VfsPath.of("/shared/g1"));
        assertEquals(f, lookup(shared, "g1"));
        assertEquals(0, kernel.call(FuseProtocol.RENAME, shared, body().int64(shared).name("g1").name("f3")).error());
        rewrite("/shared/f3", "mine");
        store.write(VfsPath.of("/shared/f0"), "other file".getBytes(StandardCharsets.UTF_8));

        FakeKernel.Reply open = kernel.call(FuseProtocol.OPEN, f, body().int32(Linux.O_WRONLY | Linux.O_TRUNC).int32(0));

        assertEquals(0, open.error(), ": > f3");
        assertEquals(10, store.metadata(VfsPath.of("/shared/f0")).size(), "another file, untouched");
        assertEquals(0, store.metadata(VfsPath.of("/shared/f3")).size());
        release(f, open.int64(0));
        FakeKernel.Reply read = openToRead(f);
        assertEquals(0, read.error(), "cat f3");
    }

    /** SETATTR of the size by path (truncate(2)): struct fuse_setattr_in, no handle. */
    private FakeKernel.Reply truncate(long node, long size) throws Exception {
        return kernel.call(FuseProtocol.SETATTR, node, body().int32(FuseProtocol.FATTR_SIZE).int32(0)
                .int64(0).int64(size).int64(0).int64(0).int64(0).int64(0).int64(0).int64(0).int64(0).int64(0));
    }

    /** TMPFILE, as open(2) with O_TMPFILE|O_RDWR sends it (the kernel's name for the dentry is "/"). */
    private FakeKernel.Reply tmpfile(long dir) throws Exception {
        return kernel.call(FuseProtocol.TMPFILE, dir,
                body().int32(Linux.O_RDWR | Linux.O_TMPFILE).int32(0100644).int32(022).int32(0).name("/"));
    }

    private List<String> names(String dir) throws Exception {
        return store.list(VfsPath.of(dir)).stream().map(dev.chibifs.store.Entry::name).toList();
    }

    @Test
    void anUnnamedFileIsANodeOfItsOwnUntilALinkNamesIt() throws Exception {
        store.mkdir(VfsPath.of("/shared/out"));
        long out = lookup(lookup(FuseProtocol.ROOT_ID, "shared"), "out");
        FakeKernel.Reply t = tmpfile(out);
        assertEquals(0, t.error());
        long node = t.int64(0);
        long fh = t.int64(FuseProtocol.ENTRY_OUT);
        assertEquals(0, t.int32(40 + 64), "nlink 0: what lets the kernel's linkat(2) name it");
        assertEquals(0, write(node, fh, 0, "done\n").error());
        assertEquals(List.of(), names("/shared/out"));
        FakeKernel.Reply link = kernel.call(FuseProtocol.LINK, out, body().int64(node).name("ready"));
        assertEquals(0, link.error());
        assertEquals(node, link.int64(0), "the new name is the open file's node");
        assertEquals(1, link.int32(40 + 64), "nlink");
        assertEquals(node, lookup(out, "ready"));
        assertEquals(0, write(node, fh, 5, "!").error());
        release(node, fh);
        assertEquals("done\n!", new String(store.read(VfsPath.of("/shared/out/ready")), StandardCharsets.UTF_8));
        assertEquals(1, stats.count("TMPFILE"));
    }

    @Test
    void anOpenOfAFileTheKernelKnowsByNoNameOpensTheFileAnotherOpenHolds() throws Exception {
        long shared = lookup(FuseProtocol.ROOT_ID, "shared");
        long[] log = create(shared, "log");
        write(log[0], log[1], 0, "kept");
        assertEquals(0, kernel.call(FuseProtocol.UNLINK, shared, body().name("log")).error());
        // only an open of /proc/PID/fd/N reaches it now: the kernel dropped the name with the UNLINK
        FakeKernel.Reply again = kernel.call(FuseProtocol.OPEN, log[0], body().int32(Linux.O_RDONLY).int32(0));
        assertEquals(0, again.error());
        assertEquals("kept", StandardCharsets.UTF_8.decode(read(log[0], again.int64(0)).body()).toString());
        release(log[0], again.int64(0));
        release(log[0], log[1]);
        // no open file left to open it through: ESTALE, as for a path walk that found it a moment
        // before; the kernel's retry, with no name to look up again, asks of the same node: gone
        assertEquals(-Linux.ESTALE, openError(log[0]));
        assertEquals(-Linux.ENOENT, openError(log[0]), "no open file left to open it through");
    }

    /**
     * A path walk to a name that always stands for a file (a new version made as t, linked as th,
     * renamed over f, t unlinked: as git writes objects and maildir delivers), found the node while
     * its first name was t; this mount's unlink of t and rename over f came before the OPEN looked
     * in the store. ENOENT said a name that never went missing was not there; ESTALE makes the
     * kernel walk it again.
     */
    @Test
    void anOpenOfANameRenamedOverOnThisMountAfterItsLookupOpensWhatItStandsForNow() throws Exception {
        HeldCall held = holdingFirst("open", "/shared/t");
        long shared = lookup(FuseProtocol.ROOT_ID, "shared");
        long t = written("t", "v1");
        assertEquals(0, kernel.call(FuseProtocol.LINK, shared, body().int64(t).name("f")).error());
        long walked = lookup(shared, "f");
        assertEquals(t, walked, "one node, first named t");
        written("th", "v2");

        held.armed.set(true);
        long opening = kernel.send(FuseProtocol.OPEN, walked, body().int32(Linux.O_RDONLY).int32(0));
        assertTrue(held.reached.await(5, java.util.concurrent.TimeUnit.SECONDS), "the OPEN took its path, t");
        assertEquals(0, kernel.call(FuseProtocol.UNLINK, shared, body().name("t")).error());
        assertEquals(0, kernel.call(FuseProtocol.RENAME, shared, body().int64(shared).name("th").name("f")).error());
        held.released.countDown();
        FakeKernel.Reply stale = kernel.reply();
        assertEquals(opening, stale.unique());
        assertEquals(-Linux.ESTALE, stale.error(), "not ENOENT: the kernel looks the name up again");

        long again = lookup(shared, "f");
        assertNotEquals(walked, again);
        FakeKernel.Reply open = openToRead(again);
        assertEquals("v2", StandardCharsets.UTF_8.decode(read(again, open.int64(0)).body()).toString());
        release(again, open.int64(0));
    }

    @Test
    void anUnnamedFileNeverLinkedLeavesNothingAndItsNodeGoesAtTheForget() throws Exception {
        store.mkdir(VfsPath.of("/shared/out"));
        long out = lookup(lookup(FuseProtocol.ROOT_ID, "shared"), "out");
        lookup(FuseProtocol.ROOT_ID, "sys");
        int before = fs.nodes.size();
        FakeKernel.Reply t = tmpfile(out);
        long node = t.int64(0);
        write(node, t.int64(FuseProtocol.ENTRY_OUT), 0, "scratch");
        FakeKernel.Reply attr = kernel.call(FuseProtocol.GETATTR, node, body().int32(0).int32(0).int64(0));
        assertEquals(0, attr.error(), "fstat without its handle: the open file answers");
        assertEquals(7, attr.int64(16 + 8), "size");
        release(node, t.int64(FuseProtocol.ENTRY_OUT));
        kernel.send(FuseProtocol.FORGET, node, body().int64(1));
        lookup(FuseProtocol.ROOT_ID, "sys"); // one worker: served after the forget
        assertEquals(before, fs.nodes.size());
        assertNull(fs.nodes.get(node));
        assertEquals(List.of(), names("/shared/out"));
    }

    @Test
    void anUnnamedFileWhereTheCallerMayNotWriteIsEaccesAndLeavesNothing() throws Exception {
        long bob = lookup(lookup(FuseProtocol.ROOT_ID, "home"), "bob");
        List<String> before = names("/home/bob");
        int nodes = fs.nodes.size();
        assertEquals(-Linux.EACCES, tmpfile(bob).error());
        assertEquals(before, names("/home/bob"));
        assertEquals(nodes, fs.nodes.size());
        assertEquals(1L, stats.snapshot().denials().get("alice"));
    }

    @Test
    void anUnnamedFileIsNamedOnlyInTheZoneItWasMadeIn() throws Exception {
        long shared = lookup(FuseProtocol.ROOT_ID, "shared");
        long alice = lookup(lookup(FuseProtocol.ROOT_ID, "home"), "alice");
        FakeKernel.Reply t = tmpfile(shared);
        long node = t.int64(0);
        assertEquals(-Linux.EXDEV, kernel.call(FuseProtocol.LINK, alice, body().int64(node).name("mine")).error(),
                "hard links cannot cross zones");
        assertFalse(store.exists(VfsPath.of("/home/alice/mine")));
        assertEquals(0, kernel.call(FuseProtocol.LINK, shared, body().int64(node).name("ours")).error());
        release(node, t.int64(FuseProtocol.ENTRY_OUT));
        assertTrue(store.exists(VfsPath.of("/shared/ours")));
    }

    @Test
    void forgetTakesBackLookupsAndANodeWithNoneLeftGoes() throws Exception {
        long shared = lookup(FuseProtocol.ROOT_ID, "shared");
        long again = lookup(FuseProtocol.ROOT_ID, "shared");
        assertEquals(shared, again);
        int before = fs.nodes.size();
        kernel.send(FuseProtocol.FORGET, shared, body().int64(1));
        kernel.send(FuseProtocol.BATCH_FORGET, 0, body().int32(1).int32(0).int64(shared).int64(1));
        // one worker: a request behind the forgets is served after them
        lookup(FuseProtocol.ROOT_ID, "sys");
        assertEquals(before, fs.nodes.size(), "shared went, sys came");
        assertEquals(null, fs.nodes.get(shared));
    }

    @Test
    void heldCountsWhatTheKernelHoldsAndGoesDownWithForgetAndRelease() throws Exception {
        FuseDaemon.Held before = fs.held();
        long shared = lookup(FuseProtocol.ROOT_ID, "shared");
        long[] file = create(shared, "held.md");
        assertEquals(new FuseDaemon.Held(before.nodes() + 2, 1, 0), fs.held());
        release(file[0], file[1]);
        kernel.send(FuseProtocol.BATCH_FORGET, 0, body().int32(2).int32(0).int64(file[0]).int64(1).int64(shared).int64(1));
        lookup(FuseProtocol.ROOT_ID, "sys"); // one worker: served after the forgets
        assertEquals(new FuseDaemon.Held(before.nodes() + 1, 0, 0), fs.held(), "only sys is held");
    }

    /**
     * The kernel waits for a request it has sent even when its process is killed: one that waits in
     * the store (an S3 endpoint that does not answer) held `kill -9` as long. An INTERRUPT of a dying
     * process's request answers it EINTR at once, and the open it made meanwhile, whose own reply the
     * kernel then refuses, is given back.
     */
    @Test
    void aDyingProcesssRequestIsAnsweredAtItsInterruptAndWhatItOpenedIsGivenBack() throws Exception {
        java.util.concurrent.CountDownLatch inStore = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.CountDownLatch goOn = new java.util.concurrent.CountDownLatch(1);
        wrapOpens((i, h) -> {
            if (i == 1) { // the open below; the first is written()'s
                waitInStore(inStore, goOn);
            }
            return h;
        });
        stop();
        connect(OFFERED, 2); // one worker waits in the store, the other reads the INTERRUPT
        long f = written("slow", "x");
        int before = fs.held().openFiles();
        session.dyingWhen(tid -> tid == 4242);
        kernel.pid = 4242;
        long opening = kernel.send(FuseProtocol.OPEN, f, body().int32(Linux.O_RDONLY).int32(0));
        try {
            inStore.await();
            kernel.pid = 1234;
            kernel.send(FuseProtocol.INTERRUPT, 0, body().int64(opening));
            FakeKernel.Reply answered = kernel.reply();
            assertEquals(opening, answered.unique());
            assertEquals(-Linux.EINTR, answered.error());
            kernel.refuse.add(opening); // the kernel has forgotten the request: the open's own reply fails
        } finally {
            goOn.countDown(); // else the session cannot end
        }
        long until = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(10);
        // its reply is tried (and refused) after the open is made, and the release comes after that
        while (!(kernel.refuse.isEmpty() && fs.held().openFiles() == before) && System.nanoTime() < until) {
            Thread.onSpinWait();
        }
        assertTrue(kernel.refuse.isEmpty(), "its reply was tried, and refused");
        assertEquals(before, fs.held().openFiles(), "the open nobody got is released");
    }

    /**
     * The kernel sends one INTERRUPT per request, at its caller's first signal. A caller that handles
     * it lives on, and its request goes on; when it is killed after, nobody tells the daemon, and
     * the kill waited out the store. The interrupted request is looked at until it ends.
     */
    @Test
    void aRequestInterruptedByAHandledSignalIsAnsweredOnceItsCallerIsKilled() throws Exception {
        java.util.concurrent.CountDownLatch inStore = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.CountDownLatch goOn = new java.util.concurrent.CountDownLatch(1);
        wrapOpens((i, h) -> {
            if (i == 1) {
                waitInStore(inStore, goOn);
            }
            return h;
        });
        stop();
        connect(OFFERED, 2);
        long f = written("slow", "x");
        java.util.concurrent.atomic.AtomicBoolean killed = new java.util.concurrent.atomic.AtomicBoolean();
        session.dyingWhen(tid -> tid == 4242 && killed.get());
        kernel.pid = 4242;
        long opening = kernel.send(FuseProtocol.OPEN, f, body().int32(Linux.O_RDONLY).int32(0));
        try {
            inStore.await();
            kernel.pid = 1234;
            kernel.send(FuseProtocol.INTERRUPT, 0, body().int64(opening)); // SIGINT, which it handles
            long until = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(5);
            while (session.interrupted().watching() == 0 && System.nanoTime() < until) {
                Thread.onSpinWait();
            }
            assertEquals(1, session.interrupted().watching(), "a living caller's request goes on, watched");
            killed.set(true); // then SIGKILL, of which the kernel says nothing
            FakeKernel.Reply answered = kernel.reply();
            assertEquals(opening, answered.unique());
            assertEquals(-Linux.EINTR, answered.error());
            kernel.refuse.add(opening);
        } finally {
            goOn.countDown();
        }
        long until = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(10);
        while (!kernel.refuse.isEmpty() && System.nanoTime() < until) {
            Thread.onSpinWait();
        }
        assertTrue(kernel.refuse.isEmpty(), "its own reply was tried, and refused");
        assertEquals(0, session.interrupted().watching());
    }

    /** A store call that says it has come ({@code inStore}) and waits for {@code goOn}, as one waiting on S3. */
    private static void waitInStore(java.util.concurrent.CountDownLatch inStore, java.util.concurrent.CountDownLatch goOn) {
        inStore.countDown();
        try {
            goOn.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * A lock request is not answered early for a dying process: its close's RELEASE, which lets go of
     * the owner's locks, would come while the lock was still being taken, and the lock stayed held.
     */
    @Test
    void aDyingProcesssLockRequestIsAnsweredByItselfNotAtItsInterrupt() throws Exception {
        java.util.concurrent.CountDownLatch inStore = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.CountDownLatch goOn = new java.util.concurrent.CountDownLatch(1);
        wrapOpens((i, h) -> withLocks(h, locks -> around(locks, dev.chibifs.store.FileLocks.class, (lm, la) -> {
            if (lm.getName().equals("tryFlock")) {
                waitInStore(inStore, goOn);
            }
            return null;
        })));
        stop();
        connect(OFFERED | FuseProtocol.POSIX_LOCKS | FuseProtocol.FLOCK_LOCKS, 2);
        long[] f = create(lookup(FuseProtocol.ROOT_ID, "shared"), "lock");
        session.dyingWhen(tid -> tid == 4242);
        kernel.pid = 4242;
        long locking = kernel.send(FuseProtocol.SETLK, f[0], flock(f[1], 7));
        try {
            inStore.await();
            kernel.pid = 1234;
            kernel.send(FuseProtocol.INTERRUPT, 0, body().int64(locking));
        } finally {
            goOn.countDown();
        }
        FakeKernel.Reply first = kernel.reply();
        assertEquals(locking, first.unique());
        assertEquals(0, first.error(), "its own answer, not an early EINTR");
    }

    @Test
    void aLookupWhoseReplyIsNotDeliveredCountsNoLookup() throws Exception {
        int before = fs.nodes.size();
        kernel.refuse.add(kernel.nextUnique()); // its reply fails as an interrupted request's does
        kernel.send(FuseProtocol.LOOKUP, FuseProtocol.ROOT_ID, body().name("shared"));
        lookup(FuseProtocol.ROOT_ID, "sys");
        assertEquals(before + 1, fs.nodes.size(), "only sys is held");
    }

    /**
     * Follows every directory the kernel looks into and tells nothing: what a listing sends is then
     * what the daemon read or kept, with no feed to correct it.
     */
    private static class SilentFollower implements StoreFollower {
        @Override
        public boolean follows(NodeTable.Node dir) {
            return dir.followKey >= 0;
        }

        @Override
        public boolean lookingIn(NodeTable.Node dir) {
            dir.followKey = dir.id;
            return true;
        }
    }

    /** How long the store behind {@link #holding} says its answers about any directory hold. */
    private final java.util.concurrent.atomic.AtomicReference<java.time.Duration> held = new java.util.concurrent.atomic.AtomicReference<>();
    /** What it says instead about the directories named here. */
    private final Map<VfsPath, java.time.Duration> heldIn = new java.util.concurrent.ConcurrentHashMap<>();
    /** What the store of {@link #connectHolding} says of {@link dev.chibifs.store.Storage#answersExpire}. */
    private final java.util.concurrent.atomic.AtomicBoolean expires = new java.util.concurrent.atomic.AtomicBoolean();

    /** Throws {@code t} from an interception: the intercepted method declares it (IOException). */
    @SuppressWarnings("unchecked")
    private static <E extends Throwable> E asDeclared(Throwable t) throws E {
        throw (E) t;
    }

    /** {@code target} behind a proxy of {@code type}: {@code intercept} answers first, null passing the call on. */
    @SuppressWarnings("unchecked")
    private static <T> T around(T target, Class<T> type, java.util.function.BiFunction<java.lang.reflect.Method, Object[], Object> intercept) {
        return (T) java.lang.reflect.Proxy.newProxyInstance(FuseFileSystemTest.class.getClassLoader(), new Class<?>[]{type},
                (proxy, method, args) -> {
                    Object answer = intercept.apply(method, args);
                    if (answer != null) {
                        return answer;
                    }
                    try {
                        return method.invoke(target, args);
                    } catch (java.lang.reflect.InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
    }

    /** A store call held where a request looks in the store, while another request is served. */
    private static final class HeldCall {
        final java.util.concurrent.CountDownLatch reached = new java.util.concurrent.CountDownLatch(1);
        final java.util.concurrent.CountDownLatch released = new java.util.concurrent.CountDownLatch(1);
        /** Set to hold the next such call, and that one only. */
        final java.util.concurrent.atomic.AtomicBoolean armed = new java.util.concurrent.atomic.AtomicBoolean();
    }

    /**
     * A new session with two workers, {@link #router} over {@link #store}, whose first {@code method}
     * call on a path ending in {@code suffix} once armed waits until released: a request caught
     * between working out its path and looking in the store.
     */
    private HeldCall holdingFirst(String method, String suffix) throws Exception {
        HeldCall held = new HeldCall();
        router = Router.of(around((dev.chibifs.store.Storage) store, dev.chibifs.store.Storage.class, (m, a) -> {
            if (m.getName().equals(method) && String.valueOf(a[0]).endsWith(suffix) && held.armed.compareAndSet(true, false)) {
                held.reached.countDown();
                try {
                    assertTrue(held.released.await(5, java.util.concurrent.TimeUnit.SECONDS));
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
            }
            return null;
        }));
        stop();
        connect(OFFERED, 2);
        return held;
    }

    /** {@link #router} over {@link #store}, each handle its opens give (the first 0, then 1, ...) passed through {@code wrap}. */
    private void wrapOpens(java.util.function.BiFunction<Integer, dev.chibifs.store.FileHandle, dev.chibifs.store.FileHandle> wrap) {
        java.util.concurrent.atomic.AtomicInteger opens = new java.util.concurrent.atomic.AtomicInteger();
        router = Router.of(around((dev.chibifs.store.Storage) store, dev.chibifs.store.Storage.class, (m, a) -> {
            if (!m.getName().equals("open")) {
                return null;
            }
            try {
                return wrap.apply(opens.getAndIncrement(), (dev.chibifs.store.FileHandle) m.invoke(store, a));
            } catch (ReflectiveOperationException e) {
                throw new IllegalStateException(e);
            }
        }));
    }

    /** {@code h} with its locks as {@code wrap} makes them of its own. */
    private static dev.chibifs.store.FileHandle withLocks(dev.chibifs.store.FileHandle h,
            java.util.function.Function<dev.chibifs.store.FileLocks, dev.chibifs.store.FileLocks> wrap) {
        dev.chibifs.store.FileLocks locks;
        try {
            locks = wrap.apply(h.locks());
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
        return around(h, dev.chibifs.store.FileHandle.class, (m, a) -> m.getName().equals("locks") ? locks : null);
    }

    /**
     * Connects over {@link #store} as a store whose answers hold for {@link #held} (as an S3 store's
     * hold for what is left of a listing's validity), unfollowed, the mount asking for an hour.
     */
    private void connectHolding(long offered) throws Exception {
        held.set(java.time.Duration.ofSeconds(30));
        router = Router.of(around((dev.chibifs.store.Storage) store, dev.chibifs.store.Storage.class,
                (m, a) -> m.getName().equals("answersHeld") ? heldIn.getOrDefault((VfsPath) a[0], held.get())
                        : m.getName().equals("answersExpire") ? (Object) expires.get() : null));
        timeouts = FuseFileSystem.Timeouts.of(3600, 3600, 3600);
        stop();
        connect(offered);
        fs.follow(StoreFollower.UNFOLLOWED);
    }

    /** A failure that cannot even be printed: the last catch's own log line throws. */
    private static final class Unprintable extends Error {
        private static final long serialVersionUID = 1L;

        @Override
        public String toString() {
            throw new IllegalStateException("not even its name");
        }
    }

    /** A request never answered hangs its caller for as long as the mount lives: even a failed answer is EIO. */
    @Test
    void aFailureWhoseAnswerFailsTooIsStillAnsweredAndTheWorkerGoesOn() throws Exception {
        router = Router.of(around((dev.chibifs.store.Storage) store, dev.chibifs.store.Storage.class, (m, a) -> {
            if (m.getName().equals("metadata") && String.valueOf(a[0]).endsWith("/cursed")) {
                throw new Unprintable();
            }
            return null;
        }));
        stop();
        connect(OFFERED);
        long shared = lookup(FuseProtocol.ROOT_ID, "shared");
        assertEquals(-Linux.EIO, kernel.call(FuseProtocol.LOOKUP, shared, body().name("cursed")).error());
        assertEquals(-Linux.ENOENT, kernel.call(FuseProtocol.LOOKUP, shared, body().name("plain")).error(),
                "the one worker serves on");
    }

    /**
     * A store whose directory has gone fails every request with EIO: a warning per request filled
     * the disk the store was on. The first says why; the rest are counted and summed up in one line.
     */
    @Test
    void aStoreFailingEveryRequestIsSaidOnceAndItsRepeatsSummedUp() throws Exception {
        router = Router.of(around((dev.chibifs.store.Storage) store, dev.chibifs.store.Storage.class, (m, a) -> {
            if (m.getName().equals("metadata") && String.valueOf(a[0]).contains("/gone")) {
                throw FuseFileSystemTest.<RuntimeException>asDeclared(new dev.chibifs.sys.ErrnoException(Linux.EIO,
                        String.valueOf(a[0]), "Input/output error: the store directory /s has gone (moved, removed or replaced)"));
            }
            return null;
        }));
        stop();
        connect(OFFERED);
        java.util.concurrent.atomic.AtomicLong now = new java.util.concurrent.atomic.AtomicLong();
        RepeatedFailuresTest.Collected lines = new RepeatedFailuresTest.Collected();
        session.failuresTo(new RepeatedFailures(now::get, lines));
        long shared = lookup(FuseProtocol.ROOT_ID, "shared");
        for (int i = 0; i < 100; i++) {
            assertEquals(-Linux.EIO, kernel.call(FuseProtocol.LOOKUP, shared, body().name("gone" + i)).error());
        }
        assertEquals(List.of("LOOKUP of node " + shared + ": /shared/gone0: Input/output error: the store directory /s"
                + " has gone (moved, removed or replaced)"), lines.warnings);
        now.addAndGet(RepeatedFailures.WINDOW_NANOS);
        assertEquals(-Linux.ENOENT, kernel.call(FuseProtocol.LOOKUP, shared, body().name("plain")).error());
        assertEquals("Input/output error: the store directory /s has gone (moved, removed or replaced): 99 more times in 60 s",
                lines.warnings.get(1), "summed up at the first request after the window");
        assertEquals(2, lines.warnings.size());
    }

    @Test
    void chibifsSyncTellsTheKernelToAskAgainWhatItWasToldFromHeldAnswers() throws Exception {
        connectHolding(OFFERED | FuseProtocol.HAS_EXPIRE_ONLY);
        long shared = lookup(FuseProtocol.ROOT_ID, "shared");
        long f = written("f", "x");
        String missingName = "m".repeat(Linux.NAME_MAX); // its notice is longer than the others (a sync failed on names over 47 bytes)
        FakeKernel.Reply missing = kernel.call(FuseProtocol.LOOKUP, shared, body().name(missingName));
        assertEquals(List.of(0, 0L, 30L), List.of(missing.error(), missing.int64(0), missing.int64(16)),
                "a missing name, kept as long as the store holds its answer");
        int entriesBefore = kernel.notifications(FuseProtocol.NOTIFY_INVAL_ENTRY).size();

        assertEquals(java.time.Duration.ZERO, fs.heldAnswers.expireHeldAnswers(), "nothing left to wait out");
        // struct fuse_notify_inval_entry_out: parent, namelen, flags; then the name
        List<String> staled = kernel.notifications(FuseProtocol.NOTIFY_INVAL_ENTRY).stream().skip(entriesBefore)
                .map(n -> n.int64(0) + "/" + StandardCharsets.UTF_8.decode(n.body().slice(16, n.int32(8)))
                        + (n.int32(12) == FuseProtocol.EXPIRE_ONLY ? "" : " unhashed"))
                .sorted().toList();
        assertEquals(java.util.stream.Stream.of(FuseProtocol.ROOT_ID + "/shared", shared + "/f", shared + "/" + missingName)
                .sorted().toList(), staled, "each name staled, none unhashed (getcwd)");
        // struct fuse_notify_inval_inode_out: ino, off (-1: attributes only), len
        assertTrue(kernel.notifications(FuseProtocol.NOTIFY_INVAL_INODE).stream()
                .anyMatch(n -> n.int64(0) == f && n.int64(8) == -1), "the file's attributes dropped");
    }

    @Test
    void whereTheKernelCannotStaleANameASyncWaitsOutWhatItWasToldFromHeldAnswers() throws Exception {
        connectHolding(OFFERED);
        long shared = lookup(FuseProtocol.ROOT_ID, "shared");
        assertEquals(0, kernel.call(FuseProtocol.LOOKUP, shared, body().name("missing")).error());
        int entriesBefore = kernel.notifications(FuseProtocol.NOTIFY_INVAL_ENTRY).size();
        java.time.Duration left = fs.heldAnswers.expireHeldAnswers();
        assertTrue(left.compareTo(java.time.Duration.ofSeconds(29)) > 0 && left.compareTo(java.time.Duration.ofSeconds(30)) <= 0,
                "what is left of the 30 s the kernel was given: " + left);
        assertEquals(entriesBefore, kernel.notifications(FuseProtocol.NOTIFY_INVAL_ENTRY).size(),
                "an INVAL_ENTRY there would unhash the name");
    }

    /** An S3 listing past its validity holds for nothing: not the brief second of a store that cannot say. */
    @Test
    void answersOfAStoreWhoseValidityRanOutAreKeptForNoTime() throws Exception {
        expires.set(true);
        connectHolding(OFFERED);
        long shared = lookup(FuseProtocol.ROOT_ID, "shared");
        written("f", "x");
        held.set(java.time.Duration.ZERO);
        FakeKernel.Reply file = kernel.call(FuseProtocol.LOOKUP, shared, body().name("f"));
        // struct fuse_entry_out: nodeid, generation, entry_valid, attr_valid, entry_valid_nsec, attr_valid_nsec
        assertEquals(List.of(0L, 0L, 0, 0), List.of(file.int64(16), file.int64(24), file.int32(32), file.int32(36)));
        held.set(java.time.Duration.ofMillis(250));
        file = kernel.call(FuseProtocol.LOOKUP, shared, body().name("f"));
        assertEquals(List.of(0L, 250_000_000), List.of(file.int64(16), file.int32(32)), "while it holds, as long");
    }

    @Test
    void whereChangesAreNotFollowedTheKernelKeepsAnswersAsLongAsTheStoreSaysTheyHold() throws Exception {
        connectHolding(OFFERED);
        long shared = lookup(FuseProtocol.ROOT_ID, "shared");
        written("f", "x");
        assertEquals(0, kernel.call(FuseProtocol.MKDIR, shared, body().int32(040755).int32(022).name("d")).error());

        // struct fuse_entry_out: nodeid, generation, entry_valid, attr_valid, entry_valid_nsec, attr_valid_nsec
        FakeKernel.Reply file = kernel.call(FuseProtocol.LOOKUP, shared, body().name("f"));
        assertEquals(List.of(30L, 30L), List.of(file.int64(16), file.int64(24)), "the store's word, within the mount's hour");
        heldIn.put(VfsPath.of("/shared/d"), java.time.Duration.ofSeconds(10));
        FakeKernel.Reply dir = kernel.call(FuseProtocol.LOOKUP, shared, body().name("d"));
        assertEquals(List.of(30L, 10L), List.of(dir.int64(16), dir.int64(24)),
                "a directory's attributes change with what is in it: while its own names are held too");
        heldIn.put(VfsPath.of("/shared/d"), java.time.Duration.ZERO);
        dir = kernel.call(FuseProtocol.LOOKUP, shared, body().name("d"));
        assertEquals(List.of(30L, 1L), List.of(dir.int64(16), dir.int64(24)), "else briefly");
        FakeKernel.Reply missing = kernel.call(FuseProtocol.LOOKUP, shared, body().name("nothing"));
        assertEquals(List.of(0, 0L, 30L), List.of(missing.error(), missing.int64(0), missing.int64(16)), "kept missing as long");
        // struct fuse_attr_out: attr_valid, attr_valid_nsec
        assertEquals(30L, kernel.call(FuseProtocol.GETATTR, file.int64(0), body().int32(0).int32(0).int64(0)).int64(0));

        held.set(java.time.Duration.ofMillis(250));
        file = kernel.call(FuseProtocol.LOOKUP, shared, body().name("f"));
        assertEquals(List.of(0L, 250_000_000), List.of(file.int64(16), file.int32(32)));
        held.set(java.time.Duration.ZERO);
        file = kernel.call(FuseProtocol.LOOKUP, shared, body().name("f"));
        assertEquals(List.of(1L, 1L), List.of(file.int64(16), file.int64(24)), "the store cannot say: briefly");
        assertEquals(-Linux.ENOENT, kernel.call(FuseProtocol.LOOKUP, shared, body().name("nothing")).error(),
                "and a missing name not at all: its appearance would not be told");
    }

    @Test
    void anOpenThatFindsTheFileChangedSinceTheKernelWasToldItsAttributesDropsThem() throws Exception {
        // an S3 store's open fetches the content another host changed after the listing the kernel
        // keeps: the size the kernel holds would cut reads of the new content short
        connectHolding(OFFERED | FuseProtocol.DIRECT_IO_ALLOW_MMAP);
        store.write(VfsPath.of("/shared/f"), "old".getBytes(StandardCharsets.UTF_8));
        clock.advance(FuseFileSystem.CHANGING_FOR);
        long f = lookup(lookup(FuseProtocol.ROOT_ID, "shared"), "f");
        openToRead(f);
        assertEquals(List.of(), invalidated(f), "as the kernel was told: nothing to drop");
        store.append(VfsPath.of("/shared/f"), ", and more".getBytes(StandardCharsets.UTF_8));
        assertTrue(readsDirectly(openToRead(f)), "just changed: past the page cache, which stays as it is");
        assertEquals(List.of(-1L), invalidated(f), "its attributes");
        openToRead(f);
        assertEquals(List.of(-1L), invalidated(f), "told once");
    }

    @Test
    void aListingWhoseStoreHoldsItsAnswersIsKeptUntilTheyStopHolding() throws Exception {
        connectHolding(OFFERED | FuseProtocol.NO_OPENDIR_SUPPORT);
        List<Long> delays = new java.util.ArrayList<>();
        List<Runnable> tasks = new java.util.ArrayList<>();
        long[] now = {0};
        fs.heldAnswers.dropHeldListingsWith((nanos, task) -> {
            delays.add(nanos);
            tasks.add(task);
        }, () -> now[0]);
        long shared = lookup(FuseProtocol.ROOT_ID, "shared");
        store.write(VfsPath.of("/shared/a"), new byte[0]);
        assertEquals(java.util.Set.of(".", "..", "a"), readOn(shared, 0, 0, new java.util.HashSet<>()));
        assertEquals(List.of(), invalidatedListings(shared), "kept while the store's answers hold");
        assertEquals(List.of(30_000_000_000L), delays);

        now[0] = 30_000_000_000L;
        tasks.remove(0).run();
        kernel.awaitNotification(n -> n.error() == FuseProtocol.NOTIFY_INVAL_INODE && n.int64(0) == shared && n.int64(8) == 0);
        held.set(java.time.Duration.ZERO);
        readOn(shared, 0, 0, new java.util.HashSet<>());
        assertEquals(List.of(0L, 0L), invalidatedListings(shared), "the store cannot say: dropped once read, as before");
        assertEquals(List.of(), tasks);
    }

    @Test
    void anOpenedDirectoryWhoseStoreHoldsItsAnswersIsCachedByTheKernelUntilTheyStopHolding() throws Exception {
        connectHolding(OFFERED);
        List<Long> delays = new java.util.ArrayList<>();
        fs.heldAnswers.dropHeldListingsWith((nanos, task) -> delays.add(nanos), () -> 0);
        long shared = lookup(FuseProtocol.ROOT_ID, "shared");
        FakeKernel.Reply open = kernel.call(FuseProtocol.OPENDIR, shared, body().int32(0).int32(0));
        assertEquals(FuseProtocol.FOPEN_CACHE_DIR | FuseProtocol.FOPEN_KEEP_CACHE, open.int32(8));
        readOn(shared, open.int64(0), 0, new java.util.HashSet<>());
        assertEquals(List.of(30_000_000_000L), delays);
        held.set(java.time.Duration.ZERO);
        assertEquals(0, kernel.call(FuseProtocol.OPENDIR, shared, body().int32(0).int32(0)).int32(8));
    }

    /** The size each name of a whole READDIRPLUS listing of {@code dir} carries (attr.size of its entry). */
    private Map<String, Long> listedSizes(long dir) throws Exception {
        long fh = kernel.call(FuseProtocol.OPENDIR, dir, body().int32(0).int32(0)).int64(0);
        FakeKernel.Reply list = kernel.call(FuseProtocol.READDIRPLUS, dir,
                body().int64(fh).int64(0).int32(65536).int32(0).int64(0).int32(0).int32(0));
        kernel.call(FuseProtocol.RELEASEDIR, dir, body().int64(fh).int32(0).int32(0).int64(0));
        Map<String, Long> sizes = new java.util.TreeMap<>();
        for (int at = 0; at < list.body().limit(); ) {
            int nameLength = list.int32(at + FuseProtocol.ENTRY_OUT + 16);
            byte[] name = new byte[nameLength];
            list.body().get(at + FuseProtocol.DIRENTPLUS, name);
            sizes.put(new String(name, StandardCharsets.UTF_8), list.int64(at + 48));
            at += FuseReply.align8(FuseProtocol.DIRENTPLUS + nameLength);
        }
        sizes.keySet().removeAll(List.of(".", ".."));
        return sizes;
    }

    @Test
    void aListingSendsWhatWasKeptOfAFileUntilAChangeThroughTheMount() throws Exception {
        fs.follow(new SilentFollower());
        long shared = lookup(FuseProtocol.ROOT_ID, "shared");
        long[] f = create(shared, "f");
        write(f[0], f[1], 0, "12345");
        release(f[0], f[1]);
        assertEquals(Map.of("f", 5L), listedSizes(shared), "read, and kept");
        store.append(VfsPath.of("/shared/f"), "6789".getBytes(StandardCharsets.UTF_8));
        assertEquals(Map.of("f", 5L), listedSizes(shared), "kept: a change behind the mount is the feed's to tell");

        FakeKernel.Reply open = kernel.call(FuseProtocol.OPEN, f[0], body().int32(Linux.O_WRONLY).int32(0));
        assertEquals(0, open.error());
        long fh = open.int64(0);
        assertEquals(Map.of("f", 9L), listedSizes(shared), "open for writing: read afresh");
        write(f[0], fh, 9, "0");
        assertEquals(Map.of("f", 10L), listedSizes(shared), "still open: its writes may bypass the daemon");
        release(f[0], fh);
        assertEquals(Map.of("f", 10L), listedSizes(shared), "read after the release, and kept again");
        store.append(VfsPath.of("/shared/f"), "1".getBytes(StandardCharsets.UTF_8));
        assertEquals(Map.of("f", 10L), listedSizes(shared));

        // struct fuse_setattr_in: valid, padding, fh, size, lock_owner, atime, mtime, ctime, then eight 32-bit fields
        FakeKernel.Reply truncate = kernel.call(FuseProtocol.SETATTR, f[0], body().int32(FuseProtocol.FATTR_SIZE).int32(0)
                .int64(0).int64(3).int64(0).int64(0).int64(0).int64(0).int64(0).int64(0).int64(0).int64(0));
        assertEquals(0, truncate.error());
        assertEquals(Map.of("f", 3L), listedSizes(shared), "a change made through the mount");
    }

    @Test
    void aListingSendsANameWhoseAttributesTheStoreWouldAskForAtOnceForTheKernelNotToKeep() throws Exception {
        // as an S3 store's listing shows a file's size, not its mtime and execute bits (a HEAD asks)
        store.write(VfsPath.of("/shared/unasked"), "12345".getBytes(StandardCharsets.UTF_8));
        store.write(VfsPath.of("/shared/known"), "1".getBytes(StandardCharsets.UTF_8));
        List<String> waitedFor = new java.util.concurrent.CopyOnWriteArrayList<>();
        router = Router.of(around((dev.chibifs.store.Storage) store, dev.chibifs.store.Storage.class, (method, args) -> {
                    if (method.getName().equals("siblings")) {
                        VfsPath dir = (VfsPath) args[0];
                        return new dev.chibifs.store.Storage.Siblings() {
                            @Override
                            public Metadata metadata(String name) throws java.io.IOException {
                                waitedFor.add(name);
                                return store.metadata(dir.child(name));
                            }

                            @Override
                            public Metadata unconfirmed(String name) throws java.io.IOException {
                                return name.equals("unasked") ? store.metadata(dir.child(name)) : null;
                            }
                        };
                    }
                    return null;
                }));
        stop();
        connect(OFFERED);
        long shared = lookup(FuseProtocol.ROOT_ID, "shared");
        FakeKernel.Reply open = kernel.call(FuseProtocol.OPENDIR, shared, body().int32(0).int32(0));
        FakeKernel.Reply list = kernel.call(FuseProtocol.READDIRPLUS, shared,
                body().int64(open.int64(0)).int64(0).int32(65536).int32(0).int64(0).int32(0).int32(0));
        assertEquals(0, list.error());
        // struct fuse_direntplus: fuse_entry_out (nodeid, generation, entry_valid, attr_valid, ..., attr), then the dirent
        Map<String, List<Long>> entries = new java.util.HashMap<>();
        for (int at = 0; at < list.body().limit(); ) {
            int nameLength = list.int32(at + FuseProtocol.ENTRY_OUT + 16);
            byte[] name = new byte[nameLength];
            list.body().get(at + FuseProtocol.DIRENTPLUS, name);
            // attr_valid and attr_valid_nsec; the attributes' size
            entries.put(new String(name, StandardCharsets.UTF_8), List.of(list.int64(at + 24) * 1_000_000_000L
                    + (list.int32(at + 36) & 0xffffffffL), list.int64(at + 40 + 8)));
            at += FuseReply.align8(FuseProtocol.DIRENTPLUS + nameLength);
        }
        assertEquals(List.of(0L, 5L), entries.get("unasked"), "sent as the store has it, kept for no time");
        assertTrue(entries.get("known").get(0) > 0, "asked, and kept: " + entries.get("known"));
        assertEquals(List.of("known"), waitedFor, "no wait for the name the store would ask its backing for");
    }

    @Test
    void listingsCarryNodesForEveryNameButDotAndDotDot() throws Exception {
        long shared = lookup(FuseProtocol.ROOT_ID, "shared");
        for (String n : List.of("a", "b", "c")) {
            long[] f = create(shared, n);
            release(f[0], f[1]);
        }
        FakeKernel.Reply open = kernel.call(FuseProtocol.OPENDIR, shared, body().int32(0).int32(0));
        long fh = open.int64(0);
        FakeKernel.Reply list = kernel.call(FuseProtocol.READDIRPLUS, shared,
                body().int64(fh).int64(0).int32(65536).int32(0).int64(0).int32(0).int32(0));
        assertEquals(0, list.error());
        int at = 0;
        int named = 0;
        while (at < list.body().limit()) {
            long node = list.int64(at);
            int nameLength = list.int32(at + FuseProtocol.ENTRY_OUT + 16);
            byte[] name = new byte[nameLength];
            list.body().get(at + FuseProtocol.DIRENTPLUS, name);
            String s = new String(name, StandardCharsets.UTF_8);
            if (s.equals(".") || s.equals("..")) {
                assertEquals(0, node, s + " goes out without a node: the kernel counts no lookup for it");
            } else {
                assertNotEquals(0, node, s);
                named++;
            }
            at += FuseReply.align8(FuseProtocol.DIRENTPLUS + nameLength);
        }
        assertEquals(3, named);
        assertEquals(0, kernel.call(FuseProtocol.RELEASEDIR, shared, body().int64(fh).int32(0).int32(0).int64(0)).error());
    }

    @Test
    void aNameRemovedWhileItsDirectoryIsReadKeepsItsInodeNumberInTheListing() throws Exception {
        long shared = lookup(FuseProtocol.ROOT_ID, "shared");
        java.util.Map<Character, Long> inodes = new java.util.HashMap<>();
        for (String n : List.of("a", "b", "c")) {
            FakeKernel.Reply r = kernel.call(FuseProtocol.CREATE, shared,
                    body().int32(Linux.O_WRONLY | Linux.O_CREAT).int32(0100644).int32(022).int32(0).name(n));
            inodes.put(n.charAt(0), r.int64(40)); // fuse_entry_out's attr.ino
            release(r.int64(0), r.int64(FuseProtocol.ENTRY_OUT));
        }
        long fh = kernel.call(FuseProtocol.OPENDIR, shared, body().int32(0).int32(0)).int64(0);
        int threeEntries = 3 * (FuseProtocol.DIRENTPLUS + 8); // ".", ".." and one name
        FakeKernel.Reply first = kernel.call(FuseProtocol.READDIRPLUS, shared,
                body().int64(fh).int64(0).int32(threeEntries).int32(0).int64(0).int32(0).int32(0));
        assertEquals(threeEntries, first.body().limit());
        int third = 2 * FuseReply.align8(FuseProtocol.DIRENTPLUS + 8);
        char read = (char) first.body().get(third + FuseProtocol.DIRENTPLUS);
        List<Character> unread = new java.util.ArrayList<>(List.of('a', 'b', 'c'));
        unread.remove((Character) read);
        // removed while the directory is being read: one behind the daemon, one through the mount
        store.delete(VfsPath.of("/shared/" + unread.get(0)));
        assertEquals(0, kernel.call(FuseProtocol.UNLINK, shared, body().name(String.valueOf(unread.get(1)))).error());
        FakeKernel.Reply rest = kernel.call(FuseProtocol.READDIRPLUS, shared,
                body().int64(fh).int64(first.int64(third + FuseProtocol.ENTRY_OUT + 8)).int32(65536).int32(0).int64(0).int32(0).int32(0));
        int second = FuseReply.align8(FuseProtocol.DIRENTPLUS + 1);
        assertEquals(2 * second, rest.body().limit(), "the listing read at its start still names both");
        for (int at : new int[] {0, second}) {
            char name = (char) rest.body().get(at + FuseProtocol.DIRENTPLUS);
            assertTrue(unread.contains(name), name + " again");
            assertEquals(0, rest.int64(at), "without a node: nothing to look up");
            assertEquals(inodes.get(name), rest.int64(at + FuseProtocol.ENTRY_OUT), "the dirent's d_ino is still " + name + "'s");
        }
        assertEquals(0, kernel.call(FuseProtocol.RELEASEDIR, shared, body().int64(fh).int32(0).int32(0).int64(0)).error());
    }

    /** One READDIRPLUS reply: its names, and the offset the kernel asks on from (its last entry's). */
    private record Page(List<String> names, long next) {
    }

    private Page readdirplus(long dir, long fh, long offset) throws Exception {
        // the kernel may ask for up to max_pages; a reply may hold less, and the kernel asks on from its end
        FakeKernel.Reply list = kernel.call(FuseProtocol.READDIRPLUS, dir,
                body().int64(fh).int64(offset).int32(1 << 20).int32(0).int64(0).int32(0).int32(0));
        assertEquals(0, list.error());
        assertTrue(list.body().limit() <= FuseSession.REPLY_CAPACITY, "reply of " + list.body().limit());
        List<String> names = new java.util.ArrayList<>();
        long next = offset;
        for (int at = 0; at < list.body().limit(); ) {
            next = list.int64(at + FuseProtocol.ENTRY_OUT + 8);
            assertTrue(next > 0 && next < 1L << 31, "an offset a 32-bit readdir takes: " + next);
            int nameLength = list.int32(at + FuseProtocol.ENTRY_OUT + 16);
            byte[] name = new byte[nameLength];
            list.body().get(at + FuseProtocol.DIRENTPLUS, name);
            names.add(new String(name, StandardCharsets.UTF_8));
            at += FuseReply.align8(FuseProtocol.DIRENTPLUS + nameLength);
        }
        return new Page(names, next);
    }

    /** Reads a listing on from {@code offset} to its empty end; asserts no name comes twice. */
    private java.util.Set<String> readOn(long dir, long fh, long offset, java.util.Set<String> seen) throws Exception {
        while (true) {
            Page page = readdirplus(dir, fh, offset);
            if (page.names().isEmpty()) {
                return seen;
            }
            for (String n : page.names()) {
                assertTrue(seen.add(n), "a name twice: " + n);
            }
            offset = page.next();
        }
    }

    @Test
    void aPlainListingGivesEachNameTheInodeNumberStatGives() throws Exception {
        // READDIR's d_ino reaches getdents: `find -inum` and Python's os.scandir take it for st_ino
        store.write(VfsPath.of("/shared/a"), new byte[0]);
        store.mkdir(VfsPath.of("/shared/sub"));
        long shared = lookup(FuseProtocol.ROOT_ID, "shared");
        FakeKernel.Reply open = kernel.call(FuseProtocol.OPENDIR, shared, body().int32(0).int32(0));
        assertEquals(0, open.error());
        FakeKernel.Reply list = kernel.call(FuseProtocol.READDIR, shared,
                body().int64(open.int64(0)).int64(0).int32(1 << 16).int32(0).int64(0).int32(0).int32(0));
        assertEquals(0, list.error());
        Map<String, Long> inodes = new java.util.HashMap<>();
        for (int at = 0; at < list.body().limit(); ) {
            int nameLength = list.int32(at + 16);
            byte[] name = new byte[nameLength];
            list.body().get(at + FuseProtocol.DIRENT, name);
            inodes.put(new String(name, StandardCharsets.UTF_8), list.int64(at));
            at += (FuseProtocol.DIRENT + nameLength + 7) & ~7;
        }
        assertEquals(java.util.Set.of(".", "..", "a", "sub"), inodes.keySet());
        assertEquals(store.metadata(VfsPath.of("/shared/a")).inode(), inodes.get("a"));
        assertEquals(store.metadata(VfsPath.of("/shared/sub")).inode(), inodes.get("sub"));
        assertEquals(store.metadata(VfsPath.of("/shared")).inode(), inodes.get("."), "the directory's own, from its node");
        assertEquals(store.metadata(VfsPath.root()).inode(), inodes.get(".."), "the root's, which has no identity in the table");
    }

    /** A new session whose kernel offers zero-message opendir; returns the node of /shared. */
    private long sharedWithoutOpendir() throws Exception {
        stop();
        connect(OFFERED | FuseProtocol.NO_OPENDIR_SUPPORT);
        return lookup(FuseProtocol.ROOT_ID, "shared");
    }

    /** {@code files} files in /shared, and the first of the several replies their listing takes, read by thread 1. */
    private Page firstReplyToThreadOne(long shared, int files) throws Exception {
        manyFiles("/shared", files);
        kernel.pid = 1;
        Page first = readdirplus(shared, 0, 0);
        assertTrue(first.names().size() < files, "more than one reply");
        return first;
    }

    /** Files with names long enough that the listing of 600 takes more than one reply (about 210 KiB). */
    private void manyFiles(String dir, int files) throws Exception {
        String stem = "n".repeat(200);
        for (int i = 0; i < files; i++) {
            store.write(VfsPath.of(dir + "/" + stem + i), new byte[0]);
        }
    }

    @Test
    void aListingLongerThanOneReplyComesWholeInSeveral() throws Exception {
        Opened o = openedWithManyFiles(600);
        java.util.Set<String> seen = readOn(o.dir(), o.fh(), o.first().next(), new java.util.HashSet<>(o.first().names()));
        assertEquals(o.files() + 2, seen.size());
        assertTrue(o.first().names().size() < o.files(), "more than one reply");
        assertEquals(0, kernel.call(FuseProtocol.RELEASEDIR, o.dir(), body().int64(o.fh()).int32(0).int32(0).int64(0)).error());
    }

    @Test
    void whereTheKernelOffersZeroMessageOpendirOpendirIsEnosysAndListingsComeWithoutAHandle() throws Exception {
        long shared = sharedWithoutOpendir();
        for (String n : List.of("a", "b", "c")) {
            store.write(VfsPath.of("/shared/" + n), new byte[0]);
        }
        assertEquals(-Linux.ENOSYS, kernel.call(FuseProtocol.OPENDIR, shared, body().int32(0).int32(0)).error(),
                "ENOSYS tells the kernel to open directories without asking");
        assertEquals(java.util.Set.of(".", "..", "a", "b", "c"), readOn(shared, 0, 0, new java.util.HashSet<>()));
    }

    @Test
    void eachThreadReadsItsOwnSnapshotOfADirectoryWithoutAHandle() throws Exception {
        long shared = sharedWithoutOpendir();
        int files = 600;
        Page first = firstReplyToThreadOne(shared, files);
        store.write(VfsPath.of("/shared/late"), new byte[0]);
        kernel.pid = 2;
        assertEquals(files + 3, readOn(shared, 0, 0, new java.util.HashSet<>()).size(), "a later reader sees the new name");
        kernel.pid = 1;
        java.util.Set<String> seen = readOn(shared, 0, first.next(), new java.util.HashSet<>(first.names()));
        assertEquals(files + 2, seen.size(), "the first reader ends the snapshot it began, each name once");
        assertFalse(seen.contains("late"));
    }

    @Test
    void aReaderWhoseHalfReadListingWasLetGoReadsOnFromANewSnapshot() throws Exception {
        long shared = sharedWithoutOpendir();
        int files = 600;
        Page first = firstReplyToThreadOne(shared, files);
        // more threads than listings are kept stop part-way: the first one's listing goes
        for (int pid = 2; pid <= DirectoryListings.UNOPENED_LIMIT + 1; pid++) {
            kernel.pid = pid;
            readdirplus(shared, 0, 0);
        }
        // a name not read yet, removed: only a new snapshot goes without it
        String removed = unread(first, files);
        store.delete(VfsPath.of("/shared/" + removed));
        kernel.pid = 1;
        java.util.Set<String> seen = readOn(shared, 0, first.next(), new java.util.HashSet<>(first.names()));
        assertFalse(seen.contains(removed), "read on from a new snapshot");
        assertEquals(files + 2 - 1, seen.size(), "each name once: the new snapshot goes on where the old one stopped");
    }

    @Test
    void aThreadsListingLeftUnreadIsNotTakenForItsNextListingAfterAChange() throws Exception {
        long shared = sharedWithoutOpendir();
        int files = 600;
        Page first = firstReplyToThreadOne(shared, files); // then it stops: `ls | head`, a scandir let go
        String removed = unread(first, files);
        store.delete(VfsPath.of("/shared/" + removed));
        fs.nodes.get(shared).namesChangedBehind++; // as the feed does when it hears of it
        clock.advance(java.time.Duration.ofMillis(DirectoryListings.GOING_ON_WITHIN_MILLIS));
        // the same thread lists it again later: its first part from the listing the kernel keeps,
        // which ends where the first reply did, and then from us
        java.util.Set<String> seen = readOn(shared, 0, first.next(), new java.util.HashSet<>(first.names()));
        assertFalse(seen.contains(removed), "not the snapshot left unread before the change");
        assertEquals(files + 2 - 1, seen.size());
    }

    @Test
    void aThreadGoingOnWithItsListingAtOnceKeepsItsSnapshotThroughAChange() throws Exception {
        long shared = sharedWithoutOpendir();
        int files = 600;
        Page first = firstReplyToThreadOne(shared, files);
        // a readdir and unlink loop: each batch read is removed before the next is asked for; read
        // again at each, the directory would be read whole for every reply
        String removed = unread(first, files);
        store.delete(VfsPath.of("/shared/" + removed));
        fs.nodes.get(shared).namesChangedBehind++;
        java.util.Set<String> seen = readOn(shared, 0, first.next(), new java.util.HashSet<>(first.names()));
        assertTrue(seen.contains(removed), "the snapshot it is reading (a name removed meanwhile may be in it)");
        assertEquals(files + 2, seen.size());
    }

    @Test
    void aReaderThatWentOnFromTheKernelsListingReadsOnAfterTheSameName() throws Exception {
        Opened o = openedWithManyFiles(600);
        assertEquals(0, kernel.call(FuseProtocol.RELEASEDIR, o.dir(), body().int64(o.fh()).int32(0).int32(0).int64(0)).error());
        // a program removes each name as it reads it (a readdir and unlink loop); its first part came
        // from the listing the kernel kept, which the removals dropped, so it asks us on from there
        java.util.Set<String> left = new java.util.HashSet<>(allNames("/shared"));
        for (String name : o.first().names()) {
            if (!name.equals(".") && !name.equals("..")) {
                assertEquals(0, kernel.call(FuseProtocol.UNLINK, o.dir(), body().name(name)).error());
                left.remove(name);
            }
        }
        long reader = kernel.call(FuseProtocol.OPENDIR, o.dir(), body().int32(0).int32(0)).int64(0);
        assertEquals(left, readOn(o.dir(), reader, o.first().next(), new java.util.HashSet<>()), "every name not yet read, once");
        assertEquals(0, kernel.call(FuseProtocol.RELEASEDIR, o.dir(), body().int64(reader).int32(0).int32(0).int64(0)).error());
    }

    @Test
    void aHandleAskedFromAnOffsetItsLastReplyDidNotGiveReadsTheDirectoryAsItIsNow() throws Exception {
        Opened o = openedWithManyFiles(600);
        Page second = readdirplus(o.dir(), o.fh(), o.first().next());
        java.util.Set<String> given = new java.util.HashSet<>(o.first().names());
        given.addAll(second.names());
        String removed = null;
        for (int i = 0; removed == null; i++) {
            String name = "n".repeat(200) + i;
            removed = given.contains(name) ? null : name;
        }
        store.delete(VfsPath.of("/shared/" + removed));
        // the kernel served this reader from the listing it keeps, which went meanwhile: it asks on
        // from after "..", an offset the handle's last reply did not give
        long afterDotDot = 2; // what its listing gave for "..", no change having been heard
        java.util.Set<String> seen = readOn(o.dir(), o.fh(), afterDotDot, new java.util.HashSet<>(List.of(".", "..")));
        assertFalse(seen.contains(removed), "the directory as it is now, not the handle's old snapshot");
        assertEquals(o.files() + 2 - 1, seen.size());
        assertEquals(0, kernel.call(FuseProtocol.RELEASEDIR, o.dir(), body().int64(o.fh()).int32(0).int32(0).int64(0)).error());
    }

    /** Directory {@code dir} opened as {@code fh}, and the first reply of its listing. */
    private record Opened(long dir, long fh, Page first, int files) {
    }

    /** {@code files} files in /shared (see {@link #manyFiles}), /shared opened, and its listing's first reply read. */
    private Opened openedWithManyFiles(int files) throws Exception {
        long shared = lookup(FuseProtocol.ROOT_ID, "shared");
        manyFiles("/shared", files);
        long fh = kernel.call(FuseProtocol.OPENDIR, shared, body().int32(0).int32(0)).int64(0);
        return new Opened(shared, fh, readdirplus(shared, fh, 0), files);
    }

    @Test
    void namesWithOneHashGoInTheOrderTheyHaveWithOffsetsOfTheirOwn() throws Exception {
        // two names whose hashes are one: ext4 would give them one offset, and a reply ending
        // between them would lose the second
        java.util.Map<Long, String> byPosition = new java.util.HashMap<>();
        String[] pair = null;
        for (int i = 0; pair == null; i++) {
            String name = "c" + i;
            String other = byPosition.putIfAbsent(DirectoryListings.Listing.position(name.getBytes(StandardCharsets.UTF_8)), name);
            pair = other == null ? null : new String[] {other, name};
        }
        long shared = lookup(FuseProtocol.ROOT_ID, "shared");
        for (String name : pair) {
            store.write(VfsPath.of("/shared/" + name), new byte[0]);
        }
        long fh = kernel.call(FuseProtocol.OPENDIR, shared, body().int32(0).int32(0)).int64(0);
        java.util.List<String> seen = new java.util.ArrayList<>();
        java.util.Set<Long> offsets = new java.util.HashSet<>();
        for (long offset = 0; ; ) {
            // one entry a reply: each reply ends after one name
            FakeKernel.Reply r = kernel.call(FuseProtocol.READDIR, shared,
                    body().int64(fh).int64(offset).int32(FuseProtocol.DIRENT + 8).int32(0).int64(0).int32(0).int32(0));
            if (r.body().limit() == 0) {
                break;
            }
            offset = r.int64(8);
            assertTrue(offsets.add(offset), "offset " + offset + " twice");
            byte[] name = new byte[r.int32(16)];
            r.body().get(FuseProtocol.DIRENT, name);
            seen.add(new String(name, StandardCharsets.UTF_8));
        }
        assertEquals(List.of(".", "..", pair[0], pair[1]).stream().sorted().toList(), seen.stream().sorted().toList());
        assertEquals(0, kernel.call(FuseProtocol.RELEASEDIR, shared, body().int64(fh).int32(0).int32(0).int64(0)).error());
    }

    /** A name of {@code manyFiles} that {@code first} did not give. */
    private static String unread(Page first, int files) {
        for (int i = 0; i < files; i++) {
            String name = "n".repeat(200) + i;
            if (!first.names().contains(name)) {
                return name;
            }
        }
        throw new AssertionError("every name in the first reply");
    }

    /** The names in store directory {@code dir}. */
    private List<String> allNames(String dir) throws Exception {
        List<String> names = new java.util.ArrayList<>();
        store.forEachEntry(VfsPath.of(dir), (name, offset, length, kind, inode) -> {
            names.add(new String(name, offset, length, StandardCharsets.UTF_8));
            return true;
        });
        return names;
    }

    @Test
    void aListingWithoutAHandleThatMayNotBeKeptLeavesTheKernelsCacheAtItsEnd() throws Exception {
        long shared = sharedWithoutOpendir();
        manyFiles("/shared", 600);
        // the tests' follower follows nothing: no listing may be kept past its reading
        Page first = readdirplus(shared, 0, 0);
        Page second = readdirplus(shared, 0, first.next());
        assertFalse(second.names().isEmpty());
        assertTrue(invalidatedListings(shared).isEmpty(), "nothing dropped while the listing is read");
        readOn(shared, 0, second.next(), new java.util.HashSet<>());
        assertEquals(List.of(0L), invalidatedListings(shared), "its pages dropped from offset 0, once");
    }

    @Test
    void aListingWithoutAHandleOfAFollowedDirectoryStaysInTheKernelsCache() throws Exception {
        long shared = sharedWithoutOpendir();
        fs.follow(new StoreFollower() {
            @Override
            public boolean follows(NodeTable.Node dir) {
                return true;
            }

            @Override
            public boolean lookingIn(NodeTable.Node dir) {
                return true;
            }
        });
        manyFiles("/shared", 10);
        assertEquals(12, readOn(shared, 0, 0, new java.util.HashSet<>()).size());
        assertTrue(invalidatedListings(shared).isEmpty(), "a followed directory's changes will be told");
    }

    @Test
    void aDirectoryMovedBehindTheMountAMomentAgoIsListedWhereItWent() throws Exception {
        java.util.concurrent.atomic.AtomicInteger caughtUp = new java.util.concurrent.atomic.AtomicInteger();
        long tree = treeMovedUntilCaughtUp(caughtUp);
        long fh = kernel.call(FuseProtocol.OPENDIR, tree, body().int32(0).int32(0)).int64(0);
        assertEquals(java.util.Set.of(".", "..", "f"), readOn(tree, fh, 0, new java.util.HashSet<>()));
        assertEquals(1, caughtUp.get(), "the feed caught up once, when the path found nothing");
    }

    @Test
    void namesAreMadeAndRemovedInADirectoryMovedBehindTheMountAMomentAgo() throws Exception {
        java.util.concurrent.atomic.AtomicInteger caughtUp = new java.util.concurrent.atomic.AtomicInteger();
        long tree = treeMovedUntilCaughtUp(caughtUp);
        // a shell working in it: mkdir new; rm f
        assertEquals(0, kernel.call(FuseProtocol.MKDIR, tree, body().int32(040755).int32(022).name("new")).error());
        assertTrue(store.exists(VfsPath.of("/shared/b/tree/new")), "made where the directory went");
        assertEquals(0, kernel.call(FuseProtocol.UNLINK, tree, body().name("f")).error());
        assertFalse(store.exists(VfsPath.of("/shared/b/tree/f")));
        assertEquals(1, caughtUp.get(), "the feed caught up once, when the path found nothing");
    }

    /**
     * Node of /shared/a/tree (holding f), which another mount then moves to /shared/b/tree: the
     * follower tells the node table so at its first catch-up, which {@code caughtUp} counts.
     */
    private long treeMovedUntilCaughtUp(java.util.concurrent.atomic.AtomicInteger caughtUp) throws Exception {
        store.mkdir(VfsPath.of("/shared/a"));
        store.mkdir(VfsPath.of("/shared/b"));
        store.mkdir(VfsPath.of("/shared/a/tree"));
        store.write(VfsPath.of("/shared/a/tree/f"), new byte[1]);
        long shared = lookup(FuseProtocol.ROOT_ID, "shared");
        long a = lookup(shared, "a");
        long b = lookup(shared, "b");
        long tree = lookup(a, "tree");
        store.rename(VfsPath.of("/shared/a/tree"), VfsPath.of("/shared/b/tree"));
        fs.follow(new SilentFollower() {
            @Override
            public void catchUp() {
                if (caughtUp.getAndIncrement() == 0) {
                    NodeTable.Node moved = fs.nodes.get(tree);
                    fs.nodes.left(fs.nodes.get(a), "tree", moved);
                    assertEquals(moved, fs.nodes.arrived(fs.nodes.get(b), "tree", moved.identity));
                }
            }
        });
        return tree;
    }

    /** The offsets from which INVAL_INODE notifications dropped node {@code node}'s pages. */
    private List<Long> invalidatedListings(long node) {
        return invalidated(node).stream().filter(offset -> offset >= 0).toList();
    }

    @Test
    void aLockGrantWaitsForItsInvalidationWithoutHoldingTheWorkerAReplyItWaitsForNeeds() throws Exception {
        // the grant drops the file's pages (INVAL_INODE from offset 0), which the kernel does once it
        // holds each page's lock; a process reading that file holds one while it waits for its READ.
        // This session has one worker, as an io_uring queue has one thread: had the grant written the
        // notification itself, or waited for it, no reply below would ever come (stress-ng hung a mount so)
        grantWhileItsInvalidationWaits();
    }

    @Test
    void requestsWaitingInTheStoreLeaveAWorkerReadingUpToTheMostAndThePoolShrinksAfter() throws Exception {
        kernel.close();
        session.ended().join();
        connect(OFFERED, new FuseSession.Settings(1 << 20, 2, 6, true, false, false, true, false));
        long shared = lookup(FuseProtocol.ROOT_ID, "shared");
        java.util.Set<Long> sent = new java.util.HashSet<>();
        // the store's lock held, as a slow store holds a request: every LOOKUP below waits in it
        synchronized (store) {
            for (int i = 1; i <= 5; i++) {
                sent.add(kernel.send(FuseProtocol.LOOKUP, shared, body().name("waits" + i)));
                int waiting = i;
                // each waiting request leaves one more worker reading, up to the most
                awaitWorkers(Math.min(waiting + 1, 6), () -> "workers with " + waiting + " requests waiting");
            }
            sent.add(kernel.send(FuseProtocol.LOOKUP, shared, body().name("waits6")));
            awaitWorkers(6, () -> "no more than the most");
        }
        for (int i = 0; i < 6; i++) {
            FakeKernel.Reply r = kernel.reply();
            assertTrue(sent.remove(r.unique()), "a reply to each request once");
            assertEquals(-Linux.ENOENT, r.error());
        }
        assertEquals(6, stats.snapshot().workers().most());
        assertEquals(2, stats.snapshot().workers().kept());
        // the requests that follow, one at a time, find more workers reading than needed: each retires
        // the one that served it, down to the two kept
        for (int i = 0; i < 10 && session.workers() > 2; i++) {
            lookup(FuseProtocol.ROOT_ID, "shared");
        }
        assertEquals(2, session.workers());
        assertEquals(2, stats.snapshot().workers().now());
    }

    /**
     * Requests waiting on a store across a network leave the most workers to the rest of the mount:
     * with an S3 server paused, 64 lookups under its prefix held every worker, and a cat in an
     * agent's own home waited 28 s behind them.
     */
    @Test
    void requestsWaitingOnAStoreAcrossANetworkLeaveTheMostWorkersToTheOthers() throws Exception {
        kernel.close();
        session.ended().join();
        MemoryStorage farStore = new MemoryStorage(clock);
        dev.chibifs.store.Storage far = (dev.chibifs.store.Storage) java.lang.reflect.Proxy.newProxyInstance(
                dev.chibifs.store.Storage.class.getClassLoader(), new Class<?>[] {dev.chibifs.store.Storage.class},
                (proxy, method, args) -> {
                    if (method.getName().equals("answersMayWaitLong")) {
                        return true; // as an S3 store says
                    }
                    try {
                        return method.invoke(farStore, args);
                    } catch (java.lang.reflect.InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
        router = Router.builder(store).mount(VfsPath.of("/shared/far"), far).build();
        connect(OFFERED, new FuseSession.Settings(1 << 20, 2, 3, true, false, false, true, false));
        long shared = lookup(FuseProtocol.ROOT_ID, "shared");
        long farDir = lookup(shared, "far");
        store.write(VfsPath.of("/shared/near"), new byte[1]);
        java.util.Set<Long> sent = new java.util.HashSet<>();
        int aside = FuseSession.ASIDE_PER_WORKER * 3;
        synchronized (farStore) { // as a paused S3 server holds them: every LOOKUP below waits in it
            for (int i = 1; i <= 6; i++) {
                sent.add(kernel.send(FuseProtocol.LOOKUP, farDir, body().name("waits" + i)));
            }
            awaitWorkers(6 + 1, () -> "six waiting aside, and one reading");
            FakeKernel.Reply mine = kernel.call(FuseProtocol.LOOKUP, shared, body().name("near"));
            assertEquals(0, mine.error(), "a request elsewhere is answered while the far store holds six");
            // more than may wait aside (300 stalled lookups froze the mount again): the rest queue for them
            for (int i = 7; i <= aside + 3; i++) {
                sent.add(kernel.send(FuseProtocol.LOOKUP, farDir, body().name("waits" + i)));
            }
            awaitWorkers(aside + 1, () -> aside + " waiting aside, and one reading");
            mine = kernel.call(FuseProtocol.LOOKUP, shared, body().name("near"));
            assertEquals(0, mine.error(), "a request elsewhere is answered while the far store holds the most and more queue");
        }
        for (int i = 0; i < aside + 3; i++) {
            FakeKernel.Reply r = kernel.reply();
            assertTrue(sent.remove(r.unique()), "a reply to each request once");
            assertEquals(-Linux.ENOENT, r.error());
        }
    }

    /** A memory store that says its requests may wait long, as S3 does; {@code behind} holds its monitor. */
    private static dev.chibifs.store.Storage far(MemoryStorage behind) {
        return (dev.chibifs.store.Storage) java.lang.reflect.Proxy.newProxyInstance(
                dev.chibifs.store.Storage.class.getClassLoader(), new Class<?>[] {dev.chibifs.store.Storage.class},
                (proxy, method, args) -> {
                    if (method.getName().equals("answersMayWaitLong")) {
                        return true;
                    }
                    try {
                        return method.invoke(behind, args);
                    } catch (java.lang.reflect.InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
    }

    /**
     * A third round: lookups of a stalled store's own mount point went by its parent's store and took
     * every worker; a healthy store's requests (and a local fsync) queued 10 s behind a stalled one's;
     * a killed caller's queued request stayed unkillable until the stalled store answered.
     */
    @Test
    void aStalledStoresRequestsWaitApartFromEveryOtherStoresAndAKilledCallersQueuedOneGoes() throws Exception {
        kernel.close();
        session.ended().join();
        MemoryStorage stalled = new MemoryStorage(clock);
        MemoryStorage healthy = new MemoryStorage(clock);
        router = Router.builder(store).mount(VfsPath.of("/shared/stalled"), far(stalled))
                .mount(VfsPath.of("/shared/healthy"), far(healthy)).build();
        connect(OFFERED, new FuseSession.Settings(1 << 20, 2, 3, true, false, false, true, false));
        long shared = lookup(FuseProtocol.ROOT_ID, "shared");
        long stalledDir = lookup(shared, "stalled");
        long healthyDir = lookup(shared, "healthy");
        int aside = FuseSession.ASIDE_PER_WORKER * 3;
        java.util.Set<Long> sent = new java.util.HashSet<>();
        long killed;
        synchronized (stalled) {
            // the mount point's own lookups wait in the stalled store: they go aside too
            for (int i = 0; i < 4; i++) {
                sent.add(kernel.send(FuseProtocol.LOOKUP, shared, body().name("stalled")));
            }
            for (int i = 4; i < aside + 2; i++) {
                sent.add(kernel.send(FuseProtocol.LOOKUP, stalledDir, body().name("waits" + i)));
            }
            session.dyingWhen(tid -> tid == 4242);
            kernel.pid = 4242;
            killed = kernel.send(FuseProtocol.LOOKUP, stalledDir, body().name("killed")); // queued
            kernel.pid = 1234;
            awaitWorkers(aside + 1, () -> aside + " waiting aside, and one reading");
            assertEquals(-Linux.ENOENT, kernel.call(FuseProtocol.LOOKUP, healthyDir, body().name("none")).error(),
                    "another slow store's request is not queued behind the stalled one's");
            assertEquals(0, kernel.call(FuseProtocol.LOOKUP, shared, body().name("healthy")).error());
            kernel.send(FuseProtocol.INTERRUPT, 0, body().int64(killed));
            FakeKernel.Reply answered = kernel.reply();
            assertEquals(killed, answered.unique(), "the killed caller's queued request is answered at its interrupt");
            assertEquals(-Linux.EINTR, answered.error());
        }
        for (int i = 0; i < aside + 2; i++) {
            FakeKernel.Reply r = kernel.reply();
            assertTrue(sent.remove(r.unique()), "a reply to each request once, none to the interrupted one: " + r.unique());
        }
    }

    /** Waits (5 s at most) until the session has {@code expected} workers; no event tells it, so it is polled. */
    private void awaitWorkers(int expected, java.util.function.Supplier<String> what) {
        long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(5);
        while (session.workers() != expected) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError(what.get() + ": " + session.workers() + ", expected " + expected);
            }
            java.util.concurrent.locks.LockSupport.parkNanos(java.util.concurrent.TimeUnit.MILLISECONDS.toNanos(1));
        }
    }

    @Test
    void aWorkerThatWritesAGrantsInvalidationItselfLeavesTheOthersFreeToServe() throws Exception {
        // with several workers the one granting writes the notification itself when nobody else is
        // writing (no hand-off to another thread); it may wait in the kernel, the others serve on
        kernel.close();
        session.ended().join();
        connect(OFFERED, 2);
        grantWhileItsInvalidationWaits();
    }

    /**
     * A lock granted in a directory whose changes are not followed (an S3 prefix)
     * drops the pages of the files open beside the locked one too: the store compared them as it
     * took the lock (SQLite in WAL mode locks the -shm, and its database and -wal change under it),
     * and nothing else tells the kernel. A file closed beside it is no one's business.
     */
    @Test
    void aLockRequestReachesTheStoreWithTheProcessItIsFor() throws Exception {
        // an S3 store tells a process it refused a moment ago "not now" again, and no other (HostLocks)
        List<String> asked = new java.util.concurrent.CopyOnWriteArrayList<>();
        java.util.function.Function<dev.chibifs.store.FileLocks, dev.chibifs.store.FileLocks> recording = locks ->
                around(locks, dev.chibifs.store.FileLocks.class, (m, a) -> {
                    if (a != null && a.length >= 3 && a[1] instanceof Integer pid) {
                        asked.add(m.getName() + " owner " + a[0] + " pid " + pid);
                    }
                    return null;
                });
        wrapOpens((i, h) -> withLocks(h, recording));
        stop();
        connect(OFFERED | FuseProtocol.POSIX_LOCKS | FuseProtocol.FLOCK_LOCKS);
        long shared = lookup(FuseProtocol.ROOT_ID, "shared");
        long[] db = create(shared, "db");
        assertEquals(0, kernel.call(FuseProtocol.SETLK, db[0], body().int64(db[1]).int64(7).int64(0).int64(Long.MAX_VALUE)
                .int32(Linux.F_WRLCK).int32(4321).int32(0).int32(0)).error());
        assertEquals(0, kernel.call(FuseProtocol.SETLK, db[0], body().int64(db[1]).int64(8).int64(0).int64(Long.MAX_VALUE)
                .int32(Linux.F_RDLCK).int32(4322).int32(FuseProtocol.LK_FLOCK).int32(0)).error());
        assertEquals(List.of("tryLock owner 7 pid 4321", "tryFlock owner " + db[1] + " pid 4322"), asked,
                "a flock's owner is the open it came through");
    }

    /**
     * close(2) lets go of an open file's locks before it returns, though its RELEASE comes in the
     * background: a lock tried through another open right after, while that RELEASE is still
     * closing the holder's handle, waits for the close and is granted (ReleasesUnderWay), where it
     * would have been refused.
     */
    @Test
    void aLockTriedWhileAnEarlierReleaseClosesItsHolderWaitsForTheCloseAndIsGranted() throws Exception {
        HeldClose held = connectHoldingTheFirstClose();
        long shared = lookup(FuseProtocol.ROOT_ID, "shared");
        long[] holder = create(shared, "lockfile");
        long other = kernel.call(FuseProtocol.OPEN, holder[0], body().int32(Linux.O_RDWR).int32(0)).int64(0);
        assertEquals(0, kernel.call(FuseProtocol.SETLK, holder[0], flock(holder[1], 7)).error());

        long release = kernel.send(FuseProtocol.RELEASE, holder[0], body().int64(holder[1]).int32(0).int32(0).int64(0));
        awaitLatch(held.closing());
        long tried = kernel.send(FuseProtocol.SETLK, holder[0], flock(other, 8));
        while (session.releasesAwaited() == 0 && !kernel.answered()) {
            Thread.onSpinWait(); // until the try waits for the close (or, wrongly, was answered)
        }
        held.mayClose().countDown();
        assertEquals(Map.of(release, 0, tried, 0), answers(2), "the close let go of the lock before the try");
    }

    /**
     * The kernel names an OFD lock's owner by its open file's address (a POSIX lock's by its
     * process's file table), which a new open may get while the old one's RELEASE is on its way.
     * The new open's lock waits for that close, so it does not join the old open's locks and keep
     * them: once both are done, only the new open's range is held.
     */
    @Test
    void aRecordLockOwnerNamedAgainByANewOpenKeepsNothingOfTheOldOpen() throws Exception {
        HeldClose held = connectHoldingTheFirstClose();
        long shared = lookup(FuseProtocol.ROOT_ID, "shared");
        long[] old = create(shared, "records");
        long reused = kernel.call(FuseProtocol.OPEN, old[0], body().int32(Linux.O_RDWR).int32(0)).int64(0);
        long third = kernel.call(FuseProtocol.OPEN, old[0], body().int32(Linux.O_RDWR).int32(0)).int64(0);
        assertEquals(0, kernel.call(FuseProtocol.SETLK, old[0], record(old[1], 7, 0, 10)).error());

        long release = kernel.send(FuseProtocol.RELEASE, old[0], body().int64(old[1]).int32(0).int32(0).int64(0));
        awaitLatch(held.closing());
        long tried = kernel.send(FuseProtocol.SETLK, old[0], record(reused, 7, 20, 30));
        while (session.releasesAwaited() == 0 && !kernel.answered()) {
            Thread.onSpinWait(); // until the new open's lock waits for the old one's close
        }
        held.mayClose().countDown();
        assertEquals(Map.of(release, 0, tried, 0), answers(2));
        assertEquals(0, kernel.call(FuseProtocol.SETLK, old[0], record(third, 9, 0, 10)).error(),
                "the old open's range went with its close");
        assertEquals(-Linux.EAGAIN, kernel.call(FuseProtocol.SETLK, old[0], record(third, 9, 20, 30)).error(),
                "the new open's range is held");
    }

    /** A non-blocking write lock on bytes [start, end] through open {@code fh} by lock owner {@code owner}. */
    private static FakeKernel.Body record(long fh, long owner, long start, long end) {
        return body().int64(fh).int64(owner).int64(start).int64(end).int32(Linux.F_WRLCK).int32(4321).int32(0).int32(0);
    }

    /**
     * A close queued before a lock request, of another file, is not waited for: only its own
     * file's closes can change what the lock request meets.
     */
    @Test
    void aLockRequestWaitsForNoCloseOfAnotherFile() throws Exception {
        HeldClose held = connectHoldingTheFirstClose();
        long shared = lookup(FuseProtocol.ROOT_ID, "shared");
        long[] closed = create(shared, "closed");
        long[] locked = create(shared, "locked");
        long release = kernel.send(FuseProtocol.RELEASE, closed[0], body().int64(closed[1]).int32(0).int32(0).int64(0));
        awaitLatch(held.closing());
        long tried = kernel.send(FuseProtocol.SETLK, locked[0], flock(locked[1], 8));
        while (session.releasesAwaited() == 0 && !kernel.answered()) {
            Thread.onSpinWait(); // until the try is answered (or, wrongly, waits for the close)
        }
        assertEquals(0, session.releasesAwaited(), "it waits for no close of another file");
        FakeKernel.Reply granted = kernel.reply();
        assertEquals(tried, granted.unique());
        assertEquals(0, granted.error(), "granted while another file's close is under way");
        held.mayClose().countDown();
        assertEquals(release, kernel.reply().unique());
    }

    /**
     * The kernel names a flock's owner by its open file's address, which a new open may reuse while
     * the old one's RELEASE is on its way: the lock is the open's, so the new open is refused while
     * the old one holds it, and the old one's close takes nothing from the new one.
     */
    @Test
    void aFlockOwnerNamedAgainByANewOpenIsAnotherHolder() throws Exception {
        stop();
        connect(OFFERED | FuseProtocol.POSIX_LOCKS | FuseProtocol.FLOCK_LOCKS);
        long shared = lookup(FuseProtocol.ROOT_ID, "shared");
        long[] old = create(shared, "lockfile");
        long reused = kernel.call(FuseProtocol.OPEN, old[0], body().int32(Linux.O_RDWR).int32(0)).int64(0);
        long third = kernel.call(FuseProtocol.OPEN, old[0], body().int32(Linux.O_RDWR).int32(0)).int64(0);
        assertEquals(0, kernel.call(FuseProtocol.SETLK, old[0], flock(old[1], 7)).error());
        assertEquals(-Linux.EAGAIN, kernel.call(FuseProtocol.SETLK, old[0], flock(reused, 7)).error(),
                "another open's lock, though the kernel names the same owner");
        release(old[0], old[1]);
        assertEquals(0, kernel.call(FuseProtocol.SETLK, old[0], flock(reused, 7)).error());
        assertEquals(-Linux.EAGAIN, kernel.call(FuseProtocol.SETLK, old[0], flock(third, 9)).error(),
                "the old open's close took nothing from the new one");
    }

    /**
     * A lock this mount sees let go (an unlock, a close's RELEASE) is tried for its file's waiters at
     * once, not at their next poll: with polls an hour apart, only that can answer the wait.
     */
    @Test
    void aWaitingLockIsGrantedAsSoonAsThisMountSeesTheHolderLetGo() throws Exception {
        stop();
        connect(OFFERED | FuseProtocol.POSIX_LOCKS | FuseProtocol.FLOCK_LOCKS, 2);
        session.lockWaits().retryEvery(java.time.Duration.ofHours(1), java.time.Duration.ofHours(1));
        long[] held = lockedWithAWaiter("turns");
        long[] holder = {held[0], held[1]};
        long waiter = held[2];
        long waits = held[3];
        long unlock = kernel.send(FuseProtocol.SETLK, holder[0], body().int64(holder[1]).int64(7).int64(0)
                .int64(Long.MAX_VALUE).int32(Linux.F_UNLCK).int32(4321).int32(FuseProtocol.LK_FLOCK).int32(0));
        assertEquals(Map.of(unlock, 0, waits, 0), answers(2), "the unlock, then the waiter's grant");

        long third = kernel.call(FuseProtocol.OPEN, holder[0], body().int32(Linux.O_RDWR).int32(0)).int64(0);
        long waitsAgain = kernel.send(FuseProtocol.SETLKW, holder[0], flock(third, 9));
        awaitWaiters(1);
        long close = kernel.send(FuseProtocol.RELEASE, holder[0], body().int64(waiter).int32(0).int32(0).int64(0));
        assertEquals(Map.of(close, 0, waitsAgain, 0), answers(2), "the close, then the next waiter's grant");
    }

    /**
     * A mount ending with files still open (SIGTERM's unmount waited for them in vain) answers its
     * lock waits and every request after ECONNABORTED before its files close: closing them first let
     * go of the holder's lock, and a waiter's next try was granted it while the holder wrote on.
     */
    @Test
    void aMountEndingWithFilesOpenRefusesItsLockWaitsBeforeItsFilesClose() throws Exception {
        stop();
        connect(OFFERED | FuseProtocol.POSIX_LOCKS | FuseProtocol.FLOCK_LOCKS, 2);
        long[] held = lockedWithAWaiter("held");
        long[] holder = {held[0], held[1]};
        long waits = held[3];

        assertTrue(session.refuseAll(10_000));
        FakeKernel.Reply refused = kernel.reply();
        assertEquals(waits, refused.unique());
        assertEquals(-Linux.ECONNABORTED, refused.error());
        assertEquals(0, session.lockWaits().waiting());
        assertEquals(-Linux.ECONNABORTED, kernel.call(FuseProtocol.LOOKUP, FuseProtocol.ROOT_ID, body().name("shared")).error());
        assertEquals(-Linux.ECONNABORTED, write(holder[0], holder[1], 0, "late").error());
        fs.closeAll();
    }

    /**
     * A let-go this mount cannot see (another mount's unlock, a program's on the store file) is one
     * the store tells of ({@code FileLocks.whenLetGo}): the waiter tries again then, not at its next
     * poll, and the store's watch ends with the wait.
     */
    @Test
    void aWaitingLockIsGrantedWhenTheStoreTellsOfALetGoElsewhere() throws Exception {
        List<Runnable> told = new java.util.concurrent.CopyOnWriteArrayList<>();
        java.util.concurrent.atomic.AtomicInteger watchesEnded = new java.util.concurrent.atomic.AtomicInteger();
        wrapOpens((i, h) -> withLocks(h, locks -> around(locks, dev.chibifs.store.FileLocks.class, (lm, la) -> {
            if (!lm.getName().equals("whenLetGo")) {
                return null;
            }
            told.add((Runnable) la[0]);
            return (AutoCloseable) watchesEnded::incrementAndGet;
        })));
        stop();
        connect(OFFERED | FuseProtocol.POSIX_LOCKS | FuseProtocol.FLOCK_LOCKS, 2);
        session.lockWaits().retryEvery(java.time.Duration.ofHours(1), java.time.Duration.ofHours(1));
        long shared = lookup(FuseProtocol.ROOT_ID, "shared");
        long[] f = create(shared, "elsewhere");
        // the holder is not this mount's: an open of the store's own, as another mount's would be
        try (dev.chibifs.store.FileHandle other = store.open(VfsPath.of("/shared/elsewhere"),
                java.util.EnumSet.of(dev.chibifs.store.OpenFlag.READ), 0)) {
            assertTrue(other.locks().tryFlock(99, dev.chibifs.store.LockType.WRITE));
            long waits = kernel.send(FuseProtocol.SETLKW, f[0], flock(f[1], 8));
            awaitWaiters(1);
            assertTrue(other.locks().tryFlock(99, dev.chibifs.store.LockType.UNLOCK));
            assertEquals(1, told.size(), "the wait asked the store to tell it of let-gos");
            told.get(0).run();
            FakeKernel.Reply granted = kernel.reply();
            assertEquals(waits, granted.unique());
            assertEquals(0, granted.error());
        }
        assertEquals(1, watchesEnded.get(), "the watch ended with the wait");
    }

    /**
     * A new file in /shared, flock'ed through its creating open by owner 7, and a second open whose
     * owner 8 waits for it: {node, holder's fh, waiter's fh, the waiting request's unique}.
     */
    private long[] lockedWithAWaiter(String name) throws Exception {
        long[] holder = create(lookup(FuseProtocol.ROOT_ID, "shared"), name);
        long waiter = kernel.call(FuseProtocol.OPEN, holder[0], body().int32(Linux.O_RDWR).int32(0)).int64(0);
        assertEquals(0, kernel.call(FuseProtocol.SETLK, holder[0], flock(holder[1], 7)).error());
        long waits = kernel.send(FuseProtocol.SETLKW, holder[0], flock(waiter, 8));
        awaitWaiters(1);
        return new long[] {holder[0], holder[1], waiter, waits};
    }

    /** A non-blocking exclusive flock(2) through open {@code fh} by lock owner {@code owner}. */
    private static FakeKernel.Body flock(long fh, long owner) {
        return body().int64(fh).int64(owner).int64(0).int64(Long.MAX_VALUE).int32(Linux.F_WRLCK).int32(4321)
                .int32(FuseProtocol.LK_FLOCK).int32(0);
    }

    /** The error of each of the next {@code n} replies, by request id (they may come in any order). */
    private Map<Long, Integer> answers(int n) throws InterruptedException {
        Map<Long, Integer> answers = new java.util.HashMap<>();
        for (int i = 0; i < n; i++) {
            FakeKernel.Reply r = kernel.reply();
            answers.put(r.unique(), r.error());
        }
        return answers;
    }

    /** The first open's close, held: {@code closing} counts down as it begins, and it goes on once {@code mayClose} does. */
    private record HeldClose(java.util.concurrent.CountDownLatch closing, java.util.concurrent.CountDownLatch mayClose) {
    }

    /** Connects again, with lock flags and two workers, over {@link #store}, the first open's close held. */
    private HeldClose connectHoldingTheFirstClose() throws Exception {
        HeldClose held = new HeldClose(new java.util.concurrent.CountDownLatch(1), new java.util.concurrent.CountDownLatch(1));
        wrapOpens((i, h) -> i > 0 ? h : around(h, dev.chibifs.store.FileHandle.class, (hm, ha) -> {
            if (hm.getName().equals("close")) {
                held.closing().countDown();
                awaitLatch(held.mayClose());
            }
            return null;
        }));
        stop();
        connect(OFFERED | FuseProtocol.POSIX_LOCKS | FuseProtocol.FLOCK_LOCKS, 2);
        return held;
    }

    /** Until {@code n} lock requests wait: the event, not a guess at a time. */
    private void awaitWaiters(int n) {
        while (session.lockWaits().waiting() != n) {
            Thread.onSpinWait();
        }
    }

    private static void awaitLatch(java.util.concurrent.CountDownLatch latch) {
        try {
            assertTrue(latch.await(30, java.util.concurrent.TimeUnit.SECONDS), "timed out");
        } catch (InterruptedException e) {
            throw new IllegalStateException(e);
        }
    }

    @Test
    void aLockGrantedWhereChangesAreNotFollowedDropsThePagesOfTheFilesOpenBesideIt() throws Exception {
        fs.follow(StoreFollower.UNFOLLOWED); // as where the root store is an S3 bucket
        long shared = lookup(FuseProtocol.ROOT_ID, "shared");
        long[] index = create(shared, "db-shm");
        long[] wal = create(shared, "db-wal");
        long[] closed = create(shared, "notes");
        kernel.call(FuseProtocol.RELEASE, closed[0], body().int64(closed[1]).int32(0).int32(0).int64(0));
        long grant = kernel.send(FuseProtocol.SETLK, index[0],
                body().int64(index[1]).int64(7).int64(0).int64(Long.MAX_VALUE).int32(Linux.F_WRLCK).int32(1234).int32(0).int32(0));
        assertEquals(grant, kernel.reply().unique());
        kernel.awaitNotification(n -> n.error() == FuseProtocol.NOTIFY_INVAL_INODE && n.int64(0) == index[0]);
        kernel.awaitNotification(n -> n.error() == FuseProtocol.NOTIFY_INVAL_INODE && n.int64(0) == wal[0]);
        assertTrue(kernel.notifications(FuseProtocol.NOTIFY_INVAL_INODE).stream().noneMatch(n -> n.int64(0) == closed[0]),
                "not a file closed beside it");
    }

    /** A SETLK granted while the kernel holds its INVAL_INODE: a LOOKUP is answered meanwhile, the grant after the notification. */
    private void grantWhileItsInvalidationWaits() throws Exception {
        long shared = lookup(FuseProtocol.ROOT_ID, "shared");
        long[] db = create(shared, "db");
        java.util.concurrent.CountDownLatch held = new java.util.concurrent.CountDownLatch(1);
        kernel.holdNotifications = held;
        long grant;
        try {
            grant = kernel.send(FuseProtocol.SETLK, db[0],
                    body().int64(db[1]).int64(7).int64(0).int64(Long.MAX_VALUE).int32(Linux.F_WRLCK).int32(1234).int32(0).int32(0));
            long read = kernel.send(FuseProtocol.LOOKUP, shared, body().name("db"));
            FakeKernel.Reply served = kernel.reply();
            assertEquals(read, served.unique(), "served while the grant waits");
            assertEquals(0, served.error());
            assertTrue(kernel.notifications.isEmpty(), "the notification still waits for its page");
        } finally {
            held.countDown();
        }
        FakeKernel.Reply granted = kernel.reply();
        assertEquals(grant, granted.unique());
        assertEquals(0, granted.error(), "the lock is granted");
        FakeKernel.Reply dropped = kernel.awaitNotification(n -> n.error() == FuseProtocol.NOTIFY_INVAL_INODE && n.int64(0) == db[0]);
        assertEquals(0, dropped.int64(8), "the pages went before the grant was answered");
    }

    /**
     * SQLite's DMS lock on a WAL index through a served open ({@link WalIndexGuard}): the mount's
     * connections share and exclude among themselves as the kernel would (GETLK, SETLK), and a
     * connection's lock goes with the open it came through (RELEASE).
     */
    @Test
    void theDeadManLocksOfAWalIndexAreDecidedAmongTheMountsConnections() throws Exception {
        long shared = lookup(FuseProtocol.ROOT_ID, "shared");
        long[] first = create(shared, "tasks.db-shm");
        long index = first[0];
        long second = kernel.call(FuseProtocol.OPEN, index, body().int32(Linux.O_RDWR).int32(0)).int64(0);
        long dms = WalIndexGuard.DMS_BYTE;
        assertEquals(Linux.F_UNLCK, lock(FuseProtocol.GETLK, index, first[1], 1, Linux.F_WRLCK, dms).int32(16), "nobody connected");
        assertEquals(0, lock(FuseProtocol.SETLK, index, first[1], 1, Linux.F_WRLCK, dms).error(), "the first rebuilds the index");
        FakeKernel.Reply seen = lock(FuseProtocol.GETLK, index, second, 2, Linux.F_WRLCK, dms);
        assertEquals(Linux.F_WRLCK, seen.int32(16));
        assertEquals(dms, seen.int64(0));
        assertEquals(-Linux.EAGAIN, lock(FuseProtocol.SETLK, index, second, 2, Linux.F_RDLCK, dms).error());
        assertEquals(0, lock(FuseProtocol.SETLK, index, first[1], 1, Linux.F_RDLCK, dms).error());
        assertEquals(Linux.F_RDLCK, lock(FuseProtocol.GETLK, index, second, 2, Linux.F_WRLCK, dms).int32(16));
        assertEquals(0, lock(FuseProtocol.SETLK, index, second, 2, Linux.F_RDLCK, dms).error(), "the second joins it");
        try (dev.chibifs.store.FileHandle outside = store.open(VfsPath.of("/shared/tasks.db-shm"),
                java.util.EnumSet.of(dev.chibifs.store.OpenFlag.READ, dev.chibifs.store.OpenFlag.WRITE), 0)) {
            assertEquals(dev.chibifs.store.LockType.WRITE, outside.locks().testLock(99, dev.chibifs.store.LockType.READ, dms, dms).type(),
                    "to anyone else the mount's readers are one exclusive holder");
        }
        assertEquals(-Linux.EAGAIN, lock(FuseProtocol.SETLK, index, first[1], 1, Linux.F_WRLCK, dms).error());
        release(index, second);
        assertEquals(0, lock(FuseProtocol.SETLK, index, first[1], 1, Linux.F_WRLCK, dms).error(), "alone once the other's open is released");
    }

    /** GETLK names the process that holds the conflicting lock, where it locked through this mount. */
    @Test
    void aLockAskedAboutNamesItsHoldersProcess() throws Exception {
        stop();
        connect(OFFERED | FuseProtocol.POSIX_LOCKS | FuseProtocol.FLOCK_LOCKS, 2);
        long[] f = create(lookup(FuseProtocol.ROOT_ID, "shared"), "dl");
        long other = kernel.call(FuseProtocol.OPEN, f[0], body().int32(Linux.O_RDWR).int32(0)).int64(0);
        assertEquals(0, kernel.call(FuseProtocol.SETLK, f[0], recordLock(f[1], 7, 100, 0, 9, Linux.F_WRLCK)).error());
        assertEquals(0, kernel.call(FuseProtocol.SETLK, f[0], recordLock(other, 8, 200, 20, 29, Linux.F_WRLCK)).error());
        FakeKernel.Reply seen = kernel.call(FuseProtocol.GETLK, f[0], recordLock(other, 8, 200, 0, 9, Linux.F_WRLCK));
        assertEquals(Linux.F_WRLCK, seen.int32(16));
        assertEquals(100, seen.int32(20), "the holder's process");
        seen = kernel.call(FuseProtocol.GETLK, f[0], recordLock(f[1], 7, 100, 25, 25, Linux.F_RDLCK));
        assertEquals(20, seen.int64(0));
        assertEquals(200, seen.int32(20), "the other holder's");
    }

    /**
     * A name whose bytes are not UTF-8 is EILSEQ for every store, as the local store answered: decoded,
     * each bad byte became U+FFFD, so "x\xff" and "x\xfe" were one name to an S3 store, and the second
     * write went over the first. A name holding U+FFFD itself cannot be told from them.
     */
    @Test
    void aNameThatIsNotUtf8IsRefusedNotTakenForAnother() throws Exception {
        long shared = lookup(FuseProtocol.ROOT_ID, "shared");
        for (byte[] name : List.of(new byte[] {'x', (byte) 0xff}, new byte[] {'x', (byte) 0xfe},
                "x\uFFFD".getBytes(StandardCharsets.UTF_8))) {
            FakeKernel.Body made = body().int32(Linux.O_WRONLY | Linux.O_CREAT).int32(0100644).int32(022).int32(0)
                    .bytes(name).bytes(new byte[] {0});
            assertEquals(-Linux.EILSEQ, kernel.call(FuseProtocol.CREATE, shared, made).error());
            assertEquals(-Linux.EILSEQ, kernel.call(FuseProtocol.LOOKUP, shared, body().bytes(name).bytes(new byte[] {0})).error());
            assertEquals(-Linux.EILSEQ, kernel.call(FuseProtocol.MKDIR, shared,
                    body().int32(040755).int32(022).bytes(name).bytes(new byte[] {0})).error());
        }
        assertEquals(List.of(), store.entries(VfsPath.of("/shared")).stream().map(e -> e.name()).toList(), "nothing made");
    }

    /** A record lock (fcntl) of [start, end] of {@code type} by {@code owner} for process {@code pid}, through open {@code fh}. */
    private static FakeKernel.Body recordLock(long fh, long owner, int pid, long start, long end, int type) {
        return body().int64(fh).int64(owner).int64(start).int64(end).int32(type).int32(pid).int32(0).int32(0);
    }

    /** A GETLK or SETLK of one byte at {@code at} by {@code owner} through open file {@code fh}. */
    private FakeKernel.Reply lock(int opcode, long node, long fh, long owner, int type, long at) throws Exception {
        return kernel.call(opcode, node, body().int64(fh).int64(owner).int64(at).int64(at).int32(type).int32(0).int32(0).int32(0));
    }

    @Test
    void anOpcodeWeDoNotServeIsEnosys() throws Exception {
        assertEquals(-Linux.ENOSYS, kernel.call(48 /* SETUPMAPPING: virtiofs's DAX windows */, FuseProtocol.ROOT_ID,
                body().int64(0).int64(0).int64(0).int64(0).int64(0)).error());
        assertEquals(-Linux.ENOSYS, kernel.call(FuseProtocol.BMAP, FuseProtocol.ROOT_ID, body().int64(0).int32(4096).int32(0)).error());
    }

    @Test
    void aFileShowsItsEtagAsAnExtendedAttributeReadByNameAndNotListed() throws Exception {
        long f = written("e", "hello\n");
        String sha = "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03"; // sha256("hello\n")
        FakeKernel.Reply probe = kernel.call(FuseProtocol.GETXATTR, f, body().int32(0).int32(0).name("user.chibi.etag"));
        assertEquals(64, probe.int32(0), "a size probe answers the length");
        FakeKernel.Reply value = kernel.call(FuseProtocol.GETXATTR, f, body().int32(64).int32(0).name("user.chibi.etag"));
        assertEquals(sha, StandardCharsets.US_ASCII.decode(value.body()).toString());
        assertEquals(-Linux.ERANGE, kernel.call(FuseProtocol.GETXATTR, f,
                body().int32(10).int32(0).name("user.chibi.etag")).error());
        assertEquals(-Linux.ENODATA, kernel.call(FuseProtocol.GETXATTR, f,
                body().int32(0).int32(0).name("user.other")).error());
        // other namespaces are unsupported, not empty: that is what makes `ls -l` stop asking
        for (String name : List.of("security.capability", "security.selinux", "system.posix_acl_access", "trusted.x")) {
            assertEquals(-Linux.EOPNOTSUPP, kernel.call(FuseProtocol.GETXATTR, f,
                    body().int32(0).int32(0).name(name)).error(), name);
        }
        // not listed, so a copy made with its attributes does not carry a hash its edits would make stale
        assertEquals(0, kernel.call(FuseProtocol.LISTXATTR, f, body().int32(0).int32(0)).int32(0));
    }

    @Test
    void settingTheEtagSucceedsAndChangesNothing() throws Exception {
        long f = written("copy", "hello\n");
        byte[] sha = "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03".getBytes(StandardCharsets.US_ASCII);
        byte[] other = "0000000000000000000000000000000000000000000000000000000000000000".getBytes(StandardCharsets.US_ASCII);
        // what rsync -X and cp -a do to a copy: set the ETag the source had, which the copy's content has
        assertEquals(0, kernel.call(FuseProtocol.SETXATTR, f,
                body().int32(sha.length).int32(0).name("user.chibi.etag").bytes(sha)).error());
        assertEquals(0, kernel.call(FuseProtocol.SETXATTR, f,
                body().int32(sha.length).int32(Linux.XATTR_REPLACE).name("user.chibi.etag").bytes(sha)).error());
        assertEquals(-Linux.EEXIST, kernel.call(FuseProtocol.SETXATTR, f,
                body().int32(sha.length).int32(Linux.XATTR_CREATE).name("user.chibi.etag").bytes(sha)).error());
        // a file copied out with the ETag it had, edited, and copied back: the stale value changes nothing
        assertEquals(0, kernel.call(FuseProtocol.SETXATTR, f,
                body().int32(other.length).int32(0).name("user.chibi.etag").bytes(other)).error());
        assertEquals(new String(sha, StandardCharsets.US_ASCII), StandardCharsets.US_ASCII.decode(kernel.call(FuseProtocol.GETXATTR, f,
                body().int32(64).int32(0).name("user.chibi.etag")).body()).toString());
        assertEquals(-Linux.EOPNOTSUPP, kernel.call(FuseProtocol.SETXATTR, f,
                body().int32(1).int32(0).name("trusted.x").bytes(new byte[] {'1'})).error());
        assertEquals("hello\n", new String(store.read(VfsPath.of("/shared/copy")), StandardCharsets.UTF_8), "nothing changed");
        assertEquals(List.of(), store.xattrNames(VfsPath.of("/shared/copy")));
    }

    private FakeKernel.Reply setxattr(long node, String name, String value, int flags) throws Exception {
        byte[] v = value.getBytes(StandardCharsets.UTF_8);
        return kernel.call(FuseProtocol.SETXATTR, node, body().int32(v.length).int32(flags).name(name).bytes(v));
    }

    private String listxattr(long node) throws Exception {
        return StandardCharsets.UTF_8.decode(kernel.call(FuseProtocol.LISTXATTR, node, body().int32(1000).int32(0)).body()).toString();
    }

    @Test
    void userAttributesAreKeptByTheStoreWhereTheCallerMayWrite() throws Exception {
        long f = written("tagged", "hello\n");
        VfsPath p = VfsPath.of("/shared/tagged");
        // what a browser, curl --xattr or rsync -X leave on a file
        assertEquals(0, setxattr(f, "user.xdg.origin.url", "https://example.org/tagged", 0).error());
        assertEquals("https://example.org/tagged", new String(store.xattr(p, "user.xdg.origin.url"), StandardCharsets.UTF_8));
        FakeKernel.Reply probe = kernel.call(FuseProtocol.GETXATTR, f, body().int32(0).int32(0).name("user.xdg.origin.url"));
        assertEquals(26, probe.int32(0));
        FakeKernel.Reply value = kernel.call(FuseProtocol.GETXATTR, f, body().int32(26).int32(0).name("user.xdg.origin.url"));
        assertEquals("https://example.org/tagged", StandardCharsets.UTF_8.decode(value.body()).toString());
        assertEquals("user.xdg.origin.url\0", listxattr(f));
        // a store file's own labels are its file system's, not the mount's to show
        store.setXattr(p, "security.selinux", "unconfined_u".getBytes(StandardCharsets.UTF_8), XattrMode.SET);
        assertEquals("user.xdg.origin.url\0", listxattr(f));
        assertEquals(-Linux.EOPNOTSUPP, kernel.call(FuseProtocol.GETXATTR, f,
                body().int32(0).int32(0).name("security.selinux")).error());

        assertEquals(-Linux.EEXIST, setxattr(f, "user.xdg.origin.url", "x", Linux.XATTR_CREATE).error());
        assertEquals(-Linux.ENODATA, setxattr(f, "user.none", "x", Linux.XATTR_REPLACE).error());
        assertEquals(-Linux.EINVAL, setxattr(f, "user.none", "x", Linux.XATTR_CREATE | Linux.XATTR_REPLACE).error());
        assertEquals(0, setxattr(f, "user.xdg.origin.url", "y", Linux.XATTR_REPLACE).error());
        assertEquals("y", new String(store.xattr(p, "user.xdg.origin.url"), StandardCharsets.UTF_8));

        long shared = lookup(FuseProtocol.ROOT_ID, "shared");
        assertEquals(0, setxattr(shared, "user.project", "chibi", 0).error());
        assertEquals("user.project\0", listxattr(shared));

        assertEquals(0, kernel.call(FuseProtocol.REMOVEXATTR, f, body().name("user.xdg.origin.url")).error());
        assertEquals(-Linux.ENODATA, kernel.call(FuseProtocol.GETXATTR, f,
                body().int32(0).int32(0).name("user.xdg.origin.url")).error());
        assertEquals(-Linux.ENODATA, kernel.call(FuseProtocol.REMOVEXATTR, f, body().name("user.xdg.origin.url")).error());
        assertEquals("", listxattr(f));
    }

    /** Node and handle of /shared/f made open here, after another mount's {@code ln f kept; echo new > f.new; mv f.new f}. */
    private long[] openThenReplacedBehind() throws Exception {
        long shared = lookup(FuseProtocol.ROOT_ID, "shared");
        long[] old = create(shared, "f");
        store.link(VfsPath.of("/shared/f"), VfsPath.of("/shared/kept"));
        store.write(VfsPath.of("/shared/f.new"), "new file".getBytes(StandardCharsets.UTF_8));
        store.rename(VfsPath.of("/shared/f.new"), VfsPath.of("/shared/f"));
        return old;
    }

    @Test
    void fsetxattrOfAFileReplacedBehindTheMountSetsItOnTheOpenFileNotTheOneNowNamedSo() throws Exception {
        kernel.pid = THIS_PROCESS;
        long[] old = openThenReplacedBehind();

        // fsetxattr(fd, ...) and the rest come as requests about the node, from the process that opened it
        assertEquals(0, setxattr(old[0], "user.k", "v", 0).error());
        assertEquals(0, setxattr(old[0], "user.gone", "x", 0).error());
        assertEquals(0, kernel.call(FuseProtocol.REMOVEXATTR, old[0], body().name("user.gone")).error());
        assertEquals("v", StandardCharsets.UTF_8.decode(kernel.call(FuseProtocol.GETXATTR, old[0],
                body().int32(10).int32(0).name("user.k")).body()).toString());
        assertEquals("user.k\0", listxattr(old[0]));
        assertEquals(List.of("user.k"), store.xattrNames(VfsPath.of("/shared/kept")));
        assertEquals(List.of(), store.xattrNames(VfsPath.of("/shared/f")), "not the file that has its name now");

        kernel.pid = 1; // getxattr f by another process, through the name the kernel still has for the open file
        assertEquals(-Linux.ESTALE, kernel.call(FuseProtocol.GETXATTR, old[0], body().int32(10).int32(0).name("user.k")).error());
        assertEquals(-Linux.ESTALE, setxattr(old[0], "user.other", "x", 0).error(), "looked up again");
        assertEquals(List.of(), store.xattrNames(VfsPath.of("/shared/f")));
        kernel.pid = THIS_PROCESS;
        release(old[0], old[1]);
    }

    @Test
    void aChangeThroughAnOpenFileIsJudgedWhereItsFileIsNowNotWhereTheKernelLastSawIt() throws Exception {
        kernel.close();
        session.ended().join();
        caller = Caller.context("bob");
        connect(OFFERED);
        kernel.pid = THIS_PROCESS;
        long[] v = create(lookup(FuseProtocol.ROOT_ID, "shared"), "v"); // bob's, kept open, as a log writer
        write(v[0], v[1], 0, "data");
        store.setXattr(VfsPath.of("/shared/v"), "user.tag", new byte[] {'a'}, XattrMode.SET);
        store.rename(VfsPath.of("/shared/v"), VfsPath.of("/home/alice/v")); // chibi moves it home, behind the mount

        // fchmod, futimens, truncate of /proc/self/fd/N, f*xattr: by node, judged at /home/alice/v
        assertEquals(-Linux.EACCES, setattr(v[0], FuseProtocol.FATTR_MODE, 0, 0100755).error(), "fchmod");
        assertEquals(-Linux.EACCES, setattr(v[0], FuseProtocol.FATTR_MTIME, 1_000_000, 0).error(), "futimens");
        assertEquals(-Linux.EACCES, truncate(v[0], 1).error(), "truncate by /proc/self/fd/N");
        assertEquals(-Linux.EACCES, setxattr(v[0], "user.bob", "x", 0).error(), "fsetxattr");
        assertEquals(-Linux.EACCES, kernel.call(FuseProtocol.REMOVEXATTR, v[0], body().name("user.tag")).error());
        Metadata m = store.metadata(VfsPath.of("/home/alice/v"));
        assertEquals(0, m.mode() & 0111);
        assertEquals(4, m.size());
        assertEquals(List.of("user.tag"), store.xattrNames(VfsPath.of("/home/alice/v")));

        // ftruncate through the descriptor it opened for writing: as its writes, asked nothing now
        assertEquals(0, kernel.call(FuseProtocol.SETATTR, v[0], body().int32(FuseProtocol.FATTR_SIZE | FuseProtocol.FATTR_FH)
                .int32(0).int64(v[1]).int64(2).int64(0).int64(0).int64(0).int64(0).int64(0).int64(0).int64(0).int64(0))
                .error(), "ftruncate");
        assertEquals(2, store.metadata(VfsPath.of("/home/alice/v")).size());
        release(v[0], v[1]);
    }

    @Test
    void fsetxattrOfAnOpenFileRemovedThroughTheMountReachesItAndWithoutAnOpenIsEnoent() throws Exception {
        long shared = lookup(FuseProtocol.ROOT_ID, "shared");
        long[] f = create(shared, "f");
        store.link(VfsPath.of("/shared/f"), VfsPath.of("/shared/elsewhere-kept"));
        assertEquals(0, kernel.call(FuseProtocol.UNLINK, shared, body().name("f")).error());

        assertEquals(0, setxattr(f[0], "user.k", "v", 0).error(), "as ext4 does for an unlinked open file");
        assertEquals(List.of("user.k"), store.xattrNames(VfsPath.of("/shared/elsewhere-kept")));
        release(f[0], f[1]);
        assertEquals(-Linux.ENOENT, setxattr(f[0], "user.k", "w", 0).error());
    }

    @Test
    void withoutExtendedAttributesEveryXattrRequestIsEnosysAndNothingIsKept() throws Exception {
        long f = written("plain", "hello\n");
        kernel.close();
        session.ended().join();
        connect(OFFERED, new FuseSession.Settings(1 << 20, 1, 1, true, false, false, false, false));
        f = lookup(lookup(FuseProtocol.ROOT_ID, "shared"), "plain");
        // ENOSYS once, and the kernel answers EOPNOTSUPP itself from then on (--no-xattr)
        assertEquals(-Linux.ENOSYS, setxattr(f, "user.a", "1", 0).error());
        assertEquals(-Linux.ENOSYS, kernel.call(FuseProtocol.REMOVEXATTR, f, body().name("user.a")).error());
        assertEquals(-Linux.ENOSYS, kernel.call(FuseProtocol.GETXATTR, f, body().int32(0).int32(0).name("user.chibi.etag")).error());
        assertEquals(-Linux.ENOSYS, kernel.call(FuseProtocol.LISTXATTR, f, body().int32(0).int32(0)).error());
        assertEquals(List.of(), store.xattrNames(VfsPath.of("/shared/plain")));
    }

    /**
     * The kernel asks security.capability at every write, and each ENOTSUP was an "error" in stats: a
     * healthy tar of 10,000 files showed 10,000. Answers that are the protocol working are counted apart.
     */
    @Test
    void attributeAnswersThatAreNoFailureAreNotCountedAsErrors() throws Exception {
        long f = written("attrs", "x");
        assertEquals(-Linux.ENOTSUP, kernel.call(FuseProtocol.GETXATTR, f, body().int32(0).int32(0).name("security.capability")).error());
        assertEquals(-Linux.ENODATA, kernel.call(FuseProtocol.GETXATTR, f, body().int32(0).int32(0).name("user.none")).error());
        RequestStats.OpStats getxattr = stats.snapshot().requests().get("GETXATTR");
        assertEquals(List.of(2L, 0L, 2L), List.of(getxattr.count(), getxattr.errors(), getxattr.expected()));
        assertEquals(-Linux.ENOTSUP, setxattr(f, "system.posix_acl_access", "acl", 0).error(), "cp -a keeping ACLs");
        RequestStats.OpStats setxattr = stats.snapshot().requests().get("SETXATTR");
        assertEquals(List.of(1L, 0L, 1L), List.of(setxattr.count(), setxattr.errors(), setxattr.expected()));
        assertEquals(-Linux.ENOENT, kernel.call(FuseProtocol.GETATTR, 999_999, body().int32(0).int32(0).int64(0)).error(),
                "a node the kernel never had");
        RequestStats.OpStats getattr = stats.snapshot().requests().get("GETATTR");
        assertEquals(List.of(1L, 0L), List.of(getattr.errors(), getattr.expected()), "a failure is an error");
    }

    @Test
    void aSetxattrWhoseSizeRunsPastTheRequestSetsNothing() throws Exception {
        long f = written("sized", "x");
        byte[] value = "1".getBytes(StandardCharsets.UTF_8);
        for (int size : new int[] {100, Integer.MAX_VALUE, -1}) {
            assertEquals(-Linux.EIO, kernel.call(FuseProtocol.SETXATTR, f,
                    body().int32(size).int32(0).name("user.a").bytes(value)).error(), "size " + size);
        }
        assertEquals(List.of(), store.xattrNames(VfsPath.of("/shared/sized")));
        assertEquals(0, setxattr(f, "user.a", "1", 0).error(), "the session goes on");
    }

    @Test
    void aDeniedAttributeChangeIsEaccesAndLeavesNoTrace() throws Exception {
        VfsPath p = VfsPath.of("/home/bob/notes");
        store.write(p, "bob's\n".getBytes(StandardCharsets.UTF_8));
        store.setXattr(p, "user.kept", "yes".getBytes(StandardCharsets.UTF_8), XattrMode.SET);
        long notes = lookup(lookup(lookup(FuseProtocol.ROOT_ID, "home"), "bob"), "notes");
        assertEquals(-Linux.EACCES, setxattr(notes, "user.tag", "alice's", 0).error());
        assertEquals(-Linux.EACCES, kernel.call(FuseProtocol.REMOVEXATTR, notes, body().name("user.kept")).error());
        assertEquals(List.of("user.kept"), store.xattrNames(p));
        assertEquals("user.kept\0", listxattr(notes), "everyone reads them");
    }

    @Test
    void removingTheEtagSucceedsAndChangesNothing() throws Exception {
        long f = written("copied", "hello\n");
        // what rsync -aX does to a copy whose source has no ETag: remove the names the source lacks
        assertEquals(0, kernel.call(FuseProtocol.REMOVEXATTR, f, body().name("user.chibi.etag")).error());
        assertEquals(64, kernel.call(FuseProtocol.GETXATTR, f,
                body().int32(0).int32(0).name("user.chibi.etag")).int32(0), "the ETag shows again at once");
        assertEquals(-Linux.ENODATA, kernel.call(FuseProtocol.REMOVEXATTR, f, body().name("user.x")).error());
        assertEquals(-Linux.EOPNOTSUPP, kernel.call(FuseProtocol.REMOVEXATTR, f, body().name("security.selinux")).error());
        assertEquals(-Linux.EACCES, kernel.call(FuseProtocol.REMOVEXATTR, lookup(FuseProtocol.ROOT_ID, "sys"),
                body().name("user.chibi.etag")).error(), "the policy judges it first, as any change");
        assertEquals("hello\n", new String(store.read(VfsPath.of("/shared/copied")), StandardCharsets.UTF_8));
    }

    private FakeKernel.Reply rename2(long dir, String from, String to, int flags) throws Exception {
        return kernel.call(FuseProtocol.RENAME2, dir, body().int64(dir).int32(flags).int32(0).name(from).name(to));
    }

    @Test
    void renameat2CanRefuseToReplaceAndCanExchangeTwoNamesWithTheirNodes() throws Exception {
        long shared = lookup(FuseProtocol.ROOT_ID, "shared");
        long a = written("a", "A");
        long b = written("b", "B");
        assertEquals(-Linux.EEXIST, rename2(shared, "a", "b", Linux.RENAME_NOREPLACE).error());
        assertEquals(-Linux.EINVAL, rename2(shared, "a", "b", Linux.RENAME_NOREPLACE | Linux.RENAME_EXCHANGE).error());
        assertEquals(0, rename2(shared, "a", "b", Linux.RENAME_EXCHANGE).error());
        assertEquals("B", new String(store.read(VfsPath.of("/shared/a")), StandardCharsets.UTF_8));
        // each node goes with its file: the kernel swapped its dentries, and names it by them
        assertEquals(b, lookup(shared, "a"));
        assertEquals(a, lookup(shared, "b"));
        assertEquals(-Linux.ENOENT, rename2(shared, "a", "none", Linux.RENAME_EXCHANGE).error());
        assertEquals(0, rename2(shared, "a", "c", Linux.RENAME_NOREPLACE).error());
        assertEquals(b, lookup(shared, "c"));
    }

    @Test
    void statxGivesTheAttributesInItsOwnLayoutWithTheBirthTime() throws Exception {
        long f = written("born", "hello\n");
        Metadata m = store.metadata(VfsPath.of("/shared/born"));
        FakeKernel.Reply getattr = kernel.call(FuseProtocol.GETATTR, f, body().int32(0).int32(0).int64(0));
        FakeKernel.Reply statx = kernel.call(FuseProtocol.STATX, f,
                body().int32(0).int32(0).int64(0).int32(0).int32(Linux.STATX_BASIC_STATS | Linux.STATX_BTIME));
        assertEquals(0, statx.error());
        assertEquals(288, statx.body().remaining(), "sizeof(struct fuse_statx_out)");
        assertEquals(getattr.int64(0), statx.int64(0), "the same validity");
        int sx = 32; // struct fuse_statx after attr_valid, attr_valid_nsec, flags, spare[2]
        int attr = 16; // struct fuse_attr in fuse_attr_out
        assertEquals(Linux.STATX_BASIC_STATS | Linux.STATX_BTIME, statx.int32(sx));
        assertEquals(getattr.int32(attr + 80), statx.int32(sx + 4), "blksize");
        assertEquals(getattr.int32(attr + 64), statx.int32(sx + 16), "nlink");
        assertEquals(getattr.int32(attr + 60), statx.body().getShort(sx + 28) & 0xffff, "mode");
        assertEquals(getattr.int64(attr), statx.int64(sx + 32), "ino");
        assertEquals(6, statx.int64(sx + 40), "size");
        assertEquals(getattr.int64(attr + 16), statx.int64(sx + 48), "blocks");
        assertEquals(getattr.int64(attr + 32), statx.int64(sx + 112), "mtime");
        java.time.Instant born = m.created().toInstant();
        assertEquals(born.getEpochSecond(), statx.int64(sx + 80), "btime");
        assertEquals(born.getNano(), statx.int32(sx + 88));
    }

    @Test
    void aNameLongerThanNameMaxBytesIsEnametoolongAndLeavesNothing() throws Exception {
        // the kernel passes FUSE names up to 1024 bytes; the memory store would have kept this one
        long shared = lookup(FuseProtocol.ROOT_ID, "shared");
        String longest = "a".repeat(Linux.NAME_MAX);
        String tooLong = "é".repeat(Linux.NAME_MAX / 2 + 1); // 128 characters, 256 bytes
        create(shared, longest);
        FakeKernel.Reply created = kernel.call(FuseProtocol.CREATE, shared,
                body().int32(Linux.O_WRONLY | Linux.O_CREAT).int32(0100644).int32(022).int32(0).name(tooLong));
        assertEquals(-Linux.ENAMETOOLONG, created.error());
        assertEquals(-Linux.ENAMETOOLONG, kernel.call(FuseProtocol.LOOKUP, shared, body().name(tooLong)).error());
        assertEquals(-Linux.ENAMETOOLONG, rename2(shared, longest, longest + "b", 0).error());
        assertEquals(List.of(longest), store.list(VfsPath.of("/shared")).stream().map(e -> e.name()).toList());
    }

    @Test
    void aDirectoryRemovedWhileOpenStillHasAttributesWithNoLinks() throws Exception {
        // xfstests generic/035: fstat of a directory open in a process after rmdir or a rename over
        // it; with zero-message opendir the daemon holds no handle, and said ENOENT
        long shared = lookup(FuseProtocol.ROOT_ID, "shared");
        FakeKernel.Reply made = kernel.call(FuseProtocol.MKDIR, shared, body().int32(040755).int32(022).name("gone"));
        assertEquals(0, made.error());
        long dir = made.int64(0);
        assertEquals(0, kernel.call(FuseProtocol.RMDIR, shared, body().name("gone")).error());
        FakeKernel.Reply attr = kernel.call(FuseProtocol.GETATTR, dir, body().int32(0).int32(0).int64(0));
        assertEquals(0, attr.error());
        int a = 16; // struct fuse_attr in fuse_attr_out
        assertEquals(0, attr.int32(a + 64), "nlink");
        assertEquals(Linux.S_IFDIR, attr.int32(a + 60) & Linux.S_IFMT, "still a directory");
        assertEquals(made.int64(40), attr.int64(a), "the inode MKDIR gave (fuse_entry_out's attr at 40)");
    }

    @Test
    void aTimeBeyondWhatJavaHoldsIsClampedNotAnIoError() throws Exception {
        // xfstests generic/634: touch -d 'Dec 31 23:59:59 UTC 2147483647', and the year 0
        long f = written("t", "x");
        for (long seconds : new long[] {67767976233532799L, -62167219200L, Long.MIN_VALUE}) {
            FakeKernel.Reply set = kernel.call(FuseProtocol.SETATTR, f, body().int32(FuseProtocol.FATTR_MTIME).int32(0)
                    .int64(0).int64(0).int64(0).int64(0).int64(seconds).int64(0).int32(0).int32(0).int32(0)
                    .int32(0).int32(0).int32(0).int32(0).int32(0));
            assertEquals(0, set.error(), "mtime " + seconds);
        }
        assertEquals(java.time.Instant.MIN, store.metadata(VfsPath.of("/shared/t")).modified().toInstant());
    }

    @Test
    void touchSetsTheStoresNowNotTheDaemons() throws Exception {
        // touch sends ATIME_NOW and MTIME_NOW: the store stamps them by its clock, as its own writes
        long f = written("t", "x");
        clock.advance(java.time.Duration.ofMinutes(5));
        int now = FuseProtocol.FATTR_ATIME | FuseProtocol.FATTR_ATIME_NOW | FuseProtocol.FATTR_MTIME | FuseProtocol.FATTR_MTIME_NOW;
        assertEquals(0, setattr(f, now, 0, 0).error());
        Metadata m = store.metadata(VfsPath.of("/shared/t"));
        assertEquals(clock.instant(), m.modified().toInstant());
        assertEquals(clock.instant(), m.accessed().toInstant());
    }

    /** COPY_FILE_RANGE(_64): struct fuse_copy_file_range_in, the request's node the input's. */
    private FakeKernel.Reply copyRange(int opcode, long nodeIn, long fhIn, long offIn, long nodeOut, long fhOut,
                                       long offOut, long length, long flags) throws Exception {
        return kernel.call(opcode, nodeIn,
                body().int64(fhIn).int64(offIn).int64(nodeOut).int64(fhOut).int64(offOut).int64(length).int64(flags));
    }

    @Test
    void aCopyBetweenTwoOpenFilesIsOneRequestWithNoReadOrWrite() throws Exception {
        long src = written("src", "hello, world");
        long[] dst = create(lookup(FuseProtocol.ROOT_ID, "shared"), "dst");
        long in = openToRead(src).int64(0);
        long readsBefore = stats.count("READ");
        long writesBefore = stats.count("WRITE");

        FakeKernel.Reply wide = copyRange(FuseProtocol.COPY_FILE_RANGE_64, src, in, 7, dst[0], dst[1], 0, 100, 0);
        assertEquals(0, wide.error());
        assertEquals(5, wide.int64(0), "struct fuse_copy_file_range_out: what was there to copy, not what was asked");
        // the 7.44 request (a kernel that had no COPY_FILE_RANGE_64, or was told ENOSYS for it) has fuse_write_out
        FakeKernel.Reply narrow = copyRange(FuseProtocol.COPY_FILE_RANGE, src, in, 0, dst[0], dst[1], 5, 5, 0);
        assertEquals(0, narrow.error());
        assertEquals(5, narrow.int32(0));
        assertEquals(0, copyRange(FuseProtocol.COPY_FILE_RANGE_64, src, in, 12, dst[0], dst[1], 10, 4096, 0).int64(0),
                "nothing past the input's end");
        release(dst[0], dst[1]);
        assertEquals("worldhello", new String(store.read(VfsPath.of("/shared/dst")), StandardCharsets.UTF_8));
        assertEquals(List.of(readsBefore, writesBefore), List.of(stats.count("READ"), stats.count("WRITE")));
    }

    @Test
    void aCopyLargerThanAWorkersBufferIsCopiedWhole() throws Exception {
        byte[] big = new byte[(3 << 20) + 123];
        new java.util.Random(7).nextBytes(big);
        store.write(VfsPath.of("/shared/big"), big);
        long shared = lookup(FuseProtocol.ROOT_ID, "shared");
        long src = lookup(shared, "big");
        long[] dst = create(shared, "copy");
        FakeKernel.Reply r = copyRange(FuseProtocol.COPY_FILE_RANGE_64, src, openToRead(src).int64(0), 0, dst[0], dst[1],
                0, Long.MAX_VALUE, 0);
        assertEquals(0, r.error());
        assertEquals(big.length, r.int64(0));
        release(dst[0], dst[1]);
        assertArrayEquals(big, store.read(VfsPath.of("/shared/copy")));
    }

    @Test
    void aCopyThatFillsTheStoreTellsWhatItCopiedAndTheNextCallTheError() throws Exception {
        MemoryStorage small = new MemoryStorage(5L << 20);
        Router.of(small).createNamespace(List.of("alice"));
        small.write(VfsPath.of("/shared/big"), new byte[3 << 20]);
        router = Router.of(small);
        stop();
        connect(OFFERED);
        long shared = lookup(FuseProtocol.ROOT_ID, "shared");
        long src = lookup(shared, "big");
        long[] dst = create(shared, "copy");
        long in = openToRead(src).int64(0);
        FakeKernel.Reply first = copyRange(FuseProtocol.COPY_FILE_RANGE_64, src, in, 0, dst[0], dst[1], 0, 3 << 20, 0);
        assertEquals(0, first.error(), "a short copy, as a short write");
        long copied = first.int64(0);
        assertTrue(copied > 0 && copied < 3 << 20, copied + " bytes");
        assertEquals(-Linux.ENOSPC, copyRange(FuseProtocol.COPY_FILE_RANGE_64, src, in, copied, dst[0], dst[1], copied,
                (3 << 20) - copied, 0).error());
        assertEquals(copied, small.metadata(VfsPath.of("/shared/copy")).size());
    }

    /** LSEEK: struct fuse_lseek_in {fh, offset, whence}. */
    private FakeKernel.Reply seek(long node, long fh, long offset, int whence) throws Exception {
        return kernel.call(FuseProtocol.LSEEK, node, body().int64(fh).int64(offset).int32(whence).int32(0));
    }

    @Test
    void aStoreThatKeepsNoHolesHasDataToTheEndAndAHoleThere() throws Exception {
        long f = written("dense", "0123456789");
        long fh = openToRead(f).int64(0);
        assertEquals(4, seek(f, fh, 4, Linux.SEEK_DATA).int64(0));
        assertEquals(10, seek(f, fh, 4, Linux.SEEK_HOLE).int64(0), "the end of a file is a hole");
        assertEquals(-Linux.ENXIO, seek(f, fh, 10, Linux.SEEK_DATA).error(), "nothing at or past the end");
        assertEquals(-Linux.EINVAL, seek(f, fh, 0, 7).error());
    }

    @Test
    void aCopyIntoAFileOpenedToReadIsRefusedAndChangesNothing() throws Exception {
        long src = written("from", "data");
        long to = written("to", "keep");
        long in = openToRead(src).int64(0);
        long readOnly = openToRead(to).int64(0);
        assertEquals(-Linux.EBADF, copyRange(FuseProtocol.COPY_FILE_RANGE_64, src, in, 0, to, readOnly, 0, 4, 0).error());
        long[] out = create(lookup(FuseProtocol.ROOT_ID, "shared"), "flagged");
        assertEquals(-Linux.EINVAL, copyRange(FuseProtocol.COPY_FILE_RANGE_64, src, in, 0, out[0], out[1], 0, 4, 1).error(),
                "copy_file_range(2) takes no flags");
        assertEquals("keep", new String(store.read(VfsPath.of("/shared/to")), StandardCharsets.UTF_8));
        assertEquals(0, store.read(VfsPath.of("/shared/flagged")).length);
    }

    @Test
    void aMissingNameIsEnoentAndAnUnknownNodeToo() throws Exception {
        assertEquals(-Linux.ENOENT, kernel.call(FuseProtocol.LOOKUP, FuseProtocol.ROOT_ID, body().name("nope")).error());
        assertEquals(-Linux.ENOENT, kernel.call(FuseProtocol.GETATTR, 999, body().int32(0).int32(0).int64(0)).error());
    }
    @Test
    void aDirectoryFoundInItsOwnSubdirectoryByStaleNamesIsAStaleLookupNotACycle() throws Exception {
        long shared = lookup(FuseProtocol.ROOT_ID, "shared");
        store.mkdir(VfsPath.of("/shared/a"));
        store.mkdir(VfsPath.of("/shared/a/b"));
        long a = lookup(shared, "a");
        long b = lookup(a, "b");
        // another mount, unseen: a goes to /shared/tmp, b takes its name, a new b is made in it, and a goes in there
        store.rename(VfsPath.of("/shared/a"), VfsPath.of("/shared/tmp"));
        store.rename(VfsPath.of("/shared/tmp/b"), VfsPath.of("/shared/a"));
        store.mkdir(VfsPath.of("/shared/a/b"));
        store.rename(VfsPath.of("/shared/tmp"), VfsPath.of("/shared/a/b/c"));

        // by the names the kernel knows, /shared/a/b/c is in b, which is in a: it is a, a cycle
        assertEquals(-Linux.ESTALE, kernel.call(FuseProtocol.LOOKUP, b, body().name("c")).error(),
                "the kernel walks the path again from the root");
        assertEquals(-Linux.ESTALE, getattr(a).error(), "moved away from its path, which ends: no node is its own ancestor");
        assertEquals(b, lookup(shared, "a"));
        long newB = lookup(b, "b");
        assertEquals(0, getattr(lookup(newB, "c")).error(), "found where it is now");
        assertEquals(0, getattr(b).error());
    }
}
