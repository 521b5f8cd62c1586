package dev.chibifs.fuse;

import dev.chibifs.policy.Caller;
import dev.chibifs.router.Router;
import dev.chibifs.store.LocalStorage;
import dev.chibifs.sys.Linux;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static dev.chibifs.fuse.FakeKernel.body;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The store's change feed as the kernel hears of it: a real local store's feed, a fake kernel, no mount. */
@Timeout(30)
class ChangeFollowerTest {

    @TempDir
    Path home;
    private FakeKernel kernel;
    private FuseSession session;
    private ChangeFollower follower;
    private FuseFileSystem fs;
    private RequestStats stats;

    @BeforeEach
    void start() throws Exception {
        Router router = Router.of(new LocalStorage(home));
        router.createNamespace(List.of("alice"));
        fs = new FuseFileSystem(router, CallerResolver.fixed(Caller.context("alice")), 1000, 1000,
                FuseFileSystem.Timeouts.of(30, 30, 30), true);
        follower = assertInstanceOf(ChangeFollower.class, ChangeFollower.start(fs), "a local store has a feed");
        kernel = new FakeKernel();
        stats = new RequestStats();
        session = kernel.startSession(fs, stats, s -> follower.notifyThrough(kernel, s));
    }

    @AfterEach
    void stop() {
        kernel.close();
        session.ended().join();
        follower.close();
    }

    @Test
    void theFeedsEventForAWriteThroughTheMountDropsNoAttributesTheKernelTookAsStaleAtTheWrite() throws Exception {
        long dir = kernel.call(FuseProtocol.LOOKUP, FuseProtocol.ROOT_ID, body().name("shared")).int64(0);
        FakeKernel.Reply created = kernel.call(FuseProtocol.CREATE, dir,
                body().int32(Linux.O_WRONLY | Linux.O_CREAT).int32(0100644).int32(022).int32(0).name("f"));
        long f = created.int64(0);
        long fh = created.int64(FuseProtocol.ENTRY_OUT);
        byte[] x = "x\n".getBytes(StandardCharsets.UTF_8);
        assertEquals(0, kernel.call(FuseProtocol.WRITE, f,
                body().int64(fh).int64(0).int32(x.length).int32(0).int64(0).int32(0).int32(0).bytes(x)).error());
        assertEquals(0, kernel.call(FuseProtocol.RELEASE, f, body().int64(fh).int32(0).int32(0).int64(0)).error());

        // the write's event, however late the feed tells it: the kernel's attributes since the write
        // are whatever its next GETATTR (a stat, say) brought, which a drop now would only undo
        assertEquals(0, kernel.call(FuseProtocol.LOOKUP, dir, body().name("late")).int64(0), "held missing");
        long key = fs.nodes.get(dir).followKey;
        follower.changed(key, "f", false, true);
        Files.writeString(home.resolve("shared/late"), "made behind the mount");
        follower.changed(key, "late", false, false); // a notification to wait for, written after what the first made
        kernel.awaitNotification(n -> n.error() == FuseProtocol.NOTIFY_INVAL_ENTRY && n.int64(0) == dir);
        assertEquals(List.of(), kernel.notifications(FuseProtocol.NOTIFY_INVAL_INODE).stream()
                .filter(n -> n.int64(0) == f).toList());
    }

    /**
     * The feed reads a create's event as soon as the store has the file, before the CREATE through
     * this mount has put its node in the node table: judged then, the name looked made behind the
     * kernel's back, and its INVAL_ENTRY waited in the kernel for the directory lock the create held.
     */
    @Test
    void aNameMadeThroughTheMountAndHeardBeforeItsNodeIsTakenForNoChangeBehindIt() throws Exception {
        Files.writeString(home.resolve("shared/e"), "");
        long dir = lookup(FuseProtocol.ROOT_ID, "shared");
        lookup(dir, "e"); // looked into: followed
        noticesWritten();
        long key = fs.nodes.get(dir).followKey;
        var own = (java.util.concurrent.locks.ReentrantReadWriteLock) fs.ownNameChanges();
        follower.ownChangeWaitMillis = java.util.concurrent.TimeUnit.MINUTES.toMillis(1); // the steps below, however loaded the machine
        own.readLock().lock(); // a CREATE under way: the file made in the store, its node not yet taken
        Thread feed;
        try {
            Files.writeString(home.resolve("shared/f"), "x\n");
            feed = new Thread(() -> follower.changed(key, "f", true, true));
            feed.start();
            while (!own.hasQueuedThread(feed) && feed.isAlive()) {
                Thread.onSpinWait(); // the feed judged the name once, and waits for the create to end
            }
            assertTrue(lookup(dir, "f") != 0, "the create's node"); // as its reply registers it
        } finally {
            own.readLock().unlock();
        }
        feed.join();
        long last = session.notices().post(new FuseReply(64).invalInode(FuseProtocol.ROOT_ID, -1, 0));
        assertTrue(session.notices().awaitWritten(last, java.util.concurrent.TimeUnit.SECONDS.toNanos(5)));
        assertEquals(List.of(), kernel.notifications(FuseProtocol.NOTIFY_INVAL_ENTRY), "no name told");
        assertEquals(List.of(), kernel.notifications(FuseProtocol.NOTIFY_INVAL_INODE).stream()
                .filter(n -> n.int64(0) == dir).toList(), "no listing dropped");
    }

    /** As above, for an UNLINK through the mount: the store's name gone, the node table not told yet. */
    @Test
    void aNameRemovedThroughTheMountAndHeardBeforeTheNodeTableIsTakenForNoChangeBehindIt() throws Exception {
        Files.writeString(home.resolve("shared/f"), "x\n");
        long dir = lookup(FuseProtocol.ROOT_ID, "shared");
        long f = lookup(dir, "f");
        noticesWritten();
        long key = fs.nodes.get(dir).followKey;
        var own = (java.util.concurrent.locks.ReentrantReadWriteLock) fs.ownNameChanges();
        follower.ownChangeWaitMillis = java.util.concurrent.TimeUnit.MINUTES.toMillis(1); // the steps below, however loaded the machine
        own.readLock().lock(); // an UNLINK under way: the name gone from the store, still in the node table
        Thread feed;
        try {
            Files.delete(home.resolve("shared/f"));
            feed = new Thread(() -> follower.changed(key, "f", true, false));
            feed.start();
            while (!own.hasQueuedThread(feed) && feed.isAlive()) {
                Thread.onSpinWait();
            }
            fs.nodes.unlinked(fs.nodes.get(dir), "f"); // as the unlink does before its reply
        } finally {
            own.readLock().unlock();
        }
        feed.join();
        long last = session.notices().post(new FuseReply(64).invalInode(FuseProtocol.ROOT_ID, -1, 0));
        assertTrue(session.notices().awaitWritten(last, java.util.concurrent.TimeUnit.SECONDS.toNanos(5)));
        assertEquals(List.of(), kernel.notifications(FuseProtocol.NOTIFY_INVAL_ENTRY), "no name told");
        assertEquals(List.of(), kernel.notifications(FuseProtocol.NOTIFY_INVAL_INODE).stream()
                .filter(n -> n.int64(0) == dir || n.int64(0) == f).toList(), "no listing or file dropped");
    }

    /**
     * rm through the mount: the kernel dropped the file's link count and its name itself at the
     * reply. The store's event for it, heard back, dropped the file's attributes all the same, one
     * INVAL_INODE per file removed.
     */
    @Test
    void aFileRemovedThroughTheMountIsNotToldAgainWhenTheStoreSaysItsNameWent() throws Exception {
        Files.writeString(home.resolve("shared/f"), "x\n");
        long dir = lookup(FuseProtocol.ROOT_ID, "shared");
        long f = lookup(dir, "f");
        assertEquals(0, kernel.call(FuseProtocol.UNLINK, dir, body().name("f")).error());
        follower.catchUp();
        noticesWritten();
        follower.changed(fs.nodes.get(dir).followKey, "f", true, false); // the removal's event, however late
        long last = session.notices().post(new FuseReply(64).invalInode(FuseProtocol.ROOT_ID, -1, 0));
        assertTrue(session.notices().awaitWritten(last, java.util.concurrent.TimeUnit.SECONDS.toNanos(5)));
        assertEquals(List.of(), kernel.notifications(FuseProtocol.NOTIFY_INVAL_INODE).stream()
                .filter(n -> n.int64(0) == f).toList());
        assertEquals(List.of(), kernel.notifications(FuseProtocol.NOTIFY_INVAL_ENTRY));
    }

    /**
     * rm through the mount, heard as a removal alone: taken as gone without a look at the store, which
     * cost every file removed a failing statx on the feed's thread. A file made there since is not
     * looked at either: its own event follows.
     */
    @Test
    void aNameHeardAsRemovedOnlyIsNotLookedUpInTheStore() throws Exception {
        long dir = lookup(FuseProtocol.ROOT_ID, "shared");
        lookup(dir, "other"); // missing: the directory is followed now
        // made again after the removal the follower is told of below, its own events already told
        Files.writeString(home.resolve("shared/back"), "x\n");
        follower.catchUp();
        noticesWritten();
        follower.removed(fs.nodes.get(dir).followKey, "back");
        long last = session.notices().post(new FuseReply(64).invalInode(FuseProtocol.ROOT_ID, -1, 0));
        assertTrue(session.notices().awaitWritten(last, java.util.concurrent.TimeUnit.SECONDS.toNanos(5)));
        assertEquals(List.of(), kernel.notifications(FuseProtocol.NOTIFY_INVAL_ENTRY));
        assertEquals(List.of(), kernel.notifications(FuseProtocol.NOTIFY_INVAL_INODE).stream()
                .filter(n -> n.int64(0) == dir).toList(), "no listing dropped");
    }

    /** What {@code chibifs stats} shows: every notification written, by kind, and no reply among them. */
    @Test
    void notificationsWrittenAreCountedByKind() throws Exception {
        Files.writeString(home.resolve("shared/s"), "small");
        long dir = lookup(FuseProtocol.ROOT_ID, "shared");
        long s = lookup(dir, "s");
        assertEquals(0, kernel.call(FuseProtocol.OPEN, s, body().int32(Linux.O_RDONLY).int32(0)).error()); // stored whole
        session.notices().post(new FuseReply(64).invalEntry(dir, "s", 0));
        noticesWritten(); // and one INVAL_INODE of its own
        assertEquals(java.util.Map.of("INVAL_INODE", 1L, "INVAL_ENTRY", 1L, "STORE", 1L), stats.notices());
    }

    /**
     * A small file stored whole in the kernel's pages at its open, rewritten in place by another
     * mount (or chibi) while a reader holds it open: the reader read the old bytes until it opened it
     * again (a tester's status file, 35 s and on). The feed's event drops its pages.
     */
    @Test
    void aFileRewrittenElsewhereWhileOpenHereLosesItsPagesInTheKernel() throws Exception {
        Path store = home.resolve("shared/s");
        Files.writeString(store, "status 0\n");
        long dir = lookup(FuseProtocol.ROOT_ID, "shared");
        long s = lookup(dir, "s");
        FakeKernel.Reply opened = kernel.call(FuseProtocol.OPEN, s, body().int32(Linux.O_RDONLY).int32(0));
        assertEquals(0, opened.error());
        assertTrue((opened.int32(8) & FuseProtocol.FOPEN_KEEP_CACHE) != 0, "its pages kept: stored whole");
        noticesWritten();

        Files.writeString(store, "status 1\n"); // the same size: only the time tells
        Files.setLastModifiedTime(store, java.nio.file.attribute.FileTime.fromMillis(System.currentTimeMillis() + 2000));
        follower.changed(fs.nodes.get(dir).followKey, "s", false, true);

        kernel.awaitNotification(n -> n.error() == FuseProtocol.NOTIFY_INVAL_INODE && n.int64(0) == s && n.int64(8) == 0);
    }

    @Test
    void lostEventsMakeTheKernelAskAgainForEveryNameItHoldsMissingOrPresent() throws Exception {
        Files.writeString(home.resolve("shared/here"), "x");
        FakeKernel.Reply shared = kernel.call(FuseProtocol.LOOKUP, FuseProtocol.ROOT_ID, body().name("shared"));
        long dir = shared.int64(0);
        assertEquals(0, kernel.call(FuseProtocol.LOOKUP, dir, body().name("here")).error());
        FakeKernel.Reply missing = kernel.call(FuseProtocol.LOOKUP, dir, body().name("late"));
        assertEquals(0, missing.error(), "a missing name the kernel may keep: an entry with node id 0");
        assertEquals(0, missing.int64(0));

        // what the feed says when the kernel's inotify queue overflowed (the file made meanwhile unheard of)
        follower.eventsLost();

        for (String name : List.of("late", "here", "shared")) {
            long parent = name.equals("shared") ? FuseProtocol.ROOT_ID : dir;
            kernel.awaitNotification(n -> n.error() == FuseProtocol.NOTIFY_INVAL_ENTRY && n.int64(0) == parent
                    && name.equals(StandardCharsets.UTF_8.decode(n.body().slice(16, n.int32(8))).toString()));
        }
    }
    /**
     * Another store's file system mounted in this one's place (a restored disk, say: it has the
     * store's directories, so it is served as the store): a name the old root lacked may be in it,
     * and no event tells of it (the watches are on the old root's directories), so the kernel kept
     * it missing for the negative timeout. The first request on the new root makes it ask again.
     */
    @Test
    void namesMissingInAReplacedRootAreAskedAgain() throws Exception {
        Path own = home.resolveSibling(home.getFileName() + "-own");
        assertEquals(0, lookup(FuseProtocol.ROOT_ID, "restored"), "held missing");
        noticesWritten();

        Files.move(home, own);
        Files.createDirectories(home.resolve("shared"));
        Files.createDirectories(home.resolve("restored"));
        try {
            lookup(FuseProtocol.ROOT_ID, "shared"); // any request on the new root

            kernel.awaitNotification(n -> n.error() == FuseProtocol.NOTIFY_INVAL_ENTRY && n.int64(0) == FuseProtocol.ROOT_ID
                    && "restored".equals(StandardCharsets.UTF_8.decode(n.body().slice(16, n.int32(8))).toString()));
        } finally {
            Files.delete(home.resolve("restored"));
            Files.delete(home.resolve("shared"));
            Files.delete(home);
            Files.move(own, home);
        }
    }

    /**
     * Another (empty) file system in the store's place: what it lacks is not kept missing, since
     * once the store is back nothing would reach the daemon to tell the kernel (its kept misses are
     * answered without asking): the store's names were hidden for 30 s (a tester's storefs3, finding A).
     */
    @Test
    void namesMissingInAnotherFileSystemInTheStoresPlaceAreNotKeptMissing() throws Exception {
        Path own = home.resolveSibling(home.getFileName() + "-own");
        assertNotEquals(0, lookup(FuseProtocol.ROOT_ID, "shared"), "the store's");
        Files.move(home, own);
        Files.createDirectories(home); // the stranger: empty
        try {
            FakeKernel.Reply stranger = kernel.call(FuseProtocol.LOOKUP, FuseProtocol.ROOT_ID, body().name("shared"));
            assertEquals(-Linux.ENOENT, stranger.error(), "missing, and not kept missing (an entry of node id 0)");
        } finally {
            Files.delete(home);
            Files.move(own, home);
        }
        assertNotEquals(0, lookup(FuseProtocol.ROOT_ID, "shared"), "the store's again, at the next lookup");
    }

    @Test
    void aFileRemovedThroughTheMountAndGrownThroughANameMadeBehindItUpdatesItsOpenDescriptors() throws Exception {
        long dir = kernel.call(FuseProtocol.LOOKUP, FuseProtocol.ROOT_ID, body().name("shared")).int64(0);
        assertEquals(0, kernel.call(FuseProtocol.LOOKUP, dir, body().name("a")).int64(0), "missing, until made");
        FakeKernel.Reply created = create(dir, "a"); // held open: a program's descriptor
        long a = created.int64(0);
        Files.createLink(home.resolve("shared/b"), home.resolve("shared/a")); // another mount's ln
        follower.catchUp();
        assertEquals(0, kernel.call(FuseProtocol.UNLINK, dir, body().name("a")).error());
        follower.catchUp();
        long fh = created.int64(FuseProtocol.ENTRY_OUT);
        assertEquals(0, kernel.call(FuseProtocol.GETATTR, a,
                body().int32(FuseProtocol.GETATTR_FH).int32(0).int64(fh)).error(), "fstat");
        noticesWritten();

        Files.writeString(home.resolve("shared/b"), "grown elsewhere", java.nio.file.StandardOpenOption.APPEND);
        attributesDropped(a);
    }

    @Test
    void aWriteThroughANameRemovedBehindTheMountReachesTheFilesOtherName() throws Exception {
        Files.writeString(home.resolve("shared/g"), "old\n");
        long dir = lookup(FuseProtocol.ROOT_ID, "shared");
        long g = linkedInStore(dir, "g", "h");
        // another mount's program: exec 3>>g; rm g; ... echo more >&3
        try (var out = java.nio.channels.FileChannel.open(home.resolve("shared/g"), java.nio.file.StandardOpenOption.APPEND)) {
            Files.delete(home.resolve("shared/g"));
            follower.catchUp();
            // a stat of h here: the store counts one link, and the node is known by h alone
            assertEquals(g, kernel.call(FuseProtocol.LOOKUP, dir, body().name("h")).int64(0));
            noticesWritten();

            out.write(more());
            attributesDropped(g);
        }
    }

    @Test
    void aWriteThroughANameRenamedOverBehindTheMountReachesTheFilesOtherName() throws Exception {
        Files.writeString(home.resolve("shared/r3"), "old\n");
        Files.writeString(home.resolve("shared/r2"), "two\n");
        long dir = lookup(FuseProtocol.ROOT_ID, "shared");
        long r3 = linkedInStore(dir, "r3", "r0");
        // another mount's program: exec 3<>r3; mv r2 r3; ... echo more >&3
        try (var out = java.nio.channels.FileChannel.open(home.resolve("shared/r3"), java.nio.file.StandardOpenOption.WRITE)) {
            Files.move(home.resolve("shared/r2"), home.resolve("shared/r3"), java.nio.file.StandardCopyOption.ATOMIC_MOVE);
            follower.catchUp();
            // a stat of r3 here finds the new file; the old one is known by r0 alone
            long now3 = kernel.call(FuseProtocol.LOOKUP, dir, body().name("r3")).int64(0);
            assertNotEquals(r3, now3);
            assertEquals(r3, kernel.call(FuseProtocol.LOOKUP, dir, body().name("r0")).int64(0));
            noticesWritten();

            out.write(more(), 4);
            attributesDropped(r3);
        }
    }

    @Test
    void aWriteThroughANameRemovedThroughTheMountReachesTheFilesOtherName() throws Exception {
        Files.writeString(home.resolve("shared/g"), "old\n");
        long dir = lookup(FuseProtocol.ROOT_ID, "shared");
        long g = linkedInStore(dir, "g", "h");
        // another mount's program: exec 3>>g; then rm g here; then echo more >&3 there
        try (var out = java.nio.channels.FileChannel.open(home.resolve("shared/g"), java.nio.file.StandardOpenOption.APPEND)) {
            ownChange(() -> assertEquals(0, kernel.call(FuseProtocol.UNLINK, dir, body().name("g")).error()));

            out.write(more());
            attributesDropped(g);
        }
    }

    @Test
    void aWriteThroughANameRenamedOverThroughTheMountReachesTheFilesOtherName() throws Exception {
        Files.writeString(home.resolve("shared/r3"), "old\n");
        Files.writeString(home.resolve("shared/r2"), "two\n");
        long dir = lookup(FuseProtocol.ROOT_ID, "shared");
        long r3 = linkedInStore(dir, "r3", "r0");
        // another mount's program: exec 3<>r3; then mv r2 r3 here; then echo more >&3 there
        try (var out = java.nio.channels.FileChannel.open(home.resolve("shared/r3"), java.nio.file.StandardOpenOption.WRITE)) {
            ownChange(() -> assertEquals(0, kernel.call(FuseProtocol.RENAME, dir, body().int64(dir).name("r2").name("r3")).error()));

            out.write(more(), 4);
            attributesDropped(r3);
        }
    }

    @Test
    void aFileRenamedBehindTheMountOverANameTheKernelKnowsAndChangedThereUpdatesItsOpenDescriptors() throws Exception {
        Files.writeString(home.resolve("shared/x"), "x".repeat(5000));
        Files.writeString(home.resolve("shared/f1"), "old\n");
        long dir = kernel.call(FuseProtocol.LOOKUP, FuseProtocol.ROOT_ID, body().name("shared")).int64(0);
        long x = kernel.call(FuseProtocol.LOOKUP, dir, body().name("x")).int64(0);
        assertNotEquals(0, kernel.call(FuseProtocol.LOOKUP, dir, body().name("f1")).int64(0));
        long fh = kernel.call(FuseProtocol.OPEN, x, body().int32(Linux.O_RDONLY).int32(0)).int64(0);
        // another mount's mv x f1, and an fstat of the descriptor here
        Files.move(home.resolve("shared/x"), home.resolve("shared/f1"), java.nio.file.StandardCopyOption.ATOMIC_MOVE);
        follower.catchUp();
        assertEquals(0, kernel.call(FuseProtocol.GETATTR, x,
                body().int32(FuseProtocol.GETATTR_FH).int32(0).int64(fh)).error());
        noticesWritten();

        // another mount's truncate -s 10 f1: the name's old node is not the file changed
        try (var out = java.nio.channels.FileChannel.open(home.resolve("shared/f1"), java.nio.file.StandardOpenOption.WRITE)) {
            out.truncate(10);
        }
        attributesDropped(x);
    }

    @Test
    void aFileMovedAwayAndBackBehindTheMountIsFoundWhereTheKernelHeldItMissing() throws Exception {
        Files.writeString(home.resolve("shared/a"), "hello\n");
        long dir = kernel.call(FuseProtocol.LOOKUP, FuseProtocol.ROOT_ID, body().name("shared")).int64(0);
        long a = kernel.call(FuseProtocol.LOOKUP, dir, body().name("a")).int64(0); // held: exec 3<a
        // another mount's mv a b, and a stat of a here
        Files.move(home.resolve("shared/a"), home.resolve("shared/b"));
        follower.catchUp();
        FakeKernel.Reply gone = kernel.call(FuseProtocol.LOOKUP, dir, body().name("a"));
        assertEquals(0, gone.error());
        assertEquals(0, gone.int64(0), "missing, as the kernel may keep");
        noticesWritten();

        // and its mv b a: the name stands for the node the kernel holds, but not in the kernel
        Files.move(home.resolve("shared/b"), home.resolve("shared/a"));
        follower.catchUp();

        kernel.awaitNotification(n -> n.error() == FuseProtocol.NOTIFY_INVAL_ENTRY && n.int64(0) == dir
                && "a".equals(StandardCharsets.UTF_8.decode(n.body().slice(16, n.int32(8))).toString()));
        assertEquals(a, kernel.call(FuseProtocol.LOOKUP, dir, body().name("a")).int64(0));
    }

    @Test
    void aNameMadeAgainBehindTheMountIsFoundWhereTheKernelHeldItMissingAndSawItsFileByAnotherName() throws Exception {
        long dir = lookup(FuseProtocol.ROOT_ID, "shared");
        long a = create(dir, "a").int64(0); // held: exec 3>a
        // another mount's ln a g; mv a b, and a stat of a, then of b, here
        Files.createLink(home.resolve("shared/g"), home.resolve("shared/a"));
        Files.move(home.resolve("shared/a"), home.resolve("shared/b"));
        follower.catchUp();
        assertEquals(0, lookup(dir, "a"), "missing, as the kernel may keep");
        assertEquals(a, lookup(dir, "b"));
        noticesWritten();

        // and its ln g a: the kernel still holds a as missing
        Files.createLink(home.resolve("shared/a"), home.resolve("shared/g"));
        follower.catchUp();

        kernel.awaitNotification(n -> n.error() == FuseProtocol.NOTIFY_INVAL_ENTRY && n.int64(0) == dir
                && "a".equals(StandardCharsets.UTF_8.decode(n.body().slice(16, n.int32(8))).toString()));
    }

    @Test
    void aWriteThroughTheLastNameRemovedThroughTheMountReachesItsDescriptorsHereWhereTheNameWasMadeAgain() throws Exception {
        Files.writeString(home.resolve("shared/t"), "old\n");
        long dir = kernel.call(FuseProtocol.LOOKUP, FuseProtocol.ROOT_ID, body().name("shared")).int64(0);
        long t = kernel.call(FuseProtocol.LOOKUP, dir, body().name("t")).int64(0); // held: exec 3<t here
        // another mount's program: exec 4<>t; then rm t here; then a new t there, and echo more >&4
        try (var out = java.nio.channels.FileChannel.open(home.resolve("shared/t"), java.nio.file.StandardOpenOption.WRITE)) {
            ownChange(() -> assertEquals(0, kernel.call(FuseProtocol.UNLINK, dir, body().name("t")).error()));
            Files.writeString(home.resolve("shared/t"), "another file\n");
            follower.catchUp();
            noticesWritten();

            out.write(more(), 4);
            attributesDropped(t);
        }
    }

    @Test
    void aWriteThroughANameGoneToldWithTheNamesNextFileReachesTheFileItWas() throws Exception {
        Files.writeString(home.resolve("shared/t"), "old\n");
        long dir = kernel.call(FuseProtocol.LOOKUP, FuseProtocol.ROOT_ID, body().name("shared")).int64(0);
        long t = kernel.call(FuseProtocol.LOOKUP, dir, body().name("t")).int64(0);
        try (var out = java.nio.channels.FileChannel.open(home.resolve("shared/t"), java.nio.file.StandardOpenOption.WRITE)) {
            // rm t here; a new t and echo more >&4 there, the feed telling both in one batch
            ownChange(() -> {
                assertEquals(0, kernel.call(FuseProtocol.UNLINK, dir, body().name("t")).error());
                Files.writeString(home.resolve("shared/t"), "another file\n");
                out.write(more(), 4);
            });
            noticesWritten();

            follower.changed(fs.nodes.get(dir).followKey, "t", true, true);

            kernel.awaitNotification(n -> n.error() == FuseProtocol.NOTIFY_INVAL_INODE && n.int64(0) == t);
        }
    }

    @Test
    void aWriteThroughANameRemovedReachesTheFileWhereTheKernelForgotItsNodeAndLookedItUpAgain() throws Exception {
        Files.writeString(home.resolve("shared/g1"), "old\n");
        long dir = lookup(FuseProtocol.ROOT_ID, "shared");
        long g1 = linkedInStore(dir, "g1", "f2");
        // another mount's program: exec 3>>g1; then rm g1 here, and the kernel lets the node go
        try (var out = java.nio.channels.FileChannel.open(home.resolve("shared/g1"), java.nio.file.StandardOpenOption.APPEND)) {
            ownChange(() -> assertEquals(0, kernel.call(FuseProtocol.UNLINK, dir, body().name("g1")).error()));
            kernel.send(FuseProtocol.FORGET, g1, body().int64(2));
            long f2 = kernel.call(FuseProtocol.LOOKUP, dir, body().name("f2")).int64(0); // a stat of f2, later
            assertNotEquals(g1, f2, "a new node");
            noticesWritten();

            out.write(more());
            attributesDropped(f2);
        }
    }

    @Test
    void aWriteThroughANameRemovedMadeAgainAndRemovedAgainReachesTheFirstFile() throws Exception {
        Files.writeString(home.resolve("shared/g1"), "old\n");
        long dir = lookup(FuseProtocol.ROOT_ID, "shared");
        long g1 = linkedInStore(dir, "g1", "f0");
        // another mount's program: exec 3>>g1; then rm g1 here, a new g1 there, rm g1 here again
        try (var out = java.nio.channels.FileChannel.open(home.resolve("shared/g1"), java.nio.file.StandardOpenOption.APPEND)) {
            ownChange(() -> assertEquals(0, kernel.call(FuseProtocol.UNLINK, dir, body().name("g1")).error()));
            Files.writeString(home.resolve("shared/g1"), "another file\n");
            follower.catchUp();
            assertNotEquals(g1, lookup(dir, "g1"));
            ownChange(() -> assertEquals(0, kernel.call(FuseProtocol.UNLINK, dir, body().name("g1")).error()));
            noticesWritten();

            out.write(more());
            attributesDropped(g1);
        }
    }

    @Test
    void aWriteThroughANameRemovedAndMadeAgainBehindTheMountReachesTheFileItWasWhereTheKernelKnowsItByAnother() throws Exception {
        Files.writeString(home.resolve("shared/t"), "old\n");
        long dir = lookup(FuseProtocol.ROOT_ID, "shared");
        long t = linkedInStore(dir, "t", "u"); // held: exec 3<>u here
        try (var out = java.nio.channels.FileChannel.open(home.resolve("shared/t"), java.nio.file.StandardOpenOption.WRITE)) {
            // another mount's program: exec 4<>t; then rm t; ln other t there, the kernel here looking t up no more
            Files.writeString(home.resolve("shared/other"), "another file\n");
            Files.delete(home.resolve("shared/t"));
            Files.createLink(home.resolve("shared/t"), home.resolve("shared/other"));
            follower.catchUp();
            noticesWritten();

            out.write(more(), 4);
            attributesDropped(t);
        }
    }

    @Test
    void aWriteThroughANameRemovedReachesTheFileWhereTheKernelForgotItsDirectorySince() throws Exception {
        Files.createDirectories(home.resolve("shared/d"));
        Files.writeString(home.resolve("shared/d/t"), "old\n");
        Files.createLink(home.resolve("shared/u"), home.resolve("shared/d/t"));
        long dir = lookup(FuseProtocol.ROOT_ID, "shared");
        long d = lookup(dir, "d");
        long t = lookup(d, "t");
        assertEquals(t, lookup(dir, "u"), "one node for both names"); // held: exec 3<>u here
        // another mount's program: exec 4<>d/t; then rm d/t here
        try (var out = java.nio.channels.FileChannel.open(home.resolve("shared/d/t"), java.nio.file.StandardOpenOption.WRITE)) {
            ownChange(() -> assertEquals(0, kernel.call(FuseProtocol.UNLINK, d, body().name("t")).error()));
            // nothing here holds d: the kernel lets it go (memory pressure), and looks it up again at the next path through it
            kernel.send(FuseProtocol.FORGET, t, body().int64(1));
            kernel.send(FuseProtocol.FORGET, d, body().int64(1));
            long again = lookup(dir, "d");
            assertNotEquals(d, again);
            assertEquals(0, lookup(again, "t"), "missing");
            noticesWritten();

            out.write(more(), 4);
            attributesDropped(t);
        }
    }

    @Test
    void aListingReadBeforeAChangeAndEndedAfterItsDropIsDroppedAgainAtItsEnd() throws Exception {
        Files.writeString(home.resolve("shared/a"), "x");
        long dir = lookup(FuseProtocol.ROOT_ID, "shared");
        noticesWritten();
        assertEquals(List.of("a"), readToEnd(dir), "unchanged while read");
        assertEquals(0, listingDrops(dir), "a listing nothing changed while it was read stays in the kernel");

        long fh = kernel.call(FuseProtocol.OPENDIR, dir, body().int32(0).int32(0)).int64(0);
        int dotAndDotDot = 2 * (FuseProtocol.DIRENT + 8);
        List<Long> read = offsets(readdir(dir, fh, 0, dotAndDotDot));
        assertEquals(2, read.size(), "read, not yet sent whole");
        // removed by another mount; the follower's drop reaches the kernel before the rest of the
        // listing does, which the kernel then keeps (it dropped pages it did not have yet)
        Files.delete(home.resolve("shared/a"));
        follower.catchUp();
        noticesWritten();
        read.addAll(offsets(readdir(dir, fh, read.get(1), 65536)));
        assertEquals(3, read.size(), "a, as read");
        assertEquals(0, listingDrops(dir), "not before the end: the kernel fills its pages from each reply");
        assertEquals(0, readdir(dir, fh, read.get(2), 65536).body().limit(), "the end");
        assertEquals(1, listingDrops(dir), "dropped before the reply that ends it");
        assertEquals(0, kernel.call(FuseProtocol.RELEASEDIR, dir, body().int64(fh).int32(0).int32(0).int64(0)).error());
    }

    /**
     * rm -r, and git's moves out of a directory, through the mount: the kernel drops its listing of a
     * directory itself at the reply of a name gone from it. Each directory listed and emptied was told
     * back all the same, an INVAL_ENTRY and a listing dropped per directory (238 each in one rm -rf of
     * a git clone).
     */
    @Test
    void namesGoneThroughTheMountFromAListedDirectoryAreNotToldBack() throws Exception {
        Path t = Files.createDirectories(home.resolve("shared/t/d"));
        Files.writeString(t.resolveSibling("a"), "x");
        Files.writeString(t.resolveSibling("b"), "x");
        long shared = lookup(FuseProtocol.ROOT_ID, "shared");
        long dir = lookup(shared, "t");
        assertEquals(List.of("a", "b", "d"), readToEnd(dir).stream().sorted().toList());
        lookup(dir, "a");
        lookup(dir, "b");
        lookup(dir, "d");
        noticesWritten();

        assertEquals(0, kernel.call(FuseProtocol.UNLINK, dir, body().name("a")).error());
        assertEquals(0, kernel.call(FuseProtocol.RMDIR, dir, body().name("d")).error());
        assertEquals(0, kernel.call(FuseProtocol.RENAME, dir, body().int64(shared).name("b").name("b")).error());
        follower.catchUp();

        assertEquals(0, entriesTold(dir, "a") + entriesTold(dir, "d") + entriesTold(dir, "b"), "no name told");
        assertEquals(0, listingDrops(dir), "no listing dropped");
    }

    /** As above, where the directory was listed again since: a name gone behind the mount drops that listing. */
    @Test
    void aListingGivenAfterANameWentThroughTheMountIsDroppedWhenAnotherGoesBehindIt() throws Exception {
        Files.createDirectories(home.resolve("shared/t"));
        Files.writeString(home.resolve("shared/t/a"), "x");
        Files.writeString(home.resolve("shared/t/b"), "x");
        long dir = lookup(lookup(FuseProtocol.ROOT_ID, "shared"), "t");
        readToEnd(dir);
        lookup(dir, "a");
        assertEquals(0, kernel.call(FuseProtocol.UNLINK, dir, body().name("a")).error());
        follower.catchUp();
        assertEquals(List.of("b"), readToEnd(dir));
        noticesWritten();

        Files.delete(home.resolve("shared/t/b")); // another mount's rm, of a name the kernel knows only by the listing
        follower.catchUp();
        assertEquals(1, entriesTold(dir, "b"));
        assertEquals(1, listingDrops(dir));
    }

    @Test
    void listingsReadOnEitherSideOfAChangeBehindTheMountNeverGoOnFromEachOther() throws Exception {
        for (int i = 0; i < 40; i++) {
            Files.writeString(home.resolve("shared/f" + i), "x");
        }
        long dir = lookup(FuseProtocol.ROOT_ID, "shared");
        long before = kernel.call(FuseProtocol.OPENDIR, dir, body().int32(0).int32(0)).int64(0);
        List<Long> read = offsets(readdir(dir, before, 0, 512));
        // chibi, or another mount, makes a name; then another reader starts
        Files.writeString(home.resolve("shared/late"), "x");
        follower.catchUp();
        noticesWritten();
        long after = kernel.call(FuseProtocol.OPENDIR, dir, body().int32(0).int32(0)).int64(0);
        List<Long> readAfter = offsets(readdir(dir, after, 0, 512));

        // the kernel adds a reply to the listing it keeps where the reply starts at the offset the kept
        // part ends at, whichever reader it came from: no offset of one may be one of the other's
        assertTrue(read.stream().noneMatch(readAfter::contains), read + " and " + readAfter);
        // each reader goes on through its own snapshot, from its own offsets
        List<String> rest = new java.util.ArrayList<>();
        for (FakeKernel.Reply r; (r = readdir(dir, before, read.get(read.size() - 1), 65536)).body().limit() > 0; ) {
            rest.addAll(names(r));
            read.addAll(offsets(r));
        }
        assertEquals(40 + 2, read.size(), "every name of the snapshot read before, once");
        assertFalse(rest.contains("late"));
        for (long fh : new long[] {before, after}) {
            assertEquals(0, kernel.call(FuseProtocol.RELEASEDIR, dir, body().int64(fh).int32(0).int32(0).int64(0)).error());
        }
    }

    @Test
    void aDirectoryListedWhileMovedAwayBehindTheMountIsNotKeptListedEmpty() throws Exception {
        Files.createDirectories(home.resolve("shared/a/tree"));
        Files.createDirectories(home.resolve("shared/away")); // never looked into here: not followed
        Files.writeString(home.resolve("shared/a/tree/t"), "x");
        long shared = lookup(FuseProtocol.ROOT_ID, "shared");
        long a = lookup(shared, "a");
        long tree = lookup(a, "tree");
        assertEquals(List.of("t"), readToEnd(tree));
        noticesWritten();

        Files.move(home.resolve("shared/a/tree"), home.resolve("shared/away/tree"));
        follower.catchUp();
        assertEquals(1, listingDropsWritten(tree), "away: it lists nothing now, as a removed directory");
        long fh = kernel.call(FuseProtocol.OPENDIR, tree, body().int32(0).int32(0)).int64(0);
        List<Long> read = offsets(readdir(tree, fh, 0, 65536));
        assertEquals(2, read.size(), ". and .. alone");

        // back; the kernel looks it up there before the feed tells of it: the same node again
        Files.move(home.resolve("shared/away/tree"), home.resolve("shared/a/tree"));
        assertEquals(tree, lookup(a, "tree"));
        assertEquals(0, readdir(tree, fh, read.get(1), 65536).body().limit(), "the end");
        assertEquals(1, listingDrops(tree), "its empty listing dropped before the reply that ends it: never kept");
        assertEquals(0, kernel.call(FuseProtocol.RELEASEDIR, tree, body().int64(fh).int32(0).int32(0).int64(0)).error());
        assertEquals(List.of("t"), readToEnd(tree));
    }

    @Test
    void namesHeldMissingInADirectoryAnotherMountMovesAreDroppedWhenTheMoveIsHeard() throws Exception {
        // the kernel may hold them missing by the path the directory had, looked up by it after the
        // move and before the feed told of it (a race no test can order: the feed reads on its own
        // thread), and nothing in the directory changes to drop them; here they are held before
        Files.createDirectories(home.resolve("shared/a/tree/sub"));
        Files.createDirectories(home.resolve("shared/b"));
        long shared = lookup(FuseProtocol.ROOT_ID, "shared");
        long a = lookup(shared, "a");
        long b = lookup(shared, "b");
        assertEquals(0, lookup(b, "unrelated"), "b followed (looked into)");
        long tree = lookup(a, "tree");
        long sub = lookup(tree, "sub");
        assertEquals(0, lookup(tree, "t"), "held missing");
        assertEquals(0, lookup(sub, "s"), "held missing, below");
        noticesWritten();

        Files.move(home.resolve("shared/a/tree"), home.resolve("shared/b/tree"));
        follower.catchUp();
        for (long[] held : new long[][] {{tree, 't'}, {sub, 's'}}) {
            String name = String.valueOf((char) held[1]);
            kernel.awaitNotification(n -> n.error() == FuseProtocol.NOTIFY_INVAL_ENTRY && n.int64(0) == held[0]
                    && name.equals(StandardCharsets.UTF_8.decode(n.body().slice(16, n.int32(8))).toString()));
        }
        assertEquals(sub, lookup(tree, "sub"), "the tree is known where it went");
    }

    /** The offset of each entry of a READDIR reply: where a reader goes on from after it. */
    private static List<Long> offsets(FakeKernel.Reply r) {
        List<Long> offsets = new java.util.ArrayList<>();
        for (int at = 0; at < r.body().limit(); at += FuseReply.align8(FuseProtocol.DIRENT + r.int32(at + 16))) {
            long offset = r.int64(at + 8);
            assertTrue(offset > 0 && offset < 1L << 31, "an offset a 32-bit readdir takes: " + offset);
            offsets.add(offset);
        }
        return offsets;
    }

    /** The names of a READDIR reply's entries. */
    private static List<String> names(FakeKernel.Reply r) {
        List<String> names = new java.util.ArrayList<>();
        for (int at = 0; at < r.body().limit(); at += FuseReply.align8(FuseProtocol.DIRENT + r.int32(at + 16))) {
            byte[] name = new byte[r.int32(at + 16)];
            r.body().get(at + FuseProtocol.DIRENT, name);
            names.add(new String(name, StandardCharsets.UTF_8));
        }
        return names;
    }

    /** Once every notification posted so far reached the kernel: how many dropped {@code dir}'s listing; then forgets them. */
    private long listingDropsWritten(long dir) throws InterruptedException {
        long last = session.notices().post(new FuseReply(64).invalInode(FuseProtocol.ROOT_ID, -1, 0));
        assertTrue(session.notices().awaitWritten(last, java.util.concurrent.TimeUnit.SECONDS.toNanos(5)));
        long drops = listingDrops(dir);
        synchronized (kernel) {
            kernel.notifications.clear();
        }
        return drops;
    }

    /** The names of a whole READDIR listing of {@code dir}, read by offset as the kernel does. */
    private List<String> readToEnd(long dir) throws Exception {
        long fh = kernel.call(FuseProtocol.OPENDIR, dir, body().int32(0).int32(0)).int64(0);
        List<String> names = new java.util.ArrayList<>();
        long offset = 0;
        for (FakeKernel.Reply r; (r = readdir(dir, fh, offset, 65536)).body().limit() > 0; ) {
            for (int at = 0; at < r.body().limit(); ) {
                int length = r.int32(at + 16);
                byte[] name = new byte[length];
                r.body().get(at + FuseProtocol.DIRENT, name);
                String n = new String(name, StandardCharsets.UTF_8);
                if (!n.equals(".") && !n.equals("..")) {
                    names.add(n);
                }
                offset = r.int64(at + 8);
                at += FuseReply.align8(FuseProtocol.DIRENT + length);
            }
        }
        assertEquals(0, kernel.call(FuseProtocol.RELEASEDIR, dir, body().int64(fh).int32(0).int32(0).int64(0)).error());
        return names;
    }

    private FakeKernel.Reply readdir(long dir, long fh, long offset, int size) throws Exception {
        FakeKernel.Reply r = kernel.call(FuseProtocol.READDIR, dir,
                body().int64(fh).int64(offset).int32(size).int32(0).int64(0).int32(0).int32(0));
        assertEquals(0, r.error());
        return r;
    }

    /** How many INVAL_INODEs of {@code dir}'s listing (its pages from 0) the kernel got since notices were last cleared. */
    private long listingDrops(long dir) {
        return kernel.notifications(FuseProtocol.NOTIFY_INVAL_INODE).stream()
                .filter(n -> n.int64(0) == dir && n.int64(8) == 0).count();
    }

    /** What another mount's program writes through its descriptor: {@code echo more >&3}. */
    private static java.nio.ByteBuffer more() {
        return java.nio.ByteBuffer.wrap("more\n".getBytes(StandardCharsets.UTF_8));
    }

    /** Once the feed is read to its end, waits for the attribute INVAL_INODE of {@code node}. */
    private void attributesDropped(long node) throws Exception {
        follower.catchUp();
        kernel.awaitNotification(n -> n.error() == FuseProtocol.NOTIFY_INVAL_INODE && n.int64(0) == node);
    }

    /** Waits until every notification posted so far reached the kernel, and forgets them. */
    private void noticesWritten() throws InterruptedException {
        long last = session.notices().post(new FuseReply(64).invalInode(FuseProtocol.ROOT_ID, -1, 0));
        assertTrue(session.notices().awaitWritten(last, java.util.concurrent.TimeUnit.SECONDS.toNanos(5)));
        synchronized (kernel) {
            kernel.notifications.clear();
        }
    }

    private long lookup(long dir, String name) throws Exception {
        return kernel.call(FuseProtocol.LOOKUP, dir, body().name(name)).int64(0);
    }

    /** Node of {@code first} in {@code dir} after another mount's {@code ln first second}: one node for both names. */
    private long linkedInStore(long dir, String first, String second) throws Exception {
        Path shared = home.resolve("shared");
        Files.createLink(shared.resolve(second), shared.resolve(first));
        long node = lookup(dir, first);
        assertEquals(node, lookup(dir, second), "one node for both names");
        return node;
    }

    /** A directory's node after its parent {@code dir} saw {@code names} change, as the feed tells. */
    private void told(long dir, String... names) {
        long key = fs.nodes.get(dir).followKey;
        for (String name : names) {
            follower.changed(key, name, true, false);
        }
    }

    private interface Request {
        void run() throws Exception;
    }

    /**
     * A change made through the mount, its store events told as after the node table had it (the
     * feed's thread may see the store change first, and tell it as made behind the mount's back).
     */
    private void ownChange(Request request) throws Exception {
        follower.notifyThrough(null, null); // the feed's events dropped meanwhile, as ones about what the kernel knows
        request.run();
        follower.catchUp();
        follower.notifyThrough(kernel, session);
    }

    private FakeKernel.Reply create(long dir, String name) throws Exception {
        return kernel.call(FuseProtocol.CREATE, dir,
                body().int32(Linux.O_WRONLY | Linux.O_CREAT).int32(0100644).int32(022).int32(0).name(name));
    }

    /** A directory's negative entries go when the kernel forgets it, and their marks with them. */
    @Test
    void missingNamesGoWithTheDirectoryTheKernelForgot() throws Exception {
        Files.createDirectories(home.resolve("shared/probed"));
        long shared = lookup(FuseProtocol.ROOT_ID, "shared");
        long dir = lookup(shared, "probed");
        int before = follower.missingNames();
        for (int i = 0; i < 100; i++) {
            assertEquals(0, lookup(dir, "probe" + i), "missing, and the kernel may keep it so");
        }
        assertEquals(before + 100, follower.missingNames());
        kernel.send(FuseProtocol.FORGET, dir, body().int64(1));
        lookup(FuseProtocol.ROOT_ID, "sys"); // one worker: served after the forget
        assertEquals(before, follower.missingNames());
    }

    /**
     * The kernel forgetting directories lets their watches go past the few it keeps: a walk of a
     * big tree must not pin every directory's inode (and the user's inotify watches) for good.
     */
    @Test
    void directoriesTheKernelForgotStayFollowedOnlyUpToTheFewKept() throws Exception {
        int made = ChangeFollower.FORGOTTEN_KEPT + 10;
        for (int i = 0; i < made; i++) {
            Files.createDirectories(home.resolve("shared/t/" + i));
        }
        long shared = lookup(FuseProtocol.ROOT_ID, "shared");
        long t = lookup(shared, "t");
        long[] dirs = new long[made];
        long[] keys = new long[made];
        for (int i = 0; i < made; i++) {
            dirs[i] = lookup(t, Integer.toString(i));
            assertEquals(0, lookup(dirs[i], "nothing"), "a missing name: the directory is followed");
            keys[i] = fs.nodes.get(dirs[i]).followKey;
        }
        int before = follower.followed();
        for (int i = 0; i < made; i++) {
            kernel.send(FuseProtocol.FORGET, dirs[i], body().int64(1)); // its one lookup
        }
        lookup(FuseProtocol.ROOT_ID, "sys"); // one worker: served after the forgets
        assertEquals(null, fs.nodes.get(dirs[made - 1]), "forgotten");
        assertEquals(before - 10, follower.followed(), "the 10 forgotten first are no longer followed");

        // one forgotten last is looked up again at once: the same watch, so the same key
        long again = lookup(t, Integer.toString(made - 1));
        assertEquals(0, lookup(again, "nothing"));
        assertEquals(keys[made - 1], fs.nodes.get(again).followKey);
        // one let go is followed anew, and a name made in it behind the mount reaches the kernel
        long back = lookup(t, "0");
        assertEquals(0, lookup(back, "late"), "held missing");
        assertTrue(fs.nodes.get(back).followKey >= 0, "followed again");
        Files.writeString(home.resolve("shared/t/0/late"), "made behind the mount");
        follower.catchUp();
        kernel.awaitNotification(n -> n.error() == FuseProtocol.NOTIFY_INVAL_ENTRY && n.int64(0) == back);
    }

    @Test
    void aDirectoryMovedBehindTheMountIsWorkedInWhereItWent() throws Exception {
        Files.createDirectories(home.resolve("shared/d"));
        Files.writeString(home.resolve("shared/d/a"), "mine");
        long shared = kernel.call(FuseProtocol.LOOKUP, FuseProtocol.ROOT_ID, body().name("shared")).int64(0);
        long d = kernel.call(FuseProtocol.LOOKUP, shared, body().name("d")).int64(0); // a shell's cwd, say

        // another mount (or chibi) moves it, and makes a directory of the old name
        Files.move(home.resolve("shared/d"), home.resolve("shared/d2"));
        Files.createDirectories(home.resolve("shared/d"));
        Files.writeString(home.resolve("shared/d/b"), "theirs");
        told(shared, "d", "d2");

        FakeKernel.Reply a = kernel.call(FuseProtocol.LOOKUP, d, body().name("a"));
        assertEquals(0, a.error());
        assertNotEquals(0, a.int64(0), "its own file, where it went");
        FakeKernel.Reply b = kernel.call(FuseProtocol.LOOKUP, d, body().name("b"));
        assertEquals(0, b.int64(0), "not the new directory's: missing (an entry of node id 0, or ENOENT)");
        FakeKernel.Reply made = create(d, "new");
        assertEquals(0, made.error());
        assertTrue(Files.exists(home.resolve("shared/d2/new")));
        assertFalse(Files.exists(home.resolve("shared/d/new")));
        assertEquals(d, kernel.call(FuseProtocol.LOOKUP, shared, body().name("d2")).int64(0),
                "the same node id: the kernel moves the directory's dentry to its new name (getcwd says d2)");
    }

    @Test
    void aDirectoryRemovedAndMadeAgainBehindTheMountHasNothingInIt() throws Exception {
        Files.createDirectories(home.resolve("shared/build"));
        Files.writeString(home.resolve("shared/build/old.o"), "x");
        long shared = kernel.call(FuseProtocol.LOOKUP, FuseProtocol.ROOT_ID, body().name("shared")).int64(0);
        long build = kernel.call(FuseProtocol.LOOKUP, shared, body().name("build")).int64(0);

        // `rm -rf build && mkdir build` through another mount
        Files.delete(home.resolve("shared/build/old.o"));
        Files.delete(home.resolve("shared/build"));
        Files.createDirectories(home.resolve("shared/build"));
        Files.writeString(home.resolve("shared/build/new.o"), "y");
        told(shared, "build");

        assertEquals(-Linux.ENOENT, kernel.call(FuseProtocol.LOOKUP, build, body().name("new.o")).error());
        assertEquals(-Linux.ENOENT, create(build, "x").error(), "as in a removed directory on a disk");
        assertFalse(Files.exists(home.resolve("shared/build/x")));
        FakeKernel.Reply attr = kernel.call(FuseProtocol.GETATTR, build, body().int32(0).int32(0).int64(0));
        assertEquals(0, attr.error());
        assertEquals(0, attr.int32(16 + 64), "nlink 0: removed");
        assertNotEquals(build, kernel.call(FuseProtocol.LOOKUP, shared, body().name("build")).int64(0), "the new one is another node");
    }

    /**
     * Another mount's mv a b, and a stat of b here before the feed tells of a: the lookup finds the
     * file the kernel holds as a and gives it the name b alone, and the feed, finding no node and no
     * file at a, took the kernel as right. The kernel kept a for --kernel-cache: a stat of a worked
     * and `echo NEW > a` rewrote b.
     */
    @Test
    void aNameRenamedBehindTheMountAndItsFileLookedUpByTheNewNameFirstIsToldGone() throws Exception {
        Files.writeString(home.resolve("shared/a"), "old\n");
        long dir = lookup(FuseProtocol.ROOT_ID, "shared");
        long a = lookup(dir, "a");
        noticesWritten();
        follower.notifyThrough(null, null); // the feed's event for a not yet handled
        Files.move(home.resolve("shared/a"), home.resolve("shared/b"), java.nio.file.StandardCopyOption.ATOMIC_MOVE);
        follower.catchUp();
        assertEquals(a, lookup(dir, "b"), "the same file");
        follower.notifyThrough(kernel, session);

        told(dir, "a", "b"); // the feed's events, handled now

        assertEquals(1, entriesTold(dir, "a"), "a told gone");
        assertEquals(0, entriesTold(dir, "b"), "b is what the kernel was told");
    }

    /**
     * mv f g through the mount: rename(2) looks g up first, and the kernel holds it missing until the
     * rename's reply, which moves the dentry there. The store's events, heard back, told g as a name
     * the kernel held missing: one INVAL_ENTRY (waiting for the directory's lock), a listing dropped
     * and the file's attributes, at every save of a temporary file over a new name.
     */
    @Test
    void aFileRenamedThroughTheMountToANameTheKernelHeldMissingIsNotToldBack() throws Exception {
        Files.writeString(home.resolve("shared/f"), "x\n");
        long dir = lookup(FuseProtocol.ROOT_ID, "shared");
        long f = lookup(dir, "f");
        assertEquals(0, lookup(dir, "g"), "held missing, as rename(2) looks it up");
        noticesWritten();

        assertEquals(0, kernel.call(FuseProtocol.RENAME, dir, body().int64(dir).name("f").name("g")).error());
        follower.catchUp();

        assertEquals(0, entriesTold(dir, "g") + entriesTold(dir, "f"), "no name told");
        assertEquals(List.of(), kernel.notifications(FuseProtocol.NOTIFY_INVAL_INODE).stream()
                .filter(n -> n.int64(0) == dir || n.int64(0) == f).toList(), "no listing or file dropped");
        assertEquals(f, lookup(dir, "g"));
    }

    /**
     * Another mount's ln n n2, where this one looked up n alone: the kernel kept n's link count of 1
     * for --kernel-cache, the feed telling only the new name n2 (it has no node there).
     */
    @Test
    void aLinkMadeBehindTheMountToAFileTheKernelKnowsByAnotherNameDropsItsAttributes() throws Exception {
        Files.writeString(home.resolve("shared/n"), "x\n");
        long dir = lookup(FuseProtocol.ROOT_ID, "shared");
        long n = lookup(dir, "n");
        noticesWritten();

        Files.createLink(home.resolve("shared/n2"), home.resolve("shared/n"));
        attributesDropped(n);
    }

    /**
     * Another mount's rm n2, where this one looked up the file's other name n alone: the feed heard
     * of a name it had no node for, and the kernel kept n's link count of 2 for --kernel-cache.
     */
    @Test
    void aLinkRemovedBehindTheMountFromAFileTheKernelKnowsByAnotherNameDropsItsAttributes() throws Exception {
        Files.writeString(home.resolve("shared/n"), "x\n");
        Files.createLink(home.resolve("shared/n2"), home.resolve("shared/n"));
        long dir = lookup(FuseProtocol.ROOT_ID, "shared");
        long n = lookup(dir, "n");
        noticesWritten();

        Files.delete(home.resolve("shared/n2"));
        attributesDropped(n);
    }

    /** rm n2 through the mount: the kernel dropped the link count of n, the same inode, itself at the reply. */
    @Test
    void aLinkRemovedThroughTheMountIsNotToldBackToTheFilesOtherName() throws Exception {
        Files.writeString(home.resolve("shared/n"), "x\n");
        long dir = lookup(FuseProtocol.ROOT_ID, "shared");
        long n = linkedInStore(dir, "n", "n2");
        noticesWritten();

        assertEquals(0, kernel.call(FuseProtocol.UNLINK, dir, body().name("n2")).error());
        follower.catchUp();

        assertEquals(0, entriesTold(dir, "n2"));
        assertEquals(List.of(), kernel.notifications(FuseProtocol.NOTIFY_INVAL_INODE).stream()
                .filter(r -> r.int64(0) == n).toList());
    }

    /** As above, where the kernel learnt of the second link by a stat of n (an attribute reply, no lookup). */
    @Test
    void aLinkRemovedBehindTheMountDropsTheAttributesOfAFileWhoseLinksTheKernelLearntByAStat() throws Exception {
        Files.writeString(home.resolve("shared/n"), "x\n");
        long dir = lookup(FuseProtocol.ROOT_ID, "shared");
        long n = lookup(dir, "n");
        Files.createLink(home.resolve("shared/n2"), home.resolve("shared/n"));
        attributesDropped(n);
        FakeKernel.Reply attr = kernel.call(FuseProtocol.GETATTR, n, body().int32(0).int32(0).int64(0));
        assertEquals(2, attr.int32(16 + 64), "nlink 2");
        noticesWritten();

        Files.delete(home.resolve("shared/n2"));
        attributesDropped(n);
    }

    /** How many INVAL_ENTRYs of {@code name} in {@code dir} reached the kernel, once every notice posted so far did. */
    private long entriesTold(long dir, String name) throws InterruptedException {
        long last = session.notices().post(new FuseReply(64).invalInode(FuseProtocol.ROOT_ID, -1, 0));
        assertTrue(session.notices().awaitWritten(last, java.util.concurrent.TimeUnit.SECONDS.toNanos(5)));
        return kernel.notifications(FuseProtocol.NOTIFY_INVAL_ENTRY).stream().filter(n -> n.int64(0) == dir
                && name.equals(StandardCharsets.UTF_8.decode(n.body().slice(16, n.int32(8))).toString())).count();
    }
}
