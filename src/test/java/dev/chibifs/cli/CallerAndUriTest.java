package dev.chibifs.cli;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Every command refuses every malformed URI and every bad caller with exit 2 and a message that shows the fix. */
class CallerAndUriTest {

    /** Each command with {@code U} where a URI goes. */
    private static final List<String[]> COMMANDS = List.of(
            new String[] {"ls", "U"},
            new String[] {"info", "U"},
            new String[] {"cat", "U"},
            new String[] {"head", "U"},
            new String[] {"tail", "U"},
            new String[] {"lines", "U", "1", "2"},
            new String[] {"grep", "x", "U"},
            new String[] {"write", "--as", "bob", "--content", "x", "U"},
            new String[] {"append", "--as", "bob", "--content", "x", "U"},
            new String[] {"mkdir", "--as", "bob", "U"},
            new String[] {"rm", "--as", "bob", "U"},
            new String[] {"cp", "--as", "bob", "U", "vfs:///shared/dst"},
            new String[] {"cp", "--as", "bob", "vfs:///shared/src", "U"},
            new String[] {"mv", "--as", "bob", "U", "vfs:///shared/dst"},
            new String[] {"mv", "--as", "bob", "vfs:///shared/src", "U"},
            new String[] {"edit", "--as", "bob", "--old", "s", "--new", "t", "U"});

    /** A malformed URI and what the message must show. */
    private static final Map<String, String> BAD_URIS = Map.of(
            "vfs://shared/x", "use three slashes: vfs:///shared/x",
            "vfs:////shared/x", "use three slashes: vfs:///shared/x",
            "shared/x", "use vfs:///shared/x",
            "./shared/x", "use vfs:///shared/x",
            "/shared/x", "use vfs:///shared/x",
            "file:///shared/x", "use vfs:///path",
            "vfs:///shared/../x", "cannot contain '..'",
            "vfs:///shared/x/", "cannot end with '/'",
            "vfs:///shared//x", "cannot contain '//'",
            "", "use vfs:///path");

    @TempDir
    Path home;
    Cli cli;

    @BeforeEach
    void setUp() throws Exception {
        cli = new Cli(home);
        cli.put("/shared/src", "s\n");
    }

    private static String[] with(String[] template, String uri) {
        List<String> args = new ArrayList<>();
        for (String a : template) {
            args.add(a.equals("U") ? uri : a);
        }
        return args.toArray(new String[0]);
    }

    @Test
    void everyCommandRefusesEveryMalformedUri() throws Exception {
        for (String[] template : COMMANDS) {
            for (Map.Entry<String, String> bad : BAD_URIS.entrySet()) {
                Cli.Result r = cli.run(with(template, bad.getKey()));
                String what = String.join(" ", with(template, bad.getKey())) + " -> " + r;
                assertEquals(2, r.code(), what);
                assertTrue(r.err().contains(bad.getValue()), what);
                assertTrue(r.err().contains("'" + bad.getKey() + "'") || bad.getKey().startsWith("vfs:///"), what);
                assertEquals(1, r.err().lines().count(), what);
                assertEquals("", r.out(), what);
            }
        }
        try (var names = Files.list(cli.file("/shared"))) {
            assertEquals(List.of(cli.file("/shared/src")), names.toList(), "a refused command changed the store");
        }
    }

    @Test
    void writesNeedANamedCaller() {
        Cli.Result r = cli.run("write", "--content", "x", "vfs:///shared/y");
        assertEquals(2, r.code(), r.toString());
        assertEquals("chibifs: 'write' needs a caller: pass --as NAME, set CHIBI_CONTEXT=NAME,"
                + " or pass --as-system to act as SYSTEM\n", r.err());
        for (String[] args : List.of(new String[] {"append", "--content", "x", "vfs:///shared/y"},
                new String[] {"mkdir", "vfs:///shared/y"}, new String[] {"rm", "vfs:///shared/src"},
                new String[] {"cp", "vfs:///shared/src", "vfs:///shared/y"},
                new String[] {"mv", "vfs:///shared/src", "vfs:///shared/y"},
                new String[] {"edit", "--old", "s", "--new", "t", "vfs:///shared/src"})) {
            assertEquals(2, cli.run(args).code(), args[0]);
        }
        assertFalse(cli.exists("/shared/y"));
        assertTrue(cli.exists("/shared/src"));
    }

    @Test
    void badContextNamesAreUsageErrorsNamingValueAndRule() {
        Cli.Result bad = cli.run("write", "--as", "b@d", "--content", "x", "vfs:///shared/y");
        assertEquals(2, bad.code(), bad.toString());
        assertTrue(bad.err().contains("invalid context name 'b@d': a context name is [A-Za-z0-9_-]+"), bad.err());
        Cli.Result system = cli.run("cat", "--as", "System", "vfs:///shared/src");
        assertEquals(2, system.code(), system.toString());
        assertTrue(system.err().contains("never 'system'") && system.err().contains("use --as-system"), system.err());
        Cli.Result env = cli.runWithEnv(Map.of("CHIBI_CONTEXT", "SYSTEM"), "write", "--content", "x", "vfs:///sys/y");
        assertEquals(2, env.code(), env.toString());
        assertTrue(env.err().contains("'SYSTEM' (from $CHIBI_CONTEXT)"), env.err());
        assertEquals(2, cli.runWithEnv(Map.of("CHIBI_CONTEXT", "-"), "ls").code());
        // chibi's is_valid_context_name: a leading '-' would read as an option on its command line
        Cli.Result dash = cli.runWithEnv(Map.of("CHIBI_CONTEXT", "-x"), "write", "--content", "x", "vfs:///shared/y");
        assertEquals(2, dash.code(), dash.toString());
        assertTrue(dash.err().contains("not starting with '-'"), dash.err());
        Cli.Result newline = cli.runWithEnv(Map.of("CHIBI_CONTEXT", "a\nb"), "write", "--content", "x", "vfs:///shared/y");
        assertTrue(newline.err().startsWith("chibifs: invalid context name 'a\\nb' (from $CHIBI_CONTEXT)")
                && newline.err().lines().count() == 1, "one line, the name escaped: " + newline.err());
        assertFalse(cli.exists("/shared/y") || cli.exists("/sys/y"));
    }

    @Test
    void asAndAsSystemTogetherIsUsage() {
        Cli.Result r = cli.run("mkdir", "--as", "bob", "--as-system", "vfs:///sys/d");
        assertEquals(2, r.code(), r.toString());
        assertTrue(r.err().contains("--as and --as-system cannot be used together"), r.err());
        assertFalse(cli.exists("/sys/d"));
    }

    @Test
    void asOverridesChibiContextAndAsSystemIsNeverImplied() throws Exception {
        Map<String, String> env = Map.of("CHIBI_CONTEXT", "alice");
        assertEquals(3, cli.run(env, new byte[0], "write", "--as", "bob", "--content", "x", "vfs:///home/alice/f").code());
        assertEquals(0, cli.run(env, new byte[0], "write", "--content", "x", "vfs:///home/alice/f").code());
        assertEquals(3, cli.run(env, new byte[0], "write", "--content", "x", "vfs:///sys/f").code());
        assertEquals(0, cli.run(env, new byte[0], "write", "--as-system", "--content", "x", "vfs:///sys/f").code());
        assertEquals("x", cli.read("/sys/f"));
    }

    @Test
    void homeOptionBeatsChibiHome(@TempDir Path other) throws Exception {
        Cli.Result r = cli.run("write", "--as", "bob", "--home", other.toString(), "--content", "x", "vfs:///shared/h");
        assertEquals(0, r.code(), r.toString());
        assertEquals("x", Files.readString(other.resolve("vfs/shared/h")));
        assertFalse(cli.exists("/shared/h"));
    }
}
