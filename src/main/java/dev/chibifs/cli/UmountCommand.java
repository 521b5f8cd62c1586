package dev.chibifs.cli;

import dev.chibifs.fuse.FuseMount;
import dev.chibifs.fuse.MountTable;
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
        if (daemon.isPresent() && !lazy) {
            try {
                daemon.get().onExit().get(WAIT_SECONDS, TimeUnit.SECONDS);
            } catch (Exception e) {
                throw new MountFailure("unmounted " + mp + ", but its daemon (pid " + daemon.get().pid()
                        + ") has not exited after " + WAIT_SECONDS + " s");
            }
        }
        return ExitCodes.OK;
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
