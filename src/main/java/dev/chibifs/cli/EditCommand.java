package dev.chibifs.cli;

import dev.chibifs.path.Names;
import dev.chibifs.path.VfsPath;
import dev.chibifs.store.ContentHash;
import dev.chibifs.store.Precondition;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;

/** {@code chibifs edit}: replace exactly one occurrence of a string in a file, as chibi's file_edit. */
@Command(name = "edit", mixinStandardHelpOptions = true,
        description = {"Replace exactly one occurrence of a string in a file (file_edit).",
            "Replace the one occurrence of --old in the file at URI with --new, and write the file"
                + " back atomically. Zero occurrences or several (overlapping ones count) change nothing and"
                + " exit 4, saying how many. The file is compared as bytes, --old and --new as UTF-8. The"
                + " read and the write are two steps: a write by someone else in between is lost, as with"
                + " chibi's file_edit, unless --if-match is given: then the write is made only if the file"
                + " is still what was read. Prints nothing on success.", HelpText.URI, HelpText.WRITER},
        footerHeading = HelpText.EXIT_HEADING,
        footer = {HelpText.OK, HelpText.NOT_FOUND, "  2  usage: a bad URI or option, or an empty --old",
            HelpText.DENIED, "  4  conflict: --old occurs zero or several times, or URI is a directory",
            ConditionOptions.MATCH_FOOTER, HelpText.IO})
final class EditCommand extends VfsCommand {

    @Option(names = "--old", paramLabel = "TEXT", required = true, description = "The text to replace; must occur exactly once.")
    String oldText;

    @Option(names = "--new", paramLabel = "TEXT", required = true, description = "The replacement (may be empty).")
    String newText;

    @Mixin
    ConditionOptions condition;

    @Parameters(index = "0", paramLabel = "URI")
    String target;

    @Override
    boolean writes() {
        return true;
    }

    @Override
    int execute() throws IOException, CommandFailure {
        if (oldText.isEmpty()) {
            throw new UsageException("--old cannot be empty: give the text to replace");
        }
        VfsPath path = uri(target);
        Precondition asked = condition.condition(null);
        lockWait(condition.lockWait);
        router().checkWrite(caller(), path);
        byte[] content = router().read(caller(), path);
        String read = ContentHash.of(content);
        if (asked.ifMatch() != null) {
            asked.check(path, read);
            // the write is conditional on what was read: nothing written in between is lost
            asked = Precondition.matching(read);
        }
        byte[] old = oldText.getBytes(StandardCharsets.UTF_8);
        int first = indexOf(content, old, 0);
        if (first < 0) {
            throw CommandFailure.conflict("'" + shown(oldText) + "' not found in " + Names.shown(path) + "; nothing changed");
        }
        int count = 1;
        for (int at = indexOf(content, old, first + 1); at >= 0; at = indexOf(content, old, at + 1)) {
            count++;
        }
        if (count > 1) {
            throw CommandFailure.conflict("'" + shown(oldText) + "' occurs " + count + " times in " + Names.shown(path)
                    + "; include more surrounding text so it matches once; nothing changed");
        }
        ByteArrayOutputStream edited = new ByteArrayOutputStream(content.length + newText.length());
        edited.write(content, 0, first);
        edited.write(newText.getBytes(StandardCharsets.UTF_8));
        edited.write(content, first + old.length, content.length - first - old.length);
        router().write(caller(), path, edited.toByteArray(), asked);
        return ExitCodes.OK;
    }

    private static int indexOf(byte[] haystack, byte[] needle, int from) {
        outer:
        for (int i = from; i <= haystack.length - needle.length; i++) {
            for (int j = 0; j < needle.length; j++) {
                if (haystack[i + j] != needle[j]) {
                    continue outer;
                }
            }
            return i;
        }
        return -1;
    }

    /** The text on one line, cut short: messages stay one line however big the edit. */
    private static String shown(String s) {
        String flat = s.replace("\n", "\\n").replace("\r", "\\r");
        return flat.length() <= 60 ? flat : flat.substring(0, 57) + "...";
    }
}
