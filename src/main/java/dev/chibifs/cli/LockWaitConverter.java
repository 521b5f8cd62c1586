package dev.chibifs.cli;

import picocli.CommandLine;

import java.time.Duration;

/**
 * Reads {@code --lock-wait}: a duration as {@link DurationConverter} reads it, or zero ({@code 0},
 * {@code 0s}, {@code PT0S}): try the lock once and do not wait, as {@code flock -w 0} does.
 */
final class LockWaitConverter implements CommandLine.ITypeConverter<Duration> {

    @Override
    public Duration convert(String value) {
        Duration d = "0".equals(value) ? Duration.ZERO : DurationConverter.parsed(value);
        if (d == null || d.isNegative()) {
            throw DurationConverter.invalid(value, "0 (do not wait), or " + DurationConverter.RULE);
        }
        if (d.compareTo(DurationConverter.MAX) > 0) {
            throw DurationConverter.tooLong(value);
        }
        return d;
    }
}
