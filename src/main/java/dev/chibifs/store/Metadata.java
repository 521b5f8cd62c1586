package dev.chibifs.store;

import java.nio.file.attribute.FileTime;

/**
 * What the store knows of one entry.
 *
 * @param mode the permission bits as stored (only the execute bits mean anything to chibifs)
 */
public record Metadata(EntryKind kind, long size, FileTime created, FileTime modified,
                       FileTime accessed, FileTime changed, long links, int mode, long inode) {

    public boolean isDirectory() {
        return kind == EntryKind.DIRECTORY;
    }

    public boolean isFile() {
        return kind == EntryKind.FILE;
    }
}
