package dev.chibifs.cli;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The daemon's pid as the registry's readers see it, and what shows that a pid is still the
 * daemon's. A daemon in a pid namespace of its own ({@code unshare -p -f}, systemd's
 * {@code PrivatePIDs=}) that keeps the host's /run had recorded its pid inside that namespace: 1,
 * which on the host is init, so {@code status} called the mount init's and {@code umount} waited
 * on init (and {@code --force} would have killed whatever the host ran under that pid).
 */
final class DaemonPid {

    /** What /proc says of a process ({@code "self"} or a pid); tests give their own. */
    interface Proc {
        /** The text of /proc/PID/status; empty where no such process runs, or it cannot be read. */
        Optional<String> status(String pid);

        /** Where /proc/PID/ns/pid leads, e.g. {@code pid:[4026531836]}; empty where it cannot be read. */
        Optional<String> pidNamespace(String pid);
    }

    /** This host's /proc. */
    static final Proc SYSTEM = new Proc() {
        @Override
        public Optional<String> status(String pid) {
            try {
                return Optional.of(Files.readString(Path.of("/proc", pid, "status")));
            } catch (IOException | RuntimeException gone) {
                return Optional.empty();
            }
        }

        @Override
        public Optional<String> pidNamespace(String pid) {
            try {
                return Optional.of(Files.readSymbolicLink(Path.of("/proc", pid, "ns", "pid")).toString());
            } catch (IOException | RuntimeException unreadable) {
                // gone, or another user's process (reading the link needs ptrace's read access)
                return Optional.empty();
            }
        }
    };

    /**
     * A daemon as it records itself: {@code pid} as its /proc counts (the outermost namespace that
     * /proc shows, the host's when the namespace kept the host's /proc), and its pid namespace with
     * its pid there. Namespace null: not known (a record written before these were).
     */
    record Identity(long pid, String namespace, long namespacePid) {
    }

    private DaemonPid() {
    }

    /**
     * The pids of the NSpid line of a /proc/PID/status, outermost namespace first (as many as that
     * /proc shows: its own namespace and those below); empty when there is none (Linux before 4.1).
     */
    static List<Long> nspid(String status) {
        List<Long> pids = new ArrayList<>();
        for (String line : status.split("\n")) {
            if (line.startsWith("NSpid:")) {
                for (String word : line.substring("NSpid:".length()).trim().split("\\s+")) {
                    try {
                        pids.add(Long.parseLong(word));
                    } catch (NumberFormatException e) {
                        return List.of(); // no pid list this code understands: the caller's own pid stands
                    }
                }
            }
        }
        return pids;
    }

    /** This process as the registry records it. */
    static Identity current() {
        return current(SYSTEM, ProcessHandle.current().pid());
    }

    /** The process {@code getpid} names in its own pid namespace, as {@code proc} tells of {@code self}. */
    static Identity current(Proc proc, long getpid) {
        List<Long> pids = proc.status("self").map(DaemonPid::nspid).orElse(List.of());
        long outer = pids.isEmpty() ? getpid : pids.get(0);
        return new Identity(outer, proc.pidNamespace("self").orElse(null), getpid);
    }

    /**
     * Why the pid {@code record} names cannot be believed to be its daemon's, or null when it can
     * (or the record is too old to tell: its pid and start time alone judge it then). A process
     * that is gone is not doubted here: the registry says it is not running.
     */
    static String doubt(MountRecord record, Proc proc) {
        if (record.pidNamespace() == null) {
            return null;
        }
        String pid = Long.toString(record.pid());
        Optional<String> status = proc.status(pid);
        if (status.isEmpty()) {
            return null;
        }
        Optional<String> namespace = proc.pidNamespace(pid);
        if (namespace.isEmpty()) {
            return "pid " + pid + "'s pid namespace cannot be read here, so it cannot be told whether it is the daemon"
                    + " (" + record.pidNamespace() + ")";
        }
        if (!namespace.get().equals(record.pidNamespace())) {
            return "pid " + pid + " here is a process of " + namespace.get() + "; the daemon recorded it in "
                    + record.pidNamespace() + ", whose pids this /proc does not show (run chibifs where the daemon"
                    + " runs, or let its pid namespace keep the host's /proc)";
        }
        List<Long> pids = nspid(status.get());
        if (!pids.isEmpty() && pids.get(pids.size() - 1) != record.namespacePid()) {
            return "pid " + pid + " is another process of the daemon's pid namespace now (pid "
                    + pids.get(pids.size() - 1) + " there, the daemon was " + record.namespacePid() + ")";
        }
        return null;
    }
}
