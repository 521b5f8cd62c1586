package dev.chibifs.cli;

import dev.chibifs.testing.MountedFs;
import dev.chibifs.testing.Sh;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;

import static dev.chibifs.cli.Cli.assertExit;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A command's stderr is its one {@code chibifs:} line: no log lines beside it, usage errors included. */
class CommandStderrTest {

    @TempDir
    Path home;

    @Test
    void aUsageErrorIsOneLineThatSaysWhereTheHelpIs() {
        Cli.Result r = new Cli(home).run("write", "--bogus", "vfs:///shared/x");
        assertExit(2, r);
        assertEquals("chibifs: Unknown option: '--bogus' (see 'chibifs write --help')\n", r.err());
    }

    @Test
    void aCommandLogsWarningsOnlyAndLeavesWhatItSaysItselfToItsLine() {
        assertEquals("warn", DaemonLogLevel.properties(new String[] {"append", "vfs:///shared/x"}).get(DaemonLogLevel.PROPERTY));
        assertEquals("info", DaemonLogLevel.properties(new String[] {"mount", "/m"}).get(DaemonLogLevel.PROPERTY));
    }

    /** In a JVM of its own, as the launcher runs it: the malformed registry was a WARN log line, then the refusal saying it again. */
    @Test
    void aMalformedFlockRegistryIsSaidOnce() throws Exception {
        new Cli(home).put("/flocks/registry.json", "{not json");
        Sh.Result r = Sh.run(MountedFs.cliScript("write", "--as", "bob", "--home", home.toString(), "--content", "x",
                "vfs:///flocks/ops/x"));
        assertEquals(3, r.exitCode(), r.err());
        assertTrue(r.err().startsWith("chibifs: ") && r.err().lines().count() == 1, r.err());
    }
}
