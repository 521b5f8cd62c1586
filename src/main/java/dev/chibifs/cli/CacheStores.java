package dev.chibifs.cli;

import dev.chibifs.cache.ToolCache;
import dev.chibifs.config.ChibiHome;
import dev.chibifs.router.Namespace;
import dev.chibifs.sys.Umask;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.util.List;

/** Opens the tool cache of a home's store directly, with or without a mount. */
final class CacheStores {


    private CacheStores() {
    }

    /** The cache, creating the store when absent (for writing). */
    static ToolCache open(ChibiHome home) throws IOException {
        return new ToolCache(Namespace.open(home, List.of(), null).router(), Clock.systemUTC());
    }

    /**
     * The cache for {@code cache put}, whose entries get the mode chibi's get: chibi writes them with
     * Rust's default, 0666 less the umask of whoever runs it, and so does this command.
     */
    static ToolCache openForPut(ChibiHome home) throws IOException {
        Namespace ns = Namespace.open(home, List.of(), null);
        ns.rootStore().ifPresent(s -> s.newFileMode(Umask.chibisFileMode()));
        return new ToolCache(ns.router(), Clock.systemUTC());
    }

    /**
     * The failure of removing {@code what} from {@code home}'s store: whose cache it was, and why
     * ({@link #whyNotRemoved}).
     */
    static CommandFailure couldNotRemove(String what, ChibiHome home, IOException e) {
        return new CommandFailure(ExitCodes.FAILURE, "could not remove " + what + ": " + whyNotRemoved(home, e));
    }

    /**
     * Why the store did not let something of the tool cache go: where the operating system refused,
     * which part of the store is another user's and who may change it (a bare "Permission denied"
     * named neither, nor that the cache commands, unlike the vfs commands, write the store as whoever
     * runs them). The part is the directory that was to change, or the nearest above it that is not
     * its runner's: naming the store's root told its very owner that they were not, when root (a
     * daemon, sudo) had made a directory inside. The store's root where no such part is found.
     */
    static String whyNotRemoved(ChibiHome home, Exception e) {
        if (!(e instanceof IOException io) || (dev.chibifs.sys.Errors.errno(io) != dev.chibifs.sys.Linux.EACCES
                && dev.chibifs.sys.Errors.errno(io) != dev.chibifs.sys.Linux.EPERM)) {
            return ToolCache.describe(e);
        }
        Path store = home.store().toAbsolutePath();
        Path part = refusedPart(store, io);
        String named = part == null ? "the store " + store + owner(store)
                : "the store's directory " + ToolCache.printable("vfs:///" + store.relativize(part)) + owner(part);
        return named + " is not writable by uid " + MountRegistry.currentUid() + " (the operating system"
                + " refused: the cache commands write the store directly, as the user who runs them; run them as"
                + " its owner): " + ToolCache.describe(e);
    }

    /** The directory below {@code store} that refused the change {@code e} names: not its runner's, or not writable by them; null where none is. */
    private static Path refusedPart(Path store, IOException e) {
        String file = e instanceof java.nio.file.FileSystemException f ? f.getFile() : null;
        if (file == null || !file.startsWith("/")) {
            return null;
        }
        Path named = store.resolve(file.substring(1)).normalize();
        Path dir = Files.isDirectory(named, java.nio.file.LinkOption.NOFOLLOW_LINKS) ? named : named.getParent();
        int me = MountRegistry.currentUid();
        for (; dir != null && dir.startsWith(store) && !dir.equals(store); dir = dir.getParent()) {
            try {
                if ((Integer) Files.getAttribute(dir, "unix:uid", java.nio.file.LinkOption.NOFOLLOW_LINKS) != me
                        || !Files.isWritable(dir)) {
                    return dir;
                }
            } catch (java.nio.file.NoSuchFileException gone) {
                // removed meanwhile, or never there: what holds it is asked
            } catch (IOException | RuntimeException unreadable) {
                return null;
            }
        }
        return null;
    }

    /** " (owned by uid N)" for {@code path}, or "" where its owner cannot be read. */
    private static String owner(Path path) {
        try {
            return " (owned by uid " + Files.getAttribute(path, "unix:uid") + ")";
        } catch (IOException | RuntimeException unreadable) {
            return "";
        }
    }

    /**
     * The cache, or null where the home is chibi's but has no store yet (reading and cleaning never
     * create one). A home that is not there, or holds neither a store nor a config.toml, is refused
     * (exit 1, as the vfs commands refuse a home with no store): a mistyped --home listed, cleaned
     * and cleared an empty cache, exit 0, which a script could not tell from a real one.
     */
    static ToolCache openExisting(ChibiHome home) throws IOException, CommandFailure {
        if (Files.isDirectory(home.store())) {
            return open(home);
        }
        Path dir = home.dir().toAbsolutePath();
        if (!Files.isDirectory(dir)) {
            throw new CommandFailure(ExitCodes.NOT_FOUND, HomeOption.missing(dir));
        }
        if (!Files.exists(home.configFile())) {
            throw new CommandFailure(ExitCodes.NOT_FOUND, dir + " is not a chibi home (it has no store, "
                    + home.store().getFileName() + "/, and no " + home.configFile().getFileName()
                    + ": is --home or $CHIBI_HOME right?)");
        }
        return null;
    }
}
