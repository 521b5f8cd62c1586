package dev.chibifs.fuse;

import dev.chibifs.store.FileHandle;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.atomic.AtomicLong;

/** The adapter's own table of open files, keyed by the handle number given to the kernel. */
final class OpenFileTable {

    // never 0: some kernels and tools treat fh == 0 as "no handle"
    private final AtomicLong next = new AtomicLong(1);
    private final ConcurrentMap<Long, OpenFile> files = new ConcurrentHashMap<>();
    // unlinked files that are still open, by the .fuse_hidden name libfuse gave them (see ChibiFuse#hide)
    private final ConcurrentMap<String, FileHandle> hidden = new ConcurrentHashMap<>();

    long add(OpenFile file) {
        long id = next.getAndIncrement();
        files.put(id, file);
        return id;
    }

    OpenFile get(long id) {
        return files.get(id);
    }

    OpenFile remove(long id) {
        return files.remove(id);
    }


    void hide(String name, FileHandle handle) {
        hidden.put(name, handle);
    }

    FileHandle hidden(String name) {
        return hidden.get(name);
    }

    FileHandle unhide(String name) {
        return hidden.remove(name);
    }

    /**
     * Whether store inode {@code inode} is open under a hidden name: its name was unlinked while
     * open, so the kernel keeps one inode for the handles and gets another for any name the file
     * still or again has, though the store counts one link.
     */
    boolean hiddenOpen(long inode) {
        if (hidden.isEmpty()) {
            return false;
        }
        for (FileHandle h : hidden.values()) {
            try {
                if (h.inode() == inode) {
                    return true;
                }
            } catch (IOException closed) {
                // closed meanwhile: not open
            }
        }
        return false;
    }

    /** Closes every handle still open (unmount with files open); returns how many there were. */
    int closeAll() {
        List<FileHandle> left = new ArrayList<>();
        files.values().forEach(f -> left.add(f.handle()));
        files.clear();
        left.addAll(hidden.values());
        hidden.clear();
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
