package dev.chibifs.cli;

import dev.chibifs.path.VfsPath;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.io.IOException;

/** {@code chibifs lines}: a range of lines of a file, as chibi's file_lines. */
@Command(name = "lines", mixinStandardHelpOptions = true,
        description = {"Print a range of lines of a file (file_lines).",
            "Print lines START to END (1-based, inclusive) of the file at URI, byte for byte."
                + " An END past the last line stops at the last line; a START past it prints nothing.",
            HelpText.URI, HelpText.READER},
        footerHeading = HelpText.EXIT_HEADING,
        footer = {HelpText.OK, HelpText.NOT_FOUND, "  2  usage: a bad URI or option, START < 1 or END < START",
            "  4  conflict: URI is a directory", HelpText.IO})
final class LinesCommand extends VfsCommand {

    @Option(names = "--json", description = "Print {uri, total, lines: [{number, text}]} as JSON (text decoded as UTF-8).")
    boolean json;

    @Parameters(index = "0", paramLabel = "URI")
    String target;

    // long: an END past any file's line count (which is an int) is a range that stops at the end, not a usage error
    @Parameters(index = "1", paramLabel = "START", description = "First line, 1 or more.")
    long start;

    @Parameters(index = "2", paramLabel = "END", description = "Last line, START or more.")
    long end;

    @Override
    boolean writes() {
        return false;
    }

    @Override
    int execute() throws IOException {
        if (start < 1) {
            throw new UsageException("invalid START '" + start + "': lines are numbered from 1");
        }
        if (end < start) {
            throw new UsageException("invalid range " + start + ".." + end + ": END must be START or more");
        }
        VfsPath path = followedUri(target);
        try (StoreFile file = open(path)) {
            TextLines lines = TextLines.of(file);
            LineSlice.print(this, path, lines, (int) Math.min(start, Integer.MAX_VALUE),
                    (int) Math.min(end, Integer.MAX_VALUE), json);
        }
        return ExitCodes.OK;
    }
}
