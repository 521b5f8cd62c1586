package dev.chibifs.fuse;

import dev.chibifs.path.VfsPath;
import dev.chibifs.router.Router;
import dev.chibifs.store.EntryKind;
import dev.chibifs.store.Metadata;
import dev.chibifs.sys.ErrnoException;
import dev.chibifs.sys.Linux;

import java.io.IOException;
import java.nio.charset.StandardCharsets;

/**
 * OPENDIR, READDIR, READDIRPLUS and RELEASEDIR: listings served by offset from a snapshot
 * ({@link DirectoryListings}), and what the kernel may keep of them. READDIRPLUS gives each name
 * its node and attributes, as a LOOKUP of it would ({@link FuseFileSystem}'s replies).
 */
final class DirectoryReader {

    /** The unknown inode number readdir gives a name whose attributes it did not read (libfuse's FUSE_UNKNOWN_INO). */
    private static final long UNKNOWN_INO = 0xffffffffL;

    private final FuseFileSystem fs;
    private final Router router;
    private final NodeTable nodes;
    private final DirectoryListings listings = new DirectoryListings();
    /** Whether the kernel lists directories without opening them (zero-message opendir). */
    private volatile boolean listsWithoutOpening;

    DirectoryReader(FuseFileSystem fs) {
        this.fs = fs;
        this.router = fs.router();
        this.nodes = fs.nodes;
    }

    /**
     * The kernel offered zero-message opendir: OPENDIR is answered ENOSYS, after which the kernel
     * sends no OPENDIR or RELEASEDIR (two round trips per directory walked), and READDIR comes
     * without a handle.
     */
    void listWithoutOpening() {
        this.listsWithoutOpening = true;
    }

    /**
     * Anyone may list any directory (path is policy). Where the directory's changes are followed,
     * the kernel keeps its listing until a change there (made through this mount, which the kernel
     * sees, or told by {@link StoreFollower}).
     */
    void opendir(FuseRequest req, FuseReply out) throws IOException {
        NodeTable.Node dir = fs.node(req);
        if (listsWithoutOpening) {
            // the kernel takes ENOSYS as "open every directory without asking", for good, and with
            // FOPEN_KEEP_CACHE|FOPEN_CACHE_DIR: readdir decides what the kernel may keep instead
            throw new ErrnoException(Linux.ENOSYS, "opendir", "zero-message opendir");
        }
        boolean kept = fs.follower().lookingIn(dir);
        // a listing the kernel keeps now is dropped when the store's answers stop holding (see readdir)
        boolean held = !kept && fs.replies.heldNanos(dir) > 0;
        long fh = listings.open(dir, kept, held);
        out.open(fh, kept || held ? FuseProtocol.FOPEN_CACHE_DIR | FuseProtocol.FOPEN_KEEP_CACHE : 0, 0);
    }

    void releasedir(FuseRequest req, FuseReply out) {
        listings.release(req.handle());
    }

    void readdir(FuseRequest req, FuseReply out, boolean plus) throws IOException {
        long offset = req.readOffset();
        boolean unopened = req.handle() == 0 && listsWithoutOpening;
        DirectoryListings.Listing l = unopened ? listings.unopened(fs.node(req), req.pid, offset, fs.clock().millis()) : listings.opened(req.handle());
        if (l == null) {
            throw new ErrnoException(Linux.EBADF, "fh " + req.handle(), "Bad file descriptor");
        }
        int room = Math.min(req.readSize(), out.bodyCapacity());
        if (offset == 0 || !l.loaded || !l.goesOn(offset)) {
            // a reader that went on from the listing the kernel keeps, not from our last reply, reads a
            // snapshot of now, after the name its offset names (see DirectoryListings.Listing)
            if (unopened) {
                l.kept = fs.follower().lookingIn(l.dir);
            }
            load(l);
            if (unopened) {
                listings.loaded(l);
            }
            if (l.kept) {
                fs.follower().listed(l.dir, plus ? l.names.size() : 0);
            } else if (unopened || l.held) {
                // the kernel keeps this listing (it keeps every one without OPENDIR; OPENDIR said it
                // may): dropped when the store's answers stop holding, or, where they no longer hold,
                // at once with OPENDIR and at the listing's end without
                long held = fs.replies.heldNanos(l.dir);
                boolean cachedAtOpen = !unopened;
                l.held = held > 0;
                if (l.held || cachedAtOpen) {
                    fs.heldAnswers.heldListings().dropIn(l.dir, Math.max(held, 0));
                }
            }
        }
        if (l.endsAt(offset)) {
            if (unopened) {
                listings.ended(l, req.pid);
            }
            // the follower drops a listing the kernel keeps when its directory changes, but a listing
            // read before a change and sent after its notification was taken would stay (the kernel
            // drops pages it does not have yet, then fills them from our reply), so one that changed
            // while read is dropped again here; likewise one the kernel may not keep at all (it keeps
            // every listing without OPENDIR), and a removed directory's empty one. Sent before the
            // empty reply that ends the listing, while its reader waits with every name of it in the
            // kernel's pages: when the reply comes, the kernel marks its cache complete, finds its
            // pages gone at the next listing, and asks us again
            boolean notToKeep = unopened && !l.kept && !l.held;
            FuseChannel channel = fs.storeChannel();
            if (channel != null && (notToKeep || l.ofRemoved || l.changedSinceRead())) {
                fs.notices.get().invalInode(l.dir.id, 0, 0).sendNotice(channel);
            }
            if (unopened) {
                return;
            }
        }
        VfsPath dirPath = fs.path(l.dir);
        FuseFileSystem.Timeouts kept = plus ? fs.replies.keptIn(l.dir) : null;
        try (Router.Siblings siblings = plus ? router.siblings(dirPath) : null) {
            // entries: 0 is ".", 1 is "..", 2 + k is name k; each one's offset is the listing's offsetAfter it
            long i = l.index(offset);
            long first = i;
            for (; i < l.names.size() + 2; i++) {
                byte[] name;
                int type;
                if (i == 0) {
                    name = DOT;
                    type = Linux.DT_DIR;
                } else if (i == 1) {
                    name = DOTDOT;
                    type = Linux.DT_DIR;
                } else {
                    name = l.names.get((int) i - 2);
                    type = direntType(l.kinds.get((int) i - 2));
                }
                long next = l.offsetAfter(i);
                if (!plus) {
                    // what stat says of it: `find -inum` and Python's scandir take d_ino for st_ino
                    long ino = i >= 2 ? l.inode((int) i - 2) : 0;
                    if (!out.dirent(ino != 0 ? ino : knownInode(l.dir, i, name), next, type, name, 0, name.length, room)) {
                        break;
                    }
                    continue;
                }
                if (!out.fitsPlus(name.length, room)) {
                    break;
                }
                if (i < 2) {
                    // the kernel counts no lookup for "." and ".." (fuse_direntplus skips them): no node
                    out.direntPlusBare(knownInode(l.dir, i, name), next, type, name, 0, name.length);
                    continue;
                }
                plusEntry(req, l.dir, kept, dirPath, siblings, name, type, next, out);
            }
            if (i > first) {
                l.replied(offset, i - 1, fs.clock().millis());
            }
        }
    }

    /**
     * The inode number of entry {@code i} of directory {@code dir} (0 ".", 1 "..", else {@code name})
     * that its listing did not give: its node's, else what its metadata says (the root, a mount
     * point, a name in a view), else {@link #UNKNOWN_INO} (gone meanwhile).
     */
    private long knownInode(NodeTable.Node dir, long i, byte[] name) {
        NodeTable.Node n;
        String child = null;
        if (i == 0) {
            n = dir;
        } else if (i == 1) {
            NodeTable.Link link = dir.link;
            n = link != null ? link.parent() : dir; // the root's ".." is itself, as on a disk's root
        } else {
            child = new String(name, StandardCharsets.UTF_8);
            n = nodes.soleChild(dir, child);
        }
        if (n != null && n.identity != null) {
            return n.identity.inode();
        }
        try {
            return router.metadata(null, child == null ? fs.path(n) : fs.path(dir).child(child)).inode();
        } catch (IOException | RuntimeException gone) {
            return UNKNOWN_INO;
        }
    }

    private static final byte[] DOT = {'.'};
    private static final byte[] DOTDOT = {'.', '.'};

    /**
     * One READDIRPLUS entry with its node and attributes; a name gone meanwhile goes out bare. A
     * file's metadata is the one kept with its node ({@link KeptMetadata}) while that is still
     * true, else read from the store (and kept for the next listing).
     */
    private void plusEntry(FuseRequest req, NodeTable.Node dir, FuseFileSystem.Timeouts keptInDir, VfsPath dirPath, Router.Siblings siblings, byte[] nameBytes,
                           int type, long next, FuseReply out) {
        String name = new String(nameBytes, StandardCharsets.UTF_8);
        NodeTable.Node known = nodes.soleChild(dir, name);
        Metadata kept = known == null ? null : keptMetadata(known, dir);
        VfsPath p;
        Metadata m;
        Metadata unconfirmed = null;
        long from = known == null || kept != null ? 0 : known.keepingFrom();
        try {
            p = dirPath.child(name);
            // a name whose attributes the store would ask its backing for (S3: a HEAD) goes now, its
            // attributes not to be kept: `ls` and `rm -rf` of a tree another host made wait for no
            // request per file, and a stat asks again
            unconfirmed = kept != null ? null : siblings.unconfirmed(name);
            m = kept != null ? kept : unconfirmed != null ? unconfirmed : siblings.metadata(name);
        } catch (IOException | RuntimeException gone) {
            // gone since the listing was read: a directory open before a removal may still give the
            // name (POSIX allows it), with the inode the kernel knows it by where there is one
            // (xfstests generic/637 compares it with what stat said)
            Long removed = known != null ? null : nodes.removedInode(dir, name);
            long ino = known != null && known.identity != null ? known.identity.inode()
                    : removed != null ? removed : UNKNOWN_INO;
            out.direntPlusBare(ino, next, type, nameBytes, 0, nameBytes.length);
            return;
        }
        NodeTable.Identity identity = NodeTable.Identity.of(siblings.storage(name), m);
        if (FuseFileSystem.isChannel(m)) {
            // no node: its use starts with a lookup, where the policy judges the caller (FuseFileSystem.isChannel)
            out.direntPlusBare(identity.inode(), next, type, nameBytes, 0, nameBytes.length);
            return;
        }
        NodeTable.Node n = known != null && identity.equals(known.identity) && !m.isDirectory()
                ? nodes.rememberAgain(known, dir, name) : null;
        if (n == null) {
            n = nodes.remember(dir, name, identity, m.isDirectory(), m.isDirectory() || m.links() <= 1, false);
            fs.heldAnswers.dropStaleNames(fs.clock());
        }
        if (n == null) {
            // a directory found in one of its own subdirectories (see entry): a lookup finds where it is
            out.direntPlusBare(identity.inode(), next, type, nameBytes, 0, nameBytes.length);
            return;
        }
        if (kept == null && unconfirmed == null && n == known) {
            n.keep(KeptMetadata.of(m, dir.followKey, System.nanoTime()), from);
        }
        fs.replied(n, m);
        fs.follower().named(dir, name);
        out.plusNodes.add(n);
        FuseReply.Validity attr = unconfirmed != null ? FuseReply.Validity.NONE : fs.replies.attrValidity(keptInDir, p, m, n);
        HeldAnswers.toldHeld(n, keptInDir, attr);
        out.direntPlus(n.id, keptInDir.entry(), attr, fs.replies.attributes(req, p, m), next, type, nameBytes, 0, nameBytes.length);
    }

    /**
     * The metadata kept with file node {@code n} in directory {@code dir}, while it may stand for a
     * fresh read: the directory still followed under the same key, and no older than the kernel
     * may keep attributes; null otherwise.
     */
    private Metadata keptMetadata(NodeTable.Node n, NodeTable.Node dir) {
        KeptMetadata k = n.kept;
        if (k == null || dir.followKey < 0 || k.followKey() != dir.followKey || n.identity == null) {
            return null;
        }
        FuseReply.Validity attr = fs.timeouts().attr();
        long age = System.nanoTime() - k.readAt();
        return age < attr.seconds() * 1_000_000_000L + attr.nanos() ? k.metadata(n.identity) : null;
    }

    private void load(DirectoryListings.Listing l) throws IOException {
        l.clear(l.dir.namesChangedBehind);
        if (l.dir.removed && l.dir.directory) {
            // a removed directory lists nothing, whatever has its name now; one that left its name may
            // be back before the kernel asks again (a lookup finds it where it went): not to be kept
            l.ofRemoved = true;
            l.loaded = true;
            return;
        }
        // another mount may have moved the directory a moment ago, and the feed not told yet: a walk in
        // it (find, which holds it open) would lose the whole subtree where a disk lists it wherever it went
        fs.followingMoves(() -> {
            l.clear(l.changesBeforeLoad);
            router.forEachEntry(null, fs.path(l.dir), (name, offset, length, kind, inode) -> {
                byte[] b = new byte[length];
                System.arraycopy(name, offset, b, 0, length);
                l.add(b, kind, inode);
                return true;
            });
        });
        l.ordered();
        l.loaded = true;
    }

    private static int direntType(EntryKind kind) {
        return switch (kind) {
            case FILE -> Linux.DT_REG;
            case DIRECTORY -> Linux.DT_DIR;
            case SYMLINK -> Linux.DT_LNK;
            case FIFO -> Linux.DT_FIFO;
            case SOCKET -> Linux.DT_SOCK;
            default -> Linux.DT_UNKNOWN;
        };
    }

    /** The handle an OPENDIR reply gave, which the kernel never got: no RELEASEDIR will come for it. */
    void release(long fh) {
        listings.release(fh);
    }

    /** At unmount: every listing goes. */
    void clear() {
        listings.clear();
    }
}
