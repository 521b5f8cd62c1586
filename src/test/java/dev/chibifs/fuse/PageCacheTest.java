package dev.chibifs.fuse;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.chibifs.store.EntryKind;
import dev.chibifs.store.Metadata;
import java.nio.file.attribute.FileTime;
import org.junit.jupiter.api.Test;

/** Pages are kept across opens exactly while size, mtime and ctime stay what they were. */
class PageCacheTest {

    private static Metadata file(long inode, long size, long mtime, long ctime) {
        FileTime m = FileTime.fromMillis(mtime);
        return new Metadata(EntryKind.FILE, size, m, m, m, FileTime.fromMillis(ctime), 1, 0644, inode);
    }

    @Test
    void theFirstOpenDropsAndAnUnchangedFileKeeps() {
        PageCache cache = new PageCache();
        assertFalse(cache.keep(file(7, 10, 1000, 1000)), "nothing known: drop whatever the kernel has");
        assertTrue(cache.keep(file(7, 10, 1000, 1000)));
        assertTrue(cache.keep(file(7, 10, 1000, 1000)));
    }

    @Test
    void anyChangeDropsOnceThenKeepsAgain() {
        PageCache cache = new PageCache();
        cache.keep(file(7, 10, 1000, 1000));
        assertFalse(cache.keep(file(7, 11, 1000, 1000)), "size");
        assertFalse(cache.keep(file(7, 11, 2000, 1000)), "mtime");
        assertFalse(cache.keep(file(7, 11, 2000, 3000)), "ctime: a rewrite whose mtime was set back");
        assertTrue(cache.keep(file(7, 11, 2000, 3000)));
    }

    @Test
    void filesAreTrackedApart() {
        PageCache cache = new PageCache();
        cache.keep(file(7, 10, 1000, 1000));
        assertFalse(cache.keep(file(8, 10, 1000, 1000)));
        assertTrue(cache.keep(file(7, 10, 1000, 1000)));
    }
}
