package dev.chibifs.cli;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Which commands a bad config.toml stops: those that work on chibi's home, not those that only reach mounts. */
class ConfigCheckTest {

    @TempDir
    Path home;

    @Test
    void commandsOnRunningMountsIgnoreABadConfigAndDoctorReportsIt() throws IOException {
        Files.writeString(home.resolve("config.toml"), "[vfs]\nbackend = \"fossil\"\n");
        Cli cli = new Cli(home);
        String none = home.resolve("not-mounted").toString();
        for (String[] args : new String[][] {{"umount", none}, {"stats", none}, {"trace", none}, {"sync", none},
            {"status"}}) {
            Cli.Result r = cli.run(args);
            assertNotEquals(ExitCodes.USAGE, r.code(), r.toString());
            assertFalse(r.err().contains("config.toml"), r.toString());
        }
        Cli.Result doctor = cli.run("doctor", "--home", home.toString());
        assertEquals(ExitCodes.FAILURE, doctor.code(), doctor.toString());
        assertTrue(doctor.out().contains("FAIL config " + home.resolve("config.toml")
                + ": line 2: [vfs] backend: unknown VFS backend 'fossil'"), doctor.toString());

        Cli.Result ls = cli.run("ls", "vfs:///");
        assertEquals(ExitCodes.USAGE, ls.code(), "commands on the home still refuse it: " + ls);
        assertTrue(ls.err().contains("config.toml:2: [vfs] backend: unknown VFS backend 'fossil'"), ls.toString());
    }
}
