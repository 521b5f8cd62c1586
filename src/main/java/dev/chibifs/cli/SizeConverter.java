package dev.chibifs.cli;

import dev.chibifs.store.StoreSpec;
import picocli.CommandLine;

/** Reads a size in bytes with an optional K, M or G ({@code 512M}, {@code 20G}), as {@code memory:SIZE} does. */
final class SizeConverter implements CommandLine.ITypeConverter<Long> {

    @Override
    public Long convert(String value) {
        long bytes = StoreSpec.bytes(value);
        if (bytes <= 0) {
            throw new CommandLine.TypeConversionException("invalid size '" + value
                    + "': more than 0 bytes, with an optional K, M or G (e.g. 512M, 20G)");
        }
        return bytes;
    }
}
