package dev.chibifs.cli;

import java.io.IOException;
import java.io.OutputStream;
import java.net.URISyntaxException;
import java.nio.file.Path;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;

/**
 * What {@code scripts/chibifs} runs once per copy of the jar, under
 * {@code -XX:ArchiveClassesAtExit}, to make the class archive (AppCDS) that later commands and
 * daemons map instead of reading and verifying classes from the jar: every class of chibifs
 * (a daemon's too), the model of every command, and one real command ({@code ls} of a fresh
 * store, which loads the configuration, the router, the store and its native calls). Nothing
 * is mounted and nothing outside the directory it is given is written.
 */
public final class ClassArchiveTraining {

    private ClassArchiveTraining() {
    }

    /** {@code args[0]}: an empty directory to use as CHIBI_HOME. */
    public static void main(String[] args) throws IOException, URISyntaxException {
        if (args.length != 1) {
            System.err.println("usage: ClassArchiveTraining EMPTY-DIR");
            System.exit(2);
        }
        loadEveryOwnClass();
        Terminal quiet = new Terminal(System.getenv(), System.in, OutputStream.nullOutputStream(),
                OutputStream.nullOutputStream());
        Main.commandLine(quiet); // every command's model, as help builds it
        int code = Main.commandLine(quiet, Main.subcommandsFor(new String[]{"ls"}))
                .execute("ls", "--home", args[0], "vfs:///");
        System.exit(code);
    }

    /** Loads, without initialising, every class in the jar (or directory) this class came from. */
    private static void loadEveryOwnClass() throws IOException, URISyntaxException {
        Path source = Path.of(ClassArchiveTraining.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        if (!source.toString().endsWith(".jar")) {
            return;
        }
        ClassLoader loader = ClassArchiveTraining.class.getClassLoader();
        try (JarFile jar = new JarFile(source.toFile())) {
            for (JarEntry e : java.util.Collections.list(jar.entries())) {
                String name = e.getName();
                if (name.startsWith("dev/chibifs/") && name.endsWith(".class")) {
                    try {
                        Class.forName(name.substring(0, name.length() - 6).replace('/', '.'), false, loader);
                    } catch (ClassNotFoundException | LinkageError skipped) {
                        // a class that cannot load here is simply not archived
                    }
                }
            }
        }
    }
}
