package dev.chibifs.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.chibifs.path.VfsPath;
import dev.chibifs.testing.MutableClock;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.Test;

/** The in-memory store against the shared behaviour suite, and what only its clock can show. */
class MemoryStorageTest extends StorageBehaviourSuite {

    @Override
    protected Storage newStorage() {
        return new MemoryStorage();
    }

    @Override
    protected Storage newStorageOnASmallDisk(long bytes) {
        return new MemoryStorage(bytes);
    }

    /** Extended attributes live on the Java heap: unbounded, one context's values filled it and the daemon died. */
    @Test
    void extendedAttributesCountAgainstTheSizeAndGiveItBackWhenTheyGo() throws IOException {
        long names = 2 * MemoryStorage.NAME_COST; // f and d
        MemoryStorage memory = new MemoryStorage(1000 + names);
        VfsPath f = VfsPath.of("/f");
        VfsPath d = VfsPath.of("/d");
        memory.write(f, new byte[100]);
        memory.createDirectory(d);
        memory.setXattr(f, "user.a", new byte[500], XattrMode.SET);
        assertEquals(names + 100 + 6 + 500, memory.used());
        java.nio.file.FileSystemException full = org.junit.jupiter.api.Assertions.assertThrows(
                java.nio.file.FileSystemException.class, () -> memory.setXattr(d, "user.b", new byte[500], XattrMode.SET));
        assertTrue(full.getMessage().contains("No space left on device"), full.getMessage());
        assertTrue(memory.xattrNames(d).isEmpty(), "nothing set");
        memory.setXattr(f, "user.a", new byte[10], XattrMode.SET); // a smaller value gives the rest back
        memory.setXattr(d, "user.b", new byte[500], XattrMode.SET);
        assertEquals(names + 100 + 16 + 506, memory.used());
        memory.removeXattr(f, "user.a");
        memory.delete(d);
        assertEquals(names / 2 + 100, memory.used());
        memory.createDirectory(d);
        memory.setXattr(d, "user.b", new byte[500], XattrMode.SET);
        memory.removeDirectory(d); // rmdir, not delete
        assertEquals(names / 2 + 100, memory.used());
        memory.delete(f);
        assertEquals(0, memory.used());
    }

    /** Names were free: a context making empty files filled the daemon's heap (about 300 bytes each) past any SIZE. */
    @Test
    void everyNameCountsAgainstTheSizeAndComesBackWhenItGoes() throws IOException {
        MemoryStorage memory = new MemoryStorage(8 * MemoryStorage.NAME_COST);
        assertEquals(8, memory.space().totalFiles());
        memory.createDirectory(VfsPath.of("/d"));
        memory.write(VfsPath.of("/d/a"), new byte[0]);
        memory.append(VfsPath.of("/d/b"), new byte[0]);
        memory.open(VfsPath.of("/d/c"), java.util.EnumSet.of(OpenFlag.WRITE, OpenFlag.CREATE), 0644).close();
        memory.link(VfsPath.of("/d/a"), VfsPath.of("/d/a2"));
        memory.createSymlink(VfsPath.of("/d/l"), "a");
        memory.createNode(VfsPath.of("/d/fifo"), EntryKind.FIFO, 0644);
        memory.mkdir(VfsPath.of("/e"));
        assertEquals(8 * MemoryStorage.NAME_COST, memory.used());
        assertEquals(0, memory.space().freeFiles());
        for (java.util.concurrent.Callable<?> more : java.util.List.<java.util.concurrent.Callable<?>>of(
                () -> { memory.write(VfsPath.of("/d/x"), new byte[0]); return null; },
                () -> { memory.createDirectory(VfsPath.of("/d/x")); return null; },
                () -> { memory.link(VfsPath.of("/d/a"), VfsPath.of("/d/x")); return null; })) {
            java.nio.file.FileSystemException full = org.junit.jupiter.api.Assertions.assertThrows(
                    java.nio.file.FileSystemException.class, more::call);
            assertTrue(full.getMessage().contains("No space left on device"), full.getMessage());
        }
        assertTrue(!memory.exists(VfsPath.of("/d/x")), "nothing made");
        memory.write(VfsPath.of("/d/a"), new byte[0]); // a name replaced is no new name
        memory.rename(VfsPath.of("/d/b"), VfsPath.of("/d/c")); // two names become one
        assertEquals(7 * MemoryStorage.NAME_COST, memory.used());
        memory.delete(VfsPath.of("/d"));
        assertEquals(MemoryStorage.NAME_COST, memory.used());
    }

    /**
     * The ETag of a store that does not remember one (memory:) read the whole file into the heap
     * first: any reader's getfattr user.chibi.etag of a few large files killed the daemon. It reads
     * through a handle now, never the whole file at once.
     */
    @Test
    void anEtagIsHashedWithoutReadingTheWholeFileAtOnce() throws IOException {
        MemoryStorage memory = new MemoryStorage();
        byte[] content = new byte[300_000];
        new java.util.Random(7).nextBytes(content);
        memory.write(VfsPath.of("/f"), content);
        Storage noWholeReads = (Storage) java.lang.reflect.Proxy.newProxyInstance(Storage.class.getClassLoader(),
                new Class<?>[] {Storage.class}, (proxy, method, args) -> {
                    if (method.getName().equals("read") && method.getParameterCount() == 1) {
                        throw new AssertionError("read the whole file");
                    }
                    if (method.isDefault()) {
                        return java.lang.reflect.InvocationHandler.invokeDefault(proxy, method, args);
                    }
                    try {
                        return method.invoke(memory, args);
                    } catch (java.lang.reflect.InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
        assertEquals(ContentHash.of(content), noWholeReads.etag(VfsPath.of("/f")));
    }

    @Test
    void aNameReplacedOrRemovedChangesTheCtimeTheFilesOtherNamesShow() throws IOException {
        MutableClock clock = new MutableClock(Instant.ofEpochSecond(1_000));
        MemoryStorage memory = new MemoryStorage(clock);
        memory.createDirectory(VfsPath.of("/d"));
        memory.write(VfsPath.of("/d/src"), "new".getBytes(StandardCharsets.UTF_8));
        memory.write(VfsPath.of("/d/dst"), "old".getBytes(StandardCharsets.UTF_8));
        memory.link(VfsPath.of("/d/dst"), VfsPath.of("/d/other"));
        long linked = memory.metadata(VfsPath.of("/d/other")).changed().toMillis();

        clock.advance(Duration.ofSeconds(1));
        memory.rename(VfsPath.of("/d/src"), VfsPath.of("/d/dst"));
        Metadata replaced = memory.metadata(VfsPath.of("/d/other"));
        assertEquals(1, replaced.links());
        assertTrue(replaced.changed().toMillis() > linked, "rename over it changed the old file's ctime");

        memory.link(VfsPath.of("/d/other"), VfsPath.of("/d/third"));
        clock.advance(Duration.ofSeconds(1));
        memory.delete(VfsPath.of("/d/third"));
        assertTrue(memory.metadata(VfsPath.of("/d/other")).changed().toMillis() > replaced.changed().toMillis(),
                "unlink of one name changed the ctime of the other");
    }
}
