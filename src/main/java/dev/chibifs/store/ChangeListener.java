package dev.chibifs.store;

/**
 * Hears what a {@link ChangeFeed} sees in the directories it follows: every change, whoever made
 * it (this process included, since the kernel does not say who). Called on the feed's own thread,
 * one event at a time and in the order they happened.
 */
public interface ChangeListener {

    /**
     * Something at {@code name} in followed directory {@code dir} changed: when {@code renamed}, the
     * name came, went, or now names another file; when {@code modified}, the file (or directory) at
     * it changed its content or attributes. Told once for both when both happened close together,
     * so that the listener looks at the store once.
     */
    void changed(long dir, String name, boolean renamed, boolean modified);

    /**
     * {@code name} in followed directory {@code dir} went (removed or moved away), and nothing else
     * happened to it in the events read together: the listener may take it as gone without looking
     * at the store (where it is back by then, that arrival's own event follows). Told instead of
     * {@link #changed}, which a removal of every file through a mount paid a failing look for.
     * Not a default: a listener that passes events on (the router's) must pass this on too.
     */
    void removed(long dir, String name);

    /** Followed directory {@code dir} itself changed its attributes (a chmod or touch of it; not the names in it). */
    void directoryChanged(long dir);

    /** Followed directory {@code dir} is gone (removed, or its file system unmounted): its key means nothing any more. */
    void directoryGone(long dir);

    /** Events were lost (the kernel's queue overflowed): anything followed may have changed. */
    void eventsLost();

    /**
     * The store's root was replaced (another directory or file system is at its path now, or the
     * store is back after one): a name the listener holds as missing in it may be there now, and no
     * event says so, since the watches are on the old root's directories. Told on the thread of the
     * request that first used the new root, not the feed's; at most a few times for one replacement.
     * Not a default: a listener that passes events on (the router's) must pass this on too.
     */
    void storeReplaced();

    /**
     * Every change the feed read together has been told: the store already had all of them before
     * the first was, so what a listener does once per directory for them may be done once per batch.
     * Not a default: a listener that passes events on (the router's) must pass this on too.
     */
    void batchTold();
}
