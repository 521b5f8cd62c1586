package dev.chibifs.cli;

import dev.chibifs.path.Names;
import dev.chibifs.path.VfsPath;
import dev.chibifs.router.CrossDeviceException;
import dev.chibifs.router.MountPointBusyException;
import dev.chibifs.router.PolicyDeniedException;
import dev.chibifs.store.EtagMismatchException;
import dev.chibifs.store.ReadOnlyStoreException;
import dev.chibifs.sys.Errors;
import dev.chibifs.sys.Linux;

import java.io.IOException;
import java.nio.file.FileSystemException;
import java.nio.file.Path;
import java.util.List;

/**
 * The one place that turns a vfs command's failure into an exit code and a one-line message.
 * Store paths in the JDK's exceptions are shown as {@code vfs:///} URIs, so no message leaks
 * where the store lives and every message names what the user typed.
 */
final class Failures {

    /** An exit code and the line to print for it. */
    record Report(int exitCode, String message) {
    }

    private final String storeRoot;
    private final List<VfsPath> prefixes;
    private final List<VfsPath> subjects;
    private final java.util.Map<VfsPath, VfsPath> followed;
    private final boolean writes;
    private final long uid;

    /**
     * Maps failures of commands working on the store at {@code storeRoot} (null before it is opened,
     * or when / is not a local store), whose router mounts stores at {@code prefixes}, given the
     * paths {@code subjects}; the command {@code writes} or only reads, run by {@code uid}.
     */
    Failures(Path storeRoot, List<VfsPath> prefixes, List<VfsPath> subjects, boolean writes, long uid) {
        this(storeRoot, prefixes, subjects, java.util.Map.of(), writes, uid);
    }

    /**
     * As above, where following symbolic links took given paths elsewhere: {@code followed} maps
     * each path reached to the path given that led there.
     */
    Failures(Path storeRoot, List<VfsPath> prefixes, List<VfsPath> subjects, java.util.Map<VfsPath, VfsPath> followed,
            boolean writes, long uid) {
        this.storeRoot = storeRoot == null ? null : storeRoot.toString();
        this.prefixes = prefixes;
        this.subjects = subjects;
        this.followed = followed;
        this.writes = writes;
        this.uid = uid;
    }

    Report report(Exception e) {
        if (e instanceof CommandFailure f) {
            return new Report(f.exitCode(), f.getMessage());
        }
        if (e instanceof VfsCommand.NoStoreException) {
            return new Report(ExitCodes.NOT_FOUND, e.getMessage());
        }
        if (e instanceof PolicyDeniedException) {
            // the zone policy's own words, as the mount logs them
            return new Report(ExitCodes.PERMISSION_DENIED, e.getMessage());
        }
        if (e instanceof ReadOnlyStoreException) {
            // chibi reports a read-only store as permission denied, in these words
            return new Report(ExitCodes.PERMISSION_DENIED, e.getMessage());
        }
        if (e instanceof CrossDeviceException || e instanceof MountPointBusyException) {
            return new Report(ExitCodes.IO_ERROR, e.getMessage());
        }
        // the number the failure carries (or the JDK's type means), never its text
        String file = e instanceof FileSystemException f ? f.getFile() : null;
        switch (Errors.errno(e)) {
            case Linux.EACCES:
                // not the policy (its refusals are PolicyDeniedException, above): the store's own permissions, as
                // for an agent writing through --home to a store root owned; 3 still, as a refusal, said whose
                return new Report(ExitCodes.PERMISSION_DENIED, "the store" + storeNamed(file) + " is not "
                        + (writes ? "writable" : "readable") + " by uid " + uid
                        + " (the operating system refused, not the zone policy): " + uri(file));
            case Linux.ENOENT:
                return new Report(ExitCodes.NOT_FOUND, "no such file or directory: " + uri(file));
            case Linux.EISDIR:
                return new Report(ExitCodes.CONFLICT, "is a directory: " + uri(file));
            case Linux.ENOTDIR:
                if (!writes) {
                    // as cat(1) and ls(1): a path through a file names nothing, for a read
                    return new Report(ExitCodes.NOT_FOUND, "no such file or directory (a file is in the way): "
                            + uri(file));
                }
                return new Report(ExitCodes.CONFLICT, "not a directory (a file is in the way): " + uri(file));
            case Linux.EEXIST:
                return new Report(ExitCodes.CONFLICT, "already exists: " + uri(file));
            case Linux.ENOTEMPTY:
                return new Report(ExitCodes.CONFLICT, "directory not empty: " + uri(file));
            default:
                break;
        }
        if (e instanceof EtagMismatchException m) {
            String asked = m.asked().ifNoneMatch() ? "--if-none-match '*'" : "--if-match " + m.asked().ifMatch();
            return new Report(ExitCodes.CONFLICT, m.current() == null
                    ? "no such file: " + uri(m.getFile()) + " (" + asked + "); nothing changed"
                    : uri(m.getFile()) + " has ETag " + m.current() + " (" + asked + "); nothing changed");
        }
        if (e instanceof FileSystemException f) {
            String reason = f.getReason() == null ? f.getClass().getSimpleName() : f.getReason();
            return new Report(ExitCodes.IO_ERROR, oneLine(reason) + ": " + uri(f.getFile()));
        }
        if (e instanceof IOException) {
            return new Report(ExitCodes.IO_ERROR, "I/O error: " + oneLine(String.valueOf(e.getMessage())));
        }
        throw new IllegalArgumentException("not an expected failure", e);
    }

    /** " DIR" for a file of the local store at DIR, else "": a store at a prefix is named by the URI. */
    private String storeNamed(String file) {
        boolean local = storeRoot != null && file != null && (file.equals(storeRoot) || file.startsWith(storeRoot + "/"));
        return local ? " " + Names.shown(storeRoot) : "";
    }

    /**
     * A path from an exception as a URI. The local store's names its files; a store mounted at a
     * prefix names its own path, the prefix stripped, which is put back where one prefix makes it
     * a path of what the command was given; a failure that names none (a full disk) was about
     * the command's one path, if it has one.
     */
    private String uri(String file) {
        return Names.shown(rawUri(file));
    }

    private String rawUri(String file) {
        if (file == null) {
            return subjects.size() == 1 ? subjects.get(0).toUri() : "(unknown path)";
        }
        if (storeRoot != null && file.equals(storeRoot)) {
            return VfsPath.URI_PREFIX + "/";
        }
        if (storeRoot != null && file.startsWith(storeRoot + "/")) {
            return VfsPath.URI_PREFIX + file.substring(storeRoot.length());
        }
        if (!file.startsWith("/")) {
            return file;
        }
        return VfsPath.URI_PREFIX + inNamespace(file);
    }

    /** {@code storePath} as the namespace path of a given path, or of one inside or above one. */
    private String inNamespace(String storePath) {
        VfsPath inStore;
        try {
            inStore = VfsPath.of(storePath);
        } catch (RuntimeException notAPath) {
            return storePath;
        }
        for (VfsPath given : subjects) {
            // a namespace path already (the router's own: a missing parent of a prefix), not a store's
            if (given.equals(inStore)) {
                return storePath;
            }
        }
        for (VfsPath prefix : prefixes) {
            if (prefix.isRoot()) {
                continue;
            }
            VfsPath candidate = inStore.isRoot() ? prefix : VfsPath.of(prefix + storePath);
            for (VfsPath given : subjects) {
                if (candidate.startsWith(given) || given.startsWith(candidate)) {
                    return candidate.toString();
                }
            }
            for (java.util.Map.Entry<VfsPath, VfsPath> link : followed.entrySet()) {
                // reached through a link into another store: the store's own path (vfs:///, vfs:///x) named
                // nothing the user gave, and an agent acted on it; the path given, and where it led
                VfsPath reached = link.getKey();
                if (candidate.startsWith(reached) || reached.startsWith(candidate)) {
                    return link.getValue() + " (a symbolic link on it leads to " + VfsPath.URI_PREFIX + candidate + ")";
                }
            }
        }
        return storePath;
    }

    private static String oneLine(String s) {
        return s.replace('\n', ' ').replace('\r', ' ');
    }
}
