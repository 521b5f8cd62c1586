package dev.chibifs.cli;

import dev.chibifs.config.ChibiHome;
import picocli.CommandLine;

import java.nio.file.Path;

/**
 * Reads {@code --home DIR}. An empty DIR is refused: as a path it is the current directory, so
 * {@code --home "$UNSET_VARIABLE"} made the working directory chibi's home (and mounted its
 * {@code vfs}) without a word.
 */
final class HomeConverter implements CommandLine.ITypeConverter<Path> {

    @Override
    public Path convert(String value) {
        if (value.isEmpty()) {
            throw new CommandLine.TypeConversionException("'' is empty: name CHIBI_HOME's directory,"
                    + " or leave --home out for $CHIBI_HOME, else ~/.chibi");
        }
        Path home = Path.of(value);
        String why = ChibiHome.notADirectory(home);
        if (why != null) {
            // else its config.toml "cannot read: ... Not a directory", which named neither --home nor the rule
            throw new CommandLine.TypeConversionException("'" + value + "' " + why + ": name CHIBI_HOME's"
                    + " directory, or leave --home out for $CHIBI_HOME, else ~/.chibi");
        }
        return home;
    }
}
