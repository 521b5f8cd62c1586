package dev.chibifs.fuse;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayDeque;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Writes the notifications that may wait in the kernel, in the order given. An INVAL_ENTRY takes
 * its directory's lock, and an INVAL_INODE of pages each page's lock, and a process may hold
 * either while it waits for a reply (a create holds its directory, a read its pages). Written by
 * a request thread that others then wait for, such a notice could wait for a reply no thread is
 * left to give: with every worker so waiting, or the one thread of an io_uring queue, the mount
 * hung for good (stress-ng's lock stressors, whose grants catch up with the store's changes,
 * beside its rename and create stressors).
 *
 * <p>So one thread at a time writes ({@link #writing}), and no request thread ever waits for it:
 * the writer's own thread drains what is queued; a lock grant's reply is queued after its notices
 * ({@link #postReply}) and written with them; a grant answered elsewhere waits a bounded time
 * ({@link #awaitWritten}). A /dev/fuse worker of a session with others may take the writing itself
 * when it is free ({@link #writeNow}), writing what is queued and then its own notice: it may wait
 * in the kernel, but the others, finding the writing taken, queue theirs and stay free to serve
 * the reply it waits for. That keeps a lock grant as fast as when it wrote its notice itself
 * (the hand-off to another thread costs about 30 us on a 2-vCPU VM, 20% of a small SQLite
 * transaction).
 */
final class NoticeWriter implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(NoticeWriter.class);

    /** A reply without a body (success) to request {@code unique}, written once every notice queued before it is. */
    private record PendingReply(long unique, FuseChannel to) {
    }

    private final FuseChannel channel;
    /** Held by whichever thread writes: the writer's own, or a worker in {@link #writeNow}. */
    private final ReentrantLock writing = new ReentrantLock();
    /** Notices (byte arrays) and pending replies, in order; guarded by this. */
    private final ArrayDeque<Object> queue = new ArrayDeque<>();
    /** Items queued so far, and written (or refused) so far; guarded by this. */
    private long given;
    private long written;
    private boolean closed;
    /** The writer's own reply header: only the holder of {@link #writing} uses it. */
    private final ByteBuffer replyHeader = ByteBuffer.allocate(FuseProtocol.OUT_HEADER).order(ByteOrder.nativeOrder());

    NoticeWriter(FuseChannel channel) {
        this.channel = channel;
        Thread writer = new Thread(this::run, "chibifs-notices");
        writer.setDaemon(true);
        writer.start();
    }

    /** Queues the notification built in {@code notice} (copied: the buffer may be reused at once); returns its number. */
    long post(FuseReply notice) {
        return enqueue(notice.finish());
    }

    /**
     * Answers request {@code unique} with success through {@code to} once everything queued so far
     * is written: a lock grant whose invalidations must reach the kernel first.
     */
    void postReply(long unique, FuseChannel to) {
        enqueue(new PendingReply(unique, to));
    }

    private synchronized long enqueue(Object item) {
        queue.add(item);
        notifyAll();
        return ++given;
    }

    /**
     * Writes what is queued and then {@code notice} on the calling thread, if no other thread is
     * writing; else queues it. True when written. Only for a /dev/fuse worker of a session with
     * other workers (see the class comment).
     */
    boolean writeNow(FuseReply notice) {
        byte[] bytes = notice.finish();
        if (!writing.tryLock()) {
            enqueue(bytes);
            return false;
        }
        try {
            drain();
            write(bytes);
            return true;
        } catch (ChannelClosedException gone) {
            return true; // the mount is gone, and the reply after it goes nowhere either
        } finally {
            writing.unlock();
        }
    }

    /**
     * Waits until item {@code number} and those before it are written, at most {@code nanos};
     * false when the time ran out (a notice waits in the kernel for a lock a process holds).
     */
    synchronized boolean awaitWritten(long number, long nanos) throws InterruptedException {
        long deadline = System.nanoTime() + nanos;
        while (written < number) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                return false;
            }
            TimeUnit.NANOSECONDS.timedWait(this, left);
        }
        return true;
    }

    private void run() {
        try {
            while (true) {
                synchronized (this) {
                    while (queue.isEmpty() && !closed) {
                        wait();
                    }
                    if (queue.isEmpty()) {
                        return;
                    }
                }
                writing.lock();
                try {
                    drain();
                } finally {
                    writing.unlock();
                }
            }
        } catch (InterruptedException | ChannelClosedException ended) {
            // the session is over
        }
    }

    /** Writes everything queued, in order; the caller holds {@link #writing}. */
    private void drain() throws ChannelClosedException {
        while (true) {
            Object next;
            synchronized (this) {
                next = queue.poll();
            }
            if (next == null) {
                return;
            }
            try {
                if (next instanceof PendingReply r) {
                    replyHeader.clear();
                    replyHeader.putInt(FuseProtocol.OUT_HEADER).putInt(0).putLong(r.unique()).flip();
                    try {
                        r.to().write(replyHeader);
                    } catch (IOException | RuntimeException e) {
                        LOG.debug("lock reply not delivered: {}", e.toString());
                    }
                } else {
                    write((byte[]) next);
                }
            } finally {
                synchronized (this) {
                    written++;
                    notifyAll();
                }
            }
        }
    }

    /** Writes one notification; one the kernel refuses is logged, not thrown (ChannelClosedException is: the mount is gone). */
    private void write(byte[] bytes) throws ChannelClosedException {
        try {
            channel.write(ByteBuffer.wrap(bytes));
        } catch (ChannelClosedException gone) {
            throw gone;
        } catch (IOException | RuntimeException e) {
            FuseReply.notDelivered(e);
        }
    }

    @Override
    public synchronized void close() {
        closed = true;
        notifyAll();
    }
}
