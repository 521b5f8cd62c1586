package dev.chibifs.cli;

import picocli.CommandLine;

import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Reads a positive duration such as {@code 500ms}, {@code 30s}, {@code 5m}, {@code 1h}, {@code 2d} or ISO-8601 {@code PT1H}. */
final class DurationConverter implements CommandLine.ITypeConverter<Duration> {

    private static final Pattern SIMPLE = Pattern.compile("(\\d+)(ms|s|m|h|d)");

    @Override
    public Duration convert(String value) {
        Duration d = parse(value);
        if (d == null || d.isZero() || d.isNegative()) {
            throw new CommandLine.TypeConversionException("invalid duration '" + value
                    + "': a positive number with a unit ms, s, m, h or d (e.g. 30s, 1h), or ISO-8601 (PT1H)");
        }
        return d;
    }

    private static Duration parse(String value) {
        Matcher m = SIMPLE.matcher(value);
        if (m.matches()) {
            long n;
            try {
                n = Long.parseLong(m.group(1));
            } catch (NumberFormatException e) {
                return null;
            }
            switch (m.group(2)) {
                case "ms": return Duration.ofMillis(n);
                case "s": return Duration.ofSeconds(n);
                case "m": return Duration.ofMinutes(n);
                case "h": return Duration.ofHours(n);
                default: return Duration.ofDays(n);
            }
        }
        try {
            return Duration.parse(value);
        } catch (DateTimeParseException e) {
            return null;
        }
    }
}
