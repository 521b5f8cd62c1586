package dev.chibifs.sys;

/**
 * A spec the user wrote ({@code --store}, {@code -o}, an S3 URI, a flock registry) that breaks its
 * rule; the message names the value and the rule. The CLI answers it with one line and exit code 2,
 * so a plain {@link IllegalArgumentException} stays what it is: a bug, shown with its stack trace.
 */
public final class InvalidSpecException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    public InvalidSpecException(String message) {
        super(message);
    }
}
