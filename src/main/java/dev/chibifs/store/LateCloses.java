package dev.chibifs.store;

import dev.chibifs.sys.Linux;
import dev.chibifs.sys.Syscalls;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

/**
 * Closes, on a thread of its own, the last descriptor of files and directories just removed from
 * the store, so the file system's freeing of them is not part of the request that removed them.
 * An unlinked inode is freed when its last reference goes, and on ext4 mounted with {@code discard}
 * (this project's VMs) that waits for a discard of its blocks: about 65 us per file, where the
 * unlink itself takes 5 ({@code rm -rf} of /usr/include/linux on the disk: 57 ms, 5 ms with every
 * inode still open elsewhere). {@link LocalStorage#removeFile} keeps such a reference across its
 * unlinkat, {@link HeldDirectories} hands over the descriptor of a directory that was removed, and
 * the S3 store removes its cached content through {@link #delete}; the reply goes out at once, and
 * the blocks are freed here, beside the program's next requests.
 *
 * <p>What comes later is free space, so {@link #flush} runs before the store reports it ({@code
 * df} right after {@code rm} sees the space back) and before anything that may take space. The
 * thread wakes once per run of removals, not once per file: after a batch it pauses
 * {@link #GATHER_NANOS} before taking the next, and past {@link #LIMIT} waiting descriptors the
 * caller closes its own, which bounds the descriptors held.
 */
public final class LateCloses {

    /** How long the closer lets descriptors gather after a batch while removals keep coming. */
    private static final long GATHER_NANOS = TimeUnit.MILLISECONDS.toNanos(5);
    /** The most descriptors waiting at once: a few against the held directories' share of the open-file limit. */
    private static final int LIMIT = (int) Math.max(16, Math.min(1024, Syscalls.openFileLimit() / 16));

    /** Descriptors given and not closed yet, queued or in the closer's hands: {@link #flush}'s fast path. */
    private final AtomicInteger open = new AtomicInteger();
    /** Guarded by {@code this}, as are the fields below it. */
    private final ArrayDeque<Integer> waiting = new ArrayDeque<>();
    /** False: nothing closes what waits but {@link #flush} and {@link #close()} (tests). */
    private final boolean ownThread;
    /** Started at the first descriptor, so a store that removes nothing costs no thread. */
    private Thread closer;
    /** The closer waits for work (not in its pause between batches): a descriptor given wakes it. */
    private boolean closerIdle;
    /** The closer is closing a batch it took: {@link #flush} waits for it. */
    private boolean closing;
    private boolean ended;

    /** Closes what it is given on a thread of its own. */
    public LateCloses() {
        this(true);
    }

    LateCloses(boolean ownThread) {
        this.ownThread = ownThread;
    }

    /**
     * Removes {@code file} (no failure when it is gone already), keeping a reference across the
     * unlink so that the file system frees it here, later: for files a store keeps of its own (the
     * S3 store's content cache), removed inside a request.
     */
    public void delete(Path file) throws IOException {
        removeHolding(Linux.AT_FDCWD, file.toString(), () -> Files.deleteIfExists(file));
    }

    /**
     * A reference to {@code name} in directory {@code dir} (O_PATH: no access needed, the name
     * itself, not a link's target) that keeps its inode after a removal of its last name; negative
     * when there is none to take (gone already, out of descriptors). Given back by {@link #release}.
     */
    static int hold(int dir, String name) {
        return Syscalls.tryOpenat(dir, name, Linux.O_PATH | Linux.O_NOFOLLOW, 0);
    }

    /** An unlink, rmdir or rename that may remove the last name of a file. */
    @FunctionalInterface
    interface Removal {
        void run() throws IOException;
    }

    /**
     * Runs {@code removal} of {@code name} in directory {@code dir} while holding it ({@link #hold}),
     * then lets go of it: here later when the removal happened, at once when it failed.
     */
    void removeHolding(int dir, String name, Removal removal) throws IOException {
        int last = hold(dir, name);
        try {
            removal.run();
        } catch (IOException | RuntimeException e) {
            release(last, false);
            throw e;
        }
        release(last, true);
    }

    /** Lets go of {@code last} (negative: nothing): later where {@code removed}, else at once. */
    void release(int last, boolean removed) {
        if (last < 0) {
            return;
        }
        if (removed) {
            close(last);
        } else {
            Syscalls.close(last);
        }
    }

    /** Closes {@code fd} soon, on the closer's thread; at once, here, when the queue is full or ended. */
    void close(int fd) {
        synchronized (this) {
            if (!ended && waiting.size() < LIMIT) {
                open.incrementAndGet();
                waiting.add(fd);
                if (closer == null && ownThread) {
                    closer = new Thread(this::run, "chibifs-late-closes");
                    closer.setDaemon(true);
                    closer.start();
                } else if (closerIdle) {
                    notifyAll(); // the first of a run; the rest come while it pauses, waking nobody
                }
                return;
            }
        }
        Syscalls.close(fd);
    }

    /**
     * Closes, here and now, every descriptor given so far, and waits for those the closer is closing:
     * the space of everything removed before this call is back when it returns. Called before what
     * may take space (a file opened to write, a directory made, {@code statfs}): a program that
     * deletes to make room and then writes (on a full disk) must find the room there. Costs one read
     * of a counter when nothing waits.
     */
    public void flush() {
        if (open.get() == 0) {
            return;
        }
        List<Integer> batch;
        synchronized (this) {
            while (closing) {
                waitUninterruptibly();
            }
            batch = new ArrayList<>(waiting);
            waiting.clear();
        }
        closeAll(batch);
    }

    private void run() {
        while (true) {
            List<Integer> batch;
            synchronized (this) {
                while (waiting.isEmpty() && !ended) {
                    closerIdle = true;
                    waitUninterruptibly();
                    closerIdle = false;
                }
                if (waiting.isEmpty()) {
                    return; // ended, and everything given is closed
                }
                batch = new ArrayList<>(waiting);
                waiting.clear();
                closing = true;
            }
            try {
                closeAll(batch);
            } finally {
                synchronized (this) {
                    closing = false;
                    notifyAll();
                }
            }
            LockSupport.parkNanos(GATHER_NANOS);
        }
    }

    private void closeAll(List<Integer> batch) {
        for (int fd : batch) {
            Syscalls.close(fd);
            open.decrementAndGet();
        }
    }

    /** Under the monitor: an interrupt does not end a wait that others count on. */
    private void waitUninterruptibly() {
        try {
            wait();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Closes what waits and ends the thread; later calls to {@link #close(int)} close at once. */
    public void close() {
        Thread t;
        synchronized (this) {
            ended = true;
            t = closer;
            notifyAll();
        }
        if (t != null) {
            try {
                t.join(TimeUnit.SECONDS.toMillis(10));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        flush(); // with no thread (tests), or one that did not end in time
    }
}
