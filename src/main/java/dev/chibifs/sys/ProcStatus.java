package dev.chibifs.sys;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
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
     * Signals whose default action ends the process (terminate, or core dump): every one below 65
     * but SIGCHLD, SIGCONT, SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU, SIGURG and SIGWINCH.
     */
    private static final long ENDS_BY_DEFAULT;

    static {
        long all = -1L; // signals 1..64 as bits 0..63
        for (int sig : new int[] {Linux.SIGCHLD, Linux.SIGCONT, Linux.SIGSTOP, Linux.SIGTSTP, Linux.SIGTTIN,
                                  Linux.SIGTTOU, Linux.SIGURG, Linux.SIGWINCH}) {
            all &= ~(1L << (sig - 1));
        }
        ENDS_BY_DEFAULT = all;
    }

    /**
     * Whether thread {@code tid} is being killed: SIGKILL pending, which is what the kernel makes of a
     * fatal signal (SIGTERM or SIGINT the process does not handle) for each of the process's threads;
     * or such a signal pending, neither caught, ignored nor blocked, which the kernel did not make
     * SIGKILL because another signal was pending already (a handled SIGINT, then `timeout`'s
     * SIGTERM): the thread ends as soon as its request returns. False where /proc cannot tell (gone
     * already, another PID namespace).
     */
    public static boolean dying(long tid) {
        try {
            return dying(Files.readAllLines(Path.of("/proc", Long.toString(tid), "status"), StandardCharsets.UTF_8));
        } catch (IOException | RuntimeException unknown) {
            // no such thread, or a line not as expected: not known to be dying
        }
        return false;
    }

    /** {@link #dying(long)} by the lines of a status file. */
    static boolean dying(List<String> status) {
        long pending = 0;
        long spared = 0;
        for (String line : status) {
            int colon = line.indexOf(':');
            String name = colon < 0 ? "" : line.substring(0, colon);
            switch (name) {
                case "SigPnd", "ShdPnd" -> pending |= Long.parseUnsignedLong(line.substring(colon + 1).strip(), 16);
                case "SigBlk", "SigIgn", "SigCgt" -> spared |= Long.parseUnsignedLong(line.substring(colon + 1).strip(), 16);
                default -> {
                }
            }
        }
        return (pending & 1L << (Linux.SIGKILL - 1)) != 0 || (pending & ~spared & ENDS_BY_DEFAULT) != 0;
    }

    /** Whether capability set {@code caps} (a CapEff value, hex) holds CAP_SYS_ADMIN. */
    public static boolean hasSysAdmin(String caps) {
        return (Long.parseUnsignedLong(caps, 16) & (1L << Linux.CAP_SYS_ADMIN)) != 0;
    }
}
