package dev.chibifs.fuse;

import dev.chibifs.policy.Caller;
import dev.chibifs.router.Router;
import dev.chibifs.store.MemoryStorage;
import dev.chibifs.sys.Linux;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.List;
import java.util.Map;

import static dev.chibifs.fuse.FakeKernel.body;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The owner a mount shows, through a fake kernel against {@link MemoryStorage}: on a mount other
 * users reach, a user who may write a shared zone's file or directory is shown as its owner
 * (git's ownership check, the kernel's owner-only ACL), and such a directory's attributes are
 * kept for no time, so each user's stat gets its own answer.
 */
@Timeout(20)
class OwnerShownTest {

    private static final int ALICE = 1001;
    private static final int BOB = 1002;
    private static final int STRANGER = 1003;
    private static final int MOUNTER = 1000;
    /** Where fuse_attr's uid and gid are: after ino, size, blocks, three times, their nanos, mode and nlink. */
    private static final int ATTR_UID = 8 * 6 + 4 * 5;
    /** fuse_entry_out's attr_valid (seconds) and fuse_attr_out's. */
    private static final int ENTRY_ATTR_VALID = 24;
    private static final int ATTR_OUT_VALID = 0;

    private final MemoryStorage store = new MemoryStorage();
    private FakeKernel kernel;
    private FuseSession session;
    /** Where the mount reads a caller's supplementary groups; null: /proc, as a daemon does. */
    private AttributeChanges.GroupLookup groups;

    private void mount(CallerResolver callers, boolean othersReach) throws Exception {
        Router router = Router.of(store);
        router.createNamespace(List.of("alice", "bob"));
        FuseFileSystem fs = new FuseFileSystem(router, callers, MOUNTER, MOUNTER, FuseFileSystem.Timeouts.of(30, 30, 30), true);
        if (othersReach) {
            fs.othersReach();
        }
        if (groups != null) {
            fs.attributeChanges.groupsFrom(groups);
        }
        kernel = new FakeKernel();
        session = kernel.startSession(fs, new RequestStats());
    }

    private void uidMapped() throws Exception {
        mount(CallerResolver.uidMap(Map.of((long) ALICE, "alice", (long) BOB, "bob"), null), true);
    }

    @AfterEach
    void stop() {
        if (kernel != null) {
            kernel.close();
            session.ended().join();
        }
    }

    /** {uid, gid, attr_valid seconds} of {@code name} in {@code parent} as {@code uid} looks it up. */
    private long[] lookedUpBy(int uid, long parent, String name) throws Exception {
        FakeKernel.Reply r = kernel.call(FuseProtocol.LOOKUP, parent, uid, body().name(name));
        assertEquals(0, r.error(), name);
        int attr = FuseProtocol.ENTRY_OUT - FuseProtocol.ATTR;
        return new long[]{r.int32(attr + ATTR_UID), r.int32(attr + ATTR_UID + 4), r.int64(ENTRY_ATTR_VALID)};
    }

    private long node(long parent, String name) throws Exception {
        return kernel.call(FuseProtocol.LOOKUP, parent, body().name(name)).int64(0);
    }

    /** {uid, gid, attr_valid seconds} of node {@code node} as {@code uid} stats it. */
    private long[] statBy(int uid, long node) throws Exception {
        FakeKernel.Reply r = kernel.call(FuseProtocol.GETATTR, node, uid, body().int32(0).int32(0).int64(0));
        assertEquals(0, r.error());
        int attr = FuseProtocol.ATTR_OUT - FuseProtocol.ATTR;
        return new long[]{r.int32(attr + ATTR_UID), r.int32(attr + ATTR_UID + 4), r.int64(ATTR_OUT_VALID)};
    }

    private static void assertShown(long uid, long gid, long attrValid, long[] shown, String what) {
        assertEquals(List.of(uid, gid, attrValid), List.of(shown[0], shown[1], shown[2]), what + ": uid, gid, attr_valid");
    }

    @Test
    void onAUidMappedMountEachWriterOwnsTheSharedDirectoriesItStatsAndTheyAreAskedEveryTime() throws Exception {
        uidMapped();
        long shared = node(FuseProtocol.ROOT_ID, "shared");
        assertEquals(0, kernel.call(FuseProtocol.MKDIR, shared, ALICE, body().int32(0755).int32(022).name("repo")).error());
        long repo = node(shared, "repo");
        assertShown(ALICE, ALICE, 0, statBy(ALICE, repo), "the maker");
        assertShown(BOB, BOB, 0, statBy(BOB, repo), "another context, who writes there too");
        assertShown(0, 0, 0, statBy(STRANGER, repo), "an unmapped uid, who may not write: root's");
        assertShown(ALICE, ALICE, 0, lookedUpBy(ALICE, shared, "repo"), "a lookup's attributes");
        assertShown(BOB, BOB, 0, statBy(BOB, shared), "/shared itself");
    }

    @Test
    void aSharedFileShowsItsMakerAndKeepsItsAttributesAsUsual() throws Exception {
        uidMapped();
        long shared = node(FuseProtocol.ROOT_ID, "shared");
        FakeKernel.Reply created = kernel.call(FuseProtocol.CREATE, shared, ALICE,
                body().int32(Linux.O_WRONLY | Linux.O_CREAT).int32(0100644).int32(022).int32(0).name("f"));
        assertEquals(0, created.error());
        int attr = FuseProtocol.ENTRY_OUT - FuseProtocol.ATTR;
        assertEquals(ALICE, created.int32(attr + ATTR_UID), "install, cp -p and mv set a mode right after making the file");
        assertEquals(30, created.int64(ENTRY_ATTR_VALID));
        assertShown(BOB, BOB, 30, statBy(BOB, created.int64(0)), "whoever's request brings the attributes in");
    }

    @Test
    void homesAndSysShowTheirOwnOwnerToEveryoneAsBefore() throws Exception {
        uidMapped();
        long home = node(FuseProtocol.ROOT_ID, "home");
        assertShown(ALICE, 0, 30, lookedUpBy(BOB, home, "alice"), "alice's home, to bob");
        assertShown(ALICE, 0, 30, lookedUpBy(ALICE, home, "alice"), "alice's home, to alice");
        assertShown(0, 0, 30, lookedUpBy(ALICE, FuseProtocol.ROOT_ID, "sys"), "/sys");
        long toolsHome = node(node(FuseProtocol.ROOT_ID, "tools"), "home");
        assertShown(ALICE, 0, 30, lookedUpBy(BOB, toolsHome, "alice"), "alice's tools, to bob");
    }

    @Test
    void theSystemUidOwnsSysAndWhatItWritesInSharedZonesAndNobodyAReadOnlyStore() throws Exception {
        int system = 1004;
        Router router = Router.builder(store).mount(dev.chibifs.path.VfsPath.of("/shared/ref"),
                new dev.chibifs.store.ReadOnlyStorage(new MemoryStorage(), "reference")).build();
        router.createNamespace(List.of("alice", "bob"));
        FuseFileSystem fs = new FuseFileSystem(router, CallerResolver.uidMap(Map.of((long) ALICE, "alice"), (long) system),
                MOUNTER, MOUNTER, FuseFileSystem.Timeouts.of(30, 30, 30), true);
        fs.othersReach();
        kernel = new FakeKernel();
        session = kernel.startSession(fs, new RequestStats());

        assertShown(system, 0, 30, lookedUpBy(ALICE, FuseProtocol.ROOT_ID, "sys"), "/sys: SYSTEM's, as a home is its context's");
        long shared = node(FuseProtocol.ROOT_ID, "shared");
        assertShown(system, system, 0, statBy(system, shared), "SYSTEM writes /shared: git works there for it too");
        long ref = node(shared, "ref");
        FakeKernel.Reply attr = kernel.call(FuseProtocol.GETATTR, ref, ALICE, body().int32(0).int32(0).int64(0));
        assertEquals(0555, attr.int32(FuseProtocol.ATTR_OUT - FuseProtocol.ATTR + ATTR_UID - 8) & 0777,
                "a read-only store: no write bits, though /shared is everyone's");
        for (int uid : new int[] {ALICE, system}) {
            assertEquals(-Linux.EROFS, kernel.call(FuseProtocol.ACCESS, ref, uid, body().int32(Linux.W_OK).int32(0)).error(),
                    "test -w, as on a read-only file system");
        }
    }

    @Test
    void aPerContextMountOthersReachShowsEachUserAsOwnerWhereTheContextWrites() throws Exception {
        mount(CallerResolver.fixed(Caller.context("alice")), true);
        long home = node(FuseProtocol.ROOT_ID, "home");
        assertShown(BOB, BOB, 0, lookedUpBy(BOB, home, "alice"), "the context's home, to any user");
        assertShown(MOUNTER, MOUNTER, 30, lookedUpBy(BOB, home, "bob"), "another context's home: the mounter's");
    }

    @Test
    void aMountOnlyItsMounterReachesShowsTheMounterAndKeepsEverything() throws Exception {
        mount(CallerResolver.fixed(Caller.context("alice")), false);
        long home = node(FuseProtocol.ROOT_ID, "home");
        assertShown(MOUNTER, MOUNTER, 30, lookedUpBy(MOUNTER, home, "alice"), "the context's home");
        assertShown(MOUNTER, MOUNTER, 30, lookedUpBy(MOUNTER, FuseProtocol.ROOT_ID, "shared"), "/shared");
    }
    /** SETATTR of the owner and group alone, as chown(2) sends it: {@code uid} or {@code gid} -1 leaves that one out. */
    private int chownBy(int caller, long node, int uid, int gid) throws Exception {
        int valid = (uid != -1 ? FuseProtocol.FATTR_UID : 0) | (gid != -1 ? FuseProtocol.FATTR_GID : 0);
        return kernel.call(FuseProtocol.SETATTR, node, caller, body().int32(valid).int32(0)
                .int64(0).int64(0).int64(0).int64(0).int64(0).int64(0)
                .int32(0).int32(0).int32(0).int32(0).int32(0).int32(uid).int32(gid).int32(0)).error();
    }

    /**
     * A chown to the owner or group a file shows (or the owner's own group) succeeds and changes
     * nothing, so cp -a, tar and rsync -a keep working; to another uid or group it is EPERM, as on
     * a disk, where it succeeded and changed nothing. A zone the caller may not write says EACCES first.
     */
    @Test
    void aChownToAnotherOwnerOrGroupThanShownIsRefusedAndToTheShownOnesChangesNothing() throws Exception {
        uidMapped();
        long mine = kernel.call(FuseProtocol.CREATE, node(node(FuseProtocol.ROOT_ID, "home"), "alice"), ALICE,
                body().int32(Linux.O_WRONLY | Linux.O_CREAT).int32(0100644).int32(022).int32(0).name("f")).int64(0);
        long shared = kernel.call(FuseProtocol.CREATE, node(FuseProtocol.ROOT_ID, "shared"), ALICE,
                body().int32(Linux.O_WRONLY | Linux.O_CREAT).int32(0100644).int32(022).int32(0).name("g")).int64(0);

        assertEquals(-Linux.EPERM, chownBy(ALICE, mine, BOB, -1), "chown bob f");
        assertEquals(-Linux.EPERM, chownBy(ALICE, mine, -1, 12345), "chown :12345 f");
        assertEquals(-Linux.EPERM, chownBy(ALICE, mine, ALICE, 12345), "chown alice:12345 f");
        assertEquals(-Linux.EPERM, chownBy(ALICE, shared, BOB, BOB), "chown bob:bob g in /shared");
        assertEquals(0, chownBy(ALICE, mine, ALICE, 0), "the owner and group shown (a home's group is root's)");
        assertEquals(0, chownBy(ALICE, mine, ALICE, ALICE), "the owner's own group: cp -a, rsync -a");
        assertEquals(0, chownBy(ALICE, mine, -1, -1), "chown -1 -1");
        assertEquals(0, chownBy(ALICE, shared, ALICE, ALICE), "in /shared the writer is shown as owner");
        assertEquals(-Linux.EACCES, chownBy(BOB, mine, BOB, BOB), "bob may not write alice's home: the rule says so first");
        assertShown(ALICE, 0, 30, statBy(ALICE, mine), "nothing changed");
    }

    /**
     * A chgrp by the owner shown to one of its supplementary groups succeeds and changes nothing, as
     * a disk lets it (rsync -a of a tree of a project group the user is in); the groups are read for
     * the request's thread, with its ids, and only for a gid other than the shown ones and the
     * caller's own. A group it is not in, or a thread whose groups cannot be read, is EPERM.
     */
    @Test
    void aChgrpToOneOfTheCallersSupplementaryGroupsSucceedsAndChangesNothing() throws Exception {
        int team = 4369;
        List<List<Long>> asked = new java.util.concurrent.CopyOnWriteArrayList<>();
        groups = (tid, fsuid, fsgid) -> {
            asked.add(List.of(tid, fsuid, fsgid));
            return tid == 1234 ? new long[] {27, team} : new long[0];
        };
        uidMapped();
        long mine = kernel.call(FuseProtocol.CREATE, node(node(FuseProtocol.ROOT_ID, "home"), "alice"), ALICE,
                body().int32(Linux.O_WRONLY | Linux.O_CREAT).int32(0100644).int32(022).int32(0).name("f")).int64(0);
        long shared = kernel.call(FuseProtocol.CREATE, node(FuseProtocol.ROOT_ID, "shared"), ALICE,
                body().int32(Linux.O_WRONLY | Linux.O_CREAT).int32(0100644).int32(022).int32(0).name("g")).int64(0);

        assertEquals(0, chownBy(ALICE, mine, ALICE, 0), "the shown ones");
        assertEquals(0, chownBy(ALICE, mine, -1, ALICE), "the caller's own group");
        assertEquals(List.of(), asked, "no lookup where the gid asked for needs none");

        assertEquals(0, chownBy(ALICE, mine, -1, team), "chgrp team f, a group alice is in");
        assertEquals(List.of(List.of(1234L, (long) ALICE, (long) ALICE)), asked, "the request's thread and ids");
        assertEquals(0, chownBy(ALICE, shared, ALICE, team), "chown alice:team g in /shared");
        assertEquals(-Linux.EPERM, chownBy(ALICE, mine, -1, 12345), "chgrp 12345 f, a group alice is not in");
        assertEquals(-Linux.EPERM, chownBy(ALICE, mine, BOB, team), "the group does not let the owner change");
        assertShown(ALICE, 0, 30, statBy(ALICE, mine), "nothing changed");

        kernel.pid = 4321; // a thread whose groups cannot be read (gone)
        assertEquals(-Linux.EPERM, chownBy(ALICE, mine, -1, team), "no groups known: refused");
    }

    /** SYSTEM (root) still succeeds, changing nothing (bindfs's --chown-ignore): tar x as root sets every owner. */
    @Test
    void aChownBySystemSucceedsAndChangesNothing() throws Exception {
        mount(CallerResolver.uidMap(Map.of((long) ALICE, "alice"), 0L), true);
        long f = kernel.call(FuseProtocol.CREATE, node(node(FuseProtocol.ROOT_ID, "home"), "alice"), ALICE,
                body().int32(Linux.O_WRONLY | Linux.O_CREAT).int32(0100644).int32(022).int32(0).name("f")).int64(0);

        assertEquals(0, chownBy(0, f, BOB, 12345));

        assertShown(ALICE, 0, 30, statBy(0, f), "nothing changed");
    }
}
