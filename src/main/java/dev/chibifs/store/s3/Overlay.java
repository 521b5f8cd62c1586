package dev.chibifs.store.s3;

import dev.chibifs.path.VfsPath;
import dev.chibifs.store.EntryKind;
import dev.chibifs.store.InProcessLocks;
import dev.chibifs.store.Storage;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.file.attribute.FileTime;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * What this host knows of an S3 store: a {@link Node} per name it knows (what it knows of the
 * object behind it, and what changed here), the names in each directory, a {@link Tomb} for each
 * name removed here whose object S3 may still show, the nodes changed here that wait to go up, and
 * the keys being uploaded. {@link S3Storage} changes it for a mount's operations, {@link Listings}
 * with what S3 lists, {@link WriteBack} as uploads end, {@link JournalRecords} at a restart.
 *
 * <p>Locking: none of its own. Every field is read and every method called holding the store's
 * monitor ({@code synchronized (store)}), which also orders the journal's records of each change.
 */
final class Overlay {
    private static final Logger LOG = LoggerFactory.getLogger(Overlay.class);
    /** {@link Node#appendsFrom} of a file changed here otherwise than by appends. */
    static final long NOT_APPENDS = -1;
    /** A file rewritten again and again is uploaded at least this many debounce periods after its first change. */
    static final int MAX_DEFERRALS = 5;
    /** A symbolic link's permission bits, as Linux shows every link's (they are never checked). */
    static final int LINK_MODE = 0777;

    private final S3Storage store;
    /** Every name this host knows, the root's among them. */
    final Map<VfsPath, Node> nodes = new HashMap<>();
    /** The names in each directory, for listings answered here and moves of a whole tree. */
    private final Map<VfsPath, TreeSet<String>> index = new HashMap<>();
    /** Keyed by S3 key (a directory's is its marker key, ending with '/'). */
    final Map<String, Tomb> tombs = new HashMap<>();
    /** The dirty nodes, so the flusher's look every tick costs nothing with none (not a walk of the overlay). */
    final Set<Node> dirtyNodes = new LinkedHashSet<>();
    /**
     * Keys being uploaded. A listing may show such an object before the upload is told done; when its
     * node was renamed or removed meanwhile, that listing must not bring the old name back.
     */
    final Set<String> inflight = new HashSet<>();
    final Node root;
    long nextIno = 2;
    /**
     * Inode numbers below this one may have been handed out, and the journal says so: a restart hands
     * out none of them again, so no number passes from one object to another (tar
     * --listed-incremental keys a directory by its number). Reserved in blocks as nodes are placed
     * ({@link JournalRecords#reserveInodes}), those a listing makes too, which no other record names.
     */
    long inoReserved;
    /**
     * Whether the journal says what each change waits for (old names, claims, releases): false after
     * a start from a journal an earlier version wrote, until its changes are up, and a failure among
     * them then holds back every other, as that version did ({@link WriteBack#replay}).
     */
    boolean dependenciesKnown = true;
    /** Counts mutations S3 has done: a listing that started at seq L shows those up to L. */
    long seq;

    Overlay(S3Storage store) {
        this.store = store;
        this.root = new Node(1, true, false, store.now(), S3Storage.DIR_MODE);
        root.path = VfsPath.root();
        root.dirOnRemote = root.marker = true;
        nodes.put(VfsPath.root(), root);
    }

    TreeSet<String> children(VfsPath dir) {
        return index.computeIfAbsent(dir, k -> new TreeSet<>());
    }

    void attach(VfsPath p, Node n) {
        if (n.ino >= inoReserved) {
            store.journal.reserveInodes(n.ino); // before the kernel can see the number
        }
        n.path = p;
        nodes.put(p, n);
        children(p.parent()).add(p.fileName());
    }

    /**
     * Moves {@code n}'s name to {@code to}, with the names its index holds below it (a directory's
     * children move with it as the caller moves each of them, parents first).
     */
    void rename(Node n, VfsPath to) {
        VfsPath from = n.path;
        nodes.remove(from);
        TreeSet<String> siblings = index.get(from.parent());
        if (siblings != null) {
            siblings.remove(from.fileName());
        }
        TreeSet<String> kids = index.remove(from);
        attach(to, n);
        if (kids != null) {
            index.put(to, kids);
        }
    }

    /** Takes {@code n} out of the namespace; its data file goes too (open handles keep their copy). */
    void detach(Node n) {
        VfsPath p = n.path;
        if (p == null) {
            return;
        }
        nodes.remove(p);
        TreeSet<String> siblings = index.get(p.parent());
        if (siblings != null) {
            siblings.remove(p.fileName());
        }
        index.remove(p);
        n.path = null;
        dirtyNodes.remove(n); // a change to a name that is gone goes nowhere
        store.dropFormer(n);
        if (!n.dir && n.opens == 0) {
            // an open file's content stays until its last close (ObjectHandle.close): a handle that
            // has not read yet opens it by the cache's name, as a file with no name is still open
            dropDetachedContent(n);
        }
    }

    /** The cached content of {@code n}, whose name went, goes too. */
    void dropDetachedContent(Node n) {
        WriteBack.dropKeptMerge(n);
        try {
            store.lateCloses.delete(store.dataFile(n.ino));
        } catch (IOException e) {
            LOG.warn("cannot remove cached content of a removed file (inode {}): {}", n.ino, e.getMessage());
        }
    }

    /** Every node at or below {@code p}, deepest first. */
    List<Node> subtree(VfsPath p) {
        List<Node> out = new ArrayList<>();
        collect(p, out);
        return out;
    }

    private void collect(VfsPath p, List<Node> out) {
        Node n = nodes.get(p);
        if (n == null) {
            return;
        }
        if (n.dir) {
            TreeSet<String> names = index.get(p);
            if (names != null) {
                for (String name : List.copyOf(names)) {
                    collect(p.child(name), out);
                }
            }
        }
        out.add(n);
    }

    Node newNode(boolean dir, int mode) {
        return newNode(dir, false, mode);
    }

    Node newLink() {
        return newNode(false, true, LINK_MODE);
    }

    private Node newNode(boolean dir, boolean link, int mode) {
        Node n = new Node(nextIno++, dir, link, store.now(), mode);
        n.lastUsed = store.ticks();
        return n;
    }

    void touch(Node n) {
        n.mtime = n.ctime = store.now();
    }

    /** Puts {@code n}, just made here, at {@code p}: it takes over a delete pending there, and goes up after the debounce. */
    void placeMade(VfsPath p, Node n) {
        attach(p, n);
        resurrect(p, n);
        touch(nodes.get(p.parent()));
        dirty(n);
    }

    /**
     * A tombstone for the object of {@code n} at {@code p}, when S3 has one. Where this host claimed
     * that name on S3 ({@link Node#claimMadeBy}), the remove lets a lock go: its delete waits for
     * every change made here before it ({@link Release}).
     */
    void bury(VfsPath p, Node n) {
        if (!n.onRemote()) {
            return;
        }
        String k = store.objectKey(p, n);
        if (k.isEmpty()) {
            return;
        }
        Release release = n.claimMadeBy != null ? releaseAfterAll(n) : null; // before its own tombstone is among them
        tombstone(k, n.dir ? null : n.etagOnS3(), release);
    }

    /** What the remove of {@code lock}, a name claimed here, waits for: every change made here until now. */
    private Release releaseAfterAll(Node lock) {
        Map<Node, Long> changes = new HashMap<>();
        for (Node d : dirtyNodes) {
            if (d != lock) {
                changes.put(d, d.gen);
            }
        }
        Map<String, Tomb> deletes = new HashMap<>();
        tombs.forEach((k, t) -> {
            if (t.pending) {
                deletes.put(k, t);
            }
        });
        return new Release(changes, deletes, lock.claimMadeBy);
    }

    /**
     * The keys of what the release {@code t} still waits for: a change made before it not up yet
     * (its node named, not yet settled at the generation it had then), or a delete pending then and
     * still pending (not taken over since by a name made again). Empty once it may go.
     */
    List<String> releaseWaitsFor(Tomb t) {
        List<String> out = new ArrayList<>();
        if (t.release == null) {
            return out;
        }
        t.release.changes.forEach((n, gen) -> {
            if (n.dirty && n.path != null && n.settledGen < gen) {
                out.add(store.objectKeyOf(n));
            }
        });
        t.release.deletes.forEach((k, before) -> {
            if (before.pending && tombs.get(k) == before) {
                out.add(k);
            }
        });
        return out;
    }

    /**
     * A tombstone for the object {@code k}, journaled: an upload's (a file's, a marker's) whose name
     * went while it went up. Where the name was a lock let go meanwhile (made again here over its
     * claim, then removed: {@code rmdir; mkdir; rmdir}), the pending delete is that release, and
     * stays one: a plain delete in its place went before what was written under the lock, and was
     * sent again unlooked (two holders, a tester's coord4 finding 4).
     */
    void tombstone(String k, String etag) {
        Tomb was = tombs.get(k);
        boolean release = was != null && was.pending && was.release != null;
        tombstone(k, etag, release ? was.release : null);
        if (release) {
            tombs.get(k).sent = was.sent; // one sent unanswered may have been done: claimed again only after it
        }
    }

    /** A tombstone for the object {@code k}, journaled; {@code release}: what its delete waits for, where it lets a lock go. */
    private void tombstone(String k, String etag, Release release) {
        Tomb t = new Tomb(etag);
        t.release = release;
        tombs.put(k, t);
        store.journal.tomb(k, t);
        wakeWriteBack();
    }

    /**
     * What the lock let go by {@code release} before the last stop waits for at this start
     * ({@link JournalRecords#replay}), of the claim made by {@code madeBy}: what was changed here
     * before it, as while the daemon ran, by the journal's sequence ({@link Node#dirtySince},
     * {@link Tomb#seq}): a change made after the release (a refused file written beside it) held
     * the lock for good. Where the journal does not say (written before it did, {@link Tomb#seq}
     * 0), every change it held and every delete but a lock's (two such releases waiting for each
     * other would never go), of those {@code releases}. Under the monitor.
     */
    Release releaseAfterReplay(Collection<Tomb> releases, Tomb release, String madeBy) {
        long at = release.seq;
        Map<Node, Long> changes = new HashMap<>();
        for (Node d : dirtyNodes) {
            if (at == 0 || d.dirtySince < at) {
                changes.put(d, d.gen);
            }
        }
        Map<String, Tomb> deletes = new HashMap<>();
        tombs.forEach((k, t) -> {
            if (t.pending && t != release && (at == 0 ? !releases.contains(t) : t.seq < at)) {
                deletes.put(k, t);
            }
        });
        return new Release(changes, deletes, madeBy);
    }

    /** Something now waits to go up; the write-back is null while the store is being made. */
    private void wakeWriteBack() {
        WriteBack w = store.writeBack;
        if (w != null) {
            w.wake();
        }
    }

    /** A new node at {@code p} takes over a pending tombstone there: its upload replaces that object. */
    void resurrect(VfsPath p, Node n) {
        String k = store.objectKey(p, n);
        Tomb t = tombs.get(k);
        if (t != null && t.pending) {
            tombs.remove(k);
            store.journal.untomb(k);
            if (n.dir) {
                n.dirOnRemote = true;
            } else {
                n.remoteEtag = t.etag;
            }
            // made again before the release went: the claim is still on S3, now this name's
            n.claimMadeBy = t.release == null ? null : t.release.madeBy();
        }
    }

    /** {@code n} agrees with S3 again: nothing of it waits to go up. The undoing of {@link #changed}'s marking. Under the monitor. */
    void settled(Node n) {
        n.settledGen = n.gen;
        n.dirty = false;
        dirtyNodes.remove(n);
        n.due = Long.MAX_VALUE;
        n.oldNames = null;
        n.dirtySince = Node.NOT_DIRTY;
    }

    /**
     * {@code n}, moved from {@code p}, leaves its object there to go once it is up under its new name:
     * that delete waits for its upload, so another host sees both names for a moment, never neither.
     */
    void movedAway(VfsPath p, Node n) {
        String k = store.objectKey(p, n);
        Tomb t = tombs.get(k);
        if (t != null && t.pending) {
            if (n.oldNames == null) {
                n.oldNames = new HashSet<>();
            }
            n.oldNames.add(k);
        }
    }

    /**
     * {@code n} took the name of {@code old} (a rename or a replace onto it), whose changes had not
     * gone up yet: the cap on the debounce counts from old's first change, not n's, so a name
     * replaced more often than the debounce (write a temporary file, rename it over) still goes up.
     */
    void tookNameOf(Node n, Node old) {
        if (!old.dirty || old.dir || !n.dirty || old.firstDirty >= n.firstDirty) {
            return;
        }
        n.firstDirty = old.firstDirty;
        if (n.writers == 0) {
            n.due = Math.min(n.due, n.firstDirty + MAX_DEFERRALS * store.options.flushAfter().toMillis());
        }
    }

    /**
     * {@code n}, just turned dirty, is listed for the write-back, and counted in what waits to go up
     * (status's and stats' "to send", {@link S3Storage#pendingChanges}), where it has a name. One
     * without (removed while a handle held it open, or its name lost to another host's version in a
     * conflict) goes nowhere, and nothing would take it off the list: {@link #detach} had, and a
     * write through that handle put it back, so after `exec 3>f; rm f; echo >&3` a sync returned 0
     * and stats said "to send: 1" until a remount (the journal, which it never reached, had nothing).
     */
    private void waitsToGoUp(Node n) {
        if (n.path != null) {
            dirtyNodes.add(n);
            wakeWriteBack();
        }
    }

    /** Marks {@code n} changed by a finished operation; it is uploaded once the debounce has passed. */
    void dirty(Node n) {
        changed(n, false);
    }

    /** {@link #dirty} for a change of {@code n}'s attributes alone: the content's SHA-256 stays known. */
    void attributesChanged(Node n) {
        changed(n, true);
    }

    void changed(Node n, boolean contentKept) {
        boolean shaKnown = contentKept && n.shaGen == n.gen;
        n.gen++;
        n.appendsFrom = NOT_APPENDS; // a merge would put theirs under this name with theirs attributes
        if (shaKnown) {
            n.shaGen = n.gen;
        }
        n.attributesKnown = true; // changed here: what S3 has is no longer its attributes
        if (!n.dirty) {
            n.dirty = true;
            waitsToGoUp(n);
            n.firstDirty = store.ticks();
        }
        schedule(n);
        if (n.path != null) {
            store.journal.put(n);
        }
    }

    /**
     * Marks {@code n} as being written through a handle; journaled (before the data changes) only when
     * it turns dirty, so that a crash never leaves changed content behind a record saying it is clean.
     * {@code appendAt} is where an append through a handle opened to append writes, else
     * {@link #NOT_APPENDS}; {@code asMade} whether the file is still as that handle's open made it.
     */
    void writing(Node n, long appendAt, boolean asMade) {
        long appendsFrom = n.appendsFrom;
        boolean wasClosedOnce = n.closedOnce;
        n.closedOnce = false;
        if (appendAt == NOT_APPENDS) {
            n.appendsFrom = NOT_APPENDS;
        } else if (!n.dirty) {
            n.appendsFrom = n.remoteEtag != null ? appendAt : NOT_APPENDS; // the content is S3's version
        } else if (asMade && n.remoteEtag == null) {
            n.appendsFrom = appendAt; // empty as this open made it, and no object: appends begin at 0
        }
        n.gen++;
        n.attributesKnown = true;
        if (!n.dirty) {
            n.dirty = true;
            waitsToGoUp(n);
            n.firstDirty = store.ticks();
            n.due = dueWhileOpen(n);
            if (n.path != null) {
                store.journal.put(n);
            }
            return;
        }
        if ((n.appendsFrom != appendsFrom || n.sizeJournaled || wasClosedOnce) && n.path != null) {
            // else a restart would merge as appends what this write changes, take a truncate by this
            // writer, killed before its close, for a content file damaged since the last record, or
            // upload as done a file its open made and this writer had not finished (the record made
            // with the file came before its writer was counted, and said no writer was open)
            store.journal.put(n);
        }
        if (n.appendsFrom == NOT_APPENDS) {
            n.due = Long.MAX_VALUE;
        } else if (n.due == Long.MAX_VALUE) {
            n.firstDirty = store.ticks(); // appended to again since its last upload while open
            n.due = dueWhileOpen(n);
        }
    }

    /** The debounce: due {@code flushAfter} after the last close, but not later than a few periods after the first change. */
    void schedule(Node n) {
        long now = store.ticks();
        long every = store.options.flushAfter().toMillis();
        n.due = n.writers > 0 ? dueWhileOpen(n) : Math.min(now + every, n.firstDirty + MAX_DEFERRALS * every);
    }

    /** Whether {@code n} goes up when it does because the debounce's cap forced it, not because it settled. */
    boolean dueAtItsCap(Node n) {
        return n.due == n.firstDirty + MAX_DEFERRALS * store.options.flushAfter().toMillis();
    }

    /**
     * When a file open for writing goes up: not before its last close, which a writer may leave it
     * half written until, unless every change since S3's version was an append. Such a file (a log a
     * process keeps open) goes up a few periods after its first change not yet up, as a file
     * rewritten again and again does, so other hosts see its lines while it stays open.
     */
    long dueWhileOpen(Node n) {
        return n.appendsFrom == NOT_APPENDS ? Long.MAX_VALUE : n.firstDirty + MAX_DEFERRALS * store.options.flushAfter().toMillis();
    }

    /** Marks the directory {@code dir} as needing its marker (an emptied implicit directory would vanish). */
    void needMarker(VfsPath dir) {
        Node d = nodes.get(dir);
        if (d != null && d.dir && !d.marker && !d.dirty && !dir.isRoot()) {
            dirty(d);
        }
    }

    static final class Node {
        final long ino;
        final boolean dir;
        /** A symbolic link: its content (data file, object) is the target's text, and never changes. */
        final boolean link;
        VfsPath path;
        long size;
        FileTime birth;
        FileTime mtime;
        FileTime atime;
        FileTime ctime;
        int mode;
        /** Bumped by every local change of content or attributes. */
        long gen;
        /** SHA-256 of the content at generation {@link #shaGen}. */
        String sha;
        long shaGen = -1;
        /** ETag of the S3 object this node is based on; the If-Match of its next upload (null: none). */
        String remoteEtag;
        /**
         * The LastModified a listing last showed for that object; null where unknown (this host put it
         * since, and a PUT answers no time). The same ETag listed with another time is the same content
         * put again: a chmod, touch or setfattr on another host, whose attributes this node lacks.
         */
        Instant listedModified;
        /**
         * The ETag the last listing of its directory showed for its object, also where that listing
         * left the node as it was (a file open for writing); null before one did. A lock's pull, which
         * lists the directory first, asks a HEAD only where this is not {@link #remoteEtag}.
         */
        String listedEtag;
        /**
         * When S3 answered this host's last upload of it, by S3's clock ({@link S3Storage#uploaded});
         * null when it made none since a listing. Until a listing shows a time, one later than this is
         * another host's put, not this host's own. A journal written before kept this host's wall
         * clock here, which stands until the next listing.
         */
        Instant uploadedAt;
        /** Directories: known to exist in S3 (a marker or keys below it). */
        boolean dirOnRemote;
        /** Directories: its marker object is known to exist. */
        boolean marker;
        /** The data file holds the content (else it is fetched at the next open). */
        boolean cached;
        /**
         * Its mode and mtime are its own: made or fetched here, or asked of its object's metadata. A
         * file or link a listing showed has S3's LastModified (and a file no execute bits) until then.
         */
        boolean attributesKnown = true;
        /**
         * A listing showed this object at another ETag than the content cached here, with the same
         * size: another host may have changed its attributes alone, copying it onto itself (a copy
         * may give an object put in parts a new ETag). Until a HEAD compares the content's SHA-256,
         * its attributes are unknown and an open waits; null when no such doubt.
         */
        Bucket.Listed doubted;
        /**
         * The object under its old name, which S3 copies to its new one at its upload (the bytes do
         * not go up again) while its content is unchanged since its move; null when none. Not
         * journaled: after a restart it goes up as any change.
         */
        S3Storage.MovedFrom movedFrom;
        /**
         * A merge of this host's appends with another host's lines that S3 has and this copy lacks,
         * made while a writer kept the file open; null when none. Not journaled: after a restart
         * the next upload merges from a download, as before it.
         */
        WriteBack.KeptMerge keptMerge;
        /**
         * Its content as cached before another host's version came, kept where that version may be
         * it with bytes added (a log another host appended to): the next fetch then downloads only
         * what follows it. Null when none. Not journaled: the upload directory is emptied at start.
         */
        S3Storage.Former former;
        /**
         * The keys of its old names whose objects wait, tombstoned, for it to go up under its new one
         * ({@link Overlay#movedAway}); null when none. Journaled, so that after a restart those deletes
         * still wait for it, and for nothing else.
         */
        Set<String> oldNames;
        /** The HEAD asking for its attributes, while one is under way; waiters join it. */
        java.util.concurrent.CompletableFuture<Void> askingAttributes;
        /** The GET of its content an open made, while one is under way; other opens join it. */
        java.util.concurrent.CompletableFuture<Void> fetching;
        /** Its download in ranges, while read-only opens read it as it arrives ({@link Fetches#streamingHandle}). */
        Bucket.Download download;
        boolean dirty;
        /** When its content was last fetched or opened here (the store's ticker): the content cache's LRU order. */
        long lastUsed;
        long firstDirty;
        long due = Long.MAX_VALUE;
        /** The {@link Overlay#seq} at which this node last agreed with S3. */
        long syncedSeq;
        /**
         * The last generation S3 has (or had) of it as changed here: every change up to it went up.
         * What a lock's release waits for ({@link Overlay#releaseWaitsFor}).
         */
        long settledGen = -1;
        /**
         * Where this host claimed its name on S3 ({@code --exclusive-creates}: an O_EXCL create, a
         * mkdir) and S3 still has that object, the claim's {@link S3Storage#META_MADE_BY}: its remove
         * releases a lock ({@link Release}), whose delete checks it first. Else null. Journaled: after
         * a restart its remove still waits for what was changed here before it, and checks the same.
         */
        String claimMadeBy;
        int writers;
        /**
         * S3's refusals of this change's upload since it last went up. Journaled: the replay after a
         * restart asks S3 once for a change it refused, not with the client's retries of a 500 (about
         * 1.5 s each, at every mount again), and its retry waits as long as the count had made it wait
         * before the stop ({@link WriteBack#backoffAfter}).
         */
        Refusals refusals = Refusals.NONE;
        /**
         * The journal's sequence ({@link JournalRecords}) of its last record: the order of its last
         * change among the others', which the compaction keeps and a restart uploads in.
         */
        long journaledSeq;
        /**
         * The journal's sequence when it turned changed, its change not up since ({@link #NOT_DIRTY}
         * when none): a lock let go after it, and before a restart, waits for it; one let go before
         * it does not ({@link Overlay#releaseAfterReplay}). 0 where the journal did not say (before
         * everything).
         */
        long dirtySince = NOT_DIRTY;
        static final long NOT_DIRTY = -1;
        /**
         * Whether the journal's last record of it gives the size its content has, no writer being open
         * then: a content file found shorter at the next start was damaged ({@link JournalRecords#replay}).
         */
        boolean sizeJournaled;
        /**
         * Its one writer's close(2) came ({@link ObjectHandle#closedOnce}) and nothing was written
         * since: the journal records no writer open, though the open is not released yet.
         */
        boolean closedOnce;
        /**
         * Handles open on it, writers among them, and renames fetching it to upload it anew: while
         * above 0 its content stays in the content cache.
         */
        int opens;
        /** Its locks, made at the first lock request; they stay with the file through renames. */
        InProcessLocks locks;
        /** Its lease on S3 while its locks reach other hosts ({@link HostLocks}); made with {@link #locks}. */
        HostLocks.Lease lease;
        /**
         * Bumped when the content cached of a file locked here goes (another host's version came),
         * and when a lock's pull finds another version of a file open for writing beside it
         * ({@link Listings#pullVersion}): its handles then read that version ({@link ObjectHandle}),
         * as processes sharing files under locks expect, not the copy they opened. Elsewhere a handle
         * keeps what it opened. Written under the monitor; read without.
         */
        volatile long replaced;
        /** Its extended attributes (files only), as its object's metadata carries them; null for none. */
        Map<String, byte[]> xattrs;
        /**
         * Where this host's appends begin, while every change of its content made here since the version
         * S3 has ({@link #remoteEtag}; none, for a file an append made here) was a write through a handle
         * opened to append: the bytes before it are that version's, or went up already. Another host's
         * change met at upload then gets the bytes from here on at its end ({@link WriteBack#mergeAppends}),
         * not a conflict copy. {@link Overlay#NOT_APPENDS} after any other change (a write elsewhere, a
         * truncate, an attribute, a rename). Journaled with the node whenever it changes while the node
         * is dirty, before the write that changes it.
         */
        long appendsFrom = NOT_APPENDS;
        /**
         * The SHA-256 of each upload since the last that succeeded whose every attempt failed as far
         * as the client knows: one may have landed all the same. Null when none.
         */
        List<String> lostUploads;
        /**
         * When its upload first met another host's version and its content began going up as a conflict
         * copy, until the copy is up: the copy's name keeps that time. A copy S3 refused was named anew
         * at each retry, and its refusal said anew in the log each time. Journaled (with the changed
         * file's record), so a restart names the copy alike.
         */
        Instant conflictMet;

        Node(long ino, boolean dir, boolean link, FileTime now, int mode) {
            this.ino = ino;
            this.dir = dir;
            this.link = link;
            this.birth = this.mtime = this.atime = this.ctime = now;
            this.mode = mode;
            this.size = dir ? Storage.BLOCK_SIZE : 0;
        }

        boolean onRemote() {
            return dir ? dirOnRemote : etagOnS3() != null;
        }

        /**
         * The version S3 has of this file as this host last put it: its kept merge's (which its
         * content lacks, so {@link #remoteEtag} stays the version before), else the one its content
         * is based on. What a remove or a replace of it is conditional on.
         */
        String etagOnS3() {
            return keptMerge != null && keptMerge.etagHere() != null ? keptMerge.etagHere() : remoteEtag;
        }

        EntryKind kind() {
            return dir ? EntryKind.DIRECTORY : link ? EntryKind.SYMLINK : EntryKind.FILE;
        }
    }

    /**
     * What the delete of a name this host claimed on S3 waits for: the changes (each node at its
     * generation then) and the deletes pending here when it was removed. Such a name is a lock (a
     * lock file, a lock directory) and its remove lets the lock go: deleted at the next tick, the
     * next holder on another host read what the debounce still held back here, the data written
     * under the lock (a tester's counter, incremented 15 times on each of two hosts, ended at 15).
     * So it goes once all of those are up, as a flock's release pushes first ({@link HostLocks});
     * the write-back sends them at once rather than after their debounce ({@link WriteBack#pass}).
     * Every change of the store, not only those of its directory: what a lock guards may be anywhere.
     * {@code madeBy}: the claim's {@link S3Storage#META_MADE_BY}, which the object must still carry
     * to be deleted ({@link WriteBack}'s deleteClaim): another host may have claimed the name since.
     */
    record Release(Map<Node, Long> changes, Map<String, Tomb> deletes, String madeBy) {
    }

    /**
     * How S3 has refused one change in a row ({@link Node#refusals}, {@link Tomb#refusals}), as the
     * journal keeps it: how many times; its last answer's HTTP status ({@link Bucket#KEY_IN_BATCH}
     * for a key's error in a DeleteObjects answered 200, which was journaled as that 200) and error
     * code (null: none); and when it first refused it, in epoch milliseconds on the store's clock,
     * for the line that says it went up at last.
     */
    record Refusals(int count, int status, String code, long firstMillis) {
        static final Refusals NONE = new Refusals(0, 0, null, 0);

        /** These, and S3's refusal {@code r} at {@code nowMillis}. */
        Refusals and(Bucket.Refused r, long nowMillis) {
            return new Refusals(count + 1, r.status(), r.code(), count == 0 ? nowMillis : firstMillis);
        }
    }

    /** A name removed here whose object S3 may still show. */
    static final class Tomb {
        /** The object's last seen ETag, the If-Match of a new file made at the same name. */
        final String etag;
        /** Where the remove lets a lock go, what its delete waits for; null for any other remove. */
        Release release;
        /** A release's delete was sent and S3's answer did not say it done: S3 may have done it. */
        boolean sent;
        /**
         * Of a {@link #sent} release, S3 answered that it did not delete ({@link Bucket.Refused#deleteNotDone}):
         * the claim is still on S3 where a HEAD finds it there, and no request of it may land later.
         */
        boolean refused;
        /**
         * S3's refusals of this delete (or the check before it) since it was journaled: journaled as
         * a node's {@link Node#refusals}, so the replay after a restart asks S3 once for it and its
         * retries go on from the backoff they had reached.
         */
        Refusals refusals = Refusals.NONE;
        boolean pending = true;
        /** The journal's sequence of its record: what was changed before it (0: not said, by a journal written before). */
        long seq;
        long doneSeq = Long.MAX_VALUE;
        long doneAt;

        Tomb(String etag) {
            this.etag = etag;
        }
    }
}
