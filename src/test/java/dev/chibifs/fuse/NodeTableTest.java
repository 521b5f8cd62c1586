package dev.chibifs.fuse;

import dev.chibifs.path.VfsPath;
import dev.chibifs.store.MemoryStorage;
import dev.chibifs.store.Metadata;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The node table never holds a directory that is its own ancestor, whatever order the names of
 * directories moved behind the kernel's back (another mount, chibi) reach it in, and finds any path.
 */
@Timeout(20)
class NodeTableTest {

    private final MemoryStorage store = new MemoryStorage();
    private final NodeTable t = new NodeTable();
    private final NodeTable.Identity d1 = new NodeTable.Identity(store, Metadata.OWN_DEVICE, 1, 1);
    private final NodeTable.Identity d2 = new NodeTable.Identity(store, Metadata.OWN_DEVICE, 2, 1);

    /** d1 in the root, and d2 as s in d1: what the kernel looked up after another mount moved d2 into d1. */
    private NodeTable.Node[] d2InD1() {
        NodeTable.Node one = t.remember(t.root(), "d1", d1, true, true, false);
        t.remember(t.root(), "d2", d2, true, true, false);
        NodeTable.Node two = t.remember(one, "s", d2, true, true, false);
        assertEquals(VfsPath.of("/d1/s"), t.path(two));
        return new NodeTable.Node[] {one, two};
    }

    /**
     * A reply read before a change the feed heard, and written after the feed looked, left the kernel
     * the old size for the whole --kernel-cache (a tester's append seen 30 s late through a second
     * mount): the feed, finding the kernel told nothing to drop, leaves the word to the reply, whose
     * told() says the kernel must drop what it says; one that read the change says nothing more.
     */
    @Test
    void aReplyReadBeforeAChangeTheFeedHeardIsDroppedAfterIt() {
        NodeTable.Node f = t.remember(t.root(), "s", new NodeTable.Identity(store, Metadata.OWN_DEVICE, 9, 1), false, true, false);
        Metadata before = file(41, 1);
        Metadata after = file(42, 2);
        assertEquals(-1, f.heardChange(after), "the kernel holds nothing to drop: nothing to tell");
        assertTrue(f.told(before), "a reply read before the change: the kernel must drop it");
        assertTrue(!f.told(before), "said once");

        f.untold();
        assertEquals(-1, f.heardChange(after));
        assertTrue(!f.told(after), "a reply that read the change");

        long stamp = f.heardChange(file(43, 3));
        assertTrue(stamp >= 0, "the kernel holds other attributes: the feed drops them itself");
        f.untoldUnlessToldSince(stamp);
        assertTrue(!f.told(file(43, 3)));

        // a reply told after the feed's notice, and perhaps sent after it too: not forgotten, so the
        // next change finds it to drop (the tester's 30 s: told 3, marked untold by the notice of 3)
        stamp = f.heardChange(file(44, 4));
        assertTrue(stamp >= 0);
        assertTrue(!f.told(file(44, 4)));
        f.untoldUnlessToldSince(stamp);
        assertTrue(f.heardChange(file(45, 5)) >= 0, "the reply's attributes are dropped at the next change");

        f.untold();
        assertEquals(-1, f.heardChange(file(44, 4)));
        assertTrue(!f.told(file(45, 5)), "read after a later change, whose own event is to come: nothing to drop");
    }

    private static Metadata file(long size, long second) {
        java.nio.file.attribute.FileTime t = java.nio.file.attribute.FileTime.fromMillis(second * 1000);
        return new Metadata(dev.chibifs.store.EntryKind.FILE, size, t, t, t, t, 1, 0644, 9);
    }

    /**
     * The store (a made directory still there, {@link Metadata#sameFileAs}) and the node table (a
     * node still the file at its name) tell one file from another by one rule: they were two copies.
     */
    @Test
    void theStoreAndTheNodeTableTellAFileByTheSameRule() {
        java.nio.file.attribute.FileTime born = java.nio.file.attribute.FileTime.fromMillis(1_700_000_000_123L);
        java.nio.file.attribute.FileTime later = java.nio.file.attribute.FileTime.fromMillis(1_700_000_000_124L);
        java.util.List<Metadata> files = new java.util.ArrayList<>();
        for (java.nio.file.attribute.FileTime created : java.util.Arrays.asList(born, later, null)) {
            for (long device : new long[] {Metadata.OWN_DEVICE, 7}) {
                for (long inode : new long[] {5, 6}) {
                    files.add(new Metadata(dev.chibifs.store.EntryKind.FILE, 0, created, born, born, born, 1, 0644,
                            inode, 0, device));
                }
            }
        }
        int same = 0;
        for (Metadata a : files) {
            for (Metadata b : files) {
                boolean sameFile = a.device() == b.device() && a.inode() == b.inode()
                        && (a.created() == null || b.created() == null || a.created().equals(b.created()));
                assertEquals(sameFile, a.sameFileAs(b), a + " / " + b);
                assertEquals(sameFile, NodeTable.Identity.of(store, a).isOf(b), a + " / " + b);
                same += sameFile ? 1 : 0;
            }
        }
        assertEquals(4 * 7, same, "each file: itself, the one born at the other time, and both ways with no birth time");
    }

    @Test
    void aLookupThatWouldPutADirectoryInItsOwnSubdirectoryChangesNothing() {
        NodeTable.Node[] n = d2InD1();
        // the store moved d2 back and d1 into it as t; a lookup by d2's stale path finds d1 there
        assertNull(t.remember(n[1], "t", d1, true, true, false));
        assertEquals(VfsPath.of("/d1"), t.path(n[0]));
        assertEquals(VfsPath.of("/d1/s"), t.path(n[1]));
        assertSame(n[1], t.child(n[0], "s"));
        assertNull(t.child(n[1], "t"));
    }

    @Test
    void aDirectoryThatArrivesInItsOwnSubdirectoryStaysGone() {
        NodeTable.Node[] n = d2InD1();
        t.left(t.root(), "d1", n[0]);
        assertNull(t.arrived(n[1], "t", d1));
        assertTrue(n[0].removed, "until a lookup finds it");
        assertEquals(VfsPath.of("/d1/s"), t.path(n[1]));
        assertNull(t.child(n[1], "t"));
    }

    @Test
    void aRenameThroughTheMountIntoWhatTheTableThinksItsSubtreeLeavesTheName() {
        NodeTable.Node[] n = d2InD1();
        // the store renamed /d1 to /d2/t: so d2 was not in d1 by then, whatever the table says
        t.renamed(t.root(), "d1", n[1], "t");
        assertTrue(n[0].removed, "until a lookup finds it");
        assertNull(t.child(n[1], "t"));
        assertEquals(VfsPath.of("/d1/s"), t.path(n[1]));
        assertEquals(VfsPath.of("/d1"), t.path(n[0]));
    }

    @Test
    void aPathDeeperThanAThreadsStackIsFound() {
        NodeTable.Node dir = t.root();
        int depth = 20_000;
        for (int i = 0; i < depth; i++) {
            dir = t.remember(dir, "d", new NodeTable.Identity(store, Metadata.OWN_DEVICE, 10 + i, 1), true, true, true);
        }
        assertEquals(depth * 2, t.path(dir).toString().length());
    }

    /**
     * Names alike in directories made one after another hash apart: a record's own hash gave 100,000
     * such names 5,650 hashes, and every lookup and FORGET in the name table searched a crowded bin.
     */
    @Test
    void namesAlikeInDirectoriesMadeInARowHashApart() {
        java.util.Set<Integer> hashes = new java.util.HashSet<>();
        for (long parent = 2; parent < 102; parent++) {
            for (int i = 1; i <= 1000; i++) {
                hashes.add(NodeTable.nameHash(parent, "f" + i));
            }
        }
        assertTrue(hashes.size() > 99_900, hashes.size() + " hashes for 100,000 names");
    }
}
