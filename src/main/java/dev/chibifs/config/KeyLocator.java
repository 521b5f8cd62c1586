package dev.chibifs.config;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Finds the line on which a key is set, for error messages. Jackson's TOML parser reads the file
 * into a tree before it hands out values, so a value's position is lost by the time its type can
 * be checked; the file is known to be valid TOML at this point, so a line scan is enough.
 */
final class KeyLocator {

    private static final Pattern HEADER = Pattern.compile("^\\s*\\[\\[?\\s*([^\\]]*?)\\s*\\]\\]?\\s*(#.*)?$");
    private static final Pattern ASSIGNMENT = Pattern.compile("^\\s*([^=#\\[]+?)\\s*=");

    private KeyLocator() {
    }

    /** The 1-based line that sets {@code key} in {@code table} (null: the top level), or -1. */
    static int line(String text, String table, String key) {
        String[] lines = text.split("\r?\n", -1);
        String current = null;
        int inlineParent = -1;
        for (int i = 0; i < lines.length; i++) {
            Matcher h = HEADER.matcher(lines[i]);
            if (h.matches()) {
                current = unquote(h.group(1));
                continue;
            }
            Matcher a = ASSIGNMENT.matcher(lines[i]);
            if (!a.find()) {
                continue;
            }
            String name = unquote(a.group(1));
            String full = current == null ? name : current + "." + name;
            String wanted = table == null ? key : table + "." + key;
            if (full.equals(wanted)) {
                return i + 1;
            }
            if (table != null && full.equals(table) && inlineParent < 0) {
                // an inline table (vfs = { backend = "..." }): the key is somewhere on this line
                inlineParent = i + 1;
            }
        }
        return inlineParent;
    }

    private static String unquote(String dotted) {
        StringBuilder out = new StringBuilder();
        for (String part : dotted.split("\\.")) {
            String p = part.trim();
            if (p.length() >= 2 && (p.startsWith("\"") && p.endsWith("\"") || p.startsWith("'") && p.endsWith("'"))) {
                p = p.substring(1, p.length() - 1);
            }
            out.append(out.length() == 0 ? "" : ".").append(p);
        }
        return out.toString();
    }
}
