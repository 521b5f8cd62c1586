package dev.chibifs.cli;

import picocli.CommandLine;

import java.time.Duration;

/**
 * Reads {@code mount --kernel-cache}: {@code off} (zero), or a duration as {@link DurationConverter}
 * reads it, in whole seconds from 1 s to 1 h (the kernel takes its timeouts in seconds). Checked
 * here, where the refusal can quote what was typed ({@code 2h}, not {@code 7200s}).
 */
final class KernelCacheConverter implements CommandLine.ITypeConverter<Duration> {

    static final String OFF = "off";

    @Override
    public Duration convert(String value) {
        if (OFF.equals(value)) {
            return Duration.ZERO;
        }
        Duration d = DurationConverter.positive(value);
        if (d.compareTo(Duration.ofSeconds(1)) < 0 || d.compareTo(Duration.ofHours(1)) > 0 || d.toMillis() % 1000 != 0) {
            throw new CommandLine.TypeConversionException("'" + value + "' is out of range: whole seconds from 1s to 1h, or off");
        }
        return d;
    }
}
