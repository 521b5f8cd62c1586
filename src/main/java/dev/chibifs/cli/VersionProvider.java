package dev.chibifs.cli;

import picocli.CommandLine;

/** Reports the version from the jar manifest, or "dev" when run from classes. */
final class VersionProvider implements CommandLine.IVersionProvider {
    @Override
    public String[] getVersion() {
        String v = Main.class.getPackage().getImplementationVersion();
        return new String[] {"chibifs " + (v == null ? "dev" : v)};
    }
}
