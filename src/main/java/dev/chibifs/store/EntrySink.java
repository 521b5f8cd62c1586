package dev.chibifs.store;

import java.io.IOException;

/** Takes a directory's entries one at a time, as {@link Storage#forEachEntry} finds them. */
@FunctionalInterface
public interface EntrySink {

    /**
     * One entry. Its name is {@code length} bytes at {@code offset} in {@code name}, as the store
     * holds it (UTF-8 for every name created through chibi or a mount), and valid only during the
     * call; its inode number is what {@link Metadata#inode} says of it, or 0 where the store's
     * listing does not give it. The sink may not list another directory meanwhile. False ends the listing.
     */
    boolean accept(byte[] name, int offset, int length, EntryKind kind, long inode) throws IOException;

    /**
     * Hands {@code entries} (a listing a store already holds) to {@code sink}, names as UTF-8, until it
     * says stop; with {@code inodes} (the inode number of each, in the same order), or without (null).
     */
    static void feed(java.util.List<Entry> entries, long[] inodes, EntrySink sink) throws IOException {
        for (int i = 0; i < entries.size(); i++) {
            Entry e = entries.get(i);
            byte[] name = e.name().getBytes(java.nio.charset.StandardCharsets.UTF_8);
            if (!sink.accept(name, 0, name.length, e.kind(), inodes == null ? 0 : inodes[i])) {
                return;
            }
        }
    }

    /** {@link #feed(java.util.List, long[], EntrySink)} without inode numbers. */
    static void feed(java.util.List<Entry> entries, EntrySink sink) throws IOException {
        feed(entries, null, sink);
    }
}
