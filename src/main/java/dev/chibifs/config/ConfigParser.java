package dev.chibifs.config;

import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.dataformat.toml.TomlMapper;

import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Parses config.toml with Jackson and checks the keys chibifs shares with chibi. */
final class ConfigParser {

    private static final TomlMapper TOML = new TomlMapper();
    private static final Pattern KEY_AT_LINE_START = Pattern.compile("^\\s*([A-Za-z0-9_\\-.\"' ]+?)\\s*=");
    private static final Pattern ARRAY_TABLE_HEADER = Pattern.compile("^\\s*\\[\\[([^\\[\\]]+)\\]\\]\\s*(#.*)?$");
    private static final String BASIC_MULTILINE = "\"".repeat(3);
    private static final String LITERAL_MULTILINE = "'".repeat(3);
    private static final Pattern TABLE_HEADER = Pattern.compile("^\\s*\\[([^\\[\\]]+)\\]\\s*(#.*)?$");

    private final Path file;
    private final String text;

    private ConfigParser(Path file, String text) {
        this.file = file;
        // a byte-order mark, as some editors write: chibi's toml parser skips it, Jackson's refuses it
        this.text = text.startsWith("\uFEFF") ? text.substring(1) : text;
    }

    static ChibiConfig parse(Path file, String text) {
        return new ConfigParser(file, text).parse();
    }

    /** {@code base} with the per-context keys of a {@code local.toml} in {@code text} laid over it. */
    static ChibiConfig parseLocal(Path file, String text, ChibiConfig base) {
        ConfigParser p = new ConfigParser(file, text);
        JsonNode root = p.tree();
        if (root == null || root.isMissingNode()) {
            return base;
        }
        return new ChibiConfig(base.backend(),
                p.nonNegative(root, "tool_output_cache_threshold", base.toolOutputCacheThreshold()),
                base.toolCacheMaxAgeDays(),
                p.nonNegative(root, "tool_cache_preview_chars", base.toolCachePreviewChars()),
                base.autoCleanupCache());
    }

    private JsonNode tree() {
        try {
            return TOML.readTree(text);
        } catch (JsonProcessingException e) {
            throw malformed(e);
        }
    }

    private ChibiConfig parse() {
        JsonNode root = tree();
        ChibiConfig d = ChibiConfig.DEFAULTS;
        if (root == null || root.isMissingNode()) {
            return d;
        }
        String backend = d.backend();
        JsonNode vfs = root.get("vfs");
        if (vfs != null) {
            if (!vfs.isObject()) {
                throw wrongType(null, "vfs", "a table", vfs);
            }
            JsonNode b = vfs.get("backend");
            if (b != null) {
                if (!b.isTextual()) {
                    throw wrongType("vfs", "backend", "a string", b);
                }
                backend = b.textValue();
                if (!ChibiConfig.BACKENDS.contains(backend)) {
                    throw problem("vfs", "backend", "unknown VFS backend '" + backend + "' (choices: "
                            + String.join(", ", ChibiConfig.BACKENDS) + ")");
                }
            }
        }
        return new ChibiConfig(backend,
                nonNegative(root, "tool_output_cache_threshold", d.toolOutputCacheThreshold()),
                nonNegative(root, "tool_cache_max_age_days", d.toolCacheMaxAgeDays()),
                nonNegative(root, "tool_cache_preview_chars", d.toolCachePreviewChars()),
                bool(root, "auto_cleanup_cache", d.autoCleanupCache()));
    }

    private long nonNegative(JsonNode root, String key, long fallback) {
        JsonNode n = root.get(key);
        if (n == null) {
            return fallback;
        }
        if (!n.isIntegralNumber()) {
            throw wrongType(null, key, "a non-negative integer", n);
        }
        // a TOML integer is a signed 64-bit one: a larger literal is no TOML chibi could read either
        if (!n.canConvertToLong() || n.longValue() < 0) {
            throw problem(null, key, n + " is out of range (0 to " + Long.MAX_VALUE + ")");
        }
        return n.longValue();
    }

    private boolean bool(JsonNode root, String key, boolean fallback) {
        JsonNode n = root.get(key);
        if (n == null) {
            return fallback;
        }
        if (!n.isBoolean()) {
            throw wrongType(null, key, "true or false", n);
        }
        return n.booleanValue();
    }

    private ConfigException wrongType(String table, String key, String expected, JsonNode found) {
        return problem(table, key, "expected " + expected + ", found " + describe(found));
    }

    private static String describe(JsonNode n) {
        if (n.isTextual()) {
            return "a string (" + n + ")";
        }
        if (n.isBoolean()) {
            return "a boolean (" + n + ")";
        }
        if (n.isFloatingPointNumber()) {
            return "a float (" + n.asText() + ")";
        }
        if (n.isIntegralNumber()) {
            return "an integer (" + n + ")";
        }
        if (n.isArray()) {
            return "an array";
        }
        return n.isObject() ? "a table" : n.getNodeType().toString().toLowerCase(java.util.Locale.ROOT);
    }

    private ConfigException problem(String table, String key, String what) {
        String name = table == null ? key : "[" + table + "] " + key;
        int line = KeyLocator.line(text, table, key);
        return new ConfigException(file + (line > 0 ? ":" + line : "") + ": " + name + ": " + what);
    }

    private ConfigException malformed(JsonProcessingException e) {
        // the parser's location is past the token, often on the next line: name the repeat itself
        String said = String.valueOf(e.getOriginalMessage());
        JsonLocation at = e.getLocation();
        int line = at == null ? -1 : at.getLineNr();
        String repeated = line > 0 && (said.startsWith("Duplicate key") || said.startsWith("Table redefined"))
                ? repeatedKeyOrTableAt(line) : null;
        if (repeated != null) {
            return new ConfigException(file + ":" + repeated);
        }
        StringBuilder msg = new StringBuilder().append(file);
        if (line > 0) {
            msg.append(':').append(line);
        }
        msg.append(": malformed TOML: ").append(e.getOriginalMessage());
        String key = line > 0 ? keyOnLine(line) : null;
        if (key != null) {
            msg.append(" (key ").append(key).append(')');
        }
        return new ConfigException(msg.toString());
    }

    /**
     * "LINE: malformed TOML: ..." for a key given twice in one table, or a table header given twice,
     * on the line the parser stopped at or the one before (where it points past the token); null
     * when the simple scan (bare and quoted keys, [table] headers, multi-line strings skipped) finds
     * none there: a line it took for a key (one inside a multi-line array) is not trusted elsewhere.
     */
    private String repeatedKeyOrTableAt(int parserLine) {
        String[] lines = text.split("\r?\n", -1);
        java.util.Map<String, Integer> seen = new java.util.HashMap<>();
        String table = "";
        String openString = null; // the delimiter of a multi-line string the line is inside, if any
        for (int i = 0; i < lines.length; i++) {
            if (openString != null || lines[i].contains(BASIC_MULTILINE) || lines[i].contains(LITERAL_MULTILINE)) {
                openString = multiLineStringAfter(lines[i], openString);
                continue; // a string's lines are a value's, never keys
            }
            Matcher array = ARRAY_TABLE_HEADER.matcher(lines[i]);
            if (array.matches()) {
                table = array.group(1).trim() + "#" + i; // each [[t]] is a table of its own
                continue;
            }
            Matcher header = TABLE_HEADER.matcher(lines[i]);
            if (header.matches()) {
                table = header.group(1).trim();
                Integer first = seen.putIfAbsent("[" + table + "]", i + 1);
                if (first != null && (i + 1 == parserLine || i + 2 == parserLine)) {
                    return (i + 1) + ": malformed TOML: table [" + table + "] again (first on line " + first + ")";
                }
                continue;
            }
            Matcher key = KEY_AT_LINE_START.matcher(lines[i]);
            if (key.find() && !lines[i].trim().startsWith("#")) {
                String raw = key.group(1).trim();
                // "a" and a are one key; "a.b" and a.b are not (the second is b of table a)
                String name = raw.matches("([\"'])[^.\"']*\\1") ? raw.substring(1, raw.length() - 1) : raw;
                Integer first = seen.putIfAbsent("[" + table + "]" + name, i + 1);
                if (first != null && (i + 1 == parserLine || i + 2 == parserLine)) {
                    return (i + 1) + ": malformed TOML: key " + (table.isEmpty() ? "" : "[" + table + "] ") + name
                            + " again (first on line " + first + ")";
                }
            }
        }
        return null;
    }

    /** The delimiter of a multi-line string still open after {@code line}, given the one open before it (null: none). */
    private static String multiLineStringAfter(String line, String open) {
        int at = 0;
        while (true) {
            if (open == null) {
                int basic = line.indexOf(BASIC_MULTILINE, at);
                int literal = line.indexOf(LITERAL_MULTILINE, at);
                if (basic < 0 && literal < 0) {
                    return null;
                }
                int start = basic < 0 ? literal : literal < 0 ? basic : Math.min(basic, literal);
                open = line.substring(start, start + 3);
                at = start + 3;
            } else {
                int end = line.indexOf(open, at);
                if (end < 0) {
                    return open;
                }
                open = null;
                at = end + 3;
            }
        }
    }

    private String keyOnLine(int line) {
        String[] lines = text.split("\r?\n", -1);
        if (line > lines.length) {
            return null;
        }
        Matcher m = KEY_AT_LINE_START.matcher(lines[line - 1]);
        return m.find() ? m.group(1).trim() : null;
    }
}
