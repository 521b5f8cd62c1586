package dev.chibifs.fuse;

import dev.chibifs.path.VfsPath;
import dev.chibifs.router.Router;
import dev.chibifs.store.LocalStorage;
import dev.chibifs.store.MemoryStorage;
import dev.chibifs.store.Metadata;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** KernelEntries over a real store and its change feed, with the kernel's notifications recorded instead of sent. */
@Timeout(30)
class KernelEntriesTest {

    private static final long SHARED = 7;

    @TempDir
    Path root;

    private final List<String> sent = new CopyOnWriteArrayList<>();
    /** What invalidateDirectory answers: 0, or -ENOENT for a kernel that forgot the inode. */
    private volatile int directoryAnswer;
    private final KernelAttributes kernelAttributes = new KernelAttributes();
    private LocalStorage storage;
    private KernelEntries entries;

    @BeforeEach
    void start() throws IOException {
        storage = new LocalStorage(root);
        storage.mkdir(VfsPath.of("/shared"));
        entries = start(Router.of(storage));
    }

    /** Entries following {@code router}'s store, telling {@link #sent}. */
    private KernelEntries start(Router router) {
        KernelEntries entries = new KernelEntries(router, new KernelInodes(), kernelAttributes);
        entries.start();
        entries.notifyWith(new KernelEntries.Notifier() {
            @Override
            public int invalidateEntry(long parent, byte[] name) {
                sent.add("entry " + parent + " " + new String(name, StandardCharsets.UTF_8));
                return 0;
            }

            @Override
            public int invalidateDirectory(long nodeid) {
                sent.add("directory " + nodeid);
                return directoryAnswer;
            }
        });
        return entries;
    }

    @AfterEach
    void stop() throws IOException {
        entries.close();
        storage.close();
    }

    @Test
    void aNewNameInAFollowedDirectoryIsInvalidatedWithItsDirectory() throws Exception {
        assertTrue(entries.following());
        entries.lookingIn(VfsPath.of("/shared"), SHARED);
        Files.writeString(root.resolve("shared/new.md"), "x");
        awaitSent("entry 7 new.md");
        assertTrue(sent.contains("directory 7"), sent.toString());
    }

    @Test
    void aDirectoryNoLookupNamedIsNotFollowed() throws Exception {
        writeAndHearNothing("unseen.md");
    }

    @Test
    void aLookupDuringAChangeIsInvalidatedAgainAfterItsReply() throws Exception {
        entries.lookingIn(VfsPath.of("/shared"), SHARED);
        long before = entries.changesSeen();
        Files.writeString(root.resolve("shared/other.md"), "x");
        awaitSent("entry 7 other.md");
        // the lookup of raced.md began before that change was told: its reply may be older than it
        entries.lookedUp(before, SHARED, VfsPath.of("/shared/raced.md"));
        awaitSent("entry 7 raced.md");
    }

    @Test
    void aLookupWithNoChangeMeanwhileIsLeftAlone() throws Exception {
        entries.lookingIn(VfsPath.of("/shared"), SHARED);
        entries.lookedUp(entries.changesSeen(), SHARED, VfsPath.of("/shared/calm.md"));
        Thread.sleep(200);
        assertFalse(sent.contains("entry 7 calm.md"), sent.toString());
    }

    @Test
    void namesChangedTogetherDropTheirDirectorysListingOnce() throws Exception {
        entries.lookingIn(VfsPath.of("/shared"), SHARED);
        long key = entries.followedKey(SHARED);
        for (String gone : List.of("a.md", "b.md", "c.md")) {
            entries.changed(key, gone, true, false); // as the feed tells an rm of three files it read at once
        }
        entries.batchTold();
        entries.changed(key, "d.md", true, false);
        assertEquals(List.of("directory 7", "entry 7 a.md", "entry 7 b.md", "entry 7 c.md", "directory 7", "entry 7 d.md"),
                sent);
    }

    @Test
    void eachBatchTheFeedReadsDropsTheDirectorysListingAgain() throws Exception {
        // a router of two storages passes each feed's events on: the end of a batch must reach the listener too
        entries.close();
        entries = start(Router.builder(storage).mount(VfsPath.of("/sys"), new MemoryStorage()).build());
        entries.lookingIn(VfsPath.of("/shared"), SHARED);
        Files.writeString(root.resolve("shared/first.md"), "x");
        awaitSent("entry 7 first.md");
        Thread.sleep(100);
        sent.clear();
        Files.writeString(root.resolve("shared/second.md"), "x");
        awaitSent("entry 7 second.md");
        assertTrue(sent.contains("directory 7"), sent.toString());
    }

    @Test
    void aKernelInodeTheKernelForgotIsNotToldAgain() throws Exception {
        entries.lookingIn(VfsPath.of("/shared"), SHARED);
        directoryAnswer = -2;
        Files.writeString(root.resolve("shared/a.md"), "x");
        awaitSent("directory 7");
        Thread.sleep(100);
        sent.clear();
        writeAndHearNothing("b.md");
    }

    @Test
    void nothingIsSentOnceUnmounted() throws Exception {
        entries.lookingIn(VfsPath.of("/shared"), SHARED);
        entries.notifyWith(null);
        writeAndHearNothing("late.md");
    }

    @Test
    void aReplyAboutAFileAsksOfItsDirectoryAndAReplyAboutADirectoryOfItself() {
        VfsPath later = VfsPath.of("/shared/later");
        assertFalse(entries.lookingIn(later, 9)); // missing: nothing to follow
        assertTrue(entries.briefAbout(later.child("x.md"), false));
        assertTrue(entries.briefAbout(later, true));
        assertFalse(entries.briefAbout(later, false), "a file of that name asks of its directory, /shared");
        assertFalse(entries.briefAbout(VfsPath.of("/shared/y.md"), false));
    }

    @Test
    void aDirectoryThatCannotBeFollowedIsKeptBrieflyUntilItCanBe() throws Exception {
        VfsPath later = VfsPath.of("/shared/later");
        assertFalse(entries.lookingIn(later, 9)); // missing: nothing to follow
        assertTrue(entries.brief(later));
        assertFalse(entries.brief(VfsPath.of("/shared")));
        Files.createDirectory(root.resolve("shared/later"));
        // tried again only after libfuse's 1 s, not at every lookup
        assertFalse(entries.lookingIn(later, 9));
        Thread.sleep(java.util.concurrent.TimeUnit.NANOSECONDS.toMillis(KernelEntries.BRIEF_NANOS) + 100);
        assertTrue(entries.lookingIn(later, 9));
        assertFalse(entries.brief(later));
        Files.writeString(root.resolve("shared/later/x.md"), "x");
        awaitSent("entry 9 x.md");
    }

    @Test
    void aDirectoryTouchedInTheStoreHasItsOwnAttributesInvalidatedAndItsNameKept() throws Exception {
        Files.createDirectory(root.resolve("shared/work"));
        entries.lookingIn(VfsPath.of("/shared"), SHARED);
        entries.lookingIn(VfsPath.of("/shared/work"), 11);
        Files.setLastModifiedTime(root.resolve("shared/work"), FileTime.fromMillis(0));
        awaitSent("directory 11");
        Thread.sleep(100);
        // its name still shows the same directory: invalidating it would unhash the working directory of
        // processes in it (before Linux 6.2)
        assertFalse(sent.contains("entry 7 work"), sent.toString());
    }

    // The cases below call the listener themselves, for a file made before its directory was followed:
    // the feed hears nothing of it, so what is sent comes from these calls alone.

    @Test
    void aNameTheKernelWasGivenThroughTheMountIsLeftAlone() throws Exception {
        Metadata made = madeThroughTheMount("made.md");
        kernelAttributes.told(made, VfsPath.of("/shared/made.md"), true, entries.changesSeen());
        entries.changed(entries.followedKey(SHARED), "made.md", true, false);
        assertEquals(List.of(), sent);
    }

    @Test
    void anEntryReplyMadeBeforeTheNameWasLastInvalidatedVouchesForNothing() throws Exception {
        Metadata made = madeThroughTheMount("raced.md");
        long key = entries.followedKey(SHARED);
        long before = entries.changesSeen();
        entries.changed(key, "raced.md", true, false); // nothing told of it yet: invalidated
        entries.batchTold();
        assertEquals(List.of("directory 7", "entry 7 raced.md"), sent);
        // a lookup's reply read the store before that invalidation and is told only now: meanwhile the
        // kernel may have cached the name as missing, so the entry reply says nothing of what it has
        kernelAttributes.told(made, VfsPath.of("/shared/raced.md"), true, before);
        sent.clear();
        entries.changed(key, "raced.md", true, false);
        assertEquals(List.of("directory 7", "entry 7 raced.md"), sent);
    }

    @Test
    void aWriteThroughTheMountNeedsNoTellingUntilTheKernelsNextReply() throws Exception {
        Metadata made = madeThroughTheMount("written.md");
        long key = entries.followedKey(SHARED);
        kernelAttributes.told(made, VfsPath.of("/shared/written.md"), true, entries.changesSeen());
        kernelAttributes.writing(made.inode());
        Files.writeString(root.resolve("shared/written.md"), "more");
        entries.changed(key, "written.md", false, true);
        assertEquals(List.of(), sent, "the kernel drops its attributes after its own write");
        kernelAttributes.forget(made.inode()); // the write failed: the kernel kept its attributes
        Files.writeString(root.resolve("shared/written.md"), "again");
        entries.changed(key, "written.md", false, true);
        // the feed, which follows shared/ by now, hears this write too and may tell it as well
        assertEquals(java.util.Set.of("entry 7 written.md"), java.util.Set.copyOf(sent));
    }

    /** A file made in shared/ before the directory is followed (so the feed hears nothing of it), then followed. */
    private Metadata madeThroughTheMount(String name) throws Exception {
        Files.writeString(root.resolve("shared/" + name), "x");
        entries.lookingIn(VfsPath.of("/shared"), SHARED);
        Thread.sleep(50); // anything the feed would hear, it has heard
        assertEquals(List.of(), sent);
        return storage.metadata(VfsPath.of("/shared/" + name));
    }

    /** Writes shared/{@code name} in the store; the kernel must hear nothing of it within 300 ms. */
    private void writeAndHearNothing(String name) throws Exception {
        Files.writeString(root.resolve("shared/" + name), "x");
        Thread.sleep(300);
        assertEquals(List.of(), sent);
    }

    private void awaitSent(String notification) throws InterruptedException {
        long deadline = System.currentTimeMillis() + 5_000;
        while (!sent.contains(notification) && System.currentTimeMillis() < deadline) {
            Thread.sleep(10);
        }
        assertTrue(sent.contains(notification), notification + " not in " + sent);
    }
}
