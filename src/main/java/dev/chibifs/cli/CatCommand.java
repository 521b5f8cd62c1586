package dev.chibifs.cli;

import dev.chibifs.path.VfsPath;
import dev.chibifs.store.ContentHash;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Base64;

/** {@code chibifs cat}: a file's bytes, exactly. */
@Command(name = "cat", mixinStandardHelpOptions = true,
        description = {"Print a file, byte for byte.",
            "Print the file at URI byte for byte.", HelpText.URI, HelpText.READER},
        footerHeading = HelpText.EXIT_HEADING,
        footer = {HelpText.OK, HelpText.NOT_FOUND, HelpText.USAGE, "  4  conflict: URI is a directory", HelpText.IO})
final class CatCommand extends VfsCommand {

    @Option(names = "--json", description = "Print {uri, size, encoding, content} as JSON; content is the text"
            + " when the file is valid UTF-8 (encoding \"utf-8\"), else base64 (encoding \"base64\").")
    boolean json;

    @Option(names = "--etag", description = "Also give the ETag of exactly the content printed (the SHA-256, for"
            + " --if-match): on standard error as [etag: ETAG], so standard output stays the file; in --json"
            + " as \"etag\".")
    boolean etag;

    @Parameters(index = "0", paramLabel = "URI")
    String target;

    @com.fasterxml.jackson.annotation.JsonInclude(com.fasterxml.jackson.annotation.JsonInclude.Include.NON_NULL)
    record Content(String uri, long size, String encoding, String content, String etag) {
    }

    @Override
    boolean writes() {
        return false;
    }

    @Override
    int execute() throws IOException {
        VfsPath path = uri(target);
        byte[] data = router().read(caller(), path);
        // hashed from the bytes shown, so the ETag is that of this content even if the file changes now
        String tag = etag ? ContentHash.of(data) : null;
        if (!json) {
            out().write(data);
            if (tag != null) {
                out().flush();
                terminal.err().write(("[etag: " + tag + "]\n").getBytes(StandardCharsets.UTF_8));
            }
            return ExitCodes.OK;
        }
        String text = utf8(data);
        printJson(text != null
                ? new Content(path.toUri(), data.length, "utf-8", text, tag)
                : new Content(path.toUri(), data.length, "base64", Base64.getEncoder().encodeToString(data), tag));
        return ExitCodes.OK;
    }

    /** The text, or null when the bytes are not valid UTF-8 (so JSON never silently alters them). */
    private static String utf8(byte[] data) {
        try {
            return StandardCharsets.UTF_8.newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(data)).toString();
        } catch (CharacterCodingException e) {
            return null;
        }
    }
}
