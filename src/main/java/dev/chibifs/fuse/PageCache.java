package dev.chibifs.fuse;

import dev.chibifs.store.Metadata;

import java.nio.file.attribute.FileTime;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;

/**
 * Whether the kernel may keep the pages it cached of a file when the file is opened again: yes
 * while its size, mtime and ctime are what they were at its previous open. chibi writes the store
 * directly, so a change the kernel did not see must drop them at the next open.
 *
 * <p>This is what libfuse's {@code auto_cache} decides, from the stat that our open makes anyway:
 * auto_cache asked for the attributes again after every open (a second call into the daemon,
 * fgetattr). The ctime also catches a rewrite of the same size whose mtime was set back.
 */
final class PageCache {

    /** More files than this and the table starts over: their next opens drop pages once. */
    private static final int LIMIT = 65_536;

    private record Stamp(long size, FileTime modified, FileTime changed) {
    }

    private final ConcurrentMap<Long, Stamp> lastOpen = new ConcurrentHashMap<>();

    /** A file is being opened, as {@code m} says it is now; true when its cached pages are still its contents. */
    boolean keep(Metadata m) {
        Stamp now = new Stamp(m.size(), m.modified(), m.changed());
        if (lastOpen.size() >= LIMIT && !lastOpen.containsKey(m.inode())) {
            lastOpen.clear();
        }
        return now.equals(lastOpen.put(m.inode(), now));
    }

    /**
     * A file written through this mount is closed, as {@code m} says it is now: the kernel's pages
     * hold what was written (writes go through them to the store), so the next open may keep them.
     * Without this, the first read after a write (cat after echo, grep after tar) read every file
     * again from the daemon.
     */
    void written(Metadata m) {
        lastOpen.put(m.inode(), new Stamp(m.size(), m.modified(), m.changed()));
    }
}
