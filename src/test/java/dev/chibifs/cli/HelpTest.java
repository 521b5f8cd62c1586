package dev.chibifs.cli;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code chibifs --help} and every vfs command's help are complete. */
class HelpTest {

    private static final List<String> VFS_COMMANDS = List.of(
            "ls", "info", "cat", "head", "tail", "lines", "grep",
            "write", "append", "mkdir", "rm", "cp", "mv", "edit");

    @TempDir
    Path home;

    @Test
    void rootHelpListsEveryCommandAndEveryExitCode() {
        Cli.Result r = new Cli(home).run("--help");
        assertEquals(0, r.code(), r.toString());
        for (String c : VFS_COMMANDS) {
            assertTrue(r.out().contains("\n  " + c + " "), c + " missing from:\n" + r.out());
        }
        for (int code = 0; code <= 5; code++) {
            assertTrue(r.out().contains("\n  " + code + "  "), "exit code " + code + " missing from:\n" + r.out());
        }
    }

    /** -V is in every command's help: each prints the version, as the root does (they printed nothing). */
    @Test
    void everyCommandsVersionOptionPrintsTheVersion() {
        String version = new Cli(home).run("-V").out();
        assertTrue(version.startsWith("chibifs "), version);
        for (String[] c : new String[][] {{"mount"}, {"ls"}, {"stats"}, {"cache", "put"}}) {
            List<String> args = new java.util.ArrayList<>(List.of(c));
            args.add("-V");
            Cli.Result r = new Cli(home).run(args.toArray(String[]::new));
            assertEquals(0, r.code(), r.toString());
            assertEquals(version, r.out(), String.join(" ", c));
        }
    }

    /** {@code chibifs help} said "Unmatched argument", {@code chibifs help mount} "Missing required parameter". */
    @Test
    void theHelpCommandPrintsTheUsageOfTheRootAndOfACommand() {
        Cli.Result root = new Cli(home).run("help");
        assertEquals(0, root.code(), root.toString());
        assertEquals(new Cli(home).run("--help").out(), root.out());
        Cli.Result mount = new Cli(home).run("help", "mount");
        assertEquals(0, mount.code(), mount.toString());
        assertEquals(new Cli(home).run("mount", "--help").out(), mount.out());
        // as main runs it: "help" names no command of its own, so every command is built
        assertEquals(Main.SUBCOMMANDS, Main.subcommandsFor(new String[] {"help", "mount"}));
    }

    /** {@code chibifs help cache put} printed {@code cache}'s usage: picocli's help command takes one name. */
    @Test
    void theHelpCommandFollowsASubcommandsName() {
        Cli.Result put = new Cli(home).run("help", "cache", "put");
        assertEquals(0, put.code(), put.toString());
        assertEquals(new Cli(home).run("cache", "put", "--help").out(), put.out());
        assertTrue(put.out().startsWith("Usage: chibifs cache put "), put.out());
        Cli.Result cache = new Cli(home).run("help", "cache");
        assertEquals(new Cli(home).run("cache", "--help").out(), cache.out());
        // a name that is not there is refused where it was looked for, as `help nosuch` is at the root
        Cli.Result unknown = new Cli(home).run("help", "cache", "nosuch");
        assertEquals(2, unknown.code(), unknown.toString());
        assertEquals("", unknown.out());
        assertEquals("chibifs: Unknown subcommand 'nosuch'. (see 'chibifs cache --help')\n", unknown.err());
        Cli.Result rootUnknown = new Cli(home).run("help", "nosuch");
        assertEquals(2, rootUnknown.code(), rootUnknown.toString());
        assertEquals("chibifs: Unknown subcommand 'nosuch'. (see 'chibifs --help')\n", rootUnknown.err());
        Cli.Result helpHelp = new Cli(home).run("help", "--help");
        assertEquals(0, helpHelp.code(), helpHelp.toString());
        assertTrue(helpHelp.out().contains("Usage: chibifs help [-h] [COMMAND...]"), helpHelp.out());
    }

    @Test
    void noCommandIsAUsageError() {
        Cli.Result root = new Cli(home).run();
        assertEquals(2, root.code(), root.toString());
        assertTrue(root.err().startsWith("Usage: chibifs "), root.err());
        Cli.Result cache = new Cli(home).run("cache");
        assertEquals(2, cache.code(), cache.toString());
        assertTrue(cache.err().startsWith("Usage: chibifs cache ") && cache.err().contains("  put "), cache.err());
        assertEquals("", cache.out());
    }

    @Test
    void everyCommandHelpShowsItsOptionsCallerAndExitCodes() {
        CommandLine root = Main.commandLine();
        for (String c : VFS_COMMANDS) {
            Cli.Result r = new Cli(home).run(c, "--help");
            assertEquals(0, r.code(), c);
            String help = r.out();
            assertTrue(help.contains("vfs:///"), c + ": no URI form in\n" + help);
            assertTrue(help.contains("Exit codes:") && help.contains("  0  success") && help.contains("  2  usage"),
                    c + ": exit codes missing from\n" + help);
            for (CommandLine.Model.OptionSpec o : root.getSubcommands().get(c).getCommandSpec().options()) {
                assertTrue(help.contains(o.longestName()), c + ": option " + o.longestName() + " missing");
                assertTrue(o.description().length > 0 || o.usageHelp() || o.versionHelp(),
                        c + ": option " + o.longestName() + " has no description");
            }
            for (String caller : List.of("--as", "--as-system", "--home")) {
                assertTrue(help.contains(caller), c + ": " + caller + " missing");
            }
        }
    }

    @Test
    void writeCommandsDocumentDenialAndReadCommandsTheGuest() {
        for (String c : List.of("write", "append", "mkdir", "rm", "cp", "mv", "edit")) {
            String help = new Cli(home).run(c, "--help").out();
            assertTrue(help.contains("  3  permission denied"), c + "\n" + help);
            assertTrue(help.contains("--as-system"), c);
        }
        for (String c : List.of("ls", "info", "cat", "head", "tail", "lines", "grep")) {
            String help = new Cli(home).run(c, "--help").out();
            assertTrue(help.contains("read-only guest"), c + "\n" + help);
        }
    }

    @Test
    void onlyTheCommandsThatCanCreateOfferIfNoneMatch() {
        for (String c : List.of("write", "append")) {
            String help = new Cli(home).run(c, "--help").out();
            assertTrue(help.contains("--if-none-match") && help.contains("--if-match"), c + "\n" + help);
        }
        // edit changes an existing file: it refused --if-none-match whatever the file, so it is no option of it
        String edit = new Cli(home).run("edit", "--help").out();
        assertTrue(edit.contains("--if-match"), edit);
        assertFalse(edit.contains("--if-none-match"), edit);
    }

    @Test
    void writeCommandsNameEveryZoneAContextWrites() {
        List<String> zones = List.of("/shared/**", "/site/**", "/tools/shared/**", "/home/<NAME>/**",
                "/tools/home/<NAME>/**", "/flocks/<flock>/**", "/tools/flocks/<flock>/**");
        for (String c : List.of("write", "append", "mkdir", "rm", "cp", "mv", "edit")) {
            String help = new Cli(home).run(c, "--help").out().replaceAll("\\s+", " ");
            for (String zone : zones) {
                assertTrue(help.contains(zone), c + ": " + zone + " missing from\n" + help);
            }
            assertTrue(help.contains("but /tools/sys/**"), c + ": SYSTEM's one exception missing from\n" + help);
        }
    }

    /** head and tail take one URI (the old -N URI aside): their usage said URI..., which invites two. */
    @Test
    void headAndTailUsageShowsOneUri() {
        for (String c : List.of("head", "tail")) {
            Cli.Result r = new Cli(home).run(c, "--help");
            assertEquals(0, r.code(), r.toString());
            String out = r.out();
            String usage = out.substring(out.indexOf("Usage:"), out.indexOf("\n", out.indexOf("Usage:")) + 1);
            for (int end = out.indexOf("\n", out.indexOf("Usage:")) + 1; out.startsWith(" ", end); ) { // wrapped lines
                int next = out.indexOf("\n", end) + 1;
                usage += out.substring(end, next);
                end = next;
            }
            assertTrue(usage.strip().endsWith(" URI"), c + ": " + usage);
        }
    }
}
