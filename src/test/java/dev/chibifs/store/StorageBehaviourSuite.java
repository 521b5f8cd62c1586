package dev.chibifs.store;

import dev.chibifs.sys.IsDirectoryException;
import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.chibifs.path.VfsPath;
import dev.chibifs.sys.Errors;
import dev.chibifs.sys.Linux;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * What every {@link Storage} must do: the seeds' backend tests plus the POSIX behaviour a mount
 * relies on. A backend's test class extends this and supplies {@link #newStorage()}.
 */
@Timeout(30)
public abstract class StorageBehaviourSuite {

    protected Storage storage;

    /** A fresh, empty store. */
    protected abstract Storage newStorage() throws IOException;

    @BeforeEach
    void createStorage() throws IOException {
        storage = newStorage();
    }

    @AfterEach
    void closeStorage() throws IOException {
        storage.close();
    }

    protected static VfsPath p(String path) {
        return VfsPath.of(path);
    }

    protected static byte[] bytes(String s) {
        return s.getBytes(UTF_8);
    }

    protected String text(String path) throws IOException {
        return new String(storage.read(p(path)), UTF_8);
    }

    private static Set<OpenFlag> flags(OpenFlag... f) {
        return f.length == 0 ? EnumSet.noneOf(OpenFlag.class) : EnumSet.copyOf(Arrays.asList(f));
    }

    private FileHandle open(String path, OpenFlag... f) throws IOException {
        return storage.open(p(path), flags(f), 0644);
    }

    private static int write(FileHandle h, String s, long position) throws IOException {
        return h.write(ByteBuffer.wrap(bytes(s)), position);
    }

    private static String read(FileHandle h, long position, int length) throws IOException {
        ByteBuffer buf = ByteBuffer.allocate(length);
        int n = h.read(buf, position);
        return new String(buf.array(), 0, n, UTF_8);
    }

    // ---- the seeds' backend tests ----

    @Test
    void writeAndRead() throws IOException {
        storage.write(p("/shared/test.txt"), bytes("hello"));
        assertEquals("hello", text("/shared/test.txt"));
    }

    @Test
    void writeReplacesContent() throws IOException {
        storage.write(p("/shared/test.txt"), bytes("a longer first version"));
        storage.write(p("/shared/test.txt"), bytes("short"));
        assertEquals("short", text("/shared/test.txt"));
    }

    @Test
    void writeEmptyFile() throws IOException {
        storage.write(p("/shared/empty"), new byte[0]);
        assertArrayEquals(new byte[0], storage.read(p("/shared/empty")));
        assertEquals(0, storage.metadata(p("/shared/empty")).size());
    }

    @Test
    void writeCreatesParentDirectories() throws IOException {
        storage.write(p("/shared/a/b/c/nested.txt"), bytes("nested"));
        assertEquals("nested", text("/shared/a/b/c/nested.txt"));
        assertTrue(storage.metadata(p("/shared/a/b")).isDirectory());
    }

    @Test
    void writeKeepsTheExecuteBits() throws IOException {
        storage.write(p("/shared/run.sh"), bytes("v1"));
        storage.setExecutable(p("/shared/run.sh"), 0755);
        storage.write(p("/shared/run.sh"), bytes("v2"));
        assertEquals(0111, storage.metadata(p("/shared/run.sh")).mode() & 0111);
    }

    @Test
    void readMissingIsNoSuchFile() {
        assertThrows(NoSuchFileException.class, () -> storage.read(p("/shared/missing.txt")));
    }

    @Test
    void readDirectoryIsIsDirectory() throws IOException {
        storage.mkdir(p("/shared/d"));
        assertThrows(IsDirectoryException.class, () -> storage.read(p("/shared/d")));
        // the root too, what `cat` of a store's mount point reads (memory: said EBUSY)
        assertEquals(Linux.EISDIR, errnoOf(() -> storage.read(p("/"))));
        assertEquals(Linux.EISDIR, errnoOf(() -> open("/", OpenFlag.READ).close()));
    }

    @Test
    void append() throws IOException {
        storage.write(p("/shared/log.txt"), bytes("line1\n"));
        storage.append(p("/shared/log.txt"), bytes("line2\n"));
        assertEquals("line1\nline2\n", text("/shared/log.txt"));
    }

    @Test
    void appendCreatesFileAndParents() throws IOException {
        storage.append(p("/shared/new/dir/log.txt"), bytes("first"));
        assertEquals("first", text("/shared/new/dir/log.txt"));
    }

    @Test
    void deleteFile() throws IOException {
        storage.write(p("/shared/del.txt"), bytes("x"));
        storage.delete(p("/shared/del.txt"));
        assertFalse(storage.exists(p("/shared/del.txt")));
        assertTrue(storage.exists(p("/shared")));
    }

    @Test
    void deleteDirectoryTree() throws IOException {
        storage.write(p("/shared/tree/a.txt"), bytes("a"));
        storage.write(p("/shared/tree/sub/b.txt"), bytes("b"));
        storage.mkdir(p("/shared/tree/sub/empty"));
        storage.delete(p("/shared/tree"));
        assertFalse(storage.exists(p("/shared/tree")));
        assertEquals(List.of(), storage.list(p("/shared")));
    }

    @Test
    void deleteMissingIsNoSuchFile() {
        assertThrows(NoSuchFileException.class, () -> storage.delete(p("/shared/nope")));
    }

    @Test
    void listIsSortedWithKinds() throws IOException {
        storage.write(p("/shared/dir/b.txt"), bytes("b"));
        storage.write(p("/shared/dir/a.txt"), bytes("a"));
        storage.mkdir(p("/shared/dir/sub"));
        storage.write(p("/shared/dir/C.txt"), bytes("c"));
        assertEquals(List.of(
                new Entry("C.txt", EntryKind.FILE),
                new Entry("a.txt", EntryKind.FILE),
                new Entry("b.txt", EntryKind.FILE),
                new Entry("sub", EntryKind.DIRECTORY)), storage.list(p("/shared/dir")));
    }

    @Test
    void listEmptyDirectory() throws IOException {
        storage.mkdir(p("/shared/empty"));
        assertEquals(List.of(), storage.list(p("/shared/empty")));
    }

    /** Unlike the seeds (empty list), a missing directory is an error, as for ls and readdir. */
    @Test
    void listMissingDirectoryIsNoSuchFile() {
        assertThrows(NoSuchFileException.class, () -> storage.list(p("/shared/missing")));
        assertThrows(NoSuchFileException.class, () -> storage.entries(p("/shared/missing")));
    }

    @Test
    void listFileIsNotDirectory() throws IOException {
        storage.write(p("/shared/f"), bytes("x"));
        assertThrows(NotDirectoryException.class, () -> storage.list(p("/shared/f")));
    }

    @Test
    void exists() throws IOException {
        assertFalse(storage.exists(p("/shared/e.txt")));
        storage.write(p("/shared/e.txt"), bytes("x"));
        assertTrue(storage.exists(p("/shared/e.txt")));
        assertTrue(storage.exists(p("/shared")));
        assertTrue(storage.exists(VfsPath.root()));
        assertFalse(storage.exists(p("/shared/e.txt/below")));
    }

    @Test
    void mkdirCreatesParentsAndIsIdempotent() throws IOException {
        storage.mkdir(p("/shared/a/b/c"));
        assertTrue(storage.metadata(p("/shared/a/b/c")).isDirectory());
        assertEquals(EntryKind.DIRECTORY, storage.metadata(p("/shared/a")).kind());
        storage.write(p("/shared/a/b/c/keep"), bytes("k"));
        storage.mkdir(p("/shared/a/b/c"));
        assertEquals("k", text("/shared/a/b/c/keep"));
    }

    /** A directory made in place of one moved away is another: only the one looked at is removed. */
    @Test
    void removeDirectoryIfSameLeavesOneMadeInItsPlace() throws IOException {
        storage.mkdir(p("/shared/r"));
        Metadata ours = storage.metadata(p("/shared/r"));
        storage.rename(p("/shared/r"), p("/shared/r.old"));
        storage.createDirectory(p("/shared/r"));
        assertFalse(storage.removeDirectoryIfSame(p("/shared/r"), ours));
        assertTrue(storage.metadata(p("/shared/r")).isDirectory());
        assertFalse(storage.removeDirectoryIfSame(p("/shared/gone"), ours));
        assertTrue(storage.removeDirectoryIfSame(p("/shared/r.old"), ours));
        assertFalse(storage.exists(p("/shared/r.old")));
    }

    @Test
    void mkdirOverFileFails() throws IOException {
        storage.write(p("/shared/f"), bytes("x"));
        assertThrows(NotDirectoryException.class, () -> storage.mkdir(p("/shared/f")));
        assertThrows(NotDirectoryException.class, () -> storage.mkdir(p("/shared/f/sub")));
        assertEquals("x", text("/shared/f"));
    }

    @Test
    void copyLeavesTheSource() throws IOException {
        storage.write(p("/shared/src.txt"), bytes("content"));
        storage.copy(p("/shared/src.txt"), p("/shared/deep/dst.txt"));
        assertEquals("content", text("/shared/deep/dst.txt"));
        assertEquals("content", text("/shared/src.txt"));
        storage.append(p("/shared/deep/dst.txt"), bytes("+"));
        assertEquals("content", text("/shared/src.txt"));
    }

    @Test
    void copyReplacesDestination() throws IOException {
        storage.write(p("/shared/src.txt"), bytes("new"));
        storage.write(p("/shared/dst.txt"), bytes("old and longer"));
        storage.copy(p("/shared/src.txt"), p("/shared/dst.txt"));
        assertEquals("new", text("/shared/dst.txt"));
    }

    /** As the seeds' std::fs::copy: the copy takes the source's permission bits. */
    @Test
    void copyCarriesTheExecuteBits() throws IOException {
        storage.write(p("/shared/run.sh"), bytes("#!/bin/sh"));
        storage.setExecutable(p("/shared/run.sh"), 0755);
        storage.write(p("/shared/old"), bytes("old"));
        storage.copy(p("/shared/run.sh"), p("/shared/new"));
        storage.copy(p("/shared/run.sh"), p("/shared/old"));
        assertEquals(0111, storage.metadata(p("/shared/new")).mode() & 0111);
        assertEquals(0111, storage.metadata(p("/shared/old")).mode() & 0111);
    }

    @Test
    void copyMissingOrDirectoryFails() throws IOException {
        assertThrows(NoSuchFileException.class, () -> storage.copy(p("/shared/none"), p("/shared/x")));
        storage.mkdir(p("/shared/d"));
        assertThrows(IsDirectoryException.class, () -> storage.copy(p("/shared/d"), p("/shared/x")));
        assertFalse(storage.exists(p("/shared/x")));
    }

    @Test
    void rename() throws IOException {
        storage.write(p("/shared/old.txt"), bytes("moved"));
        storage.rename(p("/shared/old.txt"), p("/shared/new.txt"));
        assertEquals("moved", text("/shared/new.txt"));
        assertFalse(storage.exists(p("/shared/old.txt")));
    }

    @Test
    void renameMissingOrIntoMissingDirectoryFails() throws IOException {
        assertThrows(NoSuchFileException.class, () -> storage.rename(p("/shared/none"), p("/shared/x")));
        storage.write(p("/shared/a"), bytes("a"));
        assertThrows(NoSuchFileException.class, () -> storage.rename(p("/shared/a"), p("/shared/no/x")));
        assertEquals("a", text("/shared/a"));
    }

    @Test
    void metadataOfFile() throws IOException {
        Instant before = Instant.now().minusSeconds(2);
        storage.write(p("/shared/m.txt"), bytes("12345"));
        Metadata m = storage.metadata(p("/shared/m.txt"));
        assertEquals(5, m.size());
        assertEquals(EntryKind.FILE, m.kind());
        assertTrue(m.isFile());
        assertEquals(1, m.links());
        assertTrue(m.modified().toInstant().isAfter(before), m.modified().toString());
        assertEquals(0644, m.mode() & 0666);
    }

    @Test
    void metadataOfDirectory() throws IOException {
        storage.mkdir(p("/shared/d/sub"));
        Metadata m = storage.metadata(p("/shared/d"));
        assertEquals(EntryKind.DIRECTORY, m.kind());
        assertTrue(m.isDirectory());
        assertEquals(3, m.links());
        assertNotEquals(m.inode(), storage.metadata(p("/shared/d/sub")).inode());
    }

    @Test
    void metadataMissingIsNoSuchFile() {
        assertThrows(NoSuchFileException.class, () -> storage.metadata(p("/shared/missing")));
    }

    @Test
    void siblingsGiveEachNameTheMetadataItsPathHas() throws IOException {
        storage.write(p("/shared/s/a"), bytes("123"));
        storage.mkdir(p("/shared/s/d"));
        try (Storage.Siblings in = storage.siblings(p("/shared/s"))) {
            for (String name : List.of("a", "d")) {
                Metadata one = storage.metadata(p("/shared/s/" + name));
                Metadata sibling = in.metadata(name);
                assertEquals(one.kind(), sibling.kind(), name);
                assertEquals(one.size(), sibling.size(), name);
                assertEquals(one.inode(), sibling.inode(), name);
                assertEquals(one.modified(), sibling.modified(), name);
            }
            assertThrows(NoSuchFileException.class, () -> in.metadata("missing"));
        }
    }

    // ---- ETags (seed 004) ----

    @Test
    void etagIsTheSha256OfTheContentAndFollowsEveryChange() throws IOException {
        storage.write(p("/shared/e"), bytes("abc"));
        // SHA-256("abc"), the FIPS 180-2 example
        String abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        assertEquals(abc, storage.etag(p("/shared/e")));
        assertEquals(abc, storage.etag(p("/shared/e")));
        storage.append(p("/shared/e"), bytes("d"));
        assertEquals(ContentHash.of(bytes("abcd")), storage.etag(p("/shared/e")));
        try (FileHandle h = open("/shared/e", OpenFlag.WRITE)) {
            write(h, "X", 0);
        }
        assertEquals(ContentHash.of(bytes("Xbcd")), storage.etag(p("/shared/e")));
        storage.truncate(p("/shared/e"), 1);
        assertEquals(ContentHash.of(bytes("X")), storage.etag(p("/shared/e")));
        storage.mkdir(p("/shared/d"));
        assertThrows(IsDirectoryException.class, () -> storage.etag(p("/shared/d")));
        assertThrows(NoSuchFileException.class, () -> storage.etag(p("/shared/none")));
    }

    @Test
    void conditionalWritesChangeOnlyWhatTheyExpect() throws IOException {
        storage.write(p("/shared/c"), bytes("v1"));
        String v1 = storage.etag(p("/shared/c"));
        storage.write(p("/shared/c"), bytes("v2"), Precondition.matching(v1));
        String v2 = storage.etag(p("/shared/c"));
        assertEquals("v2", text("/shared/c"));

        EtagMismatchException stale = assertThrows(EtagMismatchException.class,
                () -> storage.write(p("/shared/c"), bytes("lost"), Precondition.matching(v1)));
        assertEquals(v2, stale.current());
        assertThrows(EtagMismatchException.class,
                () -> storage.append(p("/shared/c"), bytes("lost"), Precondition.matching(v1)));
        assertEquals("v2", text("/shared/c"));
        storage.append(p("/shared/c"), bytes("+"), Precondition.matching(v2));
        assertEquals("v2+", text("/shared/c"));

        EtagMismatchException exists = assertThrows(EtagMismatchException.class,
                () -> storage.write(p("/shared/c"), bytes("lost"), Precondition.absent()));
        assertEquals(storage.etag(p("/shared/c")), exists.current());
        storage.write(p("/shared/new"), bytes("made"), Precondition.absent());
        assertEquals("made", text("/shared/new"));
        EtagMismatchException missing = assertThrows(EtagMismatchException.class,
                () -> storage.write(p("/shared/none"), bytes("x"), Precondition.matching(v1)));
        assertNull(missing.current());
        assertFalse(storage.exists(p("/shared/none")));
    }

    // ---- what a mount needs: open files ----

    @Test
    void positionalReadAndWriteWithHolesReadAsZeros() throws IOException {
        storage.mkdir(p("/shared"));
        try (FileHandle h = open("/shared/f", OpenFlag.READ, OpenFlag.WRITE, OpenFlag.CREATE)) {
            assertEquals(5, write(h, "hello", 0));
            assertEquals(5, write(h, "world", 10));
            assertEquals(15, h.size());
            assertEquals("hello\0\0\0\0\0world", read(h, 0, 64));
            assertEquals("lo\0", read(h, 3, 3));
            assertEquals(5, write(h, "HELLO", 0));
            assertEquals("HELLO", read(h, 0, 5));
            assertEquals(0, h.read(ByteBuffer.allocate(4), 15));
            assertEquals(0, h.read(ByteBuffer.allocate(4), 100));
        }
        assertEquals("HELLO\0\0\0\0\0world", text("/shared/f"));
    }

    @Test
    void writesAreVisibleToOtherHandlesAtOnce() throws IOException {
        storage.write(p("/shared/f"), bytes("...."));
        try (FileHandle w = open("/shared/f", OpenFlag.WRITE); FileHandle r = open("/shared/f", OpenFlag.READ)) {
            write(w, "ab", 1);
            assertEquals(".ab.", read(r, 0, 10));
        }
    }

    @Test
    void appendHandleWritesAtTheEndWhateverThePosition() throws IOException {
        storage.write(p("/shared/log"), bytes("one\n"));
        try (FileHandle h = open("/shared/log", OpenFlag.WRITE, OpenFlag.APPEND)) {
            write(h, "two\n", 0);
            write(h, "three\n", 1);
            assertEquals(14, h.size());
        }
        assertEquals("one\ntwo\nthree\n", text("/shared/log"));
    }

    @Test
    void readAppendHandleCanAlsoRead() throws IOException {
        storage.write(p("/shared/log"), bytes("one\n"));
        try (FileHandle h = open("/shared/log", OpenFlag.READ, OpenFlag.APPEND)) {
            assertEquals("one\n", read(h, 0, 100));
            write(h, "two\n", 0);
            assertEquals("one\ntwo\n", read(h, 0, 100));
        }
    }

    @Test
    void createNewFailsOnExisting() throws IOException {
        storage.write(p("/shared/f"), bytes("keep"));
        assertThrows(FileAlreadyExistsException.class,
                () -> open("/shared/f", OpenFlag.WRITE, OpenFlag.CREATE_NEW).close());
        assertEquals("keep", text("/shared/f"));
        open("/shared/g", OpenFlag.WRITE, OpenFlag.CREATE_NEW).close();
        assertEquals(0, storage.metadata(p("/shared/g")).size());
    }

    @Test
    void truncateOnOpen() throws IOException {
        storage.write(p("/shared/f"), bytes("old content"));
        try (FileHandle h = open("/shared/f", OpenFlag.WRITE, OpenFlag.TRUNCATE)) {
            assertEquals(0, h.size());
            write(h, "new", 0);
        }
        assertEquals("new", text("/shared/f"));
    }

    @Test
    void openMissingWithoutCreateIsNoSuchFile() throws IOException {
        storage.mkdir(p("/shared"));
        assertThrows(NoSuchFileException.class, () -> open("/shared/none", OpenFlag.READ).close());
        assertThrows(NoSuchFileException.class, () -> open("/shared/none", OpenFlag.WRITE).close());
        assertThrows(NoSuchFileException.class,
                () -> open("/shared/no/such", OpenFlag.WRITE, OpenFlag.CREATE).close());
        assertFalse(storage.exists(p("/shared/none")));
    }

    @Test
    void openDirectoryIsIsDirectory() throws IOException {
        storage.mkdir(p("/shared/d"));
        assertThrows(IsDirectoryException.class, () -> open("/shared/d", OpenFlag.READ).close());
        assertThrows(IsDirectoryException.class, () -> open("/shared/d", OpenFlag.WRITE).close());
        assertThrows(IsDirectoryException.class, () -> open("/shared/d", OpenFlag.WRITE, OpenFlag.CREATE).close());
    }

    @Test
    void openWithExecutableCreateMode() throws IOException {
        storage.mkdir(p("/shared"));
        storage.open(p("/shared/x"), flags(OpenFlag.WRITE, OpenFlag.CREATE), 0755).close();
        storage.open(p("/shared/y"), flags(OpenFlag.WRITE, OpenFlag.CREATE), 0644).close();
        assertEquals(0111, storage.metadata(p("/shared/x")).mode() & 0111);
        assertEquals(0, storage.metadata(p("/shared/y")).mode() & 0111);
    }

    @Test
    void entries() throws IOException {
        storage.write(p("/shared/d/b"), bytes("b"));
        storage.mkdir(p("/shared/d/a"));
        assertEquals(Set.of(new Entry("a", EntryKind.DIRECTORY), new Entry("b", EntryKind.FILE)),
                new HashSet<>(storage.entries(p("/shared/d"))));
        assertEquals(List.of(), storage.entries(p("/shared/d/a")));
    }

    @Test
    void forEachEntryHandsOverEveryNameAsBytesAndStopsWhenTheSinkSaysSo() throws IOException {
        storage.mkdir(p("/shared/d/sub"));
        storage.write(p("/shared/d/a"), bytes("1"));
        storage.write(p("/shared/d/üß"), bytes("2"));
        Map<String, EntryKind> seen = new HashMap<>();
        storage.forEachEntry(p("/shared/d"), (name, offset, length, kind, inode) -> {
            assertNull(seen.put(new String(name, offset, length, UTF_8), kind));
            return true;
        });
        assertEquals(Map.of("a", EntryKind.FILE, "üß", EntryKind.FILE, "sub", EntryKind.DIRECTORY), seen);
        int[] calls = {0};
        storage.forEachEntry(p("/shared/d"), (name, offset, length, kind, inode) -> ++calls[0] < 2);
        assertEquals(2, calls[0]);
        assertThrows(NoSuchFileException.class, () -> storage.forEachEntry(p("/shared/none"), (n, o, l, k, i) -> true));
    }

    @Test
    void aListingGivesEachNameTheInodeNumberItsMetadataGives() throws IOException {
        // readdir's d_ino: `find -inum` and Python's os.scandir take it for st_ino
        storage.mkdir(p("/shared/d/sub"));
        storage.write(p("/shared/d/a"), bytes("1"));
        Map<String, Long> listed = new HashMap<>();
        storage.forEachEntry(p("/shared/d"), (name, offset, length, kind, inode) -> {
            listed.put(new String(name, offset, length, UTF_8), inode);
            return true;
        });
        assertEquals(java.util.Set.of("a", "sub"), listed.keySet());
        for (String name : listed.keySet()) {
            assertEquals(storage.metadata(p("/shared/d/" + name)).inode(), listed.get(name), name);
        }
    }

    @Test
    void truncateUpZeroFillsAndDownCuts() throws IOException {
        storage.write(p("/shared/f"), bytes("abcdef"));
        storage.truncate(p("/shared/f"), 3);
        assertEquals("abc", text("/shared/f"));
        storage.truncate(p("/shared/f"), 6);
        assertEquals("abc\0\0\0", text("/shared/f"));
        assertEquals(6, storage.metadata(p("/shared/f")).size());
        storage.truncate(p("/shared/f"), 0);
        assertEquals(0, storage.read(p("/shared/f")).length);
    }

    @Test
    void aSparseFileCutInsideItsUnwrittenTailKeepsItsBytesAndReadsZerosPastThem() throws IOException {
        // fsx found it: a memory file grown by truncate, then cut to a length its chunks never reached
        storage.write(p("/shared/f"), bytes("abc"));
        try (FileHandle h = open("/shared/f", OpenFlag.READ, OpenFlag.WRITE)) {
            h.truncate(300_000);
            h.truncate(200_000);
            assertEquals(200_000, h.size());
            write(h, "xyz", 250_000);
            assertEquals(250_003, h.size());
            assertEquals("abc\0\0", read(h, 0, 5));
            assertEquals("\0\0xyz", read(h, 249_998, 10));
        }
    }

    @Test
    void aFileEmptiedThenWrittenFarAndNearKeepsItsNearBytesThroughACut() throws IOException {
        // a randomized tester's: a memory file emptied kept its small first chunk's capacity, and
        // after a write past 64 KiB and one at 0, a cut kept 64 of the 3,000 bytes at 0
        storage.write(p("/shared/f"), bytes("a"));
        String near = "n".repeat(3000);
        try (FileHandle h = open("/shared/f", OpenFlag.READ, OpenFlag.WRITE)) {
            h.truncate(0);
            write(h, "F", 65_536);
            write(h, near, 0);
            assertEquals(near, read(h, 0, 3000));
            h.truncate(4587);
            assertEquals(near, read(h, 0, 3000));
            assertEquals(4587, h.size());
        }
        assertEquals(near, new String(storage.read(p("/shared/f")), UTF_8).substring(0, 3000));
    }

    @Test
    void truncateThroughHandle() throws IOException {
        storage.write(p("/shared/f"), bytes("abcdef"));
        try (FileHandle h = open("/shared/f", OpenFlag.READ, OpenFlag.WRITE)) {
            h.truncate(2);
            assertEquals(2, h.size());
            h.truncate(4);
            assertEquals("ab\0\0", read(h, 0, 10));
            h.sync(true);
        }
    }

    @Test
    void allocateGrowsKeepsTheSizeOrPunchesAHoleAsItsModeSays() throws IOException {
        storage.write(p("/shared/f"), bytes("abcdef"));
        try (FileHandle h = open("/shared/f", OpenFlag.READ, OpenFlag.WRITE)) {
            h.allocate(Linux.FALLOC_FL_KEEP_SIZE, 0, 1 << 20);
            assertEquals(6, h.size());
            h.allocate(Linux.FALLOC_FL_PUNCH_HOLE | Linux.FALLOC_FL_KEEP_SIZE, 1, 2);
            assertEquals("a\0\0def", read(h, 0, 10));
            h.allocate(0, 4, 6);
            assertEquals(10, h.size());
            assertEquals("a\0\0def\0\0\0\0", read(h, 0, 20));
            h.allocate(Linux.FALLOC_FL_ZERO_RANGE, 8, 4);
            assertEquals(12, h.size());
        }
        assertEquals(12, storage.metadata(p("/shared/f")).size());
    }

    @Test
    void allocateRefusesWhatFallocateRefuses() throws IOException {
        storage.write(p("/shared/f"), bytes("abc"));
        try (FileHandle h = open("/shared/f", OpenFlag.READ, OpenFlag.WRITE)) {
            FileSystemException noLength = assertThrows(FileSystemException.class, () -> h.allocate(0, 0, 0));
            assertEquals("Invalid argument", noLength.getReason());
            FileSystemException growingHole = assertThrows(FileSystemException.class,
                    () -> h.allocate(Linux.FALLOC_FL_PUNCH_HOLE, 0, 1));
            assertEquals("Operation not supported", growingHole.getReason());
            assertEquals("abc", read(h, 0, 10));
        }
    }

    @Test
    void truncateMissingOrDirectoryFails() throws IOException {
        storage.mkdir(p("/shared/d"));
        assertThrows(NoSuchFileException.class, () -> storage.truncate(p("/shared/none"), 0));
        assertThrows(IsDirectoryException.class, () -> storage.truncate(p("/shared/d"), 0));
    }

    @Test
    void createDirectory() throws IOException {
        storage.mkdir(p("/shared"));
        storage.createDirectory(p("/shared/d"));
        assertTrue(storage.metadata(p("/shared/d")).isDirectory());
        assertThrows(FileAlreadyExistsException.class, () -> storage.createDirectory(p("/shared/d")));
        assertThrows(NoSuchFileException.class, () -> storage.createDirectory(p("/shared/no/d")));
        assertFalse(storage.exists(p("/shared/no")));
        storage.write(p("/shared/f"), bytes("x"));
        assertThrows(FileAlreadyExistsException.class, () -> storage.createDirectory(p("/shared/f")));
    }

    @Test
    void removeFile() throws IOException {
        storage.write(p("/shared/f"), bytes("x"));
        storage.mkdir(p("/shared/d"));
        storage.removeFile(p("/shared/f"));
        assertFalse(storage.exists(p("/shared/f")));
        assertThrows(IsDirectoryException.class, () -> storage.removeFile(p("/shared/d")));
        assertThrows(NoSuchFileException.class, () -> storage.removeFile(p("/shared/f")));
        assertTrue(storage.exists(p("/shared/d")));
    }

    @Test
    void removeDirectory() throws IOException {
        storage.write(p("/shared/full/f"), bytes("x"));
        storage.mkdir(p("/shared/empty"));
        assertThrows(DirectoryNotEmptyException.class, () -> storage.removeDirectory(p("/shared/full")));
        assertThrows(NotDirectoryException.class, () -> storage.removeDirectory(p("/shared/full/f")));
        assertThrows(NoSuchFileException.class, () -> storage.removeDirectory(p("/shared/none")));
        storage.removeDirectory(p("/shared/empty"));
        assertFalse(storage.exists(p("/shared/empty")));
        assertEquals("x", text("/shared/full/f"));
    }

    @Test
    void renameReplacesAFileAtomically() throws IOException {
        storage.write(p("/shared/new"), bytes("new"));
        storage.write(p("/shared/target"), bytes("old"));
        try (FileHandle old = open("/shared/target", OpenFlag.READ)) {
            storage.rename(p("/shared/new"), p("/shared/target"));
            assertEquals("new", text("/shared/target"));
            assertFalse(storage.exists(p("/shared/new")));
            assertEquals("old", read(old, 0, 10));
        }
    }

    @Test
    void renameDirectoryOverEmptyDirectory() throws IOException {
        storage.write(p("/shared/src/f"), bytes("f"));
        storage.mkdir(p("/shared/dst"));
        storage.rename(p("/shared/src"), p("/shared/dst"));
        assertEquals("f", text("/shared/dst/f"));
        assertFalse(storage.exists(p("/shared/src")));
    }

    @Test
    void renameDirectoryOverNonEmptyDirectoryFails() throws IOException {
        storage.write(p("/shared/src/f"), bytes("f"));
        storage.write(p("/shared/dst/g"), bytes("g"));
        assertThrows(DirectoryNotEmptyException.class, () -> storage.rename(p("/shared/src"), p("/shared/dst")));
        assertEquals("f", text("/shared/src/f"));
        assertEquals("g", text("/shared/dst/g"));
    }

    @Test
    void renameFileOverDirectoryFails() throws IOException {
        storage.write(p("/shared/f"), bytes("f"));
        storage.mkdir(p("/shared/d"));
        assertThrows(IsDirectoryException.class, () -> storage.rename(p("/shared/f"), p("/shared/d")));
        assertThrows(NotDirectoryException.class, () -> storage.rename(p("/shared/d"), p("/shared/f")));
        assertEquals("f", text("/shared/f"));
        assertTrue(storage.metadata(p("/shared/d")).isDirectory());
    }

    @Test
    void renameWithoutReplacingRefusesAnyTargetAndMovesOtherwise() throws IOException {
        storage.write(p("/shared/a"), bytes("a"));
        storage.write(p("/shared/b"), bytes("b"));
        storage.mkdir(p("/shared/d"));
        for (String taken : List.of("/shared/b", "/shared/d")) {
            assertThrows(FileAlreadyExistsException.class, () -> storage.rename(p("/shared/a"), p(taken), RenameMode.NO_REPLACE));
        }
        assertEquals("a", text("/shared/a"));
        assertEquals("b", text("/shared/b"));
        storage.rename(p("/shared/a"), p("/shared/c"), RenameMode.NO_REPLACE);
        assertEquals("a", text("/shared/c"));
        assertFalse(storage.exists(p("/shared/a")));
    }

    /** Whether the store can swap two names in one step (RENAME_EXCHANGE); one that cannot says EINVAL. */
    protected boolean exchanges() {
        return true;
    }

    @Test
    void anExchangeSwapsAFileAndADirectoryOrChangesNothing() throws IOException {
        storage.write(p("/shared/f"), bytes("f"));
        storage.write(p("/shared/d/inner"), bytes("inner"));
        if (!exchanges()) {
            FileSystemException e = assertThrows(FileSystemException.class,
                    () -> storage.rename(p("/shared/f"), p("/shared/d"), RenameMode.EXCHANGE));
            assertEquals(Linux.EINVAL, Errors.errno(e));
            assertEquals("f", text("/shared/f"));
            assertEquals("inner", text("/shared/d/inner"));
            return;
        }
        storage.rename(p("/shared/f"), p("/shared/d"), RenameMode.EXCHANGE);
        assertEquals("f", text("/shared/d"));
        assertEquals("inner", text("/shared/f/inner"));
        assertThrows(NoSuchFileException.class, () -> storage.rename(p("/shared/d"), p("/shared/none"), RenameMode.EXCHANGE));
        assertEquals("f", text("/shared/d"));
    }

    @Test
    void renameDirectoryIntoItselfFails() throws IOException {
        storage.mkdir(p("/shared/d/sub"));
        assertThrows(IOException.class, () -> storage.rename(p("/shared/d"), p("/shared/d/sub/x")));
        assertTrue(storage.exists(p("/shared/d/sub")));
    }

    /**
     * Whether the store keeps hard links. One that cannot (an object store: one object per name) must
     * refuse link(2) as a file system without them does, with EPERM's "Operation not permitted".
     */
    protected boolean hardLinks() {
        return true;
    }

    @Test
    void hardLinkSharesContent() throws IOException {
        storage.write(p("/shared/a"), bytes("one"));
        if (!hardLinks()) {
            FileSystemException refused = assertThrows(FileSystemException.class,
                    () -> storage.link(p("/shared/a"), p("/shared/b")));
            assertTrue(refused.getMessage().contains("Operation not permitted"), refused.getMessage());
            assertFalse(storage.exists(p("/shared/b")));
            assertEquals(1, storage.metadata(p("/shared/a")).links());
            return;
        }
        storage.link(p("/shared/a"), p("/shared/b"));
        assertEquals(2, storage.metadata(p("/shared/a")).links());
        assertEquals(2, storage.metadata(p("/shared/b")).links());
        assertEquals(storage.metadata(p("/shared/a")).inode(), storage.metadata(p("/shared/b")).inode());
        storage.append(p("/shared/b"), bytes("+two"));
        assertEquals("one+two", text("/shared/a"));
        storage.removeFile(p("/shared/a"));
        assertEquals(1, storage.metadata(p("/shared/b")).links());
        assertEquals("one+two", text("/shared/b"));
    }

    @Test
    void linkFailures() throws IOException {
        storage.write(p("/shared/a"), bytes("a"));
        storage.write(p("/shared/b"), bytes("b"));
        storage.mkdir(p("/shared/d"));
        if (hardLinks()) {
            assertThrows(FileAlreadyExistsException.class, () -> storage.link(p("/shared/a"), p("/shared/b")));
        } else {
            assertThrows(IOException.class, () -> storage.link(p("/shared/a"), p("/shared/b")));
        }
        assertThrows(NoSuchFileException.class, () -> storage.link(p("/shared/none"), p("/shared/c")));
        assertThrows(IOException.class, () -> storage.link(p("/shared/d"), p("/shared/e")));
        assertFalse(storage.exists(p("/shared/e")));
        assertEquals("b", text("/shared/b"));
    }

    /** Whether the store opens a file through a handle of it (an S3 store opens by name only: null). */
    protected boolean reopens() {
        return true;
    }

    @Test
    void aFileIsOpenedAgainThroughAHandleOfItWhateverItsNames() throws IOException {
        storage.write(p("/shared/a"), bytes("abc"));
        try (FileHandle h = open("/shared/a", OpenFlag.READ, OpenFlag.WRITE)) {
            storage.rename(p("/shared/a"), p("/shared/b"));
            storage.removeFile(p("/shared/b"));
            FileHandle again = h.reopen(flags(OpenFlag.READ));
            if (!reopens()) {
                assertNull(again);
                return;
            }
            try (again) {
                assertEquals("abc", read(again, 0, 10));
                assertEquals(h.inode(), again.inode());
                write(h, "de", 3);
                assertEquals("abcde", read(again, 0, 10));
            }
            try (FileHandle emptied = h.reopen(flags(OpenFlag.WRITE, OpenFlag.TRUNCATE))) {
                assertEquals(0, h.size());
                assertEquals(1, write(emptied, "z", 0));
            }
            assertEquals("z", read(h, 0, 10));
        }
        assertEquals(List.of(), storage.list(p("/shared")));
    }

    // ---- files with no name (open(2) with O_TMPFILE) ----

    @Test
    void anUnnamedFileIsReadAndWrittenWithoutANameAndGoesWithItsHandle() throws IOException {
        storage.mkdir(p("/shared/d"));
        if (!hardLinks()) {
            FileSystemException refused = assertThrows(FileSystemException.class, () -> storage.openUnnamed(p("/shared/d"), 0644));
            assertEquals(Linux.EOPNOTSUPP, Errors.errno(refused));
            assertEquals(List.of(), storage.list(p("/shared/d")));
            return;
        }
        try (FileHandle h = storage.openUnnamed(p("/shared/d"), 0644)) {
            assertEquals(5, write(h, "draft", 0));
            assertEquals("draft", read(h, 0, 10));
            assertEquals(0, h.metadata().links());
            assertEquals(5, h.metadata().size());
            assertEquals(List.of(), storage.list(p("/shared/d")));
        }
        assertEquals(List.of(), storage.list(p("/shared/d")));
        assertThrows(NoSuchFileException.class, () -> storage.openUnnamed(p("/shared/none"), 0644));
    }

    @Test
    void anUnnamedFileLinkedIsAFileLikeAnyOtherAndStaysAfterItsHandle() throws IOException {
        if (!hardLinks()) {
            return; // no unnamed files: see the test above
        }
        storage.write(p("/shared/taken"), bytes("kept"));
        try (FileHandle h = storage.openUnnamed(p("/shared"), 0755)) {
            write(h, "whole", 0);
            assertThrows(FileAlreadyExistsException.class, () -> storage.link(h, p("/shared/taken")));
            storage.link(h, p("/shared/ready"));
            assertEquals(1, h.metadata().links());
            assertEquals(h.metadata().inode(), storage.metadata(p("/shared/ready")).inode());
            write(h, "!", 5);
            assertEquals("whole!", text("/shared/ready"));
            storage.link(h, p("/shared/also"));
            assertEquals(2, storage.metadata(p("/shared/ready")).links());
        }
        assertEquals("whole!", text("/shared/ready"));
        assertEquals("whole!", text("/shared/also"));
        assertEquals(0111, storage.metadata(p("/shared/ready")).mode() & 0111, "the execute bits it was made with");
        assertEquals("kept", text("/shared/taken"));
    }

    @Test
    void aFileWhoseEveryNameIsGoneIsNotNamedAgainThroughItsHandle() throws IOException {
        if (!hardLinks()) {
            return;
        }
        storage.write(p("/shared/a"), bytes("a"));
        try (FileHandle h = open("/shared/a", OpenFlag.READ, OpenFlag.WRITE)) {
            storage.link(h, p("/shared/b")); // still named: a second name, as linkat of /proc/self/fd/N
            assertEquals("a", text("/shared/b"));
            storage.removeFile(p("/shared/a"));
            storage.removeFile(p("/shared/b"));
            assertThrows(NoSuchFileException.class, () -> storage.link(h, p("/shared/c")));
        }
        assertFalse(storage.exists(p("/shared/c")));
    }

    // ---- extended attributes (user.* names: the mount refuses other namespaces first) ----

    /**
     * Whether the store keeps extended attributes. One that cannot must refuse setxattr(2) with
     * EOPNOTSUPP, keep nothing, and answer as for a file that has none (ENODATA, no names).
     */
    protected boolean xattrs() {
        return true;
    }

    /**
     * Whether directories keep them too. A store that keeps them on files only (an object store,
     * where a directory may have no object) must refuse a directory's with EOPNOTSUPP.
     */
    protected boolean directoryXattrs() {
        return xattrs();
    }

    /** The user.* names of {@code path}'s attributes, sorted (a store file may carry labels of its own file system). */
    private List<String> userXattrs(String path) throws IOException {
        return storage.xattrNames(p(path)).stream().filter(n -> n.startsWith("user.")).sorted().toList();
    }

    private int errnoOf(org.junit.jupiter.api.function.Executable call) {
        return Errors.errno(assertThrows(IOException.class, call));
    }

    @Test
    void extendedAttributesAreSetReadListedAndRemoved() throws IOException {
        storage.write(p("/shared/f"), bytes("content"));
        storage.mkdir(p("/shared/d"));
        if (!xattrs()) {
            assertEquals(Linux.EOPNOTSUPP, errnoOf(() -> storage.setXattr(p("/shared/f"), "user.a", bytes("1"), XattrMode.SET)));
            assertEquals(List.of(), userXattrs("/shared/f"));
            assertEquals(Linux.ENODATA, errnoOf(() -> storage.xattr(p("/shared/f"), "user.a")));
            assertEquals(Linux.ENODATA, errnoOf(() -> storage.removeXattr(p("/shared/f"), "user.a")));
            return;
        }
        storage.setXattr(p("/shared/f"), "user.a", bytes("1"), XattrMode.SET);
        storage.setXattr(p("/shared/f"), "user.empty", new byte[0], XattrMode.CREATE);
        byte[] large = new byte[1000]; // more than one first guess at a value's size
        Arrays.fill(large, (byte) 'x');
        storage.setXattr(p("/shared/f"), "user.large", large, XattrMode.SET);
        if (directoryXattrs()) {
            storage.setXattr(p("/shared/d"), "user.dir", bytes("d"), XattrMode.SET);
            assertEquals(List.of("user.dir"), userXattrs("/shared/d"));
        } else {
            assertEquals(Linux.EOPNOTSUPP, errnoOf(() -> storage.setXattr(p("/shared/d"), "user.dir", bytes("d"), XattrMode.SET)));
            assertEquals(List.of(), userXattrs("/shared/d"));
        }
        assertEquals("1", new String(storage.xattr(p("/shared/f"), "user.a"), UTF_8));
        assertEquals(0, storage.xattr(p("/shared/f"), "user.empty").length);
        assertArrayEquals(large, storage.xattr(p("/shared/f"), "user.large"));
        assertEquals(List.of("user.a", "user.empty", "user.large"), userXattrs("/shared/f"));
        assertEquals("content", text("/shared/f"), "the content is untouched");

        assertEquals(Linux.EEXIST, errnoOf(() -> storage.setXattr(p("/shared/f"), "user.a", bytes("2"), XattrMode.CREATE)));
        assertEquals(Linux.ENODATA, errnoOf(() -> storage.setXattr(p("/shared/f"), "user.b", bytes("2"), XattrMode.REPLACE)));
        assertEquals(List.of("user.a", "user.empty", "user.large"), userXattrs("/shared/f"));
        storage.setXattr(p("/shared/f"), "user.a", bytes("2"), XattrMode.REPLACE);
        assertEquals("2", new String(storage.xattr(p("/shared/f"), "user.a"), UTF_8));

        storage.removeXattr(p("/shared/f"), "user.a");
        assertEquals(Linux.ENODATA, errnoOf(() -> storage.xattr(p("/shared/f"), "user.a")));
        assertEquals(Linux.ENODATA, errnoOf(() -> storage.removeXattr(p("/shared/f"), "user.a")));
        assertEquals(List.of("user.empty", "user.large"), userXattrs("/shared/f"));
        assertThrows(NoSuchFileException.class, () -> storage.xattr(p("/shared/none"), "user.a"));
        assertThrows(NoSuchFileException.class, () -> storage.setXattr(p("/shared/none"), "user.a", bytes("1"), XattrMode.SET));
        assertFalse(storage.exists(p("/shared/none")));
    }

    @Test
    void extendedAttributesGoWithTheFileNotItsName() throws IOException {
        storage.write(p("/shared/f"), bytes("content"));
        if (!xattrs()) {
            return; // the refusal is extendedAttributesAreSetReadListedAndRemoved's
        }
        storage.setXattr(p("/shared/f"), "user.origin", bytes("here"), XattrMode.SET);
        storage.rename(p("/shared/f"), p("/shared/g"));
        assertEquals("here", new String(storage.xattr(p("/shared/g"), "user.origin"), UTF_8));
        if (hardLinks()) {
            storage.link(p("/shared/g"), p("/shared/h"));
            storage.setXattr(p("/shared/h"), "user.second", bytes("2"), XattrMode.SET);
            assertEquals(List.of("user.origin", "user.second"), userXattrs("/shared/g"));
        }
        storage.write(p("/shared/f"), bytes("new"));
        assertEquals(List.of(), userXattrs("/shared/f"), "a new file at the old name has none");
    }

    /**
     * Whether an open file's attributes are reached through its handle ({@link FileHandle#xattr}).
     * A store that reaches them only by a name says ESTALE instead: never another file's.
     */
    protected boolean xattrsThroughOpenFiles() {
        return xattrs();
    }

    @Test
    void extendedAttributesThroughAnOpenFileAreThatFilesWhateverBecameOfItsName() throws IOException {
        storage.write(p("/shared/f"), bytes("old"));
        try (FileHandle h = open("/shared/f")) {
            storage.write(p("/shared/f.new"), bytes("new"));
            storage.rename(p("/shared/f.new"), p("/shared/f")); // os.replace onto its name
            if (!xattrsThroughOpenFiles()) {
                assertEquals(Linux.ESTALE, errnoOf(() -> h.setXattr("user.k", bytes("v"), XattrMode.SET)));
                assertEquals(List.of(), userXattrs("/shared/f"));
                return;
            }
            h.setXattr("user.k", bytes("v"), XattrMode.SET);
            assertEquals("v", new String(h.xattr("user.k"), UTF_8));
            assertEquals(List.of("user.k"), h.xattrNames().stream().filter(n -> n.startsWith("user.")).toList());
            assertEquals(List.of(), userXattrs("/shared/f"), "not the file that has its name now");
            assertEquals(Linux.EEXIST, errnoOf(() -> h.setXattr("user.k", bytes("w"), XattrMode.CREATE)));
            h.removeXattr("user.k");
            assertEquals(Linux.ENODATA, errnoOf(() -> h.xattr("user.k")));
            assertEquals(Linux.ENODATA, errnoOf(() -> h.removeXattr("user.k")));
        }
    }

    // ---- symbolic links, fifos and sockets: names the store holds and never follows or opens ----

    /**
     * Whether the store holds fifos and sockets. One that cannot (an object store has only objects)
     * must refuse mknod(2) with EPERM's {@link OperationNotPermittedException}.
     */
    protected boolean fifosAndSockets() {
        return true;
    }

    /** For a store without fifos and sockets: asserts the refusal, that nothing was made, and says so. */
    private boolean fifosAndSocketsRefused() throws IOException {
        if (fifosAndSockets()) {
            return false;
        }
        storage.mkdir(p("/shared"));
        assertThrows(OperationNotPermittedException.class,
                () -> storage.createNode(p("/shared/fifo"), EntryKind.FIFO, 0644));
        assertThrows(OperationNotPermittedException.class,
                () -> storage.createNode(p("/shared/sock"), EntryKind.SOCKET, 0644));
        assertEquals(List.of(), storage.list(p("/shared")));
        return true;
    }


    @Test
    void aSymbolicLinkIsStoredAsItsTextAndReportedNotFollowed() throws IOException {
        storage.write(p("/shared/f"), bytes("content"));
        storage.createSymlink(p("/shared/l"), "f");
        storage.createSymlink(p("/shared/dangling"), "../nowhere/at/all");
        Metadata m = storage.metadata(p("/shared/l"));
        assertEquals(EntryKind.SYMLINK, m.kind());
        assertEquals(1, m.size()); // lstat: the target's length
        assertEquals("f", storage.readLink(p("/shared/l")));
        assertEquals("../nowhere/at/all", storage.readLink(p("/shared/dangling")));
        assertEquals(17, storage.metadata(p("/shared/dangling")).size());
        assertTrue(storage.exists(p("/shared/l")));
        assertEquals(List.of(new Entry("dangling", EntryKind.SYMLINK), new Entry("f", EntryKind.FILE),
                new Entry("l", EntryKind.SYMLINK)), storage.list(p("/shared")));
        Map<String, EntryKind> kinds = new HashMap<>();
        storage.entries(p("/shared")).forEach(e -> kinds.put(e.name(), e.kind()));
        assertEquals(Map.of("dangling", EntryKind.SYMLINK, "f", EntryKind.FILE, "l", EntryKind.SYMLINK), kinds);
        // never followed for data
        assertThrows(IOException.class, () -> storage.read(p("/shared/l")));
        assertThrows(IOException.class, () -> open("/shared/l", OpenFlag.READ).close());
        assertThrows(IOException.class, () -> open("/shared/l", OpenFlag.WRITE, OpenFlag.CREATE).close());
        assertThrows(IOException.class, () -> storage.append(p("/shared/l"), bytes("x")));
        assertThrows(IOException.class, () -> storage.truncate(p("/shared/l"), 0));
        assertThrows(IOException.class, () -> storage.copy(p("/shared/l"), p("/shared/copy")));
        assertEquals("content", text("/shared/f"));
        assertThrows(java.nio.file.NotLinkException.class, () -> storage.readLink(p("/shared/f")));
    }

    @Test
    void aSymbolicLinkIsNeverADirectoryOnTheWay() throws IOException {
        storage.write(p("/shared/d/x"), bytes("x"));
        storage.createSymlink(p("/shared/via"), "d");
        assertThrows(IOException.class, () -> storage.read(p("/shared/via/x")));
        assertThrows(IOException.class, () -> storage.metadata(p("/shared/via/x")));
        assertThrows(IOException.class, () -> storage.list(p("/shared/via")));
        assertThrows(IOException.class, () -> storage.write(p("/shared/via/y"), bytes("y")));
        assertThrows(IOException.class, () -> storage.mkdir(p("/shared/via/sub")));
        assertThrows(IOException.class, () -> storage.createSymlink(p("/shared/via/l"), "x"));
        assertFalse(storage.exists(p("/shared/d/y")));
        assertEquals(List.of(new Entry("x", EntryKind.FILE)), storage.list(p("/shared/d")));
    }

    @Test
    void creatingASymbolicLinkFailsAsSymlinkDoes() throws IOException {
        storage.write(p("/shared/f"), bytes("f"));
        assertThrows(FileAlreadyExistsException.class, () -> storage.createSymlink(p("/shared/f"), "x"));
        assertThrows(NoSuchFileException.class, () -> storage.createSymlink(p("/shared/missing/l"), "x"));
        assertThrows(NoSuchFileException.class, () -> storage.createSymlink(p("/shared/empty"), ""));
        assertFalse(storage.exists(p("/shared/empty")));
        assertEquals("f", text("/shared/f"));
    }

    @Test
    void renameHardLinkAndRemoveWorkOnLinksThemselves() throws IOException {
        storage.write(p("/shared/target"), bytes("t"));
        storage.createSymlink(p("/shared/l"), "target");
        storage.mkdir(p("/shared/sub"));
        storage.rename(p("/shared/l"), p("/shared/sub/moved"));
        assertEquals("target", storage.readLink(p("/shared/sub/moved")));
        assertFalse(storage.exists(p("/shared/l")));
        if (hardLinks()) {
            // link(2) never follows: a second name of the link itself
            storage.link(p("/shared/sub/moved"), p("/shared/sub/again"));
            Metadata a = storage.metadata(p("/shared/sub/again"));
            assertEquals(EntryKind.SYMLINK, a.kind());
            assertEquals(2, a.links());
            assertEquals(storage.metadata(p("/shared/sub/moved")).inode(), a.inode());
            assertEquals("target", storage.readLink(p("/shared/sub/again")));
            storage.removeFile(p("/shared/sub/moved"));
        } else {
            storage.rename(p("/shared/sub/moved"), p("/shared/sub/again"));
        }
        assertEquals("target", storage.readLink(p("/shared/sub/again")));
        // a write over a link replaces the link, not what it names
        storage.write(p("/shared/sub/again"), bytes("new"));
        assertEquals(EntryKind.FILE, storage.metadata(p("/shared/sub/again")).kind());
        assertEquals("t", text("/shared/target"));
        storage.createSymlink(p("/shared/sub/l2"), "../target");
        storage.delete(p("/shared/sub"));
        assertEquals("t", text("/shared/target"));
        assertFalse(storage.exists(p("/shared/sub")));
    }

    @Test
    @Timeout(10)
    void fifosAndSocketsAreNamesWithTheirKindNeverOpenedForData() throws IOException {
        if (fifosAndSocketsRefused()) {
            return;
        }
        storage.mkdir(p("/shared"));
        storage.createNode(p("/shared/fifo"), EntryKind.FIFO, 0644);
        storage.createNode(p("/shared/sock"), EntryKind.SOCKET, 0755);
        assertEquals(EntryKind.FIFO, storage.metadata(p("/shared/fifo")).kind());
        assertEquals(EntryKind.SOCKET, storage.metadata(p("/shared/sock")).kind());
        assertEquals(0, storage.metadata(p("/shared/fifo")).size());
        assertEquals(List.of(new Entry("fifo", EntryKind.FIFO), new Entry("sock", EntryKind.SOCKET)),
                storage.list(p("/shared")));
        Map<String, EntryKind> kinds = new HashMap<>();
        storage.entries(p("/shared")).forEach(e -> kinds.put(e.name(), e.kind()));
        assertEquals(Map.of("fifo", EntryKind.FIFO, "sock", EntryKind.SOCKET), kinds);
        for (String name : List.of("/shared/fifo", "/shared/sock")) {
            // refused at once: no open waits for a peer
            assertThrows(IOException.class, () -> open(name, OpenFlag.READ).close(), name);
            assertThrows(IOException.class, () -> open(name, OpenFlag.WRITE).close(), name);
            assertThrows(IOException.class, () -> storage.read(p(name)), name);
            assertThrows(IOException.class, () -> storage.append(p(name), bytes("x")), name);
        }
        assertThrows(FileAlreadyExistsException.class, () -> storage.createNode(p("/shared/fifo"), EntryKind.FIFO, 0644));
        assertThrows(NoSuchFileException.class, () -> storage.createNode(p("/shared/no/fifo"), EntryKind.FIFO, 0644));
        storage.rename(p("/shared/fifo"), p("/shared/fifo2"));
        storage.link(p("/shared/fifo2"), p("/shared/fifo3"));
        assertEquals(EntryKind.FIFO, storage.metadata(p("/shared/fifo3")).kind());
        storage.removeFile(p("/shared/fifo2"));
        storage.removeFile(p("/shared/sock"));
        assertEquals(List.of(new Entry("fifo3", EntryKind.FIFO)), storage.list(p("/shared")));
    }

    @Test
    void onlyFifosAndSocketsAreMadeByCreateNode() throws IOException {
        storage.mkdir(p("/shared"));
        for (EntryKind kind : List.of(EntryKind.OTHER, EntryKind.FILE, EntryKind.DIRECTORY, EntryKind.SYMLINK)) {
            assertThrows(OperationNotPermittedException.class, () -> storage.createNode(p("/shared/n"), kind, 0644), kind.name());
        }
        assertFalse(storage.exists(p("/shared/n")));
    }

    // ---- locks: record locks and flock per owner, shared by every handle of a file ----

    private static final long END = Long.MAX_VALUE;

    @Test
    void recordLocksOfDifferentOwnersConflictAndAnOwnersOwnNever() throws IOException {
        storage.write(p("/shared/db"), bytes("0123456789"));
        try (FileHandle h1 = open("/shared/db", OpenFlag.READ, OpenFlag.WRITE);
             FileHandle h2 = open("/shared/db", OpenFlag.READ, OpenFlag.WRITE)) {
            FileLocks a = h1.locks();
            FileLocks b = h2.locks();
            assertTrue(a.tryLock(1, LockType.WRITE, 0, 9));
            assertFalse(b.tryLock(2, LockType.READ, 5, 5));
            assertFalse(b.tryLock(2, LockType.WRITE, 9, END));
            assertTrue(b.tryLock(2, LockType.READ, 10, 20));
            LockState seen = b.testLock(2, LockType.WRITE, 0, END);
            assertEquals(LockType.WRITE, seen.type());
            assertEquals(0, seen.start());
            assertEquals(9, seen.end());
            assertEquals(-1, seen.pid());
            // an owner's own locks never conflict, through whichever handle it asks
            assertFalse(a.testLock(1, LockType.WRITE, 0, 9).conflicts());
            assertFalse(b.testLock(1, LockType.WRITE, 0, 9).conflicts());
            assertTrue(b.tryLock(1, LockType.WRITE, 0, 9));
            assertEquals(new LockState(LockType.READ, 10, 20, -1), a.testLock(1, LockType.WRITE, 0, END));
            assertEquals(LockState.unlocked(21, 30), a.testLock(1, LockType.WRITE, 21, 30));
            assertTrue(a.tryLock(1, LockType.UNLOCK, 0, END));
            assertTrue(b.tryLock(2, LockType.WRITE, 0, END));
            assertFalse(a.tryLock(1, LockType.READ, 100, 100));
        }
    }

    /**
     * F_GETLK names the process holding the conflicting lock, as on a disk (a tool asks kill(pid, 0)
     * whether the holder lives: with 0 it always seemed to), the very one whose range it gives.
     */
    @Test
    void theHolderOfAConflictingRecordLockIsNamedByItsProcess() throws IOException {
        storage.write(p("/shared/db"), bytes("0123456789"));
        try (FileHandle h1 = open("/shared/db", OpenFlag.READ, OpenFlag.WRITE);
             FileHandle h2 = open("/shared/db", OpenFlag.READ, OpenFlag.WRITE)) {
            FileLocks a = h1.locks();
            FileLocks b = h2.locks();
            assertTrue(a.tryLock(1, 4321, LockType.WRITE, 0, 9));
            assertEquals(new LockState(LockType.WRITE, 0, 9, 4321), b.testLock(2, LockType.READ, 5, 5));
            assertTrue(a.tryLock(1, LockType.UNLOCK, 0, END));
            // two readers overlapping: whichever lock is named, its own process with it
            assertTrue(a.tryLock(1, 4321, LockType.READ, 0, 9));
            assertTrue(b.tryLock(2, 4322, LockType.READ, 5, 19));
            LockState seen = a.testLock(3, LockType.WRITE, 12, 16);
            assertEquals(new LockState(LockType.READ, 5, 19, 4322), seen);
        }
    }

    /**
     * The kernel releases an open file after its close(2) has returned, and the process may lock
     * the file again through a new open meanwhile (SQLite: each connection opens and locks the
     * database and its -shm again). That late release must not take the new locks: it dropped a
     * connection's WAL write lock under it, two writers appended at once, and committed rows were
     * lost. An owner's locks go with the open it last locked through.
     */
    @Test
    void anOwnersLocksTakenThroughALaterOpenOutliveTheReleaseOfAnEarlierOne() throws IOException {
        storage.write(p("/shared/db"), bytes("0123456789"));
        try (FileHandle other = open("/shared/db", OpenFlag.READ, OpenFlag.WRITE)) {
            FileHandle earlier = open("/shared/db", OpenFlag.READ, OpenFlag.WRITE);
            assertTrue(earlier.locks().tryLock(1, LockType.WRITE, 0, 0));
            assertTrue(earlier.locks().tryLock(1, LockType.UNLOCK, 0, END));
            try (FileHandle later = open("/shared/db", OpenFlag.READ, OpenFlag.WRITE)) {
                assertTrue(later.locks().tryLock(1, LockType.WRITE, 5, 5));
                earlier.close(); // its release comes after the owner locked again
                assertFalse(other.locks().tryLock(2, LockType.WRITE, 5, 5), "the later open's lock holds");
                assertEquals(LockType.WRITE, other.locks().testLock(2, LockType.READ, 0, END).type());
            }
            assertTrue(other.locks().tryLock(2, LockType.WRITE, 0, END), "and goes with that open");
        }
    }

    @Test
    void anOwnerThatReadLockedThroughAReadOnlyHandleWriteLocksThroughAWritableOne() throws IOException {
        // SQLite: readers and the writer of one process share its locks, the readers' handles read-only
        // (a writer's RESERVED lock was EBADF, SQLITE_IOERR_LOCK, on a store file's description)
        storage.write(p("/shared/db"), bytes("0123456789"));
        try (FileHandle reader = open("/shared/db", OpenFlag.READ);
             FileHandle writer = open("/shared/db", OpenFlag.READ, OpenFlag.WRITE);
             FileHandle other = open("/shared/db", OpenFlag.READ, OpenFlag.WRITE)) {
            assertTrue(reader.locks().tryLock(1, LockType.READ, 0, 4));
            assertTrue(writer.locks().tryLock(1, LockType.WRITE, 5, 5));
            // what it held before it holds still, and the write lock excludes
            assertFalse(other.locks().tryLock(2, LockType.WRITE, 0, 0));
            assertFalse(other.locks().tryLock(2, LockType.READ, 5, 5));
            assertTrue(other.locks().tryLock(2, LockType.READ, 0, 4));
            assertEquals(new LockState(LockType.WRITE, 5, 5, -1), other.locks().testLock(2, LockType.READ, 0, END));
        }
    }

    @Test
    void readLocksShareAndAnOwnerUpgradesSplitsAndUnlocksPartOfARange() throws IOException {
        storage.write(p("/shared/db"), bytes("x"));
        try (FileHandle h1 = open("/shared/db", OpenFlag.READ, OpenFlag.WRITE);
             FileHandle h2 = open("/shared/db", OpenFlag.READ, OpenFlag.WRITE)) {
            FileLocks a = h1.locks();
            FileLocks b = h2.locks();
            assertTrue(a.tryLock(1, LockType.READ, 0, END));
            assertTrue(b.tryLock(2, LockType.READ, 0, 99));
            assertFalse(a.tryLock(1, LockType.WRITE, 10, 19)); // 2 reads there: owner 1 keeps its read lock
            assertTrue(b.tryLock(2, LockType.UNLOCK, 0, 99));
            assertTrue(a.tryLock(1, LockType.WRITE, 10, 19)); // upgrade in the middle: read 0-9, write 10-19, read 20-
            assertTrue(b.tryLock(2, LockType.READ, 0, 9));
            assertFalse(b.tryLock(2, LockType.READ, 10, 10));
            assertTrue(b.tryLock(2, LockType.READ, 20, 30));
            assertFalse(b.tryLock(2, LockType.WRITE, 5, 5));
            assertTrue(a.tryLock(1, LockType.UNLOCK, 10, 19));
            assertTrue(b.tryLock(2, LockType.WRITE, 10, 19));
            assertFalse(b.tryLock(2, LockType.WRITE, 25, 25));
            assertFalse(a.tryLock(1, LockType.READ, 10, 10));
            // an owner that holds nothing may unlock anything
            assertTrue(b.tryLock(77, LockType.UNLOCK, 0, END));
        }
    }

    @Test
    void releaseOwnerDropsThatOwnersRecordLocksAndNoFlock() throws IOException {
        storage.write(p("/shared/db"), bytes("x"));
        try (FileHandle h1 = open("/shared/db", OpenFlag.READ, OpenFlag.WRITE);
             FileHandle h2 = open("/shared/db", OpenFlag.READ, OpenFlag.WRITE)) {
            assertTrue(h1.locks().tryLock(1, LockType.WRITE, 0, 0));
            assertTrue(h1.locks().tryLock(1, LockType.WRITE, 50, END));
            assertTrue(h1.locks().tryLock(3, LockType.READ, 10, 10));
            assertTrue(h1.locks().tryFlock(1, LockType.WRITE));
            // FLUSH at close(2) of any descriptor, through any handle of the file
            h2.locks().releaseOwner(1);
            assertTrue(h2.locks().tryLock(2, LockType.WRITE, 0, 0));
            assertTrue(h2.locks().tryLock(2, LockType.WRITE, 60, 70));
            assertFalse(h2.locks().tryLock(2, LockType.WRITE, 10, 10)); // owner 3's stays
            assertFalse(h2.locks().tryFlock(2, LockType.READ)); // flock is not a record lock
            h2.locks().releaseOwner(99); // nobody: nothing happens
        }
    }

    @Test
    void closingAHandleDropsTheLocksTakenThroughIt() throws IOException {
        storage.write(p("/shared/db"), bytes("x"));
        try (FileHandle h2 = open("/shared/db", OpenFlag.READ, OpenFlag.WRITE)) {
            try (FileHandle h1 = open("/shared/db", OpenFlag.READ, OpenFlag.WRITE)) {
                assertTrue(h1.locks().tryLock(1, LockType.WRITE, 0, END));
                assertTrue(h1.locks().tryFlock(5, LockType.WRITE));
                assertFalse(h2.locks().tryLock(2, LockType.READ, 0, 0));
                assertFalse(h2.locks().tryFlock(6, LockType.READ));
            }
            assertTrue(h2.locks().tryLock(2, LockType.WRITE, 0, END));
            assertTrue(h2.locks().tryFlock(6, LockType.WRITE));
        }
        // and with the last handle gone, a new one finds nothing held
        try (FileHandle h3 = open("/shared/db", OpenFlag.READ, OpenFlag.WRITE)) {
            assertTrue(h3.locks().tryLock(3, LockType.WRITE, 0, END));
            assertTrue(h3.locks().tryFlock(7, LockType.WRITE));
        }
    }

    @Test
    void flockSharesOrExcludesTheWholeFileApartFromRecordLocks() throws IOException {
        storage.write(p("/shared/lock"), bytes(""));
        try (FileHandle h1 = open("/shared/lock", OpenFlag.READ);
             FileHandle h2 = open("/shared/lock", OpenFlag.READ);
             FileHandle h3 = open("/shared/lock", OpenFlag.READ, OpenFlag.WRITE)) {
            assertTrue(h1.locks().tryFlock(1, LockType.READ));
            assertTrue(h2.locks().tryFlock(2, LockType.READ));
            assertFalse(h3.locks().tryFlock(3, LockType.WRITE));
            assertTrue(h3.locks().tryLock(3, LockType.WRITE, 0, END)); // another kind of lock altogether
            assertTrue(h1.locks().tryFlock(1, LockType.UNLOCK));
            assertFalse(h3.locks().tryFlock(3, LockType.WRITE));
            assertTrue(h2.locks().tryFlock(2, LockType.UNLOCK));
            assertTrue(h3.locks().tryFlock(3, LockType.WRITE));
            assertFalse(h1.locks().tryFlock(1, LockType.READ));
            assertTrue(h3.locks().tryFlock(3, LockType.READ)); // a downgrade
            assertTrue(h1.locks().tryFlock(1, LockType.READ));
            assertTrue(h2.locks().tryFlock(2, LockType.UNLOCK)); // holding nothing: fine
        }
    }

    @Test
    void aLockRangeIsCheckedAsFSetlkChecksIt() throws IOException {
        storage.write(p("/shared/db"), bytes("x"));
        try (FileHandle h = open("/shared/db", OpenFlag.READ, OpenFlag.WRITE)) {
            assertThrows(FileSystemException.class, () -> h.locks().tryLock(1, LockType.WRITE, -1, 5));
            assertThrows(FileSystemException.class, () -> h.locks().tryLock(1, LockType.WRITE, 5, 4));
            assertThrows(FileSystemException.class, () -> h.locks().testLock(1, LockType.WRITE, 5, 4));
            assertTrue(h.locks().tryLock(1, LockType.WRITE, 5, 5));
        }
    }

    @Test
    void locksFollowTheFileThroughRenameAndUnlink() throws IOException {
        storage.write(p("/shared/db"), bytes("x"));
        try (FileHandle h1 = open("/shared/db", OpenFlag.READ, OpenFlag.WRITE);
             FileHandle h2 = open("/shared/db", OpenFlag.READ, OpenFlag.WRITE)) {
            storage.rename(p("/shared/db"), p("/shared/db2"));
            storage.write(p("/shared/db"), bytes("another file by the old name"));
            assertTrue(h1.locks().tryLock(1, LockType.WRITE, 0, END));
            storage.removeFile(p("/shared/db2"));
            assertFalse(h2.locks().tryLock(2, LockType.WRITE, 0, END));
            try (FileHandle other = open("/shared/db", OpenFlag.READ, OpenFlag.WRITE)) {
                assertTrue(other.locks().tryLock(2, LockType.WRITE, 0, END));
            }
        }
    }

    @Test
    void setTimesWithOneNullLeavesTheOther() throws IOException {
        storage.write(p("/shared/f"), bytes("x"));
        FileTime atime = FileTime.from(Instant.parse("2020-01-02T03:04:05.123456789Z"));
        FileTime mtime = FileTime.from(Instant.parse("2021-06-07T08:09:10.987654321Z"));
        storage.setTimes(p("/shared/f"), atime, mtime);
        assertSameMillis(atime, storage.metadata(p("/shared/f")).accessed());
        assertSameMillis(mtime, storage.metadata(p("/shared/f")).modified());

        FileTime mtime2 = FileTime.from(Instant.parse("2022-01-01T00:00:00.5Z"));
        storage.setTimes(p("/shared/f"), null, mtime2);
        assertSameMillis(atime, storage.metadata(p("/shared/f")).accessed());
        assertSameMillis(mtime2, storage.metadata(p("/shared/f")).modified());

        FileTime atime2 = FileTime.from(Instant.parse("2019-12-31T23:59:59.25Z"));
        storage.setTimes(p("/shared/f"), atime2, null);
        assertSameMillis(atime2, storage.metadata(p("/shared/f")).accessed());
        assertSameMillis(mtime2, storage.metadata(p("/shared/f")).modified());

        storage.mkdir(p("/shared/d"));
        storage.setTimes(p("/shared/d"), null, mtime);
        assertSameMillis(mtime, storage.metadata(p("/shared/d")).modified());
    }

    @Test
    void setTimesNowStampsAllThreeTimesByTheStoresClock() throws IOException {
        // touch: the kernel sends "now", and the store stamps it as it stamps its own writes, so a
        // write right after never looks older than the touch (make compares the two)
        storage.write(p("/shared/f"), bytes("x"));
        storage.setTimes(p("/shared/f"), Storage.NOW, Storage.NOW);
        assertStampedNow(storage.metadata(p("/shared/f")));
        try (FileHandle h = open("/shared/f", OpenFlag.WRITE)) {
            h.setTimes(Storage.NOW, Storage.NOW);
            assertStampedNow(h.metadata());
        }
        storage.mkdir(p("/shared/d"));
        storage.setTimes(p("/shared/d"), null, Storage.NOW);
        Metadata d = storage.metadata(p("/shared/d"));
        assertEquals(d.changed(), d.modified());
    }

    @Test
    void anEmptyFileOpenedWithTruncateIsStamped() throws IOException {
        // open(2) with O_TRUNC marks mtime and ctime of a file that existed, empty or not: make's
        // `: > stamp` recipe relies on it
        storage.write(p("/shared/stamp"), new byte[0]);
        FileTime old = FileTime.from(Instant.parse("2000-01-01T00:00:00Z"));
        storage.setTimes(p("/shared/stamp"), old, old);
        open("/shared/stamp", OpenFlag.WRITE, OpenFlag.TRUNCATE).close();
        Metadata m = storage.metadata(p("/shared/stamp"));
        assertTrue(m.modified().compareTo(old) > 0, m.modified().toString());
        assertTrue(m.changed().compareTo(old) > 0, m.changed().toString());
    }

    @Test
    void pathOfAnOpenFileFollowsItsRenames() throws IOException {
        // what the router judges a change through an open file by, where it moved behind the mount
        storage.mkdir(p("/shared/d"));
        storage.write(p("/shared/a"), bytes("x"));
        try (FileHandle h = open("/shared/a", OpenFlag.READ)) {
            assertEquals(p("/shared/a"), storage.pathOf(h));
            storage.rename(p("/shared/a"), p("/shared/d/b"));
            assertEquals(p("/shared/d/b"), storage.pathOf(h));
            storage.rename(p("/shared/d"), p("/shared/e"));
            assertEquals(p("/shared/e/b"), storage.pathOf(h));
            storage.delete(p("/shared/e/b"));
            VfsPath gone = storage.pathOf(h);
            assertTrue(gone == null || gone.equals(p("/shared/e/b")), "no name: unknown, or the last it had: " + gone);
        }
    }

    private static void assertStampedNow(Metadata m) {
        assertEquals(m.changed(), m.modified(), "one now for mtime and ctime");
        assertEquals(m.modified(), m.accessed(), "one now for atime and mtime");
        assertTrue(m.modified().toInstant().isAfter(Instant.parse("2000-01-01T00:00:00Z")), m.modified().toString());
    }

    private static void assertSameMillis(FileTime expected, FileTime actual) {
        assertEquals(expected.toInstant().truncatedTo(ChronoUnit.MILLIS),
                actual.toInstant().truncatedTo(ChronoUnit.MILLIS));
    }

    @Test
    void setExecutableOnlyChangesExecuteBits() throws IOException {
        storage.write(p("/shared/f"), bytes("x"));
        int before = storage.metadata(p("/shared/f")).mode();
        storage.setExecutable(p("/shared/f"), 0777);
        assertEquals(before | 0111, storage.metadata(p("/shared/f")).mode());
        storage.setExecutable(p("/shared/f"), 0100);
        assertEquals((before & ~0111) | 0100, storage.metadata(p("/shared/f")).mode());
        storage.setExecutable(p("/shared/f"), 0);
        assertEquals(before & ~0111, storage.metadata(p("/shared/f")).mode());
        storage.setExecutable(p("/shared/f"), 0666);
        assertEquals(before & ~0111, storage.metadata(p("/shared/f")).mode());
    }

    /**
     * A chmod of a fifo or a socket is taken and changes nothing, as the read and write bits of a
     * file: `mkfifo -m 600` (mknod, then chmod) failed with "Operation not permitted", the fifo made.
     */
    @Test
    void aChmodOfAFifoOrASocketIsTakenAndChangesNothing() throws IOException {
        if (fifosAndSocketsRefused()) {
            return;
        }
        storage.mkdir(p("/shared"));
        storage.createNode(p("/shared/fifo"), EntryKind.FIFO, 0644);
        storage.createNode(p("/shared/sock"), EntryKind.SOCKET, 0644);
        for (String name : List.of("/shared/fifo", "/shared/sock")) {
            int before = storage.metadata(p(name)).mode();
            storage.setExecutable(p(name), 0600);
            storage.setExecutable(p(name), 0755);
            assertEquals(before, storage.metadata(p(name)).mode(), name);
        }
    }

    /** The kernel writes an mmap's pages back through any writable handle, an appending one too. */
    @Test
    void anAppendingHandleWritesInPlaceWhenToldTo() throws IOException {
        storage.write(p("/shared/log"), bytes("aaaaaaaa"));
        try (FileHandle h = open("/shared/log", OpenFlag.WRITE, OpenFlag.APPEND)) {
            h.write(java.nio.ByteBuffer.wrap(bytes("E")), 0);
            h.writeInPlace(java.nio.ByteBuffer.wrap(bytes("ZZ")), 2);
            h.write(java.nio.ByteBuffer.wrap(bytes("F")), 0);
        }
        assertArrayEquals(bytes("aaZZaaaaEF"), storage.read(p("/shared/log")));
    }

    /** chmod 644 of a directory must not lock chibi, and a daemon that is not root, out of it. */
    @Test
    void aDirectoryKeepsItsSearchBits() throws IOException {
        storage.mkdir(p("/shared/d"));
        storage.write(p("/shared/d/f"), bytes("x"));
        int before = storage.metadata(p("/shared/d")).mode();
        storage.setExecutable(p("/shared/d"), 0644);
        storage.setExecutable(p("/shared/d"), 0);
        assertEquals(before, storage.metadata(p("/shared/d")).mode());
        assertEquals(0111, before & 0111, "a directory is made searchable");
        assertArrayEquals(bytes("x"), storage.read(p("/shared/d/f")));
    }

    /**
     * A chmod that changes no bit the store keeps (chmod 600, u+s, g+s, +t, or tar restoring a
     * mode) changes no bit, yet moves the ctime, as every chmod a disk accepts does: it left the
     * ctime as it was, where chmod +x moved it.
     */
    @Test
    void setExecutableThatChangesNoExecuteBitChangesNoBitButMovesTheCtime() throws Exception {
        storage.write(p("/shared/f"), bytes("x"));
        storage.mkdir(p("/shared/d"));
        storage.setExecutable(p("/shared/f"), 0755);
        Metadata before = storage.metadata(p("/shared/f"));
        Metadata dir = storage.metadata(p("/shared/d"));
        untilTheStoreClockPasses(before.changed());
        storage.setExecutable(p("/shared/f"), 0711); // tar restoring a mode: other bits mean nothing here
        storage.setExecutable(p("/shared/d"), 03777); // chmod g+s,+t of a directory
        Metadata byName = storage.metadata(p("/shared/f"));
        assertEquals(before.mode(), byName.mode());
        assertTrue(byName.changed().compareTo(before.changed()) > 0, "by name: " + before.changed() + " -> " + byName.changed());
        Metadata dirAfter = storage.metadata(p("/shared/d"));
        assertEquals(dir.mode(), dirAfter.mode());
        assertTrue(dirAfter.changed().compareTo(dir.changed()) > 0, "a directory: " + dir.changed() + " -> " + dirAfter.changed());
        untilTheStoreClockPasses(byName.changed());
        try (FileHandle h = open("/shared/f", OpenFlag.READ, OpenFlag.WRITE)) {
            h.setExecutable(0777);
        }
        Metadata byHandle = storage.metadata(p("/shared/f"));
        assertEquals(before.mode(), byHandle.mode());
        assertTrue(byHandle.changed().compareTo(byName.changed()) > 0, "through a handle: " + byName.changed() + " -> " + byHandle.changed());
    }

    /**
     * Session 68: a chown (which stores no owner: the path is the policy) moved the ctime on the local
     * store only; the memory and S3 stores left it, where a disk moves it (pjdfstest chown/00.t).
     */
    @Test
    void aChownMovesTheCtimeOfAFileADirectoryAndALink() throws Exception {
        storage.write(p("/shared/f"), bytes("x"));
        storage.mkdir(p("/shared/d"));
        storage.createSymlink(p("/shared/l"), "f");
        for (String name : List.of("/shared/f", "/shared/d", "/shared/l")) {
            Metadata before = storage.metadata(p(name));
            untilTheStoreClockPasses(before.changed());
            storage.ownerAsked(p(name));
            Metadata after = storage.metadata(p(name));
            assertTrue(after.changed().compareTo(before.changed()) > 0, name + ": " + before.changed() + " -> " + after.changed());
            assertEquals(before.mode(), after.mode(), name);
        }
        assertThrows(java.nio.file.NoSuchFileException.class, () -> storage.ownerAsked(p("/shared/none")));
    }

    /**
     * Returns once a change the store makes now is stamped later than {@code t} (a file system's
     * clock moves in ticks of a few milliseconds): a probe file is written until it is, with no
     * sleep, or the test fails after five seconds.
     */
    private void untilTheStoreClockPasses(FileTime t) throws IOException {
        long deadline = System.nanoTime() + Duration.ofSeconds(5).toNanos();
        VfsPath probe = p("/shared/clock-probe");
        do {
            storage.write(probe, bytes("t"));
            if (storage.metadata(probe).changed().compareTo(t) > 0) {
                return;
            }
        } while (System.nanoTime() < deadline);
        fail("the store's clock did not pass " + t + " within 5 s");
    }

    @Test
    void anOpenSaysWhatItFoundNothingWhenItMadeTheFile() throws IOException {
        storage.mkdir(p("/shared"));
        try (FileHandle made = open("/shared/f", OpenFlag.WRITE, OpenFlag.CREATE)) {
            assertNull(made.opened(), "the open made it");
            write(made, "abc", 0);
        }
        try (FileHandle found = open("/shared/f", OpenFlag.READ)) {
            Metadata m = found.opened();
            assertEquals(3, m.size());
            assertEquals(storage.metadata(p("/shared/f")).modified(), m.modified());
            assertEquals(storage.metadata(p("/shared/f")).inode(), m.inode());
        }
        try (FileHandle cut = open("/shared/f", OpenFlag.WRITE, OpenFlag.CREATE, OpenFlag.TRUNCATE)) {
            assertEquals(0, cut.opened().size(), "as the truncating open left it");
        }
    }

    @Test
    void handleSurvivesRename() throws IOException {
        storage.write(p("/shared/f"), bytes("abc"));
        try (FileHandle h = open("/shared/f", OpenFlag.READ, OpenFlag.WRITE)) {
            storage.rename(p("/shared/f"), p("/shared/g"));
            write(h, "XYZ", 3);
            assertEquals("abcXYZ", read(h, 0, 10));
        }
        assertEquals("abcXYZ", text("/shared/g"));
    }

    @Test
    void handleSurvivesUnlink() throws IOException {
        storage.write(p("/shared/f"), bytes("abc"));
        try (FileHandle h = open("/shared/f", OpenFlag.READ, OpenFlag.WRITE)) {
            storage.removeFile(p("/shared/f"));
            assertFalse(storage.exists(p("/shared/f")));
            write(h, "XYZ", 3);
            assertEquals("abcXYZ", read(h, 0, 10));
            assertEquals(6, h.size());
        }
        assertFalse(storage.exists(p("/shared/f")));
    }

    /**
     * Whether a file held ({@link Storage#hold}) can be opened to write. An object store's cannot:
     * a write through it would upload over whatever its name stands for by then (ESTALE).
     */
    protected boolean writesThroughHeldFiles() {
        return true;
    }

    @Test
    void aHeldFileOpensAfterItsNameIsReplacedOrGone() throws IOException {
        storage.write(p("/shared/status"), bytes("v1"));
        storage.mkdir(p("/shared/dir"));
        HeldFile held = storage.hold(p("/shared/status"));
        assertNull(storage.hold(p("/shared/dir")), "only a regular file is held");
        assertThrows(NoSuchFileException.class, () -> storage.hold(p("/shared/none")));
        try (held) {
            assertEquals(storage.metadata(p("/shared/status")).inode(), held.metadata().inode());
            assertEquals(2, held.metadata().size());
            // replaced as a status file is: a new file renamed over the name
            storage.write(p("/shared/status.tmp"), bytes("v2"));
            storage.rename(p("/shared/status.tmp"), p("/shared/status"));
            try (FileHandle h = held.open(flags(OpenFlag.READ))) {
                assertEquals("v1", read(h, 0, 10));
                assertEquals(held.metadata().inode(), h.opened().inode());
            }
            storage.removeFile(p("/shared/status"));
            if (!writesThroughHeldFiles()) {
                FileSystemException refused = assertThrows(FileSystemException.class,
                        () -> held.open(flags(OpenFlag.READ, OpenFlag.WRITE)));
                assertEquals(Linux.ESTALE, Errors.errno(refused), refused.toString());
                try (FileHandle h = held.open(flags(OpenFlag.READ))) {
                    assertEquals("v1", read(h, 0, 10), "what it held, though its name is gone");
                }
                return;
            }
            try (FileHandle h = held.open(flags(OpenFlag.READ, OpenFlag.WRITE, OpenFlag.TRUNCATE))) {
                assertEquals("", read(h, 0, 10), "truncated by the open");
                write(h, "v3", 0);
            }
            try (FileHandle h = held.open(flags(OpenFlag.READ))) {
                assertEquals("v3", read(h, 0, 10));
            }
        }
        assertFalse(storage.exists(p("/shared/status")));
    }

    @Test
    void concurrentAppendersLoseNoLine() throws Exception {
        storage.mkdir(p("/shared"));
        int threads = 4;
        int lines = 500;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Future<?>> done = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int id = t;
                done.add(pool.submit(() -> {
                    try (FileHandle h = open("/shared/log", OpenFlag.WRITE, OpenFlag.APPEND, OpenFlag.CREATE)) {
                        for (int i = 0; i < lines; i++) {
                            write(h, "t" + id + " line " + i + "\n", 0);
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> f : done) {
                f.get(20, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
        List<String> got = Arrays.asList(text("/shared/log").split("\n"));
        assertEquals(threads * lines, got.size());
        Set<String> expected = new HashSet<>();
        for (int t = 0; t < threads; t++) {
            for (int i = 0; i < lines; i++) {
                expected.add("t" + t + " line " + i);
            }
        }
        assertEquals(expected, new HashSet<>(got));
    }

    @Test
    void writeIsAtomicForConcurrentReaders() throws Exception {
        byte[] a = new byte[16 * 1024];
        byte[] b = new byte[12 * 1024];
        Arrays.fill(a, (byte) 'a');
        Arrays.fill(b, (byte) 'b');
        storage.write(p("/shared/f"), a);
        AtomicBoolean stop = new AtomicBoolean();
        ExecutorService pool = Executors.newSingleThreadExecutor();
        try {
            CountDownLatch reading = new CountDownLatch(1);
            Future<Integer> reader = pool.submit(() -> {
                int reads = 0;
                while (!stop.get()) {
                    byte[] got = storage.read(p("/shared/f"));
                    if (!Arrays.equals(got, a) && !Arrays.equals(got, b)) {
                        throw new AssertionError("mixed content, " + got.length + " bytes");
                    }
                    reads++;
                    reading.countDown();
                }
                return reads;
            });
            assertTrue(reading.await(20, TimeUnit.SECONDS));
            for (int i = 0; i < 200; i++) {
                storage.write(p("/shared/f"), i % 2 == 0 ? b : a);
            }
            stop.set(true);
            assertTrue(reader.get(20, TimeUnit.SECONDS) > 0);
        } finally {
            stop.set(true);
            pool.shutdownNow();
        }
    }

    // ---- writes of a content given as a stream ----

    /** A content of {@code size} bytes, each its position's low byte, so a piece out of place shows. */
    protected static byte[] numbered(int size) {
        byte[] b = new byte[size];
        for (int i = 0; i < size; i++) {
            b[i] = (byte) (i * 31 + i / 256);
        }
        return b;
    }

    /** Gives {@code content}, then fails with an IOException once {@code failAt} bytes are read (never when negative). */
    protected static java.io.InputStream failingAfter(byte[] content, int failAt) {
        return new java.io.InputStream() {
            private int at;

            @Override
            public int read() throws IOException {
                byte[] one = new byte[1];
                return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
            }

            @Override
            public int read(byte[] b, int off, int len) throws IOException {
                if (failAt >= 0 && at >= failAt) {
                    throw new IOException("the writer went away");
                }
                if (at >= content.length) {
                    return -1;
                }
                int n = Math.min(len, content.length - at);
                if (failAt >= 0) {
                    n = Math.min(n, failAt - at);
                }
                System.arraycopy(content, at, b, off, n);
                at += n;
                return n;
            }
        };
    }

    // ---- appends that fail: each leaves nothing of itself ----

    /**
     * A second store of this backend on a disk with room for about {@code bytes} more than it
     * needs for itself, for what a full disk does; the test closes the store, the subclass what it
     * stands on. Null where this backend cannot have one here (a tmpfs needs root).
     */
    protected Storage newStorageOnASmallDisk(long bytes) throws IOException {
        return null;
    }

    /**
     * An append refused under the file's lock (its guard: a flock left meanwhile) or by its
     * condition leaves no file it made, and one that was there as it was.
     */
    @Test
    void anAppendRefusedByItsGuardOrConditionLeavesNothingOfItself() throws IOException {
        storage.mkdir(p("/shared/g"));
        IOException refusal = new IOException("refused by the policy");
        Storage.Guard refusing = () -> {
            throw refusal;
        };
        assertEquals(refusal, assertThrows(IOException.class,
                () -> storage.append(p("/shared/g/f"), bytes("x"), Precondition.NONE, refusing)));
        assertEquals(List.of(), storage.list(p("/shared/g")), "the refused append's file stayed");
        assertThrows(EtagMismatchException.class, () -> storage.append(p("/shared/g/f"), bytes("x"),
                Precondition.matching(ContentHash.of(bytes("kept"))), Storage.Guard.NONE));
        assertEquals(List.of(), storage.list(p("/shared/g")), "an append --if-match on no file made one");

        storage.write(p("/shared/g/f"), bytes("kept"));
        String kept = storage.etag(p("/shared/g/f"));
        assertEquals(refusal, assertThrows(IOException.class,
                () -> storage.append(p("/shared/g/f"), bytes("x"), Precondition.matching(kept), refusing)));
        assertThrows(EtagMismatchException.class, () -> storage.append(p("/shared/g/f"), bytes("x"),
                Precondition.matching(ContentHash.of(bytes("other"))), Storage.Guard.NONE));
        assertThrows(EtagMismatchException.class,
                () -> storage.append(p("/shared/g/f"), bytes("x"), Precondition.absent(), Storage.Guard.NONE));
        assertEquals("kept", text("/shared/g/f"));
        assertEquals(List.of(new Entry("f", EntryKind.FILE)), storage.list(p("/shared/g")));
    }

    /**
     * One append is one write: on a disk that filled midway (a short write, then ENOSPC) the part
     * written stayed (local: 5 bytes became 561,152). It is cut back to the size found, and a file
     * the append made goes (memory: an empty one stayed); the store takes an append that fits after.
     */
    @Test
    void anAppendThatFillsTheDiskLeavesNothingOfItself() throws IOException {
        Storage small = newStorageOnASmallDisk(1 << 20);
        org.junit.jupiter.api.Assumptions.assumeTrue(small != null, "no small disk for this backend here");
        try (small) {
            small.write(p("/shared/e.txt"), bytes("hello"));
            small.write(p("/shared/big"), new byte[640 * 1024]);
            byte[] more = new byte[2 << 20]; // past all the disk holds, whatever the store needs for itself
            IOException full = assertThrows(IOException.class, () -> small.append(p("/shared/e.txt"), more));
            assertEquals(Linux.ENOSPC, Errors.errno(full), full.toString());
            assertEquals(5, small.metadata(p("/shared/e.txt")).size(), "the part appended stayed");
            IOException fullNew = assertThrows(IOException.class, () -> small.append(p("/shared/new"), more));
            assertEquals(Linux.ENOSPC, Errors.errno(fullNew), fullNew.toString());
            assertFalse(small.exists(p("/shared/new")), "the file the failed append made stayed");
            small.append(p("/shared/e.txt"), bytes(" world"));
            assertArrayEquals(bytes("hello world"), small.read(p("/shared/e.txt")));
        }
    }

    @Test
    void aStreamedWriteReplacesTheFileWithAllItGives() throws IOException {
        storage.write(p("/shared/s/f"), bytes("old"));
        byte[] content = numbered(3 * 65536 + 17);
        storage.write(p("/shared/s/f"), failingAfter(content, -1), Precondition.NONE, Storage.Guard.NONE);
        assertArrayEquals(content, storage.read(p("/shared/s/f")));
        storage.write(p("/shared/s/new/g"), failingAfter(new byte[0], -1), Precondition.NONE, Storage.Guard.NONE);
        assertEquals(0, storage.metadata(p("/shared/s/new/g")).size());
    }

    @Test
    void aStreamedWriteThatFailsMidwayLeavesTheFileAsItWas() throws IOException {
        storage.write(p("/shared/s/f"), bytes("old"));
        byte[] content = numbered(200_000);
        IOException e = assertThrows(IOException.class, () -> storage.write(p("/shared/s/f"),
                failingAfter(content, 100_000), Precondition.NONE, Storage.Guard.NONE));
        assertEquals("the writer went away", e.getMessage());
        assertEquals("old", text("/shared/s/f"));
        assertEquals(List.of(new Entry("f", EntryKind.FILE)), storage.list(p("/shared/s")));
    }

    @Test
    void aStreamedWriteRefusedByItsGuardOrConditionChangesNothing() throws IOException {
        storage.write(p("/shared/s/f"), bytes("old"));
        IOException refused = new IOException("refused by the policy");
        assertEquals(refused, assertThrows(IOException.class, () -> storage.write(p("/shared/s/new/g"),
                failingAfter(bytes("data"), -1), Precondition.NONE, () -> {
                    throw refused;
                })));
        assertFalse(storage.exists(p("/shared/s/new")));
        assertThrows(EtagMismatchException.class, () -> storage.write(p("/shared/s/f"),
                failingAfter(bytes("data"), -1), Precondition.matching(ContentHash.of(bytes("other"))), Storage.Guard.NONE));
        assertEquals("old", text("/shared/s/f"));
        storage.write(p("/shared/s/f"), failingAfter(bytes("new"), -1), Precondition.matching(ContentHash.of(bytes("old"))),
                Storage.Guard.NONE);
        assertEquals("new", text("/shared/s/f"));
        assertEquals(List.of(new Entry("f", EntryKind.FILE)), storage.list(p("/shared/s")));
    }
}
