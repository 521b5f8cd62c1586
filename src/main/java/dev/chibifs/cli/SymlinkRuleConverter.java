package dev.chibifs.cli;

import dev.chibifs.policy.SymlinkRule;
import picocli.CommandLine;

/** Reads {@code mount --symlinks}: zone, any or none; anything else is a usage error naming the value and the choices. */
final class SymlinkRuleConverter implements CommandLine.ITypeConverter<SymlinkRule> {

    @Override
    public SymlinkRule convert(String value) {
        try {
            return SymlinkRule.parse(value);
        } catch (IllegalArgumentException e) {
            throw new CommandLine.TypeConversionException(e.getMessage());
        }
    }
}
