package dev.chibifs.cli;

import dev.chibifs.path.Names;
import com.fasterxml.jackson.databind.JsonNode;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

import java.io.IOException;
import java.net.SocketException;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;

/**
 * {@code chibifs sync MOUNTPOINT...}: what {@code sync} would do if it reached a FUSE daemon (the
 * kernel sends it only to virtiofs): each mount's stores make what was written last, S3 stores by
 * sending every change waiting to go up, the local store by syncing its file system; then S3
 * stores list again what they had listed, so the host sees what others synced.
 */
@Command(name = "sync", mixinStandardHelpOptions = true,
        description = {
            "Make everything written through each mount last where its stores keep it, returning once it does: "
                + "an S3 store sends every change waiting for its debounce, the local store's file system is synced "
                + "(sync(1) never reaches a FUSE daemon). Then each mount lets go of what it listed of S3 and tells "
                + "its kernel to ask again what it was told from those listings: what other hosts synced before "
                + "shows at once. Exit 0 when every mount synced, 1 when one is not a running chibifs "
                + "mount (or is another user's), 5 when a store could not (S3 away: its changes wait in the cache and go up when it answers)."
        })
final class SyncCommand implements Callable<Integer>, ConfigCheck.Exempt {

    @Parameters(arity = "1..*", paramLabel = "MOUNTPOINT", description = "chibifs mountpoints on this host, or paths in them.")
    List<Path> mountpoints;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws IOException, CommandFailure {
        MountpointArgument.requireNamed(mountpoints);
        int worst = ExitCodes.OK;
        for (Path given : mountpoints) {
            StatsCommand.Served served = StatsCommand.socketOf(given.toAbsolutePath().normalize(), "sync", StatsSocket::syncPathFor);
            Path mp = served.mountpoint();
            Path socket = served.socket();
            JsonNode answer;
            try {
                answer = StatsSocket.read(socket);
            } catch (SocketException | java.nio.file.NoSuchFileException e) {
                // a daemon started before this command existed listens for stats only
                throw new CommandFailure(ExitCodes.FAILURE, "the daemon of " + Names.shown(mp) + " does not answer sync (started by an"
                        + " older chibifs? umount and mount it again): " + e.getMessage());
            }
            if (answer.path("synced").asBoolean(false)) {
                spec.commandLine().getOut().println("synced " + Names.shown(mp));
            } else {
                spec.commandLine().getErr().println(ErrorHandler.PREFIX + Names.shown(mp) + ": not synced: " + answer.path("error").asText("no answer"));
                worst = ExitCodes.IO_ERROR;
            }
        }
        spec.commandLine().getOut().flush();
        return worst;
    }
}
