package dev.chibifs.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;

import java.util.concurrent.Callable;

/** {@code chibifs cache}: the tool-output cache in /sys/tool_cache, worked on in the store directly. */
@Command(name = "cache", mixinStandardHelpOptions = true,
        description = "Store large tool outputs in /sys/tool_cache and list, clean or clear them.",
        subcommands = {
            CachePutCommand.class,
            CacheLsCommand.class,
            CacheCleanCommand.class,
            CacheClearCommand.class,
        })
final class CacheCommand implements Callable<Integer>, ConfigCheck.Exempt {

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    /** Without a subcommand there is nothing to do: the usage, and exit 2 as for any usage error. */
    @Override
    public Integer call() {
        spec.commandLine().usage(spec.commandLine().getErr());
        return ExitCodes.USAGE;
    }
}
