package dev.chibifs.store;

import dev.chibifs.sys.Linux;
import dev.chibifs.sys.Syscalls;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
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
 * <p>What comes later is free space, so {@link #flush} runs before the store reports it
 * ({@code df} right after {@code rm} sees the space back). The thread wakes once per run of
 * removals, not once per file: after a batch it waits {@link #GATHER_NANOS} before taking the
 * next, and past {@link #LIMIT} waiting descriptors the caller closes its own, which bounds both
 * the descriptors held and the space not yet given back.
 */
public final class LateCloses {

    /** How long the closer lets descriptors gather after a batch while removals keep coming. */
    private static final long GATHER_NANOS = TimeUnit.MILLISECONDS.toNanos(5);
    /** The most descriptors waiting at once: a few against the held directories' share of the open-file limit. */
    private static final int LIMIT = (int) Math.max(16, Math.min(1024, Syscalls.openFileLimit() / 16));
    /** Offered by {@link #close()}: the closer ends when it takes it. */
    private static final int END = -1;

    private final LinkedBlockingQueue<Integer> waiting = new LinkedBlockingQueue<>();
    /** False: nothing closes what waits but {@link #flush} and {@link #close()} (tests). */
    private final boolean ownThread;
    /** Started at the first descriptor, so a store that removes nothing costs no thread. */
    private Thread closer;
    private volatile boolean ended;

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
        removeHolding(Syscalls.tryOpenat(Linux.AT_FDCWD, file.toString(), Linux.O_PATH | Linux.O_NOFOLLOW, 0),
                () -> Files.deleteIfExists(file));
    }

    /** An unlink, rmdir or rename that may remove the last name of a file. */
    @FunctionalInterface
    interface Removal {
        void run() throws IOException;
    }

    /**
     * Runs {@code removal} while holding {@code last}, a descriptor of what it removes (negative:
     * none to hold, out of descriptors say), then lets go of it: here later when the removal
     * happened, at once when it failed.
     */
    void removeHolding(int last, Removal removal) throws IOException {
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
        if (ended || waiting.size() >= LIMIT || !started()) {
            Syscalls.close(fd);
            return;
        }
        waiting.offer(fd);
    }

    /** Closes, here and now, every descriptor waiting. */
    public void flush() {
        List<Integer> batch = new ArrayList<>();
        waiting.drainTo(batch);
        if (closeAll(batch)) {
            waiting.offer(END); // taken from the closer, which close() is waiting for
        }
    }

    private synchronized boolean started() {
        if (ended) {
            return false;
        }
        if (closer == null && ownThread) {
            closer = new Thread(this::run, "chibifs-late-closes");
            closer.setDaemon(true);
            closer.start();
        }
        return true;
    }

    private void run() {
        List<Integer> batch = new ArrayList<>();
        while (true) {
            try {
                batch.add(waiting.take());
            } catch (InterruptedException e) {
                continue; // only END stops the closer, so nothing queued is left open
            }
            waiting.drainTo(batch);
            if (closeAll(batch)) {
                return;
            }
            // offers made meanwhile signal nobody (no thread waits in take()): no wake-up per removal
            LockSupport.parkNanos(GATHER_NANOS);
        }
    }

    /** Closes {@code batch} and empties it; true when it held {@link #END}. */
    private static boolean closeAll(List<Integer> batch) {
        boolean end = false;
        for (int fd : batch) {
            if (fd == END) {
                end = true;
            } else {
                Syscalls.close(fd);
            }
        }
        batch.clear();
        return end;
    }

    /** Closes what waits and ends the thread; later calls to {@link #close(int)} close at once. */
    public void close() {
        Thread t;
        synchronized (this) {
            ended = true;
            t = closer;
        }
        if (t != null) {
            waiting.offer(END);
            try {
                t.join(TimeUnit.SECONDS.toMillis(10));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        flush(); // what a close(fd) that read ended just before it was set queued after END
    }
}
