package dev.chibifs.cli;

import picocli.CommandLine;

import java.time.Duration;

/**
 * Reads {@code mount --cache-sweep-interval}: a duration as {@link DurationConverter} reads it, of at
 * least {@link #MIN}. Each sweep lists every directory under {@code /sys/tool_cache} and reads
 * config.toml; entries expire in days, so a sweep every millisecond only keeps the daemon busy.
 */
final class SweepIntervalConverter implements CommandLine.ITypeConverter<Duration> {

    /** The shortest interval taken. */
    static final Duration MIN = Duration.ofSeconds(1);

    private final DurationConverter durations = new DurationConverter();

    @Override
    public Duration convert(String value) {
        Duration d = durations.convert(value);
        if (d.compareTo(MIN) < 0) {
            throw new CommandLine.TypeConversionException("invalid duration '" + value
                    + "': a cache sweep interval is at least 1s (entries expire in days)");
        }
        return d;
    }
}
