package dev.chibifs.cli;

import dev.chibifs.config.ChibiHome;
import picocli.CommandLine.Option;

import java.nio.file.Path;

/** The {@code --home DIR} option the cache commands share. */
final class HomeOption {

    @Option(names = "--home", paramLabel = "DIR", converter = HomeConverter.class,
            description = "CHIBI_HOME; the store is DIR/vfs (default: $CHIBI_HOME, else ~/.chibi).")
    Path home;

    ChibiHome resolve() {
        return ChibiHome.resolve(home, System.getenv());
    }
}
