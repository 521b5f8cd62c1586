package dev.chibifs.cli;

import dev.chibifs.path.Names;
import dev.chibifs.path.VfsPath;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

import java.io.IOException;

/** {@code chibifs cp}: copy a file within the namespace, as chibi's vfs_copy. */
@Command(name = "cp", mixinStandardHelpOptions = true,
        description = {"Copy a file (vfs_copy).",
            "Copy the file SRC to DST, replacing DST if it is a file; missing parent directories"
                + " of DST are created. Atomic: DST is the old file or the whole copy. Files only: SRC and"
                + " DST must not be directories (name the destination file, for example dir/name)."
                + " Reading SRC is always allowed; DST must be writable. Prints nothing on success.",
            HelpText.URI, HelpText.WRITER},
        footerHeading = HelpText.EXIT_HEADING,
        footer = {HelpText.OK, "  1  no such file: SRC", HelpText.USAGE, "  3  permission denied: DST is not writable",
            "  4  conflict: SRC or DST is a directory, or a file is in the way of DST", HelpText.IO})
final class CpCommand extends VfsCommand {

    @Parameters(index = "0", paramLabel = "SRC")
    String source;

    @Parameters(index = "1", paramLabel = "DST")
    String destination;

    @Override
    boolean writes() {
        return true;
    }

    @Override
    int execute() throws IOException, CommandFailure {
        VfsPath src = followedUri(source);
        VfsPath dst = followedUri(destination);
        router().checkWrite(caller(), dst);
        if (router().metadata(caller(), src).isDirectory()) {
            throw CommandFailure.conflict("is a directory: " + Names.shown(src) + " (cp copies files only)");
        }
        if (router().exists(caller(), dst) && router().metadata(caller(), dst).isDirectory()) {
            throw CommandFailure.conflict("is a directory: " + Names.shown(dst)
                    + " (name the destination file, e.g. " + Names.shown(dst.child(src.fileName())) + ")");
        }
        refuseLinkToMissingDirectory(destination, dst);
        try (var made = router().makeParents(caller(), dst)) {
            router().copy(caller(), src, dst);
            made.keep();
        }
        return ExitCodes.OK;
    }
}
