package dev.chibifs.store.s3;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * What an open of an S3 store added to its cache directory, so that an open S3 then refuses (a
 * mistyped bucket, a wrong key) leaves the directory as it found it: a tester's existing
 * {@code --cache-dir}, holding files of their own, kept a record claiming it for a bucket that does
 * not exist, and the corrected command was told to remove the directory. Only names this open made
 * go, each only as what it is (a directory only when empty): nothing it did not make is touched.
 */
final class MadeAtOpen {

    private static final Logger LOG = LoggerFactory.getLogger(MadeAtOpen.class);

    private final Path dir;
    /** The directories made on the way to the cache directory, the cache directory first; empty where it was there. */
    private final List<Path> dirs = new ArrayList<>();
    /** The names made in the cache directory, in the order they were made. */
    private final List<String> names = new ArrayList<>();
    /** The store's record as it was, where this open replaced it; null where there was none. */
    private CacheOwner ownerBefore;
    private boolean ownerWritten;

    /** Notes which of {@code dir} and the directories above it are missing, before they are made. */
    MadeAtOpen(Path dir) {
        this.dir = dir;
        for (Path d = dir.toAbsolutePath(); d != null && !Files.exists(d, LinkOption.NOFOLLOW_LINKS); d = d.getParent()) {
            dirs.add(d);
        }
    }

    /** Whether {@code name} is missing from the cache directory: call before it is made. */
    boolean missing(String name) {
        return !Files.exists(dir.resolve(name), LinkOption.NOFOLLOW_LINKS);
    }

    /** {@code name} was made by this open. */
    void made(String name) {
        names.add(name);
    }

    /** This open wrote the store's record over {@code before} (null: there was none). */
    void ownerWritten(CacheOwner before) {
        ownerWritten = true;
        ownerBefore = before;
    }

    /**
     * Undoes the open, last made first, under the directory's lock (the lock file goes last of the
     * names, so another chibifs waiting on it finds no directory of ours half gone). Whatever cannot
     * go stays, as a directory of an earlier run would, and the log says why.
     */
    void undo() {
        try {
            if (ownerWritten) {
                if (ownerBefore == null) {
                    Files.deleteIfExists(dir.resolve(CacheOwner.FILE));
                } else {
                    CacheOwner.write(dir, ownerBefore);
                }
            }
            for (int i = names.size() - 1; i >= 0; i--) {
                Files.deleteIfExists(dir.resolve(names.get(i))); // a directory with something in it is not ours to empty
            }
            for (Path d : dirs) {
                Files.deleteIfExists(d);
            }
        } catch (IOException | RuntimeException e) {
            LOG.debug("the cache directory {} of a refused S3 store keeps what is left: {}", dir, e.toString());
        }
    }
}
