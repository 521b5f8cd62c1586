package dev.chibifs.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.chibifs.path.VfsPath;
import dev.chibifs.testing.Tmpfs;
import java.io.IOException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.io.TempDir;

/** The held store root notices at the next operation that the store directory moved, went or was replaced. */
class StoreRootTest {

    @TempDir
    Path temp;

    private static VfsPath p(String s) {
        return VfsPath.of(s);
    }

    private static void assertGone(LocalStorage storage) {
        FileSystemException e = assertThrows(FileSystemException.class, () -> storage.read(p("/shared/a")));
        assertTrue(e.getReason().startsWith("Input/output error: the store directory"), e.getReason());
    }

    @Test
    void movedAwayIsAnIoErrorAndMovedBackServesAgain() throws IOException {
        Path root = temp.resolve("vfs");
        LocalStorage storage = new LocalStorage(root);
        storage.write(p("/shared/a"), "one".getBytes());
        Files.move(root, temp.resolve("away"));
        assertGone(storage);
        Files.move(temp.resolve("away"), root);
        assertEquals("one", new String(storage.read(p("/shared/a"))));
    }

    @Test
    void aReplacementDirectoryIsServedFromTheNextOperation() throws IOException {
        Path root = temp.resolve("vfs");
        LocalStorage storage = new LocalStorage(root);
        storage.write(p("/shared/a"), "old".getBytes());
        Files.move(root, temp.resolve("old"));
        Files.createDirectories(root.resolve("shared"));
        Files.writeString(root.resolve("shared/a"), "new");
        assertEquals("new", new String(storage.read(p("/shared/a"))));
        assertEquals("old", Files.readString(temp.resolve("old/shared/a")));
    }

    /** Operations after the first: the root is no longer checked at each one, only when something happened to it. */
    private static void settle(LocalStorage storage) throws IOException {
        for (int i = 0; i < 3; i++) {
            storage.exists(p("/shared"));
        }
    }

    @ParameterizedTest(name = "after settling: {0}")
    @ValueSource(booleans = {false, true})
    void aLinkInPlaceOfTheStoreIsNeverFollowed(boolean settled) throws IOException {
        Path root = temp.resolve("vfs");
        LocalStorage storage = new LocalStorage(root);
        storage.write(p("/shared/a"), "mine".getBytes());
        if (settled) {
            settle(storage);
        }
        Path elsewhere = Files.createDirectories(temp.resolve("elsewhere/shared"));
        Files.writeString(elsewhere.resolve("a"), "theirs");
        Files.move(root, temp.resolve("moved"));
        Files.createSymbolicLink(root, temp.resolve("elsewhere"));
        assertGone(storage);
        assertThrows(IOException.class, () -> storage.write(p("/shared/b"), "x".getBytes()));
        assertTrue(Files.notExists(elsewhere.resolve("b")));
    }

    /**
     * A file system mounted over the store path is served, as a fresh open of the path would: mounts
     * are watched. Here a bind mount from the store's own file system, over the plain directory the
     * store began in: once it is unmounted, that directory, the store the daemon started on, is served
     * again (storefs3's finding C: it was EIO until a restart).
     */
    @Test
    void aFileSystemMountedOverTheStoreAfterUseIsServed() throws Exception {
        org.junit.jupiter.api.Assumptions.assumeTrue("root".equals(System.getProperty("user.name")), "mounting needs root");
        Path root = temp.resolve("vfs");
        // made first: a new name beside the store would itself have the root checked
        Path other = Files.createDirectories(temp.resolve("other/shared"));
        Files.writeString(other.resolve("a"), "over");
        LocalStorage storage = new LocalStorage(root);
        storage.write(p("/shared/a"), "under".getBytes());
        settle(storage);
        assertEquals(0, new ProcessBuilder("mount", "--bind", temp.resolve("other").toString(), root.toString())
                .inheritIO().start().waitFor());
        try {
            assertEquals("over", new String(storage.read(p("/shared/a"))));
        } finally {
            new ProcessBuilder("umount", "-l", root.toString()).inheritIO().start().waitFor();
        }
        assertEquals("under", new String(storage.read(p("/shared/a"))), "the first root, served again");
        assertEquals(null, storage.unanswered());
    }

    /**
     * The directory found under an unmounted file system is served only where it is the store's
     * first root, a plain directory: another directory of the parent's file system there stays EIO.
     */
    @Test
    void theFirstRootUnderAnUnmountedFileSystemIsServedAgain() throws IOException {
        Path root = Files.createDirectories(temp.resolve("vfs"));
        java.util.Set<Long> mounted = new java.util.HashSet<>();
        LocalStorage storage = new LocalStorage(root, new LateCloses(), mountedAt(mounted));
        storage.write(p("/shared/a"), "first".getBytes());
        Path disk = Files.createDirectories(temp.resolve("disk/shared"));
        Files.writeString(disk.resolve("a"), "disk");
        mounted.add(inode(temp.resolve("disk")));
        Files.move(root, temp.resolve("first"));
        Files.move(temp.resolve("disk"), root);
        assertEquals("disk", new String(storage.read(p("/shared/a"))), "mounted over it: served");
        Files.move(root, temp.resolve("disk"));
        Files.move(temp.resolve("first"), root);
        assertEquals("first", new String(storage.read(p("/shared/a"))), "unmounted: the first root again");
        assertEquals(null, storage.unanswered());
        Files.move(root, temp.resolve("first"));
        Files.move(temp.resolve("disk"), root);
        assertEquals("disk", new String(storage.read(p("/shared/a"))));
        Files.move(root, temp.resolve("disk"));
        Files.createDirectories(root.resolve("shared"));
        assertUnmounted(storage, root.toRealPath());
    }

    @ParameterizedTest(name = "after settling: {0}")
    @ValueSource(booleans = {false, true})
    void removedIsAnIoError(boolean settled) throws IOException {
        Path root = temp.resolve("vfs");
        LocalStorage storage = new LocalStorage(root);
        storage.createDirectory(p("/shared"));
        if (settled) {
            settle(storage);
        }
        Files.delete(root.resolve("shared"));
        Files.delete(root);
        assertGone(storage);
    }

    /**
     * Stands in for mounts without root: a directory whose inode is in {@code mounted} is on a
     * device of its own, as a file system mounted at the store's path is.
     */
    private static StoreRoot.Mounts mountedAt(java.util.Set<Long> mounted) {
        return fd -> {
            dev.chibifs.sys.Syscalls.Statx s = dev.chibifs.sys.Syscalls.stat(fd, null, null);
            long device = s.device();
            return mounted.contains(s.inode()) ? device + 1 : device;
        };
    }

    private static long inode(Path dir) throws IOException {
        return (Long) Files.getAttribute(dir, "unix:ino");
    }

    private static void assertUnmounted(LocalStorage storage, Path root) {
        FileSystemException e = assertThrows(FileSystemException.class, () -> storage.read(p("/shared/a")));
        assertEquals("Input/output error: the store directory " + root + " has lost its file system: the file system"
                + " mounted there is no longer there, and the directory under it is not served until one is mounted"
                + " there again", e.getReason());
    }

    /**
     * A store on a file system mounted at the store's path, unmounted under the mount: the directory
     * beneath is not served (an empty tree, and writes landing on the parent's file system, hidden
     * once the disk came back), until a file system is mounted there again.
     */
    @Test
    void theDirectoryUnderAnUnmountedStoreIsNeverServed() throws IOException {
        Path root = Files.createDirectories(temp.resolve("vfs"));
        java.util.Set<Long> mounted = new java.util.HashSet<>(java.util.Set.of(inode(root)));
        LocalStorage storage = new LocalStorage(root, new LateCloses(), mountedAt(mounted));
        storage.write(p("/shared/a"), "on the disk".getBytes());
        Files.move(root, temp.resolve("disk"));
        Files.createDirectory(root);
        Path root1 = root.toRealPath();
        assertUnmounted(storage, root1);
        assertThrows(IOException.class, () -> storage.createDirectory(p("/shared")));
        assertThrows(IOException.class, () -> storage.write(p("/b"), "x".getBytes()));
        try (var under = Files.list(root)) {
            assertEquals(0, under.count(), "nothing lands in the directory under the mount");
        }
        assertUnmounted(storage, root1);
        Files.delete(root);
        Files.move(temp.resolve("disk"), root);
        assertEquals("on the disk", new String(storage.read(p("/shared/a"))), "mounted again: served again");
    }

    /** A plain store directory: a file system mounted over it is followed, and so is a directory in its place. */
    @Test
    void aPlainStoreDirectoryFollowsAMountOverItAndAReplacement() throws IOException {
        Path root = temp.resolve("vfs");
        java.util.Set<Long> mounted = new java.util.HashSet<>();
        LocalStorage storage = new LocalStorage(root, new LateCloses(), mountedAt(mounted));
        storage.write(p("/shared/a"), "plain".getBytes());
        Files.move(root, temp.resolve("plain"));
        Files.createDirectories(root.resolve("shared"));
        Files.writeString(root.resolve("shared/a"), "replaced");
        assertEquals("replaced", new String(storage.read(p("/shared/a"))));
        Path disk = Files.createDirectories(temp.resolve("disk/shared"));
        Files.writeString(disk.resolve("a"), "disk");
        mounted.add(inode(temp.resolve("disk")));
        Files.move(root, temp.resolve("replaced"));
        Files.move(temp.resolve("disk"), root);
        assertEquals("disk", new String(storage.read(p("/shared/a"))));
    }

    /** As {@link #theDirectoryUnderAnUnmountedStoreIsNeverServed}, with a real tmpfs unmounted lazily (root only). */
    @Test
    void aTmpfsStoreUnmountedLazilyIsAnIoErrorUntilMountedAgain() throws Exception {
        dev.chibifs.testing.FuseSupport.requireRoot();
        Path root = Files.createDirectories(temp.resolve("vfs"));
        try (Tmpfs tmpfs = Tmpfs.mount(temp.resolve("disk"), "1m")) {
            Path disk = tmpfs.path();
            assertEquals(0, run("mount", "--bind", disk.toString(), root.toString()));
            LocalStorage storage = new LocalStorage(root);
            storage.write(p("/shared/a"), "on tmpfs".getBytes());
            settle(storage);
            assertEquals(0, run("umount", "-l", root.toString()));
            assertUnmounted(storage, root.toRealPath());
            assertThrows(IOException.class, () -> storage.createDirectory(p("/shared")));
            try (var under = Files.list(root)) {
                assertEquals(0, under.count(), "nothing lands in the directory under the mount");
            }
            assertEquals(0, run("mount", "--bind", disk.toString(), root.toString()));
            assertEquals("on tmpfs", new String(storage.read(p("/shared/a"))));
        } finally {
            run("umount", "-l", root.toString()); // the bind mount, before the tmpfs under it
        }
    }

    /**
     * Every request to an unmounted store failed while status said active and the log said nothing:
     * the store says why it fails (what status and stats show), and the log says so once per change.
     */
    @Test
    void anUnmountedStoreSaysWhyItFailsOncePerChange() throws IOException {
        Path root = Files.createDirectories(temp.resolve("vfs"));
        java.util.Set<Long> mounted = new java.util.HashSet<>(java.util.Set.of(inode(root)));
        LocalStorage storage = new LocalStorage(root, new LateCloses(), mountedAt(mounted));
        java.util.List<String> said = new java.util.ArrayList<>();
        storage.saidTo(said::add);
        storage.write(p("/shared/a"), "on the disk".getBytes());
        assertEquals(null, storage.failing());
        assertEquals(null, storage.unanswered());
        assertEquals(null, storage.state());
        Path real = root.toRealPath();
        Files.move(root, temp.resolve("disk"));
        Files.createDirectory(root);
        String why = "the store directory " + real + " has lost its file system: the file system mounted there is no"
                + " longer there, and the directory under it is not served until one is mounted there again";
        assertEquals(why, storage.failing());
        assertEquals(why, storage.unanswered());
        assertEquals("fails: " + why, storage.state());
        Files.delete(root);
        Files.move(temp.resolve("disk"), root);
        assertEquals(null, storage.failing());
        assertEquals(null, storage.failing());
        assertEquals(java.util.List.of("the local store fails: " + why, "the store directory " + real + " answers again"), said);
    }

    /**
     * A FUSE store whose daemon was killed: its root is still there, and a look at it answers
     * ENOTCONN (a stand-in for that look, without a mount). Each request said the directory "has
     * gone (moved, removed or replaced)" with EIO, the errno lost; it keeps ENOTCONN, as the store's
     * own requests had it, and status and the log say "answers ENOTCONN", as docs/operations.md says.
     */
    @Test
    void aStoreWhoseFileSystemIsNotConnectedKeepsItsErrno() throws IOException {
        Path root = Files.createDirectories(temp.resolve("vfs"));
        java.util.concurrent.atomic.AtomicBoolean dead = new java.util.concurrent.atomic.AtomicBoolean();
        StoreRoot.Mounts fuse = fd -> {
            if (dead.get()) {
                throw dev.chibifs.sys.ErrnoException.forErrno(dev.chibifs.sys.Linux.ENOTCONN, null);
            }
            return dev.chibifs.sys.Syscalls.device(fd);
        };
        LocalStorage storage = new LocalStorage(root, new LateCloses(), fuse);
        java.util.List<String> said = new java.util.ArrayList<>();
        storage.saidTo(said::add);
        storage.write(p("/shared/a"), "kept".getBytes());
        Path real = root.toRealPath();
        // the held root no longer checks out, as a look at a dead FUSE store's root fails: opened again
        Files.move(root, temp.resolve("served"));
        Files.createDirectory(root);
        dead.set(true);
        FileSystemException e = assertThrows(FileSystemException.class, () -> storage.read(p("/shared/a")));
        assertEquals(dev.chibifs.sys.Linux.ENOTCONN, dev.chibifs.sys.HasErrno.of(e), e.toString());
        assertEquals("Transport endpoint is not connected: the store directory " + real + " answers ENOTCONN (Transport"
                + " endpoint is not connected): its file system fails as a whole", e.getReason());
        String why = "its directory " + real + " answers ENOTCONN (Transport endpoint is not connected): requests there fail";
        assertEquals(why, storage.failing());
        dead.set(false);
        Files.delete(root);
        Files.move(temp.resolve("served"), root);
        assertEquals("kept", new String(storage.read(p("/shared/a"))), "connected again: served again");
        assertEquals(null, storage.failing());
        assertEquals(java.util.List.of("the local store fails: " + why, "the store directory " + real + " answers again"), said);
    }

    /** A store whose file system turned read-only (errors=remount-ro) fails every change: said, reads still served (root only). */
    @Test
    void aStoreWhoseFileSystemTurnedReadOnlySaysSo() throws Exception {
        dev.chibifs.testing.FuseSupport.requireRoot();
        try (Tmpfs disk = Tmpfs.mount(temp.resolve("vfs"), "1m")) {
            Path root = disk.path();
            LocalStorage storage = new LocalStorage(root);
            storage.write(p("/shared/a"), "kept".getBytes());
            assertEquals(null, storage.unanswered());
            disk.readOnly(true);
            assertEquals("its directory " + root.toRealPath() + " answers EROFS (Read-only file system): every change"
                    + " there fails", storage.unanswered());
            assertEquals(null, storage.failing(), "reads are served: not failing");
            assertEquals("kept", new String(storage.read(p("/shared/a"))));
            disk.readOnly(false);
            assertEquals(null, storage.unanswered());
        }
    }

    /**
     * A disk mounted read-only on purpose was said to fail ("answers EROFS: every change there
     * fails", a WARN before the mount's first line): it is read-only, reads served, and nothing is
     * said until it changes; turned read-only again after it took changes, it fails as before (root only).
     */
    @Test
    void aStoreReadOnlyFromTheStartIsReadOnlyNotFailing() throws Exception {
        dev.chibifs.testing.FuseSupport.requireRoot();
        try (Tmpfs disk = Tmpfs.mount(temp.resolve("vfs"), "1m")) {
            Path root = disk.path();
            Files.createDirectories(root.resolve("shared"));
            Files.writeString(root.resolve("shared/a"), "kept");
            disk.readOnly(true);
            LocalStorage storage = new LocalStorage(root);
            java.util.List<String> said = new java.util.ArrayList<>();
            storage.saidTo(said::add);
            Path real = root.toRealPath();
            String readOnly = "is read-only: its directory " + real + " is on a read-only file system, as it was when the"
                    + " mount began: reads are served, every change there answers EROFS (Read-only file system)";
            assertEquals(readOnly, storage.unanswered());
            assertEquals(readOnly, storage.state(), "stats: store /: is read-only: ...");
            assertEquals(null, storage.failing());
            assertEquals("kept", new String(storage.read(p("/shared/a"))));
            assertEquals(readOnly, storage.unanswered());
            assertEquals(java.util.List.of(), said, "nothing to warn of");

            disk.readOnly(false);
            assertEquals(null, storage.unanswered());
            disk.readOnly(true);
            String fails = "its directory " + real + " answers EROFS (Read-only file system): every change there fails";
            assertEquals(fails, storage.unanswered(), "turned read-only while it took changes: that fails");
            assertEquals("fails: " + fails, storage.state());
            assertEquals(java.util.List.of("the store directory " + real + " takes changes now",
                    "the local store fails: " + fails), said);
        }
    }

    private static int run(String... command) throws IOException, InterruptedException {
        return new ProcessBuilder(command).inheritIO().start().waitFor();
    }

    /** How many of this process's descriptors are open on a file whose path begins with {@code prefix}. */
    private static long descriptorsOn(String prefix) throws IOException {
        try (var fds = Files.list(Path.of("/proc/self/fd"))) {
            return fds.filter(fd -> {
                try {
                    return Files.readSymbolicLink(fd).toString().startsWith(prefix);
                } catch (IOException closedMeanwhile) {
                    return false;
                }
            }).count();
        }
    }

    /**
     * Every replaced root's descriptors stayed open for the daemon's life (40 replacements of a plain
     * store directory: 23 to 101 descriptors): they close once no operation uses them, and an
     * operation still using one (a listing begun before the replacements) reads its own root to the end.
     */
    @Test
    void aReplacedRootIsClosedOnceNoOperationUsesIt() throws IOException {
        Path root = temp.toRealPath().resolve("vfs");
        LateCloses lateCloses = new LateCloses();
        LocalStorage storage = new LocalStorage(root, lateCloses);
        storage.write(p("/shared/a"), "0".getBytes());
        String old = temp.toRealPath().resolve("old").toString();
        try (Storage.Siblings first = storage.siblings(VfsPath.root())) {
            for (int i = 1; i <= 40; i++) {
                Files.move(root, Path.of(old + i));
                Files.createDirectories(root.resolve("shared"));
                Files.writeString(root.resolve("shared/a"), "" + i);
                assertEquals("" + i, new String(storage.read(p("/shared/a"))));
            }
            assertEquals(inode(Path.of(old + 1, "shared")), first.metadata("shared").inode(),
                    "the listing begun on the first root still reads that root, not whatever got its number");
            lateCloses.flush();
            assertEquals(1, descriptorsOn(old), "only the root a listing still uses");
        }
        lateCloses.flush();
        assertEquals(0, descriptorsOn(old));
        assertEquals("40", new String(storage.read(p("/shared/a"))));
    }

    /**
     * A store file system unmounted lazily under the store was kept in the kernel by the held root
     * (a loop device stayed attached to its image, and mounting the image again was handed the same
     * file system): once the store fails as unmounted, no descriptor of it is left open.
     */
    @Test
    void anUnmountedStoreFileSystemIsLetGo() throws Exception {
        dev.chibifs.testing.FuseSupport.requireRoot();
        Path root = temp.resolve("vfs");
        try (Tmpfs tmpfs = Tmpfs.mount(root, "1m")) {
            LateCloses lateCloses = new LateCloses();
            LocalStorage storage = new LocalStorage(root, lateCloses);
            storage.write(p("/shared/a"), "on tmpfs".getBytes());
            settle(storage);
            long device = (Long) Files.getAttribute(root, "unix:dev");
            assertTrue(Tmpfs.descriptorsOnDevice(device) > 0);
            assertEquals(0, run("umount", "-l", root.toString()));
            assertUnmounted(storage, root.toRealPath());
            lateCloses.flush();
            assertEquals(0, Tmpfs.descriptorsOnDevice(device), "nothing holds the unmounted file system");
        }
    }

    /**
     * The store's own file system shows its inode numbers unchanged (StoreDevices): a file system
     * mounted over a plain store directory is the store's own from then on, though the new root may
     * be handed the closed root's descriptor numbers, which once told that nothing changed.
     */
    @Test
    void aFileSystemMountedOverAPlainStoreShowsItsOwnNumbers() throws Exception {
        dev.chibifs.testing.FuseSupport.requireRoot();
        Path root = Files.createDirectories(temp.resolve("vfs"));
        LocalStorage storage = new LocalStorage(root);
        storage.write(p("/shared/a"), "plain".getBytes());
        assertEquals(inode(root.resolve("shared/a")), storage.metadata(p("/shared/a")).inode());
        try (Tmpfs tmpfs = Tmpfs.mount(root, "1m")) {
            Files.createDirectories(root.resolve("shared"));
            Files.writeString(root.resolve("shared/a"), "tmpfs");
            assertEquals("tmpfs", new String(storage.read(p("/shared/a"))));
            assertEquals(inode(root.resolve("shared/a")), storage.metadata(p("/shared/a")).inode());
        }
    }

    /**
     * Another file system (empty, or another's) mounted in the store's place was served without a
     * word: listings empty, every file ENOENT, status active. It is served still, and said at its
     * first request, in the log and as a trouble line, until the store is back.
     */
    @Test
    void aRootWithNoneOfTheStoresDirectoriesIsSaid() throws IOException {
        Path root = temp.toRealPath().resolve("vfs");
        LocalStorage storage = new LocalStorage(root);
        java.util.List<String> said = new java.util.ArrayList<>();
        storage.saidTo(said::add);
        storage.write(p("/shared/a"), "mine".getBytes());
        storage.createDirectory(p("/home"));
        Files.createDirectories(root.resolve("lost+found"));
        Files.move(root, temp.resolve("store"));
        Files.createDirectories(root.resolve("lost+found"));
        assertThrows(java.nio.file.NoSuchFileException.class, () -> storage.read(p("/shared/a")));
        String why = "the store directory " + root + " holds another file system now (or an empty one): it has none"
                + " of the directories the store had there (home, shared), and is served as it is: mount the"
                + " store's file system there again";
        assertEquals(java.util.List.of("the local store fails: " + why), said, "said at the first request");
        assertEquals(why, storage.unanswered());
        assertEquals(null, storage.failing(), "served: requests answer");
        Files.delete(root.resolve("lost+found"));
        Files.delete(root);
        Files.move(temp.resolve("store"), root);
        assertEquals("mine", new String(storage.read(p("/shared/a"))));
        assertEquals(java.util.List.of("the local store fails: " + why, "the store directory " + root + " answers again"), said,
                "said at the first request too, not at the next status");
        assertEquals(null, storage.unanswered());
    }
}
