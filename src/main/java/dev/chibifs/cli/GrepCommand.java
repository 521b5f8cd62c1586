package dev.chibifs.cli;

import com.fasterxml.jackson.core.JsonGenerator;
import dev.chibifs.path.Names;
import dev.chibifs.path.VfsPath;
import dev.chibifs.store.EntryKind;
import dev.chibifs.sys.Errors;
import dev.chibifs.sys.Linux;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.NoSuchFileException;
import java.util.List;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;

/** {@code chibifs grep}: lines matching a regular expression in a file or a directory tree, as chibi's file_grep. */
@Command(name = "grep", mixinStandardHelpOptions = true,
        description = {"Search a file or directory tree with a regex (file_grep).",
            "Print the lines of URI that match PATTERN (a java.util.regex expression, found anywhere"
                + " in the line), each as URI:LINE, or URI:NUMBER:LINE with -n. A directory is searched"
                + " recursively, entries in name order, dotfiles included; symbolic links inside it are not followed."
                + " Binary files (a NUL byte in the first 8 KiB) are skipped, and so are chibifs's"
                + " in-flight temporary files. Lines end at '\\n' alone ('$' matches only there) and are read"
                + " as UTF-8 (a byte that is not is U+FFFD to PATTERN); a line is printed as its bytes.",
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

    private JsonGenerator jsonOut;
    private int matched;
    private boolean skipped;

    @Override
    boolean writes() {
        return false;
    }

    @Override
    int execute() throws IOException {
        Pattern regex;
        try {
            // UNIX_LINES: a line ends at '\n' alone, as GNU grep's does, so '$' does not match before a
            // '\r' (or U+0085, U+2028) ending a CRLF line, and '.' matches that '\r'
            regex = Pattern.compile(pattern, Pattern.UNIX_LINES
                    | (ignoreCase ? Pattern.CASE_INSENSITIVE | Pattern.UNICODE_CASE : 0));
        } catch (PatternSyntaxException e) {
            throw new UsageException("invalid PATTERN '" + pattern + "': " + e.getDescription()
                    + " near index " + e.getIndex() + " (java.util.regex syntax)");
        }
        VfsPath path = followedUri(target);
        boolean directory = router().metadata(caller(), path).isDirectory();
        if (json) {
            // written as found: a match's line can be as long as its file
            jsonOut = jsonGenerator();
            jsonOut.writeStartObject();
            jsonOut.writeStringField("pattern", pattern);
            jsonOut.writeArrayFieldStart("matches");
        }
        try {
            if (directory) {
                searchTree(regex, path);
            } else if (!searchFile(regex, path)) {
                note(Names.shown(path) + ": binary file, not searched");
            }
        } catch (OutputFailure e) {
            throw e.io();
        }
        if (json) {
            jsonOut.writeEndArray();
            jsonOut.writeEndObject();
            jsonOut.close();
            out().write('\n');
        }
        if (skipped) {
            // as GNU grep: a file that could not be searched is an error, whatever matched elsewhere
            return ExitCodes.IO_ERROR;
        }
        return matched > 0 ? ExitCodes.OK : ExitCodes.NOT_FOUND;
    }

    private void note(String message) throws IOException {
        out().flush();
        spec.commandLine().getErr().println(ErrorHandler.PREFIX + message);
        spec.commandLine().getErr().flush();
    }

    private void searchTree(Pattern regex, VfsPath dir) throws IOException {
        List<Listed> entries;
        try {
            entries = entries(dir);
        } catch (NoSuchFileException vanished) {
            return;
        }
        for (Listed e : entries) {
            if (!e.reachable()) {
                // one name of other bytes than UTF-8 (made in the store directly) does not stop the rest
                note(Names.shown(dir) + "/" + e.shown() + ": name is not UTF-8, not searched");
                skipped = true;
                continue;
            }
            VfsPath child = dir.child(e.name());
            try {
                if (e.kind() == EntryKind.DIRECTORY) {
                    searchTree(regex, child);
                } else if (e.kind() == EntryKind.FILE) {
                    searchFile(regex, child);
                }
            } catch (NoSuchFileException vanished) {
                // removed while we walked: nothing to search
            } catch (IOException failed) {
                // one file or directory that cannot be read does not stop the rest, as GNU grep -r goes on
                note(Errors.errno(failed) == Linux.EILSEQ
                        ? Names.shown(child) + ": the store does not take this name (it holds U+FFFD), not searched"
                        : failure(failed).message() + " (not searched)");
                skipped = true;
            }
        }
    }

    /** Searches one file, a line at a time; false when it is binary and was skipped. */
    private boolean searchFile(Pattern regex, VfsPath file) throws IOException {
        try (StoreFile f = open(file)) {
            if (f.binary()) {
                return false;
            }
            byte[] prefix = (Names.shown(file) + ":").getBytes(StandardCharsets.UTF_8);
            int n = 0;
            for (StoreFile.Line line = f.line(0); line != null; line = f.line(line.next())) {
                n++;
                byte[] bytes = f.bytes(line);
                boolean ascii = ascii(bytes);
                // an ASCII line is matched where it lies, not copied into a String: one line can be the whole file
                CharSequence text = ascii ? new AsciiText(bytes) : new String(bytes, StandardCharsets.UTF_8);
                if (!regex.matcher(text).find()) {
                    continue;
                }
                matched++;
                try {
                    printMatch(file, prefix, n, bytes, ascii, text);
                } catch (IOException e) {
                    throw new OutputFailure(e);
                }
            }
        }
        return true;
    }

    /** One matching line, as the options say. */
    private void printMatch(VfsPath file, byte[] prefix, int n, byte[] bytes, boolean ascii, CharSequence text)
            throws IOException {
        if (json) {
            jsonOut.writeStartObject();
            jsonOut.writeStringField("uri", file.toUri());
            jsonOut.writeNumberField("line", n);
            jsonOut.writeFieldName("text");
            if (ascii) {
                jsonOut.writeUTF8String(bytes, 0, bytes.length);
            } else {
                jsonOut.writeString(text.toString());
            }
            jsonOut.writeEndObject();
            return;
        }
        OutputStream out = out();
        out.write(prefix);
        if (numbers) {
            out.write((n + ":").getBytes(StandardCharsets.US_ASCII));
        }
        // the line's own bytes, as GNU grep prints them: its text has U+FFFD for each byte that is not UTF-8
        byte[] shown = bytes;
        // in pieces: a write of n bytes to a file descriptor copies all n into native memory first
        for (int at = 0; at < shown.length; at += StoreFile.CHUNK) {
            out.write(shown, at, Math.min(StoreFile.CHUNK, shown.length - at));
        }
        out.write('\n');
    }

    /**
     * A failure writing the output, carried past {@link #searchTree}'s handling of a file that
     * cannot be read: the search goes on past such a file, never past its own output failing.
     */
    private static final class OutputFailure extends RuntimeException {
        private static final long serialVersionUID = 1L;

        OutputFailure(IOException cause) {
            super(cause);
        }

        IOException io() {
            return (IOException) getCause();
        }
    }

    private static boolean ascii(byte[] bytes) {
        for (byte b : bytes) {
            if (b < 0) {
                return false;
            }
        }
        return true;
    }

    /** ASCII bytes as the characters they are, without a copy. */
    private record AsciiText(byte[] bytes) implements CharSequence {

        @Override
        public int length() {
            return bytes.length;
        }

        @Override
        public char charAt(int index) {
            return (char) bytes[index];
        }

        @Override
        public CharSequence subSequence(int start, int end) {
            return new String(bytes, start, end - start, StandardCharsets.US_ASCII);
        }

        @Override
        public String toString() {
            return new String(bytes, StandardCharsets.US_ASCII);
        }
    }
}
