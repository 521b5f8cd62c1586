package dev.chibifs.cli;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;

import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The mount command's own parsing, without a mount. */
class MountCommandTest {

    @Test
    void aUidMapNamesUidsAKernelHas() {
        for (String bad : List.of("99999999999=alice", "4294967295=alice", "-1=alice")) {
            UsageException e = assertThrows(UsageException.class, () -> MountCommand.parseUidMaps(List.of(bad), null));
            assertTrue(e.getMessage().contains("'" + bad + "'") && e.getMessage().contains("0 to 4294967294"), e.getMessage());
        }
        assertEquals(Map.of(4294967294L, "alice"), MountCommand.parseUidMaps(List.of("4294967294=alice"), null));
    }

    @Test
    void anEmptyHomeIsRefusedNotTakenAsTheWorkingDirectory(@TempDir Path home) {
        Cli cli = new Cli(home);
        String[][] runs = {{"mount", "--home", "", home.resolve("mnt").toString()}, {"ls", "--home", "", "vfs:///"},
            {"cache", "ls", "--home", ""}, {"doctor", "--home", ""}};
        for (String[] args : runs) {
            Cli.Result r = cli.run(args);
            assertEquals(ExitCodes.USAGE, r.code(), r.toString());
            assertTrue(r.err().startsWith("chibifs: Invalid value for option '--home': '' is empty: name CHIBI_HOME's"
                    + " directory, or leave --home out for $CHIBI_HOME, else ~/.chibi\n"), r.err());
        }
    }

    @Test
    void aSystemUidThatIsNoNumberGetsTheUidRule(@TempDir Path home) {
        for (String bad : List.of("abc", "-1", "4294967295", "99999999999999999999")) {
            Cli.Result r = new Cli(home).run("mount", "--uid-map", "1001=alice", "--system-uid", bad,
                    home.resolve("mnt").toString());
            assertEquals(ExitCodes.USAGE, r.code(), r.toString());
            assertTrue(r.err().startsWith("chibifs: Invalid value for option '--system-uid': '" + bad
                    + "': UID must be a number from 0 to 4294967294\n"), r.err());
        }
    }

    @Test
    void aMountpointThatIsAFileIsNotADirectoryNotOneToMake(@TempDir Path dir) throws Exception {
        Path file = java.nio.file.Files.writeString(dir.resolve("file"), "x");
        MountFailure e = assertThrows(MountFailure.class, () -> MountCommand.requireDirectory(file));
        assertEquals("mountpoint " + file + " is not a directory: choose a directory, or move it aside", e.getMessage());
        e = assertThrows(MountFailure.class, () -> MountCommand.requireDirectory(dir.resolve("none")));
        assertEquals("mountpoint " + dir.resolve("none") + " is not an existing directory (mkdir -p "
                + dir.resolve("none") + ")", e.getMessage());
        MountCommand.requireDirectory(dir);
    }
}
