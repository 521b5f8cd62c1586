package dev.chibifs.cli;

import dev.chibifs.fuse.FuseMount;
import dev.chibifs.fuse.MountTable;
import dev.chibifs.sys.Syscalls;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;

/** {@code chibifs umount}: unmount and wait until the daemon has exited. */
@Command(name = "umount", mixinStandardHelpOptions = true,
        description = "Unmount MOUNTPOINT and wait until its daemon has exited.",
        footer = {"", "Exit codes: 0 unmounted; 1 not mounted, busy, or the daemon did not exit; 2 usage."})
public final class UmountCommand implements Callable<Integer> {

    private static final long WAIT_SECONDS = 30;

    @Spec
    CommandSpec spec;

    @Option(names = {"-z", "--lazy"},
            description = "Detach now even if files are open; the daemon exits when they are closed.")
    boolean lazy;

    @Parameters(index = "0", paramLabel = "MOUNTPOINT")
    Path mountpoint;

    @Override
    public Integer call() throws IOException {
        Path mp = mountpoint.toAbsolutePath().normalize();
        Optional<MountTable.MountEntry> entry = MountTable.find(mp);
        if (entry.isEmpty()) {
            throw new MountFailure(mp + " is not mounted");
        }
        if (!entry.get().isChibifs()) {
            throw new MountFailure(mp + " is a " + entry.get().fsType() + " mount, not chibifs");
        }
        Optional<ProcessHandle> daemon = findDaemon(mp);
        // opened before the unmount, while the pid is surely the daemon's (it cannot be reused yet)
        int exited = daemon.isPresent() && !lazy ? Syscalls.pidfdOpen(daemon.get().pid()) : -1;
        try {
            return unmount(mp, daemon, exited);
        } finally {
            if (exited >= 0) {
                Syscalls.close(exited);
            }
        }
    }

    private Integer unmount(Path mp, Optional<ProcessHandle> daemon, int exited) throws IOException {
        FuseMount.Result r = FuseMount.unmount(mp, lazy);
        if (!r.ok()) {
            if (r.busy()) {
                throw new MountFailure(mp + " is busy (files or directories on it are in use): close them,"
                        + " or use chibifs umount --lazy");
            }
            // a daemon that died leaves an unanswering mount that only a lazy unmount clears
            FuseMount.Result lazyResult = FuseMount.unmount(mp, true);
            if (!lazyResult.ok()) {
                throw new MountFailure("cannot unmount " + mp + ": " + r.message());
            }
        }
        if (daemon.isPresent() && !lazy && !awaitExit(daemon.get(), exited)) {
            throw new MountFailure("unmounted " + mp + ", but its daemon (pid " + daemon.get().pid()
                    + ") has not exited after " + WAIT_SECONDS + " s");
        }
        return ExitCodes.OK;
    }

    /**
     * Whether the daemon exited within {@link #WAIT_SECONDS}. Exited is enough: its parent (init,
     * once the launcher is gone) reaps it when it gets to it, and this VM's init took 2 s, under
     * load much longer, while {@code onExit} waits for the reaping. A pidfd tells the exit itself;
     * without one (Linux before 5.3), onExit.
     */
    private static boolean awaitExit(ProcessHandle daemon, int exited) {
        if (exited >= 0) {
            return Syscalls.awaitReadable(exited, (int) TimeUnit.SECONDS.toMillis(WAIT_SECONDS));
        }
        try {
            daemon.onExit().get(WAIT_SECONDS, TimeUnit.SECONDS);
            return true;
        } catch (Exception e) {
            return false;
        }
    }

    /**
     * The daemon serving {@code mp}: from this user's registry, else (a daemon of another user, or one
     * that could not record itself) a chibifs mount process whose arguments end with that mountpoint.
     */
    static Optional<ProcessHandle> findDaemon(Path mp) {
        try {
            for (MountRegistry.Entry e : MountRegistry.forCurrentUser().list()) {
                if (e.record() != null && e.record().mountpoint().equals(mp)) {
                    Optional<ProcessHandle> p = ProcessHandle.of(e.record().pid());
                    if (p.isPresent()) {
                        return p;
                    }
                }
            }
        } catch (IOException | RuntimeException unreadable) {
            // fall back to the process table
        }
        String want = mp.toString();
        return ProcessHandle.allProcesses().filter(p -> {
            Optional<String[]> args = p.info().arguments();
            if (args.isEmpty() || args.get().length == 0) {
                return false;
            }
            List<String> a = List.of(args.get());
            return a.contains(Main.class.getName()) && a.contains("mount") && a.contains("--foreground")
                    && a.get(a.size() - 1).equals(want);
        }).findFirst();
    }
}
