package dev.chibifs.store;

/**
 * Hears what a {@link ChangeFeed} sees in the directories it follows: every change, whoever made
 * it (this process included, since the kernel does not say who). Called on the feed's own thread,
 * one event at a time and in the order they happened.
 */
public interface ChangeListener {

    /** A name in followed directory {@code dir} came, went, or now names another file. */
    void nameChanged(long dir, String name);

    /** The file (or directory) at {@code name} in followed directory {@code dir} changed its content or attributes. */
    void fileChanged(long dir, String name);

    /** Followed directory {@code dir} itself changed its attributes (a chmod or touch of it; not the names in it). */
    void directoryChanged(long dir);

    /** Followed directory {@code dir} is gone (removed, or its file system unmounted): its key means nothing any more. */
    void directoryGone(long dir);

    /** Events were lost (the kernel's queue overflowed): anything followed may have changed. */
    void eventsLost();
}
