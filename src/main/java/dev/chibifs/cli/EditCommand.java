package dev.chibifs.cli;

import dev.chibifs.path.Names;
import dev.chibifs.path.VfsPath;
import dev.chibifs.store.ContentHash;
import dev.chibifs.store.Precondition;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.io.IOException;
import java.nio.charset.StandardCharsets;

/** {@code chibifs edit}: replace exactly one occurrence of a string in a file, as chibi's file_edit. */
@Command(name = "edit", mixinStandardHelpOptions = true,
        description = {"Replace exactly one occurrence of a string in a file (file_edit).",
            "Replace the one occurrence of --old in the file at URI with --new, and write the file"
                + " back atomically. Zero occurrences or several (overlapping ones count) change nothing and"
                + " exit 4, saying how many. The file is compared as bytes, --old and --new as UTF-8. The"
                + " file is read while holding its locks, as write and append wait for them: a change"
                + " another process makes under a lock while this waits is kept. With --if-match the"
                + " write is made only if the file is what was read. Prints nothing on success.", HelpText.URI, HelpText.WRITER},
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
        VfsPath path = followedUri(target);
        Precondition asked = condition.condition(null);
        lockWait(condition.lockWait);
        router().checkWrite(caller(), path);
        byte[] old = oldText.getBytes(StandardCharsets.UTF_8);
        byte[] replacement = newText.getBytes(StandardCharsets.UTF_8);
        try {
            // the store reads the file under the locks its write waits for: a change made meanwhile is kept
            router().rewrite(caller(), path, content -> edited(content, old, replacement, path), asked);
        } catch (NotOnce e) {
            throw e.failure;
        }
        return ExitCodes.OK;
    }

    /** The content with its one occurrence of {@code old} replaced; {@link NotOnce} when there is none or several. */
    private byte[] edited(byte[] content, byte[] old, byte[] replacement, VfsPath path) throws NotOnce {
        int first = indexOf(content, old, 0);
        if (first < 0) {
            throw new NotOnce(CommandFailure.conflict("'" + shown(oldText) + "' not found in " + Names.shown(path)
                    + "; nothing changed"));
        }
        int count = 1;
        for (int at = indexOf(content, old, first + 1); at >= 0; at = indexOf(content, old, at + 1)) {
            count++;
        }
        if (count > 1) {
            throw new NotOnce(CommandFailure.conflict("'" + shown(oldText) + "' occurs " + count + " times in "
                    + Names.shown(path) + "; include more surrounding text so it matches once; nothing changed"));
        }
        // made in place: a ByteArrayOutputStream's toByteArray held the result twice beside the content
        byte[] edited = new byte[content.length - old.length + replacement.length];
        System.arraycopy(content, 0, edited, 0, first);
        System.arraycopy(replacement, 0, edited, first, replacement.length);
        System.arraycopy(content, first + old.length, edited, first + replacement.length, content.length - first - old.length);
        return edited;
    }

    /** Carries the conflict out of the store's rewrite, which fails only as I/O does. */
    private static final class NotOnce extends IOException {
        private static final long serialVersionUID = 1L;
        private final transient CommandFailure failure;

        NotOnce(CommandFailure failure) {
            super(failure.getMessage());
            this.failure = failure;
        }
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
