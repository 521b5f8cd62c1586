package dev.chibifs.cli;

import com.fasterxml.jackson.core.JsonGenerator;
import dev.chibifs.path.Names;
import dev.chibifs.path.VfsPath;
import dev.chibifs.store.ContentHash;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.Reader;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.security.DigestInputStream;
import java.security.DigestOutputStream;
import java.security.MessageDigest;

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

    @Override
    boolean writes() {
        return false;
    }

    @Override
    int execute() throws IOException {
        VfsPath path = followedUri(target);
        try (StoreFile file = open(path)) {
            // hashed from the bytes shown, so the ETag is that of this content even if the file changes now
            MessageDigest digest = etag ? ContentHash.digest() : null;
            if (!json) {
                file.copy(0, Long.MAX_VALUE, digest == null ? out() : new DigestOutputStream(out(), digest));
                if (digest != null) {
                    out().flush();
                    terminal.err().write(("[etag: " + ContentHash.hex(digest) + "]\n").getBytes(StandardCharsets.UTF_8));
                }
                return ExitCodes.OK;
            }
            printJson(path, file, digest);
        }
        return ExitCodes.OK;
    }

    /**
     * {uri, size, encoding, content, etag}, the content streamed as it is read: size and encoding
     * come first, so a first pass finds them, and the second checks it read the same.
     */
    private void printJson(VfsPath path, StoreFile file, MessageDigest digest) throws IOException {
        StoreFile.Stream probe = file.stream(0, Long.MAX_VALUE);
        boolean text = isUtf8(probe);
        long size = probe.position();
        JsonGenerator json = jsonGenerator();
        json.writeStartObject();
        json.writeStringField("uri", path.toUri());
        json.writeNumberField("size", size);
        json.writeStringField("encoding", text ? "utf-8" : "base64");
        json.writeFieldName("content");
        StoreFile.Stream stream = file.stream(0, size);
        InputStream content = digest == null ? stream : new DigestInputStream(stream, digest);
        if (text) {
            try {
                json.writeString(new InputStreamReader(content, Names.utf8Decoder()), -1);
            } catch (CharacterCodingException e) {
                throw new IOException("the file changed while it was read: it is no longer UTF-8");
            }
        } else {
            json.writeBinary(content, -1);
        }
        if (stream.position() != size) {
            throw new IOException("the file changed while it was read: " + size + " bytes, then " + stream.position());
        }
        if (digest != null) {
            json.writeStringField("etag", ContentHash.hex(digest));
        }
        json.writeEndObject();
        json.close();
        out().write('\n');
    }

    /** Whether the rest of {@code in} is UTF-8; reads it all either way. */
    private static boolean isUtf8(InputStream in) throws IOException {
        char[] chars = new char[StoreFile.CHUNK];
        try (Reader reader = new InputStreamReader(in, Names.utf8Decoder())) {
            while (reader.read(chars) >= 0) {
                // decoded and dropped: only whether it decodes matters
            }
            return true;
        } catch (CharacterCodingException notText) {
            in.transferTo(OutputStream.nullOutputStream());
            return false;
        }
    }
}
