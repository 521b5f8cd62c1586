package dev.chibifs.cli;

import dev.chibifs.path.VfsPath;
import dev.chibifs.store.Precondition;
import picocli.CommandLine.Command;

import java.io.IOException;
import java.io.InputStream;

/** {@code chibifs write}: create or replace a file atomically, as chibi's write_file. */
@Command(name = "write", mixinStandardHelpOptions = true,
        description = {"Create or replace a file atomically (write_file).",
            "Create or replace the file at URI with --content, else with standard input. Atomic:"
                + " readers see the old content or the new, never a mix. Missing parent directories are"
                + " created. Prints nothing on success.", HelpText.URI, HelpText.WRITER},
        footerHeading = HelpText.EXIT_HEADING,
        footer = {HelpText.OK, HelpText.USAGE, HelpText.DENIED,
            ContentCommand.CONFLICT, ConditionOptions.FOOTER, HelpText.IO})
final class WriteCommand extends ContentCommand {

    @Override
    void store(VfsPath path, InputStream data, Precondition asked) throws IOException {
        router().write(caller(), path, data, asked);
    }
}
