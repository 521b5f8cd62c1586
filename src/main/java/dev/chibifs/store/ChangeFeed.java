package dev.chibifs.store;

import dev.chibifs.path.VfsPath;

import java.io.Closeable;

/**
 * Follows directories of a store and tells a {@link ChangeListener} when names in them change,
 * made through this process or not (chibi writes the store directly). A store that cannot tell
 * has {@link #NONE}.
 */
public interface ChangeFeed extends Closeable {

    /** Follows nothing: for stores whose changes cannot be seen, or that change only through us. */
    ChangeFeed NONE = new ChangeFeed() {
        @Override
        public boolean active() {
            return false;
        }

        @Override
        public long follow(VfsPath directory) {
            return -1;
        }

        @Override
        public void close() {
        }
    };

    /** Whether this feed sees changes at all; false, and every {@link #follow} fails. */
    boolean active();

    /**
     * Starts following directory {@code directory} (a no-op when it is followed already) and
     * returns the key its events carry, the same for as long as it is followed, or -1 when it
     * cannot be followed (missing, not a directory, out of watches).
     */
    long follow(VfsPath directory);

    /**
     * Stops following the directory whose events carry {@code key} (a key {@link #follow} returned):
     * its watch and what it holds in the kernel (the directory's inode) go. The listener may still
     * hear events queued before, and then the directory's end ({@code directoryGone}).
     */
    default void unfollow(long key) {
    }

    /**
     * Tells the listener, before returning, every change queued before this call that it has not
     * been told yet. A lock grant needs it: what another mount changed before it unlocked must be
     * stale in this mount's kernel before the lock holder looks (SQLite's hot journal).
     */
    default void catchUp() {
    }

    /** Stops following everything; the listener hears nothing more once this returns. */
    @Override
    void close();
}
