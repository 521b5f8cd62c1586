package dev.chibifs.store;

/** Space figures of the store, for statfs. */
public record SpaceInfo(long blockSize, long totalBytes, long freeBytes, long availableBytes, long maxNameLength) {
}
