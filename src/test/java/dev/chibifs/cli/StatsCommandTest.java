package dev.chibifs.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** {@code stats}'s arguments: {@code --watch} takes an interval only where one is given. */
class StatsCommandTest {

    private static StatsCommand parsed(String... args) {
        StatsCommand stats = new StatsCommand();
        new CommandLine(stats).parseArgs(args);
        return stats;
    }

    @Test
    void watchTakesTheWordAfterItOnlyWhenItIsAnInterval() {
        StatsCommand s = parsed("--watch", "/mnt/chibi"); // was refused: '/mnt/chibi' is no duration
        assertEquals(Duration.ofSeconds(1), s.watch);
        assertEquals(Path.of("/mnt/chibi"), s.mountpoint);
        assertEquals(Duration.ofSeconds(2), parsed("--watch", "2", "/mnt/chibi").watch);
        assertEquals(Duration.ofMillis(500), parsed("/mnt/chibi", "--watch=500ms").watch);
        assertEquals(Duration.ofSeconds(3), parsed("/mnt/chibi", "--watch", "PT3S").watch);
        assertEquals(Duration.ofSeconds(1), parsed("/mnt/chibi", "--watch").watch);
        assertNull(parsed("/mnt/chibi").watch);
        for (String bad : new String[] {"0", "5x"}) {
            CommandLine.ParameterException e = assertThrows(CommandLine.ParameterException.class,
                    () -> parsed("/mnt/chibi", "--watch", bad));
            assertTrue(e.getMessage().contains("invalid duration '" + bad + "'"), e.getMessage());
        }
    }
}
