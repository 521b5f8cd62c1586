package dev.chibifs.cli;

/** The exit codes every chibifs command uses. */
public final class ExitCodes {
    public static final int OK = 0;
    public static final int FAILURE = 1;
    public static final int USAGE = 2;

    private ExitCodes() {
    }
}
