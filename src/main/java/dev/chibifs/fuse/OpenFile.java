package dev.chibifs.fuse;

import dev.chibifs.policy.Caller;
import dev.chibifs.store.FileHandle;

/**
 * One entry of the open-file table. The caller is resolved at open/create and kept here,
 * because FUSE does not fill in the requester for release, and the kernel may send writes
 * from another context (writeback). The node is the kernel inode the file was opened through;
 * the opener, the thread whose OPEN or CREATE made it (the request header's pid), and its uid.
 */
record OpenFile(FileHandle handle, Caller caller, boolean writable, NodeTable.Node node, boolean passthrough, int opener,
                long openerUid) {
}
