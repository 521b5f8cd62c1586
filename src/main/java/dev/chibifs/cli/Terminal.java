package dev.chibifs.cli;

import java.io.InputStream;
import java.io.OutputStream;
import java.util.Map;

/**
 * What a command sees of its process: the environment and the standard streams. Injected so
 * tests run commands in-process with their own environment and captured output.
 *
 * @param env the environment ({@code CHIBI_HOME}, {@code CHIBI_CONTEXT})
 * @param in  standard input, read as bytes
 * @param out standard output, written as bytes (cat must be byte-exact)
 * @param err standard error
 */
record Terminal(Map<String, String> env, InputStream in, OutputStream out, OutputStream err) {

    /** {@code System.getenv()} and the JVM's standard streams, as {@code System.setOut} left them. */
    public static Terminal system() {
        return new Terminal(System.getenv(), System.in, System.out, System.err);
    }

    /**
     * The real process, whose output is descriptor 1 itself ({@link StandardOutput}): a failed
     * write there is the command's failure, where {@code System.out} would keep it to itself.
     */
    static Terminal process() {
        return new Terminal(System.getenv(), System.in, new StandardOutput(), System.err);
    }
}
