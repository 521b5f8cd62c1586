package dev.chibifs.cli;

import com.fasterxml.jackson.annotation.JsonInclude;
import dev.chibifs.path.Names;
import dev.chibifs.path.VfsPath;
import dev.chibifs.store.Metadata;
import dev.chibifs.sys.Errors;
import dev.chibifs.sys.Linux;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.io.IOException;
import java.nio.file.attribute.FileTime;

/** {@code chibifs info}: size, kind and times of one path, as chibi's vfs_info. */
@Command(name = "info", mixinStandardHelpOptions = true,
        description = {"Show kind, size and times of a path (vfs_info).",
            "Show the kind (file, directory, symlink, fifo, socket, other), size in bytes, creation and"
                + " modification times (ISO-8601, UTC) of URI, a symbolic link's target (the named link is not followed) and a"
                + " file's ETag (the SHA-256 of its content, for --if-match). " + HelpText.ESCAPES,
            HelpText.URI, HelpText.READER},
        footerHeading = HelpText.EXIT_HEADING,
        footer = {HelpText.OK, HelpText.NOT_FOUND, HelpText.USAGE, HelpText.IO})
final class InfoCommand extends VfsCommand {

    @Option(names = "--json", description = "Print {uri, kind, size, created, modified, target, etag} as JSON.")
    boolean json;

    @Parameters(index = "0", paramLabel = "URI")
    String target;

    @JsonInclude(JsonInclude.Include.NON_NULL)
    record Info(String uri, String kind, long size, String created, String modified, String target, String etag) {
    }

    @Override
    boolean writes() {
        return false;
    }

    @Override
    int execute() throws IOException {
        VfsPath path = uriThroughLinks(target);
        Metadata m = router().metadata(caller(), path);
        String etag = m.isFile() ? etagOrNone(path) : null;
        Info info = new Info(path.toUri(), LsCommand.kind(m.kind()), m.size(), time(m.created()), time(m.modified()),
                LsCommand.target(router(), path, m), etag);
        if (json) {
            printJson(info);
            return ExitCodes.OK;
        }
        println("uri: " + Names.shown(path));
        println("kind: " + info.kind());
        println("size: " + info.size());
        if (info.created() != null) {
            println("created: " + info.created());
        }
        println("modified: " + info.modified());
        if (info.target() != null) {
            println("target: " + Names.shown(info.target()));
        }
        if (etag != null) {
            println("etag: " + etag);
        }
        return ExitCodes.OK;
    }

    /** The file's ETag; none for one too large to hash (over 16 GiB: EFBIG), whose other facts still show. */
    private String etagOrNone(VfsPath path) throws IOException {
        try {
            return router().etag(caller(), path);
        } catch (IOException e) {
            if (Errors.errno(e) == Linux.EFBIG) {
                return null;
            }
            throw e;
        }
    }

    private static String time(FileTime t) {
        return t == null ? null : t.toInstant().toString();
    }
}
