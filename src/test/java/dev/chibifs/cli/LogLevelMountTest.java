package dev.chibifs.cli;

import dev.chibifs.testing.MountedFs;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code --log-level} holds for every logger of a real daemon: the checks before it serves made
 * loggers at slf4j-simple's default (info) before the option was read, and those kept it.
 */
@Timeout(120)
class LogLevelMountTest {

    @Test
    void debugLogsADenial() {
        String log = logOfADenial("--log-level", "debug");
        assertTrue(log.contains("DEBUG FuseSession - MKDIR denied: context 'planner' cannot write"), log);
    }

    @Test
    void errorLogsNoInfo() {
        String log = logOfADenial("--log-level=error");
        assertFalse(log.contains(" INFO "), log);
        assertFalse(log.contains(" DEBUG "), log);
    }

    /** Without the option the level is its default, info, even where the JVM was told another. */
    @Test
    void theDefaultIsInfoWhateverTheJvmWasTold() {
        String log = logOfADenial(Map.of("JAVA_TOOL_OPTIONS", "-D" + DaemonLogLevel.PROPERTY + "=debug"));
        assertTrue(log.contains(" INFO MountCommand - mounted "), log);
        assertFalse(log.contains(" DEBUG "), log);
    }

    private static String logOfADenial(String... level) {
        return logOfADenial(Map.of(), level);
    }

    /** The daemon's whole log, once it has refused a mkdir in /sys and stopped. */
    private static String logOfADenial(Map<String, String> env, String... level) {
        String[] args = new String[level.length + 2];
        args[0] = "--context";
        args[1] = "planner";
        System.arraycopy(level, 0, args, 2, level.length);
        MountedFs fs = MountedFs.start(MountedFs.tempRoot(), env, args);
        try {
            assertEquals(1, fs.sh("mkdir sys/denied").exitCode());
        } finally {
            fs.close(); // the daemon has exited: its log is whole
        }
        return fs.log();
    }

    @Test
    void theLevelIsReadFromAMountsArgumentsOnly() {
        assertEquals("debug", DaemonLogLevel.of(new String[] {"mount", "--context", "a", "--log-level", "debug", "/m"}));
        assertEquals("trace", DaemonLogLevel.of(new String[] {"mount", "--log-level=warn", "--log-level=trace", "/m"}));
        assertEquals("info", DaemonLogLevel.of(new String[] {"mount", "--context", "a", "/m"}));
        assertEquals(null, DaemonLogLevel.of(new String[] {"mount", "--log-level", "loud", "/m"}));
        assertEquals("info", DaemonLogLevel.of(new String[] {"mount", "--", "--log-level", "debug"}));
        assertEquals(null, DaemonLogLevel.of(new String[] {"stats", "--log-level", "debug"}));
        assertEquals(null, DaemonLogLevel.of(new String[] {}));
    }
}
