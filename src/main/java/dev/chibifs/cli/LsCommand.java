package dev.chibifs.cli;

import com.fasterxml.jackson.annotation.JsonIgnore;
import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import dev.chibifs.path.Names;
import dev.chibifs.path.VfsPath;
import dev.chibifs.router.Router;
import dev.chibifs.store.EntryKind;
import dev.chibifs.store.Metadata;
import dev.chibifs.sys.Errors;
import dev.chibifs.sys.Linux;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.io.IOException;
import java.nio.file.NoSuchFileException;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Locale;

/** {@code chibifs ls}: the entries of a directory, as chibi's vfs_list. */
@Command(name = "ls", mixinStandardHelpOptions = true,
        description = {"List a directory (vfs_list).",
            "List the entries of the directory at URI (default vfs:///), sorted by name;"
                + " directories end in '/'. A file URI lists the file itself."
                + " Names starting with '.' are hidden unless -a, as chibi's vfs_list does."
                + " " + HelpText.ESCAPES,
            HelpText.URI, HelpText.READER},
        footerHeading = HelpText.EXIT_HEADING,
        footer = {HelpText.OK, HelpText.NOT_FOUND, HelpText.USAGE, HelpText.IO})
final class LsCommand extends VfsCommand {

    /** What -l shows for a size or time the store could not give, as GNU ls does. */
    private static final String UNKNOWN = "?";

    @Option(names = "-a", description = "Also list names starting with '.'.")
    boolean all;

    @Option(names = "-l", description = "Long format: kind, size in bytes, modification time (UTC), name"
            + " (and '-> TARGET' for a symbolic link).")
    boolean details;

    @Option(names = "--json", description = "Print {uri, entries: [{name, uri, kind, size, modified, target}]} as JSON"
            + " (target: a symbolic link's). A name that is not UTF-8 has name_base64 (its bytes) and no uri.")
    boolean json;

    @Parameters(index = "0", arity = "0..1", paramLabel = "URI", defaultValue = "vfs:///",
            description = "The directory (or file) to list.")
    String target;

    /**
     * One entry. A name that is not UTF-8 has {@code nameBase64}, its bytes, and no {@code uri}: {@code name}
     * only stands for it. {@code size} and {@code modified} are absent where the store cannot look the
     * name up (not UTF-8, or holding U+FFFD, which the store refuses as it may stand for other bytes).
     */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    record Row(String name, @JsonProperty("name_base64") String nameBase64, String uri, String kind, Long size,
               String modified, String target, @JsonIgnore String shown) {
    }

    record Listing(String uri, List<Row> entries) {
    }

    @Override
    boolean writes() {
        return false;
    }

    @Override
    int execute() throws IOException {
        VfsPath path = uriThroughLinks(target);
        Metadata self = router().metadata(caller(), path);
        List<Row> rows = new ArrayList<>();
        if (self.isDirectory()) {
            for (Listed e : entries(path)) {
                if (!all && e.name().startsWith(".")) {
                    continue;
                }
                if (!e.reachable()) {
                    rows.add(new Row(e.name(), Base64.getEncoder().encodeToString(e.bytes()), null, kind(e.kind()),
                            null, null, null, e.shown()));
                    continue;
                }
                VfsPath child = path.child(e.name());
                if (details || json) {
                    try {
                        rows.add(row(e.name(), child, router().metadata(caller(), child), router()));
                    } catch (NoSuchFileException vanished) {
                        // removed between listing and stat: not listed
                    } catch (IOException e2) {
                        if (Errors.errno(e2) != Linux.EILSEQ) {
                            throw e2;
                        }
                        // a name the store will not look up: listed with what the listing said
                        rows.add(new Row(e.name(), null, child.toUri(), kind(e.kind()), null, null, null, e.shown()));
                    }
                } else {
                    rows.add(new Row(e.name(), null, child.toUri(), kind(e.kind()), null, null, null, e.shown()));
                }
            }
        } else {
            rows.add(row(path.fileName(), path, self, router()));
        }
        if (json) {
            printJson(new Listing(path.toUri(), rows));
            return ExitCodes.OK;
        }
        for (Row r : rows) {
            String name = r.shown() + ("directory".equals(r.kind()) ? "/" : "")
                    + (r.target() == null ? "" : " -> " + Names.shown(r.target()));
            println(details ? String.format(Locale.ROOT, "%-9s %12s  %s  %s", r.kind(),
                    r.size() == null ? UNKNOWN : r.size(), r.modified() == null ? UNKNOWN : r.modified(), name)
                    : name);
        }
        return ExitCodes.OK;
    }

    private Row row(String name, VfsPath path, Metadata m, Router router) throws IOException {
        return new Row(name, null, path.toUri(), kind(m.kind()), m.size(), m.modified().toInstant().toString(),
                target(router, path, m), Names.shown(name));
    }

    /** A symbolic link's target text (never followed), null for anything else or a link gone meanwhile. */
    static String target(Router router, VfsPath path, Metadata m) throws IOException {
        if (m.kind() != EntryKind.SYMLINK) {
            return null;
        }
        try {
            return router.readLink(null, path);
        } catch (NoSuchFileException | java.nio.file.NotLinkException replaced) {
            return null;
        }
    }

    static String kind(EntryKind kind) {
        return kind.name().toLowerCase(Locale.ROOT);
    }
}
