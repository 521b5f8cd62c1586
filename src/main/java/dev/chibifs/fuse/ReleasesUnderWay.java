package dev.chibifs.fuse;

import java.util.Arrays;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.locks.LockSupport;

/**
 * The RELEASE requests read before a lock request and not yet done, so that the lock request can
 * wait for those of its file.
 *
 * <p>close(2) does not wait for its RELEASE: the kernel queues it in the background and returns,
 * and the RELEASE is what lets go of the locks taken through that open file (its flock, its OFD
 * locks, and its record locks, as no FLUSH comes). On a disk the close has let go of them when it
 * returns, so a process may try the lock at once through another descriptor (`flock -n`,
 * F_OFD_SETLK, a new open), and another worker may serve that try while the RELEASE is still
 * closing the handle: a refusal no disk would give. Worse, the kernel names an OFD lock's owner by
 * its open file's address and a POSIX lock's by its process's file table, and a new open or
 * process may get the address of one whose RELEASE is still on its way: its lock would join the
 * old owner's, and keep what the old one held. So a lock request first waits for the closes of its
 * file that came before it, then is tried.
 *
 * <p>What came before: the kernel numbers requests (the header's unique id, in steps of 2) in the
 * order it queues them, and workers take them from its queue in that order. So every request
 * numbered below a lock request was taken before it; but the worker that took one may not have
 * got as far as saying what it is (descheduled between its read and {@link #read}, which on a
 * 2-vCPU VM is milliseconds now and then). Hence a ring of the ids seen lately: the lock request
 * first waits until every id of the {@link #WINDOW} before its own has been seen, then for the
 * RELEASEs of its node among them. An id never seen (a request the kernel took back unread, its
 * process killed) is waited for once, at most {@link #SEEN_WITHIN_NANOS}.
 *
 * <p>Through io_uring each CPU's queue delivers on its own, so there only the RELEASEs already
 * under way are waited for. Across mounts nothing orders a close and a lock: each is another
 * daemon's.
 */
final class ReleasesUnderWay {

    /** How many requests back a lock request looks. */
    static final int WINDOW = 1024;
    /** Ids the ring holds: more than the window, so a slot is reused only long after its id was seen. */
    private static final int RING = 4 * WINDOW;
    /** A RELEASE closes a handle: microseconds. Past this a refusal is answered anyway, never a worker held. */
    static final long AWAITED_WITHIN_NANOS = TimeUnit.SECONDS.toNanos(1);
    /** How long an id not seen yet is waited for: a worker descheduled after its read, or an id never to come. */
    static final long SEEN_WITHIN_NANOS = TimeUnit.MILLISECONDS.toNanos(200);
    private static final long POLL_NANOS = TimeUnit.MICROSECONDS.toNanos(20);

    /** Slot (id / 2) % RING: the last id seen there. Written once per request, read only by a refused lock request. */
    private final AtomicLongArray seen = new AtomicLongArray(RING);
    /** The first id seen: nothing below it is waited for. */
    private volatile long first = -1;

    /** The ids of the RELEASEs under way and their nodes, in {@code ids[0..count)} and {@code nodes}; guarded by this. */
    private long[] ids = new long[8];
    private long[] nodes = new long[8];
    private int count;
    /** Threads waiting in {@link #awaitEarlier}; guarded by this (an end wakes nobody when none waits). */
    private int waiters;

    /** A worker has read request {@code unique} and is about to serve it; {@code release}: it is a RELEASE of node {@code node}. */
    void read(long unique, boolean release, long node) {
        if (release) {
            begin(unique, node);
        }
        if (first < 0) {
            first = unique;
        }
        // after begin: whoever sees the id sees its RELEASE under way (release/acquire)
        seen.setRelease(slot(unique), unique);
    }

    private static int slot(long unique) {
        return (int) ((unique >>> 1) % RING);
    }

    private synchronized void begin(long unique, long node) {
        if (count == ids.length) {
            ids = Arrays.copyOf(ids, count * 2);
            nodes = Arrays.copyOf(nodes, count * 2);
        }
        ids[count] = unique;
        nodes[count++] = node;
    }

    /** RELEASE {@code unique} is done: the handle is closed, its locks gone. */
    synchronized void end(long unique) {
        for (int i = 0; i < count; i++) {
            if (ids[i] == unique) {
                count--;
                ids[i] = ids[count];
                nodes[i] = nodes[count];
                break;
            }
        }
        if (waiters > 0) {
            notifyAll();
        }
    }

    /**
     * Waits until every request of the {@link #WINDOW} before {@code unique} has been seen (at most
     * {@link #SEEN_WITHIN_NANOS}; only where {@code inOrder}: requests taken in the order the kernel
     * numbered them, as from /dev/fuse) and no RELEASE of node {@code node} among them is under way
     * (at most {@link #AWAITED_WITHIN_NANOS}); returns whether one was.
     */
    boolean awaitEarlier(long unique, long node, boolean inOrder) {
        if (inOrder) {
            awaitSeen(unique);
        }
        synchronized (this) {
            if (!anyBefore(unique, node)) {
                return false;
            }
            long deadline = System.nanoTime() + AWAITED_WITHIN_NANOS;
            waiters++;
            try {
                for (long left = AWAITED_WITHIN_NANOS; left > 0 && anyBefore(unique, node); left = deadline - System.nanoTime()) {
                    TimeUnit.NANOSECONDS.timedWait(this, left);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } finally {
                waiters--;
            }
            return true;
        }
    }

    /**
     * Until each id of the window below {@code unique} has been seen, or a later one in its slot. An
     * id still not seen at the deadline is taken as seen from then on, so that it costs one wait,
     * not one per lock request while it stays in the window.
     */
    private void awaitSeen(long unique) {
        long from = Math.max(first, unique - 2L * WINDOW);
        if (from < 0) {
            return; // nothing seen yet
        }
        long deadline = 0;
        for (long id = unique - 2; id >= from; id -= 2) {
            while (!seen(id)) {
                long now = System.nanoTime();
                if (deadline == 0) {
                    deadline = now + SEEN_WITHIN_NANOS;
                } else if (now - deadline >= 0) {
                    seen.accumulateAndGet(slot(id), id, Math::max);
                    break;
                }
                LockSupport.parkNanos(POLL_NANOS);
            }
        }
    }

    /** Threads waiting for a RELEASE to end, for tests. */
    synchronized int waiters() {
        return waiters;
    }

    /** Whether id {@code unique} was seen (or given up), for tests. */
    boolean seen(long unique) {
        return seen.getAcquire(slot(unique)) >= unique;
    }

    private boolean anyBefore(long unique, long node) {
        for (int i = 0; i < count; i++) {
            if (ids[i] < unique && nodes[i] == node) {
                return true;
            }
        }
        return false;
    }
}
