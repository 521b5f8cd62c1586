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
        invalidated.clear(); // node 7, asked whether the kernel still has it when 9 came
        inodes.linksChanged(100);
        assertEquals(List.of(7L, 9L), invalidated.stream().sorted().toList());
    }

    @Test
    void aSetattrInvalidatesTheOthersOnly() {
        inodes.seen(100, 7);
        inodes.seen(100, 9);
        invalidated.clear();
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
        // two names of one file (node 7 asked whether it is still there when 9 came), then the kernel evicts 7
        inodes.seen(100, 7);
        inodes.seen(100, 9);
        assertEquals(true, inodes.anyShared());
        evicted.add(7L);
        inodes.changedThrough(100, 9);
        inodes.changedThrough(100, 9);
        inodes.linksChanged(100);
        assertEquals(List.of(7L, 7L, 9L), invalidated);
    }

    @Test
    void aNodeIdTheKernelForgotIsNotAskedAbout() {
        inodes.seen(100, 7);
        inodes.forgotten(7);
        inodes.forgotten(8); // never seen
        inodes.seen(100, 9); // the store reused inode number 100
        inodes.changedThrough(100, 9);
        assertEquals(false, inodes.anyShared());
        assertEquals(List.of(), invalidated, "no question about 7, no invalidation per write");
        inodes.seen(100, 10); // a second name of the new file
        assertEquals(true, inodes.anyShared());
        assertEquals(List.of(9L), invalidated);
    }

    @Test
    void aStoreInodeNumberReusedForANewFileIsNotASecondName() {
        // rm -r, then tar: the store gives a new file the inode number of a removed one, whose node 7 the kernel forgot
        inodes.seen(100, 7);
        evicted.add(7L);
        inodes.seen(100, 9);
        assertEquals(false, inodes.anyShared());
        invalidated.clear();
        inodes.changedThrough(100, 9);
        inodes.linksChanged(100);
        assertEquals(List.of(9L), invalidated, "nothing per write of the new file; a link change tells its own node");
    }
}
