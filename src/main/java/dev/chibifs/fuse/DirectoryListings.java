package dev.chibifs.fuse;

import dev.chibifs.store.EntryKind;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The listings being read: each a snapshot of a directory's names, taken when a reader starts
 * at offset 0 and served by offset, so a reader that asks on from an offset sees every name of
 * one snapshot exactly once, whatever changes meanwhile.
 *
 * <p>Where the kernel opens directories, a listing belongs to its handle, from OPENDIR to
 * RELEASEDIR. With zero-message opendir (the kernel offered FUSE_NO_OPENDIR_SUPPORT and we
 * answered OPENDIR with ENOSYS) the kernel sends neither, and every READDIR comes with handle
 * 0. A listing then belongs to the directory and the thread reading it (the request's pid is
 * the calling thread's id, {@code task_pid}, not its process's), and goes when that thread reads
 * its end. A reader that stops early leaves its listing behind: past {@link #UNOPENED_LIMIT} the
 * longest unread goes, and a reader that comes back for it is served from a new snapshot (as
 * after a rewind). Two readers of one directory on one thread share a listing: the one starting
 * over takes a new snapshot, which the other reads on from its offset, the same names in the same
 * order unless the directory changed in between.
 */
final class DirectoryListings {

    /** Listings without a handle kept at once: every reader still part-way through a directory. */
    static final int UNOPENED_LIMIT = 64;
    /** The bits of a listing's offset that number its entries; those above carry its generation. */
    static final int INDEX_BITS = 24;
    private static final long INDEX_MASK = (1L << INDEX_BITS) - 1;
    /** Generations an offset tells apart, wrapping: 2^31 / 2^INDEX_BITS. */
    private static final int GENERATIONS = 1 << (31 - INDEX_BITS);

    /** A directory's entries, read at its first READDIR and served by offset until released or rewound. */
    static final class Listing {
        final NodeTable.Node dir;
        final List<byte[]> names = new ArrayList<>();
        final List<EntryKind> kinds = new ArrayList<>();
        /** The inode number of each name as the store's listing gave it, 0 where it gave none. */
        private long[] inodes = new long[16];
        boolean loaded;
        /**
         * Whether the kernel may keep this listing in its cache until a change there: the directory
         * is followed. Without an OPENDIR to answer FOPEN_CACHE_DIR or not, the kernel caches every
         * listing, so one that may not be kept is dropped from its cache once it has been read.
         */
        boolean kept;
        /**
         * Whether the kernel may keep this listing, not followed, for as long as its store says its
         * answers hold (what is left of an S3 listing's validity), after which it is dropped.
         */
        boolean held;
        /** {@link NodeTable.Node#namesChangedBehind} of {@link #dir} as it was before the names were read. */
        int changesBeforeLoad;
        /** What this snapshot's offsets carry of {@link #changesBeforeLoad}: see {@link #offsetAfter}. */
        private int generation;

        Listing(NodeTable.Node dir) {
            this.dir = dir;
        }

        /** Empties it for a new snapshot, read with {@code changesBehind} changes heard so far. */
        void clear(int changesBehind) {
            names.clear();
            kinds.clear();
            changesBeforeLoad = changesBehind;
            generation = changesBehind & (GENERATIONS - 1);
        }

        void add(byte[] name, EntryKind kind, long inode) {
            if (names.size() == inodes.length) {
                inodes = java.util.Arrays.copyOf(inodes, inodes.length * 2);
            }
            inodes[names.size()] = inode;
            names.add(name);
            kinds.add(kind);
        }

        /** The inode number the store's listing gave name {@code i}; 0 where it gave none. */
        long inode(int i) {
            return inodes[i];
        }

        /** Whether a reply from {@code offset} is past the last name: the empty reply that ends a listing. */
        boolean endsAt(long offset) {
            return index(offset) >= names.size() + 2L;
        }

        /**
         * The offset after entry {@code i} (0 ".", 1 "..", 2 + k name k): where a reader goes on from.
         * It carries this snapshot's generation above the entry's number. The kernel appends a reply
         * to the listing it keeps wherever the reply starts at the offset the kept part ends at, from
         * any reader: by plain numbers, a reader still going through a snapshot read before a change
         * behind the mount would go on with a listing another reader began after it (or the reverse),
         * and the kernel would keep the mix, its names missing or twice, tagged as fresh. Offsets of
         * snapshots read on either side of a heard change never meet; within one generation the
         * reader that ends the listing drops it where a change came meanwhile (FuseFileSystem#readdir).
         * Offsets stay below 2^31, as ext4 keeps them for 32-bit readdir; a listing too long for that
         * goes by plain numbers.
         */
        long offsetAfter(long i) {
            return wide() ? i + 1 : (long) generation << INDEX_BITS | (i + 1);
        }

        /** The entry a reader at {@code offset} (0, or one {@link #offsetAfter} gave) reads next. */
        long index(long offset) {
            return wide() ? offset : offset & INDEX_MASK;
        }

        private boolean wide() {
            return names.size() + 2L > INDEX_MASK;
        }
    }

    private record Reader(long dir, int pid) {
    }

    private final ConcurrentMap<Long, Listing> byHandle = new ConcurrentHashMap<>();
    private final AtomicLong nextHandle = new AtomicLong(1);
    /** Guarded by itself; in access order, so the eldest is the longest unread. */
    private final Map<Reader, Listing> unopened = new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<Reader, Listing> eldest) {
            return size() > UNOPENED_LIMIT;
        }
    };

    /** OPENDIR: a new listing of {@code dir}, {@link Listing#kept} or {@link Listing#held}; returns its handle (never 0, the handle of no OPENDIR). */
    long open(NodeTable.Node dir, boolean kept, boolean held) {
        long fh = nextHandle.getAndIncrement();
        Listing l = new Listing(dir);
        l.kept = kept;
        l.held = held;
        byHandle.put(fh, l);
        return fh;
    }

    /** RELEASEDIR. */
    void release(long fh) {
        byHandle.remove(fh);
    }

    /** The listing of handle {@code fh}; null when there is none. */
    Listing opened(long fh) {
        return byHandle.get(fh);
    }

    /**
     * The listing that thread {@code pid} reads of {@code dir} without a handle: a new one when it
     * starts at offset 0 (or its old one was let go), to be loaded by the caller.
     */
    Listing unopened(NodeTable.Node dir, int pid, long offset) {
        Reader r = new Reader(dir.id, pid);
        synchronized (unopened) {
            Listing l = offset == 0 ? null : unopened.get(r);
            if (l == null) {
                l = new Listing(dir);
                unopened.put(r, l);
            }
            return l;
        }
    }

    /** Thread {@code pid} read the end of listing {@code l} (had without a handle): it asks no more of it. */
    void ended(Listing l, int pid) {
        synchronized (unopened) {
            unopened.remove(new Reader(l.dir.id, pid), l);
        }
    }

    /** At unmount. */
    void clear() {
        byHandle.clear();
        synchronized (unopened) {
            unopened.clear();
        }
    }
}
