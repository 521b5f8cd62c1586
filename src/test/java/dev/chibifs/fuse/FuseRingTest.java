package dev.chibifs.fuse;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** What FUSE over io_uring takes from the machine: a queue per possible CPU, as the kernel counts them. */
class FuseRingTest {

    @Test
    void theQueuesRunToTheHighestPossibleCpu() {
        assertEquals(0, FuseRing.highestCpu("0"));
        assertEquals(1, FuseRing.highestCpu("0-1"));
        assertEquals(7, FuseRing.highestCpu("0,2-3,7"));
        assertEquals(63, FuseRing.highestCpu("0-63"));
        assertTrue(FuseRing.possibleCpus() >= Runtime.getRuntime().availableProcessors());
    }
}
