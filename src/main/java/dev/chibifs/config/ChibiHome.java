package dev.chibifs.config;

import java.nio.file.Path;
import java.util.Map;

/**
 * Where chibi keeps its state: {@code --home DIR}, else {@code $CHIBI_HOME}, else {@code $HOME/.chibi}.
 * The store is {@code <home>/vfs}, the same tree the chibi CLI uses.
 */
public record ChibiHome(Path dir) {

    /** Resolves the home from an explicit option (may be null) and the environment. */
    public static ChibiHome resolve(Path option, Map<String, String> env) {
        if (option != null) {
            return new ChibiHome(option.toAbsolutePath().normalize());
        }
        String fromEnv = env.get("CHIBI_HOME");
        if (named(null, env)) {
            Path home = Path.of(fromEnv).toAbsolutePath().normalize();
            String why = notADirectory(home);
            if (why != null) {
                // as --home says it; else "config.toml: cannot read: ... Not a directory"
                throw new ConfigException("$CHIBI_HOME '" + fromEnv + "' " + why + ": name chibi's home"
                        + " directory, or unset it for ~/.chibi");
            }
            return new ChibiHome(home);
        }
        // $HOME first, as chibi finds it; the JVM's user.home comes from the password database instead
        String userHome = env.get("HOME");
        if (userHome == null || userHome.isBlank()) {
            userHome = System.getProperty("user.home");
        }
        return new ChibiHome(Path.of(userHome, ".chibi").toAbsolutePath().normalize());
    }

    /**
     * True where the home is named ({@code --home}, or {@code $CHIBI_HOME}), not the default {@code ~/.chibi}.
     * An empty {@code $CHIBI_HOME} is unset, as with XDG_CONFIG_HOME: {@code CHIBI_HOME= cmd} or a
     * profile's {@code export CHIBI_HOME=} means "no override", and as a path it could only mean the
     * working directory.
     */
    public static boolean named(Path option, Map<String, String> env) {
        String fromEnv = env.get("CHIBI_HOME");
        return option != null || fromEnv != null && !fromEnv.isBlank();
    }

    /**
     * Why {@code home} cannot be a home directory: "is not a directory" where it is a file, "is below
     * FILE, a file" where one of the directories leading to it is; null where it is one, or can be
     * made.
     */
    public static String notADirectory(Path home) {
        Path absolute = home.toAbsolutePath().normalize();
        for (Path p = absolute; p != null; p = p.getParent()) {
            if (java.nio.file.Files.exists(p)) {
                return java.nio.file.Files.isDirectory(p) ? null : p.equals(absolute) ? "is not a directory" : "is below " + p + ", a file";
            }
        }
        return null;
    }

    /** The store directory, {@code <home>/vfs}. */
    public Path store() {
        return dir.resolve("vfs");
    }

    /** chibi's configuration file, {@code <home>/config.toml}. */
    public Path configFile() {
        return dir.resolve("config.toml");
    }

    /**
     * A context's own settings, {@code <home>/contexts/<context>/local.toml} (chibi's
     * {@code LocalConfig}); {@code context} must be a valid context name.
     */
    public Path localConfigFile(String context) {
        return dir.resolve("contexts").resolve(context).resolve("local.toml");
    }

    /** Where chibifs keeps its own files (logs), outside the store so the tree stays chibi's. */
    public Path chibifsDir() {
        return dir.resolve("chibifs");
    }
}
