package dev.chibifs.cli;

import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

import java.io.IOException;

/** {@code chibifs mkdir}: create a directory and its missing parents, as chibi's vfs_mkdir. */
@Command(name = "mkdir", mixinStandardHelpOptions = true,
        description = {"Create a directory and its parents (vfs_mkdir).",
            "Create the directory at URI and any missing parents, like mkdir -p: an existing"
                + " directory is fine. Prints nothing on success.", HelpText.URI, HelpText.WRITER},
        footerHeading = HelpText.EXIT_HEADING,
        footer = {HelpText.OK, HelpText.USAGE, HelpText.DENIED,
            "  4  conflict: a file is at URI or in the way of a parent", HelpText.IO})
final class MkdirCommand extends VfsCommand {

    @Parameters(index = "0", paramLabel = "URI")
    String target;

    @Override
    boolean writes() {
        return true;
    }

    @Override
    int execute() throws IOException {
        router().mkdir(caller(), followedUri(target));
        return ExitCodes.OK;
    }
}
