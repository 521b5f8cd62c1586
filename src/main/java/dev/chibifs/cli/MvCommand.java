package dev.chibifs.cli;

import dev.chibifs.path.Names;
import dev.chibifs.path.VfsPath;
import dev.chibifs.router.CrossDeviceException;
import dev.chibifs.store.Metadata;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

import java.io.IOException;

/** {@code chibifs mv}: move or rename a file or directory, as chibi's vfs_move. */
@Command(name = "mv", mixinStandardHelpOptions = true,
        description = {"Move or rename a file or directory (vfs_move).",
            "Move SRC to DST atomically (one rename), replacing DST if it is a file and SRC is a"
                + " file. The missing parent directories of DST are created first, as chibi does, and"
                + " removed again when the move is refused. SRC and DST must be in one store. DST must"
                + " not be an existing directory (name the new path, for example dir/name)."
                + " Both SRC and DST must be writable, and neither may be a zone root."
                + " Prints nothing on success.", HelpText.URI, HelpText.WRITER},
        footerHeading = HelpText.EXIT_HEADING,
        footer = {HelpText.OK, "  1  no such file or directory: SRC", HelpText.USAGE,
            "  3  permission denied: SRC or DST is not writable, or is a zone root; a symbolic",
            "     link would point out of its zone, or a hard link would stay behind",
            "  4  conflict: DST is a directory, a directory would replace a file,",
            "     or SRC would move into itself",
            HelpText.IO})
final class MvCommand extends VfsCommand {

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
        VfsPath src = uriThroughLinks(source);
        VfsPath dst = uriThroughLinks(destination);
        // the router checks these again in rename; checking first means a denied move creates no parent
        checkRemove(src);
        checkRemove(dst);
        Metadata from = router().metadata(caller(), src);
        if (src.equals(dst)) {
            return ExitCodes.OK;
        }
        if (dst.startsWith(src)) {
            throw CommandFailure.conflict("cannot move " + Names.shown(src) + " into itself (" + Names.shown(dst) + ")");
        }
        if (router().exists(caller(), dst)) {
            Metadata to = router().metadata(caller(), dst);
            if (to.isDirectory()) {
                throw CommandFailure.conflict("is a directory: " + Names.shown(dst)
                        + " (name the new path, e.g. " + Names.shown(dst.child(src.fileName())) + ")");
            }
            if (from.isDirectory()) {
                throw CommandFailure.conflict("already exists: " + Names.shown(dst)
                        + " (a file; mv does not put a directory in place of a file)");
            }
        }
        if (router().resolve(src).storage() != router().resolve(dst).storage()) {
            // the rename would find this too, but only after the parents were made, in the other store
            throw new CrossDeviceException(src.toString(), dst.toString(), "'" + src + "' and '" + dst
                    + "' are in different stores (mv renames within one store; copy a file with cp, then rm it)");
        }
        try (var made = router().makeParents(caller(), dst)) {
            router().rename(caller(), src, dst);
            made.keep();
        } catch (CrossDeviceException e) {
            // not between stores (checked above): the --symlinks rule or a hard link the move would leave behind
            throw new CommandFailure(ExitCodes.PERMISSION_DENIED, e.why() + "; nothing was moved");
        }
        return ExitCodes.OK;
    }
}
