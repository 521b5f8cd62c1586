package dev.chibifs.cli;

/** An expected failure a command detects itself (a conflict, nothing matched): one line and an exit code. */
final class CommandFailure extends Exception {
    private static final long serialVersionUID = 1L;

    private final int exitCode;

    CommandFailure(int exitCode, String message) {
        super(message);
        this.exitCode = exitCode;
    }

    /** Exit code 4: the path is there but in the wrong kind or state for the operation. */
    static CommandFailure conflict(String message) {
        return new CommandFailure(ExitCodes.CONFLICT, message);
    }

    int exitCode() {
        return exitCode;
    }
}
