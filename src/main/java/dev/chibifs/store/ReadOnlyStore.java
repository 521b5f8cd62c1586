package dev.chibifs.store;

/**
 * A store that cannot write at all, whatever the path: the router refuses a change there with
 * {@link ReadOnlyStoreException} naming the namespace path, before the store is asked.
 */
public interface ReadOnlyStore {

    /** What the store is, for refusals ("readonly:/srv/docs", "virtual context metadata"). */
    String storeName();
}
