package dev.chibifs.cli;

import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** The JVM flags a background {@code mount} gives its daemon: its own, less those the launcher meant for the command alone. */
class DaemonJvmArgumentsTest {

    @Test
    void theFlagsTheLauncherGaveOnlyTheCommandStayBehind() {
        List<String> cli = List.of("-Xmx192m", "-XX:+UseSerialGC", "-XX:SharedArchiveFile=/c/chibifs-1.jsa",
                "-XX:TieredStopAtLevel=1", "-Dchibifs.cli-jvm-args=-XX:TieredStopAtLevel=1", "-Dfile.encoding=UTF-8");
        assertEquals(List.of("-Xmx192m", "-XX:+UseSerialGC", "-XX:SharedArchiveFile=/c/chibifs-1.jsa", "-Dfile.encoding=UTF-8"),
                MountCommand.daemonJvmArguments(cli, "-XX:TieredStopAtLevel=1"));
    }

    @Test
    void aUsersOwnCopyOfTheFlagIsKept() {
        // CHIBIFS_JAVA_OPTS asked for C1 in the daemon too: only the launcher's own copy (the last) goes
        List<String> cli = List.of("-XX:TieredStopAtLevel=1", "-Xmx64m", "-XX:TieredStopAtLevel=1",
                "-Dchibifs.cli-jvm-args=-XX:TieredStopAtLevel=1");
        assertEquals(List.of("-XX:TieredStopAtLevel=1", "-Xmx64m"),
                MountCommand.daemonJvmArguments(cli, "-XX:TieredStopAtLevel=1"));
    }

    @Test
    void withoutTheLauncherEveryFlagIsPassedOn() {
        List<String> cli = List.of("-Xmx192m", "-XX:TieredStopAtLevel=1");
        assertEquals(cli, MountCommand.daemonJvmArguments(cli, null));
        assertEquals(cli, MountCommand.daemonJvmArguments(cli, ""));
    }
}
