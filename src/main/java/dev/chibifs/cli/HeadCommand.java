package dev.chibifs.cli;

import picocli.CommandLine.Command;

/** {@code chibifs head}: the first lines of a file, as chibi's file_head. */
@Command(name = "head", mixinStandardHelpOptions = true,
        description = {"Print the first lines of a file (file_head).",
            "Print the first N lines of the file at URI (lines end at '\\n'), byte for byte.",
            HelpText.URI, HelpText.READER},
        footerHeading = HelpText.EXIT_HEADING,
        footer = {HelpText.OK, HelpText.NOT_FOUND, HelpText.USAGE, "  4  conflict: URI is a directory", HelpText.IO})
final class HeadCommand extends EndLinesCommand {

    @Override
    int first(TextLines lines, int n) {
        return 1;
    }
}
