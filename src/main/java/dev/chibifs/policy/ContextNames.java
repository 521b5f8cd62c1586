package dev.chibifs.policy;

import java.util.regex.Pattern;

/** chibi's rule for context names: {@code [A-Za-z0-9_-]+}, not {@code -}, never "system" in any case. */
public final class ContextNames {

    /** The rule, as shown in error messages. */
    public static final String RULE = "a context name is [A-Za-z0-9_-]+, not '-', and never 'system' in any case";

    private static final Pattern VALID = Pattern.compile("[A-Za-z0-9_-]+");

    private ContextNames() {
    }

    /** True when {@code name} may be used as a context. */
    public static boolean isValid(String name) {
        return name != null
                && VALID.matcher(name).matches()
                && !name.equals("-")
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
