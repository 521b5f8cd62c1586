package dev.chibifs.sys;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
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

    /**
     * Whether process {@code pid} is stopped (SIGSTOP, a terminal's SIGTSTP, a debugger): it does
     * nothing, exiting included, until continued. False where /proc cannot tell (gone already).
     */
    public static boolean stopped(long pid) {
        try {
            return field(Path.of("/proc", Long.toString(pid), "status"), "State")
                    .map(state -> state.startsWith("T") || state.startsWith("t")).orElse(false);
        } catch (IOException | RuntimeException unknown) {
            return false;
        }
    }

    /** What {@link #groups} answers where /proc cannot tell: no group. */
    private static final long[] NO_GROUPS = new long[0];

    /**
     * The supplementary groups of thread {@code tid} ({@code Groups:}, what libfuse's
     * fuse_req_getgroups reads), where its file system ids ({@code Uid:} and {@code Gid:}'s fourth
     * value) are still {@code fsuid} and {@code fsgid}: the thread of a request may have been killed
     * and its id given to another process since. None where /proc cannot tell (gone, another PID
     * namespace, a line not as expected).
     */
    public static long[] groups(long tid, long fsuid, long fsgid) {
        if (tid <= 0) {
            return NO_GROUPS; // the kernel's pid for a caller the daemon's PID namespace does not see
        }
        try {
            return groups(Files.readAllLines(Path.of("/proc", Long.toString(tid), "status"), StandardCharsets.UTF_8),
                    fsuid, fsgid);
        } catch (IOException | RuntimeException unknown) {
            return NO_GROUPS;
        }
    }

    /** {@link #groups(long, long, long)} by the lines of a status file. */
    static long[] groups(List<String> status, long fsuid, long fsgid) {
        long[] groups = null;
        boolean sameIds = true;
        int idsSeen = 0;
        for (String line : status) {
            int colon = line.indexOf(':');
            String name = colon < 0 ? "" : line.substring(0, colon);
            String[] values = line.substring(colon + 1).strip().split("\\s+");
            switch (name) {
                case "Uid", "Gid" -> {
                    idsSeen++;
                    sameIds &= values.length == 4 && Long.parseLong(values[3]) == (name.equals("Uid") ? fsuid : fsgid);
                }
                case "Groups" -> groups = values[0].isEmpty() ? NO_GROUPS
                        : Arrays.stream(values).mapToLong(Long::parseLong).toArray();
                default -> {
                }
            }
        }
        return groups != null && sameIds && idsSeen == 2 ? groups : NO_GROUPS;
    }

    /** Whether capability set {@code caps} (a CapEff value, hex) holds CAP_SYS_ADMIN. */
    public static boolean hasSysAdmin(String caps) {
        return (Long.parseUnsignedLong(caps, 16) & (1L << Linux.CAP_SYS_ADMIN)) != 0;
    }
}
