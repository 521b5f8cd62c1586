package dev.chibifs.cli;

import dev.chibifs.path.VfsPath;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.io.IOException;

/** What {@code head} and {@code tail} share: -n, --json, the file; each says which N lines. */
abstract class EndLinesCommand extends VfsCommand {

    @Option(names = "-n", paramLabel = "N", defaultValue = "10",
            description = "How many lines (default: ${DEFAULT-VALUE}); for tail, +N: from line N on, as coreutils' tail.")
    String count;

    @Option(names = "--json", description = "Print {uri, total, lines: [{number, text}]} as JSON (text decoded as UTF-8).")
    boolean json;

    @Parameters(index = "0", paramLabel = "URI")
    String target;

    /** The number of the first line to print, to print {@code n} of {@code lines}. */
    abstract int first(TextLines lines, int n) throws IOException;

    /** Whether {@code -n +N} means from line N to the end (tail), rather than N lines (head, as coreutils'). */
    boolean plusCountsFromTheStart() {
        return false;
    }

    @Override
    boolean writes() {
        return false;
    }

    @Override
    int execute() throws IOException {
        boolean plus = count.startsWith("+");
        if (!count.matches("\\+?[0-9]{1,10}") || Long.parseLong(count) > Integer.MAX_VALUE) {
            throw new UsageException("invalid value for -n: '" + count + "' (a line count from 0 to " + Integer.MAX_VALUE
                    + ", or for tail +N: from line N on)");
        }
        int n = Integer.parseInt(plus ? count.substring(1) : count);
        VfsPath path = uri(target);
        try (StoreFile file = open(path)) {
            TextLines lines = TextLines.of(file);
            if (plus && plusCountsFromTheStart()) {
                LineSlice.print(this, path, lines, Math.max(1, n), Integer.MAX_VALUE, json);
                return ExitCodes.OK;
            }
            int first = first(lines, n);
            LineSlice.print(this, path, lines, first, (int) Math.min((long) first + n - 1, Integer.MAX_VALUE), json);
        }
        return ExitCodes.OK;
    }
}
