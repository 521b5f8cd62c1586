package dev.chibifs.store;

import dev.chibifs.sys.Linux;
import dev.chibifs.sys.Syscalls;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.chibifs.path.VfsPath;
import java.io.IOException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Held directories are reused while they stay where they were, and never once they moved, went or
 * were replaced behind our back, whatever replaced them.
 */
class HeldDirectoriesTest {

    @TempDir
    Path temp;

    private Path root;
    private int rootFd;
    private HeldDirectories held;

    @BeforeEach
    void open() throws IOException {
        root = Files.createDirectories(temp.resolve("vfs"));
        rootFd = Syscalls.openat(Linux.AT_FDCWD, root.toString(), Linux.O_PATH | Linux.O_DIRECTORY, 0, null);
        held = quiet(() -> 64, System::nanoTime);
    }

    /**
     * Held directories whose mount table never changes: a mount or unmount anywhere on the host
     * drops everything held, and the suite's other test JVM mounts all the time.
     */
    private HeldDirectories quiet(java.util.function.IntSupplier limit, java.util.function.LongSupplier nanoTime)
            throws IOException {
        Path still = temp.resolve("mountinfo");
        if (!Files.exists(still)) {
            Files.writeString(still, "");
        }
        return new HeldDirectories(limit, nanoTime, new LateCloses(true), still);
    }

    @AfterEach
    void close() {
        held.close();
        Syscalls.close(rootFd);
    }

    private static final VfsPath P = VfsPath.of("/x");

    /** As LocalStorage opens a directory: what changed first, then the directory. */
    private HeldDirectories.Lease lease(String relative, VfsPath path) throws IOException {
        held.refresh();
        return held.open(rootFd, 1, relative, path);
    }

    /** The inode of {@code name} inside the held directory {@code relative}, or an exception. */
    private long inodeIn(String relative, String name) throws IOException {
        try (HeldDirectories.Lease d = lease(relative, P)) {
            return Syscalls.stat(d.fd(), name, P.toString()).inode();
        }
    }

    private int fdOf(String relative) throws IOException {
        try (HeldDirectories.Lease d = lease(relative, P)) {
            return d.fd();
        }
    }

    /** Directories {@code made} in the store, of which at most three are held at once. */
    private void holdAtMostThreeOf(String... made) throws IOException {
        held.close();
        held = quiet(() -> 3, System::nanoTime);
        for (String d : made) {
            Files.createDirectories(root.resolve(d));
        }
        assumeHeld();
    }

    /** Skips where inotify cannot follow the temp directory's file system; elsewhere holding must work. */
    private void assumeHeld() throws IOException {
        assumeTrue(HeldDirectories.followable(rootFd), "inotify cannot follow the temp directory's file system");
        fdOf("a");
        assertTrue(held.enabled(), "nothing held: out of inotify instances (fs.inotify.max_user_instances)?");
    }

    /** A descriptor limit lowered under the daemon (prlimit) left every listing EMFILE while it ran. */
    @Test
    void holdsAQuarterOfTheDescriptorLimitBetweenSixteenAndFourThousand() {
        assertEquals(256, HeldDirectories.limitFor(1024));
        assertEquals(16, HeldDirectories.limitFor(20), "a low limit still holds a few");
        assertEquals(4096, HeldDirectories.limitFor(1 << 20), "a high limit holds no more than 4,096");
    }

    @Test
    void whatIsHeldFollowsTheDescriptorLimitAskedEverySecond() throws IOException {
        java.util.concurrent.atomic.AtomicInteger limit = new java.util.concurrent.atomic.AtomicInteger(64);
        java.util.concurrent.atomic.AtomicLong now = new java.util.concurrent.atomic.AtomicLong();
        held.close();
        held = quiet(limit::get, now::get);
        for (int i = 0; i < 10; i++) {
            Files.createDirectories(root.resolve("d" + i));
        }
        Files.createDirectories(root.resolve("a"));
        assumeHeld();
        for (int i = 0; i < 10; i++) {
            fdOf("d" + i);
        }
        assertEquals(11, held.size());
        limit.set(4);
        held.refresh();
        assertEquals(11, held.size(), "asked once a second, not at every operation");
        now.addAndGet(java.util.concurrent.TimeUnit.SECONDS.toNanos(1));
        held.refresh();
        assertEquals(0, held.size(), "past the new limit: everything held goes");
        for (int i = 0; i < 10; i++) {
            fdOf("d" + i);
            assertTrue(held.size() <= 4, "at most the new limit");
        }
    }

    @Test
    void aDirectoryStaysHeldWhileItStaysPut() throws IOException {
        Files.createDirectories(root.resolve("a/b"));
        assumeHeld();
        int first = fdOf("a/b");
        assertEquals(first, fdOf("a/b"));
        assertEquals(2, held.size(), "a/b and its parent a");
        Files.writeString(root.resolve("a/b/f"), "x");
        assertEquals(Files.getAttribute(root.resolve("a/b/f"), "unix:ino"), inodeIn("a/b", "f"));
    }

    @Test
    void renamedAwayIsLetGo() throws IOException {
        Files.createDirectories(root.resolve("a/b"));
        assumeHeld();
        fdOf("a/b");
        Files.move(root.resolve("a/b"), root.resolve("a/c"));
        assertThrows(NoSuchFileException.class, () -> lease("a/b", P));
        Files.writeString(root.resolve("a/c/f"), "x");
        inodeIn("a/c", "f");
    }

    @Test
    void removedAndMadeAgainIsTheNewDirectory() throws IOException {
        Files.createDirectories(root.resolve("a/b"));
        assumeHeld();
        fdOf("a/b");
        Files.delete(root.resolve("a/b"));
        Files.createDirectories(root.resolve("a/b"));
        Files.writeString(root.resolve("a/b/f"), "new");
        assertEquals(Files.getAttribute(root.resolve("a/b/f"), "unix:ino"), inodeIn("a/b", "f"));
    }

    @Test
    void renamedOverIsTheNewDirectory() throws IOException {
        Files.createDirectories(root.resolve("a/b"));
        Files.createDirectories(root.resolve("a/n"));
        Files.writeString(root.resolve("a/n/f"), "new");
        assumeHeld();
        fdOf("a/b");
        Files.move(root.resolve("a/n"), root.resolve("a/b"), java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        inodeIn("a/b", "f");
    }

    @Test
    void aMovedAncestorLetsGoOfEverythingBelowIt() throws IOException {
        Files.createDirectories(root.resolve("a/b/c"));
        assumeHeld();
        fdOf("a/b/c");
        Files.move(root.resolve("a"), root.resolve("z"));
        assertThrows(NoSuchFileException.class, () -> lease("a/b/c", P));
        assertThrows(NoSuchFileException.class, () -> lease("a/b", P));
        fdOf("z/b/c");
    }

    @Test
    void aLinkPutInPlaceOfAHeldDirectoryIsRefused() throws IOException {
        Files.createDirectories(root.resolve("a/b"));
        Path outside = Files.createDirectories(temp.resolve("outside"));
        assumeHeld();
        fdOf("a/b");
        // the held directory moves out of the store, and a link to where it went takes its name
        Files.move(root.resolve("a/b"), outside.resolve("b"));
        Files.createSymbolicLink(root.resolve("a/b"), outside.resolve("b"));
        FileSystemException e = assertThrows(FileSystemException.class, () -> lease("a/b", P));
        assertTrue(e.getReason() != null && e.getReason().contains("symbolic links"), e.getReason());
    }

    @Test
    void aFileSystemMountedOverAHeldDirectoryIsServed() throws Exception {
        assumeTrue("root".equals(System.getProperty("user.name")), "mounting needs root");
        held.close();
        held = new HeldDirectories(64, new LateCloses(true)); // the host's mount table, this test's subject
        Files.createDirectories(root.resolve("a/b"));
        Path other = Files.createDirectories(temp.resolve("other"));
        Files.writeString(other.resolve("f"), "over");
        assumeHeld();
        fdOf("a/b");
        assertEquals(0, new ProcessBuilder("mount", "--bind", other.toString(), root.resolve("a/b").toString())
                .inheritIO().start().waitFor());
        try {
            assertEquals(Files.getAttribute(other.resolve("f"), "unix:ino"), inodeIn("a/b", "f"));
        } finally {
            new ProcessBuilder("umount", "-l", root.resolve("a/b").toString()).inheritIO().start().waitFor();
        }
        assertThrows(NoSuchFileException.class, () -> inodeIn("a/b", "f"), "the directory under it again");
    }

    /**
     * storefs3's finding 5: a file system mounted inside the store, once listed, stayed EBUSY for its
     * umount until some other mount on the host dropped what was held (never, on a quiet host, as
     * here with a mount table that never changes): its directories are opened per operation instead.
     */
    @Test
    void aFileSystemMountedInsideTheStoreIsNotHeld() throws Exception {
        dev.chibifs.testing.FuseSupport.requireRoot();
        Files.createDirectories(root.resolve("a"));
        assumeHeld();
        Path inner = root.resolve("a/t5");
        try (dev.chibifs.testing.Tmpfs tmpfs = dev.chibifs.testing.Tmpfs.mount(inner, "1m")) {
            Files.createDirectories(inner.resolve("sub"));
            Files.writeString(inner.resolve("sub/f"), "inner");
            long device = (Long) Files.getAttribute(inner, "unix:dev");
            assertEquals(Files.getAttribute(inner.resolve("sub/f"), "unix:ino"), inodeIn("a/t5/sub", "f"));
            assertEquals(Files.getAttribute(inner.resolve("sub"), "unix:ino"), inodeIn("a/t5", "sub"));
            assertEquals(0, dev.chibifs.testing.Tmpfs.descriptorsOnDevice(device), "nothing of the inner file system is held");
            assertEquals(1, held.size(), "its parent, on the store's own mount, still is");
            assertEquals(0, new ProcessBuilder("umount", inner.toString()).inheritIO().start().waitFor(),
                    "its umount is not busy");
        }
        assertThrows(NoSuchFileException.class, () -> inodeIn("a/t5", "sub"), "the directory under it again");
    }

    /**
     * Renames racing opens on other threads: three directories take turns at a/b, and an open that
     * starts after a turn was complete never gets the directory that left before it.
     */
    @Test
    @org.junit.jupiter.api.Timeout(60)
    void anOpenThatStartsAfterARenameNeverGetsTheDirectoryThatLeft() throws Exception {
        String[] dirs = {"p", "q", "r"};
        for (String d : dirs) {
            Files.createDirectories(root.resolve("a/park-" + d));
            Files.writeString(root.resolve("a/park-" + d + "/" + d), d);
        }
        Files.move(root.resolve("a/park-p"), root.resolve("a/b"));
        assumeHeld();
        java.util.concurrent.atomic.AtomicInteger turn = new java.util.concurrent.atomic.AtomicInteger();
        java.util.concurrent.atomic.AtomicInteger begun = new java.util.concurrent.atomic.AtomicInteger();
        java.util.concurrent.atomic.AtomicBoolean stop = new java.util.concurrent.atomic.AtomicBoolean();
        java.util.concurrent.ConcurrentLinkedQueue<String> wrong = new java.util.concurrent.ConcurrentLinkedQueue<>();
        java.util.concurrent.atomic.AtomicInteger checked = new java.util.concurrent.atomic.AtomicInteger();
        Runnable opener = () -> {
            while (!stop.get()) {
                int t = turn.get();
                String expected = dirs[t % 3];
                String next = dirs[(t + 1) % 3];
                try (HeldDirectories.Lease d = lease("a/b", P)) {
                    for (String name : dirs) {
                        int fd = Syscalls.tryOpenat(d.fd(), name, Linux.O_PATH | Linux.O_NOFOLLOW, 0);
                        if (fd >= 0) {
                            Syscalls.close(fd);
                            checked.incrementAndGet();
                            // with three taking turns, the one that left before turn t comes back two
                            // turns later: judge only opens that ended before that move began
                            if (!name.equals(expected) && !name.equals(next) && begun.get() <= t + 1) {
                                wrong.add("turn " + t + ": got " + name + ", which left before it");
                            }
                        }
                    }
                } catch (IOException gone) {
                    // between a turn's two renames a/b is not there
                }
            }
        };
        java.util.List<Thread> openers = new java.util.ArrayList<>();
        for (int i = 0; i < 3; i++) {
            Thread th = new Thread(opener);
            th.start();
            openers.add(th);
        }
        try {
            for (int t = 0; t < 400; t++) {
                String leaving = dirs[t % 3];
                String coming = dirs[(t + 1) % 3];
                begun.incrementAndGet();
                Files.move(root.resolve("a/b"), root.resolve("a/park-" + leaving));
                Files.move(root.resolve("a/park-" + coming), root.resolve("a/b"));
                turn.incrementAndGet();
                Thread.sleep(0, 200_000);
            }
        } finally {
            stop.set(true);
            for (Thread th : openers) {
                th.join();
            }
        }
        assertTrue(wrong.isEmpty(), String.join("\n", wrong));
        assertTrue(checked.get() > 100, "the openers got to look: " + checked.get());
    }

    @Test
    void aLeaseKeepsItsDirectoryOpenAfterItIsLetGo() throws IOException {
        Files.createDirectories(root.resolve("a/b"));
        Files.writeString(root.resolve("a/b/f"), "x");
        assumeHeld();
        try (HeldDirectories.Lease lease = lease("a/b", P)) {
            Files.move(root.resolve("a/b"), root.resolve("a/c"));
            fdOf("a/c"); // reads the events: a/b is let go while the lease is out
            assertEquals(2, held.size(), "a and a/c held, a/b let go");
            Syscalls.stat(lease.fd(), "f", P.toString()); // still the directory it was, now at a/c
        }
    }

    @Test
    void pastTheLimitEverythingIsLetGoAndHeldAfresh() throws IOException {
        holdAtMostThreeOf("a/b/c/d", "e");
        fdOf("a/b/c/d");
        assertTrue(held.size() <= 3);
        fdOf("e");
        Files.delete(root.resolve("a/b/c/d"));
        assertThrows(NoSuchFileException.class, () -> lease("a/b/c/d", P));
    }

    @Test
    void aMovedDirectoryLetsGoOfItsOwnTreeAndNothingElse() throws IOException {
        Files.createDirectories(root.resolve("a/b/c"));
        Files.createDirectories(root.resolve("a/bb"));
        Files.createDirectories(root.resolve("a/b2/c"));
        Files.createDirectories(root.resolve("a/b.x/c")); // '.' sorts before '/', '2' after
        assumeHeld();
        fdOf("a/b/c");
        int sibling = fdOf("a/bb");
        int cousin = fdOf("a/b2/c");
        int before = fdOf("a/b.x/c");
        assertEquals(8, held.size(), "a, a/b, a/b/c, a/bb, a/b2, a/b2/c, a/b.x, a/b.x/c");
        Files.move(root.resolve("a/b"), root.resolve("z"));
        held.refresh();
        assertEquals(6, held.size(), "a/b and a/b/c let go");
        assertEquals(sibling, fdOf("a/bb"), "a name that merely starts like the moved one stays held");
        assertEquals(cousin, fdOf("a/b2/c"));
        assertEquals(before, fdOf("a/b.x/c"));
        assertThrows(NoSuchFileException.class, () -> lease("a/b/c", P));
    }

    @Test
    void aDirectoryWhoseParentIsNotHeldIsNotHeldEither() throws IOException {
        holdAtMostThreeOf("a/b/c/d", "e");
        fdOf("e");
        fdOf("a/b");
        // holding a/b/c meets the limit: everything is let go and a/b/c is walked, not held; a/b/c/d
        // under it must not be held either, since no watch would tell of a/b/c or a/b moving
        fdOf("a/b/c/d");
        Files.move(root.resolve("a/b"), root.resolve("z"));
        assertThrows(NoSuchFileException.class, () -> lease("a/b/c/d", P));
    }

    @Test
    void anotherRootLetsGoOfEverything() throws IOException {
        Files.createDirectories(root.resolve("a/b"));
        assumeHeld();
        fdOf("a/b");
        Path other = Files.createDirectories(temp.resolve("other/a/b"));
        int otherRoot = Syscalls.openat(Linux.AT_FDCWD, temp.resolve("other").toString(), Linux.O_PATH | Linux.O_DIRECTORY, 0, null);
        try {
            Files.writeString(other.resolve("f"), "x");
            try (HeldDirectories.Lease d = held.open(otherRoot, 2, "a/b", P)) {
                assertEquals(Files.getAttribute(other.resolve("f"), "unix:ino"), Syscalls.stat(d.fd(), "f", P.toString()).inode());
            }
        } finally {
            Syscalls.close(otherRoot);
        }
    }
}
