package dev.chibifs.fuse;

import dev.chibifs.path.VfsPath;
import dev.chibifs.store.Metadata;

import java.nio.file.attribute.FileTime;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;

/**
 * What the kernel was last told of each file's size and change time, so that an open can tell
 * whether the attributes the kernel caches (for attr_timeout) still hold. They do not when the file
 * changed outside this mount: chibi, another mount (one per agent) or anything else writing the
 * store. The kernel cuts a read at the size it caches, so an agent reading the tasks.md another
 * agent had just appended to got it without the new lines, for up to a second; an open that finds
 * the file other than the kernel was told invalidates the kernel's attributes, and the read that
 * follows asks for them again.
 *
 * <p>Under {@code --kernel-cache} it also keeps the name each file and directory was last given to
 * the kernel by, so that {@link KernelEntries} can tell the store's echo of a change made through
 * this mount (nothing to tell the kernel) from a change made elsewhere.
 */
final class KernelAttributes {

    /** More files than this and the table starts over: their next opens invalidate once. */
    private static final int LIMIT = 65_536;

    /**
     * {@code entry}: the name the kernel was last given the file by, in an entry reply (lookup,
     * create, mknod, mkdir, link), while later replies came by that same name; null when none.
     * {@code since}: {@link KernelEntries#changesSeen} when that entry reply was made.
     */
    private record Told(long size, FileTime changed, VfsPath entry, long since) {
    }

    /** A size no file has: the kernel dropped the attributes it had (it does after each write it sends), and asks again. */
    private static final long ASKS = -1;

    private final ConcurrentMap<Long, Told> told = new ConcurrentHashMap<>();

    /**
     * An attribute reply about file {@code m} is on its way to the kernel; true when it is news (the
     * kernel was last told other attributes), which the file's other names have not heard.
     */
    boolean told(Metadata m) {
        return told(m, null, false, 0);
    }

    /**
     * {@link #told(Metadata)}, for a reply about the file at {@code path} (null: no name is kept):
     * an entry reply when {@code entry}, made when KernelEntries' count of changes was {@code since}.
     */
    boolean told(Metadata m, VfsPath path, boolean entry, long since) {
        Told t = told.get(m.inode());
        boolean news = !same(t, m);
        VfsPath name;
        long when;
        if (entry) {
            name = path;
            when = since;
        } else if (t != null && t.entry() != null && t.entry().equals(path)) {
            // an attribute reply by the same name (a setattr after writes, say): the kernel's entry still holds
            name = t.entry();
            when = t.since();
        } else {
            name = null;
            when = 0;
        }
        if (!news && t.since() == when && Objects.equals(t.entry(), name)) {
            return false; // the common case, a lookup of an unchanged file: no write to the shared map
        }
        if (told.size() >= LIMIT && t == null) {
            told.clear();
        }
        told.put(m.inode(), new Told(m.size(), m.changed(), name, when));
        return news;
    }

    /**
     * Whether the kernel's last attribute reply about file {@code m} said exactly this (size and
     * change time): then a change the store reports about it is one the kernel has heard of (made
     * through this mount), and needs no invalidation.
     */
    boolean current(Metadata m) {
        Told t = told.get(m.inode());
        return t != null && (t.size() == ASKS || same(t, m));
    }

    /**
     * The kernel is writing to file {@code inode} through this mount: it drops the file's attributes
     * itself once the write is done (fuse_write_update_attr), so the changes the write makes need
     * telling to nobody until the kernel's next attribute reply. A write that fails must be
     * {@link #forget forgotten}: the kernel keeps its attributes then.
     */
    void writing(long inode) {
        Told t = told.get(inode);
        if (t != null && t.size() != ASKS) {
            told.put(inode, new Told(ASKS, t.changed(), t.entry(), t.since()));
        }
    }

    /** Nothing is known of what the kernel caches of {@code inode}: every change to it is news. */
    void forget(long inode) {
        told.remove(inode);
    }

    /**
     * Whether the kernel's entry for {@code name} shows file {@code m}: the kernel's last entry reply
     * about the file was by that name, made once the count of changes was past {@code after} (when
     * the name was last invalidated), and every reply since came by that name too. Its attributes
     * are another matter ({@link #current}): a write through the mount changes them, and the kernel
     * asks again after a write of its own.
     */
    boolean knownAs(Metadata m, VfsPath name, long after) {
        Told t = told.get(m.inode());
        return t != null && name.equals(t.entry()) && t.since() > after;
    }

    /** Whether {@code t} says what {@code m} is: the same size and change time. */
    private static boolean same(Told t, Metadata m) {
        return t != null && t.size() == m.size() && t.changed().equals(m.changed());
    }

    /**
     * File {@code m} is being opened, as it is now: true when the kernel may cache other attributes
     * for it (the file changed since, or the kernel was told of another file under that name, which
     * a rename over it put there).
     */
    boolean stale(Metadata m) {
        Told t = told.get(m.inode());
        return !(same(t, m) || t != null && t.size() == ASKS);
    }
}
