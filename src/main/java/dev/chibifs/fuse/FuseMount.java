package dev.chibifs.fuse;

import dev.chibifs.path.Names;
import dev.chibifs.sys.ErrnoException;
import dev.chibifs.sys.Errors;
import dev.chibifs.sys.LibC;
import dev.chibifs.sys.Linux;
import dev.chibifs.sys.Syscalls;
import jnr.posix.CmsgHdr;
import jnr.posix.MsgHdr;
import jnr.posix.POSIX;
import jnr.posix.POSIXFactory;
import jnr.posix.SpawnFileAction;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.Closeable;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * Mounting and unmounting without libfuse. As root: open /dev/fuse and mount(2) it. Otherwise
 * (or with auto_unmount, which needs a process that outlives the daemon): the setuid
 * {@code fusermount3} (else {@code fusermount}) mounts and hands the open device back over a
 * socket. Neither waits for the kernel's INIT: the session answers it, and the caller probes.
 */
public final class FuseMount {

    private static final Logger LOG = LoggerFactory.getLogger(FuseMount.class);

    /** How long fusermount may take; it only waits on a mountpoint that hangs (a dead network mount). */
    static final long HELPER_TIMEOUT_MILLIS = 30_000;
    private static final String COMMFD = "_FUSE_COMMFD";
    /** The descriptor number fusermount finds its socket at. */
    private static final int CHILD_COMMFD = 3;
    private static final List<Path> HELPER_FALLBACK_DIRS = List.of(Path.of("/usr/bin"), Path.of("/bin"),
            Path.of("/usr/local/bin"));

    /** What an unmount did: ok, or why not; busy when files on the mount are in use. */
    public record Result(boolean ok, boolean busy, String message) {
    }

    private FuseMount() {
    }

    /**
     * Mounts a FUSE file system at {@code mountpoint} as {@code spec} says and returns its device,
     * on which the kernel's INIT is the first request. Throws MountException with one line that
     * says why (mount(2)'s errno, or fusermount's own words); nothing is left mounted then.
     */
    public static FuseDevice mount(Path mountpoint, MountSpec spec) throws MountException {
        Path mp = mountpoint.toAbsolutePath().normalize();
        int kind = kindOf(mp);
        if (kind == Linux.S_IFDIR) {
            requireEmpty(mp, spec);
        }
        if (Syscalls.geteuid() == 0 && !spec.autoUnmount()) {
            try {
                return unlessStacked(mp, mountDirect(mp, kind, spec), spec);
            } catch (ErrnoException e) {
                // root without CAP_SYS_ADMIN (a container, a user namespace): fusermount may still be allowed
                if (e.errno() != Linux.EPERM || helper() == null) {
                    throw new MountException("cannot mount " + Names.shown(mp) + ": mount(2) said " + e.getReason() + hint(e.errno(), spec));
                }
                LOG.debug("mount(2) of {} not permitted; trying fusermount", mp);
            }
        }
        return unlessStacked(mp, mountWithHelper(mp, spec), spec);
    }

    /** Where this process's mount table is: the mounts of its own mount namespace, in the order they came. */
    static final Path MOUNTINFO = Path.of("/proc/self/mountinfo");
    /** How long a mount that landed in the middle of a stack waits for the racers above it to leave. */
    private static final long STACKED_WAIT_MILLIS = 2_000;

    /**
     * The device of a mount just made at {@code mp}, unless it landed on another mount that came there
     * after the emptiness check: two mounts racing to one empty directory both passed the check, and
     * the kernel stacked the second on the first, hiding it. The later one (on top) then unmounts
     * itself (lazily, and only while it is the topmost, since an unmount by path takes the top one)
     * and fails as {@link #requireEmpty} fails a mount that comes second, naming the mount below it.
     * Ours is the mount the path reached right after mount(2) (statx, asking our file system
     * nothing, whose INIT waits unanswered): a racer that stacked between the two calls would be
     * taken for ours, a window of microseconds, not the milliseconds between the check and mount(2).
     */
    private static FuseDevice unlessStacked(Path mp, FuseDevice device, MountSpec spec) throws MountException {
        long ours = Syscalls.mountIdAt(mp.toString());
        List<MountTable.InfoLine> stack;
        try {
            stack = MountTable.stackAt(MOUNTINFO, mp.toString());
        } catch (IOException e) {
            LOG.debug("cannot read {} after mounting {}: {}", MOUNTINFO, mp, e.toString());
            return device;
        }
        Optional<MountTable.InfoLine> below = landedOn(stack, ours);
        if (below.isEmpty()) {
            return device;
        }
        int mine = ours >= 0 && stack.stream().anyMatch(m -> m.id() == ours) ? (int) ours : stack.get(stack.size() - 1).id();
        LOG.debug("mounted {} (mount {}) on top of mount {} ({}), which came there meanwhile: unmounting ours", mp, mine,
                below.get().id(), below.get().type());
        String left = backOut(mp, device, mine, spec);
        throw new MountException("mountpoint " + Names.shown(mp) + " is already a mount point (" + below.get().type()
                + "): another mount took it meanwhile" + left, below.get().entry());
    }

    /**
     * The mount ours (mount id {@code ours}; -1: unknown, then the topmost is taken for ours) landed
     * on in {@code stack}, the mounts at its mountpoint bottom first; empty where ours is alone
     * there or at the bottom (a racer above it backs out), so ours stays.
     */
    static Optional<MountTable.InfoLine> landedOn(List<MountTable.InfoLine> stack, long ours) {
        int found = indexOf(stack, ours);
        int at = found >= 0 ? found : stack.size() - 1;
        return at <= 0 ? Optional.empty() : Optional.of(stack.get(at - 1));
    }

    /** Where mount {@code id} is in {@code stack} (its last place), or -1 where it is not. */
    private static int indexOf(List<MountTable.InfoLine> stack, long id) {
        for (int i = stack.size() - 1; i >= 0; i--) {
            if (stack.get(i).id() == id) {
                return i;
            }
        }
        return -1;
    }

    /**
     * Takes our mount {@code id} at {@code mp} away and closes its device; "" once it is gone, else
     * what is left. With auto_unmount, fusermount unmounts it once the device closes; else ours is
     * unmounted by path once it is the topmost there (the racers mounted above it back out too).
     */
    private static String backOut(Path mp, FuseDevice device, int id, MountSpec spec) {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(STACKED_WAIT_MILLIS);
        if (spec.autoUnmount()) {
            device.close(); // fusermount, waiting on its socket, unmounts the topmost: ours
        }
        while (true) {
            List<MountTable.InfoLine> stack;
            try {
                stack = MountTable.stackAt(MOUNTINFO, mp.toString());
            } catch (IOException e) {
                device.close();
                return " (this mount's own could not be told apart: " + e.getMessage() + ")";
            }
            int at = indexOf(stack, id);
            if (at < 0) {
                device.close();
                return "";
            }
            if (at == stack.size() - 1 && !spec.autoUnmount()) {
                Result r = unmount(mp, true);
                device.close(); // after the unmount: closed first, our mount would answer ENOTCONN meanwhile
                return r.ok() ? "" : " (and this mount's own could not be undone: " + r.message() + ")";
            }
            if (System.nanoTime() - deadline > 0) {
                device.close();
                return " (this mount's own stays below another one, which came on top of it)";
            }
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                device.close();
                return " (interrupted while undoing this mount's own)";
            }
        }
    }

    /**
     * Unmounts {@code mountpoint}; {@code lazy} detaches it at once and lets open files finish. As
     * root with umount2(2) (whatever is mounted there: callers check it is theirs), else with
     * {@code fusermount3 -u}, which unmounts only FUSE mounts of the calling user.
     */
    public static Result unmount(Path mountpoint, boolean lazy) {
        Path mp = mountpoint.toAbsolutePath().normalize();
        if (Syscalls.geteuid() == 0) {
            // NOFOLLOW: a symbolic link put in place of the mountpoint must not redirect root's unmount
            int flags = Linux.UMOUNT_NOFOLLOW | (lazy ? Linux.MNT_DETACH : 0);
            if (LibC.umount2(LibC.path(mp.toString()), flags) == 0) {
                return new Result(true, false, "");
            }
            int err = LibC.errno();
            if (err != Linux.EPERM || helper() == null) {
                String why = err == Linux.EINVAL ? " (not a mount point)" : "";
                return new Result(false, err == Linux.EBUSY, "cannot unmount " + Names.shown(mp) + ": " + LibC.strerror(err) + why);
            }
        }
        return unmountWithHelper(mp, lazy);
    }

    /**
     * Aborts the FUSE connection of {@code mountpoint}: every request waiting on the daemon ends
     * with ENOTCONN at once. For a session that can no longer answer, whose callers would otherwise
     * wait forever. Through fusectl where it is mounted (the connection is found by the mount's
     * device number in /proc/self/mountinfo, without touching the mount itself: a stat of it would
     * wait too); else, as root, umount2(MNT_FORCE), whose first step for FUSE is that same abort
     * (and which then unmounts, unless the mount is busy). Returns whether it was done.
     */
    public static boolean abort(String mountpoint) {
        try {
            Optional<Path> abort = connection(mountpoint).map(FuseMount::fusectlAbort);
            if (abort.isPresent() && java.nio.file.Files.exists(abort.get())) {
                java.nio.file.Files.writeString(abort.get(), "1");
                return true;
            }
        } catch (IOException | RuntimeException e) {
            LOG.debug("no fusectl abort for {}: {}", mountpoint, e.toString());
        }
        // EBUSY: open files keep the mount, but the abort (umount_begin) came first
        if (Syscalls.geteuid() == 0 && (LibC.umount2(LibC.path(mountpoint), Linux.MNT_FORCE | Linux.UMOUNT_NOFOLLOW) == 0
                || LibC.errno() == Linux.EBUSY)) {
            return true;
        }
        // the caller says so, in its own words (umount --force: one line; the io_uring queue's log)
        LOG.debug("cannot abort the FUSE connection of {}: no fusectl, not root", mountpoint);
        return false;
    }

    /**
     * The FUSE connection of the mount at {@code mountpoint}: its device's minor number, fusectl's
     * name for it, read from /proc/self/mountinfo without touching the mount (a stat of a hung one
     * would wait); empty when no FUSE mount is there.
     */
    public static Optional<String> connection(String mountpoint) throws IOException {
        for (String line : java.nio.file.Files.readAllLines(Path.of("/proc/self/mountinfo"))) {
            MountTable.InfoLine m = MountTable.InfoLine.parse(line);
            if (m != null && m.mountpoint().equals(mountpoint) && m.type().startsWith("fuse")) {
                return Optional.of(m.device().substring(m.device().indexOf(':') + 1));
            }
        }
        return Optional.empty();
    }

    /** fusectl's file that aborts connection {@code connection} (where fusectl is mounted). */
    public static Path fusectlAbort(String connection) {
        return Path.of("/sys/fs/fuse/connections", connection, "abort");
    }

    /** fusermount3, else fusermount, on PATH or in the usual directories; null when neither is there. */
    static Path helper() {
        List<Path> dirs = new ArrayList<>();
        for (String d : System.getenv().getOrDefault("PATH", "").split(":")) {
            if (!d.isEmpty()) {
                dirs.add(Path.of(d));
            }
        }
        dirs.addAll(HELPER_FALLBACK_DIRS);
        for (String name : List.of("fusermount3", "fusermount")) {
            for (Path d : dirs) {
                Path p = d.resolve(name);
                if (Files.isRegularFile(p) && Files.isExecutable(p)) {
                    return p;
                }
            }
        }
        return null;
    }

    /**
     * Refuses a directory {@code mountpoint} with something in it, unless {@code spec} says nonempty:
     * {@link #mount} does, and a mount command before it makes anything for the mount.
     */
    public static void requireEmpty(Path mountpoint, MountSpec spec) throws MountException {
        Path mp = mountpoint.toAbsolutePath().normalize();
        if (!spec.nonempty() && Files.isDirectory(mp) && !isEmpty(mp)) {
            // what it lists may be a mount's root that came there since the caller looked (a second
            // chibifs mount racing to the same empty directory): "not empty, or pass -o nonempty"
            // told the loser to mount on top of the winner
            Optional<MountTable.MountEntry> there = mountedAt(mp);
            if (there.isPresent()) {
                throw new MountException("mountpoint " + Names.shown(mp) + " is already a mount point (" + there.get().fsType()
                        + "): another mount took it meanwhile", there.get());
            }
            throw new MountException("mountpoint " + Names.shown(mp) + " is not empty: choose an empty directory, or pass -o nonempty");
        }
    }

    /** The mount at exactly {@code mp}, if the mount table can be read and lists one. */
    private static Optional<MountTable.MountEntry> mountedAt(Path mp) {
        try {
            return MountTable.find(mp);
        } catch (IOException e) {
            return Optional.empty();
        }
    }

    private static int kindOf(Path mp) throws MountException {
        try {
            return (Integer) Files.getAttribute(mp, "unix:mode") & Linux.S_IFMT;
        } catch (NoSuchFileException e) {
            throw new MountException("mountpoint " + Names.shown(mp) + " does not exist (mkdir -p " + Names.shown(mp) + ")");
        } catch (FileSystemException e) {
            throw new MountException("mountpoint " + Names.shown(mp) + ": " + (e.getReason() != null ? e.getReason() : e.getMessage()));
        } catch (IOException | RuntimeException e) {
            throw new MountException("mountpoint " + Names.shown(mp) + ": " + e.getMessage());
        }
    }

    private static boolean isEmpty(Path dir) throws MountException {
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(dir)) {
            return !entries.iterator().hasNext();
        } catch (IOException e) {
            throw new MountException("cannot read mountpoint " + Names.shown(dir) + ": " + e.getMessage());
        }
    }

    private static FuseDevice mountDirect(Path mp, int kind, MountSpec spec) throws ErrnoException, MountException {
        int fd = LibC.open(LibC.path("/dev/fuse"), Linux.O_RDWR | Linux.O_CLOEXEC, 0);
        if (fd < 0) {
            int err = LibC.errno();
            String fix = err == Linux.ENOENT || err == Linux.ENODEV ? " (load the module: modprobe fuse)" : "";
            throw new MountException("cannot open /dev/fuse: " + LibC.strerror(err) + fix);
        }
        List<String> data = new ArrayList<>(List.of("fd=" + fd, "rootmode=" + Integer.toOctalString(kind),
                "user_id=" + Integer.toUnsignedString(Syscalls.geteuid()),
                "group_id=" + Integer.toUnsignedString(Syscalls.getegid())));
        data.addAll(spec.kernelOptions());
        String joined = String.join(",", data);
        LOG.debug("mount(\"{}\", \"{}\", \"{}\", {}, \"{}\")", spec.fsname(), mp, spec.type(),
                Long.toHexString(spec.mountFlags()), joined);
        if (LibC.mount(LibC.path(spec.fsname()), LibC.path(mp.toString()), LibC.path(spec.type()),
                spec.mountFlags(), LibC.path(joined)) != 0) {
            int err = LibC.errno();
            Syscalls.close(fd);
            throw ErrnoException.forErrno(err, mp.toString());
        }
        return new FuseDevice(fd, mp.toString(), null);
    }

    private static String hint(int errno, MountSpec spec) {
        return switch (errno) {
            case Linux.EINVAL -> " (the kernel refused the options " + String.join(",", spec.kernelOptions())
                    + (spec.kernelOptions().stream().anyMatch(o -> o.startsWith("blksize="))
                            ? "; kernels up to at least 6.18 take blksize= for block-device mounts only)" : ")");
            case Linux.ENODEV -> " (no FUSE in this kernel: modprobe fuse)";
            case Linux.EPERM -> " (mounting needs CAP_SYS_ADMIN, or a setuid fusermount3: apt-get install fuse3)";
            default -> "";
        };
    }

    // ---- through fusermount

    private static final class Posix {
        static final POSIX P = POSIXFactory.getNativePOSIX();
    }

    private static FuseDevice mountWithHelper(Path mp, MountSpec spec) throws MountException {
        Path helper = helper();
        if (helper == null) {
            throw new MountException("cannot mount " + Names.shown(mp) + " as uid " + Integer.toUnsignedString(Syscalls.geteuid())
                    + ": no fusermount3 or fusermount (apt-get install fuse3)");
        }
        String name = helper.getFileName().toString();
        if (!spec.helperCannotSet().isEmpty()) {
            LOG.warn("{} cannot set {}; only a mount as root does", name, String.join(",", spec.helperCannotSet()));
        }
        int[] socket = new int[2];
        int[] output = new int[2];
        if (LibC.socketpair(Linux.AF_UNIX, Linux.SOCK_STREAM | Linux.SOCK_CLOEXEC, 0, socket) != 0) {
            throw new MountException("cannot mount " + Names.shown(mp) + ": socketpair: " + LibC.strerror(LibC.errno()));
        }
        if (LibC.pipe2(output, Linux.O_CLOEXEC) != 0) {
            int err = LibC.errno();
            closeAll(socket[0], socket[1]);
            throw new MountException("cannot mount " + Names.shown(mp) + ": pipe: " + LibC.strerror(err));
        }
        // every descriptor is close-on-exec: the child gets only the copies dup2 makes (0-3), which
        // must not land on a source still to be copied, so no source sits at 0-3
        socket[1] = aboveChildNumbers(socket[1]);
        output[1] = aboveChildNumbers(output[1]);
        // ours is read without blocking: an auto_unmount fusermount keeps its end open for good
        try {
            Syscalls.setNonBlocking(output[0], "pipe");
        } catch (IOException e) {
            closeAll(socket[0], socket[1], output[0], output[1]);
            throw new MountException("cannot mount " + Names.shown(mp) + ": pipe: " + LibC.strerror(Errors.errno(e)));
        }
        List<String> argv = List.of(helper.toString(), "-o", String.join(",", spec.helperOptions()), "--", mp.toString());
        List<String> env = new ArrayList<>();
        for (Map.Entry<String, String> e : System.getenv().entrySet()) {
            if (!e.getKey().equals(COMMFD)) {
                env.add(e.getKey() + "=" + e.getValue());
            }
        }
        env.add(COMMFD + "=" + CHILD_COMMFD);
        LOG.debug("{} with {}={}", argv, COMMFD, CHILD_COMMFD);
        long pid = Posix.P.posix_spawnp(helper.toString(), List.of(
                SpawnFileAction.open("/dev/null", 0, Linux.O_RDONLY, 0),
                SpawnFileAction.dup(output[1], 1),
                SpawnFileAction.dup(output[1], 2),
                SpawnFileAction.dup(socket[1], CHILD_COMMFD)), argv, env);
        closeAll(socket[1], output[1]);
        if (pid <= 0) {
            closeAll(socket[0], output[0]);
            throw new MountException("cannot mount " + Names.shown(mp) + ": cannot start " + helper);
        }
        int fuseFd;
        try {
            fuseFd = receiveDescriptor(socket[0], HELPER_TIMEOUT_MILLIS);
        } catch (IOException e) {
            Posix.P.kill(pid, Linux.SIGKILL);
            reap(pid);
            closeAll(socket[0], output[0]);
            throw new MountException("cannot mount " + Names.shown(mp) + ": " + name + " " + e.getMessage());
        }
        if (fuseFd >= 0 && spec.autoUnmount()) {
            // it stays, and unmounts once the daemon's end of the socket closes (with the device, or at death)
            String said = drain(output[0]);
            Syscalls.close(output[0]);
            logHelper(name, said);
            return new FuseDevice(fuseFd, mp.toString(), new AutoUnmount(socket[0], pid));
        }
        Syscalls.close(socket[0]);
        int status = reap(pid);
        String said = drain(output[0]);
        Syscalls.close(output[0]);
        if (fuseFd < 0) {
            String why = said.isEmpty() ? name + " " + describe(status) : said.replace("\n", "; ");
            throw new MountException("cannot mount " + Names.shown(mp) + ": " + why);
        }
        logHelper(name, said);
        return new FuseDevice(fuseFd, mp.toString(), null);
    }

    private static void logHelper(String name, String said) {
        if (!said.isEmpty()) {
            // fusermount's warnings, such as an unsafe option it ignored
            LOG.warn("{}", said.replace("\n", "; "));
        }
    }

    private static int aboveChildNumbers(int fd) throws MountException {
        if (fd > CHILD_COMMFD) {
            return fd;
        }
        try {
            return Syscalls.dupAtLeast(fd, CHILD_COMMFD + 1, "fcntl(F_DUPFD_CLOEXEC)");
        } catch (IOException e) {
            throw new MountException("cannot mount: fcntl(F_DUPFD_CLOEXEC): " + LibC.strerror(Errors.errno(e)));
        } finally {
            Syscalls.close(fd);
        }
    }

    /**
     * The descriptor fusermount sends over {@code socket} with SCM_RIGHTS, or -1 when it closes the
     * socket without one (it failed, and said why on stderr). Throws when nothing comes in time.
     */
    static int receiveDescriptor(int socket, long timeoutMillis) throws IOException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMillis);
        ByteBuffer pollfd = ByteBuffer.allocateDirect(8).order(ByteOrder.nativeOrder());
        while (true) {
            long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
            if (left <= 0) {
                throw new IOException("did not finish within " + timeoutMillis / 1000 + " s");
            }
            // struct pollfd { int fd; short events; short revents; }
            pollfd.putInt(0, socket).putShort(4, Linux.POLLIN).putShort(6, (short) 0);
            int n = LibC.poll(com.kenai.jffi.MemoryIO.getInstance().getDirectBufferAddress(pollfd), 1,
                    (int) Math.min(left, Integer.MAX_VALUE));
            if (n > 0) {
                break;
            }
            if (n < 0 && LibC.errno() != Linux.EINTR) {
                throw new IOException("poll: " + LibC.strerror(LibC.errno()));
            }
        }
        POSIX posix = Posix.P;
        MsgHdr msg = posix.allocateMsgHdr();
        msg.setIov(new ByteBuffer[] {ByteBuffer.allocateDirect(1)});
        msg.allocateControl(Integer.BYTES);
        while (true) {
            // MSG_CMSG_CLOEXEC: the device must not leak into programs the daemon starts
            int n = posix.recvmsg(socket, msg, Linux.MSG_CMSG_CLOEXEC);
            if (n < 0 && posix.errno() == Linux.EINTR) {
                continue;
            }
            if (n < 0) {
                throw new IOException("recvmsg: " + LibC.strerror(posix.errno()));
            }
            if (n == 0) {
                return -1;
            }
            for (CmsgHdr c : msg.getControls()) {
                if (c.getLevel() == Linux.SOL_SOCKET && c.getType() == Linux.SCM_RIGHTS) {
                    ByteBuffer data = c.getData();
                    if (data != null && data.remaining() >= Integer.BYTES) {
                        return data.order(ByteOrder.nativeOrder()).getInt(0);
                    }
                }
            }
            throw new IOException("sent a message without a descriptor");
        }
    }

    /** Waits for {@code pid} to exit and returns its wait status. */
    private static int reap(long pid) {
        int[] status = new int[1];
        while (Posix.P.waitpid(pid, status, 0) < 0) {
            if (Posix.P.errno() != Linux.EINTR) {
                return -1;
            }
        }
        return status[0];
    }

    private static String describe(int status) {
        if (status == -1) {
            return "vanished";
        }
        if ((status & 0x7f) == 0) {
            return "exited with status " + ((status >> 8) & 0xff) + " and said nothing";
        }
        return "was killed by signal " + (status & 0x7f);
    }

    /** What is in the pipe now (it never blocks), trimmed. */
    private static String drain(int fd) {
        ByteBuffer buf = ByteBuffer.allocateDirect(4096);
        long address = com.kenai.jffi.MemoryIO.getInstance().getDirectBufferAddress(buf);
        StringBuilder text = new StringBuilder();
        byte[] bytes = new byte[buf.capacity()];
        while (text.length() < 64 * 1024) {
            long n = LibC.read(fd, address, buf.capacity());
            if (n <= 0) {
                break;
            }
            buf.clear();
            buf.get(bytes, 0, (int) n);
            text.append(new String(bytes, 0, (int) n, StandardCharsets.UTF_8));
        }
        return text.toString().strip();
    }

    private static void closeAll(int... fds) {
        for (int fd : fds) {
            Syscalls.close(fd);
        }
    }

    /** fusermount's auto_unmount end of the socket: closing it makes fusermount unmount and exit. */
    private static final class AutoUnmount implements Closeable {
        private final int socket;
        private final long pid;

        AutoUnmount(int socket, long pid) {
            this.socket = socket;
            this.pid = pid;
        }

        @Override
        public void close() {
            Syscalls.close(socket);
            Thread reaper = new Thread(() -> reap(pid), "fusermount-reaper");
            reaper.setDaemon(true);
            reaper.start();
        }
    }

    private static Result unmountWithHelper(Path mp, boolean lazy) {
        Path helper = helper();
        if (helper == null) {
            return new Result(false, false, "cannot unmount " + Names.shown(mp) + ": no fusermount3 or fusermount (apt-get install fuse3)");
        }
        // no -q: it would silence "Device or resource busy", the one answer callers must tell apart
        List<String> cmd = new ArrayList<>(List.of(helper.toString(), "-u"));
        if (lazy) {
            cmd.add("-z");
        }
        cmd.addAll(List.of("--", mp.toString()));
        try {
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectInput(ProcessBuilder.Redirect.PIPE)
                    .start();
            p.getOutputStream().close();
            // fusermount says a line at most: read after the exit, so a hung one cannot block us here
            if (!p.waitFor(HELPER_TIMEOUT_MILLIS, TimeUnit.MILLISECONDS)) {
                p.destroyForcibly();
                return new Result(false, false, "cannot unmount " + Names.shown(mp) + ": " + helper.getFileName()
                        + " did not finish within " + HELPER_TIMEOUT_MILLIS / 1000 + " s");
            }
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip().replace("\n", "; ");
            return new Result(p.exitValue() == 0, out.contains("busy"), out);
        } catch (IOException e) {
            return new Result(false, false, "cannot run " + helper + ": " + e.getMessage());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return new Result(false, false, "interrupted while unmounting " + Names.shown(mp));
        }
    }
}
