package dev.chibifs.cli;

import dev.chibifs.path.VfsPath;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.io.IOException;

/** What {@code head} and {@code tail} share: -n, --json, the file; each says which N lines. */
abstract class EndLinesCommand extends VfsCommand {

    @Option(names = "-n", paramLabel = "N",
            description = "How many lines (default: 10); as coreutils': for tail, +N from line N on;"
                    + " for head, -N all but the last N. The old form -N before URI (head -3) is -n N.")
    String count;

    @Option(names = "--json", description = "Print {uri, total, lines: [{number, text}]} as JSON (text decoded as UTF-8).")
    boolean json;

    /**
     * URI, or the old form {@code -N URI}, which picocli passes as two parameters (no option is named -3);
     * the usage shows the one URI, since a second is refused.
     */
    @Parameters(arity = "1..2", paramLabel = "URI", hideParamSyntax = true)
    java.util.List<String> parameters;

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
        String target = parameters.get(parameters.size() - 1);
        if (parameters.size() == 2) {
            String old = parameters.get(0);
            if (!old.matches("-[0-9]+") || count != null) {
                throw new UsageException("unexpected '" + old + "' before " + target + " (one URI; a count is -n N)");
            }
            count = old.substring(1);
        }
        if (count == null) {
            count = "10";
        }
        char sign = count.isEmpty() ? ' ' : count.charAt(0);
        String digits = sign == '+' || sign == '-' ? count.substring(1) : count;
        if (!digits.matches("[0-9]{1,10}") || Long.parseLong(digits) > Integer.MAX_VALUE) {
            throw new UsageException("invalid value for -n: '" + count + "' (a line count from 0 to " + Integer.MAX_VALUE
                    + ", or for tail +N: from line N on, for head -N: all but the last N)");
        }
        int n = Integer.parseInt(digits);
        VfsPath path = followedUri(target);
        try (StoreFile file = open(path)) {
            TextLines lines = TextLines.of(file);
            if (sign == '+' && plusCountsFromTheStart()) {
                LineSlice.print(this, path, lines, Math.max(1, n), Integer.MAX_VALUE, json);
                return ExitCodes.OK;
            }
            if (sign == '-' && !plusCountsFromTheStart()) { // head -n -N, as coreutils'; tail's -N is N
                LineSlice.print(this, path, lines, 1, Math.max(0, lines.count() - n), json);
                return ExitCodes.OK;
            }
            int first = first(lines, n);
            LineSlice.print(this, path, lines, first, (int) Math.min((long) first + n - 1, Integer.MAX_VALUE), json);
        }
        return ExitCodes.OK;
    }
}
