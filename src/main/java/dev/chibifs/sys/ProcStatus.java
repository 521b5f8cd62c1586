package dev.chibifs.sys;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

/** Fields of a {@code /proc/PID/status} file ({@code Name:\tvalue} lines), for the few things only it tells. */
public final class ProcStatus {

    /** This process's. */
    public static final Path SELF = Path.of("/proc/self/status");

    private ProcStatus() {
    }

    /** The value of field {@code name} (without its colon), stripped; empty where the file has no such line. */
    public static Optional<String> field(Path status, String name) throws IOException {
        String prefix = name + ":";
        for (String line : Files.readAllLines(status, StandardCharsets.UTF_8)) {
            if (line.startsWith(prefix)) {
                return Optional.of(line.substring(prefix.length()).strip());
            }
        }
        return Optional.empty();
    }

    /**
     * Whether thread {@code tid} is being killed: SIGKILL pending, which is what the kernel makes of
     * every fatal signal (SIGKILL itself, and SIGTERM or SIGINT the process does not handle) for each
     * of the process's threads. False where /proc cannot tell (gone already, another PID namespace).
     */
    public static boolean dying(long tid) {
        long kill = 1L << (Linux.SIGKILL - 1);
        try {
            Path status = Path.of("/proc", Long.toString(tid), "status");
            for (String pending : new String[] {"SigPnd", "ShdPnd"}) { // the thread's, the process's
                Optional<String> mask = field(status, pending);
                if (mask.isPresent() && (Long.parseUnsignedLong(mask.get(), 16) & kill) != 0) {
                    return true;
                }
            }
        } catch (IOException | RuntimeException unknown) {
            // no such thread, or a line not as expected: not known to be dying
        }
        return false;
    }

    /** Whether capability set {@code caps} (a CapEff value, hex) holds CAP_SYS_ADMIN. */
    public static boolean hasSysAdmin(String caps) {
        return (Long.parseUnsignedLong(caps, 16) & (1L << Linux.CAP_SYS_ADMIN)) != 0;
    }
}
