package dev.chibifs.cli;

import dev.chibifs.path.VfsPath;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.io.IOException;

/** {@code chibifs rm}: remove a file, or a directory and everything below it, as chibi's vfs_delete. */
@Command(name = "rm", mixinStandardHelpOptions = true,
        description = {"Remove a file or a directory (vfs_delete).",
            "Remove the file at URI, or the directory at URI with everything below it, as chibi's"
                + " vfs_delete does. Zone roots (/shared, /home, /home/<NAME>, /sys, /site, /flocks/<NAME>, /tools/...)"
                + " are SYSTEM's to remove. Prints nothing on success.", HelpText.URI, HelpText.WRITER},
        footerHeading = HelpText.EXIT_HEADING,
        footer = {HelpText.OK, HelpText.NOT_FOUND, HelpText.USAGE, HelpText.DENIED, HelpText.IO})
final class RmCommand extends VfsCommand {

    @Option(names = {"-r", "--recursive"}, description = "Accepted for habit's sake: a directory goes with everything"
            + " below it either way, as in chibi.")
    boolean recursive;

    @Parameters(index = "0", paramLabel = "URI")
    String target;

    @Override
    boolean writes() {
        return true;
    }

    @Override
    int execute() throws IOException {
        VfsPath path = uriThroughLinks(target);
        checkRemove(path);
        router().metadata(caller(), path); // a missing name: exit 1 before anything else
        router().delete(caller(), path);
        return ExitCodes.OK;
    }
}
