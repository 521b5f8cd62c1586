package dev.chibifs.cli;

import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Work that a stopped or hung FUSE daemon blocks for good (a stat of a path on its mount waits
 * for an answer that never comes, and no interrupt ends it): done on a daemon thread of its own,
 * and given up after a limit, so the command says so and exits; the JVM's exit ends the thread.
 */
final class Bounded {

    private Bounded() {
    }

    /** What {@code work} returned within {@code limit}, or empty where it had not; its failure as the cause. */
    static <T> Optional<T> within(String thread, Duration limit, Callable<T> work)
            throws ExecutionException, InterruptedException {
        ExecutorService executor = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, thread);
            t.setDaemon(true);
            return t;
        });
        try {
            return Optional.of(executor.submit(work).get(limit.toMillis(), TimeUnit.MILLISECONDS));
        } catch (TimeoutException e) {
            return Optional.empty();
        } finally {
            executor.shutdownNow();
        }
    }
}
