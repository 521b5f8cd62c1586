package dev.chibifs.fuse;

import dev.chibifs.path.Fnv;
import dev.chibifs.store.EntryKind;

import java.util.ArrayList;
import java.util.Arrays;
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
 * its end. A reader that stops early leaves its listing behind: past {@link #UNOPENED_LIMIT}
 * listings, or {@link #UNOPENED_BYTES} of names in them, the longest unread go. A thread's
 * listing serves only a reader going on from its last reply ({@link Listing#goesOn}) within
 * {@link #GOING_ON_WITHIN_MILLIS}, or later while nothing changed;
 * any other (one that went on from the listing the kernel keeps, one coming back after its listing
 * went, the second of two readers on one thread) reads a new snapshot from the name its offset
 * names.
 */
final class DirectoryListings {

    /** Listings without a handle kept at once: every reader still part-way through a directory. */
    static final int UNOPENED_LIMIT = 64;
    /**
     * The names' bytes (each counted with {@link Listing#NAME_OVERHEAD}) those listings hold at
     * most, beside the newest: a tester's 30 readers that each stopped after one getdents of a
     * directory of 200,000 names left 600 MiB of snapshots on the heap, and 60 ended the daemon.
     */
    static final long UNOPENED_BYTES = 64L << 20;
    /** How soon after its last reply a thread's listing serves it as one going on, changed or not. */
    static final long GOING_ON_WITHIN_MILLIS = 1000;
    /**
     * The bits of an offset that say where in a listing it is; the bits above carry its generation.
     * Offsets stay below 2^31, as ext4 keeps them for 32-bit callers, whom FUSE does not tell apart:
     * glibc's readdir without large-file offsets fails EOVERFLOW past it, and the kernel's 32-bit
     * getdents and telldir cut the offset to 32 bits, so a seekdir would go back to the start.
     */
    private static final int POSITION_BITS = 28;
    private static final long POSITION_MASK = (1L << POSITION_BITS) - 1;
    /** Generations an offset tells apart, wrapping. */
    private static final int GENERATIONS = 1 << (31 - POSITION_BITS);
    /** The positions of "." and ".."; a name's is its hash, above these. */
    private static final long DOT = 1;
    private static final long DOTDOT = 2;
    /**
     * Room above the highest hash for names moved up past another with the same hash (see
     * {@link Listing#ordered}): with 2^28 positions, a directory of 100,000 names has about 18 pairs.
     */
    private static final long MOVED_UP_ROOM = 1L << 20;
    /** How {@link Listing#ordered} packs a sort key: a name's index (an int) under its position. */
    private static final int ORDER_INDEX_BITS = 31;

    /**
     * A snapshot of a directory's entries, read at its first READDIR and served by offset until
     * released or rewound.
     *
     * <p>Its names are ordered by a hash of each name, and the offset after a name (its d_off, where
     * a reader goes on from) is that hash, as ext4's are: an offset keeps its meaning in every
     * snapshot, so a reader served from another snapshot than the one its offset came from goes on
     * after the same name. That happens whenever the kernel served the first part of a listing
     * from the listing it keeps and drops it meanwhile (a change), or a thread's listing left unread
     * is taken again: by entry numbers, a program removing each name as it reads (a readdir and
     * unlink loop) skipped a name for every one removed before, and 182 of 1,000 stayed.
     *
     * <p>Within a snapshot every offset is another: a name whose hash another already has goes one
     * place up, so a reply may end between the two and the reader goes on exactly (in another
     * snapshot, such a name may be given twice or not at all, as on ext4).
     *
     * <p>Above the hash, an offset carries the snapshot's generation (the changes heard in the
     * directory before it was read). The kernel appends a reply to the listing it keeps wherever the
     * reply starts at the offset the kept part ends at, from any reader: a reader going through a
     * snapshot read before a change would go on with a listing another reader began after it (or the
     * reverse), and the kernel would keep the mix, tagged as fresh. Offsets of snapshots read on
     * either side of a heard change never meet; within one generation the reader that ends a listing
     * drops it where a change came meanwhile (DirectoryReader#readdir).
     */
    static final class Listing {
        final NodeTable.Node dir;
        final List<byte[]> names = new ArrayList<>();
        final List<EntryKind> kinds = new ArrayList<>();
        /** About what a name costs on the heap beside its bytes: its array's header, two list slots, two longs. */
        static final int NAME_OVERHEAD = 48;
        /**
         * The bytes its names take, with {@link #NAME_OVERHEAD} each. Written by the thread loading
         * it, read under {@link #unopened}'s lock by another: an approximate figure is all a limit needs.
         */
        private volatile long bytes;
        /** The inode number of each name as the store's listing gave it, 0 where it gave none. */
        private long[] inodes = new long[16];
        /** Each name's position: its hash, ascending once {@link #ordered}. */
        private long[] positions = new long[16];
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
        /** Empty because its directory was removed, or left its name (NodeTable#left): never to be kept. */
        boolean ofRemoved;
        /** {@link NodeTable.Node#namesChangedBehind} of {@link #dir} as it was before the names were read. */
        int changesBeforeLoad;
        /** What this snapshot's offsets carry of {@link #changesBeforeLoad}. */
        private int generation;
        /** The last reply's span: the position it started after, and its last entry's (see {@link #goesOn}). */
        private long repliedFrom = -1;
        private long repliedTo = -1;
        private long repliedAtMillis;

        Listing(NodeTable.Node dir) {
            this.dir = dir;
        }

        /** Empties it for a new snapshot, read with {@code changesBehind} changes heard so far. */
        void clear(int changesBehind) {
            bytes = 0;
            names.clear();
            kinds.clear();
            ofRemoved = false;
            changesBeforeLoad = changesBehind;
            generation = changesBehind & (GENERATIONS - 1);
            repliedFrom = repliedTo = -1;
        }

        void add(byte[] name, EntryKind kind, long inode) {
            int i = names.size();
            if (i == inodes.length) {
                inodes = Arrays.copyOf(inodes, i * 2);
                positions = Arrays.copyOf(positions, i * 2);
            }
            inodes[i] = inode;
            positions[i] = position(name);
            bytes += name.length + NAME_OVERHEAD; // only the loading thread writes it
            names.add(name);
            kinds.add(kind);
        }

        /**
         * Puts the names read in order of position (a tie by name, so every snapshot agrees), and
         * moves each name whose position the one before has up to the next free one.
         */
        void ordered() {
            int n = names.size();
            int[] order = orderByPackedKeys(n);
            List<byte[]> byName = new ArrayList<>(names);
            List<EntryKind> byKind = new ArrayList<>(kinds);
            long[] inodesRead = Arrays.copyOf(inodes, n);
            long[] positionsRead = Arrays.copyOf(positions, n);
            for (int i = 0; i < n; i++) {
                int from = order[i];
                names.set(i, byName.get(from));
                kinds.set(i, byKind.get(from));
                inodes[i] = inodesRead[from];
                positions[i] = i > 0 ? Math.min(Math.max(positionsRead[from], positions[i - 1] + 1), POSITION_MASK)
                        : positionsRead[from];
            }
        }

        /**
         * The order of the names by position, sorting primitive keys (a boxed sort of 100,000 takes
         * about as long as reading them): each key the position over the name's index; names with
         * one position are put in order by name.
         */
        private int[] orderByPackedKeys(int n) {
            long[] keys = new long[n];
            for (int i = 0; i < n; i++) {
                keys[i] = positions[i] << ORDER_INDEX_BITS | i;
            }
            Arrays.sort(keys);
            int[] order = new int[n];
            for (int i = 0; i < n; i++) {
                order[i] = (int) (keys[i] & ((1L << ORDER_INDEX_BITS) - 1));
            }
            for (int start = 0, end; start < n; start = end) {
                long position = keys[start] >>> ORDER_INDEX_BITS;
                for (end = start + 1; end < n && keys[end] >>> ORDER_INDEX_BITS == position; end++) {
                }
                for (int i = start + 1; i < end; i++) { // an insertion sort of a run of, almost always, one
                    int x = order[i];
                    int j = i - 1;
                    for (; j >= start && byPosition(order[j], x) > 0; j--) {
                        order[j + 1] = order[j];
                    }
                    order[j + 1] = x;
                }
            }
            return order;
        }

        private int byPosition(int x, int y) {
            return positions[x] != positions[y] ? Long.compare(positions[x], positions[y])
                    : Arrays.compare(names.get(x), names.get(y));
        }

        /** The inode number the store's listing gave name {@code i}; 0 where it gave none. */
        long inode(int i) {
            return inodes[i];
        }

        /** Whether a reply from {@code offset} is past the last name: the empty reply that ends a listing. */
        boolean endsAt(long offset) {
            return index(offset) >= names.size() + 2L;
        }

        /** The offset after entry {@code i} (0 ".", 1 "..", 2 + k name k): where a reader goes on from. */
        long offsetAfter(long i) {
            long position = i == 0 ? DOT : i == 1 ? DOTDOT : positions[(int) i - 2];
            return (long) generation << POSITION_BITS | position;
        }

        /**
         * The entry a reader at {@code offset} (0, or one {@link #offsetAfter} gave, of this snapshot
         * or another of the directory) reads next: the first whose position is past the offset's.
         */
        long index(long offset) {
            long position = offset & POSITION_MASK;
            if (position < DOTDOT) {
                return position; // 0: from the start; 1: after "."
            }
            // positions are unique (only past 2^20 names moved up above the highest hash could two meet)
            int at = Arrays.binarySearch(positions, 0, names.size(), position);
            return 2L + (at >= 0 ? at + 1 : -at - 1);
        }

        /**
         * A reply to a READDIR at {@code offset} went out at {@code nowMillis}, its last entry
         * {@code last} (as {@link #offsetAfter} takes).
         */
        void replied(long offset, long last, long nowMillis) {
            repliedFrom = offset & POSITION_MASK;
            repliedTo = offsetAfter(last) & POSITION_MASK;
            repliedAtMillis = nowMillis;
        }

        /**
         * Whether a reader at {@code offset} goes on with this very snapshot: the offset is where its
         * last reply started or one that reply gave (the kernel takes what fits of a reply, and asks
         * on from the last entry it took). A reader whose offset came from elsewhere (the listing the
         * kernel keeps, built by another snapshot) reads a snapshot of its own.
         */
        boolean goesOn(long offset) {
            long position = offset & POSITION_MASK;
            return offset >>> POSITION_BITS == generation && repliedFrom >= 0
                    && position >= repliedFrom && position <= repliedTo;
        }

        /** Whether a change to its directory's names was heard since it was read. */
        boolean changedSinceRead() {
            return dir.namesChangedBehind != changesBeforeLoad;
        }

        /**
         * A name's position before {@link #ordered}: a hash of its bytes (FNV-1a, then a 64-bit
         * finalizer to spread it), past "..", below the room kept for names moved up.
         */
        static long position(byte[] name) {
            long h = Fnv.hash64(name);
            h ^= h >>> 33;
            h *= 0xff51afd7ed558ccdL;
            h ^= h >>> 33;
            return DOTDOT + 1 + Long.remainderUnsigned(h, POSITION_MASK + 1 - MOVED_UP_ROOM - (DOTDOT + 1));
        }
    }

    private record Reader(long dir, int pid) {
    }

    private final long unopenedBytes;

    DirectoryListings() {
        this(UNOPENED_BYTES);
    }

    /** Listings without a handle holding at most {@code unopenedBytes} beside the newest (tests choose a small one). */
    DirectoryListings(long unopenedBytes) {
        this.unopenedBytes = unopenedBytes;
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
     * The listing that thread {@code pid} reads of {@code dir} without a handle at {@code nowMillis}:
     * a new one, to be loaded by the caller, unless it goes on from its listing's last reply.
     */
    Listing unopened(NodeTable.Node dir, int pid, long offset, long nowMillis) {
        Reader r = new Reader(dir.id, pid);
        synchronized (unopened) {
            Listing l = offset == 0 ? null : unopened.get(r);
            // a thread's listing may be one it left unread long ago, and its reader one that read the
            // kernel's kept listing since up to the same place: taken again soon after its last reply
            // (a reader going on, a readdir and unlink loop among them, whose every batch would read
            // the directory again otherwise), or while it is kept and nothing changed
            boolean goingOn = l != null && l.goesOn(offset)
                    && (nowMillis - l.repliedAtMillis < GOING_ON_WITHIN_MILLIS || l.kept && !l.changedSinceRead());
            if (!goingOn) {
                l = new Listing(dir);
                unopened.put(r, l);
                letGoPastTheBytes(l);
            }
            return l;
        }
    }

    /** The longest unread listings go while those kept hold more than {@link #unopenedBytes}; {@code newest} stays. Under the lock. */
    private void letGoPastTheBytes(Listing newest) {
        long held = 0;
        for (Listing l : unopened.values()) {
            held += l.bytes;
        }
        for (var it = unopened.values().iterator(); held > unopenedBytes && it.hasNext(); ) {
            Listing l = it.next(); // the eldest first: access order
            if (l != newest) {
                held -= l.bytes;
                it.remove();
            }
        }
    }

    /**
     * Listing {@code l} (had without a handle) was read: the longest unread others go while they hold
     * more than {@link #unopenedBytes}. Each listing is empty when made, so forty readers starting at
     * once kept forty full ones (a tester's daemon: 115 MB to 1.08 GB) with only the check at making.
     */
    void loaded(Listing l) {
        synchronized (unopened) {
            if (unopened.containsValue(l)) {
                letGoPastTheBytes(l);
            }
        }
    }

    /** The bytes the listings without a handle hold now, as {@link #UNOPENED_BYTES} counts them. */
    long unopenedBytes() {
        synchronized (unopened) {
            return unopened.values().stream().mapToLong(l -> l.bytes).sum();
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
