package dev.chibifs.store;

/** How a file is opened; a subset of open(2) flags that storage understands. */
public enum OpenFlag {
    READ,
    WRITE,
    /** Every write goes to the end of the file, whatever position it names. */
    APPEND,
    /** Create when absent. */
    CREATE,
    /** Create, failing when present (O_EXCL). */
    CREATE_NEW,
    /** Cut to zero length on open. */
    TRUNCATE
}
