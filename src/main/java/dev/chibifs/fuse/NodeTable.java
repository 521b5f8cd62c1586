package dev.chibifs.fuse;

import dev.chibifs.path.VfsPath;
import dev.chibifs.store.HeldFile;
import dev.chibifs.store.Metadata;
import dev.chibifs.store.Storage;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The kernel's view of the namespace: every node id the kernel holds, with the store identity
 * behind it, the names it is known by and how many lookups the kernel counts for it.
 *
 * <p>A node is keyed by its store and the store's inode, so the names of a hard-linked file are
 * one node (as the kernel expects: one inode, one page cache). Every entry reply adds one lookup
 * ({@link #remember}); FORGET takes them back ({@link #forget}), and a node with none left leaves
 * the table. The root is node 1 and is never forgotten.
 *
 * <p>Locking: structure changes (remember, forget, names coming and going) take the table's
 * monitor; reads of a node's path take none. A path computed while a rename runs may be the old
 * one or the new one, the same race a path-based caller has with a concurrent rename.
 */
final class NodeTable {

    /**
     * Who a node is in the store: the store serving it, the file system in that store it is on
     * ({@link Metadata#device}), that store's inode number and the file's birth time. A file system
     * reuses a freed inode number at once (ext4 does), and a new file given the old file's node id
     * would be taken by the kernel for the old one: a directory made where one was just removed
     * fails with ESTALE. The birth time tells them apart (where the file system has none, it is 0
     * and the number alone decides). The device tells apart a file system mounted inside the store:
     * a snapshot of the store mounted in it has the very numbers and birth times of the live files,
     * and two files made one node showed one's size for both, and ESTALE for a listing.
     */
    record Identity(Storage store, long device, long inode, long born) {
        static Identity of(Storage store, Metadata m) {
            return new Identity(store, m.device(), m.inode(), m.bornNanos());
        }

        /** Whether {@code m}, read of this identity's store, is of this very file ({@link Metadata#isOf}). */
        boolean isOf(Metadata m) {
            return Metadata.isOf(device, inode, born, m);
        }

        /** The birth time as {@link Metadata#created} has it: null where the file system has none. */
        java.nio.file.attribute.FileTime created() {
            return born == Metadata.NOT_BORN ? null
                    : java.nio.file.attribute.FileTime.from(born, java.util.concurrent.TimeUnit.NANOSECONDS);
        }
    }

    /**
     * One name of a node: the directory node it is in, and the name. It is also the name table's
     * key, the very object the node holds where it can be (no key object of its own per name:
     * a node table of 1,000,000 files spends 24 MB less).
     */
    record Link(Node parent, String name) {
        @Override
        public int hashCode() {
            return nameHash(parent.id, name);
        }
    }

    /**
     * The hash of name {@code name} in directory node {@code parent}, for every key made of the two. A
     * record's own hash, 31 times the parent's plus the name's, collided wholesale: directories made
     * one after another have ids 1 apart and names such as {@code f1..f1000} hashes 31 apart, so 100,000
     * names in 100 directories shared 5,650 hashes, and ConcurrentHashMap searched each crowded bin
     * end to end (its tree bins cannot order keys that are not Comparable). The parent's id is
     * scrambled first (Fibonacci hashing), so no two directories' names line up.
     */
    static int nameHash(long parent, String name) {
        return Long.hashCode(parent * 0x9E3779B97F4A7C15L) ^ name.hashCode();
    }

    static final class Node {
        final long id;
        final Identity identity;
        volatile boolean directory;
        /** The name its path is made of; null for the root. Guarded by the table for writes. */
        volatile Link link;
        /** Further names of a hard-linked file; guarded by the table. */
        private List<Link> otherLinks;
        /** Kernel lookups not yet forgotten; guarded by the table. */
        private long lookups;
        /** Set once its last name is gone from the store (unlinked, renamed over): only open handles reach it. */
        volatile boolean removed;
        /**
         * The kernel knows it by no name either: its last went through this mount (UNLINK, RENAME
         * over it) or it never had one (TMPFILE). An OPEN of it is then an open of /proc/PID/fd/N,
         * never of a name; a node whose name went behind the kernel's back may still be reached by
         * a name the kernel keeps, which must find what the name stands for now.
         */
        volatile boolean namelessInKernel;
        /**
         * The kernel's backing id of this file's store file (FUSE passthrough) while opens use it,
         * 0 for none, -1 once the kernel refused it; and how many opens use it. Guarded by the node.
         */
        int backingId;
        int backingOpens;
        /**
         * Opens through the kernel's page cache (not passed through) not yet released: while there is
         * one, no open is passed through, for the kernel fails (EIO) an open that would mix the two.
         * Guarded by the node.
         */
        int cachedOpens;
        /**
         * What the kernel's pages of this file are true to; null while it has had none (no open through
         * its cache since it made this inode, whose pages go with it). Guarded by the node.
         */
        PageStamp pages;
        /** Whether those pages are the whole file (stored at an open), not what reads and writes left. Guarded by the node. */
        boolean pagesWhole;
        /** Whether it is in the table's {@link NodeTable#hardLinked} set. */
        volatile boolean hardLinked;
        /**
         * The number of the notice ({@link NoticeWriter#post}) telling the kernel to drop a name it
         * holds for this file, which a lookup of another name, or the store telling of its own move,
         * found moved behind its back; 0 when none waits. The next open or truncate by the node,
         * which may have come through that name, is stale once that notice is written ({@link
         * FuseFileSystem#requireNoNameDropPending}).
         */
        volatile long nameDropNotice;
        /** When {@link #nameDropNotice} was posted, by the file system's clock (ms); written before it. */
        volatile long nameDropPostedAt;
        /** The key the store's change feed gives this directory while it is followed; -1 when it is not. */
        volatile long followKey = -1;
        /**
         * Set when the kernel was given a listing of this directory to keep; see {@link ChangeFollower}.
         * Cleared where the kernel dropped it: a notice, or a name that went through this mount.
         */
        volatile boolean listingKept;
        /**
         * Changes to this directory's names heard from the store's feed (made through this mount too,
         * heard a moment later), and its leaving its name ({@link #left}), written by the feed's one
         * thread only: a listing read before one may reach the kernel after the notification that
         * dropped its listing, so its reader drops it again at its end (see DirectoryReader#readdir),
         * and listings read on either side of one never go on from each other (DirectoryListings).
         */
        volatile int namesChangedBehind;
        /**
         * Until when ({@link System#nanoTime}) the kernel may keep this node's name and attributes told
         * from its store's held answers (an S3 listing); see {@link HeldAnswers#expireHeldAnswers}.
         */
        volatile long heldUntil;
        /** Size, mtime and ctime (ns) of the attributes the kernel was last told ({@link #told}); size -1 before any. */
        volatile long toldSize = -1;
        volatile long toldModified;
        volatile long toldChanged;
        /**
         * This file's store metadata as last read, for a listing to send again; null when it may be
         * stale. Written under the node's monitor ({@link #keep}, {@link #changing}), read without.
         */
        volatile KeptMetadata kept;
        /** Bumped at each change made or told ({@link #changing}): a read begun before it is not kept. Guarded by the node. */
        private long changes;
        /** The file held for an open retried after ESTALE (see {@link StaleNames}); null for none. Guarded by the node. */
        HeldFile held;
        /** Opens of this file for writing through the mount not yet released. Guarded by the node. */
        private int writers;
        /** The path computed at {@link #pathEpoch}; recomputed after any directory moved. */
        private volatile VfsPath path;
        private volatile long pathEpoch = -1;

        Node(long id, Identity identity, boolean directory, Link link) {
            this.id = id;
            this.identity = identity;
            this.directory = directory;
            this.link = link;
        }

        /**
         * What the change feed last read of this file where it told the kernel nothing to drop (it held
         * no attributes of it, or held these): a reply read before that change and written after the
         * feed looked would leave the kernel the old size and times for the whole --kernel-cache with
         * no notice to drop them (what a tester saw, 30 s late, came the other way: see
         * {@link #untoldUnlessToldSince}). The reply that tells other attributes than these says so
         * ({@link #told}), and its request sends the notice. Null when none.
         */
        private volatile Metadata heardUntold;
        /** How many replies and notices told the kernel attributes of this node; written under the node's monitor. */
        private volatile long toldTimes;

        /**
         * The kernel was told {@code m} of this node, in an entry or attribute reply or a notification.
         * True where the feed heard the file change to other attributes than {@code m} while the reply
         * was made: the kernel must drop them again (the caller tells it).
         */
        boolean told(Metadata m) {
            synchronized (this) {
                toldTimes++;
                toldSize = m.size();
                toldModified = m.modified().to(java.util.concurrent.TimeUnit.NANOSECONDS);
                toldChanged = m.changed().to(java.util.concurrent.TimeUnit.NANOSECONDS);
            }
            // RACE: read after the told fields are written, as heardChange writes heardUntold before it
            // reads them (all volatile): either the feed sees what this reply tells, and drops it with
            // a notice of its own, or this sees what the feed heard
            Metadata heard = heardUntold;
            if (heard == null) {
                return false;
            }
            heardUntold = null; // one heard since is the feed's to judge: it reads the told fields after
            // read after what was heard (its ctime later: a change made since, through this mount or
            // not, whose own event is to come) tells the kernel no less than the feed knows
            int order = m.changed().compareTo(heard.changed());
            return order < 0 || order == 0 && !sameAttributes(heard, m);
        }

        /**
         * The change feed read {@code now} after a change of this file: where the kernel holds other
         * attributes, which it is then to drop, the stamp to mark them dropped with
         * ({@link #untoldUnlessToldSince}); else -1, and a reply under way is left to tell it ({@link #told}).
         */
        long heardChange(Metadata now) {
            heardUntold = now;
            long stamp = toldTimes; // before the told fields: a reply telling them after is not forgotten
            if (toldOtherThan(now)) {
                heardUntold = null;
                return stamp;
            }
            return -1;
        }

        /**
         * The kernel's attributes were dropped by a notice decided when {@code stamp} was {@link #toldTimes}:
         * it holds none, unless a reply told it some since. That reply may have been sent after the
         * notice, and kept: marked untold, the next change found nothing to drop, and the kernel kept
         * an appended file's old size for the whole --kernel-cache (a tester's 30 s, 1 in 70 tries
         * under load, seen in the feed's own log: told 3, untold by the notice of 3, then 4 heard).
         */
        synchronized void untoldUnlessToldSince(long stamp) {
            if (toldTimes == stamp) {
                toldSize = -1;
            }
        }

        /** The number of times the kernel was told attributes ({@link #told}), for {@link #untoldUnlessToldSince}. */
        long toldTimes() {
            return toldTimes;
        }

        private static boolean sameAttributes(Metadata a, Metadata b) {
            return a.size() == b.size() && a.modified().equals(b.modified()) && a.changed().equals(b.changed());
        }

        /** The kernel's attributes of this node were dropped: it holds none until the next reply. */
        void untold() {
            toldSize = -1;
        }

        /** Whether the kernel holds attributes of this node whose size or times are not {@code m}'s. */
        boolean toldOtherThan(Metadata m) {
            return toldSize >= 0 && (toldSize != m.size()
                    || toldModified != m.modified().to(java.util.concurrent.TimeUnit.NANOSECONDS)
                    || toldChanged != m.changed().to(java.util.concurrent.TimeUnit.NANOSECONDS));
        }

        /** The kernel's pages of this file are true to {@code stamp} as reads and writes left them, not stored whole. Under the node's monitor. */
        void pagesLeftAt(PageStamp stamp) {
            pages = stamp;
            pagesWhole = false;
        }

        /** Call before reading the store's metadata of this node to keep it: pass the result to {@link #keep}. */
        synchronized long keepingFrom() {
            return changes;
        }

        /**
         * Keeps {@code k} (null keeps nothing) unless the node changed since {@code from} was taken,
         * or is open for writing: a passthrough write reaches the store without the daemon, and its
         * change is told later. A read that raced a change is never kept over it.
         */
        synchronized void keep(KeptMetadata k, long from) {
            if (changes == from && writers == 0) {
                kept = k;
            }
        }

        /** The store's metadata of this node may have changed (through the mount, or told by the feed). */
        synchronized void changing() {
            changes++;
            kept = null;
        }

        /** Whether an open for writing through the mount is not yet released. */
        synchronized boolean hasWriters() {
            return writers > 0;
        }

        /** An open for writing: nothing is kept until its release. */
        synchronized void writerOpened() {
            writers++;
            changing();
        }

        /** An open for writing released. */
        synchronized void writerReleased() {
            writers--;
            changing();
        }

        /**
         * Hashed by its id (one node per id, compared by identity), not by the identity hash, which the JVM
         * would have to put in the header of a node locked at that moment (inflating its monitor).
         */
        @Override
        public int hashCode() {
            return Long.hashCode(id);
        }

        @Override
        public boolean equals(Object o) {
            return this == o;
        }

        @Override
        public String toString() {
            return "node " + NodeSlots.shown(id);
        }
    }

    private final NodeSlots byId = new NodeSlots((int) FuseProtocol.ROOT_ID + 1);
    private final ConcurrentMap<Identity, Node> byIdentity = new ConcurrentHashMap<>();
    private final ConcurrentMap<Link, Node> byName = new ConcurrentHashMap<>();
    /** How many removed names keep their inode number for stale listing entries. */
    static final int REMOVED_NAMES_KEPT = 1024;
    /**
     * The inode numbers of the last names removed through the mount: a listing read from before a
     * removal may still give the name, with its number. Kept past the node's FORGET, which comes as
     * soon as the kernel drops the name, usually before the reader reads on. Guarded by this.
     */
    private final Map<Link, Long> removedInodes = new LinkedHashMap<>(16, 0.75f, false) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<Link, Long> eldest) {
            return size() > REMOVED_NAMES_KEPT;
        }
    };
    /**
     * The names {@link #leftBehind} got since the last {@link #takeStaleInKernel}: the kernel still
     * holds each for the file, and where no feed follows its directory (an S3 store, whose conflict
     * moves this host's file to its copy's name) nothing else would tell it before the name's
     * timeout, while every open by it reached the file at its new name. Guarded by this; {@link
     * #someStaleInKernel} says, without the monitor, whether it holds any.
     */
    private final List<StaleName> staleInKernel = new ArrayList<>();

    /** A name {@code link} the kernel holds for {@code node}, which the store has under another name only. */
    record StaleName(Link link, Node node) {
    }
    private volatile boolean someStaleInKernel;
    /**
     * File names a lookup of another name took from their node (the store counts one link: the
     * file was renamed, or its other name removed, behind the kernel's back), with that node. The
     * kernel still holds each name for the node, a name it was given, and the store's event for it
     * may be heard only after the lookup, finding neither a node nor a file there: without this, it
     * took the kernel as right, which kept the old name for --kernel-cache (an open of it reached the
     * file at its new name). Taken when the event is told ({@link #leftBehindTold}), or once the
     * kernel is given the name again. Guarded by this.
     */
    private final Map<Link, Node> leftBehind = new LinkedHashMap<>(16, 0.75f, false) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<Link, Node> eldest) {
            return size() > REMOVED_NAMES_KEPT;
        }
    };
    /**
     * The files the kernel holds that the store counted more than one link for when it was last told
     * their attributes: another of their names may go or come behind the kernel's back, where it
     * never looked, and the feed, hearing of a name it has no node for, cannot tell whose it was.
     */
    private final Set<Node> hardLinked = ConcurrentHashMap.newKeySet();
    /** Bumped when a directory moves: every cached path below it may be stale. */
    private final AtomicLong renames = new AtomicLong();
    /** Renames of any name the table knows, a file's too ({@link #nameMoves}). */
    private final AtomicLong nameMoves = new AtomicLong();
    private final Node root = new Node(FuseProtocol.ROOT_ID, null, true, null);

    NodeTable() {
        root.path = VfsPath.root();
        root.pathEpoch = Long.MAX_VALUE;
        byId.add(root);
    }

    Node root() {
        return root;
    }

    /** The node with kernel id {@code id}, or null when the kernel should not hold it. */
    Node get(long id) {
        return byId.get(id);
    }

    /** Every node the kernel holds (a snapshot), the root included. */
    List<Node> all() {
        return byId.all();
    }

    /** How many nodes the kernel holds, the root included. */
    int size() {
        return byId.size();
    }

    /** The node known by {@code name} in directory {@code parent}, or null. */
    Node child(Node parent, String name) {
        return byName.get(new Link(parent, name));
    }

    /** The inode number of the file {@code name} in {@code parent} named when it was removed through the mount lately; or null. */
    synchronized Long removedInode(Node parent, String name) {
        return removedInodes.get(new Link(parent, name));
    }

    /** The node known by {@code name} in {@code parent} and by no other name, not removed; or null. */
    Node soleChild(Node parent, String name) {
        Node n = byName.get(new Link(parent, name));
        return n != null && solelyNamed(n, parent, name) ? n : null;
    }

    /**
     * Whether {@code node} is known by {@code name} in {@code parent} and by no other name, and
     * not removed. Exact under the table's monitor; without it, the answer of a moment (a caller
     * that acts on it checks again under the monitor, as {@link #rememberAgain} does).
     */
    private static boolean solelyNamed(Node node, Node parent, String name) {
        Link l = node.link;
        return !node.removed && node.otherLinks == null && l != null && l.parent() == parent && l.name().equals(name);
    }

    /**
     * The node for {@code name} in {@code parent}, which the store says is {@code identity}, with
     * one more kernel lookup: call just before sending an entry reply for it (a FORGET can only
     * follow the reply), and {@link #forget} it again if the reply is not delivered.
     * {@code soleName}: the store counts one link (or it is a directory), so this is its only name.
     * {@code created}: the request made the file (mkdir, create, mknod), so it is a new node.
     * Null, and nothing changed, where the node is a directory that {@code parent} is in by the
     * names the table knows (see {@link #within}).
     */
    synchronized Node remember(Node parent, String name, Identity identity, boolean directory, boolean soleName,
                               boolean created) {
        Node node = byIdentity.get(identity);
        if (node != null && !created && node.directory == directory && solelyNamed(node, parent, name)) {
            // known under this one name already (a listing seen again): the name table has it, as
            // a name given to another node or removed would have dropped this link
            node.lookups++;
            return node;
        }
        Link link = new Link(parent, name);
        if (node != null && created) {
            // a file this request made cannot be one the kernel holds already: the store reused a
            // freed inode (with a birth time in the same clock tick) before the removal reached us
            byIdentity.remove(identity, node);
            node = null;
        }
        if (node != null && node.directory && within(parent, node)) {
            return null;
        }
        if (node == null) {
            node = new Node(byId.newId(), identity, directory, link);
            byId.add(node);
            byIdentity.put(identity, node);
        } else if (soleName && !(link.equals(node.link) && node.otherLinks == null)) {
            // one name in the store: any other name we knew was moved or removed behind our back. The
            // kernel moves a directory's dentry to the name it is given; a file's others stay
            if (!directory) {
                staleInKernelBut(node, link);
            }
            knownOnlyAs(node, link, directory);
        } else if (node.removed || !hasLink(node, link)) {
            addLink(node, link);
        }
        node.directory = directory;
        node.removed = false;
        node.namelessInKernel = false;
        nameNow(link, node);
        node.lookups++;
        return node;
    }

    /** The kernel is told that the store counts {@code links} links for {@code node}: see {@link #hardLinked}. */
    void linksTold(Node node, long links) {
        // a look at a field on every reply, the set only for a hard-linked file. Replies racing may
        // leave a file of one link in the set (a read of the store more), never one of more out of it
        if (links > 1 && !node.directory) {
            node.hardLinked = true;
            if (!hardLinked.contains(node)) {
                hardLinked.add(node);
            }
        } else if (node.hardLinked) {
            node.hardLinked = false;
            hardLinked.remove(node);
        }
    }

    /**
     * The files the kernel holds that the store counted more than one link for when it was last told
     * their attributes; those it no longer holds are let go.
     */
    List<Node> hardLinked() {
        List<Node> held = new ArrayList<>(hardLinked.size());
        for (Node n : hardLinked) {
            if (byId.get(n.id) == n) {
                held.add(n);
            } else {
                hardLinked.remove(n); // a reply's told after its FORGET
            }
        }
        return held;
    }

    /** {@code node} is known by {@code link} alone now; every other name it had is forgotten. */
    private void knownOnlyAs(Node node, Link link, boolean directory) {
        for (Link l : links(node)) {
            byName.remove(l, node);
        }
        node.link = link;
        node.otherLinks = null;
        node.pathEpoch = -1;
        if (directory) {
            renames.incrementAndGet();
        }
    }

    /** Name {@code link} stands for {@code node}; a node it stood for before loses it (replaced behind our back). */
    private void nameNow(Link link, Node node) {
        leftBehind.remove(link);
        Node previous = byName.put(link, node);
        if (previous != null && previous != node) {
            dropLink(previous, link.parent(), link.name());
            if (previous.removed) {
                byIdentity.remove(previous.identity, previous);
            }
        }
    }

    /**
     * The node of a file made without a name in {@code parent} (O_TMPFILE), with one kernel lookup:
     * removed, as a file whose names are all gone is, and known by {@code identity} only, so the
     * {@link #remember} of the name a LINK gives it finds it. {@code placeholder}, never in the
     * name table, is its path for the policy and messages.
     */
    synchronized Node rememberUnnamed(Node parent, String placeholder, Identity identity) {
        Node node = new Node(byId.newId(), identity, false, new Link(parent, placeholder));
        node.removed = true;
        node.namelessInKernel = true;
        byId.add(node);
        byIdentity.put(identity, node);
        node.lookups++;
        return node;
    }

    /**
     * {@link #remember} for a node {@link #soleChild} found under {@code name} in {@code parent}
     * and the store still says is there: one more kernel lookup, without a look in the maps, if it
     * is still known so (and held: a forgotten node has no lookups left); null otherwise.
     */
    synchronized Node rememberAgain(Node node, Node parent, String name) {
        if (node.lookups > 0 && solelyNamed(node, parent, name)) {
            node.lookups++;
            return node;
        }
        return null;
    }

    /** The kernel forgot {@code count} lookups of node {@code id}; with none left the node goes, and is returned. */
    synchronized Node forget(long id, long count) {
        Node node = byId.get(id);
        if (node == null || node == root) {
            return null;
        }
        node.lookups -= count;
        if (node.lookups > 0) {
            return null;
        }
        byId.remove(node);
        byIdentity.remove(node.identity, node);
        hardLinked.remove(node);
        for (Link l : links(node)) {
            byName.remove(l, node);
        }
        return node;
    }

    /** Name {@code name} in {@code parent} is gone from the store, through this mount (unlink, rmdir, a rename over it). */
    synchronized void unlinked(Node parent, String name) {
        leftBehind.remove(new Link(parent, name)); // the kernel dropped the name itself
        ownNamesChanged(parent);
        Node node = byName.remove(new Link(parent, name));
        if (node != null) {
            dropLink(node, parent, name);
            if (node.removed) {
                node.namelessInKernel = true;
                if (node.identity != null) {
                    removedInodes.put(new Link(parent, name), node.identity.inode());
                }
                // the kernel holds it until its FORGET, but a new file that reuses its inode is another
                // node. Where a birth time tells the two apart it stays known by what it is: a name made
                // behind the mount may still reach the file (another mount's hard link), and a change
                // there must find the node its open descriptors' fstat reads
                if (node.identity != null && node.identity.born() == Metadata.NOT_BORN) {
                    byIdentity.remove(node.identity, node);
                }
            }
        }
    }

    /**
     * Directory {@code node}, known as {@code name} in {@code parent}, left that name behind the
     * kernel's back (another mount, chibi or a program on the store moved or removed it): the name
     * no longer reaches it, so what is done in it finds nothing, as in a removed directory, instead
     * of acting on whatever directory has the name now. It stays known by what it is (where that
     * has a birth time, so no reused inode number is taken for it), for {@link #arrived}.
     */
    synchronized void left(Node parent, String name, Node node) {
        if (!node.directory || !byName.remove(new Link(parent, name), node)) {
            return;
        }
        dropLink(node, parent, name);
        if (node.identity != null && node.identity.born() == Metadata.NOT_BORN) {
            byIdentity.remove(node.identity, node);
        }
        renames.incrementAndGet(); // the paths below it are gone with it
    }

    /**
     * The directory the store now has at {@code name} in {@code parent}, {@code identity}: where it is
     * a node that {@link #left} its name, it is known by this one now, as after a rename through the
     * mount (the kernel moves its dentry here at the first lookup that finds the same node id, so a
     * process working in it keeps working in it). No kernel lookup is added. Returns it, or null
     * (also where {@code parent} is in it by the names the table knows: it stays gone until a lookup).
     */
    synchronized Node arrived(Node parent, String name, Identity identity) {
        Node node = byIdentity.get(identity);
        if (node == null || !node.directory || !node.removed || within(parent, node)) {
            return null;
        }
        Link link = new Link(parent, name);
        knownOnlyAs(node, link, true);
        node.removed = false;
        nameNow(link, node);
        return node;
    }

    /**
     * Hard-linked {@code node}'s first name no longer reaches it (renamed or removed behind the
     * kernel's back) and {@code other}, another of its names, does: that one is its first now, and
     * the dead one is forgotten. False where {@code other} is no name of it (any more).
     */
    synchronized boolean firstNameNow(Node node, Link other) {
        if (other.equals(node.link) || node.otherLinks == null || !node.otherLinks.remove(other)) {
            return false;
        }
        byName.remove(node.link, node);
        node.link = other;
        node.pathEpoch = -1;
        return true;
    }

    /**
     * Whether the kernel may still hold {@code name} in {@code parent} for a file a lookup of another
     * name took it from (see {@link #leftBehind}): the file's node is still held.
     */
    synchronized boolean leftBehind(Node parent, String name) {
        Node node = leftBehind.get(new Link(parent, name));
        return node != null && byId.get(node.id) == node;
    }

    /** The names a lookup took from their file since the last call ({@link #staleInKernel}); for the kernel to drop. */
    List<StaleName> takeStaleInKernel() {
        if (!someStaleInKernel) {
            return List.of();
        }
        synchronized (this) {
            List<StaleName> taken = List.copyOf(staleInKernel);
            staleInKernel.clear();
            someStaleInKernel = false;
            return taken;
        }
    }

    /**
     * The store moved {@code node}'s file to {@code name} in {@code parent} by itself ({@link
     * dev.chibifs.store.OwnMoves}): as a lookup of that name would ({@link #remember}), its other names
     * are held stale in the kernel ({@link #takeStaleInKernel}), without a lookup counted. False where
     * the kernel no longer holds the node, or knows it by that name alone already.
     */
    synchronized boolean movedBehind(Node node, Node parent, String name) {
        Link link = new Link(parent, name);
        if (byId.get(node.id) != node || node.directory || node.removed
                || (link.equals(node.link) && node.otherLinks == null)) {
            return false;
        }
        staleInKernelBut(node, link);
        knownOnlyAs(node, link, false);
        nameNow(link, node);
        return true;
    }

    /** Every name of file {@code node} but {@code link} is one the kernel holds stale ({@link #staleInKernel}). */
    private void staleInKernelBut(Node node, Link link) {
        for (Link l : links(node)) {
            if (!l.equals(link)) {
                leftBehind.put(l, node);
                staleInKernel.add(new StaleName(l, node));
                someStaleInKernel = true;
            }
        }
    }

    /** The kernel was told that {@code name} in {@code parent} is gone: it holds it for no file a lookup took it from. */
    synchronized void leftBehindTold(Node parent, String name) {
        leftBehind.remove(new Link(parent, name));
    }

    /** The node the kernel holds for the file {@code identity} names, by whatever name; null for none. */
    synchronized Node known(Identity identity) {
        return byIdentity.get(identity);
    }

    /** {@code from/fromName} now is {@code to/toName}; whatever that name held before is gone. */
    synchronized void renamed(Node from, String fromName, Node to, String toName) {
        unlinked(to, toName);
        ownNamesChanged(from);
        Node node = byName.remove(new Link(from, fromName));
        if (node != null) {
            relink(node, new Link(from, fromName), new Link(to, toName));
        }
    }

    /**
     * A name in {@code dir} went through this mount: the kernel drops the listing it keeps of
     * {@code dir} itself at the reply (fuse_dir_changed moves the directory's iversion, which the next
     * listing from its start finds changed), so the feed's event of the name going tells it nothing
     * (ChangeFollower): told, it was an INVAL_ENTRY and a listing dropped per directory rm -r emptied.
     * Under the caller's hold of ownNameChanges, so the feed, which waits for it, judges after this.
     */
    private static void ownNamesChanged(Node dir) {
        dir.listingKept = false;
    }

    /** RENAME_EXCHANGE: the nodes known by the two names swap them. */
    synchronized void exchanged(Node from, String fromName, Node to, String toName) {
        Node first = byName.remove(new Link(from, fromName));
        Node second = byName.remove(new Link(to, toName));
        if (first != null) {
            relink(first, new Link(from, fromName), new Link(to, toName));
        }
        if (second != null) {
            relink(second, new Link(to, toName), new Link(from, fromName));
        }
    }

    /** Node {@code node}, just taken out of {@link #byName} under {@code old}, is known as {@code moved} now. */
    private void relink(Node node, Link old, Link moved) {
        nameMoves.incrementAndGet();
        if (node.directory && within(moved.parent(), node)) {
            // the store moved it, so a name above its new parent is stale here: it goes as a directory
            // moved behind our back does (left), until a lookup finds it where it is
            dropLink(node, old.parent(), old.name());
            if (node.identity != null && node.identity.born() == Metadata.NOT_BORN) {
                byIdentity.remove(node.identity, node);
            }
            renames.incrementAndGet();
            return;
        }
        if (old.equals(node.link)) {
            node.link = moved;
        } else if (node.otherLinks != null) {
            node.otherLinks.replaceAll(l -> l.equals(old) ? moved : l);
        }
        byName.put(moved, node);
        leftBehind.remove(moved); // the kernel moved the renamed dentry there
        node.pathEpoch = -1;
        if (node.directory) {
            renames.incrementAndGet();
        }
    }

    /** How many times a known name has moved so far, a file's or a directory's: as {@link #directoryMoves}. */
    long nameMoves() {
        return nameMoves.get();
    }

    /** How many times a directory has moved so far: a request that read a path before may compare. */
    long directoryMoves() {
        return renames.get();
    }

    /**
     * The namespace path of {@code node}, by its first name; for a removed node, the path it had
     * (operations on it then fail as the store finds nothing there, or go through open handles).
     */
    VfsPath path(Node node) {
        long epoch = renames.get();
        // walked up, not recursed: a tree may be deeper than a thread's stack, and the links are read
        // without the monitor, so a walk that meets moves as it goes is bounded and then done under it
        List<Node> below = null;
        List<Link> names = null;
        Node n = node;
        VfsPath p;
        for (int steps = 0; ; steps++) {
            VfsPath cached = n.path;
            if (cached != null && (n.pathEpoch == epoch || n == root)) {
                p = cached;
                break;
            }
            if (steps > byId.size()) {
                return lockedPath(node);
            }
            if (below == null) {
                below = new ArrayList<>();
                names = new ArrayList<>();
            }
            Link l = n.link;
            below.add(n);
            names.add(l);
            n = l.parent();
        }
        for (int i = below == null ? -1 : below.size() - 1; i >= 0; i--) {
            p = p.child(names.get(i).name());
            Node c = below.get(i);
            c.path = p;
            c.pathEpoch = epoch;
        }
        return p;
    }

    /** {@link #path} with no link changing meanwhile; a cycle, which the table must never hold, fails instead of walking on. */
    private synchronized VfsPath lockedPath(Node node) {
        List<String> names = new ArrayList<>();
        Set<Node> seen = null;
        for (Node n = node; n != root; n = n.link.parent()) {
            if (names.size() > byId.size()) {
                // a chain may pass through forgotten nodes: past the table's size, a node met twice tells
                if (seen == null) {
                    seen = new HashSet<>();
                }
                if (!seen.add(n)) {
                    throw new IllegalStateException(node + " is its own ancestor in the node table");
                }
            }
            names.add(n.link.name());
        }
        VfsPath p = VfsPath.root();
        for (int i = names.size() - 1; i >= 0; i--) {
            p = p.child(names.get(i));
        }
        return p;
    }

    /** Whether directory {@code dir} is {@code node} or in it, by the first names the table knows now. */
    synchronized boolean inside(Node dir, Node node) {
        return within(dir, node);
    }

    /**
     * Whether directory {@code dir} is {@code node} or in it, by the first names the table knows
     * (under its monitor). Giving {@code node} a name in {@code dir} would then make it its own
     * ancestor: the store never says so (a disk refuses such a rename, EINVAL), so some name here is
     * stale, read before another mount or chibi moved a directory, and the change is not made.
     */
    private boolean within(Node dir, Node node) {
        Set<Node> seen = null;
        int steps = 0;
        for (Node n = dir; n != null; n = n.link == null ? null : n.link.parent()) {
            if (n == node) {
                return true;
            }
            if (++steps > byId.size()) {
                // as in lockedPath; a node met twice is a cycle made already, and nothing is added to it
                if (seen == null) {
                    seen = new HashSet<>();
                }
                if (!seen.add(n)) {
                    return true;
                }
            }
        }
        return false;
    }

    /** Every name the node is known by (first the one its path uses). */
    synchronized List<Link> links(Node node) {
        List<Link> all = new ArrayList<>();
        if (node.link != null) {
            all.add(node.link);
        }
        if (node.otherLinks != null) {
            all.addAll(node.otherLinks);
        }
        return all;
    }

    private static boolean hasLink(Node node, Link link) {
        return link.equals(node.link) || node.otherLinks != null && node.otherLinks.contains(link);
    }

    /** Adds a name; a removed node's stale name gives way to it. */
    private static void addLink(Node node, Link link) {
        if (node.removed || node.link == null) {
            node.link = link;
            node.pathEpoch = -1;
            return;
        }
        if (node.otherLinks == null) {
            node.otherLinks = new ArrayList<>(1);
        }
        node.otherLinks.add(link);
    }

    /** Drops one name; with none left the node is removed but keeps its last path for messages. */
    private static void dropLink(Node node, Node parent, String name) {
        Link gone = new Link(parent, name);
        if (gone.equals(node.link)) {
            if (node.otherLinks != null && !node.otherLinks.isEmpty()) {
                node.link = node.otherLinks.remove(0);
                node.pathEpoch = -1;
            } else {
                node.removed = true;
            }
        } else if (node.otherLinks != null) {
            node.otherLinks.remove(gone);
        }
    }
}
