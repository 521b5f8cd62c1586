package dev.chibifs.cli;

import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

import java.nio.file.Path;
import java.util.concurrent.Callable;

/** {@code chibifs umount}: unmount and wait until the daemon has exited. */
@Command(name = "umount", mixinStandardHelpOptions = true,
        description = "Unmount MOUNTPOINT and wait until its daemon has exited.")
public final class UmountCommand implements Callable<Integer> {

    @Parameters(index = "0", paramLabel = "MOUNTPOINT")
    Path mountpoint;

    @Override
    public Integer call() {
        throw new UsageException("umount is not wired yet");
    }
}
