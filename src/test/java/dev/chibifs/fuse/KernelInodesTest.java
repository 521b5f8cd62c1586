package dev.chibifs.fuse;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

class KernelInodesTest {

    private final List<Long> invalidated = new ArrayList<>();
    /** Node ids the kernel no longer has: an invalidation of one answers ENOENT. */
    private final Set<Long> evicted = new HashSet<>();
    private final KernelInodes inodes = new KernelInodes();

    KernelInodesTest() {
        inodes.invalidateWith(nodeid -> {
            invalidated.add(nodeid);
            return evicted.contains(nodeid) ? -2 : 0;
        });
    }

    @Test
    void aLinkCountChangeInvalidatesEveryKernelInodeOfTheFile() {
        inodes.seen(100, 7);
        inodes.seen(100, 9);
        inodes.seen(100, 9);
        inodes.seen(200, 8);
        inodes.linksChanged(100);
        assertEquals(List.of(7L, 9L), invalidated.stream().sorted().toList());
    }

    @Test
    void aSetattrInvalidatesTheOthersOnly() {
        inodes.seen(100, 7);
        inodes.seen(100, 9);
        inodes.changedThrough(100, 9);
        assertEquals(List.of(7L), invalidated);
    }

    @Test
    void unknownFilesRootAndNoRequestInvalidateNothing() {
        inodes.seen(100, 0);
        inodes.seen(100, 1);
        inodes.linksChanged(100);
        inodes.linksChanged(-1);
        assertEquals(List.of(), invalidated);
    }

    @Test
    void beforeMountInvalidationsGoNowhere() {
        KernelInodes fresh = new KernelInodes();
        fresh.seen(100, 7);
        fresh.linksChanged(100);
        assertEquals(List.of(), invalidated);
    }

    @Test
    void sharedOnceAFileHasASecondKernelInode() {
        inodes.seen(100, 7);
        inodes.seen(100, 7);
        inodes.seen(200, 8);
        assertEquals(false, inodes.anyShared());
        inodes.seen(100, 9);
        assertEquals(true, inodes.anyShared());
    }

    @Test
    void aNodeIdTheKernelNoLongerHasIsInvalidatedOnceOnly() {
        // an rm -r, then a new file on the reused store inode 100: node 7 is gone from the kernel
        inodes.seen(100, 7);
        inodes.seen(100, 9);
        evicted.add(7L);
        inodes.changedThrough(100, 9);
        inodes.changedThrough(100, 9);
        inodes.linksChanged(100);
        assertEquals(List.of(7L, 9L), invalidated);
    }
}
