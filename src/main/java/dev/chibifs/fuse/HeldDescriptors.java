package dev.chibifs.fuse;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * Whether a thread holds a descriptor of a given file of this mount, as /proc tells:
 * {@code /proc/TID/fdinfo/N} has the descriptor's mount ({@code mnt_id:}) and inode number
 * ({@code ino:}, the kernel's, which is the one the daemon's attributes gave it), and the
 * thread's {@code mountinfo} says which device that mount is of. A mount is matched by its
 * device, the FUSE connection, not only by this mount's own id: a bind mount of it, or the copy
 * another mount namespace has (unshare, a container), is another mount id of the same files.
 *
 * <p>Nothing here calls into this mount: a stat of it from the daemon would wait on the daemon
 * itself. /proc/TID works for any thread id, not only a process's (their fd table is shared).
 * Anything unreadable (the thread gone, another user's process for a daemon not root) is "no".
 */
final class HeldDescriptors {

    /** The kernel's /proc. */
    static final Path PROC = Path.of("/proc");

    private final Path proc;
    private final int mountId;
    private final String device;

    /** This mount's id and device ({@code major:minor}), under {@code proc} (/proc, or a copy of one in tests). */
    HeldDescriptors(Path proc, int mountId, String device) {
        this.proc = proc;
        this.mountId = mountId;
        this.device = device;
    }

    /**
     * The chibifs mount at {@code mountpoint}, as {@code proc/self/mountinfo} lists it: the last one
     * there, the one on top (a stale one below it is another connection); null when none is listed.
     * Read once the mount is made, before it serves: reading the table does not touch the mount.
     */
    static HeldDescriptors ofMount(Path proc, Path mountpoint) throws IOException {
        String want = mountpoint.toAbsolutePath().normalize().toString();
        HeldDescriptors found = null;
        for (String line : Files.readAllLines(proc.resolve("self/mountinfo"))) {
            MountTable.InfoLine m = MountTable.InfoLine.parse(line);
            if (m != null && m.mountpoint().equals(want) && m.type().equals(MountTable.CHIBIFS_TYPE)) {
                found = new HeldDescriptors(proc, m.id(), m.device());
            }
        }
        return found;
    }

    int mountId() {
        return mountId;
    }

    String device() {
        return device;
    }

    /**
     * Whether thread {@code tid} holds a descriptor of inode {@code ino} of this mount's files.
     * It reads every one of its fdinfo files (and, for a candidate on another mount id, its
     * mountinfo): for the rare request that needs to know, never for the usual one.
     */
    boolean holds(int tid, long ino) {
        if (tid <= 0) {
            return false;
        }
        Path thread = proc.resolve(Integer.toString(tid));
        Set<Integer> elsewhere = new HashSet<>();
        try (DirectoryStream<Path> fds = Files.newDirectoryStream(thread.resolve("fdinfo"))) {
            for (Path fd : fds) {
                Descriptor d = descriptor(fd);
                if (d != null && d.ino == ino) {
                    if (d.mountId == mountId) {
                        return true;
                    }
                    elsewhere.add(d.mountId);
                }
            }
        } catch (IOException | RuntimeException e) {
            return false; // gone, or not ours to read
        }
        return !elsewhere.isEmpty() && ofThisDevice(thread, elsewhere);
    }

    /** Whether one of {@code mountIds}, as the thread's own mount table lists them, is of this mount's device. */
    private boolean ofThisDevice(Path thread, Set<Integer> mountIds) {
        try {
            for (String line : Files.readAllLines(thread.resolve("mountinfo"))) {
                MountTable.InfoLine m = MountTable.InfoLine.parse(line);
                if (m != null && mountIds.contains(m.id()) && m.device().equals(device)) {
                    return true;
                }
            }
        } catch (IOException | RuntimeException e) {
            return false;
        }
        return false;
    }

    /** A descriptor's mount id and inode number, from its fdinfo file; null where either is missing (closed meanwhile). */
    static Descriptor descriptor(Path fdinfo) throws IOException {
        List<String> lines;
        try {
            lines = Files.readAllLines(fdinfo);
        } catch (java.nio.file.NoSuchFileException closed) {
            return null;
        }
        Integer mount = null;
        Long ino = null;
        for (String line : lines) {
            // only lines that begin so: inotify's and epoll's own lines carry "ino:" further on
            if (line.startsWith("mnt_id:")) {
                mount = Integer.parseInt(line.substring("mnt_id:".length()).trim());
            } else if (line.startsWith("ino:")) {
                ino = Long.parseUnsignedLong(line.substring("ino:".length()).trim());
            }
        }
        return mount == null || ino == null ? null : new Descriptor(mount, ino);
    }

    record Descriptor(int mountId, long ino) {
    }
}
