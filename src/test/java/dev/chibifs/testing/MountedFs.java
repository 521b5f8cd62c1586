package dev.chibifs.testing;

import com.fasterxml.jackson.databind.JsonNode;
import dev.chibifs.cli.DaemonStats;
import dev.chibifs.cli.Main;
import dev.chibifs.fuse.FuseDaemon;
import dev.chibifs.fuse.FuseMount;
import dev.chibifs.fuse.MountTable;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

/**
 * A real chibifs daemon in a process of its own, mounted in a temp dir and driven like a user
 * would. Teardown always ends with a lazy unmount, so a hung daemon cannot hang the suite.
 */
public final class MountedFs implements AutoCloseable {

    private static final long MOUNT_TIMEOUT_MS = 60_000;

    private final Path root;
    private final Path home;
    private final Path mountpoint;
    private final Process process;
    private final Path log;
    /** The daemon's environment, which says where its stats socket is (CHIBIFS_RUNTIME_DIR). */
    private final java.util.Map<String, String> daemonEnv;

    private MountedFs(Path root, Path home, Path mountpoint, Process process, Path log,
                      java.util.Map<String, String> daemonEnv) {
        this.root = root;
        this.home = home;
        this.mountpoint = mountpoint;
        this.process = process;
        this.log = log;
        this.daemonEnv = daemonEnv;
    }

    /** This JVM's class path copied where any user can read it (the build may sit under root's home). */
    public static String readableClasspath(Path dir) throws IOException {
        StringBuilder cp = new StringBuilder();
        int i = 0;
        for (String entry : System.getProperty("java.class.path").split(java.io.File.pathSeparator)) {
            Path from = Path.of(entry);
            if (!Files.exists(from)) {
                continue;
            }
            Path to = dir.resolve(i++ + "-" + from.getFileName());
            if (Files.isDirectory(from)) {
                try (var tree = Files.walk(from)) {
                    for (Path p : (Iterable<Path>) tree::iterator) {
                        Path target = to.resolve(from.relativize(p).toString());
                        if (Files.isDirectory(p)) {
                            Files.createDirectories(target);
                        } else {
                            Files.copy(p, target);
                        }
                    }
                }
            } else {
                Files.copy(from, to);
            }
            cp.append(cp.length() == 0 ? "" : java.io.File.pathSeparator).append(to);
        }
        Sh.run("chmod -R a+rX " + dir).ok();
        return cp.toString();
    }

    /** A fresh temp dir that other users can traverse (mountpoints inside it must be reachable by them). */
    public static Path tempRoot() {
        try {
            // .ci/run lazily unmounts chibifs mounts under /tmp/chibifs-test-* that a run left behind
            Path dir = Files.createTempDirectory("chibifs-test-");
            Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxr-xr-x"));
            TEMP_ROOTS.add(dir);
            return dir;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * The roots {@link #tempRoot} made, removed when the test JVM exits (a run left about 200 of
     * them, 400 MB, in /tmp). Not while anything is mounted below one: removing a tree through a
     * mount would reach into its store, so such a root is left for .ci/run's lazy unmount.
     */
    private static final java.util.Set<Path> TEMP_ROOTS = createdRoots();

    private static java.util.Set<Path> createdRoots() {
        java.util.Set<Path> roots = java.util.concurrent.ConcurrentHashMap.newKeySet();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> removeRoots(roots), "chibifs-test-temp-roots"));
        return roots;
    }

    private static void removeRoots(java.util.Set<Path> roots) {
        List<Path> mounted = new ArrayList<>();
        try {
            for (MountTable.MountEntry m : MountTable.read(MountTable.SYSTEM_TABLE)) {
                mounted.add(m.mountpoint());
            }
        } catch (IOException e) {
            return; // what is mounted cannot be told: leave everything
        }
        List<String> rm = new ArrayList<>(List.of("rm", "-rf", "--one-file-system"));
        for (Path root : roots) {
            if (mounted.stream().noneMatch(m -> m.startsWith(root))) {
                rm.add(root.toString());
            }
        }
        if (rm.size() == 3) {
            return;
        }
        // rm, not a walk in Java: a test leaves names that are not UTF-8, which a Path cannot name
        try {
            new ProcessBuilder(rm).inheritIO().start().waitFor(60, TimeUnit.SECONDS);
        } catch (IOException e) {
            // the roots stay in /tmp
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Mounts with {@code args} (e.g. {@code --context planner}) over a new home in a new temp dir. */
    public static MountedFs start(String... args) {
        return start(tempRoot(), args);
    }

    /** Mounts with {@code args} over {@code root}/home at {@code root}/mnt. */
    public static MountedFs start(Path root, String... args) {
        return start(root, root.resolve("mnt"), args);
    }

    /** Mounts with {@code args} over a new home in a new temp dir at {@code mnt}, an existing directory anywhere. */
    public static MountedFs startAt(Path mnt, String... args) {
        return start(tempRoot(), mnt, args);
    }

    /**
     * Mounts with {@code args} as {@link #start(String...)} does, the daemon limited to
     * {@code openFiles} open files (soft and hard): it holds at most a quarter that many directories.
     */
    public static MountedFs startWithOpenFileLimit(int openFiles, String... args) {
        Path root = tempRoot();
        return start(root, root.resolve("mnt"), List.of("sh", "-c", "ulimit -n " + openFiles + " && exec \"$@\"", "sh"), args);
    }

    private static MountedFs start(Path root, Path mnt, String... args) {
        return start(root, mnt, List.of(), args);
    }

    /**
     * Mounts with {@code args} over {@code root}/home at {@code root}/mnt, the daemon's environment
     * the test's plus {@code env} (an S3 store's credentials, which never go on a command line).
     * Started again over the same root it finds the same home and cache directories.
     */
    public static MountedFs start(Path root, java.util.Map<String, String> env, String... args) {
        return start(root, root.resolve("mnt"), List.of(), env, args);
    }

    private static MountedFs start(Path root, Path mnt, List<String> prefix, String... args) {
        return start(root, mnt, prefix, java.util.Map.of(), args);
    }

    private static MountedFs start(Path root, Path mnt, List<String> prefix, java.util.Map<String, String> env,
                                   String... args) {
        FuseSupport.requireFuse();
        try {
            Path home = root.resolve("home");
            try {
                Files.createDirectories(mnt);
            } catch (java.nio.file.FileAlreadyExistsException staleMount) {
                // a killed daemon's mount, whose stat fails (ENOTCONN) once the kernel's attributes of
                // its root expire, as a loaded machine lets them: the mount below clears it
            }
            Files.createDirectories(home);
            Path log = root.resolve("daemon-" + System.nanoTime() + ".log");
            List<String> cmd = new ArrayList<>(prefix);
            cmd.addAll(daemonCommand("mount", "--foreground", "--home", home.toString()));
            cmd.addAll(List.of(args));
            cmd.add(mnt.toString());
            ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true)
                    .redirectOutput(log.toFile())
                    .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")));
            pb.environment().putAll(env);
            Process p = pb.start();
            MountedFs fs = new MountedFs(root, home, mnt, p, log, java.util.Map.copyOf(pb.environment()));
            fs.awaitMounted();
            return fs;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** {@code java -cp <test classpath> dev.chibifs.cli.Main ARGS...}: the real CLI in a new JVM. */
    public static List<String> daemonCommand(String... args) {
        // C1 only, as the launcher runs its short commands: a test's daemon lives seconds, and C2's
        // compiles for a peak it never reaches: four mounted classes took 117 s of CPU with them, 98 without
        List<String> cmd = new ArrayList<>(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx192m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:+ExitOnOutOfMemoryError",
                "-Dfile.encoding=UTF-8"));
        cmd.addAll(nativeAccessFlags());
        cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), Main.class.getName()));
        cmd.addAll(List.of(args));
        return cmd;
    }

    /**
     * This JVM's flags that let jffi load its stub and use {@code sun.misc.Unsafe} (pom.xml's argLine,
     * as the launcher's): a JVM the tests start without them prints eight WARNING lines on JDK 24+.
     */
    public static List<String> nativeAccessFlags() {
        return java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments().stream()
                .filter(a -> a.startsWith("--enable-native-access") || a.startsWith("-Dsun.misc.unsafe.memory.access"))
                .toList();
    }

    /** Runs the CLI in a new JVM and returns what it did. */
    public static Sh.Result cli(String... args) {
        return Sh.run(cliScript(args));
    }

    /** The CLI's command line as one shell-quoted script, for pipes and redirections around it. */
    public static String cliScript(String... args) {
        StringBuilder script = new StringBuilder();
        for (String a : daemonCommand(args)) {
            script.append('\'').append(a.replace("'", "'\\''")).append("' ");
        }
        return script.toString();
    }

    private void awaitMounted() {
        long deadline = System.currentTimeMillis() + MOUNT_TIMEOUT_MS;
        while (System.currentTimeMillis() < deadline) {
            if (FuseDaemon.answers(mountpoint)) {
                return;
            }
            if (!process.isAlive()) {
                throw new AssertionError("daemon exited (" + process.exitValue() + ") before mounting:\n" + log());
            }
            sleep(20);
        }
        close();
        throw new AssertionError("mount did not answer within " + MOUNT_TIMEOUT_MS + " ms:\n" + log());
    }

    public Path mountpoint() {
        return mountpoint;
    }

    /** The mountpoint path of {@code vfsPath} ("/shared/x" -> mnt/shared/x). */
    public Path at(String vfsPath) {
        return mountpoint.resolve(vfsPath.substring(1));
    }

    /** The store, {@code home/vfs}, as chibi sees it. */
    public Path store() {
        return home.resolve("vfs");
    }

    /** The store path of {@code vfsPath}. */
    public Path stored(String vfsPath) {
        return store().resolve(vfsPath.substring(1));
    }

    public Path home() {
        return home;
    }

    public Path root() {
        return root;
    }

    public Process process() {
        return process;
    }

    /** What the daemon has logged so far. */
    public String log() {
        try {
            return Files.readString(log, StandardCharsets.UTF_8);
        } catch (IOException e) {
            return "(no log: " + e + ")";
        }
    }

    /** Runs {@code script} in the mountpoint as the test's own user. */
    public Sh.Result sh(String script) {
        return Sh.run(mountpoint, script);
    }

    /** The requests the kernel sent this mount's daemon while {@code script} ran (in the mountpoint), by opcode. */
    public Map<String, Long> requestsSentBy(String script) {
        Map<String, Long> before = requestCounts();
        sh(script).ok();
        Map<String, Long> sent = new TreeMap<>();
        requestCounts().forEach((opcode, n) -> {
            long more = n - before.getOrDefault(opcode, 0L);
            if (more > 0) {
                sent.put(opcode, more);
            }
        });
        return sent;
    }

    /**
     * What {@code chibifs stats --json} would print of this daemon, read from its socket in this JVM:
     * the command's own new JVM took a second or more, and some tests ask twice per step.
     */
    public JsonNode stats() {
        return DaemonStats.of(daemonEnv, process.pid());
    }

    /** The requests the daemon has served so far, by opcode. */
    private Map<String, Long> requestCounts() {
        Map<String, Long> counts = new HashMap<>();
        for (JsonNode op : stats().get("requests")) {
            counts.put(op.get("opcode").asText(), op.get("count").asLong());
        }
        return counts;
    }

    /** Runs the Python program {@code program} with {@code args} in the mountpoint as the test's own user. */
    public Sh.Result python(String program, String... args) {
        return Sh.python(mountpoint, program, args);
    }

    /** Runs {@code script} in the mountpoint as another user. */
    public Sh.Result shAs(TestUsers.User user, String script) {
        return Sh.as(user.uid(), user.gid(), mountpoint, script);
    }

    /** {@link #shAs}, with {@code group} as the user's one supplementary group. */
    public Sh.Result shAsMemberOf(TestUsers.User user, long group, String script) {
        return Sh.as(user.uid(), user.gid(), group, mountpoint, script);
    }

    /** True while the kernel lists the mount. */
    public boolean isMounted() {
        try {
            return MountTable.find(mountpoint).isPresent();
        } catch (IOException e) {
            return false;
        }
    }

    @Override
    public void close() {
        String connection = connection();
        if (process.isAlive() && isMounted()) {
            Sh.run("fusermount -u -z '" + mountpoint + "'");
        }
        try {
            if (!process.waitFor(15, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                if (!process.waitFor(5, TimeUnit.SECONDS) && connection != null) {
                    // even SIGKILL leaves a daemon whose thread waits in the kernel (a notification
                    // waiting for a lock that a process holds while it waits for a reply): aborting
                    // the connection ends that process's request, and then both
                    abortConnection(connection);
                    process.waitFor(10, TimeUnit.SECONDS);
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (isMounted()) {
            Sh.run("fusermount -u -z '" + mountpoint + "'");
        }
    }

    /** The mount's FUSE connection; null when not mounted. */
    private String connection() {
        try {
            return FuseMount.connection(mountpoint.toString()).orElse(null);
        } catch (IOException | RuntimeException e) {
            return null; // nothing to abort later
        }
    }

    private static void abortConnection(String connection) {
        Path abort = FuseMount.fusectlAbort(connection);
        if (!Files.exists(abort)) {
            Sh.run("mount -t fusectl none /sys/fs/fuse/connections");
        }
        Sh.run("echo 1 > " + abort);
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
