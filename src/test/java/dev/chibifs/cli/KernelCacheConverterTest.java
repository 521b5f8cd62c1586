package dev.chibifs.cli;

import org.junit.jupiter.api.Test;
import picocli.CommandLine;

import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

class KernelCacheConverterTest {

    private final KernelCacheConverter converter = new KernelCacheConverter();

    @Test
    void offAndWholeSecondsFromOneSecondToAnHourAreTaken() {
        assertEquals(Duration.ZERO, converter.convert("off"));
        assertEquals(Duration.ofSeconds(1), converter.convert("1s"));
        assertEquals(Duration.ofSeconds(30), converter.convert("30s"));
        assertEquals(Duration.ofHours(1), converter.convert("PT1H"));
        assertEquals(Duration.ofSeconds(2), converter.convert("2000ms"));
    }

    @Test
    void aRefusalQuotesWhatWasTypedAndTheRule() {
        for (String typed : new String[] {"2h", "61m", "500ms", "1500ms"}) {
            CommandLine.TypeConversionException e = assertThrows(CommandLine.TypeConversionException.class,
                    () -> converter.convert(typed));
            assertEquals("'" + typed + "' is out of range: whole seconds from 1s to 1h, or off", e.getMessage());
        }
        assertThrows(CommandLine.TypeConversionException.class, () -> converter.convert("5x"));
    }
}
