package dev.chibifs.store;

/** What a store entry is. Symbolic links and other special files are reported, never followed. */
public enum EntryKind { FILE, DIRECTORY, SYMLINK, OTHER }
