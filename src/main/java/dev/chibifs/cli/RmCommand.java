package dev.chibifs.cli;

import dev.chibifs.path.VfsPath;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.io.IOException;

/** {@code chibifs rm}: remove a file, or with -r a directory and everything below it, as chibi's vfs_delete. */
@Command(name = "rm", mixinStandardHelpOptions = true,
        description = {"Remove a file, or a directory with -r (vfs_delete).",
            "Remove the file at URI; a directory (empty or not) needs -r and is removed with"
                + " everything below it. Zone roots (/shared, /home, /home/<NAME>, /sys) are SYSTEM's to"
                + " remove. Prints nothing on success.", HelpText.URI, HelpText.WRITER},
        footerHeading = HelpText.EXIT_HEADING,
        footer = {HelpText.OK, HelpText.NOT_FOUND, HelpText.USAGE, HelpText.DENIED,
            "  4  conflict: URI is a directory and -r was not given", HelpText.IO})
final class RmCommand extends VfsCommand {

    @Option(names = {"-r", "--recursive"}, description = "Remove a directory and everything below it.")
    boolean recursive;

    @Parameters(index = "0", paramLabel = "URI")
    String target;

    @Override
    boolean writes() {
        return true;
    }

    @Override
    int execute() throws IOException, CommandFailure {
        VfsPath path = uri(target);
        router().checkRemove(caller(), path);
        if (router().metadata(caller(), path).isDirectory() && !recursive) {
            throw CommandFailure.conflict("is a directory: " + path.toUri()
                    + " (use rm -r to remove it and everything below it)");
        }
        router().delete(caller(), path);
        return ExitCodes.OK;
    }
}
