package dev.chibifs.cli;

import dev.chibifs.cache.ToolCache;
import dev.chibifs.config.ChibiHome;
import dev.chibifs.router.Namespace;

import java.io.IOException;
import java.nio.file.Files;
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

    /** The cache, or null when the store does not exist: reading and cleaning never create one. */
    static ToolCache openExisting(ChibiHome home) throws IOException {
        return Files.isDirectory(home.store()) ? open(home) : null;
    }
}
