package dev.chibifs.cache;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.chibifs.path.VfsPath;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
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

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Pattern SHELL_SAFE = Pattern.compile("[A-Za-z0-9_./:=@%+,-]+");

    private CacheStub() {
    }

    /** True when {@code output} goes to the cache: longer than the threshold and not blank (chibi's rule). */
    public static boolean shouldCache(byte[] output, int threshold) {
        return output.length > threshold && !isBlank(new String(output, StandardCharsets.UTF_8));
    }

    // Rust's str::trim strips the Unicode White_Space property, which is not Java's isWhitespace
    private static boolean isBlank(String s) {
        return s.codePoints().allMatch(cp -> (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0
                || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029
                || cp == 0x202F || cp == 0x205F || cp == 0x3000);
    }

    /**
     * The stub for {@code output} stored at {@code path}; with a {@code mountpoint} (may be null)
     * it also gives the entry's path under the mount for shell tools.
     */
    public static String format(VfsPath path, String tool, byte[] output, int previewChars, Path mountpoint) {
        String uri = path.toUri();
        long size = output.length;
        StringBuilder s = new StringBuilder()
                .append("[Output cached: ").append(uri).append("]\n\n")
                .append("Tool: ").append(tool).append(" | Size: ").append(size).append(" chars, ~")
                .append(size / 4).append(" tokens | Lines: ").append(lineCount(output)).append('\n')
                .append("Output too large. Full output stored \u2014 do NOT re-run this tool.\n\n")
                .append("Preview:\n\n---\n")
                .append(preview(new String(output, StandardCharsets.UTF_8), previewChars))
                .append("\n---\n\n")
                .append("Use file_head, file_tail, file_lines, file_grep with path=\"").append(uri)
                .append("\" to examine.");
        if (mountpoint != null) {
            String shellPath = shellQuote(mountpoint.resolve(path.toString().substring(1)).toString());
            s.append("\nIn a shell: head, tail or grep ").append(shellPath)
                    .append(" (e.g. grep -n error ").append(shellPath).append(").");
        }
        return s.toString();
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
    static String preview(String text, int previewChars) {
        String source = jsonStreams(text);
        String head = source.codePointCount(0, source.length()) <= previewChars
                ? source
                : source.substring(0, source.offsetByCodePoints(0, previewChars));
        int newline = head.lastIndexOf('\n');
        return newline >= 0 ? head.substring(0, newline) : head;
    }

    /**
     * A shell tool's result is often one line of JSON with {@code stdout} and {@code stderr}; the
     * escaped JSON would make a useless preview, so preview the streams themselves (stderr after
     * stdout, under a {@code stderr:} line). Anything else previews as it is.
     */
    private static String jsonStreams(String text) {
        String t = text.strip();
        if (!t.startsWith("{") || t.indexOf('\n') >= 0) {
            return text;
        }
        JsonNode n;
        try {
            n = JSON.readTree(t);
        } catch (IOException notJson) {
            return text;
        }
        JsonNode out = n == null ? null : n.get("stdout");
        JsonNode err = n == null ? null : n.get("stderr");
        boolean hasOut = out != null && out.isTextual();
        boolean hasErr = err != null && err.isTextual();
        if (!hasOut && !hasErr) {
            return text;
        }
        StringBuilder b = new StringBuilder(hasOut ? out.textValue() : "");
        if (hasErr && !err.textValue().isEmpty()) {
            if (b.length() > 0 && b.charAt(b.length() - 1) != '\n') {
                b.append('\n');
            }
            b.append("stderr:\n").append(err.textValue());
        }
        return b.toString();
    }

    private static String shellQuote(String s) {
        return SHELL_SAFE.matcher(s).matches() ? s : "'" + s.replace("'", "'\\''") + "'";
    }
}
