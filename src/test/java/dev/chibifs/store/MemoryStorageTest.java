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

    /** Extended attributes live on the Java heap: unbounded, one context's values filled it and the daemon died. */
    @Test
    void extendedAttributesCountAgainstTheSizeAndGiveItBackWhenTheyGo() throws IOException {
        MemoryStorage memory = new MemoryStorage(1000);
        VfsPath f = VfsPath.of("/f");
        VfsPath d = VfsPath.of("/d");
        memory.write(f, new byte[100]);
        memory.createDirectory(d);
        memory.setXattr(f, "user.a", new byte[500], XattrMode.SET);
        assertEquals(100 + 6 + 500, memory.used());
        java.nio.file.FileSystemException full = org.junit.jupiter.api.Assertions.assertThrows(
                java.nio.file.FileSystemException.class, () -> memory.setXattr(d, "user.b", new byte[500], XattrMode.SET));
        assertTrue(full.getMessage().contains("No space left on device"), full.getMessage());
        assertTrue(memory.xattrNames(d).isEmpty(), "nothing set");
        memory.setXattr(f, "user.a", new byte[10], XattrMode.SET); // a smaller value gives the rest back
        memory.setXattr(d, "user.b", new byte[500], XattrMode.SET);
        assertEquals(100 + 16 + 506, memory.used());
        memory.removeXattr(f, "user.a");
        memory.delete(d);
        assertEquals(100, memory.used());
        memory.createDirectory(d);
        memory.setXattr(d, "user.b", new byte[500], XattrMode.SET);
        memory.removeDirectory(d); // rmdir, not delete
        assertEquals(100, memory.used());
        memory.delete(f);
        assertEquals(0, memory.used());
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
