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
        String tilde = unexpandedTilde(value);
        if (tilde != null) {
            throw new CommandLine.TypeConversionException("'" + value + "' " + tilde);
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

    /**
     * Why {@code value} is not the directory it meant: its first name is a literal {@code ~} (or
     * {@code ~user}), which no shell expanded (fstab, a unit's file), and which was made as a directory
     * named {@code ~} in the working directory; null when it is not so.
     */
    static String unexpandedTilde(String value) {
        String first = value.split("/", 2)[0];
        if (!first.startsWith("~")) {
            return null;
        }
        return "starts with a literal " + first + ", which no shell expanded (as in fstab or a unit's file): give an"
                + " absolute path";
    }
}
