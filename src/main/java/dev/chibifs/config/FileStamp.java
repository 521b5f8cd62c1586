package dev.chibifs.config;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;

/**
 * What says a file is still the one read before: inode, size and modification time. chibi
 * replaces its JSON files atomically (a new inode), so one stat per look tells a change without
 * reading the file again.
 */
public record FileStamp(Object inode, long size, long modifiedNanos) {

    /** The stamp of a file that is not there. */
    public static final FileStamp MISSING = new FileStamp(null, -1, -1);

    /** The stamp of {@code file} now, {@link #MISSING} when absent. */
    public static FileStamp of(Path file) throws IOException {
        try {
            BasicFileAttributes a = Files.readAttributes(file, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
            java.time.Instant t = a.lastModifiedTime().toInstant();
            return new FileStamp(a.fileKey(), a.size(), t.getEpochSecond() * 1_000_000_000L + t.getNano());
        } catch (NoSuchFileException e) {
            return MISSING;
        }
    }
}
