package dev.chibifs.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/** {@code chibifs cache}: the tool-output cache in /sys/tool_cache, worked on in the store directly. */
@Command(name = "cache", mixinStandardHelpOptions = true,
        description = "Store large tool outputs in /sys/tool_cache and list, clean or clear them.",
        subcommands = {
            CachePutCommand.class,
            CacheLsCommand.class,
            CacheCleanCommand.class,
            CacheClearCommand.class,
        })
public final class CacheCommand implements Runnable {

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        spec.commandLine().usage(spec.commandLine().getErr());
    }
}
