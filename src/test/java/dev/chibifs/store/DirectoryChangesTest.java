package dev.chibifs.store;

import dev.chibifs.path.VfsPath;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** LocalStorage's change feed, driven by changes made straight to the store directory, as chibi makes them. */
@Timeout(30)
class DirectoryChangesTest {

    @TempDir
    Path root;

    private final BlockingQueue<String> heard = new LinkedBlockingQueue<>();
    private LocalStorage storage;
    private ChangeFeed feed;

    @BeforeEach
    void start() throws IOException {
        storage = new LocalStorage(root);
        storage.mkdir(VfsPath.of("/shared"));
        feed = storage.changes(new ChangeListener() {
            @Override
            public void changed(long dir, String name, boolean renamed, boolean modified) {
                if (renamed) {
                    heard.add("name " + dir + " " + name);
                }
                if (modified) {
                    heard.add("file " + dir + " " + name);
                }
            }

            @Override
            public void removed(long dir, String name) {
                heard.add("went " + dir + " " + name);
            }

            @Override
            public void directoryChanged(long dir) {
                heard.add("self " + dir);
            }

            @Override
            public void directoryGone(long dir) {
                heard.add("gone " + dir);
            }

            @Override
            public void eventsLost() {
                heard.add("lost");
            }

            @Override
            public void batchTold() {
            }

            @Override
            public void storeReplaced() {
            }
        });
    }

    @AfterEach
    void stop() throws IOException {
        feed.close();
        storage.close();
    }

    @Test
    void namesAndContentChangesInAFollowedDirectoryAreTold() throws Exception {
        assertTrue(feed.active());
        long key = feed.follow(VfsPath.of("/shared"));
        assertTrue(key >= 0);
        assertEquals(key, feed.follow(VfsPath.of("/shared")), "following again keeps the key");
        Files.writeString(root.resolve("shared/a.md"), "a\n");
        assertEquals("name " + key + " a.md", next());
        assertEquals("file " + key + " a.md", next());
        Files.writeString(root.resolve("shared/a.md"), "b\n", StandardOpenOption.APPEND);
        assertEquals("file " + key + " a.md", next());
        Files.delete(root.resolve("shared/a.md"));
        // a write's events read in two batches are told twice: a content event may still come first.
        // A name that only went is told as gone, which the listener needs not look up
        assertEquals("went " + key + " a.md", nextBut("file " + key + " a.md"));
    }

    @Test
    void aNameThatWentAndCameBackIsToldAsChanged() throws Exception {
        long key = feed.follow(VfsPath.of("/shared"));
        Files.writeString(root.resolve("shared/a.md"), "a\n");
        Files.delete(root.resolve("shared/a.md"));
        Files.createFile(root.resolve("shared/a.md"));
        feed.catchUp();
        // read together or apart, the last word on the name must not be that it went
        List<String> told = new ArrayList<>();
        heard.drainTo(told);
        assertTrue(told.lastIndexOf("name " + key + " a.md") > told.lastIndexOf("went " + key + " a.md"), told.toString());
    }

    @Test
    void aCatchUpTellsWhatWasQueuedBeforeItReturns() throws Exception {
        long key = feed.follow(VfsPath.of("/shared"));
        Files.writeString(root.resolve("shared/db"), "x");
        assertEquals("name " + key + " db", next());
        assertEquals("file " + key + " db", next());
        // the reader has just told a batch, so it lets the next events gather (10 ms) before it reads
        // them: only the catch-up can have told this one by the time it returns
        Files.createFile(root.resolve("shared/db-journal"));
        feed.catchUp();
        // what was heard by the time it returned; a late second event of the write before (its close
        // after its modify, read apart) may come first, and was seen doing so in a full run
        List<String> told = new ArrayList<>();
        heard.drainTo(told);
        assertTrue(told.contains("name " + key + " db-journal"), told.toString());
    }

    @Test
    void aChangeToAFollowedDirectoryItselfIsTold() throws Exception {
        storage.mkdir(VfsPath.of("/shared/d"));
        long shared = feed.follow(VfsPath.of("/shared"));
        long d = feed.follow(VfsPath.of("/shared/d"));
        Files.setLastModifiedTime(root.resolve("shared/d"), FileTime.fromMillis(0));
        // told twice: to its parent's watch, by name, and to its own, which a process working in it needs
        assertEquals(Set.of("file " + shared + " d", "self " + d), Set.of(next(), next()));
    }

    @Test
    void theStoresOwnTemporariesAreNotTold() throws Exception {
        long key = feed.follow(VfsPath.of("/shared"));
        storage.write(VfsPath.of("/shared/atomic.md"), "x".getBytes());
        // the temporary behind the atomic write is invisible; the rename onto the name is what shows
        assertEquals("name " + key + " atomic.md", next());
        String more;
        while ((more = heard.poll(300, TimeUnit.MILLISECONDS)) != null) {
            assertTrue(more.endsWith(" atomic.md"), more);
        }
    }

    @Test
    void aRemovedDirectoryEndsItsKey() throws Exception {
        storage.mkdir(VfsPath.of("/shared/d"));
        long key = feed.follow(VfsPath.of("/shared/d"));
        Files.delete(root.resolve("shared/d"));
        // the store holds the directory open until its next operation hears of the removal; the
        // watch ends with the inode
        assertFalse(storage.exists(VfsPath.of("/shared/d")));
        assertEquals("gone " + key, next());
    }

    @Test
    void whatIsNotADirectoryCannotBeFollowed() throws IOException {
        Files.writeString(root.resolve("shared/f"), "f");
        assertEquals(-1, feed.follow(VfsPath.of("/shared/f")));
        assertEquals(-1, feed.follow(VfsPath.of("/shared/missing")));
    }

    @Test
    void aClosedFeedFollowsNothing() {
        feed.close();
        assertFalse(feed.active());
        assertEquals(-1, feed.follow(VfsPath.of("/shared")));
    }

    @Test
    void memoryStorageChangesOnlyThroughItself() {
        assertEquals(ChangeFeed.NONE, new MemoryStorage().changes(null));
    }

    /** The next event heard that is not {@code repeated}. */
    private String nextBut(String repeated) throws InterruptedException {
        String s = next();
        while (s.equals(repeated)) {
            s = next();
        }
        return s;
    }

    private String next() throws InterruptedException {
        String s = heard.poll(5, TimeUnit.SECONDS);
        assertTrue(s != null, "nothing heard within 5 s");
        return s;
    }
}
