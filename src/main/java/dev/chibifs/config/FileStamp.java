package dev.chibifs.config;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.Map;

/**
 * What says a file is still the one read before: inode, size, modification and status change
 * time. chibi replaces its JSON files atomically (a new inode), so one stat per look tells a
 * change without reading the file again. The change time, because a file rewritten in place to
 * the same size with its modification time put back ({@code cp -p}, {@code rsync --inplace -t},
 * {@code touch -r}) keeps the other three; nobody can set the change time back. A symbolic link
 * is followed, as the read that follows it does: a dotfile kept as a link changes when the file
 * it names does.
 */
public record FileStamp(Object inode, long size, long modifiedNanos, long changedNanos) {

    /** How a reader of chibi's files tells a file's version: {@link #of}, or a test's own. */
    public interface Stamper {
        FileStamp of(Path file) throws IOException;
    }

    /** The stamp of a file that is not there. */
    public static final FileStamp MISSING = new FileStamp(null, -1, -1, -1);

    /** The stamp of {@code file} now (of what a link names), {@link #MISSING} when absent or a link to nothing. */
    public static FileStamp of(Path file) throws IOException {
        try {
            Map<String, Object> a = Files.readAttributes(file, "unix:fileKey,size,lastModifiedTime,ctime");
            return new FileStamp(a.get("fileKey"), (Long) a.get("size"), nanos((FileTime) a.get("lastModifiedTime")),
                    nanos((FileTime) a.get("ctime")));
        } catch (NoSuchFileException e) {
            return MISSING;
        }
    }

    private static long nanos(FileTime time) {
        java.time.Instant t = time.toInstant();
        return t.getEpochSecond() * 1_000_000_000L + t.getNano();
    }
}
