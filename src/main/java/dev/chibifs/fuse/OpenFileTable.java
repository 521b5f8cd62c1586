package dev.chibifs.fuse;

import dev.chibifs.policy.Caller;
import dev.chibifs.store.FileHandle;
import dev.chibifs.sys.ErrnoException;
import dev.chibifs.sys.Linux;

import java.io.IOException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Predicate;

/** The adapter's own table of open files, keyed by the handle number given to the kernel. */
final class OpenFileTable {

    // never 0: some kernels and tools treat fh == 0 as "no handle"
    private final AtomicLong next = new AtomicLong(1);
    private final ConcurrentMap<Long, OpenFile> files = new ConcurrentHashMap<>();
    /** How many files each sharer has open, for {@link #admit}. */
    private final ConcurrentMap<Sharer, AtomicInteger> bySharer = new ConcurrentHashMap<>();
    /** The most files one caller may hold open at once; 0: no limit (a mount that acts for one caller). */
    private volatile int share;

    /**
     * Who holds one share of open files: a context, whatever uids act as it, or one unmapped uid.
     * Every unmapped uid is the one guest caller; had they shared a single share, any local account
     * (nobody, a service, a container's uid) could open its quarter and leave root's backups and
     * every other reader without a mapping nothing to open.
     */
    record Sharer(Caller caller, long uid) {
        private static final long ANY_UID = -1;

        static Sharer of(Caller caller, long uid) {
            return new Sharer(caller, caller.kind() == Caller.Kind.GUEST ? uid : ANY_UID);
        }

        @Override
        public String toString() {
            return uid == ANY_UID ? caller.toString() : caller + " (uid " + uid + ")";
        }
    }

    /**
     * Each caller but SYSTEM (each unmapped uid on its own) may hold at most {@code share} files open (0: any number), and once
     * twice that many are open in all, only a caller holding fewer than a quarter of it (at least
     * 64: SQLite with 40 connections, a build) opens more. Every open file holds a descriptor of the daemon's: a tester's agent opened one file
     * 19,000 times and the other agents' cat, create and ls failed with "Too many open files" until
     * it let go; with a quarter each, four agents still took them all.
     */
    void share(int share) {
        this.share = share;
    }

    /**
     * EMFILE where {@code caller}, asking as {@code uid}, holds its {@link #share} of open files
     * already, as a process past its own limit gets.
     */
    void admit(Caller caller, long uid) throws ErrnoException {
        int most = share;
        if (most > 0 && !caller.equals(Caller.SYSTEM)) {
            Sharer sharer = Sharer.of(caller, uid);
            AtomicInteger held = bySharer.get(sharer);
            int holds = held == null ? 0 : held.get();
            if (holds >= most || files.size() >= 2L * most && holds >= Math.max(64, most / 4)) {
                throw new ErrnoException(Linux.EMFILE, null, "Too many open files: " + sharer + " holds " + holds
                        + " of the daemon's descriptors, " + files.size() + " are open");
            }
        }
    }

    long add(OpenFile file) {
        long id = next.getAndIncrement();
        bySharer.computeIfAbsent(Sharer.of(file.caller(), file.openerUid()), c -> new AtomicInteger()).incrementAndGet();
        files.put(id, file);
        return id;
    }

    OpenFile get(long id) {
        return files.get(id);
    }

    OpenFile remove(long id) {
        OpenFile f = files.remove(id);
        AtomicInteger held = f == null ? null : bySharer.get(Sharer.of(f.caller(), f.openerUid()));
        if (held != null) { // none after closeAll; counters stay otherwise: a caller's few bytes, not worth a race
            held.decrementAndGet();
        }
        return f;
    }

    int size() {
        return files.size();
    }

    /** Any open file of {@code node}: fstat of a file whose every name is gone answers from it. */
    OpenFile anyOf(NodeTable.Node node) {
        return anyOf(node, f -> true);
    }

    /** Any open file of {@code node} that {@code which} accepts. */
    OpenFile anyOf(NodeTable.Node node, Predicate<OpenFile> which) {
        for (OpenFile f : files.values()) {
            if (f.node() == node && which.test(f)) {
                return f;
            }
        }
        return null;
    }

    /** The nodes of the files open now that are named (by the name their path uses) in directory {@code parent}, but {@code except}. */
    Set<NodeTable.Node> openIn(NodeTable.Node parent, NodeTable.Node except) {
        Set<NodeTable.Node> out = new HashSet<>();
        for (OpenFile f : files.values()) {
            NodeTable.Link l = f.node().link;
            if (f.node() != except && l != null && l.parent() == parent) {
                out.add(f.node());
            }
        }
        return out;
    }

    /** Closes every handle still open (unmount with files open); returns how many there were. */
    int closeAll() {
        List<FileHandle> left = new ArrayList<>();
        files.values().forEach(f -> left.add(f.handle()));
        files.clear();
        bySharer.clear();
        for (FileHandle h : left) {
            try {
                h.close();
            } catch (IOException ignored) {
                // the mount is going away; nothing useful to do with a close error here
            }
        }
        return left.size();
    }
}
