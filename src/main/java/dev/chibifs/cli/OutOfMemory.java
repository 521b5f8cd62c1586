package dev.chibifs.cli;

import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;

/**
 * A command that ran out of Java heap: one line on stderr and {@link ExitCodes#OUT_OF_MEMORY}.
 * Not the JVM's {@code -XX:+ExitOnOutOfMemoryError}, which the launcher keeps for {@code mount}
 * only: it exits 3, the zone policy's code, and says so on stdout, where {@code tool | chibifs
 * cache put} passed that line on as the tool's output. The line is made before it is needed:
 * what is left of the heap then may not hold it.
 */
final class OutOfMemory {

    private static final byte[] LINE = (ErrorHandler.PREFIX + "out of memory: this command needed more than the Java heap's "
            + (Runtime.getRuntime().maxMemory() >> 20) + " MiB (give it more with CHIBIFS_JAVA_OPTS=-Xmx...)\n")
            .getBytes(StandardCharsets.UTF_8);

    private OutOfMemory() {
    }

    /** Says so on {@code err}; returns the exit code. */
    static int report(OutputStream err) {
        try {
            err.write(LINE);
            err.flush();
        } catch (IOException | RuntimeException | OutOfMemoryError unsaid) {
            // the exit code says it still
        }
        return ExitCodes.OUT_OF_MEMORY;
    }

    /**
     * Ends the process the same way where another thread (an S3 store's upload, a prefetch) ran
     * out: that thread alone would die, and the command wait for it for ever.
     */
    static void endTheProcessWhereAnyThreadRunsOut() {
        OutputStream err = new FileOutputStream(FileDescriptor.err);
        Thread.UncaughtExceptionHandler before = Thread.getDefaultUncaughtExceptionHandler();
        Thread.setDefaultUncaughtExceptionHandler((thread, e) -> {
            if (e instanceof OutOfMemoryError) {
                Runtime.getRuntime().halt(report(err));
            }
            if (before != null) {
                before.uncaughtException(thread, e);
            } else {
                printAsTheJvmWould(thread, e);
            }
        });
    }

    /**
     * The JVM's own report of an exception no handler took. Not the thread group's
     * uncaughtException: it hands the exception to the default handler, this one, which handed it
     * back, until the stack overflowed and all a failing command said was "StackOverflowError
     * thrown from the UncaughtExceptionHandler", never what had failed.
     */
    static void printAsTheJvmWould(Thread thread, Throwable e) {
        System.err.print("Exception in thread \"" + thread.getName() + "\" ");
        e.printStackTrace(System.err);
    }
}
