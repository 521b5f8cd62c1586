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
}
