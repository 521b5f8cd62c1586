package dev.chibifs.cli;

import dev.chibifs.path.Names;
import dev.chibifs.fuse.FuseMount;
import dev.chibifs.fuse.MountTable;
import dev.chibifs.store.Storage;
import dev.chibifs.sys.ProcStatus;
import dev.chibifs.sys.Syscalls;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;

/** {@code chibifs umount}: unmount and wait until the daemon has exited. */
@Command(name = "umount", mixinStandardHelpOptions = true,
        description = "Unmount MOUNTPOINT and wait until its daemon has exited.",
        footer = {"", "An S3 store's daemon uploads what is pending before it exits: umount waits as long as that"
                + " goes on, saying how much is left; where S3 refuses a change, or is away, it says that what"
                + " fails again is left in the daemon's cache directory for the next mount.",
                "", "Exit codes: 0 unmounted, or not mounted but a dead daemon's record of it removed; 1 not mounted, another user's mount, busy, or the daemon did not exit"
                + " (its upload stalled);"
                + " 2 usage."})
final class UmountCommand implements Callable<Integer>, ConfigCheck.Exempt {

    /** With --force, how long the daemon has to exit once its connection is aborted, before SIGKILL. */
    private static final long FORCE_WAIT_SECONDS = 5;

    @Spec
    CommandSpec spec;

    @Option(names = {"-z", "--lazy"},
            description = "Detach now even if files are open; the daemon exits when they are closed.")
    boolean lazy;

    @Option(names = {"-f", "--force"},
            description = "For a mount whose daemon no longer answers: abort its FUSE connection first, so every"
                    + " process waiting on it fails at once (ENOTCONN), unmount (lazily if still busy) and end the"
                    + " daemon. As root, or with fusectl mounted. Of a mount already unmounted whose daemon still runs"
                    + " (stopped, or serving open files): end that daemon.")
    boolean force;

    @Parameters(index = "0", paramLabel = "MOUNTPOINT")
    Path mountpoint;

    private final Path mountTable;
    /** Whose command this is; null: this process's. */
    private final Long uid;

    public UmountCommand() {
        this(MountTable.SYSTEM_TABLE, null);
    }

    /** Tests hand in a mount table of their own, and whose command it is. */
    UmountCommand(Path mountTable, Long uid) {
        this.mountTable = mountTable;
        this.uid = uid;
    }

    @Override
    public Integer call() throws IOException {
        MountpointArgument.requireNamed(mountpoint);
        Path mp = MountCommand.realMountpoint(mountpoint);
        Optional<MountTable.MountEntry> entry = MountTable.find(mountTable, mp);
        long me = uid == null ? MountRegistry.currentUid() : uid;
        if (entry.isEmpty()) {
            Optional<ProcessHandle> detached = findDaemon(mp, me);
            if (force && detached.isPresent()) {
                return endDetachedDaemon(mp, detached.get());
            }
            if (detached.isEmpty() && uid == null) {
                Long gone = removeStaleRecords(mp);
                // root's: status offers it for another user's record too
                List<String> others = removeOthersStaleRecords(mp);
                if (gone != null || !others.isEmpty()) {
                    // status's one fix for a record its daemon left, mounted or not
                    List<String> removed = new ArrayList<>();
                    if (gone != null) {
                        removed.add("the record its daemon (pid " + gone + ", gone) left");
                    }
                    removed.addAll(others);
                    spec.commandLine().getOut().println(ErrorHandler.PREFIX + Names.shown(mp) + " was not mounted; removed "
                            + String.join("; ", removed));
                    spec.commandLine().getOut().flush();
                    return ExitCodes.OK;
                }
            }
            throw new MountFailure(Names.shown(mp) + " is not mounted" + detached.map(d -> " (it was unmounted" + (ProcStatus.stopped(d.pid())
                    ? ", but its daemon, pid " + d.pid() + ", is stopped (SIGSTOP, or a debugger): kill -CONT " + d.pid()
                    + ", or chibifs umount --force " + Names.shown(mp) + " ends it)"
                    : " lazily: its daemon, pid " + d.pid() + ", exits when the files still open on it are closed; chibifs"
                    + " umount --force " + Names.shown(mp) + " ends it now)")).orElse(""));
        }
        if (!entry.get().isChibifs()) {
            throw new MountFailure(Names.shown(mp) + " is a " + entry.get().fsType() + " mount, not chibifs");
        }
        long mounter = entry.get().mounter();
        // fusermount3 would refuse too, but in words about /etc/mtab that say nothing of whose it is
        String notTheirs = anotherUsersMount(mp, entry.get(), me, "unmount it");
        if (notTheirs != null) {
            throw new MountFailure(notTheirs);
        }
        Optional<ProcessHandle> daemon = findDaemon(mp, mounter >= 0 ? mounter : me);
        if (force) {
            return forceUnmount(mp, daemon);
        }
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

    /**
     * Why uid {@code me} may not {@code act} on {@code mount} (at {@code mp}): it is another user's,
     * which only that user or root may act on; null where it is {@code me}'s, {@code me} is root, or
     * the mount names no mounter. umount, stats, trace and sync refuse another user's mount in these
     * words: stats said no daemon was registered, which sent an agent looking for a dead daemon.
     */
    static String anotherUsersMount(Path mp, MountTable.MountEntry mount, long me, String act) {
        long mounter = mount.mounter();
        if (me == 0 || mounter < 0 || mounter == me) {
            return null;
        }
        return Names.shown(mp) + " is another user's mount (uid " + mounter + "): only that user or root can " + act;
    }

    private Integer unmount(Path mp, Optional<ProcessHandle> daemon, int exited) throws IOException {
        String[] failing = new String[2]; // failing, then troubled
        // a stopped daemon (SIGSTOP, a debugger) answers nothing and cannot exit: the advice for a busy
        // mount (--lazy) left what waited on it hung, and the wait for its exit ended after 30 s unexplained
        String stopped = daemon.isPresent() && ProcStatus.stopped(daemon.get().pid())
                ? "its daemon (pid " + daemon.get().pid() + ") is stopped (SIGSTOP, or a debugger)" : null;
        // root's umount of a user's mount asks that user's daemon in that user's registry, as root's stats does
        Path stats = daemon.isPresent() ? statsSocketOf(mp, daemon.get().pid(), registriesToAsk()) : null;
        // asked while it surely answers: one that exits at once after the unmount is never asked
        Storage.Uploads before = daemon.isPresent() && !lazy && stopped == null ? uploadsOf(stats, failing) : null;
        FuseMount.Result r = FuseMount.unmount(mp, lazy);
        if (!r.ok()) {
            if (r.busy() && stopped != null) {
                throw new MountFailure(Names.shown(mp) + " is busy, and " + stopped + ": what waits on it waits until kill -CONT "
                        + daemon.get().pid() + ", or chibifs umount --force ends it");
            }
            if (r.busy()) {
                throw new MountFailure(Names.shown(mp) + " is busy (files or directories on it are in use): close them,"
                        + " or use chibifs umount --lazy");
            }
            // a daemon that died leaves an unanswering mount that only a lazy unmount clears
            FuseMount.Result lazyResult = FuseMount.unmount(mp, true);
            if (!lazyResult.ok()) {
                throw new MountFailure("cannot unmount " + Names.shown(mp) + ": " + r.message());
            }
        }
        if (stopped != null && !lazy) {
            throw new MountFailure("unmounted " + Names.shown(mp) + ", but " + stopped + ": it exits once continued (kill -CONT "
                    + daemon.get().pid() + "), or chibifs umount --force " + Names.shown(mp) + " ends it");
        }
        if (daemon.isPresent() && !lazy) {
            ProcessHandle d = daemon.get();
            String notExited = new DaemonExitWait(millis -> awaitExitMillis(d, exited, millis),
                    () -> uploadsOf(stats, failing), () -> failing[0], () -> failing[1],
                    () -> System.nanoTime() / 1_000_000, spec.commandLine().getErr()::println).await(mp, d.pid(), before);
            if (notExited != null) {
                throw new MountFailure(notExited);
            }
        }
        if (daemon.isEmpty()) {
            forgetKilledDaemon(mp);
        }
        return ExitCodes.OK;
    }

    /**
     * Removes this user's records of {@code mp} whose daemon is gone (stale: not running, or its pid
     * another process now); the pid of the last, or null where there was none.
     */
    private static Long removeStaleRecords(Path mp) throws IOException {
        MountRegistry registry = MountRegistry.forCurrentUser();
        Long gone = null;
        try {
            for (MountRegistry.Entry e : registry.list()) {
                if (e.health() == MountRegistry.Health.STALE && e.record() != null && e.record().mountpoint().equals(mp)) {
                    Files.deleteIfExists(e.file());
                    gone = e.record().pid();
                }
            }
        } catch (IOException unreadable) {
            return gone; // a registry that cannot be read (status says why): "not mounted" says the rest
        }
        if (gone != null) {
            StatsSocket.removeDeadDaemons(registry);
        }
        return gone;
    }

    /**
     * A killed daemon leaves its record ('stale' in chibifs status) and its sockets: nothing else removes them.
     * Root's umount of another user's mount removes that user's too, and says so: else status listed the
     * mount stale still, and offered the removal of the file by hand as a second step.
     */
    private void forgetKilledDaemon(Path mp) throws IOException {
        MountRegistry registry = MountRegistry.forCurrentUser();
        registry.removeDead(mp); // not a detached daemon's of the same mountpoint, which still serves
        StatsSocket.removeDeadDaemons(registry);
        List<String> others = removeOthersStaleRecords(mp);
        if (!others.isEmpty()) {
            spec.commandLine().getOut().println(ErrorHandler.PREFIX + "unmounted " + Names.shown(mp) + "; removed " + String.join("; ", others));
            spec.commandLine().getOut().flush();
        }
    }

    /**
     * As root (this process's uid, not a test's), removes the records of {@code mp} that other users'
     * daemons left when they died, with their sockets ({@link MountRegistry#removeStale}), in every
     * registry status reads; what was removed, one phrase each. One that cannot be removed is said on
     * stderr: the unmount itself went well.
     */
    private List<String> removeOthersStaleRecords(Path mp) {
        List<String> removed = new ArrayList<>();
        if (uid != null || MountRegistry.currentUid() != 0) {
            return removed;
        }
        List<MountRegistry> registries;
        try {
            registries = StatusCommand.hostRegistries();
        } catch (IOException unreadable) {
            return removed; // status says why
        }
        Path own = MountRegistry.forCurrentUser().dir();
        for (MountRegistry r : registries) {
            if (r.dir().equals(own)) {
                continue;
            }
            try {
                Long gone = r.removeStale(mp);
                if (gone != null) {
                    removed.add("the record and sockets its daemon (pid " + gone + ", gone) left in uid " + r.owner()
                            + "'s registry " + r.dir());
                }
            } catch (IOException | RuntimeException e) {
                spec.commandLine().getErr().println(ErrorHandler.PREFIX + "cannot remove the record of " + Names.shown(mp) + " in "
                        + r.dir() + ": " + e.getMessage());
            }
        }
        return removed;
    }


    /**
     * Aborts the connection, then unmounts and ends the daemon. A hung daemon may not even die of
     * SIGKILL while one of its threads waits in the kernel for a process that waits for its reply
     * (a notification and a directory lock): the abort ends that process's request, and then both.
     */
    private Integer forceUnmount(Path mp, Optional<ProcessHandle> daemon) throws IOException {
        int exited = daemon.isPresent() ? Syscalls.pidfdOpen(daemon.get().pid()) : -1;
        try {
            if (!FuseMount.abort(mp.toString())) {
                throw new MountFailure("cannot abort the FUSE connection of " + Names.shown(mp) + ": run as root, or mount fusectl"
                        + " (mount -t fusectl none /sys/fs/fuse/connections)");
            }
            // as root the abort (umount2 MNT_FORCE) may have unmounted it already; files still open keep it busy
            if (MountTable.find(mp).isPresent()) {
                FuseMount.Result r = FuseMount.unmount(mp, true);
                if (!r.ok() && MountTable.find(mp).isPresent()) {
                    throw new MountFailure("aborted, but cannot unmount " + Names.shown(mp) + ": " + r.message());
                }
            }
            // a stopped daemon (SIGSTOP, a debugger) cannot exit before it is continued: not waited for
            if (daemon.isPresent() && (ProcStatus.stopped(daemon.get().pid()) || !awaitExit(daemon.get(), exited, FORCE_WAIT_SECONDS))) {
                // its connection is gone: it has nothing left to serve
                daemon.get().destroyForcibly();
                if (!awaitExit(daemon.get(), exited, FORCE_WAIT_SECONDS)) {
                    throw new MountFailure("aborted and unmounted " + Names.shown(mp) + ", but its daemon (pid " + daemon.get().pid()
                            + ") has not exited even after SIGKILL");
                }
                forgetKilledDaemon(mp);
            }
            if (daemon.isEmpty()) {
                // killed before (kill -9): the mount it left is gone now, and so must its record be, or status
                // calls it stale and doctor fails until someone removes the file by hand
                forgetKilledDaemon(mp);
            }
            return ExitCodes.OK;
        } finally {
            if (exited >= 0) {
                Syscalls.close(exited);
            }
        }
    }

    /**
     * --force of a mount already gone (a plain umount of a stopped daemon, or --lazy) whose daemon
     * still runs: it was left stopped, and --force said "unmounted lazily" of it. Ended as a forced
     * unmount ends one, its connection being the mount's, which is gone: SIGKILL at once where it is
     * stopped (it could not exit), else SIGTERM (which closes its stores: an S3 store uploads what is
     * pending) and SIGKILL after {@link #FORCE_WAIT_SECONDS}. The files still open on it get ENOTCONN.
     */
    private Integer endDetachedDaemon(Path mp, ProcessHandle daemon) throws IOException {
        int exited = Syscalls.pidfdOpen(daemon.pid());
        try {
            boolean stopped = ProcStatus.stopped(daemon.pid());
            String how;
            if (stopped) {
                daemon.destroyForcibly();
                how = "it was stopped: SIGKILL";
            } else {
                daemon.destroy();
                how = "SIGTERM";
                if (!awaitExit(daemon, exited, FORCE_WAIT_SECONDS)) {
                    daemon.destroyForcibly();
                    how = "SIGTERM, then SIGKILL after " + FORCE_WAIT_SECONDS + " s";
                }
            }
            if (!awaitExit(daemon, exited, FORCE_WAIT_SECONDS)) {
                throw new MountFailure(Names.shown(mp) + " was not mounted, and its daemon (pid " + daemon.pid() + ") has not exited even"
                        + " after SIGKILL");
            }
            forgetKilledDaemon(mp);
            spec.commandLine().getOut().println(ErrorHandler.PREFIX + Names.shown(mp) + " was unmounted already; ended its daemon (pid "
                    + daemon.pid() + ", " + how + ")");
            spec.commandLine().getOut().flush();
            return ExitCodes.OK;
        } finally {
            if (exited >= 0) {
                Syscalls.close(exited);
            }
        }
    }

    /** How long the daemon has to answer how its uploads go; one that does not is judged as one with none. */
    private static final java.time.Duration UPLOADS_ASKED_WITHIN = java.time.Duration.ofSeconds(2);

    /** The stores' lines of a map the stats socket answers, the root's without its prefix, or null for none. */
    private static String said(com.fasterxml.jackson.databind.JsonNode byPrefix) {
        List<String> why = new ArrayList<>();
        byPrefix.fields().forEachRemaining(f -> why.add(("/".equals(f.getKey()) ? "" : f.getKey() + ": ") + f.getValue().asText()));
        return why.isEmpty() ? null : String.join("; ", why);
    }

    /** The registries a daemon's sockets may be in: this user's, and as root (this process, not a test's) every user's. */
    private List<MountRegistry> registriesToAsk() {
        if (uid == null && MountRegistry.currentUid() == 0) {
            try {
                return StatusCommand.hostRegistries();
            } catch (IOException | RuntimeException unreadable) {
                // this user's own, below
            }
        }
        return List.of(MountRegistry.forCurrentUser());
    }

    /**
     * The stats socket of daemon {@code pid} of {@code mp}: in the registry of {@code registries} that
     * records it live, as status believes records (root's umount of a user's mount asked root's own
     * registry, where the user's daemon has none, and showed none of the upload lines the user's own
     * umount shows); else this user's.
     */
    static Path statsSocketOf(Path mp, long pid, List<MountRegistry> registries) {
        for (MountRegistry r : registries) {
            try {
                for (MountRegistry.Entry e : r.list()) {
                    if (e.record() != null && e.record().pid() == pid && e.record().mountpoint().equals(mp)
                            && (e.health() == MountRegistry.Health.ACTIVE || e.health() == MountRegistry.Health.DETACHED)) {
                        return StatsSocket.pathFor(r, pid);
                    }
                }
            } catch (IOException | RuntimeException unreadable) {
                // the next registry
            }
        }
        return StatsSocket.pathFor(MountRegistry.forCurrentUser(), pid);
    }

    /**
     * What the daemon answering at {@code socket} says waits to go up, or null where it does not
     * answer; {@code failing[0]}: why its stores that fail until someone acts fail, {@code failing[1]}:
     * why their last write-back failed (S3 refusing an object, S3 away); each null for none.
     */
    private static Storage.Uploads uploadsOf(Path socket, String[] failing) {
        try {
            com.fasterxml.jackson.databind.JsonNode stats = StatsSocket.readWithin(socket, UPLOADS_ASKED_WITHIN);
            com.fasterxml.jackson.databind.JsonNode u = stats == null ? null : stats.get("uploads");
            if (u == null) {
                return null;
            }
            failing[0] = said(stats.path("failing"));
            failing[1] = said(stats.path("troubles"));
            return new Storage.Uploads(u.path("changes").asInt(), u.path("bytes").asLong(),
                    u.path("sentBytes").asLong(), u.path("readBytes").asLong());
        } catch (RuntimeException unreadable) {
            return null;
        }
    }

    /**
     * Whether the daemon exited within {@code seconds}. Exited is enough: its parent (init,
     * once the launcher is gone) reaps it when it gets to it, and this VM's init took 2 s, under
     * load much longer, while {@code onExit} waits for the reaping. A pidfd tells the exit itself;
     * without one (Linux before 5.3), onExit.
     */
    private static boolean awaitExit(ProcessHandle daemon, int exited, long seconds) {
        return awaitExitMillis(daemon, exited, TimeUnit.SECONDS.toMillis(seconds));
    }

    private static boolean awaitExitMillis(ProcessHandle daemon, int exited, long millis) {
        if (exited >= 0) {
            return Syscalls.awaitReadable(exited, (int) millis);
        }
        try {
            daemon.onExit().get(millis, TimeUnit.MILLISECONDS);
            return true;
        } catch (Exception e) {
            return false;
        }
    }

    /**
     * The daemon serving {@code mp}, made by uid {@code mounter}: from this user's registry, else (a
     * daemon of another user, or one that could not record itself) a process of the mounter's that
     * holds a FUSE device and whose arguments are a chibifs mount of that mountpoint.
     */
    static Optional<ProcessHandle> findDaemon(Path mp, long mounter) {
        return findDaemon(mp, mounter, MountRegistry::uidOf, MountRegistry::holdsFuseDevice);
    }

    /**
     * As root, the daemon that the registry of {@code mounter} (another user) records for {@code mp}: a
     * background mount's daemon, started by the launcher, has no --foreground among its arguments, so
     * the process table never found it, and root's umount of a user's mount returned before its daemon
     * had exited (an S3 store's uploads not waited for). Believed as status believes it, and only for a
     * process that runs as the mounter and holds a FUSE device.
     */
    private static Optional<ProcessHandle> mounterRecorded(Path mp, long mounter, java.util.function.LongToIntFunction uidOf,
                                                           java.util.function.LongPredicate holdsFuse) {
        if (mounter <= 0 || MountRegistry.currentUid() != 0) {
            return Optional.empty();
        }
        try {
            for (MountRegistry r : StatusCommand.hostRegistries()) {
                if (r.owner() != mounter) {
                    continue;
                }
                for (MountRegistry.Entry e : r.list()) {
                    if ((e.health() == MountRegistry.Health.ACTIVE || e.health() == MountRegistry.Health.DETACHED)
                            && e.record() != null && e.record().mountpoint().equals(mp)
                            && uidOf.applyAsInt(e.record().pid()) == mounter && holdsFuse.test(e.record().pid())) {
                        return ProcessHandle.of(e.record().pid());
                    }
                }
            }
        } catch (IOException | RuntimeException unreadable) {
            // the process table, as before
        }
        return Optional.empty();
    }

    /**
     * As {@link #findDaemon(Path, long)}, each process's uid and FUSE device told by {@code uidOf} and
     * {@code holdsFuse} (tests). Arguments alone are anyone's to write: another user's python with a
     * daemon's arguments was named root's mount's daemon, waited on, and --force would have killed it.
     */
    static Optional<ProcessHandle> findDaemon(Path mp, long mounter, java.util.function.LongToIntFunction uidOf,
                                              java.util.function.LongPredicate holdsFuse) {
        try {
            for (MountRegistry.Entry e : MountRegistry.forCurrentUser().list()) {
                if (e.record() != null && e.record().mountpoint().equals(mp)) {
                    if (MountRegistry.runsDaemonOf(e.record())) {
                        return ProcessHandle.of(e.record().pid());
                    }
                }
            }
        } catch (IOException | RuntimeException unreadable) {
            // fall back to the process table
        }
        Optional<ProcessHandle> recorded = mounterRecorded(mp, mounter, uidOf, holdsFuse);
        if (recorded.isPresent()) {
            return recorded;
        }
        String want = mp.toString();
        return ProcessHandle.allProcesses().filter(p -> {
            Optional<String[]> args = p.info().arguments();
            if (args.isEmpty() || args.get().length == 0) {
                return false;
            }
            List<String> a = List.of(args.get());
            return a.contains(Main.class.getName()) && a.contains("mount") && a.contains("--foreground")
                    && a.get(a.size() - 1).equals(want)
                    && uidOf.applyAsInt(p.pid()) == mounter && holdsFuse.test(p.pid());
        }).findFirst();
    }
}
