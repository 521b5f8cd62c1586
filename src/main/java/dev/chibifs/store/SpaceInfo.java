package dev.chibifs.store;

/** Space and file-count figures of the store, for statfs (0 files where the store does not count them). */
public record SpaceInfo(long blockSize, long totalBytes, long freeBytes, long availableBytes, long maxNameLength,
                        long totalFiles, long freeFiles) {
}
