package dev.chibifs.cli;

import java.nio.file.Path;
import java.util.List;

/**
 * A MOUNTPOINT given as an empty word is refused, as {@code mount} refuses it: as a path it is the
 * current directory, so {@code chibifs umount "$UNSET"} from inside a mount root unmounted it (with
 * {@code --lazy}, even while in use), and stats, sync, trace and status looked at whatever was there.
 */
final class MountpointArgument {

    private MountpointArgument() {
    }

    /** Refuses an empty {@code mountpoint} (exit 2, one line); null, an optional one left out, passes. */
    static void requireNamed(Path mountpoint) {
        requireNamed(mountpoint, "name a chibifs mountpoint ('.' for the current directory)");
    }

    /**
     * {@link #requireNamed(Path)} with {@code what} saying what to name: doctor's MOUNTPOINT is a directory
     * to be mounted on, not a chibifs mount, and may be left out.
     */
    static void requireNamed(Path mountpoint, String what) {
        if (mountpoint != null && mountpoint.toString().isEmpty()) {
            throw new UsageException("MOUNTPOINT is empty: " + what);
        }
    }

    /** {@link #requireNamed} of each. */
    static void requireNamed(List<Path> mountpoints) {
        mountpoints.forEach(MountpointArgument::requireNamed);
    }
}
