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
 * df} right after {@code rm} sees the space back), and {@link #flushWhenShort} before anything
 * that may take space, where the file system is short of room. The thread wakes once per run of
 * removals, not once per file: after a batch it pauses {@link #GATHER_NANOS} before taking the
 * next, and past {@link #LIMIT} waiting descriptors the caller closes its own, which bounds the
 * descriptors held.
 */
public final class LateCloses {

    /** How long the closer lets descriptors gather after a batch while removals keep coming. */
    private static final long GATHER_NANOS = TimeUnit.MILLISECONDS.toNanos(5);
    /** The most descriptors waiting at once: a few against the held directories' share of the open-file limit. */
    private static final int LIMIT = (int) Math.max(16, Math.min(1024, Syscalls.openFileLimit() / 16));

    /**
     * Room beyond what waits that a write-open wants before it leaves the freeing to the closer: a
     * sixteenth of the file system, at most {@link #MARGIN_BYTES_MOST} and {@link #MARGIN_FILES_MOST}.
     * The closer frees a batch within milliseconds; no program fills a gigabyte in that time.
     */
    private static final long MARGIN_SHARE = 16;
    private static final long MARGIN_BYTES_MOST = 1L << 30;
    private static final long MARGIN_FILES_MOST = 65_536;
    /** {@link #pendingDevice} before the first file, and where the files are on several or an unknown one. */
    private static final long NO_DEVICE = -1;
    private static final long MIXED_DEVICES = -2;
    /** The unit of stx_blocks. */
    private static final long BLOCK_BYTES = 512;

    /** Descriptors given and not closed yet, queued or in the closer's hands: {@link #flush}'s fast path. */
    private final AtomicInteger open = new AtomicInteger();
    /** Guarded by {@code this}, as are the fields below it. */
    private final ArrayDeque<Waiting> waiting = new ArrayDeque<>();
    /** What the files given and not closed hold (queued or in the closer's hands): what their closes give back. */
    private long pendingBytes;
    private int pendingFiles;
    /** The device of the files given and not closed, {@link #NO_DEVICE} or {@link #MIXED_DEVICES}. */
    private long pendingDevice = NO_DEVICE;
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

    /** A descriptor queued, with what its close is expected to give back. */
    private record Waiting(int fd, long device, long bytes) {
    }

    /** Closes {@code fd} soon, on the closer's thread; at once, here, when the queue is full or ended. */
    void close(int fd) {
        // one statx of the descriptor, here where the removal was: the write-opens that weigh what waits read no file
        Waiting w = sized(fd);
        synchronized (this) {
            if (!ended && waiting.size() < LIMIT) {
                open.incrementAndGet();
                waiting.add(w);
                pendingBytes += w.bytes;
                pendingFiles++;
                pendingDevice = pendingDevice == NO_DEVICE || pendingDevice == w.device ? w.device : MIXED_DEVICES;
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

    /** {@code fd} with its file's device and blocks; of an unknown device (weighed as short of room) where statx fails. */
    private static Waiting sized(int fd) {
        try {
            Syscalls.Statx s = Syscalls.statAside(fd);
            return new Waiting(fd, s.device(), s.blocks() * BLOCK_BYTES);
        } catch (IOException e) {
            return new Waiting(fd, MIXED_DEVICES, 0);
        }
    }

    /**
     * Closes, here and now, every descriptor given so far, and waits for those the closer is closing:
     * the space of everything removed before this call is back when it returns. Called before the
     * store counts its space ({@code statfs}). Costs one read of a counter when nothing waits.
     */
    public void flush() {
        if (open.get() == 0) {
            return;
        }
        List<Waiting> batch;
        synchronized (this) {
            while (closing) {
                waitUninterruptibly();
            }
            batch = new ArrayList<>(waiting);
            waiting.clear();
        }
        closeAll(batch);
    }

    /** The file system a store's files are on, asked only when something waits to be closed. */
    @FunctionalInterface
    interface Room {
        FileSystem now() throws IOException;
    }

    /** A file system's device (st_dev) and what fstatfs(2) says of it now. */
    record FileSystem(long device, Syscalls.Statfs statfs) {
    }

    /**
     * {@link #flush}, where the file system in {@code room} is short of what the files waiting will
     * give back (with a margin, {@link #MARGIN_SHARE}), or they are on another file system: called
     * before what may take space (a file opened to write, a name made), so a program that deletes to
     * make room on a full disk and then writes finds the room there. Elsewhere the closer frees them,
     * and a write-open does not pay for another program's {@code rm -rf}: closing up to {@link #LIMIT}
     * descriptors, each freeing an inode with a discard, took 0.1 to 1.8 s. Costs one read of a
     * counter when nothing waits; else one statfs.
     */
    public void flushWhenShort(Room room) {
        if (open.get() == 0) {
            return;
        }
        long bytes;
        long files;
        long device;
        // read before the statfs: what the closer frees meanwhile is then counted twice, as free and
        // as waiting, which errs towards a flush; read after, it would be counted by neither
        synchronized (this) {
            bytes = pendingBytes;
            files = pendingFiles;
            device = pendingDevice;
        }
        if (device == NO_DEVICE) {
            return; // all closed between the counter's read and here
        }
        try {
            FileSystem fs = room.now();
            if (device == fs.device() && roomy(fs.statfs(), bytes, files)) {
                return;
            }
        } catch (IOException e) {
            // the store is in trouble (and says so at the request): what it gives back is given here
        }
        flush();
    }

    /** Whether {@code fs} has room for {@code bytes} and {@code files}, and the margin beyond them. */
    static boolean roomy(Syscalls.Statfs fs, long bytes, long files) {
        long total = fs.blocks() * fs.unit();
        long marginBytes = Math.min(total / MARGIN_SHARE, MARGIN_BYTES_MOST);
        if (fs.available() * fs.unit() < bytes + marginBytes) {
            return false;
        }
        // a file system that does not count its inodes (btrfs) says 0 of them
        long marginFiles = Math.min(fs.files() / MARGIN_SHARE, MARGIN_FILES_MOST);
        return fs.files() == 0 || fs.freeFiles() >= files + marginFiles;
    }

    private void run() {
        while (true) {
            List<Waiting> batch;
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

    private void closeAll(List<Waiting> batch) {
        long bytes = 0;
        for (Waiting w : batch) {
            Syscalls.close(w.fd);
            open.decrementAndGet();
            bytes += w.bytes;
        }
        synchronized (this) { // once per batch: until then its files count as waiting, which errs towards a flush
            pendingBytes -= bytes;
            pendingFiles -= batch.size();
            if (pendingFiles == 0) {
                pendingDevice = NO_DEVICE;
            }
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
