package dev.chibifs.fuse;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** Unmounting through libfuse2's setuid helper, which works for root and for the user who mounted. */
public final class Fusermount {

    /** What fusermount said: its exit code and its message. */
    public record Result(int exitCode, String message) {
        public boolean ok() {
            return exitCode == 0;
        }

        /** True when the mount could not go because files on it are in use. */
        public boolean busy() {
            return message.contains("busy");
        }
    }

    private Fusermount() {
    }

    /** {@code fusermount -u [-z] mountpoint}; lazy detaches at once and lets open files finish. */
    public static Result unmount(Path mountpoint, boolean lazy) {
        // no -q: it would silence "Device or resource busy", the one answer callers must tell apart
        List<String> cmd = new ArrayList<>(List.of("fusermount", "-u"));
        if (lazy) {
            cmd.add("-z");
        }
        cmd.add(mountpoint.toAbsolutePath().normalize().toString());
        try {
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectInput(ProcessBuilder.Redirect.PIPE)
                    .start();
            p.getOutputStream().close();
            byte[] out = p.getInputStream().readAllBytes();
            if (!p.waitFor(30, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                return new Result(124, "fusermount did not finish within 30 s");
            }
            return new Result(p.exitValue(), new String(out, StandardCharsets.UTF_8).trim());
        } catch (IOException e) {
            return new Result(127, "cannot run fusermount (install the 'fuse' package): " + e.getMessage());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return new Result(130, "interrupted");
        }
    }
}
