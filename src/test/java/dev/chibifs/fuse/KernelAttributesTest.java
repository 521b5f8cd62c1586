package dev.chibifs.fuse;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.chibifs.path.VfsPath;
import dev.chibifs.store.EntryKind;
import dev.chibifs.store.Metadata;
import java.nio.file.attribute.FileTime;
import org.junit.jupiter.api.Test;

/** An open finds the kernel's attributes stale exactly when the file is not what the kernel was last told. */
class KernelAttributesTest {

    private static Metadata file(long inode, long size, long ctime) {
        FileTime t = FileTime.fromMillis(ctime);
        return new Metadata(EntryKind.FILE, size, t, t, t, t, 1, 0644, inode);
    }

    @Test
    void aFileAsTheKernelWasToldIsFresh() {
        KernelAttributes kernel = new KernelAttributes();
        assertTrue(kernel.told(file(7, 10, 1000)), "the first reply is news");
        assertFalse(kernel.stale(file(7, 10, 1000)));
        assertFalse(kernel.stale(file(7, 10, 1000)), "asking changes nothing");
        assertFalse(kernel.told(file(7, 10, 1000)), "the same attributes again are not");
    }

    @Test
    void aNewSizeOrChangeTimeIsStaleUntilTheKernelIsToldAgain() {
        KernelAttributes kernel = new KernelAttributes();
        kernel.told(file(7, 10, 1000));
        assertTrue(kernel.stale(file(7, 12, 1000)), "appended");
        assertTrue(kernel.stale(file(7, 10, 2000)), "rewritten in place, same size");
        assertTrue(kernel.told(file(7, 12, 2000)), "news for the file's other names");
        assertFalse(kernel.stale(file(7, 12, 2000)));
    }

    @Test
    void aFileTheKernelWasNeverToldOfIsStale() {
        KernelAttributes kernel = new KernelAttributes();
        kernel.told(file(7, 10, 1000));
        // a rename over the name put another inode there: the kernel caches the old file's size
        assertTrue(kernel.stale(file(8, 10, 1000)));
    }

    @Test
    void anEntryReplyVouchesForItsNameWhileRepliesComeByThatName() {
        KernelAttributes kernel = new KernelAttributes();
        VfsPath a = VfsPath.of("/shared/a.md");
        kernel.told(file(7, 0, 1000), a, true, 5);
        assertTrue(kernel.knownAs(file(7, 0, 1000), a, 4));
        assertFalse(kernel.knownAs(file(7, 0, 1000), a, 5), "the name was invalidated after the reply");
        assertFalse(kernel.knownAs(file(7, 0, 1000), VfsPath.of("/shared/b.md"), 4), "another name");
        kernel.told(file(7, 12, 2000), a, false, 9); // a setattr by that name, after writes
        assertTrue(kernel.knownAs(file(7, 12, 2000), a, 4), "the entry still holds");
        kernel.told(file(7, 12, 3000), VfsPath.of("/shared/c.md"), false, 9); // renamed through the mount
        assertFalse(kernel.knownAs(file(7, 12, 3000), a, 4));
    }

    @Test
    void aWriteLeavesTheKernelAskingUntilItsNextReply() {
        KernelAttributes kernel = new KernelAttributes();
        kernel.told(file(7, 0, 1000));
        kernel.writing(7);
        assertTrue(kernel.current(file(7, 12, 2000)), "the kernel dropped its attributes: nothing to tell");
        assertFalse(kernel.stale(file(7, 12, 2000)));
        kernel.told(file(7, 12, 2000));
        assertFalse(kernel.current(file(7, 20, 3000)), "told again: a later change is news");
        kernel.writing(7);
        kernel.forget(7); // the write failed
        assertFalse(kernel.current(file(7, 12, 2000)));
        assertTrue(kernel.stale(file(7, 12, 2000)));
    }
}
