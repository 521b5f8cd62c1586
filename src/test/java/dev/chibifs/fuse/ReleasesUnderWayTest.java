package dev.chibifs.fuse;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.concurrent.CompletableFuture;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

@Timeout(30)
class ReleasesUnderWayTest {

    /** The file the lock requests are for. */
    private static final long NODE = 7;
    private final ReleasesUnderWay releases = new ReleasesUnderWay();

    @Test
    void aRequestWaitsForNoReleaseWhenNoneCameBeforeIt() {
        assertFalse(releases.awaitEarlier(10, NODE, true), "none under way");
        releases.read(12, true, NODE);
        assertFalse(releases.awaitEarlier(10, NODE, true), "one queued after the request is not its concern");
        releases.end(12);
        assertFalse(releases.awaitEarlier(14, NODE, true), "ended before the request looked");
        releases.read(16, true, NODE + 1);
        assertFalse(releases.awaitEarlier(18, NODE, true), "another file's close");
    }

    @Test
    void aRequestWaitsForAReleaseQueuedBeforeItUntilThatEnds() throws Exception {
        releases.read(8, true, NODE);
        releases.read(12, true, NODE);
        CompletableFuture<Boolean> waited = waitingAsker(10);
        assertFalse(waited.isDone(), "release 8 is under way");
        releases.end(12);
        releases.end(8);
        assertTrue(waited.get(), "it waited for release 8");
    }

    @Test
    void aRequestWaitsForAnEarlierIdNotSeenYetAndForTheReleaseItTurnsOutToBe() throws Exception {
        releases.read(8, false, NODE);
        CompletableFuture<Boolean> waited = waitingAsker(12);
        // the worker that took request 10 before the lock request was taken says what it is only now
        assertFalse(waited.isDone(), "10 was taken before 12, by a worker not heard from yet");
        releases.read(10, true, NODE);
        while (releases.waiters() == 0) {
            Thread.onSpinWait(); // until it waits for release 10 to end
        }
        releases.end(10);
        assertTrue(waited.get(), "10 turned out to be a release, and was waited for");
    }

    @Test
    void anIdNeverSeenIsWaitedForOnlySoLong() {
        // a request the kernel took back unread (its process killed) leaves its id unseen for good
        releases.read(8, false, NODE);
        releases.read(12, false, NODE);
        assertFalse(releases.seen(10));
        assertFalse(releases.awaitEarlier(14, NODE, true), "10 never comes");
        assertTrue(releases.seen(10), "given up once, not waited for by every later request");
    }

    /**
     * A thread asking {@link ReleasesUnderWay#awaitEarlier} for request {@code unique}, once it waits
     * (parked or on the monitor) or has its answer: the event, not a guess at a time.
     */
    private CompletableFuture<Boolean> waitingAsker(long unique) {
        CompletableFuture<Boolean> answer = new CompletableFuture<>();
        Thread asker = new Thread(() -> answer.complete(releases.awaitEarlier(unique, NODE, true)));
        asker.start();
        while (asker.getState() != Thread.State.TIMED_WAITING && !answer.isDone()) {
            Thread.onSpinWait();
        }
        return answer;
    }
}
