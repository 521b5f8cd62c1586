package dev.chibifs.sys;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/** The ring's own mechanics, without FUSE: entries go in and come back in order, round and round the rings. */
class IoUringTest {

    private static IoUring ring(int entries) {
        try {
            return IoUring.open(entries, 2 * entries);
        } catch (java.io.IOException e) {
            assumeTrue(false, "no io_uring here (" + e.getMessage() + "): Linux 5.1+, kernel.io_uring_disabled 0");
            throw new AssertionError(e);
        }
    }

    private static void nop(IoUring ring, long userData) throws java.io.IOException {
        IoUring.nop(ring.prepare(), userData);
    }

    @Test
    void completionsComeBackWithTheirUserDataAcrossManyLapsOfTheRings() throws Exception {
        try (IoUring ring = ring(8)) {
            List<Long> seen = new ArrayList<>();
            for (long batch = 0; batch < 50; batch++) {
                synchronized (ring) {
                    for (long i = 0; i < 5; i++) {
                        nop(ring, batch * 5 + i);
                    }
                    ring.submit();
                }
                int got = 0;
                while (got < 5) {
                    assertEquals(0, ring.awaitCompletion());
                    got += ring.drain((userData, result) -> {
                        assertEquals(0, result);
                        seen.add(userData);
                    });
                }
            }
            assertEquals(250, seen.size());
            for (int i = 0; i < seen.size(); i++) {
                assertEquals(i, seen.get(i));
            }
        }
    }

    @Test
    void aClosedRingRefusesToPrepareRatherThanWriteIntoUnmappedMemory() throws Exception {
        IoUring ring = ring(4);
        ring.close();
        synchronized (ring) {
            assertEquals(Linux.EBADF, assertThrows(ErrnoException.class, ring::prepare).errno());
        }
    }

    @Test
    void aFullSubmissionRingSaysSoInsteadOfOverwritingAnEntry() throws Exception {
        try (IoUring ring = ring(4)) {
            synchronized (ring) {
                for (int i = 0; i < 4; i++) {
                    nop(ring, i);
                }
                ErrnoException full = assertThrows(ErrnoException.class, ring::prepare);
                assertEquals(Linux.EBUSY, full.errno());
            }
        }
    }
}
