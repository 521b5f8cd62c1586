package dev.chibifs.cli;

import dev.chibifs.store.StoreSpec;
import picocli.CommandLine;

/** Reads a size in bytes with an optional K, M or G ({@code 512M}, {@code 20G}), as {@code memory:SIZE} does. */
final class SizeConverter implements CommandLine.ITypeConverter<Long> {

    @Override
    public Long convert(String value) {
        return parse(value, 1);
    }

    /** The same, where 0 is a size too: none ({@code --prefetch-below 0}). */
    static final class OrZero implements CommandLine.ITypeConverter<Long> {
        @Override
        public Long convert(String value) {
            return parse(value, 0);
        }
    }

    private static long parse(String value, long least) {
        long bytes = StoreSpec.bytes(value);
        if (bytes < least) {
            throw new CommandLine.TypeConversionException("invalid size '" + value + "': "
                    + (bytes == -2 ? "too large; " : "") + (least > 0 ? "more than 0 bytes" : "0 bytes or more")
                    + ", with an optional K, M or G (e.g. 512M, 20G)");
        }
        return bytes;
    }
}
