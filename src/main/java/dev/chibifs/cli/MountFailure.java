package dev.chibifs.cli;

/** An expected failure of a command (mount failed, not mounted, busy): exit code 1 and one line. */
final class MountFailure extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public MountFailure(String message) {
        super(message);
    }
}
