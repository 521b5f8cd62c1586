package dev.chibifs.policy;

import java.util.regex.Pattern;

/**
 * chibi's rule for context names ({@code is_valid_context_name}): {@code [A-Za-z0-9_-]+}, not starting
 * with {@code -} (chibi's command line would take it for an option), never "system" in any case, and at
 * most {@link #MAX_LENGTH} characters.
 */
public final class ContextNames {

    /**
     * A context name is a path component ({@code /home/<ctx>}, {@code /sys/tool_cache/<ctx>}) and file
     * systems take at most 255 bytes in one (NAME_MAX); its characters are ASCII, one byte each. Longer,
     * the name passed this rule and failed later with "File name too long" (exit 1).
     */
    public static final int MAX_LENGTH = 255;

    /** The rule, as shown in error messages. */
    public static final String RULE = "a context name is [A-Za-z0-9_-]+ of at most " + MAX_LENGTH
            + " characters, not starting with '-', and never 'system' in any case";

    private static final Pattern VALID = Pattern.compile("[A-Za-z0-9_-]{1," + MAX_LENGTH + "}");

    private ContextNames() {
    }

    /** True when {@code name} may be used as a context. */
    public static boolean isValid(String name) {
        return name != null
                && VALID.matcher(name).matches()
                && name.charAt(0) != '-'
                && !isReserved(name);
    }

    /** True for the names reserved for the SYSTEM caller ("system" in any letter case). */
    public static boolean isReserved(String name) {
        return name != null && name.equalsIgnoreCase("system");
    }

    /** Returns {@code name} or throws {@link InvalidContextNameException} naming the value and the rule. */
    public static String validate(String name) {
        if (!isValid(name)) {
            throw new InvalidContextNameException(name);
        }
        return name;
    }
}
