package dev.chibifs.cache;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.chibifs.path.VfsPath;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;

/**
 * The stub that replaces a large tool output in a conversation, in chibi's form.
 *
 * <p>Counting follows chibi, whose output is a Rust {@code String}: "chars" in the size line are
 * UTF-8 bytes ({@code str::len}), tokens are that divided by 4, lines are Rust's
 * {@code str::lines} (a final newline does not start another line), and the preview takes Unicode
 * code points ({@code str::chars}) and is cut at the last newline it holds.
 */
public final class CacheStub {

    // serde_json::from_str refuses anything after the value; Jackson reads the first value and stops
    private static final ObjectMapper JSON = new ObjectMapper()
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);
    /** What a failed tool's result starts with in chibi; such a result is never cached. */
    public static final String ERROR_PREFIX = "Error:";

    private static final Pattern SHELL_SAFE = Pattern.compile("[A-Za-z0-9_./:=@%+,-]+");

    private CacheStub() {
    }

    /**
     * True when {@code output} goes to the cache, by chibi's rule (send.rs with {@code should_cache}):
     * not an error (chibi's tool errors start with {@value #ERROR_PREFIX} and are always shown whole),
     * longer than the threshold, and not blank.
     */
    public static boolean shouldCache(byte[] output, long threshold) {
        return !isError(output) && output.length > threshold && !isBlank(new String(output, StandardCharsets.UTF_8));
    }

    /** {@link #shouldCache(byte[], long)} of an output that may be in a temporary file: read again, a buffer at a time. */
    public static boolean shouldCache(ToolOutput output, long threshold) throws IOException {
        if (output.inMemory()) {
            return shouldCache(output.bytes(), threshold);
        }
        return !isError(output.head()) && output.size() > threshold && !isBlank(output);
    }

    // decoded as new String(bytes, UTF_8) decodes: a byte that is not UTF-8 is U+FFFD, which is no white space
    private static boolean isBlank(ToolOutput output) throws IOException {
        try (java.io.Reader text = new java.io.BufferedReader(new java.io.InputStreamReader(output.open(),
                StandardCharsets.UTF_8))) {
            int c;
            while ((c = text.read()) >= 0) {
                // a surrogate (half of a code point past U+FFFF) is no white space either
                if (!isWhiteSpace(c)) {
                    return false;
                }
            }
        }
        return true;
    }

    private static boolean isError(byte[] output) {
        byte[] prefix = ERROR_PREFIX.getBytes(StandardCharsets.US_ASCII);
        return output.length >= prefix.length && java.util.Arrays.equals(output, 0, prefix.length, prefix, 0, prefix.length);
    }

    // Rust's str::trim strips the Unicode White_Space property, which is not Java's isWhitespace
    private static boolean isBlank(String s) {
        return s.codePoints().allMatch(CacheStub::isWhiteSpace);
    }

    private static boolean isWhiteSpace(int cp) {
        return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0
                || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029
                || cp == 0x202F || cp == 0x205F || cp == 0x3000;
    }

    /**
     * The stub for {@code output} stored at {@code path}, exactly chibi's {@code truncated_message};
     * with a {@code mountpoint} (may be null) a line after it also gives the entry's path under the
     * mount for shell tools.
     */
    public static String format(VfsPath path, String tool, byte[] output, long previewChars, Path mountpoint) {
        try {
            return format(path, tool, ToolOutput.of(output), previewChars, mountpoint);
        } catch (IOException inMemory) {
            throw new java.io.UncheckedIOException(inMemory); // an output in memory is read without I/O
        }
    }

    /**
     * {@link #format(VfsPath, String, byte[], long, Path)} of an output that may be in a temporary
     * file, counted a buffer at a time. The preview then comes from the part held in memory, the
     * first {@link ToolOutput#MEMORY_LIMIT} bytes, taken as text: one line of JSON that large is
     * not previewed as its stdout and stderr (chibi would), as that would need the whole of it parsed.
     */
    public static String format(VfsPath path, String tool, ToolOutput output, long previewChars, Path mountpoint)
            throws IOException {
        String uri = path.toUri();
        long size = output.size();
        String head = new String(output.head(), StandardCharsets.UTF_8);
        String preview = output.inMemory() ? preview(head, previewChars) : cut(head, previewChars);
        StringBuilder s = new StringBuilder()
                .append("[Output cached: ").append(uri).append("]\n")
                .append("Tool: ").append(tool).append(" | Size: ").append(size).append(" chars, ~")
                .append(size / 4).append(" tokens | Lines: ").append(lineCount(output)).append('\n')
                .append("Output too large. Full output stored \u2014 do NOT re-run this tool.\n")
                .append("Use file_head, file_tail, file_lines, or file_grep with path=\"").append(uri)
                .append("\" to examine.\n")
                .append("Preview (first ").append(lineCount(preview.getBytes(StandardCharsets.UTF_8)))
                .append(" lines):\n")
                .append("---\n")
                .append(preview).append('\n')
                .append("---");
        if (mountpoint != null) {
            String shellPath = shellQuote(mountpoint.resolve(path.toString().substring(1)).toString());
            s.append("\nIn a shell: head, tail or grep ").append(shellPath)
                    .append(" (e.g. grep -n error ").append(shellPath).append(").");
        }
        return s.toString();
    }

    static long lineCount(ToolOutput output) throws IOException {
        if (output.inMemory()) {
            return lineCount(output.bytes());
        }
        long newlines = 0;
        int last = -1;
        try (java.io.InputStream in = output.open()) {
            byte[] buffer = new byte[1 << 16];
            int n;
            while ((n = in.read(buffer)) >= 0) {
                for (int i = 0; i < n; i++) {
                    if (buffer[i] == '\n') {
                        newlines++;
                    }
                }
                if (n > 0) {
                    last = buffer[n - 1];
                }
            }
        }
        return last < 0 ? 0 : last == '\n' ? newlines : newlines + 1;
    }

    static long lineCount(byte[] output) {
        if (output.length == 0) {
            return 0;
        }
        long newlines = 0;
        for (byte b : output) {
            if (b == '\n') {
                newlines++;
            }
        }
        return output[output.length - 1] == '\n' ? newlines : newlines + 1;
    }

    /** At most {@code previewChars} code points of the text to preview, cut at the last newline among them. */
    static String preview(String text, long previewChars) {
        return cut(previewContent(text), previewChars);
    }

    private static String cut(String source, long previewChars) {
        String head = source.codePointCount(0, source.length()) <= previewChars
                ? source
                : source.substring(0, source.offsetByCodePoints(0, (int) previewChars));
        int newline = head.lastIndexOf('\n');
        return newline >= 0 ? head.substring(0, newline) : head;
    }

    /**
     * chibi's {@code extract_preview_content}: a shell tool's result is often one line of JSON with
     * {@code stdout} and {@code stderr}, whose escaped form would make a useless preview, so the
     * non-empty streams are previewed instead, each under a {@code [stdout]} or {@code [stderr]}
     * line, joined by a blank line. Anything else (and such JSON with both streams empty or not
     * strings) previews as it is.
     */
    static String previewContent(String text) {
        // Rust's str::lines().count() == 1: not empty, and no newline but perhaps a final one
        int newline = text.indexOf('\n');
        if (text.isEmpty() || (newline >= 0 && newline != text.length() - 1)) {
            return text;
        }
        JsonNode n;
        try {
            n = JSON.readTree(text);
        } catch (IOException notJson) {
            return text;
        }
        if (n == null || !n.isObject()) {
            return text;
        }
        String out = textOf(n.get("stdout"));
        String err = textOf(n.get("stderr"));
        if (out.isEmpty() && err.isEmpty()) {
            return text;
        }
        List<String> parts = new ArrayList<>(2);
        if (!out.isEmpty()) {
            parts.add("[stdout]\n" + out);
        }
        if (!err.isEmpty()) {
            parts.add("[stderr]\n" + err);
        }
        return String.join("\n\n", parts);
    }

    // serde_json's as_str().unwrap_or(""): a missing or non-string stream is empty
    private static String textOf(JsonNode n) {
        return n != null && n.isTextual() ? n.textValue() : "";
    }

    private static String shellQuote(String s) {
        return SHELL_SAFE.matcher(s).matches() ? s : "'" + s.replace("'", "'\\''") + "'";
    }
}
