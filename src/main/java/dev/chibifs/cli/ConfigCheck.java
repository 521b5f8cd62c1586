package dev.chibifs.cli;

import dev.chibifs.config.ChibiConfig;
import dev.chibifs.config.ChibiHome;
import picocli.CommandLine;

import java.nio.file.Path;

/**
 * Refuses every command (help and version aside) when chibi's config.toml is malformed or names
 * a backend chibifs cannot serve, before the command does anything: the same rule chibi applies
 * at its own startup. The file is read from the home the command was given ({@code --home}), else
 * from {@code $CHIBI_HOME} or {@code ~/.chibi}.
 */
final class ConfigCheck {

    private ConfigCheck() {
    }

    static int execute(CommandLine.ParseResult parsed) {
        Integer help = CommandLine.executeHelpRequest(parsed);
        if (help != null) {
            return help;
        }
        CommandLine.ParseResult leaf = parsed;
        while (leaf.hasSubcommand()) {
            leaf = leaf.subcommand();
        }
        if (leaf != parsed) {
            Path home = leaf.matchedOptionValue("--home", null);
            try {
                ChibiConfig.load(ChibiHome.resolve(home, System.getenv()));
            } catch (RuntimeException e) {
                throw new CommandLine.ExecutionException(leaf.commandSpec().commandLine(), e.getMessage(), e);
            }
        }
        return new CommandLine.RunLast().execute(parsed);
    }
}
