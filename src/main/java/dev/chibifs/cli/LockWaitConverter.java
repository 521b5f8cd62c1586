package dev.chibifs.cli;

import picocli.CommandLine;

import java.time.Duration;
import java.util.regex.Pattern;

/**
 * Reads {@code --lock-wait}: a duration as {@link DurationConverter} reads it ({@code 1.5s}), a bare number of
 * seconds ({@code 10}, {@code 1.5}) as {@code flock -w} takes it, or zero ({@code 0}, {@code 0s},
 * {@code PT0S}): try the lock once and do not wait, as {@code flock -w 0} does.
 */
final class LockWaitConverter implements CommandLine.ITypeConverter<Duration> {

    /** What --lock-wait takes, for its refusal. */
    static final String RULE = "0 (do not wait), a number of seconds (10, 1.5), or " + DurationConverter.RULE;

    /** Seconds as flock's -w writes them. */
    private static final Pattern SECONDS = Pattern.compile(DurationConverter.NUMBER);

    @Override
    public Duration convert(String value) {
        Duration d = DurationConverter.parsed(SECONDS.matcher(value).matches() ? value + "s" : value);
        if (d == null || d.isNegative()) {
            throw DurationConverter.invalid(value, RULE);
        }
        if (d.compareTo(DurationConverter.MAX) > 0) {
            throw DurationConverter.tooLong(value);
        }
        return d;
    }
}
