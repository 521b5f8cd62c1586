package dev.chibifs.config;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;

/**
 * What says a file is still the one read before: inode, size and modification time. chibi
 * replaces its JSON files atomically (a new inode), so one stat per look tells a change without
 * reading the file again. A symbolic link is followed, as the read that follows it does: a
 * dotfile kept as a link changes when the file it names does.
 */
public record FileStamp(Object inode, long size, long modifiedNanos) {

    /** How a reader of chibi's files tells a file's version: {@link #of}, or a test's own. */
    public interface Stamper {
        FileStamp of(Path file) throws IOException;
    }

    /** The stamp of a file that is not there. */
    public static final FileStamp MISSING = new FileStamp(null, -1, -1);

    /** The stamp of {@code file} now (of what a link names), {@link #MISSING} when absent or a link to nothing. */
    public static FileStamp of(Path file) throws IOException {
        try {
            BasicFileAttributes a = Files.readAttributes(file, BasicFileAttributes.class);
            java.time.Instant t = a.lastModifiedTime().toInstant();
            return new FileStamp(a.fileKey(), a.size(), t.getEpochSecond() * 1_000_000_000L + t.getNano());
        } catch (NoSuchFileException e) {
            return MISSING;
        }
    }
}
