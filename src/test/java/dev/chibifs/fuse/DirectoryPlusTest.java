package dev.chibifs.fuse;

import com.kenai.jffi.MemoryIO;
import dev.chibifs.path.VfsPath;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

class DirectoryPlusTest {

    private static final MemoryIO MEMORY = MemoryIO.getInstance();
    private static final long DIR = 7;
    private static final long FH = 0x1000;

    private final List<Long> allocated = new ArrayList<>();
    private final List<VfsPath> filled = new ArrayList<>();

    /** Attributes as a GETATTR would give: inode 100 + node id, size 3, a regular file. */
    private final DirectoryPlus.Attributes files = (path, nodeid, stat) -> {
        filled.add(path);
        if (path.fileName().startsWith("gone")) {
            return DirectoryPlus.Attributes.NONE;
        }
        StatLayout.INO.put(stat, 100 + nodeid);
        StatLayout.SIZE.put(stat, 3);
        StatLayout.MODE.put(stat, 0100644);
        StatLayout.NLINK.put(stat, 1);
        StatLayout.MTIME_SEC.put(stat, 1_700_000_000L);
        StatLayout.MTIME_NSEC.put(stat, 5);
        return path.fileName().startsWith("brief") ? DirectoryPlus.Attributes.BRIEF_ATTRIBUTES : 0;
    };

    @AfterEach
    void free() {
        allocated.forEach(MEMORY::freeMemory);
    }

    @Test
    void aForgetGivesLibfuseOnlyTheLookupsItCounted() {
        DirectoryPlus plus = new DirectoryPlus(30, 30);
        plus.learn(DIR, "a", 5, 0, plus.departuresSoFar());
        assertEquals(5, plus.grant(DIR, "a")[0]);
        assertEquals(5, plus.grant(DIR, "a")[0]);
        assertEquals(2, plus.granted(5));
        // the kernel forgets three: two were ours, one libfuse's
        assertEquals(1, plus.forgetting(5, 3));
        assertEquals(0, plus.granted(5));
        assertNull(plus.grant(DIR, "a"), "a forgotten node is never named again");
    }

    @Test
    void aForgetOfFewerThanWeGaveLeavesLibfusesCountAlone() {
        DirectoryPlus plus = new DirectoryPlus(30, 30);
        plus.learn(DIR, "a", 5, 0, plus.departuresSoFar());
        plus.grant(DIR, "a");
        plus.grant(DIR, "a");
        assertEquals(0, plus.forgetting(5, 1));
        assertEquals(1, plus.granted(5));
        assertEquals(4, plus.forgetting(9, 4), "a node we never named: all libfuse's");
    }

    @Test
    void aNodeForgottenWhileItsEntryReplyWasSentIsNotLearned() {
        DirectoryPlus plus = new DirectoryPlus(30, 30);
        long before = plus.departuresSoFar();
        plus.forgetting(5, 1); // the kernel took the reply and forgot the node again before it was learned
        plus.learn(DIR, "a", 5, 0, before);
        assertNull(plus.grant(DIR, "a"), "libfuse may have ended node 5");
        plus.learn(DIR, "b", 6, 0, before);
        assertEquals(6, plus.grant(DIR, "b")[0], "another node's forget says nothing of node 6");
    }

    @Test
    void aNameUnlinkedWhileItsEntryReplyWasSentIsNotLearned() {
        DirectoryPlus plus = new DirectoryPlus(30, 30);
        long before = plus.departuresSoFar();
        plus.unlearn(DIR, "a"); // the kernel took the reply, and an unlink of the name reached libfuse first
        plus.learn(DIR, "a", 5, 0, before);
        assertNull(plus.grant(DIR, "a"), "libfuse has taken the name from node 5");
        plus.learn(DIR + 1, "a", 6, 0, before);
        assertEquals(6, plus.grant(DIR + 1, "a")[0], "the same name in another directory is another name");
    }

    @Test
    void aNameLeavesItsNodeBeforeLibfuseUnlinksOrRenamesIt() {
        DirectoryPlus plus = new DirectoryPlus(30, 30);
        plus.learn(DIR, "a", 5, 0, plus.departuresSoFar());
        plus.learn(DIR, "b", 6, 0, plus.departuresSoFar());
        plus.unlearn(DIR, "a");
        assertNull(plus.grant(DIR, "a"));
        assertEquals(6, plus.grant(DIR, "b")[0]);
        plus.ungrant(6);
        assertEquals(0, plus.granted(6));
    }

    @Test
    void aListingIsWidenedWithTheNodesAndAttributesOfKnownNames() {
        DirectoryPlus plus = listing(30, 2.5, "/shared/d");
        plus.learn(DIR, "known", 5, 9, plus.departuresSoFar());
        List<VfsPath> sent = new ArrayList<>();
        long out = alloc(4096);
        int length = widen(plus, out, sent, ".", "..", "known", "unknown");

        assertEquals(4 * DirectoryPlus.ENTRY_OUT + 32 * 4, length);
        assertEquals(List.of(VfsPath.of("/shared/d/known")), sent);
        assertEquals(1, plus.granted(5));
        long known = out + 2 * (DirectoryPlus.ENTRY_OUT + 32);
        assertEquals(5, MEMORY.getLong(known));
        assertEquals(9, MEMORY.getLong(known + 8), "the generation libfuse gave");
        assertEquals(30, MEMORY.getLong(known + 16));
        assertEquals(2, MEMORY.getLong(known + 24));
        assertEquals(500_000_000, MEMORY.getInt(known + 36));
        assertEquals(105, MEMORY.getLong(known + 40), "fuse_attr.ino");
        assertEquals(3, MEMORY.getLong(known + 48), "fuse_attr.size");
        assertEquals(1_700_000_000L, MEMORY.getLong(known + 72), "fuse_attr.mtime");
        assertEquals(5, MEMORY.getInt(known + 92), "fuse_attr.mtimensec");
        assertEquals(0100644, MEMORY.getInt(known + 100), "fuse_attr.mode");
        assertEquals(105, MEMORY.getLong(known + DirectoryPlus.ENTRY_OUT), "the dirent's ino, as the attributes'");
        assertName(known + DirectoryPlus.ENTRY_OUT, "known");
        for (int i : new int[] {0, 1, 3}) {
            long entry = out + i * (DirectoryPlus.ENTRY_OUT + 32);
            assertEquals(0, MEMORY.getLong(entry), "no node: a plain entry");
        }
        assertName(out + 3 * (DirectoryPlus.ENTRY_OUT + 32) + DirectoryPlus.ENTRY_OUT, "unknown");
        assertEquals(List.of(VfsPath.of("/shared/d/known")), filled, "no attributes asked for . .. or unknown names");
    }

    @Test
    void aNameWithoutAttributesGoesOutPlainAndIsNotCounted() {
        DirectoryPlus plus = listing(30, 30, "/shared");
        plus.learn(DIR, "gone", 5, 0, plus.departuresSoFar());
        plus.learn(DIR, "briefly", 6, 0, plus.departuresSoFar());
        long out = alloc(4096);
        widen(plus, out, new ArrayList<>(), "gone", "briefly");
        assertEquals(0, MEMORY.getLong(out));
        assertEquals(0, plus.granted(5));
        long briefly = out + DirectoryPlus.ENTRY_OUT + 32;
        assertEquals(6, MEMORY.getLong(briefly));
        assertEquals(30, MEMORY.getLong(briefly + 16), "the name keeps the mount's timeout");
        assertEquals(1, MEMORY.getLong(briefly + 24), "its attributes libfuse's 1 s");
    }

    @Test
    void afterARenameEarlierListingsGoOutPlain() {
        DirectoryPlus plus = listing(30, 30, "/shared/d");
        plus.learn(DIR, "a", 5, 0, plus.departuresSoFar());
        plus.renaming();
        long out = alloc(4096);
        widen(plus, out, new ArrayList<>(), "a");
        assertEquals(0, MEMORY.getLong(out), "the directory may not be at /shared/d any more");
        assertEquals(0, plus.granted(5));
    }

    @Test
    void onlyWholeEntriesThatFitTheRoomAreWidened() {
        DirectoryPlus plus = new DirectoryPlus(1, 1);
        long plain = plain("a", "b", "c");
        // libfuse's slice may end inside an entry; the room may hold fewer widened ones
        assertEquals(2 * (DirectoryPlus.ENTRY_OUT + 32),
                plus.widen(DIR, FH, plain, 3 * 32 - 8, alloc(4096), 4096, alloc(StatLayout.BYTES), new ArrayList<>(),
                        new ArrayList<>()));
        assertEquals(DirectoryPlus.ENTRY_OUT + 32,
                plus.widen(DIR, FH, plain, 3 * 32, alloc(4096), 2 * (DirectoryPlus.ENTRY_OUT + 32) - 1,
                        alloc(StatLayout.BYTES), new ArrayList<>(), new ArrayList<>()));
    }

    /** A DirectoryPlus whose attributes are {@link #files}, with handle {@link #FH} listing {@code dir}. */
    private DirectoryPlus listing(double entryTimeout, double attrTimeout, String dir) {
        DirectoryPlus plus = new DirectoryPlus(entryTimeout, attrTimeout);
        plus.attributesFrom(files);
        plus.listing(FH, VfsPath.of(dir));
        return plus;
    }

    /** Widens libfuse's plain listing of {@code names} into {@code out} (4096 bytes); the bytes written. */
    private int widen(DirectoryPlus plus, long out, List<VfsPath> sent, String... names) {
        return plus.widen(DIR, FH, plain(names), plainLength(names), out, 4096, alloc(StatLayout.BYTES), sent,
                new ArrayList<>());
    }

    /** struct fuse_dirent {ino, off, namelen, type, name} for each name, as libfuse lays out a READDIR reply. */
    private long plain(String... names) {
        long buf = alloc(plainLength(names));
        long at = buf;
        int off = 0;
        for (String n : names) {
            byte[] b = n.getBytes(StandardCharsets.UTF_8);
            int reclen = DirectoryPlus.align(DirectoryPlus.DIRENT + b.length);
            off += reclen;
            MEMORY.setMemory(at, reclen, (byte) 0);
            MEMORY.putLong(at, 0xffffffffL);
            MEMORY.putLong(at + 8, off);
            MEMORY.putInt(at + 16, b.length);
            MEMORY.putInt(at + 20, 8);
            MEMORY.putByteArray(at + 24, b, 0, b.length);
            at += reclen;
        }
        return buf;
    }

    private static int plainLength(String... names) {
        int n = 0;
        for (String name : names) {
            n += DirectoryPlus.align(DirectoryPlus.DIRENT + name.getBytes(StandardCharsets.UTF_8).length);
        }
        return n;
    }

    private static void assertName(long dirent, String name) {
        int length = MEMORY.getInt(dirent + 16);
        byte[] b = new byte[length];
        MEMORY.getByteArray(dirent + 24, b, 0, length);
        assertArrayEquals(name.getBytes(StandardCharsets.UTF_8), b);
    }

    private long alloc(int bytes) {
        long a = MEMORY.allocateMemory(bytes, true);
        allocated.add(a);
        return a;
    }
}
