package dev.chibifs.cli;

import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;

/** {@code chibifs mount}: serve the namespace at a mountpoint, per context or by uid map. */
@Command(name = "mount", mixinStandardHelpOptions = true,
        description = "Mount the chibi namespace at MOUNTPOINT.")
public final class MountCommand implements Callable<Integer> {

    @Option(names = "--context", paramLabel = "NAME",
            description = "Per-context mount: every request acts as NAME.")
    String context;

    @Option(names = "--uid-map", paramLabel = "UID=NAME",
            description = "Map a uid to a context (repeatable); unmapped uids read but never write. Implies allow_other.")
    List<String> uidMaps = new ArrayList<>();

    @Option(names = "--system-uid", paramLabel = "UID",
            description = "The uid that acts as SYSTEM (never implied, not even for root).")
    Integer systemUid;

    @Option(names = "--home", paramLabel = "DIR",
            description = "CHIBI_HOME for this mount; the store is DIR/vfs (default: $CHIBI_HOME, else ~/.chibi).")
    Path home;

    @Option(names = "--foreground", description = "Stay attached and log to stderr.")
    boolean foreground;

    @Option(names = "-o", paramLabel = "FUSEOPT[,FUSEOPT...]", split = ",",
            description = "Extra FUSE mount options, passed to libfuse.")
    List<String> fuseOptions = new ArrayList<>();

    @Parameters(index = "0", paramLabel = "MOUNTPOINT", description = "An existing, empty directory.")
    Path mountpoint;

    @Override
    public Integer call() {
        throw new UsageException("mount is not wired yet");
    }
}
