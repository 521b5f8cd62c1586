package dev.chibifs.cli;

import dev.chibifs.path.VfsPath;
import dev.chibifs.store.Precondition;
import dev.chibifs.sys.IsDirectoryException;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;

/**
 * What {@code write} and {@code append} share: the content (--content, else standard input), the
 * conditions, and the checks in their order; each says only where the content goes.
 */
abstract class ContentCommand extends VfsCommand {

    static final String CONFLICT = "  4  conflict: URI is a directory, or a file is in the way of its parent";

    @Option(names = "--content", paramLabel = "TEXT", description = "The text (UTF-8); without it, standard input.")
    String content;

    @Mixin
    ConditionOptions condition;

    @Option(names = "--if-none-match", paramLabel = "'*'", description = "Only create: fail if the file exists.")
    String ifNoneMatch;

    @Parameters(index = "0", paramLabel = "URI")
    String target;

    /** Writes what {@code data} gives to {@code path} as this command does, under {@code asked}. */
    abstract void store(VfsPath path, InputStream data, Precondition asked) throws IOException;

    @Override
    boolean writes() {
        return true;
    }

    @Override
    int execute() throws IOException, CommandFailure {
        VfsPath path = followedUri(target);
        Precondition asked = condition.condition(ifNoneMatch);
        lockWait(condition.lockWait);
        // policy before anything else, so a denied write neither waits for stdin nor names a conflict
        router().checkWrite(caller(), path);
        // a file write aimed at a directory is a conflict (the store would otherwise fail obscurely)
        if (router().exists(caller(), path) && router().metadata(caller(), path).isDirectory()) {
            throw new IsDirectoryException(path.toString());
        }
        refuseLinkToMissingDirectory(target, path);
        InputStream data = content != null
                ? new ByteArrayInputStream(content.getBytes(StandardCharsets.UTF_8)) : standardInput(terminal.in());
        try (var made = router().makeParents(caller(), path)) {
            store(path, data, asked);
            made.keep();
        }
        return ExitCodes.OK;
    }

    /**
     * {@code in} whose read failures say they are stdin's: `write < /` said "I/O error: Is a
     * directory", which reads as if the target were one.
     */
    static InputStream standardInput(InputStream in) {
        return new java.io.FilterInputStream(in) {
            @Override
            public int read() throws IOException {
                try {
                    return super.read();
                } catch (IOException e) {
                    throw failed(e);
                }
            }

            @Override
            public int read(byte[] b, int off, int len) throws IOException {
                try {
                    return super.read(b, off, len);
                } catch (IOException e) {
                    throw failed(e);
                }
            }

            private IOException failed(IOException e) {
                return new IOException("reading standard input: " + e.getMessage(), e);
            }
        };
    }
}
