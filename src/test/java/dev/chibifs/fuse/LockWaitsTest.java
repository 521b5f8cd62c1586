package dev.chibifs.fuse;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link LockWaits} on a clock of the test's ({@link ManualTimer}): which tries a let-go makes,
 * and when, counted rather than timed.
 */
class LockWaitsTest {

    private static final long NODE = 42;
    private static final long FIFTY_MS = TimeUnit.MILLISECONDS.toMicros(50);

    private final ManualTimer timer = new ManualTimer();
    private final LockWaits waits = new LockWaits(timer);
    private final Lock lock = new Lock();
    /** Answers sent, by request: 0 for a grant, else the errno. */
    private final Map<Long, Integer> answered = new HashMap<>();

    @AfterEach
    void close() {
        waits.close();
    }

    /** One exclusive lock, held by one owner at a time, as the store file's flock is. */
    private static final class Lock {
        long holder = -1;
        final Map<Long, Integer> tries = new HashMap<>();
        /** The store's watch of the file: one callback per waiter, each run at every close, as CloseWatch does. */
        final List<Runnable> watchers = new ArrayList<>();

        LockWaits.Attempt attemptBy(long owner) {
            return new LockWaits.Attempt() {
                @Override
                public boolean tryNow() {
                    tries.merge(owner, 1, Integer::sum);
                    if (holder < 0) {
                        holder = owner;
                    }
                    return holder == owner;
                }

                @Override
                public AutoCloseable whenLetGo(Runnable letGo) {
                    watchers.add(letGo);
                    return () -> watchers.remove(letGo);
                }
            };
        }

        int tries(long owner) {
            return tries.getOrDefault(owner, 0);
        }

        int allTries() {
            return tries.values().stream().mapToInt(Integer::intValue).sum();
        }

        /** The holder's close: the lock goes, and the store tells every watcher. */
        void closedBy(long owner) {
            assertEquals(owner, holder);
            holder = -1;
            List.copyOf(watchers).forEach(Runnable::run);
        }
    }

    private final FuseChannel kernel = new FuseChannel() {
        @Override
        public int read(ByteBuffer dst) {
            throw new UnsupportedOperationException();
        }

        @Override
        public void write(ByteBuffer... parts) {
        }

        @Override
        public int openBacking(int fd) {
            throw new UnsupportedOperationException();
        }

        @Override
        public void closeBacking(int backingId) {
        }

        @Override
        public void close() {
        }
    };

    /** Request {@code unique}, lock owner {@code unique}, refused once by the worker and now waiting. */
    private void waitsFor(long unique) throws Exception {
        long before = waits.letGoCount();
        LockWaits.Attempt attempt = lock.attemptBy(unique);
        assertTrue(!attempt.tryNow(), "the worker's try is refused");
        waits.await(unique, NODE, attempt, notice -> { }, kernel, errno -> answered.put(unique, errno), before);
    }

    /**
     * The previous holder's close (its RELEASE) is what answers the next waiter: granted with the
     * clock where it was, no poll between.
     */
    @Test
    void aWaiterIsGrantedAtTheHoldersCloseWithNoPollBetween() throws Exception {
        lock.holder = 1;
        waitsFor(2);
        timer.advance(FIFTY_MS * 4); // the waiter's polls have reached their longest pace
        lock.watchers.clear(); // nothing but the RELEASE tells
        lock.closedBy(1);
        waits.letGo(NODE); // the RELEASE, served
        timer.runDue();
        assertEquals(Map.of(2L, 0), answered, "granted at the close, the clock not moved");
    }

    /**
     * A waiter that loses a hand-over to another waits on at its pace: the winner's own close will
     * wake it. Restarting its polls from 1 ms kept 200 waiters polling every few milliseconds while
     * the lock went round.
     */
    @Test
    void aWaiterThatLosesAHandOverWaitsOnAtItsPace() throws Exception {
        lock.holder = 1;
        waitsFor(2);
        waitsFor(3);
        timer.advance(FIFTY_MS * 4);
        lock.closedBy(1);
        waits.letGo(NODE);
        timer.runDue();
        assertEquals(1, answered.size(), "one of the two is granted");
        long loser = answered.containsKey(2L) ? 3 : 2;
        int triesAtTheLetGo = lock.tries(loser);

        timer.advance(FIFTY_MS - 1);
        assertEquals(triesAtTheLetGo, lock.tries(loser), "no poll sooner than its pace before the let-go");
        long winner = 5 - loser;
        lock.closedBy(winner);
        waits.letGo(NODE);
        timer.runDue();
        assertEquals(Map.of(2L, 0, 3L, 0), answered, "the winner's close hands it on");
    }

    /**
     * A close is told once by this mount's RELEASE and once per waiter by the store's watch: the
     * waiters try once each, and the timer schedules a few tasks per waiter, not one per waiter
     * for every telling (100 waiters: 10,000 tasks where 200 do).
     */
    @Test
    void aCloseToldOncePerWaiterIsOneTryPerWaiter() throws Exception {
        int n = 100;
        lock.holder = 0;
        for (long w = 1; w <= n; w++) {
            waitsFor(w);
        }
        timer.advance(FIFTY_MS * 4);
        int triesBefore = lock.allTries();
        int scheduledBefore = timer.scheduled();

        lock.closedBy(0); // each of the n waiters' watch callbacks
        waits.letGo(NODE); // and the RELEASE
        timer.runDue();

        assertEquals(1, answered.size(), "one waiter is granted");
        assertEquals(n, lock.allTries() - triesBefore, "each waiter tried once");
        int scheduled = timer.scheduled() - scheduledBefore;
        assertTrue(scheduled <= 3 * n, "tasks scheduled for one close of " + n + " waiters: " + scheduled);
    }
}
