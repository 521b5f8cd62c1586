package dev.chibifs.cli;

import picocli.CommandLine;

import java.math.BigDecimal;
import java.math.RoundingMode;
import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.time.temporal.ChronoUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Reads a positive duration such as {@code 500ms}, {@code 30s}, {@code 1.5s}, {@code 5m}, {@code 1h}, {@code 2d}
 * or ISO-8601 {@code PT1H}, of at most {@link #MAX}.
 */
final class DurationConverter implements CommandLine.ITypeConverter<Duration> {

    /**
     * The longest duration any option takes. The daemon adds them to clocks (a flush's due time, a
     * listing's expiry, a lease's end, in millis or nanos): far past this they overflow and fail every
     * request instead of the command line. No option means anything at a year.
     */
    static final Duration MAX = Duration.ofDays(365);

    /** What a duration option takes, for its refusal. */
    static final String RULE = "a positive number with a unit ms, s, m, h or d (e.g. 30s, 1.5s, 1h), or ISO-8601 (PT1H)";

    /** A number as {@code flock -w} writes its seconds: digits, with a fraction or not. */
    static final String NUMBER = "\\d+(?:\\.\\d*)?|\\.\\d+";

    private static final Pattern SIMPLE = Pattern.compile("(" + NUMBER + ")(ms|s|m|h|d)");

    @Override
    public Duration convert(String value) {
        Duration d = positive(value);
        if (d.compareTo(MAX) > 0) {
            throw tooLong(value);
        }
        return d;
    }

    /**
     * The duration without the upper bound, for a converter with a tighter range of its own (and its
     * own message); one too large for a {@link Duration} comes back as the longest there is, past every bound.
     */
    static Duration positive(String value) {
        Duration d = parsed(value);
        if (d == null || d.isZero() || d.isNegative()) {
            throw invalid(value, RULE);
        }
        return d;
    }

    /** {@code value} as a duration (the longest there is when too large for one); null when it is none. */
    static Duration parsed(String value) {
        try {
            return parse(value);
        } catch (ArithmeticException e) {
            return ChronoUnit.FOREVER.getDuration();
        }
    }

    static CommandLine.TypeConversionException invalid(String value, String rule) {
        return new CommandLine.TypeConversionException("invalid duration '" + value + "': " + rule);
    }

    static CommandLine.TypeConversionException tooLong(String value) {
        return new CommandLine.TypeConversionException("invalid duration '" + value + "': at most " + MAX.toDays() + "d");
    }

    private static Duration parse(String value) {
        Matcher m = SIMPLE.matcher(value);
        if (m.matches()) {
            ChronoUnit unit = switch (m.group(2)) {
                case "ms" -> ChronoUnit.MILLIS;
                case "s" -> ChronoUnit.SECONDS;
                case "m" -> ChronoUnit.MINUTES;
                case "h" -> ChronoUnit.HOURS;
                default -> ChronoUnit.DAYS;
            };
            return of(m.group(1), unit);
        }
        try {
            return Duration.parse(value);
        } catch (DateTimeParseException e) {
            return null;
        }
    }

    /**
     * {@code number} (digits, with a fraction or not) of {@code unit}, to the nanosecond: a finer
     * fraction rounds up, so a wait asked for is never none. ArithmeticException past a long's nanoseconds.
     */
    private static Duration of(String number, ChronoUnit unit) {
        return Duration.ofNanos(new BigDecimal(number).multiply(BigDecimal.valueOf(unit.getDuration().toNanos()))
                .setScale(0, RoundingMode.CEILING).longValueExact());
    }
}
