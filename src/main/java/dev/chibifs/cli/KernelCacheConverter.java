package dev.chibifs.cli;

import picocli.CommandLine;

import java.time.Duration;

/** Reads {@code mount --kernel-cache}: a duration as {@link DurationConverter} reads it, or {@code off} (zero). */
final class KernelCacheConverter implements CommandLine.ITypeConverter<Duration> {

    static final String OFF = "off";

    @Override
    public Duration convert(String value) {
        return OFF.equals(value) ? Duration.ZERO : new DurationConverter().convert(value);
    }
}
