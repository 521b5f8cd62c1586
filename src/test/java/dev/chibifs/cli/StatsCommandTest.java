package dev.chibifs.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** {@code stats}'s arguments: {@code --watch} takes the next word as its interval unless it is the mountpoint. */
class StatsCommandTest {

    @TempDir
    Path mnt;

    private static StatsCommand parsed(String... args) {
        StatsCommand stats = new StatsCommand();
        new CommandLine(stats).parseArgs(args);
        return stats;
    }

    @Test
    void watchTakesTheWordAfterItUnlessItIsTheMountpoint() {
        String m = mnt.toString();
        StatsCommand s = parsed("--watch", m); // was refused: the mountpoint taken for a duration
        assertEquals(Duration.ofSeconds(1), s.watch);
        assertEquals(mnt, s.mountpoint);
        assertEquals(Duration.ofSeconds(2), parsed("--watch", "2", m).watch);
        assertEquals(Duration.ofMillis(500), parsed(m, "--watch=500ms").watch);
        assertEquals(Duration.ofSeconds(3), parsed(m, "--watch", "PT3S").watch);
        assertEquals(Duration.ofSeconds(1), parsed(m, "--watch").watch);
        assertEquals(Duration.ofSeconds(1), parsed(m, "--watch", "--json").watch);
        assertNull(parsed(m).watch);
        // a bad value is named, not taken as the mountpoint
        for (String bad : new String[] {"0", "5x", "abc", ""}) {
            CommandLine.ParameterException e = assertThrows(CommandLine.ParameterException.class,
                    () -> parsed("--watch=" + bad, m));
            assertTrue(e.getMessage().contains("invalid duration '" + bad + "'"), e.getMessage());
        }
    }
}
