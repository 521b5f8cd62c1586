package dev.chibifs.cli;

import dev.chibifs.testing.FuseSupport;
import dev.chibifs.testing.MountedFs;
import dev.chibifs.testing.Sh;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.jar.Attributes;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.jar.Manifest;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code scripts/chibifs}, the launcher, run from a checkout with a packaged jar as a user runs it. */
@Timeout(180)
class LauncherTest {

    @Test
    void aMountKeepsWorkingWhenTheJarIsRebuiltUnderIt() throws Exception {
        FuseSupport.requireFuse();
        Path root = MountedFs.tempRoot();
        Path checkout = root.resolve("checkout");
        Path launcher = Files.createDirectories(checkout.resolve("scripts")).resolve("chibifs");
        Files.copy(Path.of("scripts/chibifs"), launcher, StandardCopyOption.COPY_ATTRIBUTES);
        Path jar = checkout.resolve("target/chibifs.jar");
        packageJar(jar);
        Path mnt = Files.createDirectories(root.resolve("mnt"));
        try {
            Sh.run("'" + launcher + "' mount --context planner --home '" + root.resolve("home") + "' '" + mnt + "'").ok();
            long pid = daemonPid(mnt);
            String open = Sh.run("ls -l /proc/" + pid + "/fd").ok().out();
            assertFalse(open.contains(jar.toString()), "the daemon holds the jar a rebuild rewrites:\n" + open);
            assertTrue(open.contains(checkout.resolve("target/daemon-jars") + "/chibifs-"), open);

            // the jar plugin rewrites target/chibifs.jar in place before shading replaces it
            Files.writeString(jar, "half-written by a rebuild");
            Sh.run(mnt, "mkdir shared/d && echo x > shared/d/f && ls -l shared/d && mv shared/d/f shared/d/g"
                    + " && cat shared/d/g && rm -r shared/d").ok();
            assertTrue(Sh.run(mnt, "echo no > sys/x").err().contains("Permission denied"));

            Sh.run("fusermount -u '" + mnt + "'").ok();
            ProcessHandle.of(pid).ifPresent(p -> p.onExit().orTimeout(20, TimeUnit.SECONDS).join());
            assertEquals(List.of(), Sh.run("ls " + mnt).ok().out().lines().toList(), "unmounted");
        } finally {
            Sh.run("fusermount -u -z '" + mnt + "' 2>/dev/null; true");
        }
    }

    /** The daemon's pid, from the registry a mount writes. */
    private static long daemonPid(Path mnt) throws IOException {
        return Long.parseLong(Files.readAllLines(MountRegistry.forCurrentUser().fileFor(mnt)).stream()
                .filter(l -> l.startsWith("pid=")).findFirst().orElseThrow().substring(4));
    }

    /**
     * A runnable jar as {@code ./mvnw package} makes, close enough for the launcher: chibifs's own
     * classes inside, the dependencies by the manifest's Class-Path from the test class path.
     */
    private static void packageJar(Path jar) throws IOException {
        Path classes = null;
        List<String> others = new ArrayList<>();
        for (String element : System.getProperty("java.class.path").split(":")) {
            Path p = Path.of(element).toAbsolutePath();
            if (Files.exists(p.resolve(Main.class.getName().replace('.', '/') + ".class"))) {
                classes = p;
            } else if (element.endsWith(".jar")) {
                others.add(p.toUri().getRawPath());
            }
        }
        Manifest manifest = new Manifest();
        manifest.getMainAttributes().put(Attributes.Name.MANIFEST_VERSION, "1.0");
        manifest.getMainAttributes().put(Attributes.Name.MAIN_CLASS, Main.class.getName());
        manifest.getMainAttributes().put(Attributes.Name.CLASS_PATH, String.join(" ", others));
        Files.createDirectories(jar.getParent());
        Path from = java.util.Objects.requireNonNull(classes, "no class path element holds chibifs's classes");
        try (OutputStream file = Files.newOutputStream(jar);
             JarOutputStream out = new JarOutputStream(file, manifest);
             Stream<Path> files = Files.walk(from)) {
            for (Path f : files.filter(Files::isRegularFile).sorted().toList()) {
                out.putNextEntry(new JarEntry(from.relativize(f).toString()));
                Files.copy(f, out);
                out.closeEntry();
            }
        }
    }
}
