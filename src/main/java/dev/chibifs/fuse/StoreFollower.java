package dev.chibifs.fuse;

/**
 * Keeps what the kernel caches true to a store that changes behind the mount (chibi writes it
 * directly): the directories the kernel looks into are followed, and each change there becomes
 * an invalidation. {@link #NONE} follows nothing, and the kernel keeps things for the mount's
 * configured timeouts.
 */
interface StoreFollower extends AutoCloseable {

    /** Whether changes in directory node {@code dir} reach the kernel, so what it caches there may last. */
    boolean follows(NodeTable.Node dir);

    /** A request looks into directory {@code dir}: follow it from now on; true when it is followed. */
    boolean lookingIn(NodeTable.Node dir);

    /**
     * The kernel was given a listing of directory {@code dir} that it may keep (it is followed),
     * with the nodes and attributes of {@code namesGiven} names (READDIRPLUS; 0 for plain READDIR).
     */
    default void listed(NodeTable.Node dir, int namesGiven) {
    }

    /** The kernel was given an entry for {@code name} in {@code parent} (a lookup's, a create's, a listing's). */
    default void named(NodeTable.Node parent, String name) {
    }

    /** Name {@code name} in {@code parent}, one of file node {@code node}'s, went through this mount (an unlink, a rename over it). */
    default void nameRemoved(NodeTable.Node parent, String name, NodeTable.Node node) {
    }

    /** Whether the kernel may cache {@code name} in {@code parent} as missing (its appearance will be told). */
    default boolean missing(NodeTable.Node parent, String name) {
        return true;
    }

    /** The kernel forgot node {@code node} (its last lookup): it holds nothing of it or in it now. */
    default void forgotten(NodeTable.Node node) {
    }

    /** How many directories are followed now. */
    default int followed() {
        return 0;
    }

    /** Tells the kernel, before returning, what the store's changes queued so far make stale. */
    default void catchUp() {
    }

    @Override
    default void close() {
    }

    /**
     * Nothing is followed although the mount asked for a long kernel cache (its root store, an S3
     * bucket for one, has no change feed): every directory gets the brief timeouts and no missing
     * name is cached, so a change made elsewhere shows within a second, not after the long timeout.
     */
    StoreFollower UNFOLLOWED = new StoreFollower() {
        @Override
        public boolean follows(NodeTable.Node dir) {
            return false;
        }

        @Override
        public boolean lookingIn(NodeTable.Node dir) {
            return false;
        }

        @Override
        public boolean missing(NodeTable.Node parent, String name) {
            return false;
        }
    };

    /** Follows nothing: the mount's own timeouts hold everywhere. */
    StoreFollower NONE = new StoreFollower() {
        @Override
        public boolean follows(NodeTable.Node dir) {
            return true;
        }

        @Override
        public boolean lookingIn(NodeTable.Node dir) {
            return false;
        }
    };
}
