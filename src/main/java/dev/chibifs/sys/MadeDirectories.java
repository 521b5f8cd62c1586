package dev.chibifs.sys;

import jnr.ffi.Memory;
import jnr.ffi.Pointer;

import java.io.IOException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The directories this process made, each by its device and inode taken right after its mkdir,
 * while someone records them: a mount that fails before it answers removes those it made, and
 * only those (another mount of the same store starting meanwhile may have made one of the same
 * names, which an empty-directory sweep took from under it).
 */
public final class MadeDirectories {

    /** A directory as the kernel tells it apart: its file system's device (major, minor) and its inode. */
    public record Identity(long device, long inode) {
    }

    private static volatile Set<Identity> recording;

    private MadeDirectories() {
    }

    /** Records from now on what this process makes; returns the set, filled as directories are made. */
    public static Set<Identity> record() {
        Set<Identity> made = ConcurrentHashMap.newKeySet();
        recording = made;
        return made;
    }

    /** Stops recording. */
    public static void stop() {
        recording = null;
    }

    /** Notes that this process made {@code name} in {@code dirfd} (a path where AT_FDCWD), if recording. */
    static void made(int dirfd, String name) {
        Set<Identity> made = recording;
        if (made != null) {
            Identity id = identity(dirfd, name);
            if (id != null) {
                made.add(id);
            }
        }
    }

    /** The identity of {@code name} in {@code dirfd}, never followed; null where it cannot be told. */
    public static Identity identity(int dirfd, String name) {
        Pointer buf = Memory.allocateDirect(Native.RUNTIME, 256); // not a thread's statx buffer: its caller may hold that one
        if (Native.C.statx(dirfd, Syscalls.bytes(name), Linux.AT_SYMLINK_NOFOLLOW, Linux.STATX_INO, buf) != 0) {
            return null;
        }
        return new Identity(((long) buf.getInt(136) << 32) | (buf.getInt(140) & 0xffffffffL), buf.getLong(32));
    }

    /** The identity of {@code path}, never followed; null where it cannot be told. */
    public static Identity identity(Path path) {
        return identity(Linux.AT_FDCWD, path.toAbsolutePath().normalize().toString());
    }

    /** {@link Files#createDirectories}, each directory it makes noted while recording. */
    public static Path createDirectories(Path dir) throws IOException {
        Path absolute = dir.toAbsolutePath().normalize();
        if (Files.isDirectory(absolute)) {
            return dir;
        }
        java.util.ArrayDeque<Path> missing = new java.util.ArrayDeque<>();
        for (Path p = absolute; p != null && !Files.exists(p, LinkOption.NOFOLLOW_LINKS); p = p.getParent()) {
            missing.push(p);
        }
        if (missing.isEmpty()) {
            Files.createDirectories(absolute); // a link or a file in the way: the JDK's failure says which
            return dir;
        }
        for (Path p : missing) {
            try {
                Files.createDirectory(p);
                made(Linux.AT_FDCWD, p.toString());
            } catch (FileAlreadyExistsException raced) {
                if (!Files.isDirectory(p)) {
                    throw raced;
                }
            }
        }
        return dir;
    }
}
