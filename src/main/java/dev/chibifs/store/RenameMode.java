package dev.chibifs.store;

/** What a rename does to an existing target: renameat2(2)'s flags. */
public enum RenameMode {
    /** rename(2): replaces a file or an empty directory there. */
    REPLACE,
    /** RENAME_NOREPLACE: fails with EEXIST when anything is there, decided as the move is made. */
    NO_REPLACE,
    /** RENAME_EXCHANGE: both names exist, and each ends up with the other's entry. */
    EXCHANGE
}
