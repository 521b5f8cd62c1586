package dev.chibifs.cache;

import dev.chibifs.store.ContentHash;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Instant;
import java.util.HexFormat;
import java.util.regex.Pattern;

/**
 * Cache entry ids in chibi's form, {@code {tool}_{unix-seconds-hex}_{8-hex-hash}}.
 *
 * <p>chibi hashes the tool's arguments with Rust's {@code DefaultHasher}, whose output Rust does
 * not promise to keep stable, so ids cannot be made byte-identical to chibi's anyway. The hash
 * here is the first 8 hex digits of SHA-256 over the arguments JSON, a NUL byte, and the output:
 * two different outputs of the same call in the same second get different ids (instead of one
 * replacing the other), and storing the same output twice lands on the same id.
 */
public final class CacheId {

    /** The rule for tool names, as shown in error messages. */
    public static final String TOOL_RULE =
            "a tool name is 1 to 128 of [A-Za-z0-9_.-] and does not start with '.'";

    private static final Pattern TOOL = Pattern.compile("[A-Za-z0-9_-][A-Za-z0-9_.-]{0,127}");

    private CacheId() {
    }

    /** True when {@code tool} can be part of an id (and so of a file name). */
    public static boolean isValidTool(String tool) {
        return tool != null && TOOL.matcher(tool).matches();
    }

    /** The id for {@code output} of {@code tool} called with {@code argsJson} at {@code now}. */
    public static String of(String tool, String argsJson, byte[] output, Instant now) {
        try {
            return of(tool, argsJson, ToolOutput.of(output), now);
        } catch (java.io.IOException inMemory) {
            throw new java.io.UncheckedIOException(inMemory); // an output in memory is read without I/O
        }
    }

    /** {@link #of(String, String, byte[], Instant)} of an output that may be in a temporary file, hashed a buffer at a time. */
    public static String of(String tool, String argsJson, ToolOutput output, Instant now) throws java.io.IOException {
        if (!isValidTool(tool)) {
            throw new IllegalArgumentException("invalid tool name '" + tool + "': " + TOOL_RULE);
        }
        MessageDigest sha = ContentHash.digest();
        sha.update(argsJson.getBytes(StandardCharsets.UTF_8));
        sha.update((byte) 0);
        try (java.io.InputStream in = output.open()) {
            byte[] buffer = new byte[1 << 16];
            int n;
            while ((n = in.read(buffer)) >= 0) {
                sha.update(buffer, 0, n);
            }
        }
        String hash = HexFormat.of().formatHex(sha.digest(), 0, 4);
        return tool + "_" + Long.toHexString(now.getEpochSecond()) + "_" + hash;
    }
}
