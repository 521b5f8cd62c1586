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
            {"trace", ""}, {"status", ""}};
        for (String[] args : runs) {
            Cli.Result r = new Cli(home).run(args);
            assertEquals(ExitCodes.USAGE, r.code(), String.join(" ", args) + ": " + r);
            assertEquals("chibifs: MOUNTPOINT is empty: name a chibifs mountpoint ('.' for the current directory)\n", r.err(),
                    String.join(" ", args));
            assertEquals("", r.out(), String.join(" ", args));
        }
        // doctor's MOUNTPOINT is a directory to mount on, or left out: it said "name a chibifs mountpoint"
        Cli.Result doctor = new Cli(home).run("doctor", "");
        assertEquals(ExitCodes.USAGE, doctor.code(), doctor.toString());
        assertEquals("chibifs: MOUNTPOINT is empty: name the directory you mean to mount on ('.' for the current"
                + " directory), or leave MOUNTPOINT out to check this machine only\n", doctor.err());
        assertEquals("", doctor.out());
        Cli.Result mount = new Cli(home).run("mount", "--context", "planner", "");
        assertEquals(ExitCodes.USAGE, mount.code(), mount.toString());
        assertEquals(1, mount.err().lines().count(), mount.err());
    }
}
