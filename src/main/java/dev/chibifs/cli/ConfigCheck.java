package dev.chibifs.cli;

import dev.chibifs.config.ChibiConfig;
import dev.chibifs.config.ChibiHome;
import picocli.CommandLine;

import java.nio.file.Path;
import java.util.Map;

/**
 * Refuses every command that works on chibi's home (help and version aside) when chibi's
 * config.toml is malformed or names a backend chibifs cannot serve, before the command does
 * anything: the same rule chibi applies at its own startup. The file is read from the home the
 * command was given ({@code --home}), else from {@code $CHIBI_HOME} or {@code ~/.chibi}.
 */
final class ConfigCheck {

    /**
     * A command that reads no config.toml: it acts on mounts already running (umount, status, stats,
     * trace, sync), or handles a bad file itself (doctor reports it; cache put must print its input
     * first). Refusing it over a file it never reads
     * would leave a mount that cannot be unmounted, or diagnosed, by chibifs until the file is fixed.
     */
    interface Exempt {
    }

    private ConfigCheck() {
    }

    static int execute(CommandLine.ParseResult parsed, Map<String, String> env) {
        Integer help = CommandLine.executeHelpRequest(parsed);
        if (help != null) {
            return help;
        }
        CommandLine.ParseResult leaf = parsed;
        while (leaf.hasSubcommand()) {
            leaf = leaf.subcommand();
        }
        if (leaf != parsed && !(leaf.commandSpec().userObject() instanceof Exempt)) {
            Path home = leaf.matchedOptionValue("--home", null);
            try {
                ChibiConfig.load(ChibiHome.resolve(home, env));
            } catch (RuntimeException e) {
                throw new CommandLine.ExecutionException(leaf.commandSpec().commandLine(), e.getMessage(), e);
            }
        }
        return new CommandLine.RunLast().execute(parsed);
    }
}
