package dev.chibifs.cli;

import dev.chibifs.config.ChibiHome;
import picocli.CommandLine.Option;

import java.nio.file.Path;
import java.util.Map;

/** The {@code --home DIR} option the cache commands share. */
final class HomeOption {

    @Option(names = "--home", paramLabel = "DIR", converter = HomeConverter.class,
            description = "CHIBI_HOME; the store is DIR/vfs (default: $CHIBI_HOME, else ~/.chibi).")
    Path home;

    /** Where {@code $CHIBI_HOME} is read: the command's terminal's environment (Main's factory sets it). */
    Map<String, String> env = System.getenv();

    ChibiHome resolve() {
        return ChibiHome.resolve(home, env);
    }

    /**
     * Why a command that writes makes no home: the one named by {@code option} or {@code $CHIBI_HOME}
     * is not there, which is a mistyped one far more often than a new one (a write made it, and
     * wrote there, exit 0, where {@code cache ls} said it was not there). Null where it is there, or
     * is the default {@code ~/.chibi}, which a first write makes as chibi's first run does.
     */
    static String namedButMissing(Path option, Map<String, String> env) {
        ChibiHome home = ChibiHome.resolve(option, env);
        return ChibiHome.named(option, env) && !java.nio.file.Files.isDirectory(home.dir()) ? missing(home.dir()) : null;
    }

    /** What a command says of a home {@code dir} that is not there. */
    static String missing(Path dir) {
        return "no chibi home at " + dir.toAbsolutePath() + " (no such directory: is --home or $CHIBI_HOME right?)";
    }
}
