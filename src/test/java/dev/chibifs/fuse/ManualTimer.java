package dev.chibifs.fuse;

import java.util.ArrayList;
import java.util.List;
import java.util.PriorityQueue;
import java.util.concurrent.AbstractExecutorService;
import java.util.concurrent.Callable;
import java.util.concurrent.Delayed;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * A timer whose clock moves only when a test says: tasks run on the test's thread, in the order of
 * their time, then of their scheduling, as one timer thread runs them. Counts what was scheduled.
 */
final class ManualTimer extends AbstractExecutorService implements ScheduledExecutorService {

    private final PriorityQueue<Task> queue = new PriorityQueue<>();
    private long nowMicros;
    private long sequence;
    private int scheduled;
    private boolean shutdown;

    private final class Task implements ScheduledFuture<Void> {
        final Runnable run;
        final long atMicros;
        final long order = sequence++;
        boolean cancelled;

        Task(Runnable run, long atMicros) {
            this.run = run;
            this.atMicros = atMicros;
        }

        @Override
        public long getDelay(TimeUnit unit) {
            return unit.convert(atMicros - nowMicros, TimeUnit.MICROSECONDS);
        }

        @Override
        public int compareTo(Delayed o) {
            Task t = (Task) o;
            return atMicros != t.atMicros ? Long.compare(atMicros, t.atMicros) : Long.compare(order, t.order);
        }

        @Override
        public boolean cancel(boolean mayInterrupt) {
            cancelled = true;
            return queue.remove(this);
        }

        @Override
        public boolean isCancelled() {
            return cancelled;
        }

        @Override
        public boolean isDone() {
            return cancelled || !queue.contains(this);
        }

        @Override
        public Void get() {
            throw new UnsupportedOperationException();
        }

        @Override
        public Void get(long timeout, TimeUnit unit) {
            throw new UnsupportedOperationException();
        }
    }

    /** Runs every task due by now, and those they make due. */
    void runDue() {
        advance(0);
    }

    /** Moves the clock on by {@code micros}, running each task at its time. */
    void advance(long micros) {
        long until = nowMicros + micros;
        while (!queue.isEmpty() && queue.peek().atMicros <= until) {
            Task t = queue.poll();
            nowMicros = Math.max(nowMicros, t.atMicros);
            t.run.run();
        }
        nowMicros = until;
    }

    /** Tasks scheduled so far (each execute, each schedule). */
    int scheduled() {
        return scheduled;
    }

    @Override
    public ScheduledFuture<?> schedule(Runnable command, long delay, TimeUnit unit) {
        if (shutdown) {
            throw new java.util.concurrent.RejectedExecutionException("shut down");
        }
        scheduled++;
        Task t = new Task(command, nowMicros + Math.max(0, unit.toMicros(delay)));
        queue.add(t);
        return t;
    }

    @Override
    public void execute(Runnable command) {
        schedule(command, 0, TimeUnit.MICROSECONDS);
    }

    @Override
    public <V> ScheduledFuture<V> schedule(Callable<V> callable, long delay, TimeUnit unit) {
        throw new UnsupportedOperationException();
    }

    @Override
    public ScheduledFuture<?> scheduleAtFixedRate(Runnable command, long initialDelay, long period, TimeUnit unit) {
        throw new UnsupportedOperationException();
    }

    @Override
    public ScheduledFuture<?> scheduleWithFixedDelay(Runnable command, long initialDelay, long delay, TimeUnit unit) {
        throw new UnsupportedOperationException();
    }

    @Override
    public void shutdown() {
        shutdown = true;
    }

    @Override
    public List<Runnable> shutdownNow() {
        shutdown = true;
        List<Runnable> left = new ArrayList<>();
        queue.forEach(t -> left.add(t.run));
        queue.clear();
        return left;
    }

    @Override
    public boolean isShutdown() {
        return shutdown;
    }

    @Override
    public boolean isTerminated() {
        return shutdown && queue.isEmpty();
    }

    @Override
    public boolean awaitTermination(long timeout, TimeUnit unit) {
        return isTerminated();
    }
}
