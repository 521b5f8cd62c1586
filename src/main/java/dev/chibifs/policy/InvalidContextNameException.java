package dev.chibifs.policy;

/** A context name that breaks chibi's naming rule; the message names the value and the rule. */
public final class InvalidContextNameException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    public InvalidContextNameException(String name) {
        // escaped: a name holding a newline (from $CHIBI_CONTEXT, say) would split the one-line message
        super("invalid context name '" + dev.chibifs.path.Names.shown(String.valueOf(name)) + "': " + ContextNames.RULE);
    }
}
