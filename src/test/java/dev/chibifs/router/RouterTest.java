package dev.chibifs.router;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.chibifs.path.VfsPath;
import dev.chibifs.policy.Caller;
import dev.chibifs.policy.InvalidContextNameException;
import dev.chibifs.policy.SymlinkRule;
import dev.chibifs.store.Entry;
import dev.chibifs.store.EntryKind;
import dev.chibifs.store.FileHandle;
import dev.chibifs.store.LocalStorage;
import dev.chibifs.store.Precondition;
import dev.chibifs.store.LockType;
import dev.chibifs.store.MemoryStorage;
import dev.chibifs.store.Storage;
import dev.chibifs.store.RenameMode;
import dev.chibifs.store.Metadata;
import dev.chibifs.store.OpenFlag;
import dev.chibifs.store.OperationNotPermittedException;
import dev.chibifs.store.ReadOnlyStorage;
import dev.chibifs.store.ReadOnlyStoreException;
import dev.chibifs.sys.Errors;
import dev.chibifs.sys.Linux;
import java.io.IOException;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.nio.ByteBuffer;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.nio.file.NoSuchFileException;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Optional;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.api.io.TempDir;

class RouterTest {

    private static final Caller PLANNER = Caller.context("planner");
    private static final Caller CODER = Caller.context("coder");
    private static final Caller GUEST = Caller.GUEST;
    private static final Caller SYSTEM = Caller.SYSTEM;

    @TempDir
    Path temp;

    private LocalStorage store;
    private Router vfs;

    @BeforeEach
    void setUp() throws IOException {
        store = new LocalStorage(temp.resolve("vfs"));
        vfs = Router.of(store);
    }

    private static VfsPath p(String path) {
        return VfsPath.of(path);
    }

    private static byte[] bytes(String s) {
        return s.getBytes(UTF_8);
    }

    private String text(String path) throws IOException {
        return new String(vfs.read(GUEST, p(path)), UTF_8);
    }

    private static void assertDenied(Executable call) {
        assertThrows(PolicyDeniedException.class, call);
    }

    /**
     * A signal (INT, TERM, HUP) ends the JVM through its shutdown hooks without unwinding the
     * change's try: the hook's removal (run here as it runs it) takes the parents of a change under
     * way, and leaves those of one that succeeded.
     */
    @Test
    void theParentsOfAChangeUnderWayAreRemovedByTheShutdownHook() throws IOException {
        Router.MadeParents done = vfs.makeParents(CODER, p("/shared/kept/f"));
        done.keep();
        Router.MadeParents underWay = vfs.makeParents(CODER, p("/shared/k/b/c/f"));
        assertTrue(store.exists(p("/shared/k/b/c")));
        Router.removeUnsettledParents();
        assertFalse(store.exists(p("/shared/k")));
        assertTrue(store.exists(p("/shared/kept")));
        underWay.close();
        done.close();
        assertTrue(store.exists(p("/shared/kept")));
    }

    // ---- the seeds' router tests ----

    @Test
    void writeToSharedAllowed() throws IOException {
        vfs.write(PLANNER, p("/shared/test.txt"), bytes("hi"));
        assertEquals("hi", text("/shared/test.txt"));
    }

    @Test
    void writeToOwnHomeAllowed() throws IOException {
        vfs.write(PLANNER, p("/home/planner/file.md"), bytes("ok"));
        assertArrayEquals(bytes("ok"), vfs.read(PLANNER, p("/home/planner/file.md")));
    }

    @Test
    void writeToOtherHomeDenied() {
        PolicyDeniedException e = assertThrows(PolicyDeniedException.class,
                () -> vfs.write(PLANNER, p("/home/coder/file.md"), bytes("nope")));
        assertEquals("/home/coder/file.md", e.getFile());
        assertTrue(e.getMessage().contains("'planner'") && e.getMessage().contains("'/home/coder/file.md'"),
                e.getMessage());
    }

    @Test
    void writeToSysDenied() {
        assertDenied(() -> vfs.write(PLANNER, p("/sys/data"), bytes("nope")));
    }

    @Test
    void systemCanWriteSys() throws IOException {
        vfs.write(SYSTEM, p("/sys/data"), bytes("ok"));
        assertArrayEquals(bytes("ok"), vfs.read(CODER, p("/sys/data")));
    }

    @Test
    void readOtherHomeAllowed() throws IOException {
        vfs.write(CODER, p("/home/coder/file.md"), bytes("public"));
        assertArrayEquals(bytes("public"), vfs.read(PLANNER, p("/home/coder/file.md")));
    }

    @Test
    void copyChecksDestination() throws IOException {
        vfs.write(PLANNER, p("/shared/src.txt"), bytes("data"));
        assertDenied(() -> vfs.copy(PLANNER, p("/shared/src.txt"), p("/home/coder/dst.txt")));
        vfs.write(CODER, p("/home/coder/secret"), bytes("s"));
        vfs.copy(PLANNER, p("/home/coder/secret"), p("/home/planner/copy"));
        assertEquals("s", text("/home/planner/copy"));
    }

    @Test
    void renameChecksBothNames() throws IOException {
        vfs.write(PLANNER, p("/home/planner/file.txt"), bytes("data"));
        assertDenied(() -> vfs.rename(PLANNER, p("/home/planner/file.txt"), p("/home/coder/file.txt")));
        assertEquals("data", text("/home/planner/file.txt"));
    }

    @Test
    void deleteChecksWritePermission() throws IOException {
        vfs.write(CODER, p("/home/coder/file.txt"), bytes("data"));
        assertDenied(() -> vfs.delete(PLANNER, p("/home/coder/file.txt")));
        assertEquals("data", text("/home/coder/file.txt"));
    }

    @Test
    void mkdirChecksWritePermission() {
        assertDenied(() -> vfs.mkdir(PLANNER, p("/sys/forbidden")));
    }

    @Test
    void appendChecksWritePermission() {
        assertDenied(() -> vfs.append(PLANNER, p("/home/coder/log.txt"), bytes("nope")));
    }

    @Test
    void listAlwaysAllowed() throws IOException {
        vfs.createNamespace(List.of("coder"));
        assertEquals(List.of(), vfs.list(GUEST, p("/home/coder")));
        assertEquals(List.of(new Entry("coder", EntryKind.DIRECTORY)), vfs.list(PLANNER, p("/home")));
    }

    /**
     * An empty read-only store at /: the mount said "invalid --store: a store at /sys/contexts cannot
     * be reached ...", blaming a --store the user never gave; what the store lacks is the story.
     */
    @Test
    void anEmptyReadOnlyStoreSaysWhatItLacks() throws IOException {
        Router empty = Router.builder(new ReadOnlyStorage(new LocalStorage(temp.resolve("empty")), "readonly:empty"))
                .mount(p("/sys/contexts"), new MemoryStorage(0)).build();
        ReadOnlyStoreLacksException e = assertThrows(ReadOnlyStoreLacksException.class,
                () -> empty.createNamespace(List.of("coder")));
        assertEquals(p("/"), e.prefix());
        assertEquals("the store at / is read-only and lacks the directories chibifs needs in it: /flocks, /home,"
                + " /home/coder, /shared, /site, /sys, /sys/tool_cache, /tools, /tools/flocks, /tools/home,"
                + " /tools/home/coder, /tools/shared", e.getMessage());

        Path full = temp.resolve("full");
        new LocalStorage(full);
        Router.of(new LocalStorage(full)).createNamespace(List.of("coder"));
        Router.builder(new ReadOnlyStorage(new LocalStorage(full), "readonly:full"))
                .mount(p("/sys/contexts"), new MemoryStorage(0)).build().createNamespace(List.of("coder"));
    }

    @Test
    void theNamespaceHasEveryContextsToolsHomeSoItNeedNotMakeWhatOnlySystemMay() throws IOException {
        vfs.createNamespace(List.of("coder"));
        assertTrue(vfs.metadata(GUEST, p("/tools/flocks")).isDirectory());
        vfs.mkdir(CODER, p("/tools/home/coder/bin")); // mkdir -p through a mount: /tools/home is SYSTEM's
        vfs.mkdir(PLANNER, p("/tools/home/planner"));
        assertDenied(() -> vfs.mkdir(PLANNER, p("/tools/home/coder/mine")));
    }

    @Test
    void metadataAlwaysAllowed() throws IOException {
        vfs.write(PLANNER, p("/shared/m.txt"), bytes("data"));
        assertEquals(4, vfs.metadata(CODER, p("/shared/m.txt")).size());
        assertEquals(4, vfs.metadata(GUEST, p("/shared/m.txt")).size());
    }

    // ---- denied writes touch nothing ----

    /** Every file (content, mode, mtime) and directory, read through the router. */
    private Map<String, String> snapshot() throws IOException {
        Map<String, String> out = new TreeMap<>();
        walk(VfsPath.root(), out);
        return out;
    }

    private void walk(VfsPath dir, Map<String, String> out) throws IOException {
        for (Entry e : vfs.list(GUEST, dir)) {
            VfsPath child = dir.child(e.name());
            Metadata m = vfs.metadata(GUEST, child);
            if (e.kind() == EntryKind.DIRECTORY) {
                out.put(child + "/", "mode " + Integer.toOctalString(m.mode()));
                walk(child, out);
            } else {
                out.put(child.toString(), new String(vfs.read(GUEST, child), UTF_8) + " mode "
                        + Integer.toOctalString(m.mode()) + " mtime " + m.modified() + " links " + m.links());
            }
        }
    }

    /** A populated namespace: a file and an empty directory in every zone. */
    private void populate() throws IOException {
        vfs.createNamespace(List.of("planner", "coder"));
        for (String zone : new String[] {"/shared", "/home/planner", "/home/coder", "/sys", ""}) {
            vfs.write(SYSTEM, p(zone + "/f"), bytes("content of " + zone));
            vfs.mkdir(SYSTEM, p(zone + "/d"));
        }
    }

    private List<Executable> writesInto(Caller c, String zone) {
        VfsPath f = p(zone + "/f");
        VfsPath d = p(zone + "/d");
        VfsPath fresh = p(zone + "/new");
        // a name the caller may write, for renames and links in and out (GUEST may write nowhere)
        VfsPath own = p(c.isContext() ? "/home/" + c.name() + "/f" : "/shared/f");
        List<Executable> ops = new ArrayList<>();
        ops.add(() -> vfs.write(c, f, bytes("x")));
        ops.add(() -> vfs.write(c, fresh, bytes("x")));
        ops.add(() -> vfs.write(c, p(zone + "/new/deeper"), bytes("x")));
        ops.add(() -> vfs.append(c, f, bytes("x")));
        ops.add(() -> vfs.append(c, fresh, bytes("x")));
        ops.add(() -> vfs.delete(c, f));
        ops.add(() -> vfs.delete(c, d));
        ops.add(() -> vfs.mkdir(c, fresh));
        ops.add(() -> vfs.mkdir(c, p(zone + "/new/deeper")));
        ops.add(() -> vfs.copy(c, own, fresh));
        ops.add(() -> vfs.copy(c, own, f));
        ops.add(() -> vfs.rename(c, own, fresh));
        ops.add(() -> vfs.rename(c, f, p(own.parent() + "/moved")));
        ops.add(() -> vfs.rename(c, d, p(own.parent() + "/moved")));
        ops.add(() -> vfs.rename(c, f, fresh));
        for (Set<OpenFlag> flags : List.of(EnumSet.of(OpenFlag.WRITE), EnumSet.of(OpenFlag.READ, OpenFlag.WRITE),
                EnumSet.of(OpenFlag.APPEND), EnumSet.of(OpenFlag.READ, OpenFlag.TRUNCATE),
                EnumSet.of(OpenFlag.WRITE, OpenFlag.CREATE))) {
            ops.add(() -> vfs.open(c, f, flags, 0644).close());
        }
        ops.add(() -> vfs.open(c, fresh, EnumSet.of(OpenFlag.WRITE, OpenFlag.CREATE), 0644).close());
        ops.add(() -> vfs.open(c, fresh, EnumSet.of(OpenFlag.READ, OpenFlag.CREATE), 0644).close());
        ops.add(() -> vfs.open(c, fresh, EnumSet.of(OpenFlag.WRITE, OpenFlag.CREATE_NEW), 0644).close());
        ops.add(() -> vfs.truncate(c, f, 0));
        ops.add(() -> vfs.truncate(c, f, 100));
        ops.add(() -> vfs.createDirectory(c, fresh));
        ops.add(() -> vfs.removeFile(c, f));
        ops.add(() -> vfs.removeDirectory(c, d));
        ops.add(() -> vfs.setTimes(c, f, FileTime.fromMillis(0), FileTime.fromMillis(0)));
        ops.add(() -> vfs.setTimes(c, d, null, FileTime.fromMillis(0)));
        ops.add(() -> vfs.chmod(c, f, 0777));
        ops.add(() -> vfs.chown(c, f));
        ops.add(() -> vfs.link(c, f, fresh));
        ops.add(() -> vfs.link(c, own, fresh));
        ops.add(() -> vfs.link(c, f, p(own.parent() + "/linked")));
        ops.add(() -> vfs.openUnnamed(c, d, 0644).close());
        ops.add(() -> {
            try (FileHandle h = vfs.openUnnamed(c, own.parent(), 0644)) {
                vfs.link(c, h, Router.unnamedIn(own.parent()), fresh);
            }
        });
        return ops;
    }

    private void assertAllDeniedAndNothingChanged(Caller c, String zone) throws IOException {
        populate();
        Map<String, String> before = snapshot();
        List<Executable> ops = writesInto(c, zone);
        for (int i = 0; i < ops.size(); i++) {
            PolicyDeniedException e = assertThrows(PolicyDeniedException.class, ops.get(i),
                    c + " into '" + zone + "', operation " + i);
            assertFalse(e.getMessage().isEmpty());
        }
        assertEquals(before, snapshot());
    }

    @Test
    void contextCannotWriteAnotherHome() throws IOException {
        assertAllDeniedAndNothingChanged(PLANNER, "/home/coder");
    }

    @Test
    void contextCannotWriteSys() throws IOException {
        assertAllDeniedAndNothingChanged(PLANNER, "/sys");
    }

    @Test
    void contextCannotWriteTheRoot() throws IOException {
        assertAllDeniedAndNothingChanged(CODER, "");
    }

    @Test
    void guestCannotWriteShared() throws IOException {
        assertAllDeniedAndNothingChanged(GUEST, "/shared");
    }

    @Test
    void everyoneReadsEverything() throws IOException {
        populate();
        for (Caller c : new Caller[] {GUEST, PLANNER, CODER, SYSTEM}) {
            assertEquals("content of /home/coder", text("/home/coder/f"));
            assertTrue(vfs.exists(c, p("/sys/f")));
            assertFalse(vfs.list(c, p("/sys")).isEmpty());
            try (FileHandle h = vfs.open(c, p("/sys/f"), EnumSet.of(OpenFlag.READ), 0)) {
                ByteBuffer buf = ByteBuffer.allocate(64);
                assertEquals("content of /sys".length(), h.read(buf, 0));
            }
        }
    }

    @Test
    void ownersWriteTheirZonesThroughEveryOperation() throws IOException {
        populate();
        vfs.append(PLANNER, p("/home/planner/f"), bytes("+"));
        vfs.truncate(PLANNER, p("/home/planner/f"), 3);
        vfs.chmod(PLANNER, p("/home/planner/f"), 0755);
        vfs.chown(PLANNER, p("/home/planner/f"));
        vfs.setTimes(PLANNER, p("/home/planner/f"), null, FileTime.fromMillis(0));
        vfs.createDirectory(PLANNER, p("/shared/new"));
        vfs.rename(CODER, p("/shared/f"), p("/home/coder/from-shared"));
        vfs.link(CODER, p("/home/coder/from-shared"), p("/home/coder/again"));
        vfs.removeFile(CODER, p("/home/coder/f"));
        vfs.removeDirectory(CODER, p("/home/coder/d"));
        try (FileHandle h = vfs.open(PLANNER, p("/shared/opened"),
                EnumSet.of(OpenFlag.WRITE, OpenFlag.CREATE_NEW), 0644)) {
            h.write(ByteBuffer.wrap(bytes("w")), 0);
        }
        assertEquals("con", text("/home/planner/f"));
        assertEquals(2, vfs.metadata(GUEST, p("/home/coder/again")).links());
        assertEquals("w", text("/shared/opened"));
        assertEquals(List.of("again", "from-shared"),
                vfs.list(GUEST, p("/home/coder")).stream().map(Entry::name).toList());
    }

    @Test
    void zoneRootsStayForContexts() throws IOException {
        vfs.createNamespace(List.of("planner"));
        Map<String, String> before = snapshot();
        for (String root : new String[] {"/shared", "/home/planner", "/home", "/sys"}) {
            assertDenied(() -> vfs.delete(PLANNER, p(root)));
            assertDenied(() -> vfs.removeDirectory(PLANNER, p(root)));
            assertDenied(() -> vfs.rename(PLANNER, p(root), p("/shared/moved")));
            assertDenied(() -> vfs.rename(PLANNER, p(root), p("/home/planner/moved")));
        }
        vfs.mkdir(PLANNER, p("/shared/dir"));
        assertDenied(() -> vfs.rename(PLANNER, p("/shared/dir"), p("/home/planner")));
        assertDenied(() -> vfs.rename(PLANNER, p("/shared/dir"), p("/shared")));
        vfs.removeDirectory(PLANNER, p("/shared/dir"));
        PolicyDeniedException e = assertThrows(PolicyDeniedException.class,
                () -> vfs.removeDirectory(PLANNER, p("/home/planner")));
        assertTrue(e.getMessage().contains("zone root"), e.getMessage());
        assertEquals(before, snapshot());

        vfs.mkdir(SYSTEM, p("/home/retired"));
        vfs.rename(SYSTEM, p("/home/retired"), p("/home/archived"));
        vfs.removeDirectory(SYSTEM, p("/home/archived"));
    }

    @Test
    void aFileWithAHardLinkLeftBehindDoesNotMoveIntoAnotherZone() throws IOException {
        vfs.createNamespace(List.of("planner", "coder"));
        for (Router r : List.of(vfs, Router.builder(store).symlinks(SymlinkRule.ANY).build())) {
            // coder links planner's draft in /shared; planner's move home would leave coder's name
            // writing it there: EXDEV, so mv copies, and coder's name keeps the old file
            vfs.write(PLANNER, p("/shared/t"), bytes("draft"));
            r.link(CODER, p("/shared/t"), p("/shared/.coder"));
            CrossDeviceException e = assertThrows(CrossDeviceException.class,
                    () -> r.rename(PLANNER, p("/shared/t"), p("/home/planner/t")));
            assertTrue(e.getMessage().contains("'/shared/t' has a hard link outside it"), e.getMessage());
            assertFalse(vfs.exists(GUEST, p("/home/planner/t")));
            // so does a directory holding such a file
            vfs.mkdir(PLANNER, p("/shared/d"));
            vfs.mkdir(PLANNER, p("/shared/d/e"));
            vfs.write(PLANNER, p("/shared/d/e/f"), bytes("draft"));
            r.link(CODER, p("/shared/d/e/f"), p("/shared/.coder-f"));
            e = assertThrows(CrossDeviceException.class, () -> r.rename(PLANNER, p("/shared/d"), p("/home/planner/d")));
            assertTrue(e.getMessage().contains("'/shared/d/e/f' has a hard link outside it"), e.getMessage());
            // within one zone, and with every name inside what moves, it moves
            r.rename(PLANNER, p("/shared/t"), p("/shared/t2"));
            vfs.delete(CODER, p("/shared/.coder-f"));
            r.link(PLANNER, p("/shared/d/e/f"), p("/shared/d/g"));
            r.rename(PLANNER, p("/shared/d"), p("/home/planner/d"));
            assertEquals(2, vfs.metadata(GUEST, p("/home/planner/d/g")).links());
            vfs.delete(PLANNER, p("/shared/t2"));
            vfs.delete(CODER, p("/shared/.coder"));
            vfs.delete(PLANNER, p("/home/planner/d"));
        }
    }

    @Test
    void aLinkOrFifoWithAHardLinkLeftBehindDoesNotMoveIntoAnotherZoneEither() throws IOException {
        vfs.createNamespace(List.of("planner"));
        vfs.symlink(PLANNER, p("/shared/sl"), "t");
        vfs.link(PLANNER, p("/shared/sl"), p("/shared/sl2"));
        vfs.mknod(PLANNER, p("/shared/ff"), EntryKind.FIFO, 0644);
        vfs.link(PLANNER, p("/shared/ff"), p("/shared/ff2"));
        vfs.mkdir(PLANNER, p("/shared/dd"));
        vfs.symlink(PLANNER, p("/shared/dd/s"), "t");
        vfs.link(PLANNER, p("/shared/dd/s"), p("/shared/sl3"));
        for (String moved : List.of("sl", "ff", "dd")) {
            assertThrows(CrossDeviceException.class,
                    () -> vfs.rename(PLANNER, p("/shared/" + moved), p("/home/planner/" + moved)), moved);
            assertFalse(vfs.exists(GUEST, p("/home/planner/" + moved)));
        }
    }

    @Test
    void hardLinksCannotCrossZonesEvenWhenBothNamesAreWritable() throws IOException {
        vfs.write(PLANNER, p("/shared/a"), bytes("a"));
        vfs.write(PLANNER, p("/home/planner/b"), bytes("b"));
        // both names the caller's to write: as between two file systems, so programs copy instead
        CrossDeviceException e = assertThrows(CrossDeviceException.class,
                () -> vfs.link(PLANNER, p("/shared/a"), p("/home/planner/a")));
        assertTrue(e.getMessage().contains("hard links cannot cross zones"), e.getMessage());
        assertThrows(CrossDeviceException.class, () -> vfs.link(PLANNER, p("/home/planner/b"), p("/shared/b")));
        // a name the caller may not write: the policy's refusal
        vfs.write(CODER, p("/home/coder/c"), bytes("c"));
        assertDenied(() -> vfs.link(PLANNER, p("/home/coder/c"), p("/shared/c")));
        assertDenied(() -> vfs.link(PLANNER, p("/shared/a"), p("/home/coder/a")));
        assertThrows(CrossDeviceException.class, () -> vfs.link(SYSTEM, p("/shared/a"), p("/sys/a")));
        assertFalse(vfs.exists(GUEST, p("/home/planner/a")));
        assertFalse(vfs.exists(GUEST, p("/shared/b")));
        assertFalse(vfs.exists(GUEST, p("/shared/c")));
        assertFalse(vfs.exists(GUEST, p("/home/coder/a")));
        vfs.link(PLANNER, p("/shared/a"), p("/shared/a2"));
        assertEquals(2, vfs.metadata(GUEST, p("/shared/a2")).links());
    }

    // ---- symbolic links, fifos and sockets ----

    @Test
    void aSymbolicLinkIsAWriteInItsZoneAndItsTargetStaysThere() throws IOException {
        vfs.createNamespace(List.of("planner", "coder"));
        vfs.symlink(PLANNER, p("/home/planner/lib64"), "lib");
        vfs.symlink(PLANNER, p("/shared/x"), "y");
        assertEquals("lib", vfs.readLink(GUEST, p("/home/planner/lib64")));
        assertEquals(EntryKind.SYMLINK, vfs.metadata(GUEST, p("/shared/x")).kind());
        // where the caller may not write: EACCES, whatever the target
        assertDenied(() -> vfs.symlink(PLANNER, p("/home/coder/l"), "x"));
        assertDenied(() -> vfs.symlink(GUEST, p("/shared/l"), "x"));
        assertDenied(() -> vfs.symlink(PLANNER, p("/sys/l"), "/etc/passwd"));
        // out of the zone: EPERM, naming the link, the target and the rule
        SymlinkDeniedException e = assertThrows(SymlinkDeniedException.class,
                () -> vfs.symlink(PLANNER, p("/home/planner/evil"), "../coder/notes"));
        assertTrue(e.getMessage().contains("'/home/planner/evil' -> '../coder/notes'")
                && e.getMessage().contains("--symlinks zone"), e.getMessage());
        assertTrue(e.getReason().startsWith("Operation not permitted"), e.getReason());
        assertThrows(SymlinkDeniedException.class, () -> vfs.symlink(PLANNER, p("/shared/ssh"), "/root/.ssh/id_rsa"));
        assertThrows(SymlinkDeniedException.class, () -> vfs.symlink(SYSTEM, p("/shared/up"), "../../.."));
        assertFalse(vfs.exists(GUEST, p("/home/planner/evil")));
        assertFalse(vfs.exists(GUEST, p("/shared/ssh")));
        assertFalse(vfs.exists(GUEST, p("/home/coder/l")));
        assertEquals(SymlinkRule.ZONE, vfs.symlinkRule());
    }

    @Test
    void theRuleIsChosenAtConstruction() throws IOException {
        Router none = Router.builder(store).symlinks(SymlinkRule.NONE).build();
        Router any = Router.builder(store).symlinks(SymlinkRule.ANY).build();
        vfs.createNamespace(List.of("planner"));
        assertThrows(SymlinkDeniedException.class, () -> none.symlink(PLANNER, p("/shared/l"), "x"));
        assertDenied(() -> none.symlink(PLANNER, p("/sys/l"), "x"));
        assertFalse(vfs.exists(GUEST, p("/shared/l")));
        // dangling, so that the temporary directory's cleanup finds nothing outside to warn of
        any.symlink(PLANNER, p("/shared/abs"), "/no/such/file");
        any.symlink(PLANNER, p("/home/planner/out"), "../../../../no-such-file");
        assertEquals("/no/such/file", vfs.readLink(GUEST, p("/shared/abs")));
        assertDenied(() -> any.symlink(PLANNER, p("/home/coder/l"), "x"));
    }

    @Test
    void fifosAndSocketsAreWritesAndDeviceNodesAreRefused() throws IOException {
        vfs.createNamespace(List.of("planner", "coder"));
        vfs.mknod(PLANNER, p("/shared/pipe"), EntryKind.FIFO, 0644);
        vfs.mknod(PLANNER, p("/home/planner/sock"), EntryKind.SOCKET, 0755);
        vfs.mknod(PLANNER, p("/home/planner/empty"), EntryKind.FILE, 0644);
        assertEquals(EntryKind.FIFO, vfs.metadata(GUEST, p("/shared/pipe")).kind());
        assertEquals(EntryKind.SOCKET, vfs.metadata(GUEST, p("/home/planner/sock")).kind());
        assertEquals(0, vfs.read(GUEST, p("/home/planner/empty")).length);
        assertDenied(() -> vfs.mknod(PLANNER, p("/home/coder/pipe"), EntryKind.FIFO, 0644));
        assertDenied(() -> vfs.mknod(PLANNER, p("/home/coder/dev"), EntryKind.OTHER, 0644));
        assertThrows(OperationNotPermittedException.class, () -> vfs.mknod(PLANNER, p("/shared/dev"), EntryKind.OTHER, 0644));
        assertThrows(OperationNotPermittedException.class, () -> vfs.mknod(SYSTEM, p("/sys/dev"), EntryKind.OTHER, 0644));
        assertFalse(vfs.exists(GUEST, p("/shared/dev")));
        assertFalse(vfs.exists(GUEST, p("/home/coder/pipe")));
    }

    @Test
    void aRenameMayNotCarryALinkToWhereItsTargetLeavesTheZone() throws IOException {
        vfs.createNamespace(List.of("planner"));
        vfs.mkdir(PLANNER, p("/shared/a/b"));
        vfs.symlink(PLANNER, p("/shared/a/b/l"), "../../x"); // /shared/x
        // same zone, same depth or deeper: the target stays in
        vfs.rename(PLANNER, p("/shared/a/b/l"), p("/shared/a/b/m"));
        vfs.mkdir(PLANNER, p("/shared/a/b/c"));
        vfs.rename(PLANNER, p("/shared/a/b/m"), p("/shared/a/b/c/m"));
        // shallower, or into another zone where the climb leaves it: EXDEV, so mv copies link by link
        CrossDeviceException e = assertThrows(CrossDeviceException.class,
                () -> vfs.rename(PLANNER, p("/shared/a/b/c/m"), p("/shared/m")));
        assertTrue(e.getReason().startsWith("Invalid cross-device link") && e.getReason().contains("'../../x'"),
                e.getReason());
        assertThrows(CrossDeviceException.class, () -> vfs.rename(PLANNER, p("/shared/a/b/c/m"), p("/home/planner/m")));
        vfs.rename(PLANNER, p("/shared/a/b/c/m"), p("/shared/a/b/m"));
        assertEquals("../../x", vfs.readLink(GUEST, p("/shared/a/b/m")));
        assertFalse(vfs.exists(GUEST, p("/shared/m")));
        assertFalse(vfs.exists(GUEST, p("/home/planner/m")));
        // a link the rule would allow where it lands moves across zones
        vfs.symlink(PLANNER, p("/shared/a/sib"), "b");
        vfs.rename(PLANNER, p("/shared/a/sib"), p("/home/planner/sib"));
        assertEquals("b", vfs.readLink(GUEST, p("/home/planner/sib")));
    }

    @Test
    void aDirectoryMovedAcrossZonesIsWalkedForTheLinksItCarries() throws IOException {
        vfs.createNamespace(List.of("planner"));
        vfs.mkdir(PLANNER, p("/shared/a/b/proj/src/deep"));
        vfs.write(PLANNER, p("/shared/a/b/proj/src/f"), bytes("f"));
        vfs.symlink(PLANNER, p("/shared/a/b/proj/src/deep/ok"), "../f");
        vfs.symlink(PLANNER, p("/shared/a/b/proj/src/deep/far"), "../../../../../x"); // /shared/x
        // at /home/planner/proj the far link would climb to /: the whole move is refused, nothing moved
        CrossDeviceException e = assertThrows(CrossDeviceException.class,
                () -> vfs.rename(PLANNER, p("/shared/a/b/proj"), p("/home/planner/proj")));
        assertTrue(e.getReason().contains("/shared/a/b/proj/src/deep/far"), e.getReason());
        assertTrue(vfs.exists(GUEST, p("/shared/a/b/proj/src/deep/ok")));
        assertFalse(vfs.exists(GUEST, p("/home/planner/proj")));
        // and within the zone, shallower: walked too
        assertThrows(CrossDeviceException.class, () -> vfs.rename(PLANNER, p("/shared/a/b/proj"), p("/shared/proj")));
        // without the far link it moves, links and all
        vfs.removeFile(PLANNER, p("/shared/a/b/proj/src/deep/far"));
        vfs.rename(PLANNER, p("/shared/a/b/proj"), p("/home/planner/proj"));
        assertEquals("../f", vfs.readLink(GUEST, p("/home/planner/proj/src/deep/ok")));
        // --symlinks any carries anything
        vfs.symlink(PLANNER, p("/shared/a/b/far"), "../../x");
        Router.builder(store).symlinks(SymlinkRule.ANY).build().rename(PLANNER, p("/shared/a/b/far"), p("/home/planner/far"));
        assertEquals("../../x", vfs.readLink(GUEST, p("/home/planner/far")));
    }

    @Test
    void aHardLinkOfASymbolicLinkIsJudgedWhereItLands() throws IOException {
        vfs.createNamespace(List.of("planner"));
        vfs.mkdir(PLANNER, p("/shared/a"));
        vfs.symlink(PLANNER, p("/shared/a/l"), "../x");
        vfs.link(PLANNER, p("/shared/a/l"), p("/shared/a/l2"));
        assertEquals("../x", vfs.readLink(GUEST, p("/shared/a/l2")));
        SymlinkDeniedException e = assertThrows(SymlinkDeniedException.class,
                () -> vfs.link(PLANNER, p("/shared/a/l"), p("/shared/l3")));
        assertTrue(e.getMessage().contains("'/shared/l3' -> '../x'"), e.getMessage());
        assertFalse(vfs.exists(GUEST, p("/shared/l3")));
    }

    // ---- longest-prefix routing ----

    @Test
    void longestPrefixRoutesAndStripsThePrefix() throws IOException {
        MemoryStorage scratch = new MemoryStorage();
        MemoryStorage sharedTmp = new MemoryStorage();
        vfs = Router.builder(store).mount(p("/scratch"), scratch).mount(p("/shared/tmp"), sharedTmp).build();

        assertSame(scratch, vfs.resolve(p("/scratch")).storage());
        assertEquals(VfsPath.root(), vfs.resolve(p("/scratch")).path());
        assertEquals(p("/a/b"), vfs.resolve(p("/scratch/a/b")).path());
        assertSame(store, vfs.resolve(p("/scratchx/a")).storage());
        assertEquals(p("/scratchx/a"), vfs.resolve(p("/scratchx/a")).path());
        assertSame(store, vfs.resolve(p("/shared/tmpx")).storage());

        vfs.write(SYSTEM, p("/scratch/a/b"), bytes("in memory"));
        assertArrayEquals(bytes("in memory"), scratch.read(p("/a/b")));
        assertFalse(store.exists(p("/scratch")));
        assertEquals("in memory", text("/scratch/a/b"));

        // the policy sees the full path, not the one inside the storage
        vfs.write(PLANNER, p("/shared/tmp/x"), bytes("tmp"));
        assertArrayEquals(bytes("tmp"), sharedTmp.read(p("/x")));
        assertDenied(() -> vfs.write(PLANNER, p("/scratch/a/b"), bytes("no")));
        assertDenied(() -> vfs.write(GUEST, p("/shared/tmp/y"), bytes("no")));

        vfs.copy(PLANNER, p("/shared/tmp/x"), p("/shared/copied"));
        assertEquals("tmp", text("/shared/copied"));
        FileSystemException e = assertThrows(FileSystemException.class,
                () -> vfs.rename(PLANNER, p("/shared/tmp/x"), p("/shared/moved")));
        assertTrue(e.getMessage().contains("Invalid cross-device link"), e.getMessage());
        assertThrows(FileSystemException.class, () -> vfs.link(PLANNER, p("/shared/tmp/x"), p("/shared/linked")));
        assertArrayEquals(bytes("tmp"), sharedTmp.read(p("/x")));
        assertFalse(vfs.exists(GUEST, p("/shared/moved")));
    }

    @Test
    void anUnnamedFileIsNamedInItsOwnStoreOnly() throws IOException {
        MemoryStorage sharedTmp = new MemoryStorage();
        vfs = Router.builder(store).mount(p("/shared/tmp"), sharedTmp).build();
        try (FileHandle h = vfs.openUnnamed(PLANNER, p("/shared/tmp"), 0644)) {
            h.write(java.nio.ByteBuffer.wrap(bytes("made")), 0);
            VfsPath last = Router.unnamedIn(p("/shared/tmp"));
            FileSystemException e = assertThrows(FileSystemException.class, () -> vfs.link(PLANNER, h, last, p("/shared/out")));
            assertEquals(Linux.EXDEV, Errors.errno(e));
            assertFalse(vfs.exists(GUEST, p("/shared/out")));
            vfs.link(PLANNER, h, last, p("/shared/tmp/in"));
        }
        assertArrayEquals(bytes("made"), sharedTmp.read(p("/in")), "the handle a prefix's store tagged reached it");
    }

    @Test
    void noStoreIsGivenANameLongerThanNameMaxBytes() throws IOException {
        MemoryStorage memory = new MemoryStorage();
        vfs = Router.builder(store).mount(p("/shared/mem"), memory).build();
        vfs.createNamespace(List.of("planner"));
        String longest = "a".repeat(Linux.NAME_MAX);
        String tooLong = "\u00e9".repeat(Linux.NAME_MAX / 2 + 1); // 128 characters, 256 bytes
        vfs.write(PLANNER, p("/shared/mem/" + longest), bytes("x"));
        vfs.write(PLANNER, p("/shared/mem/f"), bytes("x"));

        List<Executable> creates = List.of(
                () -> vfs.write(PLANNER, p("/shared/mem/" + tooLong), bytes("x")),
                () -> vfs.append(PLANNER, p("/shared/mem/" + tooLong), bytes("x")),
                () -> vfs.mkdir(PLANNER, p("/shared/mem/" + tooLong + "/sub")),
                () -> vfs.createDirectory(PLANNER, p("/shared/mem/" + tooLong)),
                () -> vfs.copy(PLANNER, p("/shared/mem/f"), p("/shared/mem/" + tooLong)),
                () -> vfs.rename(PLANNER, p("/shared/mem/f"), p("/shared/mem/" + tooLong)),
                () -> vfs.link(PLANNER, p("/shared/mem/f"), p("/shared/mem/" + tooLong)),
                () -> vfs.open(PLANNER, p("/shared/mem/" + tooLong), EnumSet.of(OpenFlag.WRITE, OpenFlag.CREATE), 0644),
                () -> vfs.mknod(PLANNER, p("/shared/mem/" + tooLong), EntryKind.FIFO, 0644));
        for (Executable create : creates) {
            FileSystemException e = assertThrows(FileSystemException.class, create);
            assertEquals(Linux.ENAMETOOLONG, Errors.errno(e), e.toString());
        }
        assertEquals(List.of(longest, "f"), vfs.list(GUEST, p("/shared/mem")).stream().map(Entry::name).sorted().toList());
        assertEquals("x", text("/shared/mem/f"));
    }

    @Test
    void filesOfAStoreAtAPrefixOrOfAReadOnlyStoreTakeLocks() throws IOException {
        // stress-ng and SQLite on a memory store: every lock was ENOLCK, the handle's defaults
        MemoryStorage sharedTmp = new MemoryStorage();
        LocalStorage docs = new LocalStorage(temp.resolve("docs"));
        docs.write(p("/db"), bytes("sqlite"));
        vfs = Router.builder(store).mount(p("/shared/tmp"), sharedTmp)
                .mount(p("/shared/docs"), new ReadOnlyStorage(docs, "readonly:docs")).build();
        vfs.write(SYSTEM, p("/shared/tmp/f"), bytes("x"));
        Set<OpenFlag> rw = EnumSet.of(OpenFlag.READ, OpenFlag.WRITE);
        try (FileHandle a = vfs.open(PLANNER, p("/shared/tmp/f"), rw, 0644);
             FileHandle b = vfs.open(PLANNER, p("/shared/tmp/f"), rw, 0644)) {
            assertTrue(a.locks().tryLock(1, LockType.WRITE, 0, 10));
            assertFalse(b.locks().tryLock(2, LockType.WRITE, 5, 5));
        }
        Set<OpenFlag> ro = EnumSet.of(OpenFlag.READ);
        try (FileHandle a = vfs.open(PLANNER, p("/shared/docs/db"), ro, 0);
             FileHandle b = vfs.open(PLANNER, p("/shared/docs/db"), ro, 0)) {
            assertTrue(a.locks().tryLock(1, LockType.READ, 0, 10));
            assertTrue(b.locks().tryLock(2, LockType.READ, 0, 10), "read locks share");
        }
    }

    @Test
    void aReadOnlyStoreRefusesLinksAndFifosAsEveryOtherChange() throws IOException {
        // they were EPERM ("this store holds no symbolic links"), where every other change is EROFS
        vfs = Router.builder(store).mount(p("/shared/docs"),
                new ReadOnlyStorage(new LocalStorage(temp.resolve("docs")), "readonly:docs")).build();
        assertThrows(ReadOnlyStoreException.class, () -> vfs.symlink(PLANNER, p("/shared/docs/l"), "x"));
        assertThrows(ReadOnlyStoreException.class, () -> vfs.mknod(PLANNER, p("/shared/docs/p"), EntryKind.FIFO, 0644));
        assertThrows(ReadOnlyStoreException.class, () -> vfs.mknod(PLANNER, p("/shared/docs/f"), EntryKind.FILE, 0644));
    }

    /** Linux answers EXDEV before EROFS: mv then copies out of a read-only store instead of failing. */
    @Test
    void aRenameOrLinkOutOfAReadOnlyStoreCrossesStoresFirst() throws IOException {
        Files.createDirectories(temp.resolve("docs"));
        Files.writeString(temp.resolve("docs/r.txt"), "r");
        vfs = Router.builder(store).mount(p("/shared/docs"),
                new ReadOnlyStorage(new LocalStorage(temp.resolve("docs")), "readonly:docs")).build();
        assertThrows(CrossDeviceException.class, () -> vfs.rename(PLANNER, p("/shared/docs/r.txt"), p("/shared/r.txt")));
        assertThrows(CrossDeviceException.class, () -> vfs.link(PLANNER, p("/shared/docs/r.txt"), p("/shared/r.txt")));
        assertThrows(ReadOnlyStoreException.class, () -> vfs.rename(PLANNER, p("/shared/docs/r.txt"), p("/shared/docs/s.txt")));
        assertTrue(Files.exists(temp.resolve("docs/r.txt")));
    }

    /**
     * A directory holding a store's mount point, however deep, neither goes nor moves: its own store
     * saw it empty (the mount point is not in it), and the store below was then out of reach.
     */
    @Test
    void aDirectoryHoldingAStoresMountPointCannotBeRemovedOrRenamed() throws IOException {
        vfs = Router.builder(store).mount(p("/shared/proj/cache"), new MemoryStorage())
                .mount(p("/shared/deep/a/b"), new MemoryStorage()).build();
        vfs.createNamespace(List.of());
        vfs.write(PLANNER, p("/shared/proj/cache/data"), bytes("keep"));
        for (String held : List.of("/shared/proj", "/shared/deep/a", "/shared/deep")) {
            // rmdir: its listing shows the way to the mount point, so it is not empty, as Linux says
            assertEquals(Linux.ENOTEMPTY, Errors.errno(assertThrows(IOException.class,
                    () -> vfs.removeDirectory(PLANNER, p(held)))), held);
            MountPointBusyException busy = assertThrows(MountPointBusyException.class,
                    () -> vfs.rename(PLANNER, p(held), p("/shared/moved")), held);
            assertTrue(busy.getMessage().contains("where a store is mounted"), busy.getMessage());
            assertThrows(MountPointBusyException.class, () -> vfs.delete(PLANNER, p(held)), held);
        }
        // the policy first, as Linux judges permission before EBUSY: a denied move is EACCES
        assertThrows(PolicyDeniedException.class, () -> vfs.rename(CODER, p("/shared/proj"), p("/home/planner/p")));
        assertEquals("keep", text("/shared/proj/cache/data"));
        assertTrue(Files.isDirectory(temp.resolve("vfs/shared/deep/a")));
        vfs.mkdir(PLANNER, p("/shared/proj/other"));
        vfs.rename(PLANNER, p("/shared/proj/other"), p("/shared/proj/else")); // a sibling moves as ever
        // where no mount made the directory (the vfs commands), a file there would stop the next mount
        Router commands = Router.builder(store).mount(p("/shared/team/scratch"), new MemoryStorage()).build();
        assertEquals(Linux.EISDIR, Errors.errno(assertThrows(IOException.class,
                () -> commands.write(PLANNER, p("/shared/team"), bytes("x")))));
        assertEquals(Linux.EISDIR, Errors.errno(assertThrows(IOException.class,
                () -> commands.symlink(PLANNER, p("/shared/team"), "x"))));
    }

    /**
     * An S3 store at a prefix that does not answer, with another store nested below it: the mount
     * failed, where one without the nested store mounted with a warning. The other directories are
     * made, and the caller hears which store was away.
     */
    @Test
    void aStoreThatDoesNotAnswerLeavesItsDirectoriesForLaterAndTheRestAreMade() throws IOException {
        Storage away = (Storage) Proxy.newProxyInstance(Storage.class.getClassLoader(), new Class<?>[] {Storage.class},
                (proxy, method, args) -> switch (method.getName()) {
                    case "answersMayWaitLong" -> true;
                    case "hashCode" -> System.identityHashCode(proxy);
                    case "equals" -> proxy == args[0];
                    default -> throw new IOException("cannot reach http://127.0.0.1:1");
                });
        Router withAway = Router.builder(store).mount(p("/shared/aw"), away).mount(p("/shared/aw/a/b"), new MemoryStorage())
                .build();
        StoreAwayException e = assertThrows(StoreAwayException.class,
                () -> withAway.createNamespace(List.of("planner")));
        assertTrue(e.getMessage().contains("cannot reach"), e.getMessage());
        assertTrue(Files.isDirectory(temp.resolve("vfs/home/planner")), "the local store's directories are made");
    }

    @Test
    void aStorePrefixThroughAFileOrWhereAReadOnlyStoreLacksADirectoryIsRefusedAtMount() throws IOException {
        vfs.createNamespace(List.of());
        vfs.write(SYSTEM, p("/shared/f"), bytes("a file"));
        Router throughFile = Router.builder(store).mount(p("/shared/f/x"), new MemoryStorage()).build();
        UnreachablePrefixException e = assertThrows(UnreachablePrefixException.class,
                () -> throughFile.createNamespace(List.of()));
        assertTrue(e.getMessage().contains("/shared/f/x") && e.getMessage().contains("/shared/f is not a directory"),
                e.getMessage());
        Path docs = Files.createDirectories(temp.resolve("docs"));
        Router underReadOnly = Router.builder(store)
                .mount(p("/site"), new ReadOnlyStorage(new LocalStorage(docs), "readonly:docs"))
                .mount(p("/site/x/y"), new MemoryStorage()).build();
        e = assertThrows(UnreachablePrefixException.class, () -> underReadOnly.createNamespace(List.of()));
        assertTrue(e.getMessage().contains("/site/x/y") && e.getMessage().contains("/site/x is missing"), e.getMessage());
        Files.createDirectories(docs.resolve("x"));
        underReadOnly.createNamespace(List.of()); // where the read-only store has it, the prefix is reached
        assertTrue(underReadOnly.metadata(GUEST, p("/site/x/y")).isDirectory());
    }

    @Test
    void aListingGivesTheInodeNumbersMetadataGivesTaggedInAStoreAtAPrefix() throws IOException {
        vfs = Router.builder(store).mount(p("/shared/tmp"), new MemoryStorage()).build();
        vfs.write(SYSTEM, p("/shared/f"), bytes("file"));
        vfs.write(SYSTEM, p("/shared/tmp/inside"), bytes("in memory"));
        for (String dir : List.of("/shared", "/shared/tmp")) {
            Map<String, Long> listed = new java.util.HashMap<>();
            vfs.forEachEntry(GUEST, p(dir), (name, offset, length, kind, inode) -> {
                listed.put(new String(name, offset, length, java.nio.charset.StandardCharsets.UTF_8), inode);
                return true;
            });
            listed.forEach((name, inode) -> {
                if (inode != 0) { // a mount point's name: the listing of the store below does not give it
                    assertEquals(assertDoesNotThrow(() -> vfs.metadata(GUEST, p(dir + "/" + name))).inode(), inode, name);
                }
            });
            assertTrue(listed.values().stream().anyMatch(i -> i != 0), dir + ": " + listed);
        }
    }

    @Test
    void siblingsAskAMountPointsOwnStoreAndGiveWhatMetadataGives() throws IOException {
        MemoryStorage sharedTmp = new MemoryStorage();
        vfs = Router.builder(store).mount(p("/shared/tmp"), sharedTmp).build();
        vfs.write(SYSTEM, p("/shared/f"), bytes("file"));
        vfs.write(SYSTEM, p("/shared/tmp/inside"), bytes("in memory"));
        try (Router.Siblings in = vfs.siblings(p("/shared"))) {
            for (String name : List.of("f", "tmp")) {
                Metadata one = vfs.metadata(GUEST, p("/shared/" + name));
                Metadata sibling = in.metadata(name);
                assertEquals(one.kind(), sibling.kind(), name);
                assertEquals(one.size(), sibling.size(), name);
                assertEquals(one.inode(), sibling.inode(), name + ": the mounted store's numbers carry its tag");
            }
            assertSame(store, in.storage("f"));
            assertSame(sharedTmp, in.storage("tmp"));
            assertThrows(NoSuchFileException.class, () -> in.metadata("missing"));
        }
        try (Router.Siblings in = vfs.siblings(p("/shared/tmp"))) {
            assertEquals(9, in.metadata("inside").size());
            assertSame(sharedTmp, in.storage("inside"));
        }
    }

    // ---- the namespace ----

    @Test
    void createNamespaceMakesTheZoneRootsAndHomes() throws IOException {
        vfs.createNamespace(List.of("planner", "coder"));
        for (String dir : new String[] {"/shared", "/home", "/sys", "/sys/tool_cache", "/home/planner", "/home/coder"}) {
            assertTrue(vfs.metadata(GUEST, p(dir)).isDirectory(), dir);
        }
        assertEquals(List.of("coder", "planner"), vfs.list(GUEST, p("/home")).stream().map(Entry::name).toList());
        vfs.write(PLANNER, p("/shared/keep"), bytes("k"));
        vfs.createNamespace(List.of("planner"));
        assertEquals("k", text("/shared/keep"));
    }

    @Test
    void createNamespaceRefusesInvalidNamesAndCreatesNothing() throws IOException {
        for (String bad : new String[] {"SYSTEM", "sYsTeM", "../x", "-", "", "a b", "a/b"}) {
            InvalidContextNameException e = assertThrows(InvalidContextNameException.class,
                    () -> vfs.createNamespace(List.of("planner", bad)));
            assertTrue(e.getMessage().contains("'" + bad + "'"), e.getMessage());
        }
        assertEquals(List.of(), vfs.list(GUEST, VfsPath.root()));
    }
    /**
     * The race a walk of a moved directory cannot see alone: a link made deep inside it while it is
     * moved up. Whatever places a link holds every other move out, in this process and through the
     * store (every mount of it); a plain rename or hard link holds the lock shared.
     */
    @Test
    void whatPlacesASymbolicLinkHoldsEveryOtherMoveOut() throws Throwable {
        MemoryStorage memory = new MemoryStorage();
        List<String> told = new ArrayList<>();
        Storage recorded = (Storage) Proxy.newProxyInstance(Storage.class.getClassLoader(),
                new Class<?>[] {Storage.class}, (proxy, method, args) -> {
                    switch (method.getName()) {
                        case "lockMoves" -> {
                            told.add((Boolean) args[0] ? "exclusive" : "shared");
                            return (Storage.MoveLock) () -> told.add("unlock");
                        }
                        case "rename", "createSymlink", "link" -> told.add(method.getName());
                        default -> { }
                    }
                    try {
                        return method.invoke(memory, args);
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
        Router router = Router.of(recorded);
        router.createNamespace(List.of("planner"));
        router.write(PLANNER, p("/shared/f"), bytes("x"));
        router.mkdir(PLANNER, p("/shared/d"));

        assertTold(told, List.of("shared", "rename", "unlock"), "a file moved",
                () -> router.rename(PLANNER, p("/shared/f"), p("/shared/g")));
        assertTold(told, List.of("shared", "unlock", "exclusive", "rename", "unlock"), "a directory moved",
                () -> router.rename(PLANNER, p("/shared/d"), p("/shared/e")));
        assertTold(told, List.of("exclusive", "createSymlink", "unlock"), "a link made",
                () -> router.symlink(PLANNER, p("/shared/e/l"), "../g"));
        assertTold(told, List.of("shared", "link", "unlock"), "a file's hard link",
                () -> router.link(PLANNER, p("/shared/g"), p("/shared/h")));
        assertTold(told, List.of("shared", "unlock", "exclusive", "link", "unlock"), "a link's hard link",
                () -> router.link(PLANNER, p("/shared/e/l"), p("/shared/e/l2")));
        assertTold(told, List.of("shared", "unlock", "exclusive", "rename", "unlock"), "a file exchanged with a directory",
                () -> router.rename(PLANNER, p("/shared/h"), p("/shared/e"), RenameMode.EXCHANGE));

        Router any = Router.builder(recorded).symlinks(SymlinkRule.ANY).build();
        assertTold(told, List.of("createSymlink"), "--symlinks any: no rule to keep, nothing held",
                () -> any.symlink(PLANNER, p("/shared/anywhere"), "/etc"));
    }

    /** {@code op} tells {@code told} exactly {@code expected}. */
    private static void assertTold(List<String> told, List<String> expected, String what, Executable op) throws Throwable {
        told.clear();
        op.execute();
        assertEquals(expected, told, what);
    }

    // ---- changes that wait for a lock another process holds (vfs write, append, edit) ----

    private static final String TEAM_WITH_BOB = "{\"flocks\":[{\"name\":\"team\",\"created_at\":1,"
            + "\"members\":[{\"context\":\"bob\",\"site\":\"site:h-1\"}]}]}";
    private static final String TEAM_WITHOUT_BOB = "{\"flocks\":[{\"name\":\"team\",\"created_at\":1,\"members\":[]}]}";

    /** Holds an exclusive flock on the store file, as flock(1) would, until closed. */
    private int flockHeld(String vfsPath) throws IOException {
        String file = temp.resolve("vfs").resolve(vfsPath.substring(1)).toString();
        int fd = dev.chibifs.sys.Syscalls.openat(dev.chibifs.sys.Linux.AT_FDCWD, file, dev.chibifs.sys.Linux.O_RDWR, 0, file);
        assertTrue(dev.chibifs.sys.Syscalls.flock(fd, dev.chibifs.sys.Linux.LOCK_EX | dev.chibifs.sys.Linux.LOCK_NB));
        return fd;
    }

    /** Counts down {@code waiting} once for each thread that waits for a lock. */
    private void hearWaits(java.util.concurrent.CountDownLatch waiting) {
        Set<Thread> heard = java.util.concurrent.ConcurrentHashMap.newKeySet();
        store.lockPause((path, millis) -> {
            if (heard.add(Thread.currentThread())) {
                waiting.countDown();
            }
            java.util.concurrent.TimeUnit.MILLISECONDS.sleep(millis);
        });
    }

    /** Runs {@code change} on a thread of its own: each waits for the lock apart from the others. */
    private static java.util.concurrent.CompletableFuture<Void> started(org.junit.jupiter.api.function.Executable change) {
        java.util.concurrent.CompletableFuture<Void> done = new java.util.concurrent.CompletableFuture<>();
        Thread t = new Thread(() -> {
            try {
                change.execute();
                done.complete(null);
            } catch (Throwable e) {
                done.completeExceptionally(e);
            }
        }, "waiting-change");
        t.setDaemon(true);
        t.start();
        return done;
    }

    /**
     * bob was removed from the flock while his append, write, edit and cp waited for the file's lock:
     * each is refused when it gets the lock, as his next request would be, and the file is as it was.
     * They were judged before the wait and wrote after the removal (cp until vfscmd4's finding 2).
     */
    @Test
    @org.junit.jupiter.api.Timeout(60)
    void aChangeWaitingForALockIsJudgedAgainWhenItGetsIt() throws Exception {
        Router flocks = Router.builder(store).flocks(() -> Optional.of("h-1")).build();
        Caller bob = Caller.context("bob");
        vfs.write(SYSTEM, p("/flocks/registry.json"), bytes(TEAM_WITH_BOB));
        vfs.write(SYSTEM, p("/flocks/team/f"), bytes("base\n"));
        vfs.write(SYSTEM, p("/shared/src"), bytes("copied"));
        java.util.concurrent.CountDownLatch waiting = new java.util.concurrent.CountDownLatch(4);
        hearWaits(waiting);
        List<java.util.concurrent.CompletableFuture<Void>> changes = new ArrayList<>();
        int held = flockHeld("/flocks/team/f");
        try {
            changes.add(started(() -> flocks.append(bob, p("/flocks/team/f"), bytes("late\n"), Precondition.NONE)));
            changes.add(started(() -> flocks.write(bob, p("/flocks/team/f"), bytes("replaced"), Precondition.NONE)));
            changes.add(started(() -> flocks.rewrite(bob, p("/flocks/team/f"), c -> bytes("edited"), Precondition.NONE)));
            changes.add(started(() -> flocks.copy(bob, p("/shared/src"), p("/flocks/team/f"))));
            assertTrue(waiting.await(30, java.util.concurrent.TimeUnit.SECONDS), "all four wait for the lock");
            vfs.write(SYSTEM, p("/flocks/registry.json"), bytes(TEAM_WITHOUT_BOB));
        } finally {
            dev.chibifs.sys.Syscalls.close(held);
        }
        for (java.util.concurrent.CompletableFuture<Void> change : changes) {
            java.util.concurrent.ExecutionException e = assertThrows(java.util.concurrent.ExecutionException.class,
                    () -> change.get(30, java.util.concurrent.TimeUnit.SECONDS));
            assertInstanceOf(PolicyDeniedException.class, e.getCause(), String.valueOf(e.getCause()));
            assertTrue(e.getCause().getMessage().contains("not a member of flock 'team'"), e.getCause().getMessage());
        }
        assertEquals("base\n", text("/flocks/team/f"));
    }

    /**
     * Finding 2 of the tester's: an edit and an append waiting at once for a lock on one file
     * (as `chibifs edit` and `chibifs append`); whichever goes first, both changes are in the file.
     */
    @Test
    @org.junit.jupiter.api.Timeout(60)
    void anEditAndAnAppendWaitingForOneFilesLockBothLand() throws Exception {
        vfs.write(PLANNER, p("/shared/f"), bytes("base\n"));
        java.util.concurrent.CountDownLatch waiting = new java.util.concurrent.CountDownLatch(2);
        hearWaits(waiting);
        java.util.concurrent.CompletableFuture<Void> edit;
        java.util.concurrent.CompletableFuture<Void> append;
        int held = flockHeld("/shared/f");
        try {
            edit = started(() -> vfs.rewrite(PLANNER, p("/shared/f"),
                    c -> new String(c, UTF_8).replace("base", "EDITED").getBytes(UTF_8), Precondition.NONE));
            append = started(() -> vfs.append(Caller.context("coder"), p("/shared/f"), bytes("APPENDED\n"), Precondition.NONE));
            assertTrue(waiting.await(30, java.util.concurrent.TimeUnit.SECONDS), "both wait for the lock");
        } finally {
            dev.chibifs.sys.Syscalls.close(held);
        }
        edit.get(30, java.util.concurrent.TimeUnit.SECONDS);
        append.get(30, java.util.concurrent.TimeUnit.SECONDS);
        assertEquals("EDITED\nAPPENDED\n", text("/shared/f"));
    }
}
