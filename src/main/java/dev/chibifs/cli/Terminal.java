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

    /** The real process: {@code System.getenv()} and the JVM's standard streams. */
    public static Terminal system() {
        return new Terminal(System.getenv(), System.in, System.out, System.err);
    }
}
