package dev.chibifs.cli;

import com.fasterxml.jackson.core.JsonGenerator;
import dev.chibifs.path.VfsPath;
import dev.chibifs.store.ContentHash;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
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
        VfsPath path = uri(target);
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
        StoreFile.Utf8Check check = new StoreFile.Utf8Check();
        byte[] chunk = new byte[StoreFile.CHUNK];
        long size = 0;
        for (int n; (n = file.read(size, chunk, 0, chunk.length)) > 0; size += n) {
            check.feed(chunk, 0, n);
        }
        boolean text = check.valid();
        JsonGenerator json = jsonGenerator();
        json.writeStartObject();
        json.writeStringField("uri", path.toUri());
        json.writeNumberField("size", size);
        json.writeStringField("encoding", text ? "utf-8" : "base64");
        json.writeFieldName("content");
        InputStream content = file.stream(0, size);
        if (digest != null) {
            content = new DigestInputStream(content, digest);
        }
        if (text) {
            json.writeRawValue("\"");
            json.flush();
            long written = writeJsonText(content, out());
            if (written != size) {
                throw new IOException("the file changed while it was read: " + size + " bytes, then " + written);
            }
            json.writeRaw('"');
        } else {
            long written = json.writeBinary(content, -1);
            if (written != size) {
                throw new IOException("the file changed while it was read: " + size + " bytes, then " + written);
            }
        }
        if (digest != null) {
            json.writeStringField("etag", ContentHash.hex(digest));
        }
        json.writeEndObject();
        json.close();
        out().write('\n');
    }

    /**
     * Writes UTF-8 {@code in} as the inside of a JSON string, escaped as Jackson escapes strings; returns
     * the bytes read. Bytes that turn out not to be UTF-8 (the file changed since it was checked) fail.
     */
    static long writeJsonText(InputStream in, OutputStream out) throws IOException {
        StoreFile.Utf8Check check = new StoreFile.Utf8Check();
        byte[] chunk = new byte[StoreFile.CHUNK];
        long total = 0;
        for (int n; (n = in.read(chunk)) > 0; total += n) {
            check.feed(chunk, 0, n);
            int plain = 0;
            for (int i = 0; i < n; i++) {
                int b = chunk[i] & 0xff;
                if (b >= 0x20 && b != '"' && b != '\\') {
                    continue;
                }
                out.write(chunk, plain, i - plain);
                out.write(ESCAPES[b == '"' ? 0x20 : b == '\\' ? 0x21 : b]);
                plain = i + 1;
            }
            out.write(chunk, plain, n - plain);
        }
        if (!check.valid()) {
            throw new IOException("the file changed while it was read: it is no longer UTF-8");
        }
        return total;
    }

    /** The JSON escapes of bytes 0x00-0x1f, then of '"' and '\\' (at 0x20 and 0x21). */
    private static final byte[][] ESCAPES = new byte[0x22][];

    static {
        for (int b = 0; b < 0x20; b++) {
            ESCAPES[b] = escape(b).getBytes(StandardCharsets.US_ASCII);
        }
        ESCAPES[0x20] = escape('"').getBytes(StandardCharsets.US_ASCII);
        ESCAPES[0x21] = escape('\\').getBytes(StandardCharsets.US_ASCII);
    }

    private static String escape(int b) {
        return switch (b) {
            case '"' -> "\\\"";
            case '\\' -> "\\\\";
            case '\n' -> "\\n";
            case '\t' -> "\\t";
            case '\r' -> "\\r";
            case '\b' -> "\\b";
            case '\f' -> "\\f";
            default -> String.format("\\u%04X", b);
        };
    }
}
