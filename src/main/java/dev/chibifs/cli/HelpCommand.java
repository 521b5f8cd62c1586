package dev.chibifs.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;

/**
 * {@code chibifs help [COMMAND...]}: picocli's help command, but following nested names, so
 * {@code chibifs help cache put} prints what {@code chibifs cache put --help} does (picocli's takes
 * one name, and printed {@code cache}'s usage, ignoring {@code put}).
 */
@Command(name = "help", helpCommand = true,
        header = "Display help information about the specified command.",
        synopsisHeading = "%nUsage: ",
        description = {"%nWhen no COMMAND is given, the usage help for the main command is displayed.",
            "If a COMMAND is specified, the help for that command is shown; a command's subcommand follows"
                + " it (help cache put).%n"})
final class HelpCommand implements CommandLine.IHelpCommandInitializable2, Runnable {

    @Option(names = {"-h", "--help"}, usageHelp = true, descriptionKey = "helpCommand.help",
            description = "Show usage help for the help command and exit.")
    boolean helpRequested;

    @Parameters(paramLabel = "COMMAND", arity = "0..*", descriptionKey = "helpCommand.command",
            description = "The COMMAND to display the usage help message for, and its subcommands' names.")
    List<String> commands = new ArrayList<>();

    private CommandLine self;
    private CommandLine.Help.ColorScheme colorScheme;
    private PrintWriter out;

    @Override
    public void init(CommandLine helpCommandLine, CommandLine.Help.ColorScheme colorScheme, PrintWriter out,
            PrintWriter err) {
        this.self = helpCommandLine;
        this.colorScheme = colorScheme;
        this.out = out;
    }

    @Override
    public void run() {
        CommandLine target = self == null ? null : self.getParent();
        if (target == null) {
            return;
        }
        for (String name : commands) {
            CommandLine sub = target.getSubcommands().get(name);
            if (sub == null) {
                // where the name was looked for, so the line says whose --help lists the names there are
                throw new CommandLine.ParameterException(target, "Unknown subcommand '" + name + "'.", null, name);
            }
            target = sub;
        }
        target.usage(out, colorScheme);
    }
}
