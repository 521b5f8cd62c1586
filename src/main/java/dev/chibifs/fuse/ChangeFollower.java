package dev.chibifs.fuse;

import dev.chibifs.path.VfsPath;
import dev.chibifs.policy.Zone;
import dev.chibifs.store.ChangeFeed;
import dev.chibifs.store.ChangeListener;
import dev.chibifs.store.Metadata;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.file.NoSuchFileException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.TimeUnit;

/**
 * Follows the store's changes (the router's {@link ChangeFeed}) for the directories the kernel
 * looks into, so the kernel may keep names, attributes, missing names and listings for the
 * mount's long timeouts, and tells the kernel what changed behind its back.
 *
 * <p>Notifications are written by the session's {@link NoticeWriter}, never by a request thread
 * or the feed's: an INVAL_ENTRY takes the directory's lock in the kernel, which a process may hold
 * while it waits for a reply (only an attribute-only INVAL_INODE, which waits for nothing, is
 * written at once). Changes made through this mount need no notification (the
 * kernel saw them): a changed name is told only when the store's file there is not the node the
 * kernel was given for it, or the kernel may hold it as missing; a changed file only when the
 * store's size or times differ from what the kernel was last told.
 */
final class ChangeFollower implements StoreFollower, ChangeListener {

    private static final Logger LOG = LoggerFactory.getLogger(ChangeFollower.class);
    /** Names the kernel may hold as missing that we keep track of; past it, missing names are not cached. */
    private static final int MISSING_LIMIT = 100_000;
    /**
     * Files kept per gone name: a name removed, made again and removed again stood for two files, and
     * a descriptor of either (open on another mount) may write under it.
     */
    private static final int GONE_FILES_PER_NAME = 8;
    /**
     * Followed directories the kernel forgot that stay followed. A directory the kernel let go
     * (memory pressure, drop_caches) is often looked up again at once, and its watch keeps the gone
     * files its key stands for (see {@link #goneFiles}); but each watch pins the directory's inode in
     * the kernel and takes one of the user's inotify watches (fs.inotify.max_user_watches, shared
     * with their editors), so past this many the longest forgotten are let go: a walk of a tree of
     * 5,000 directories held 5,000 after the kernel forgot them all.
     */
    static final int FORGOTTEN_KEPT = 1024;
    /** How long a directory that could not be followed is left before trying again (it may have been missing for a moment). */
    private static final long RETRY_NANOS = TimeUnit.SECONDS.toNanos(1);
    /**
     * How long the feed waits for this mount's changes of names under way before judging a name it
     * was told of (see {@link #changed}): a local store's take microseconds, and while the feed
     * waits, new ones wait behind it.
     */
    private static final long OWN_CHANGE_WAIT_MILLIS = 100;
    /** {@link #OWN_CHANGE_WAIT_MILLIS}, longer in a test whose step in between may take longer on a loaded machine. */
    long ownChangeWaitMillis = OWN_CHANGE_WAIT_MILLIS;
    /**
     * Past this many hard-linked files held by the kernel (NodeTable#hardLinked), a name heard of
     * that the kernel knows nothing by does not make the feed read them all again (a store per
     * batch each); their link counts then show after the attribute timeout.
     */
    static final int HARD_LINKED_CHECKED = 256;

    /** A name in a directory, known by its follow key (gone files). */
    private record Name(long parent, String name) {
        @Override
        public int hashCode() {
            return NodeTable.nameHash(parent, name);
        }
    }

    private final FuseFileSystem fs;
    private final ChangeFeed feed;
    private final ListingExpiry listingExpiry;
    private final ConcurrentMap<Long, NodeTable.Node> directories = new ConcurrentHashMap<>();
    private final MissingNames missing = new MissingNames();
    private final ConcurrentMap<Long, Long> notFollowedUntil = new ConcurrentHashMap<>();
    /**
     * The keys of followed directories whose node the kernel forgot, the longest forgotten first.
     * Guarded by itself, which also orders a watch's start (the node that follows it) against its
     * end here: otherwise a lookup could take a key being unfollowed and miss every event after.
     */
    private final LinkedHashMap<Long, NodeTable.Node> forgotten = new LinkedHashMap<>();
    /**
     * The file nodes of the last names removed or renamed over, behind the kernel's back or through
     * this mount, the latest last: a write through a descriptor of such a name (open on another
     * mount) is told under it alone, when the kernel may know the file by its other names only (a
     * lookup that finds one link forgets the others), or by none (descriptors open here). The event
     * does not say which of the files the name stood for was written, so all are told. By the
     * directory's follow key, not its node: the kernel lets go of a directory nothing holds (memory
     * pressure), and the node it looks up next is followed under the same key, while the file lives
     * on. Guarded by itself.
     */
    private final Map<Name, List<NodeTable.Node>> goneFiles = new LinkedHashMap<>(16, 0.75f, false) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<Name, List<NodeTable.Node>> eldest) {
            return size() > NodeTable.REMOVED_NAMES_KEPT;
        }
    };
    /**
     * A name the kernel holds no node for came or went in this batch: it may have been another name
     * of a hard-linked file the kernel holds, whose link count changed. Feed thread only.
     */
    private boolean unknownNameChanged;
    /** Each thread's own notification buffer. */
    private final ThreadLocal<FuseReply> notices = ThreadLocal.withInitial(() -> new FuseReply(FuseProtocol.NOTICE_CAPACITY));
    private volatile FuseChannel channel;
    private volatile FuseSession session;

    private ChangeFollower(FuseFileSystem fs) {
        this.fs = fs;
        this.feed = fs.router().changes(this);
        this.listingExpiry = ListingExpiry.start(fs.timeouts().listingNanos(), this::listingExpired);
    }

    /** A follower of {@code fs}'s store, installed in it; {@link StoreFollower#NONE} where the store cannot be followed. */
    static StoreFollower start(FuseFileSystem fs) {
        ChangeFollower f = new ChangeFollower(fs);
        if (!f.feed.active()) {
            f.close();
            return StoreFollower.NONE;
        }
        fs.follow(f);
        return f;
    }

    /** Where notifications go, once the session has a device. */
    void notifyThrough(FuseChannel channel, FuseSession session) {
        this.channel = channel;
        this.session = session;
    }

    @Override
    public boolean follows(NodeTable.Node dir) {
        return dir.followKey >= 0;
    }

    @Override
    public boolean lookingIn(NodeTable.Node dir) {
        if (dir.followKey >= 0) {
            return true;
        }
        Long until = notFollowedUntil.get(dir.id);
        if (until != null && System.nanoTime() - until < 0) {
            return false;
        }
        synchronized (forgotten) {
            long key = feed.follow(fs.nodes.path(dir));
            if (key < 0) {
                notFollowedUntil.put(dir.id, System.nanoTime() + RETRY_NANOS);
                return false;
            }
            notFollowedUntil.remove(dir.id);
            forgotten.remove(key); // looked up again: the same inode, so the same watch
            directories.put(key, dir);
            dir.followKey = key;
            return true;
        }
    }

    @Override
    public void forgotten(NodeTable.Node node) {
        notFollowedUntil.remove(node.id);
        missing.forget(node.id);
        long key = node.followKey;
        if (!node.directory || key < 0) {
            return;
        }
        synchronized (forgotten) {
            if (directories.get(key) != node) {
                return; // a later node of the directory follows it (or it ended)
            }
            forgotten.put(key, node);
            if (forgotten.size() <= FORGOTTEN_KEPT) {
                return;
            }
            var eldest = forgotten.entrySet().iterator();
            var last = eldest.next();
            eldest.remove();
            directories.remove(last.getKey(), last.getValue());
            last.getValue().followKey = -1;
            feed.unfollow(last.getKey());
        }
    }

    @Override
    public void listed(NodeTable.Node dir, int namesGiven) {
        dir.listingKept = true;
        listingExpiry.listed(dir, namesGiven);
    }

    /** The names a kept listing of {@code dir} gave have expired: see {@link ListingExpiry}. */
    private void listingExpired(NodeTable.Node dir) {
        if (dir.listingKept && follows(dir)) {
            dropListing(dir);
        }
    }

    @Override
    public void named(NodeTable.Node parent, String name) {
        // on every entry reply: look the name up only while any name is held missing. By the name the
        // entry is for, not the node's first name, which may be one that went behind the kernel's back
        // and that it holds missing (the node reached since by another); nor on attribute replies
        if (!missing.isEmpty()) {
            missing.remove(parent.id, name);
        }
    }

    @Override
    public void nameRemoved(NodeTable.Node parent, String name, NodeTable.Node node) {
        // its last name too: descriptors open here and on another mount share it. A temporary file
        // written here after its removal is then told once per feed batch, the kernel knowing it already
        if (!node.directory) {
            gone(parent, name, node);
        }
    }

    @Override
    public boolean missing(NodeTable.Node parent, String name) {
        if (missing.size() >= MISSING_LIMIT) {
            return false;
        }
        missing.add(parent.id, name);
        return true;
    }

    // ---- the feed's events, on its thread ----

    @Override
    public void changed(long dir, String name, boolean renamed, boolean modified) {
        nameChanged(dir, name, renamed, modified, false);
    }

    @Override
    public void removed(long dir, String name) {
        nameChanged(dir, name, true, false, true);
    }

    /** {@link #changed}; {@code went}: the name went, so the store is not asked what it holds there. */
    private void nameChanged(long dir, String name, boolean renamed, boolean modified, boolean went) {
        NodeTable.Node parent = directories.get(dir);
        if (parent == null || channel == null) {
            return;
        }
        if (renamed) {
            parent.namesChangedBehind++; // written by its store feed's one thread alone
        }
        if (told(parent, name, renamed, modified, went, false)) {
            return;
        }
        // RACE: the feed reads the store's event as soon as the change is made, and this mount's own
        // CREATE, MKNOD, MKDIR, SYMLINK, LINK, UNLINK, RMDIR or RENAME puts it in the node table only
        // after: read in between, the name looked changed behind the kernel's back (a file there the
        // kernel has no node for, or gone where it has one), and its INVAL_ENTRY waited in the kernel
        // for the directory lock that very request held, one per batch of a create run. Judged again
        // once every change of names under way through this mount is in the node table: they hold
        // ownNameChanges shared from their change in the store until then. Not for longer than
        // OWN_CHANGE_WAIT_MILLIS (a store slow to answer, S3), nor on a thread holding it shared (a
        // request catching up): then told, as before, which costs a lookup but loses nothing
        boolean settled = ownNameChangesSettled();
        try {
            told(parent, name, renamed, modified, went, true);
        } finally {
            if (settled) {
                fs.ownNameChanges().writeLock().unlock();
            }
        }
    }

    /** Takes {@link FuseFileSystem#ownNameChanges()} exclusively, waiting {@link #OWN_CHANGE_WAIT_MILLIS} at most: false when not taken. */
    private boolean ownNameChangesSettled() {
        try {
            return fs.ownNameChanges().writeLock().tryLock(ownChangeWaitMillis, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /**
     * Tells the kernel what the store's events for {@code name} in {@code parent} changed. False,
     * having told nothing, when the name seems to have changed behind the kernel's back and
     * {@code settled} is false: to be judged again once this mount's own changes are in the node table.
     * {@code went}: the feed saw the name go and nothing else, so nothing is there now as far as
     * this event goes (a file made there since raises its own).
     */
    private boolean told(NodeTable.Node parent, String name, boolean renamed, boolean modified, boolean went,
                         boolean settled) {
        NodeTable.Node child = fs.nodes.child(parent, name);
        long from = 0;
        if (child != null) {
            child.changing();
            from = child.keepingFrom();
        }
        Metadata now = null;
        VfsPath at = null;
        boolean known = true;
        try {
            at = fs.nodes.path(parent).child(name);
            if (!settled && at.toString().equals(Zone.FLOCK_REGISTRY_PATH)) {
                membershipChanged();
            }
            // an unlink through the mount was heard back as one failing statx (and its exception) each
            now = went ? null : fs.router().metadata(null, at);
        } catch (NoSuchFileException gone) {
            now = null;
        } catch (IOException | RuntimeException unreadable) {
            // a name that is no path (bytes that are not UTF-8), or a store that failed: tell the kernel
            known = false;
        }
        if (renamed && known && child == null) {
            unknownNameChanged = true;
        }
        if (renamed || !known) {
            // a name gone that the kernel holds no node for may still be in a listing it keeps (its
            // nodes forgotten since, or never made: plain READDIR). Dropped once per listing, one
            // notification, not one per name removed; not where a name went through this mount since
            // the listing was given, which the kernel dropped itself (NodeTable#ownNamesChanged)
            // a file's name that went behind the kernel's back still stands for its node in the name
            // table (a directory's leaves it: NodeTable#left), while the kernel may hold it as missing
            // since: where the file comes back (moved away and back), the missing name would stand.
            // RACE: a lookup of the file's new name, made between the store's rename and this event,
            // took the old one from its node, but the kernel holds it still (NodeTable#leftBehind)
            boolean kernelRight = known && (now == null
                    ? child == null && !missing.contains(parent.id, name) && !parent.listingKept
                            && !fs.nodes.leftBehind(parent, name)
                    : child != null && !child.removed && !missing.contains(parent.id, name)
                            && NodeTable.Identity.of(fs.router().resolve(at).storage(), now).equals(child.identity));
            if (!kernelRight && known && !settled && (now != null || child != null)) {
                return false; // perhaps this mount's own change, not yet in the node table: see changed
            }
            if (renamed && known && (child != null && child.directory || now != null && now.isDirectory())) {
                followDirectory(parent, name, at);
            }
            if (!kernelRight) {
                missing.remove(parent.id, name);
                fs.nodes.leftBehindTold(parent, name);
                invalidateEntry(parent.id, name);
                dropListing(parent);
                for (NodeTable.Node before : modified ? goneFiles(parent, name) : List.<NodeTable.Node>of()) {
                    if (before != child) {
                        // written in the same batch through a descriptor of a file the name stood for before
                        dropAttributes(before);
                    }
                }
                if (child != null && !child.directory) {
                    // a file that lost a name lost a link: its other names, and its open descriptors'
                    // fstat, would show the old count for as long as the kernel keeps attributes
                    invalidateInode(child, -1);
                    gone(parent, name, child);
                }
                NodeTable.Node linked = now == null || now.isDirectory() ? null
                        : fs.nodes.known(NodeTable.Identity.of(fs.router().resolve(at).storage(), now));
                if (linked != null && linked != child) {
                    // a file the kernel knows by another name got this one (a link made, or moved here):
                    // its link count or ctime changed, which the kernel would keep as long as the above
                    dropAttributes(linked);
                }
                return true;
            }
        }
        if (modified && now != null) {
            // a write under a name renamed over: inotify names the event by the name the writer opened,
            // which may be the replaced file's (a descriptor open on another mount, the file living on
            // under another name) or the new one's; all are told. The replaced file may still be the
            // name's node here, where the kernel did not look the name up since it was made again
            for (NodeTable.Node replaced : goneFiles(parent, name)) {
                if (replaced.identity != null && !replaced.identity.isOf(now)) {
                    dropAttributes(replaced);
                }
            }
        }
        if (now == null && known && modified) {
            // written through this name after it went (a descriptor open on another mount): the file
            // lives on under its other names, or in descriptors open here, whose attributes the kernel
            // would keep for its whole timeout; what it is now, the store no longer says by this name.
            // Not for the removal alone: one through this mount the kernel made itself (its link
            // count and ctime), and one behind its back of a name it holds was told above; told, it
            // was an INVAL_INODE of every file unlinked through the mount, heard back from the store
            List<NodeTable.Node> written = goneFiles(parent, name);
            if (child != null && !written.contains(child)) {
                written = new ArrayList<>(written);
                written.add(child);
            }
            for (NodeTable.Node n : written) {
                dropAttributes(n);
            }
            if (!written.isEmpty()) {
                return true;
            }
        }
        // a file the kernel knows by a name it had before (renamed behind its back, then changed, as
        // a rotated log): its open descriptors' fstat would keep the old size for as long as the
        // kernel keeps attributes. The name's node may be the file it replaced there, until a lookup
        NodeTable.Node changedFile = now == null || child != null && (child.identity == null || child.identity.isOf(now)) ? child
                : !now.isFile() ? null
                : fs.nodes.known(NodeTable.Identity.of(fs.router().resolve(at).storage(), now));
        long toldBefore = changedFile == null ? -1 : changedFile.toldTimes();
        long toldWhenHeard;
        if (changedFile != null && now != null && modified && stalePagesDropped(changedFile, now)) {
            changedFile.untoldUnlessToldSince(toldBefore); // attributes went with them
        } else if (changedFile != null && now != null && (toldWhenHeard = changedFile.heardChange(now)) >= 0) {
            invalidateInode(changedFile, -1);
            changedFile.untoldUnlessToldSince(toldWhenHeard);
        }
        if (child != null && now != null && child.identity != null && child.identity.isOf(now)) {
            // what a listing sends for it next: read after the change, so kept unless another came since
            child.keep(KeptMetadata.of(now, parent.followKey, System.nanoTime()), from);
        }
        return true;
    }

    /** Remembers that {@code name} in {@code parent} no longer stands for file {@code node}. */
    private void gone(NodeTable.Node parent, String name, NodeTable.Node node) {
        if (parent.followKey < 0) {
            return; // nothing of it will be heard
        }
        synchronized (goneFiles) {
            List<NodeTable.Node> files = goneFiles.computeIfAbsent(new Name(parent.followKey, name), k -> new ArrayList<>(1));
            files.remove(node);
            if (files.size() == GONE_FILES_PER_NAME) {
                files.remove(0);
            }
            files.add(node);
        }
    }

    /**
     * The nodes the kernel holds now for the files {@code name} in {@code parent} stood for when it
     * was removed or renamed over: the very nodes, or, where the kernel forgot one and has since
     * looked the file up by another name, the new one; empty for none.
     */
    private List<NodeTable.Node> goneFiles(NodeTable.Node parent, String name) {
        List<NodeTable.Node> files;
        synchronized (goneFiles) {
            files = goneFiles.get(new Name(parent.followKey, name));
            if (files == null) {
                return List.of();
            }
            files = new ArrayList<>(files);
        }
        List<NodeTable.Node> held = new ArrayList<>(files.size() + 1);
        for (NodeTable.Node n : files) {
            NodeTable.Node now = fs.nodes.get(n.id) == n ? n : n.identity == null ? null : fs.nodes.known(n.identity);
            if (now != null && !held.contains(now)) {
                held.add(now);
            }
        }
        return held;
    }

    /**
     * A directory node whose name {@code name} in {@code parent} now stands for nothing, or for
     * another directory, left it; a directory node the store now shows there arrived (see
     * {@link NodeTable#left}, {@link NodeTable#arrived}). So a process working in a directory that
     * another mount or chibi renames keeps working in it, as on a disk, and one working in a
     * directory removed there (and perhaps made again) finds nothing in it instead of the new one.
     * A directory moved where the kernel never looked stays gone until a lookup finds it.
     */
    private void followDirectory(NodeTable.Node parent, String name, VfsPath at) {
        // read again with this mount's own renames held out: one made a moment ago may not be in
        // the node table yet, and must not be taken for a move made behind the kernel's back
        fs.ownNameChanges().writeLock().lock();
        try {
            Metadata now;
            try {
                now = fs.router().metadata(null, at);
            } catch (NoSuchFileException gone) {
                now = null;
            }
            NodeTable.Identity identity = now == null ? null : NodeTable.Identity.of(fs.router().resolve(at).storage(), now);
            NodeTable.Node child = fs.nodes.child(parent, name);
            if (child != null && child.directory && child.identity != null && (now == null || !child.identity.equals(identity))) {
                fs.nodes.left(parent, name, child);
                // it lists nothing while away, as a removed directory (never kept: see DirectoryReader#readdir)
                child.namesChangedBehind++; // on the feed's thread, as every change
                dropListing(child);
            }
            if (child != null && child.directory) {
                // also where it is back by now: it may have been away while a lookup looked in it
                missingNamesMoved(child);
            }
            if (now != null && now.isDirectory()) {
                NodeTable.Node came = fs.nodes.arrived(parent, name, identity);
                if (came != null) {
                    missingNamesMoved(came);
                }
            }
        } catch (IOException | RuntimeException e) {
            LOG.debug("{}: directory not followed: {}", at, e.toString());
        } finally {
            fs.ownNameChanges().writeLock().unlock();
        }
    }

    /**
     * Directory {@code moved} went elsewhere behind the kernel's back: the names the kernel holds as
     * missing in it and below may have been looked up by the path it had, where it no longer was,
     * and nothing in those directories changes to drop them; dropped now.
     */
    private void missingNamesMoved(NodeTable.Node moved) {
        missing.drain(dir -> {
            NodeTable.Node in = fs.nodes.get(dir);
            return in != null && fs.nodes.inside(in, moved);
        }, this::invalidateEntry);
    }

    @Override
    public int followed() {
        return directories.size();
    }

    /** How many names the kernel may hold as missing now (tests). */
    int missingNames() {
        return missing.size();
    }

    @Override
    public void directoryChanged(long dir) {
        NodeTable.Node d = directories.get(dir);
        if (d != null) {
            invalidateInode(d, -1);
        }
    }

    @Override
    public void directoryGone(long dir) {
        synchronized (forgotten) {
            forgotten.remove(dir);
            NodeTable.Node d = directories.remove(dir);
            if (d != null) {
                d.followKey = -1;
            }
        }
    }

    @Override
    public void eventsLost() {
        LOG.warn("the store's change feed lost events: every name, missing name, attribute and listing the kernel holds is invalidated");
        // anything followed may have changed meanwhile: a name made in the store would stay missing
        // in the kernel, and one replaced would name the old node, until --kernel-cache expires them
        missing.drain(dir -> true, this::invalidateEntry);
        for (NodeTable.Node n : fs.nodes.all()) {
            n.changing();
            NodeTable.Link link = n.link;
            if (link != null) {
                invalidateEntry(link.parent().id, link.name());
            }
            if (n.directory) {
                n.namesChangedBehind++; // on the feed's thread, as every change
                dropListing(n);
            } else {
                invalidateInode(n, -1);
            }
        }
    }

    /**
     * Every name the kernel may hold missing goes, as at lost events; the names it holds present stay
     * (a node whose file is not at its name now answers stale, and the kernel looks it up again).
     * Every store's, not only the replaced one's: a replacement is rare, and a directory's node does
     * not say which store it is in. A lookup answered from the old root and written after these
     * notices still leaves its name missing, for as long as the negative timeout says.
     */
    @Override
    public void storeReplaced() {
        missing.drain(dir -> true, this::invalidateEntry);
    }

    @Override
    public void batchTold() {
        if (!unknownNameChanged) {
            return;
        }
        unknownNameChanged = false;
        List<NodeTable.Node> linked = fs.nodes.hardLinked();
        if (linked.size() > HARD_LINKED_CHECKED) {
            return;
        }
        for (NodeTable.Node n : linked) {
            // read by its name: ctime tells a link made or removed (the count alone misses a name
            // removed and another made in one batch)
            try {
                Metadata now = fs.router().metadata(null, fs.nodes.path(n));
                if (fs.nodes.get(n.id) == n && n.identity.isOf(now) && n.toldOtherThan(now)) {
                    dropAttributes(n);
                }
            } catch (IOException | RuntimeException gone) {
                // its name went or moved too: that name's own event tells it
            }
        }
    }

    @Override
    public void catchUp() {
        feed.catchUp();
    }

    /**
     * The flock registry changed: who may write each flock's files did too, and the write bits the
     * kernel keeps of them for --kernel-cache come from the policy (AttributeView). Rare (chibi
     * writes the registry when a context joins or leaves a flock), so every node is looked at.
     */
    private void membershipChanged() {
        for (NodeTable.Node n : fs.nodes.all()) {
            if (n.link == null) {
                continue;
            }
            Zone.Kind kind;
            try {
                kind = Zone.of(fs.nodes.path(n)).kind();
            } catch (RuntimeException gone) {
                continue; // forgotten or moved meanwhile
            }
            if (kind == Zone.Kind.FLOCK || kind == Zone.Kind.TOOLS_FLOCK) {
                invalidateInode(n, -1);
            }
        }
    }

    private void invalidateEntry(long parent, String name) {
        FuseSession s = session;
        boolean expireOnly = s != null && s.negotiated() != null && s.negotiated().namesExpireOnly();
        send(notices.get().invalEntry(parent, name, expireOnly ? FuseProtocol.EXPIRE_ONLY : 0));
    }

    /**
     * A file open on this mount through the kernel's pages (a small file stored whole at its open,
     * or any file where reads are served), rewritten elsewhere: the kernel keeps its pages until an
     * open finds the file changed, so a reader holding it open read the old bytes for as long as it
     * did (a tester's status file, 35 s and on), where on a disk it reads the new ones at once. Its
     * pages and attributes go, unless they are true to the file now. Not while this mount has it open
     * for writing: the events of its own writes would drop them at every write. A READ answered
     * before the change and sent after this notice can still leave its old page, until the next open.
     */
    private boolean stalePagesDropped(NodeTable.Node n, Metadata now) {
        if (n.directory || n.hasWriters()) {
            return false;
        }
        synchronized (n) {
            if (n.cachedOpens == 0 || PageStamp.of(now).equals(n.pages)) {
                return false;
            }
            n.pagesLeftAt(PageStamp.UNKNOWN);
        }
        invalidateInode(n, 0);
        return true;
    }

    /** A directory's attributes and the listing the kernel keeps of it. */
    private void dropListing(NodeTable.Node dir) {
        // cleared first: a listing served while the notification is on its way is marked again
        dir.listingKept = false;
        invalidateInode(dir, 0);
    }

    /** The kernel's attributes of node {@code n} go: they are held no more, unless a reply tells some meanwhile. */
    private void dropAttributes(NodeTable.Node n) {
        long told = n.toldTimes(); // before the notice: a reply told after it may be kept (see untoldUnlessToldSince)
        invalidateInode(n, -1);
        n.untoldUnlessToldSince(told);
    }

    /** Attributes of node {@code n}, and its pages (a directory's: its cached listing) from {@code offset}; -1 for none. */
    private void invalidateInode(NodeTable.Node n, long offset) {
        send(inodeNotice(n, offset));
    }

    /** An INVAL_INODE of {@code n}'s attributes and its pages from {@code offset} (-1: none), in this thread's buffer. */
    private FuseReply inodeNotice(NodeTable.Node n, long offset) {
        return notices.get().invalInode(n.id, offset, 0);
    }

    private void send(FuseReply r) {
        FuseSession s = session;
        if (s != null) {
            s.notices().post(r);
        }
    }

    @Override
    public void close() {
        listingExpiry.close();
        feed.close();
    }
}
