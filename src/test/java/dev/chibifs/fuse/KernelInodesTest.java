package dev.chibifs.fuse;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class KernelInodesTest {

    private final List<Long> invalidated = new ArrayList<>();
    private final KernelInodes inodes = new KernelInodes();

    KernelInodesTest() {
        inodes.invalidateWith(invalidated::add);
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
}
