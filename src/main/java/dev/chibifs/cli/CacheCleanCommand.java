package dev.chibifs.cli;

import dev.chibifs.cache.ToolCache;
import dev.chibifs.config.ChibiConfig;
import dev.chibifs.path.VfsPath;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;

/** {@code chibifs cache clean}: one sweep, removing entries older than the age limit. */
@Command(name = "clean", mixinStandardHelpOptions = true,
        description = "Remove tool cache entries last modified more than the age limit (+ 1 day) ago, once.")
final class CacheCleanCommand implements Callable<Integer> {

    @Option(names = "--max-age-days", paramLabel = "N",
            description = "Read as chibi's tool_cache_max_age_days: entries last modified more than N + 1 days ago go"
                    + " (default: tool_cache_max_age_days from config.toml, else 7, so 8 days).")
    Long maxAgeDays;

    @Mixin
    HomeOption home;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() throws IOException, CommandFailure {
        if (maxAgeDays != null && maxAgeDays < 0) {
            throw new UsageException("--max-age-days must be 0 or more, not " + maxAgeDays);
        }
        long days = maxAgeDays != null ? maxAgeDays : ChibiConfig.load(home.resolve()).toolCacheMaxAgeDays();
        dev.chibifs.config.ChibiHome chibiHome = home.resolve();
        ToolCache cache = CacheStores.openExisting(chibiHome);
        List<String> failed = new java.util.ArrayList<>();
        Duration expiry = ToolCache.expiry(days);
        List<VfsPath> removed = cache == null ? List.of() : cache.removeOlderThan(expiry, () -> false,
                (p, e) -> failed.add(ToolCache.printable(p.toUri()) + " (" + CacheStores.whyNotRemoved(chibiHome, e) + ")"));
        PrintWriter out = spec.commandLine().getOut();
        for (VfsPath p : removed) {
            out.println("removed " + ToolCache.printable(p.toUri()));
        }
        // the age the sweep used, not the setting: chibi removes only what is a day older than it says
        // days + 1 as chibi counts, which for the largest setting is past what a long holds
        java.math.BigInteger olderThan = java.math.BigInteger.valueOf(days).add(java.math.BigInteger.ONE);
        out.println("removed " + removed.size() + " tool cache entr" + (removed.size() == 1 ? "y" : "ies")
                + " older than " + olderThan + " day" + (olderThan.equals(java.math.BigInteger.ONE) ? "" : "s")
                + " (max age " + days + " + 1, as chibi counts)");
        out.flush();
        if (!failed.isEmpty()) {
            // the cache commands change the store as whoever runs them, who may not own it
            throw new CommandFailure(ExitCodes.FAILURE, "could not check or remove " + failed.size() + " entr"
                    + (failed.size() == 1 ? "y: " : "ies, the first: ") + failed.get(0));
        }
        return ExitCodes.OK;
    }
}
