package dev.chibifs.store;

import java.io.IOException;

/** Takes a directory's entries one at a time, as {@link Storage#forEachEntry} finds them. */
@FunctionalInterface
public interface EntrySink {

    /**
     * One entry. Its name is {@code length} bytes at {@code offset} in {@code name}, as the store
     * holds it (UTF-8 for every name created through chibi or a mount), and valid only during the
     * call; the sink may not list another directory meanwhile. False ends the listing.
     */
    boolean accept(byte[] name, int offset, int length, EntryKind kind) throws IOException;

    /** Hands {@code entries} (a listing a store already holds) to {@code sink}, names as UTF-8, until it says stop. */
    static void feed(java.util.List<Entry> entries, EntrySink sink) throws IOException {
        for (Entry e : entries) {
            byte[] name = e.name().getBytes(java.nio.charset.StandardCharsets.UTF_8);
            if (!sink.accept(name, 0, name.length, e.kind())) {
                return;
            }
        }
    }
}
