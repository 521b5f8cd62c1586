package dev.chibifs.cli;

import dev.chibifs.path.VfsPath;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.io.IOException;

/** {@code chibifs tail}: the last lines of a file, as chibi's file_tail. */
@Command(name = "tail", mixinStandardHelpOptions = true,
        description = {"Print the last lines of a file (file_tail).",
            "Print the last N lines of the file at URI (lines end at '\\n'; a final line without"
                + " one counts), byte for byte.", HelpText.URI, HelpText.READER},
        footerHeading = HelpText.EXIT_HEADING,
        footer = {HelpText.OK, HelpText.NOT_FOUND, HelpText.USAGE, "  4  conflict: URI is a directory", HelpText.IO})
final class TailCommand extends VfsCommand {

    @Option(names = "-n", paramLabel = "N", defaultValue = "10", description = "How many lines (default: ${DEFAULT-VALUE}).")
    int count;

    @Option(names = "--json", description = "Print {uri, total, lines: [{number, text}]} as JSON (text decoded as UTF-8).")
    boolean json;

    @Parameters(index = "0", paramLabel = "URI")
    String target;

    @Override
    boolean writes() {
        return false;
    }

    @Override
    int execute() throws IOException {
        int n = LineSlice.count("-n", count);
        VfsPath path = uri(target);
        TextLines lines = TextLines.of(router().read(caller(), path));
        LineSlice.print(this, path, lines, Math.max(1, lines.count() - n + 1), lines.count(), json);
        return ExitCodes.OK;
    }
}
