package dev.chibifs.store;

/**
 * What a store entry is. Symbolic links and other special files are reported, never followed.
 * FIFO and SOCKET are names the store holds but never opens for data (the kernel serves a fifo's
 * data itself, on the mount's own inode); OTHER is a device node, which nothing here creates.
 */
public enum EntryKind { FILE, DIRECTORY, SYMLINK, FIFO, SOCKET, OTHER }
