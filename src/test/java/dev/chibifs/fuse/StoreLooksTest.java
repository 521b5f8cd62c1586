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

    /** Runs a look asked for at once right away; one asked for later waits for {@link #runDue}. */
    private final class Waiting implements StoreLooks.Runner {
        final List<long[]> dueAt = new ArrayList<>();
        final List<Runnable> waiting = new ArrayList<>();

        @Override
        public void run(Runnable look, long delayNanos) {
            if (delayNanos == 0) {
                look.run();
            } else {
                dueAt.add(new long[] {now.get() + delayNanos});
                waiting.add(look);
            }
        }

        void runDue() {
            for (int i = 0; i < waiting.size(); i++) {
                if (dueAt.get(i)[0] <= now.get()) {
                    dueAt.remove(i);
                    waiting.remove(i).run();
                    i--;
                }
            }
        }
    }

    @Test
    void aStoreWideFailureHasTheStoresLookedAtOncePerInterval() {
        Waiting runner = new Waiting();
        StoreLooks s = new StoreLooks(now::get, this::look, runner);
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
        assertEquals(1, runner.waiting.size(), "one look waits for the interval's end");
        now.addAndGet(1);
        s.failed(Linux.ENOTCONN);
        runner.runDue();
        assertEquals(2, looks.get());
        now.addAndGet(StoreLooks.INTERVAL_NANOS);
        s.failed(Linux.EROFS);
        assertEquals(3, looks.get());
        assertEquals(0, runner.waiting.size());
    }

    @Test
    void oneLookAtATime() {
        List<Runnable> held = new ArrayList<>();
        StoreLooks s = new StoreLooks(now::get, this::look, (look, delayNanos) -> held.add(look));
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
        Waiting runner = new Waiting();
        StoreLooks s = new StoreLooks(now::get, this::look, runner);
        s.answered();
        assertEquals(0, looks.get(), "nothing looks while every store answers");
        troubleFound = true;
        s.failed(Linux.EROFS);
        assertEquals(1, looks.get());
        s.answered();
        assertEquals(1, looks.get(), "no more often than a failure would");
        now.addAndGet(StoreLooks.INTERVAL_NANOS);
        troubleFound = false;
        runner.runDue();
        assertEquals(2, looks.get(), "the store taking changes again is seen without a failing request");
        now.addAndGet(StoreLooks.INTERVAL_NANOS * 5);
        s.answered();
        assertEquals(2, looks.get(), "the trouble ended: answered requests look no more");
        troubleFound = true;
        s.failed(Linux.EROFS);
        assertEquals(3, looks.get(), "a second failing period is looked at, and so said");
    }

    /** storefs3's finding B: the last request came 70 ms after a look, and none after it for seconds. */
    @Test
    void aRequestAnsweredSoonAfterALookHasALookAtTheIntervalsEnd() {
        Waiting runner = new Waiting();
        StoreLooks s = new StoreLooks(now::get, this::look, runner);
        troubleFound = true;
        s.failed(Linux.EROFS);
        assertEquals(1, looks.get());
        troubleFound = false; // remounted rw
        now.addAndGet(StoreLooks.INTERVAL_NANOS / 14);
        s.answered();
        s.answered();
        assertEquals(1, looks.get(), "no more often than once an interval");
        assertEquals(1, runner.waiting.size(), "one look waits, however many requests asked");
        now.addAndGet(StoreLooks.INTERVAL_NANOS - StoreLooks.INTERVAL_NANOS / 14 - 1);
        runner.runDue();
        assertEquals(1, looks.get(), "not before the interval's end");
        now.addAndGet(1);
        runner.runDue();
        assertEquals(2, looks.get(), "the period's end is seen with no request after it");
        now.addAndGet(StoreLooks.INTERVAL_NANOS * 3);
        troubleFound = true; // ro again
        s.failed(Linux.EROFS);
        assertEquals(3, looks.get(), "the second period is looked at once its first request fails");
    }

    @Test
    void aRequestAnsweredWhileALookRunsHasAnotherFollowIt() {
        List<Runnable> held = new ArrayList<>();
        List<Long> delays = new ArrayList<>();
        StoreLooks[] s = new StoreLooks[1];
        boolean[] answeredDuringTheLook = {true};
        s[0] = new StoreLooks(now::get, () -> {
            looks.incrementAndGet();
            if (answeredDuringTheLook[0]) {
                s[0].answered(); // its store may have turned rw after the look passed it
            }
            return true;
        }, (look, delayNanos) -> {
            held.add(look);
            delays.add(delayNanos);
        });
        s[0].failed(Linux.EROFS);
        s[0].failed(Linux.EROFS);
        assertEquals(1, held.size(), "asked for before the look began: that look answers it");
        answeredDuringTheLook[0] = false;
        held.get(0).run();
        assertEquals(1, held.size(), "nothing asked for during the look: none follows");
        now.addAndGet(StoreLooks.INTERVAL_NANOS * 2);
        s[0].failed(Linux.EROFS);
        assertEquals(2, held.size());
        answeredDuringTheLook[0] = true;
        held.get(1).run();
        assertEquals(3, held.size(), "asked for during the look: another follows");
        assertEquals(StoreLooks.INTERVAL_NANOS, delays.get(2), "at the interval's end");
    }
}
