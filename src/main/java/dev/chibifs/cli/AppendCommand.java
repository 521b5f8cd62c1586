package dev.chibifs.cli;

import dev.chibifs.path.VfsPath;
import dev.chibifs.store.Precondition;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.io.IOException;
import java.nio.charset.StandardCharsets;

/** {@code chibifs append}: add to the end of a file, creating it when absent. */
@Command(name = "append", mixinStandardHelpOptions = true,
        description = {"Append to a file, creating it if absent.",
            "Append --content, else standard input, to the file at URI, creating it (and missing"
                + " parent directories) when absent. One append is one write: concurrent appenders do not"
                + " lose each other's data. Prints nothing on success.", HelpText.URI, HelpText.WRITER},
        footerHeading = HelpText.EXIT_HEADING,
        footer = {HelpText.OK, HelpText.USAGE, HelpText.DENIED,
            "  4  conflict: URI is a directory, or a file is in the way of its parent",
            ConditionOptions.FOOTER, HelpText.IO})
final class AppendCommand extends VfsCommand {

    @Option(names = "--content", paramLabel = "TEXT", description = "What to append (UTF-8); without it, standard input.")
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
        router().checkWrite(caller(), path);
        WriteCommand.rejectDirectory(this, path);
        byte[] data = content != null ? content.getBytes(StandardCharsets.UTF_8) : terminal.in().readAllBytes();
        createParent(path);
        router().append(caller(), path, data, asked);
        return ExitCodes.OK;
    }
}
