package dev.chibifs.cli;

/** A bad option or value the user gave: exit code 2 and the message, which names the value and the rule. */
final class UsageException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public UsageException(String message) {
        super(message);
    }
}
