package dev.chibifs.cli;

import dev.chibifs.path.VfsPath;
import dev.chibifs.store.Entry;
import dev.chibifs.store.EntryKind;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.io.IOException;
import java.nio.file.NoSuchFileException;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;

/** {@code chibifs grep}: lines matching a regular expression in a file or a directory tree, as chibi's file_grep. */
@Command(name = "grep", mixinStandardHelpOptions = true,
        description = {"Search a file or directory tree with a regex (file_grep).",
            "Print the lines of URI that match PATTERN (a java.util.regex expression, found anywhere"
                + " in the line), each as URI:LINE, or URI:NUMBER:LINE with -n. A directory is searched"
                + " recursively, entries in name order, dotfiles included; symbolic links are not followed."
                + " Binary files (a NUL byte in the first 8 KiB) are skipped, and so are chibifs's"
                + " in-flight temporary files. Lines end at '\\n' and are read as UTF-8.",
            HelpText.URI, HelpText.READER},
        footerHeading = HelpText.EXIT_HEADING,
        footer = {HelpText.OK + ": at least one line matched", HelpText.NO_MATCH,
            "  2  usage: a bad URI, option or PATTERN", HelpText.IO})
final class GrepCommand extends VfsCommand {

    @Option(names = "-i", description = "Ignore case (Unicode-aware).")
    boolean ignoreCase;

    @Option(names = "-n", description = "Prefix each line with its 1-based line number.")
    boolean numbers;

    @Option(names = "--json", description = "Print {pattern, matches: [{uri, line, text}]} as JSON.")
    boolean json;

    @Parameters(index = "0", paramLabel = "PATTERN")
    String pattern;

    @Parameters(index = "1", paramLabel = "URI", description = "A file, or a directory to search recursively.")
    String target;

    record Match(String uri, int line, String text) {
    }

    record Matches(String pattern, List<Match> matches) {
    }

    private final List<Match> matches = new ArrayList<>();
    private int matched;

    @Override
    boolean writes() {
        return false;
    }

    @Override
    int execute() throws IOException {
        Pattern regex;
        try {
            regex = Pattern.compile(pattern, ignoreCase ? Pattern.CASE_INSENSITIVE | Pattern.UNICODE_CASE : 0);
        } catch (PatternSyntaxException e) {
            throw new UsageException("invalid PATTERN '" + pattern + "': " + e.getDescription()
                    + " near index " + e.getIndex() + " (java.util.regex syntax)");
        }
        VfsPath path = uri(target);
        if (router().metadata(caller(), path).isDirectory()) {
            searchTree(regex, path);
        } else if (!searchFile(regex, path)) {
            spec.commandLine().getErr().println("chibifs grep: " + path.toUri() + ": binary file, not searched");
        }
        if (json) {
            printJson(new Matches(pattern, matches));
        }
        return matched > 0 ? ExitCodes.OK : ExitCodes.NOT_FOUND;
    }

    private void searchTree(Pattern regex, VfsPath dir) throws IOException {
        List<Entry> entries;
        try {
            entries = router().list(caller(), dir);
        } catch (NoSuchFileException vanished) {
            return;
        }
        for (Entry e : entries) {
            VfsPath child = dir.child(e.name());
            if (e.kind() == EntryKind.DIRECTORY) {
                searchTree(regex, child);
            } else if (e.kind() == EntryKind.FILE) {
                try {
                    searchFile(regex, child);
                } catch (NoSuchFileException vanished) {
                    // removed while we walked: nothing to search
                }
            }
        }
    }

    /** Searches one file; false when it is binary and was skipped. */
    private boolean searchFile(Pattern regex, VfsPath file) throws IOException {
        byte[] content = router().read(caller(), file);
        if (TextLines.isBinary(content)) {
            return false;
        }
        TextLines lines = TextLines.of(content);
        for (int n = 1; n <= lines.count(); n++) {
            String text = lines.text(n);
            if (regex.matcher(text).find()) {
                matched++;
                if (json) {
                    matches.add(new Match(file.toUri(), n, text));
                } else {
                    println(file.toUri() + ":" + (numbers ? n + ":" : "") + text);
                }
            }
        }
        return true;
    }
}
