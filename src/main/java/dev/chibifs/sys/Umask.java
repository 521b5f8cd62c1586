package dev.chibifs.sys;

import java.io.IOException;
import java.util.Optional;

/**
 * The umask this process was started with, and the owner's bits taken out of the one it runs with.
 *
 * <p>At a umask that takes the owner's write or search bit (222, 277, 377), every directory chibifs
 * made came out without them, and the next step inside it failed: {@code write} exited 3 "the store
 * is not writable" once it had made the store's directory 0500, a mount could not open its log in
 * the directory it had just made. POSIX has {@code mkdir -p} give the directories it makes on the
 * way u+wx whatever the umask; chibifs does so for every directory and file of its own (the store,
 * zone roots, parents, logs, caches, journals, records). The group's and others' bits of the user's
 * umask still apply to all of them, and where a file's mode is chibi's (the tool cache's entries
 * {@code cache put} writes), it is made from the whole umask the user started with ({@link #atStart}).
 */
public final class Umask {

    /** The owner's bits, which no umask takes from what chibifs makes. */
    private static final int OWNER = 0700;
    /** Where /proc says nothing (an older kernel): the common umask. */
    private static final int USUAL = 022;
    /** What Rust's std::fs gives a file it creates, before the umask: chibi's files. */
    private static final int CHIBIS_FILE_MODE = 0666;

    private static int atStart = -1;

    private Umask() {
    }

    /** Called once, first thing: remembers the umask the process was started with and clears its owner's bits. */
    public static synchronized void spareTheOwner() {
        if (atStart >= 0) {
            return;
        }
        atStart = current();
        if ((atStart & OWNER) != 0) {
            Syscalls.umask(atStart & ~OWNER);
        }
    }

    /** The umask the process was started with: its user's, owner's bits and all. */
    public static synchronized int atStart() {
        return atStart >= 0 ? atStart : current();
    }

    /**
     * The mode chibi gives a file it creates when run by this process's user: Rust's default, 0666,
     * less the whole umask the process started with (0400 at umask 277), where chibifs writes as
     * that user (the {@code vfs://} commands and {@code cache put}).
     */
    public static int chibisFileMode() {
        return CHIBIS_FILE_MODE & ~atStart();
    }

    /** This process's umask, from /proc (reading it with umask(2) would change it for a moment). */
    static int current() {
        try {
            Optional<String> umask = ProcStatus.field(ProcStatus.SELF, "Umask");
            if (umask.isPresent()) {
                return Integer.parseInt(umask.get(), 8) & 0777;
            }
        } catch (IOException | NumberFormatException e) {
            // an older kernel has no Umask line
        }
        return USUAL;
    }
}
