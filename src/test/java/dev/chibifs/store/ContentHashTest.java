package dev.chibifs.store;

import dev.chibifs.sys.ErrnoException;
import dev.chibifs.sys.Linux;
import org.junit.jupiter.api.Test;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ContentHashTest {

    /** Twelve getfattr of sparse terabyte files kept seven daemon threads hashing for hours. */
    @Test
    void largeFilesAreHashedTwoAtATimeAndOneMoreIsBusy() throws Exception {
        CountDownLatch inside = new CountDownLatch(ContentHash.LARGE_AT_ONCE);
        CountDownLatch release = new CountDownLatch(1);
        ContentHash.Source held = (dst, position) -> {
            inside.countDown();
            try {
                release.await();
            } catch (InterruptedException e) {
                throw new java.io.InterruptedIOException();
            }
            return 0;
        };
        Thread[] hashing = new Thread[ContentHash.LARGE_AT_ONCE];
        for (int i = 0; i < hashing.length; i++) {
            hashing[i] = new Thread(() -> {
                try {
                    ContentHash.of(held, ContentHash.LARGE);
                } catch (java.io.IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            });
            hashing[i].start();
        }
        try {
            assertTrue(inside.await(10, TimeUnit.SECONDS));
            ErrnoException busy = assertThrows(ErrnoException.class, () -> ContentHash.of((dst, position) -> 0, ContentHash.LARGE));
            assertEquals(Linux.EBUSY, busy.errno());
            assertEquals(ContentHash.EMPTY_SHA256, ContentHash.of((dst, position) -> 0, ContentHash.LARGE - 1), "a small one waits for none");
        } finally {
            release.countDown();
            for (Thread t : hashing) {
                t.join(10_000);
            }
        }
        assertEquals(ContentHash.EMPTY_SHA256, ContentHash.of((dst, position) -> 0, ContentHash.LARGE), "once they are done");
        ErrnoException tooLarge = assertThrows(ErrnoException.class,
                () -> ContentHash.of((dst, position) -> 0, ContentHash.MOST_HASHED + 1));
        assertEquals(Linux.EFBIG, tooLarge.errno());
    }
}
