package dev.chibifs.fuse;

import dev.chibifs.store.Metadata;

import java.nio.file.attribute.FileTime;
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
 */
final class KernelAttributes {

    /** More files than this and the table starts over: their next opens invalidate once. */
    private static final int LIMIT = 65_536;

    /** {@code entry}: an entry reply (lookup, create, mknod, link) said so, which also gave the kernel a name for the file. */
    private record Told(long size, FileTime changed, boolean entry) {
    }

    private final ConcurrentMap<Long, Told> told = new ConcurrentHashMap<>();

    /**
     * An attribute reply about file {@code m} is on its way to the kernel; true when it is news (the
     * kernel was last told other attributes), which the file's other names have not heard.
     */
    boolean told(Metadata m) {
        return told(m, false);
    }

    /** {@link #told(Metadata)}, for an entry reply when {@code entry}. */
    boolean told(Metadata m, boolean entry) {
        Told t = told.get(m.inode());
        boolean news = !same(t, m);
        if (!news && (t.entry() || !entry)) {
            return false; // the common case, a lookup of an unchanged file: no write to the shared map
        }
        if (told.size() >= LIMIT && t == null) {
            told.clear();
        }
        told.put(m.inode(), new Told(m.size(), m.changed(), entry || !news && t.entry()));
        return news;
    }

    /**
     * Whether the kernel's last attribute reply about file {@code m} said exactly this (size and
     * change time), and for {@code byEntry}, came in an entry reply: then a change the store reports
     * about it is one the kernel has heard of (made through this mount), and needs no invalidation.
     */
    boolean current(Metadata m, boolean byEntry) {
        Told t = told.get(m.inode());
        return same(t, m) && (t.entry() || !byEntry);
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
        return !same(told.get(m.inode()), m);
    }
}
