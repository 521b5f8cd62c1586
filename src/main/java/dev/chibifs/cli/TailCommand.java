package dev.chibifs.cli;

import picocli.CommandLine.Command;

import java.io.IOException;

/** {@code chibifs tail}: the last lines of a file, as chibi's file_tail. */
@Command(name = "tail", mixinStandardHelpOptions = true,
        description = {"Print the last lines of a file (file_tail).",
            "Print the last N lines of the file at URI (lines end at '\\n'; a final line without"
                + " one counts), byte for byte.", HelpText.URI, HelpText.READER},
        footerHeading = HelpText.EXIT_HEADING,
        footer = {HelpText.OK, HelpText.NOT_FOUND, HelpText.USAGE, "  4  conflict: URI is a directory", HelpText.IO})
final class TailCommand extends EndLinesCommand {

    @Override
    int first(TextLines lines, int n) throws IOException {
        return Math.max(1, lines.count() - n + 1);
    }

    @Override
    boolean plusCountsFromTheStart() {
        return true;
    }
}
