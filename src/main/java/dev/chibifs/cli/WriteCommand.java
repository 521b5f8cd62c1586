package dev.chibifs.cli;

import dev.chibifs.path.VfsPath;
import dev.chibifs.store.Precondition;
import dev.chibifs.sys.IsDirectoryException;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.io.IOException;
import java.nio.charset.StandardCharsets;

/** {@code chibifs write}: create or replace a file atomically, as chibi's write_file. */
@Command(name = "write", mixinStandardHelpOptions = true,
        description = {"Create or replace a file atomically (write_file).",
            "Create or replace the file at URI with --content, else with standard input. Atomic:"
                + " readers see the old content or the new, never a mix. Missing parent directories are"
                + " created. Prints nothing on success.", HelpText.URI, HelpText.WRITER},
        footerHeading = HelpText.EXIT_HEADING,
        footer = {HelpText.OK, HelpText.USAGE, HelpText.DENIED,
            "  4  conflict: URI is a directory, or a file is in the way of its parent",
            ConditionOptions.FOOTER, HelpText.IO})
final class WriteCommand extends VfsCommand {

    @Option(names = "--content", paramLabel = "TEXT", description = "The new content (UTF-8); without it, standard input.")
    String content;

    @Mixin
    ConditionOptions condition;

    @Parameters(index = "0", paramLabel = "URI")
    String target;

    @Override
    boolean writes() {
        return true;
    }

    @Override
    int execute() throws IOException {
        VfsPath path = uri(target);
        Precondition asked = condition.condition();
        lockWait(condition.lockWait);
        // policy before anything else, so a denied write neither waits for stdin nor names a conflict
        router().checkWrite(caller(), path);
        rejectDirectory(this, path);
        byte[] data = content != null ? content.getBytes(StandardCharsets.UTF_8) : terminal.in().readAllBytes();
        createParent(path);
        router().write(caller(), path, data, asked);
        return ExitCodes.OK;
    }

    /** A file write aimed at a directory is a conflict (the store would otherwise fail obscurely). */
    static void rejectDirectory(VfsCommand command, VfsPath path) throws IOException {
        if (command.router().exists(command.caller(), path)
                && command.router().metadata(command.caller(), path).isDirectory()) {
            throw new IsDirectoryException(path.toString());
        }
    }
}
