package dev.chibifs.fuse;

import dev.chibifs.path.VfsPath;
import dev.chibifs.router.Router;
import dev.chibifs.store.Metadata;
import dev.chibifs.store.Storage;

import java.nio.file.attribute.FileTime;
import java.util.concurrent.TimeUnit;

/**
 * What a reply tells the kernel of a file: its attributes as the asker is shown them
 * ({@link AttributeView}), and how long the kernel may keep them and the names in a directory:
 * the mount's timeouts where {@link StoreFollower} follows its changes, else as long as its store
 * says its answers hold, else briefly.
 */
final class AttributeReplies {

    private final FuseFileSystem fs;
    private final Router router;
    private final AttributeView view;
    private final FuseFileSystem.Timeouts timeouts;
    private final FuseFileSystem.Timeouts unfollowed;

    AttributeReplies(FuseFileSystem fs, AttributeView view, FuseFileSystem.Timeouts timeouts) {
        this.fs = fs;
        this.router = fs.router();
        this.view = view;
        this.timeouts = timeouts;
        this.unfollowed = timeouts.unfollowed();
    }

    /** The attributes of {@code p} as the user making {@code req} is shown them (its owner may be that user: {@link AttributeView}). */
    FuseReply.Attributes attributes(FuseRequest req, VfsPath p, Metadata m) {
        boolean asker = view.ownedByAsker(p, req.uid());
        long size = m.size();
        return new FuseReply.Attributes(m.inode(), size, m.blocks(),
                seconds(m.accessed()), nanos(m.accessed()), seconds(m.modified()), nanos(m.modified()),
                seconds(m.changed()), nanos(m.changed()),
                view.mode(p, m), (int) Math.min(m.links(), Integer.MAX_VALUE),
                asker ? (int) req.uid() : (int) view.uid(p), asker ? req.gid : (int) view.gid(p), 0, Storage.BLOCK_SIZE);
    }

    private static long seconds(FileTime t) {
        long ns = t.to(TimeUnit.NANOSECONDS);
        return ns != Long.MIN_VALUE && ns != Long.MAX_VALUE ? Math.floorDiv(ns, 1_000_000_000L) : t.toInstant().getEpochSecond();
    }

    private static int nanos(FileTime t) {
        long ns = t.to(TimeUnit.NANOSECONDS);
        return ns != Long.MIN_VALUE && ns != Long.MAX_VALUE ? (int) Math.floorMod(ns, 1_000_000_000L) : t.toInstant().getNano();
    }

    /**
     * What the kernel may keep of the names in directory {@code dir} and their attributes: the
     * mount's timeouts where its changes are followed; else as long as its store says its answers
     * hold (what is left of an S3 listing's validity: the validity travels with each reply, as in
     * mountpoint-s3), within those timeouts; else briefly.
     */
    FuseFileSystem.Timeouts keptIn(NodeTable.Node dir) {
        if (fs.follower().follows(dir)) {
            return timeouts;
        }
        VfsPath p = fs.path(dir);
        long held = router.answersHeld(p).toNanos();
        // an S3 listing past its validity holds for nothing: the brief second of a store that cannot
        // say would let the kernel keep a name another host removed for that second more, unseen
        // by chibifs sync (a tester's --metadata-ttl 1ms mount kept one 0.5 s past both syncs)
        return held > 0 || router.answersExpire(p) ? timeouts.atMost(Math.max(held, 0)) : unfollowed;
    }

    /** How long the store's answers about directory {@code dir}, not followed, hold (nanos); 0 where it is followed or the store cannot say. */
    long heldNanos(NodeTable.Node dir) {
        return fs.follower().follows(dir) ? 0 : router.answersHeld(fs.path(dir)).toNanos();
    }

    /**
     * A directory each asker is shown as its own (git checks a repository's directories for
     * their owner): the kernel keeps its attributes for no time, so every stat gets its asker's.
     */
    boolean askedEveryTime(VfsPath p, Metadata m) {
        return m.isDirectory() && view.ownerDependsOnAsker(p);
    }

    FuseReply.Validity attrValidity(FuseFileSystem.Timeouts keptInParent, VfsPath p, Metadata m, NodeTable.Node self) {
        if (askedEveryTime(p, m)) {
            return FuseReply.Validity.NONE;
        }
        if (!m.isDirectory() || self != null && fs.follower().follows(self)) {
            return keptInParent.attr();
        }
        // a directory's mtime and link count change with what is in it, which only its own watch
        // tells, or the store's word on its own names
        FuseReply.Validity own = self == null ? timeouts.brief() : keptIn(self).attr();
        return own.atMost(keptInParent.attr().nanosTotal());
    }
}
