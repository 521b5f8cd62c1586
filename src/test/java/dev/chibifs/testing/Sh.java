package dev.chibifs.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

/** Runs real programs through {@code sh -c}, bounded by {@code timeout} so a hung mount cannot hang the suite. */
public final class Sh {

    /** Seconds any one command may take before it is killed. */
    public static final int TIMEOUT_SECONDS = 120;
    /** How long the output may stay open after the command ended (a background child finishing). */
    private static final int OUTPUT_GRACE_SECONDS = 30;

    /** What a command did. */
    public record Result(int exitCode, String out, String err) {
        public Result ok() {
            if (exitCode != 0) {
                throw new AssertionError("command failed (" + exitCode + "): " + err + out);
            }
            return this;
        }
    }

    /**
     * Threads of their own that read the commands' pipes: CompletableFuture's default executor is
     * the common ForkJoinPool on JDK 25 even where it has one thread (2 CPUs), where JDK 17 starts a
     * thread per task, so a read queued behind a test's own blocking async task never ran.
     */
    private static final ExecutorService PIPE_READERS = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "sh-pipe-reader");
        t.setDaemon(true);
        return t;
    });

    private Sh() {
    }

    /** Runs {@code script} as the current user in {@code dir} (or the working directory when null). */
    public static Result run(Path dir, String script) {
        return exec(dir, List.of("timeout", "-k", "5", String.valueOf(TIMEOUT_SECONDS), "sh", "-c", script));
    }

    public static Result run(String script) {
        return run(null, script);
    }

    /** Runs the Python program {@code program} with {@code args} in {@code dir} (or the working directory when null). */
    public static Result python(Path dir, String program, String... args) {
        Path file;
        try {
            file = java.nio.file.Files.createTempFile("chibifs-test", ".py");
            java.nio.file.Files.writeString(file, program);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        try {
            StringBuilder cmd = new StringBuilder("python3 ").append(quote(file.toString()));
            for (String a : args) {
                cmd.append(' ').append(quote(a));
            }
            return run(dir, cmd.toString());
        } finally {
            try {
                java.nio.file.Files.delete(file);
            } catch (IOException e) {
                // a temporary file left behind harms no test
            }
        }
    }

    /** {@code s} as one word of a {@code sh} command line. */
    public static String quote(String s) {
        return "'" + s.replace("'", "'\\''") + "'";
    }

    /** Runs {@code script} as {@code uid}/{@code gid} with no supplementary groups (needs root). */
    public static Result as(long uid, long gid, Path dir, String script) {
        return exec(dir, List.of("timeout", "-k", "5", String.valueOf(TIMEOUT_SECONDS), "setpriv",
                "--reuid=" + uid, "--regid=" + gid, "--clear-groups", "sh", "-c", script));
    }

    /** Runs {@code script} as {@code uid}/{@code gid} with supplementary group {@code group} alone (needs root). */
    public static Result as(long uid, long gid, long group, Path dir, String script) {
        return exec(dir, List.of("timeout", "-k", "5", String.valueOf(TIMEOUT_SECONDS), "setpriv",
                "--reuid=" + uid, "--regid=" + gid, "--groups=" + group, "sh", "-c", script));
    }

    private static Result exec(Path dir, List<String> cmd) {
        try {
            ProcessBuilder pb = new ProcessBuilder(new ArrayList<>(cmd));
            if (dir != null) {
                pb.directory(dir.toFile());
            }
            pb.environment().put("LC_ALL", "C.UTF-8");
            pb.environment().put("HOME", "/tmp");
            Process p = pb.redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null"))).start();
            CompletableFuture<String> out = CompletableFuture.supplyAsync(() -> read(p.getInputStream()), PIPE_READERS);
            CompletableFuture<String> err = CompletableFuture.supplyAsync(() -> read(p.getErrorStream()), PIPE_READERS);
            if (!p.waitFor(TIMEOUT_SECONDS + 10, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new AssertionError("command hung: " + cmd);
            }
            return new Result(p.exitValue(), output(out, cmd), output(err, cmd));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted", e);
        }
    }

    /**
     * What the command wrote, once its last writer closed the pipe. A process it left behind in a
     * hung mount (uninterruptible, so timeout's kill does not end it) keeps the pipe open: waiting
     * for it would outlast JUnit's timeout, which cannot interrupt a join, and hang the suite.
     */
    private static String output(CompletableFuture<String> stream, List<String> cmd) throws InterruptedException {
        try {
            return stream.get(OUTPUT_GRACE_SECONDS, TimeUnit.SECONDS);
        } catch (java.util.concurrent.TimeoutException e) {
            throw new AssertionError("command ended, but a process it started still holds its output"
                    + " (waiting in a hung mount?): " + cmd);
        } catch (java.util.concurrent.ExecutionException e) {
            return "";
        }
    }

    private static String read(java.io.InputStream in) {
        try {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            return "";
        }
    }
}
