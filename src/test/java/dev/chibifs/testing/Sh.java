package dev.chibifs.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/** Runs real programs through {@code sh -c}, bounded by {@code timeout} so a hung mount cannot hang the suite. */
public final class Sh {

    /** Seconds any one command may take before it is killed. */
    public static final int TIMEOUT_SECONDS = 120;

    /** What a command did. */
    public record Result(int exitCode, String out, String err) {
        public Result ok() {
            if (exitCode != 0) {
                throw new AssertionError("command failed (" + exitCode + "): " + err + out);
            }
            return this;
        }
    }

    private Sh() {
    }

    /** Runs {@code script} as the current user in {@code dir} (or the working directory when null). */
    public static Result run(Path dir, String script) {
        return exec(dir, List.of("timeout", "-k", "5", String.valueOf(TIMEOUT_SECONDS), "sh", "-c", script));
    }

    public static Result run(String script) {
        return run(null, script);
    }

    /** Runs {@code script} as {@code uid}/{@code gid} with no supplementary groups (needs root). */
    public static Result as(long uid, long gid, Path dir, String script) {
        return exec(dir, List.of("timeout", "-k", "5", String.valueOf(TIMEOUT_SECONDS), "setpriv",
                "--reuid=" + uid, "--regid=" + gid, "--clear-groups", "sh", "-c", script));
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
            CompletableFuture<String> out = CompletableFuture.supplyAsync(() -> read(p.getInputStream()));
            CompletableFuture<String> err = CompletableFuture.supplyAsync(() -> read(p.getErrorStream()));
            if (!p.waitFor(TIMEOUT_SECONDS + 10, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new AssertionError("command hung: " + cmd);
            }
            return new Result(p.exitValue(), out.join(), err.join());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted", e);
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
