package dev.chibifs.cli;

import dev.chibifs.path.VfsPath;
import dev.chibifs.store.Precondition;
import picocli.CommandLine.Command;

import java.io.IOException;
import java.io.InputStream;

/** {@code chibifs append}: add to the end of a file, creating it when absent. */
@Command(name = "append", mixinStandardHelpOptions = true,
        description = {"Append to a file, creating it if absent.",
            "Append --content, else standard input, to the file at URI, creating it (and missing"
                + " parent directories) when absent. One append is one write: concurrent appenders do not"
                + " lose each other's data. Prints nothing on success.", HelpText.URI, HelpText.WRITER},
        footerHeading = HelpText.EXIT_HEADING,
        footer = {HelpText.OK, HelpText.USAGE, HelpText.DENIED,
            ContentCommand.CONFLICT, ConditionOptions.FOOTER, HelpText.IO})
final class AppendCommand extends ContentCommand {

    @Override
    void store(VfsPath path, InputStream data, Precondition asked) throws IOException {
        // whole: one append is one write(2), which concurrent appenders cannot split
        router().append(caller(), path, data.readAllBytes(), asked);
    }
}
