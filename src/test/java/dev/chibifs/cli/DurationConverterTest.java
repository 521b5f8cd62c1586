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

    /** flock -w 10 waits ten seconds; --lock-wait 10 was refused, as every number without a unit. */
    @Test
    void lockWaitTakesABareNumberAsSecondsAsFlockDoes() {
        LockWaitConverter lockWait = new LockWaitConverter();
        assertEquals(Duration.ofSeconds(10), lockWait.convert("10"));
        assertEquals(Duration.ofMillis(1500), lockWait.convert("1.5"));
        assertEquals(Duration.ofMillis(500), lockWait.convert(".5"));
        assertEquals(Duration.ofSeconds(2), lockWait.convert("2."));
        assertEquals(Duration.ofNanos(1), lockWait.convert("0.0000000001"), "a wait too fine for nanoseconds still waits");
        assertEquals(Duration.ZERO, lockWait.convert("0"));
        assertEquals(Duration.ZERO, lockWait.convert("0.0"));
        assertEquals(Duration.ofDays(365), lockWait.convert("31536000"));
        // every form taken before still is
        assertEquals(Duration.ZERO, lockWait.convert("0s"));
        assertEquals(Duration.ZERO, lockWait.convert("PT0S"));
        assertEquals(Duration.ofMillis(500), lockWait.convert("500ms"));
        assertEquals(Duration.ofMinutes(1), lockWait.convert("1m"));
        assertEquals(Duration.ofSeconds(90), lockWait.convert("PT1M30S"));
        for (String tooLong : new String[] {"31536000.5", "99999999999999999999999", "366d"}) {
            CommandLine.TypeConversionException e = assertThrows(CommandLine.TypeConversionException.class,
                    () -> lockWait.convert(tooLong));
            assertEquals("invalid duration '" + tooLong + "': at most 365d", e.getMessage());
        }
        for (String bad : new String[] {"-1", "-1s", "1e3", "1,5", "ten", "", "."}) {
            CommandLine.TypeConversionException e = assertThrows(CommandLine.TypeConversionException.class,
                    () -> lockWait.convert(bad));
            assertEquals("invalid duration '" + bad + "': " + LockWaitConverter.RULE, e.getMessage());
        }
    }

    /** --lock-wait 1.5 and 10s were taken, 1.5s refused: a fraction had no unit, a unit no fraction. */
    @Test
    void aFractionWithAUnitIsTaken() {
        assertEquals(Duration.ofMillis(1500), converter.convert("1.5s"));
        assertEquals(Duration.ofSeconds(30), converter.convert("0.5m"));
        assertEquals(Duration.ofMinutes(15), converter.convert(".25h"));
        assertEquals(Duration.ofMillis(2500), converter.convert("2.5s"));
        assertEquals(Duration.ofNanos(2_500_000), converter.convert("2.5ms"));
        LockWaitConverter lockWait = new LockWaitConverter();
        assertEquals(Duration.ofMillis(1500), lockWait.convert("1.5s"));
        assertEquals(Duration.ZERO, lockWait.convert("0.0s"));
        assertEquals(Duration.ofNanos(1), lockWait.convert("0.000000000001s"), "a wait too fine for nanoseconds still waits");
        assertEquals(Duration.ofDays(365), lockWait.convert("365.0d"));
        CommandLine.TypeConversionException past = assertThrows(CommandLine.TypeConversionException.class,
                () -> lockWait.convert("365.5d"));
        assertEquals("invalid duration '365.5d': at most 365d", past.getMessage());
        for (String bad : new String[] {"1.5.5s", "1,5s", "-1.5s", "1.5 s", "1.5", "0.0s"}) {
            CommandLine.TypeConversionException e = assertThrows(CommandLine.TypeConversionException.class,
                    () -> converter.convert(bad));
            assertEquals("invalid duration '" + bad + "': " + DurationConverter.RULE, e.getMessage());
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
