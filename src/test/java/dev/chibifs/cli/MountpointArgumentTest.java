package dev.chibifs.cli;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** An empty MOUNTPOINT is the current directory as a path: every command refuses it, as mount does. */
class MountpointArgumentTest {

    @Test
    void anEmptyMountpointIsRefusedByEveryCommandThatTakesOne(@TempDir Path home) {
        String[][] runs = {{"umount", ""}, {"umount", "--lazy", ""}, {"stats", ""}, {"sync", ""}, {"sync", home.toString(), ""},
            {"trace", ""}, {"status", ""}, {"doctor", ""}};
        for (String[] args : runs) {
            Cli.Result r = new Cli(home).run(args);
            assertEquals(ExitCodes.USAGE, r.code(), String.join(" ", args) + ": " + r);
            assertEquals("chibifs: MOUNTPOINT is empty: name a chibifs mountpoint ('.' for the current directory)\n", r.err(),
                    String.join(" ", args));
            assertEquals("", r.out(), String.join(" ", args));
        }
        Cli.Result mount = new Cli(home).run("mount", "--context", "planner", "");
        assertEquals(ExitCodes.USAGE, mount.code(), mount.toString());
        assertEquals(1, mount.err().lines().count(), mount.err());
    }
}
