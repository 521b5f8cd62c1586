package dev.chibifs.store;

/** What setting an extended attribute does to one already there: setxattr(2)'s flags. */
public enum XattrMode {
    /** No flag: creates the attribute, or replaces its value. */
    SET,
    /** XATTR_CREATE: fails with EEXIST when the attribute exists. */
    CREATE,
    /** XATTR_REPLACE: fails with ENODATA when the attribute does not exist. */
    REPLACE
}
