package dev.chibifs.cli;

/** The exit codes every chibifs command uses. */
public final class ExitCodes {
    public static final int OK = 0;
    public static final int FAILURE = 1;
    /** No such file or directory; also grep when nothing matched, as grep does. */
    public static final int NOT_FOUND = 1;
    public static final int USAGE = 2;
    /** The zone policy (or the operating system) refused the caller. */
    public static final int PERMISSION_DENIED = 3;
    /** The path is in the wrong kind or state: edit matched zero or several times, a directory where a file is needed, ... */
    public static final int CONFLICT = 4;
    /** Any other I/O error. */
    public static final int IO_ERROR = 5;
    /**
     * Standard output could not be written (a full disk, a closed descriptor): an I/O error, said
     * as coreutils say it ({@code chibifs: write error: No space left on device}).
     */
    public static final int OUTPUT_FAILED = IO_ERROR;
    /** The command ran out of Java heap ({@link OutOfMemory}): not 3, the code HotSpot's own exit on it takes. */
    public static final int OUT_OF_MEMORY = 6;
    /**
     * What reads the output has gone ({@code trace | head -1}): 128 + SIGPIPE, as a shell shows a
     * program that the signal ended; the JVM ignores SIGPIPE, so a following command would run on.
     */
    public static final int READER_GONE = 141;

    private ExitCodes() {
    }
}
