package dev.chibifs.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.chibifs.path.VfsPath;
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

    /** A file system mounted over the store path is served, as a fresh open of the path would: mounts are watched. */
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
        assertEquals("under", new String(storage.read(p("/shared/a"))), "and after the unmount, the store under it again");
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
}
