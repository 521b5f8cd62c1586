package dev.chibifs.fuse;

import dev.chibifs.sys.Linux;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.IntConsumer;

/**
 * Blocking lock requests (F_SETLKW, a blocking flock) that could not be granted at once: each is
 * tried again on a timer of its own instead of holding a worker thread, which would leave the
 * mount one worker short per waiter (a lock held for long would stop the mount). A conflicting
 * lock may be another mount's or another process's, which tell us nothing when they let go, so
 * waiting is polling: from 1 ms, doubling to 50 ms. An INTERRUPT (Ctrl-C, a signal) ends a wait
 * with EINTR at once.
 */
final class LockWaits implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(LockWaits.class);
    private static final long FIRST_RETRY_MICROS = 1_000;
    private static final long LAST_RETRY_MICROS = 50_000;
    /** Interrupts that came before their request was waiting; kept for the request to find. */
    private static final int EARLY_INTERRUPTS = 1024;

    /** One try at the lock: true when granted; throws for a failure to report. */
    interface Attempt {
        boolean tryNow() throws IOException;
    }

    private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "chibifs-lock-waits");
        t.setDaemon(true);
        return t;
    });
    /** {@code replyTo}: where the answer goes (/dev/fuse, or the io_uring entry the request came in). */
    private record Waiter(Attempt attempt, java.util.function.Consumer<FuseReply> granted, FuseChannel replyTo,
                          IntConsumer ended) {
    }

    private final ConcurrentMap<Long, Waiter> waiting = new ConcurrentHashMap<>();
    private final Set<Long> interruptedEarly = Collections.newSetFromMap(Collections.synchronizedMap(
            new LinkedHashMap<>() {
                @Override
                protected boolean removeEldestEntry(Map.Entry<Long, Boolean> eldest) {
                    return size() > EARLY_INTERRUPTS;
                }
            }));
    /** The timer thread's reply and notification buffers. */
    private final FuseReply reply = new FuseReply(FuseProtocol.OUT_HEADER + 64);
    private final FuseReply notice = new FuseReply(FuseProtocol.OUT_HEADER + 64);

    LockWaits() {
    }

    /**
     * Waits for request {@code unique}'s lock, answering it when granted, failed or interrupted;
     * {@code granted} runs on the timer thread, with a notification buffer, before the reply of a
     * grant, and {@code ended} (may be null) after the answer, with its errno (0 for the grant).
     */
    void await(long unique, Attempt attempt, java.util.function.Consumer<FuseReply> granted, FuseChannel replyTo,
               IntConsumer ended) {
        waiting.put(unique, new Waiter(attempt, granted, replyTo, ended));
        if (interruptedEarly.remove(unique)) {
            interrupt(unique);
            return;
        }
        schedule(unique, FIRST_RETRY_MICROS);
    }

    private void schedule(long unique, long delayMicros) {
        try {
            timer.schedule(() -> retry(unique, delayMicros), delayMicros, TimeUnit.MICROSECONDS);
        } catch (java.util.concurrent.RejectedExecutionException stopping) {
            // unmounting: nobody waits for the reply any more
        }
    }

    private void retry(long unique, long delayMicros) {
        Waiter waiter = waiting.get(unique);
        if (waiter == null) {
            return; // interrupted meanwhile, and answered
        }
        int errno;
        try {
            if (!waiter.attempt().tryNow()) {
                schedule(unique, Math.min(delayMicros * 2, LAST_RETRY_MICROS));
                return;
            }
            errno = 0;
        } catch (IOException | RuntimeException e) {
            int mapped = -Errno.of(e);
            errno = mapped > 0 ? mapped : Linux.EIO;
            if (mapped <= 0) {
                LOG.error("waiting for a lock failed unexpectedly", e);
            }
        }
        if (waiting.remove(unique, waiter)) {
            if (errno == 0) {
                waiter.granted().accept(notice);
            }
            answer(unique, errno, waiter);
        } else if (errno == 0) {
            // interrupted after the lock was taken: the caller gets EINTR, so the lock must not stay
            LOG.debug("a lock granted as its wait was interrupted stays until its owner unlocks or closes");
        }
    }

    /** The kernel interrupted request {@code unique}: a waiting lock request ends with EINTR. */
    void interrupt(long unique) {
        Waiter waiter = waiting.remove(unique);
        if (waiter != null) {
            timer.execute(() -> answer(unique, Linux.EINTR, waiter));
        } else {
            interruptedEarly.add(unique);
        }
    }

    /** On the timer thread only: it owns {@link #reply}. */
    private void answer(long unique, int errno, Waiter waiter) {
        try {
            FuseReply r = reply.begin(unique);
            if (errno != 0) {
                r.error(errno);
            }
            r.send(waiter.replyTo());
        } catch (IOException e) {
            LOG.debug("lock reply not delivered: {}", e.toString());
        }
        if (waiter.ended() != null) {
            waiter.ended().accept(errno);
        }
    }

    int waiting() {
        return waiting.size();
    }

    @Override
    public void close() {
        timer.shutdownNow();
    }
}
