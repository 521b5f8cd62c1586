package dev.chibifs.cli;

import dev.chibifs.cache.ToolCache;
import dev.chibifs.config.ChibiHome;
import dev.chibifs.router.Namespace;
import dev.chibifs.sys.ProcStatus;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.util.List;
import java.util.Optional;

/** Opens the tool cache of a home's store directly, with or without a mount. */
final class CacheStores {

    private static final int DEFAULT_UMASK = 022;

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
        ns.rootStore().ifPresent(s -> s.newFileMode(0666 & ~umask()));
        return new ToolCache(ns.router(), Clock.systemUTC());
    }

    /** This process's umask, from /proc (reading it with umask(2) would change it for a moment); 022 when not there. */
    static int umask() {
        try {
            Optional<String> umask = ProcStatus.field(ProcStatus.SELF, "Umask");
            if (umask.isPresent()) {
                return Integer.parseInt(umask.get(), 8) & 0777;
            }
        } catch (IOException | NumberFormatException e) {
            // an older kernel has no Umask line; the common umask then
        }
        return DEFAULT_UMASK;
    }

    /** The cache, or null when the store does not exist: reading and cleaning never create one. */
    static ToolCache openExisting(ChibiHome home) throws IOException {
        return Files.isDirectory(home.store()) ? open(home) : null;
    }
}
