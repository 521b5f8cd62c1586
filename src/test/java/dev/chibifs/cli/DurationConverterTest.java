package dev.chibifs.cli;

import org.junit.jupiter.api.Test;
import picocli.CommandLine;

import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

class DurationConverterTest {

    private final DurationConverter converter = new DurationConverter();

    @Test
    void positiveDurationsUpToAYearAreTaken() {
        assertEquals(Duration.ofMillis(500), converter.convert("500ms"));
        assertEquals(Duration.ofHours(1), converter.convert("PT1H"));
        assertEquals(Duration.ofDays(365), converter.convert("365d"));
        assertEquals(Duration.ofDays(365), converter.convert("P365D"));
    }

    @Test
    void aDurationPastAYearIsRefusedWithTheBound() {
        // far past a year, the daemon's clocks overflow: every create or lookup then failed with EIO
        for (String typed : new String[] {"366d", "99999999999999d", "P1000000000D", "99999999999999999999d",
                "999999999999999d"}) {
            CommandLine.TypeConversionException e = assertThrows(CommandLine.TypeConversionException.class,
                    () -> converter.convert(typed));
            assertEquals("invalid duration '" + typed + "': at most 365d", e.getMessage());
        }
    }

    @Test
    void aKernelCacheTooLargeForJavaGetsTheKernelCacheRule() {
        CommandLine.TypeConversionException e = assertThrows(CommandLine.TypeConversionException.class,
                () -> new KernelCacheConverter().convert("99999999999999999999d"));
        assertEquals("'99999999999999999999d' is out of range: whole seconds from 1s to 1h, or off", e.getMessage());
    }

    @Test
    void aCacheSweepIntervalIsAtLeastASecond() {
        SweepIntervalConverter sweep = new SweepIntervalConverter();
        assertEquals(Duration.ofSeconds(1), sweep.convert("1s"));
        assertEquals(Duration.ofHours(1), sweep.convert("1h"));
        for (String typed : new String[] {"1ms", "999ms", "PT0.5S"}) {
            CommandLine.TypeConversionException e = assertThrows(CommandLine.TypeConversionException.class,
                    () -> sweep.convert(typed));
            assertEquals("invalid duration '" + typed + "': a cache sweep interval is at least 1s (entries expire in days)",
                    e.getMessage());
        }
        assertThrows(CommandLine.TypeConversionException.class, () -> sweep.convert("366d"));
        assertThrows(CommandLine.TypeConversionException.class, () -> sweep.convert("0s"));
    }

    @Test
    void mountRefusesASweepIntervalUnderASecond() {
        Cli.Result r = new Cli(java.nio.file.Path.of("/nonexistent-chibifs-home")).run("mount", "--cache-sweep-interval", "1ms",
                "--context", "a", "/nonexistent-chibifs-mnt");
        assertEquals(2, r.code(), r.toString());
        assertEquals(true, r.err().contains("'1ms': a cache sweep interval is at least 1s"), r.err());
    }
}
