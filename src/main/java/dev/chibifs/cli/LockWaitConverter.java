package dev.chibifs.cli;

import picocli.CommandLine;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.time.Duration;
import java.util.regex.Pattern;

/**
 * Reads {@code --lock-wait}: a duration as {@link DurationConverter} reads it, a bare number of
 * seconds ({@code 10}, {@code 1.5}) as {@code flock -w} takes it, or zero ({@code 0}, {@code 0s},
 * {@code PT0S}): try the lock once and do not wait, as {@code flock -w 0} does.
 */
final class LockWaitConverter implements CommandLine.ITypeConverter<Duration> {

    /** What --lock-wait takes, for its refusal. */
    static final String RULE = "0 (do not wait), a number of seconds (10, 1.5), or " + DurationConverter.RULE;

    /** Seconds as flock's -w writes them: digits, with a fraction or not. */
    private static final Pattern SECONDS = Pattern.compile("\\d+(\\.\\d*)?|\\.\\d+");

    private static final BigInteger MAX_NANOS = BigInteger.valueOf(DurationConverter.MAX.toNanos());

    @Override
    public Duration convert(String value) {
        Duration d = SECONDS.matcher(value).matches() ? seconds(value) : DurationConverter.parsed(value);
        if (d == null || d.isNegative()) {
            throw DurationConverter.invalid(value, RULE);
        }
        if (d.compareTo(DurationConverter.MAX) > 0) {
            throw DurationConverter.tooLong(value);
        }
        return d;
    }

    /** {@code value} seconds, to the nanosecond (a finer fraction rounds up); past the bound, just past it. */
    private static Duration seconds(String value) {
        BigInteger nanos = new BigDecimal(value).movePointRight(9).setScale(0, java.math.RoundingMode.CEILING)
                .toBigIntegerExact();
        return nanos.compareTo(MAX_NANOS) > 0 ? DurationConverter.MAX.plusNanos(1) : Duration.ofNanos(nanos.longValueExact());
    }
}
