package dev.chibifs.cli;

import dev.chibifs.cache.ToolCache;
import dev.chibifs.config.ChibiHome;
import dev.chibifs.policy.ContextNames;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.util.OptionalInt;
import java.util.concurrent.Callable;

/** {@code chibifs cache clear}: removes every entry of one context. */
@Command(name = "clear", mixinStandardHelpOptions = true,
        description = "Remove all of one context's tool cache entries.")
final class CacheClearCommand implements Callable<Integer> {

    @Option(names = "--context", required = true, paramLabel = "NAME", description = "The context whose entries go.")
    String context;

    @Mixin
    HomeOption home;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() throws IOException, CommandFailure {
        ContextNames.validate(context);
        ChibiHome chibiHome = home.resolve();
        ToolCache cache = CacheStores.openExisting(chibiHome);
        String dir = ToolCache.directoryOf(context).toUri();
        OptionalInt removed;
        try {
            removed = cache == null ? OptionalInt.empty() : cache.clear(context);
        } catch (IOException e) {
            throw CacheStores.couldNotRemove("context " + context + "'s tool cache " + ToolCache.printable(dir),
                    chibiHome, e);
        }
        // the whole directory goes, subdirectories too: say so, and count files, not only what looks like an entry
        spec.commandLine().getOut().println(removed.isEmpty() ? "no tool cache for context " + context + " (" + dir + ")"
                : "removed " + dir + " with the " + removed.getAsInt() + " file" + (removed.getAsInt() == 1 ? "" : "s")
                + " in it");
        spec.commandLine().getOut().flush();
        return ExitCodes.OK;
    }
}
