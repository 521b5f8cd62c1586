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

    /** The file's metadata when it was held. */
    Metadata metadata();

    /** Opens the held file as {@link Storage#open} opens a name that exists: TRUNCATE applies, CREATE does nothing. */
    FileHandle open(Set<OpenFlag> flags) throws IOException;

    @Override
    void close();
}
