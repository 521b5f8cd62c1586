package dev.chibifs.cli;

import org.junit.jupiter.api.Test;
import picocli.CommandLine.Command;

import java.util.HashSet;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code main} builds only the command it runs; help and everything else get them all. */
class MainSubcommandsTest {

    @Test
    void theCommandNamedFirstIsBuiltAlone() {
        assertEquals(List.of(MountCommand.class), Main.subcommandsFor(new String[]{"mount", "--foreground", "/m"}));
        assertEquals(List.of(CacheCommand.class), Main.subcommandsFor(new String[]{"cache", "ls"}));
    }

    @Test
    void anOptionATypoOrNothingGetsEveryCommand() {
        assertEquals(Main.SUBCOMMANDS, Main.subcommandsFor(new String[]{"--help"}));
        assertEquals(Main.SUBCOMMANDS, Main.subcommandsFor(new String[]{"moun"}));
        assertEquals(Main.SUBCOMMANDS, Main.subcommandsFor(new String[0]));
    }

    @Test
    void everyCommandHasItsOwnName() {
        var names = new HashSet<String>();
        for (Class<?> c : Main.SUBCOMMANDS) {
            assertTrue(names.add(c.getAnnotation(Command.class).name()), c.getName());
        }
        names.add("help"); // picocli's, with every command, whatever is named first
        assertEquals(names, Main.commandLine().getSubcommands().keySet());
    }
}
