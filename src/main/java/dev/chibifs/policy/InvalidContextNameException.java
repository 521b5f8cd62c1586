package dev.chibifs.policy;

/** A context name that breaks chibi's naming rule; the message names the value and the rule. */
public final class InvalidContextNameException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    public InvalidContextNameException(String name) {
        super("invalid context name '" + name + "': " + ContextNames.RULE);
    }
}
