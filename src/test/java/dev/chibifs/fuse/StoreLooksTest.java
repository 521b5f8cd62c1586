package dev.chibifs.fuse;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.chibifs.sys.Linux;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** A request failing as a whole store would has the stores looked at: once a second at most, one look at a time. */
class StoreLooksTest {

    private final AtomicLong now = new AtomicLong(1_000);
    private final AtomicInteger looks = new AtomicInteger();

    @Test
    void aStoreWideFailureHasTheStoresLookedAtOncePerInterval() {
        StoreLooks s = new StoreLooks(now::get, looks::incrementAndGet, Runnable::run);
        s.failed(Linux.ENOENT);
        s.failed(Linux.EACCES);
        assertEquals(0, looks.get(), "a refusal of one file is no store failing");
        s.failed(Linux.EIO);
        assertEquals(1, looks.get());
        s.failed(Linux.ENOTCONN);
        s.failed(Linux.EIO);
        now.addAndGet(StoreLooks.INTERVAL_NANOS - 1);
        s.failed(Linux.EIO);
        assertEquals(1, looks.get(), "tens of thousands of failures a second: one look");
        now.addAndGet(1);
        s.failed(Linux.ENOTCONN);
        assertEquals(2, looks.get());
        now.addAndGet(StoreLooks.INTERVAL_NANOS);
        s.failed(Linux.EROFS);
        assertEquals(3, looks.get());
    }

    @Test
    void oneLookAtATime() {
        List<Runnable> held = new ArrayList<>();
        StoreLooks s = new StoreLooks(now::get, looks::incrementAndGet, held::add);
        s.failed(Linux.EIO);
        now.addAndGet(StoreLooks.INTERVAL_NANOS * 5);
        s.failed(Linux.EIO);
        assertEquals(1, held.size(), "a look held by a store away is not joined by another");
        held.get(0).run();
        s.failed(Linux.EIO);
        assertEquals(2, held.size());
    }
}
