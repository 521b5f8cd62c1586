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
    /** What the next look finds: a store in trouble or not. */
    private boolean troubleFound;

    private boolean look() {
        looks.incrementAndGet();
        return troubleFound;
    }

    @Test
    void aStoreWideFailureHasTheStoresLookedAtOncePerInterval() {
        StoreLooks s = new StoreLooks(now::get, this::look, Runnable::run);
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
        StoreLooks s = new StoreLooks(now::get, this::look, held::add);
        s.failed(Linux.EIO);
        now.addAndGet(StoreLooks.INTERVAL_NANOS * 5);
        s.failed(Linux.EIO);
        assertEquals(1, held.size(), "a look held by a store away is not joined by another");
        held.get(0).run();
        s.failed(Linux.EIO);
        assertEquals(2, held.size());
    }

    @Test
    void whileAStoreIsInTroubleAnAnsweredRequestLooksToSeeItEnd() {
        StoreLooks s = new StoreLooks(now::get, this::look, Runnable::run);
        s.answered();
        assertEquals(0, looks.get(), "nothing looks while every store answers");
        troubleFound = true;
        s.failed(Linux.EROFS);
        assertEquals(1, looks.get());
        s.answered();
        assertEquals(1, looks.get(), "no more often than a failure would");
        now.addAndGet(StoreLooks.INTERVAL_NANOS);
        troubleFound = false;
        s.answered();
        assertEquals(2, looks.get(), "the store taking changes again is seen without a failing request");
        now.addAndGet(StoreLooks.INTERVAL_NANOS * 5);
        s.answered();
        assertEquals(2, looks.get(), "the trouble ended: answered requests look no more");
        troubleFound = true;
        s.failed(Linux.EROFS);
        assertEquals(3, looks.get(), "a second failing period is looked at, and so said");
    }
}
