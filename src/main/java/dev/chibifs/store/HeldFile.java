package dev.chibifs.store;

import java.io.Closeable;
import java.io.IOException;
import java.util.Set;

/**
 * A file held by what it is rather than by its name: {@link #open} reaches it after its name is
 * gone or names another file, as on a disk a process that resolved the name just before a
 * replace still opens the file it found. Closing lets the store free a file nothing else holds.
 */
public interface HeldFile extends Closeable {

    /** The held file's metadata now (its link count 0 once every name is gone). */
    Metadata metadata() throws IOException;

    /** Opens the held file as {@link Storage#open} opens a name that exists: TRUNCATE applies, CREATE does nothing. */
    FileHandle open(Set<OpenFlag> flags) throws IOException;

    @Override
    void close();
}
