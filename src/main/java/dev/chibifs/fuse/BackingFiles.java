package dev.chibifs.fuse;

import dev.chibifs.store.FileHandle;
import dev.chibifs.sys.Errors;
import dev.chibifs.sys.Linux;
import dev.chibifs.sys.Syscalls;

import java.io.IOException;

/**
 * FUSE passthrough: the store files the kernel reads and writes itself, one backing id per node
 * while any open of it is passed through. Until INIT grants passthrough, and once the kernel
 * refuses a backing file for want of a capability, every open is served instead.
 */
final class BackingFiles {

    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(BackingFiles.class);
    /** A node's backing id once the kernel refused its store file for passthrough: never asked again. */
    private static final int NO_BACKING = -1;
    private final NodeTable nodes;
    /** The store files open for writing through passthrough, whose changes are told to the store's other mounts. */
    private final PassthroughWrites writes = new PassthroughWrites();
    /** Where backing files are registered once INIT granted FUSE_PASSTHROUGH; null: reads and writes are served. */
    private volatile FuseChannel passthrough;
    /** See {@link #passthroughRefused()}. */
    private volatile String passthroughRefused;
    /** See {@link #whenPassthroughRefused}. */
    private volatile Runnable whenServed = () -> { };

    BackingFiles(NodeTable nodes) {
        this.nodes = nodes;
    }

    /** INIT granted FUSE_PASSTHROUGH: opens of store files register them with {@code channel}. */
    void passthrough(FuseChannel channel) {
        this.passthrough = channel;
    }

    /** Whether opens are passed through: INIT granted it, and the kernel has not refused a backing file. */
    boolean granted() {
        return passthrough != null;
    }

    /** Why the kernel refused every backing file (so every open is served), or null: it takes them, or none was asked. */
    String passthroughRefused() {
        return passthroughRefused;
    }

    /** Runs {@code whenServed} once, if the kernel refuses backing files: what the mount reports has changed. */
    void whenPassthroughRefused(Runnable whenServed) {
        this.whenServed = whenServed;
    }

    /**
     * The kernel refused a backing file with EPERM: FUSE_DEV_IOC_BACKING_OPEN needs CAP_SYS_ADMIN in
     * the initial user namespace, which a daemon in a user namespace lacks whatever its CapEff
     * says, and it refuses every file alike. The mount serves reads and writes from now on, and
     * says so, rather than ask again at each open and report passthrough it does not have.
     */
    private void refusePassthrough(String why) {
        Runnable then;
        synchronized (this) {
            if (passthroughRefused != null) {
                return;
            }
            passthroughRefused = why;
            passthrough = null;
            then = whenServed;
        }
        LOG.warn("the kernel refuses backing files ({}): the daemon serves every read and write from now on (FUSE"
                + " passthrough needs CAP_SYS_ADMIN in the initial user namespace)", why);
        then.run();
    }

    /**
     * The backing id the kernel reads and writes node {@code n}'s store file through (FUSE
     * passthrough), registered at its first open and shared by every open of it until the last is
     * released: the kernel refuses (EIO at open) a second, different backing file for an inode while
     * one is in use. 0 when reads and writes are served: no passthrough, a store without descriptors,
     * or a store file the kernel would not take (below). {@code requested}: the open's flags, as the
     * kernel opens the store file with them; EINVAL where the store refuses their O_DIRECT.
     * {@code writable}: the open writes, as its release will say ({@link #release}).
     */
    int backing(NodeTable.Node n, FileHandle handle, int requested, boolean writable) throws IOException {
        FuseChannel channel = passthrough;
        if (channel == null) {
            return 0;
        }
        synchronized (n) {
            if (n.backingId == NO_BACKING) {
                return 0;
            }
            if ((requested & Linux.O_DIRECT) != 0) {
                checkDirect(n, handle, requested);
            }
            if (n.backingOpens > 0) {
                n.backingOpens++;
                watchWrites(n, handle, writable);
                return n.backingId;
            }
            int fd = -1;
            try {
                fd = handle.passthroughDescriptor();
                if (fd < 0) {
                    return 0;
                }
                n.backingId = channel.openBacking(fd);
                n.backingOpens = 1;
                watchWrites(n, handle, writable);
                return n.backingId;
            } catch (IOException refused) {
                if (Errors.errno(refused) == Linux.EPERM) {
                    refusePassthrough(refused.getMessage());
                    return 0;
                }
                // ELOOP: the store file is on a stacked file system (a FUSE mount inside the store)
                // deeper than the kernel stacks. This node's reads and writes are served from now on.
                LOG.debug("{}: served reads and writes, no passthrough: {}", nodes.path(n), refused.getMessage());
                n.backingId = NO_BACKING;
                return 0;
            } finally {
                if (fd >= 0) {
                    Syscalls.close(fd); // the kernel holds the file now
                }
            }
        }
    }

    /** An open passed through that may write: its changes are looked for (see {@link PassthroughWrites}). */
    private void watchWrites(NodeTable.Node n, FileHandle handle, boolean writable) {
        if (!writable) {
            return;
        }
        try {
            writes.opened(n.id, handle::passthroughDescriptor);
        } catch (IOException e) {
            // out of descriptors: the file's changes reach other mounts at its close, as they did before
            LOG.debug("{}: writes passed through not watched: {}", nodes.path(n), e.getMessage());
        }
    }

    /**
     * The kernel opens the store file again for every open it passes through, with that open's flags
     * (backing_file_open), and turns any failure into EIO (fuse_file_io_open: "a server mistake"),
     * after a CREATE made the file. A file system without direct I/O (ramfs; measured on Linux 6.18)
     * answers O_DIRECT with EINVAL, which programs (dd, databases) take as "use the page cache", and
     * leaves the file an O_CREAT made: so the store file is opened so here first, and its EINVAL
     * answered. Any other failure is left to the kernel's open, as before.
     */
    private void checkDirect(NodeTable.Node n, FileHandle handle, int requested) throws IOException {
        int fd = handle.passthroughDescriptor();
        if (fd < 0) {
            return;
        }
        try {
            Syscalls.close(Syscalls.reopen(fd, (requested & Linux.O_ACCMODE) | Linux.O_DIRECT, null));
        } catch (IOException refused) {
            if (Errors.errno(refused) == Linux.EINVAL) {
                throw dev.chibifs.sys.ErrnoException.of(Linux.EINVAL, nodes.path(n).toString(),
                        "the store's file system has no direct I/O (O_DIRECT)");
            }
        } finally {
            Syscalls.close(fd);
        }
    }

    /**
     * An open passed through is released: with the last one the kernel's backing file goes, so no
     * store file stays open (for writing) once nothing on the mount has it open.
     */
    void release(NodeTable.Node n, boolean writable) {
        if (writable) {
            writes.released(n.id);
        }
        FuseChannel channel = passthrough;
        int id = 0;
        synchronized (n) {
            if (n.backingOpens > 0 && --n.backingOpens == 0) {
                id = n.backingId;
                n.backingId = 0;
            }
        }
        if (id > 0 && channel != null) {
            try {
                channel.closeBacking(id);
            } catch (IOException e) {
                // ENOENT: gone with the connection already
            }
        }
    }

    /** The session ended: no store file is looked at any more. */
    void close() {
        writes.close();
    }
}
