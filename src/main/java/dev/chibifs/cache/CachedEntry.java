package dev.chibifs.cache;

import dev.chibifs.path.VfsPath;

import java.time.Instant;

/** One stored tool output: whose it is, its id and path, its size in bytes and when it was written. */
public record CachedEntry(String context, String id, VfsPath path, long size, Instant modified) {
}
