package dev.chibifs.config;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ChibiConfigTest {

    @TempDir
    Path dir;

    private ChibiConfig load(String toml) throws IOException {
        Files.writeString(dir.resolve("config.toml"), toml);
        return ChibiConfig.load(new ChibiHome(dir));
    }

    private String refused(String toml) throws IOException {
        Files.writeString(dir.resolve("config.toml"), toml);
        return assertThrows(ConfigException.class, () -> ChibiConfig.load(new ChibiHome(dir))).getMessage();
    }

    @Test
    void absentFileMeansDefaults() {
        ChibiConfig c = ChibiConfig.load(new ChibiHome(dir));
        assertEquals(new ChibiConfig("local", 4000, 7, 500, true), c);
    }

    @Test
    void aContextsLocalTomlOverridesThresholdAndPreview() throws IOException {
        ChibiHome home = new ChibiHome(dir);
        ChibiConfig global = load("tool_output_cache_threshold = 10\ntool_cache_preview_chars = 20\n"
                + "tool_cache_max_age_days = 3\n");
        assertEquals(global, global.forContext(home, "coder"), "no local.toml: config.toml's");
        Path local = Files.createDirectories(dir.resolve("contexts/coder")).resolve("local.toml");
        // chibi's LocalConfig: any key it leaves out is config.toml's; the age and the switch stay the sweep's
        Files.writeString(local, "model = \"m\"\ntool_output_cache_threshold = 50000\ntool_cache_max_age_days = 1\n"
                + "auto_cleanup_cache = false\n");
        assertEquals(new ChibiConfig("local", 50000, 3, 20, true), global.forContext(home, "coder"));
        Files.writeString(local, "tool_cache_preview_chars = 9223372036854775807\n");
        assertEquals(new ChibiConfig("local", 10, 3, Long.MAX_VALUE, true), global.forContext(home, "coder"));
        assertEquals(global, global.forContext(home, "planner"));

        Files.writeString(local, "a = 1\ntool_output_cache_threshold = -1\n");
        assertEquals(local + ":2: tool_output_cache_threshold: -1 is out of range (0 to 9223372036854775807)",
                assertThrows(ConfigException.class, () -> global.forContext(home, "coder")).getMessage());
        Files.writeString(local, "tool_cache_preview_chars = = 3\n");
        assertTrue(assertThrows(ConfigException.class, () -> global.forContext(home, "coder")).getMessage()
                .startsWith(local + ":1: malformed TOML"));
    }

    /** An editor's byte-order mark: chibi's toml parser skips it, Jackson said "Unknown token" and the mount stopped. */
    @Test
    void aByteOrderMarkIsSkippedAsChibiSkipsIt() throws IOException {
        assertEquals(3, load("\ufefftool_cache_max_age_days = 3\n").toolCacheMaxAgeDays());
    }

    @Test
    void emptyFileMeansDefaults() throws IOException {
        assertEquals(ChibiConfig.DEFAULTS, load(""));
    }

    @Test
    void readsEveryKey() throws IOException {
        ChibiConfig c = load("""
                tool_output_cache_threshold = 100
                tool_cache_max_age_days = 2
                tool_cache_preview_chars = 50
                auto_cleanup_cache = false

                [vfs]
                backend = "local"
                """);
        assertEquals(new ChibiConfig("local", 100, 2, 50, false), c);
    }

    @Test
    void unknownKeysBelongToChibiAndAreIgnored() throws IOException {
        ChibiConfig c = load("""
                api_key = "sk-x"
                model = "anthropic/claude-sonnet-4"
                warn_threshold_percent = 80.0
                tool_cache_max_age_days = 3

                [vfs]
                backend = "local"
                something_new = [1, 2]

                [cli]
                theme = "dark"
                """);
        assertEquals(3, c.toolCacheMaxAgeDays());
        assertEquals(4000, c.toolOutputCacheThreshold());
    }

    @Test
    void wrongTypeNamesFileLineAndKey() throws IOException {
        String msg = refused("model = \"x\"\n\ntool_cache_max_age_days = \"7\"\n");
        assertEquals(dir.resolve("config.toml") + ":3: tool_cache_max_age_days: expected a non-negative integer,"
                + " found a string (\"7\")", msg);
    }

    @Test
    void everySharedKeyIsTypeChecked() throws IOException {
        assertTrue(refused("tool_output_cache_threshold = 1.5\n")
                .endsWith(":1: tool_output_cache_threshold: expected a non-negative integer, found a float (1.5)"));
        assertTrue(refused("a = 1\ntool_cache_preview_chars = true\n")
                .endsWith(":2: tool_cache_preview_chars: expected a non-negative integer, found a boolean (true)"));
        assertTrue(refused("auto_cleanup_cache = \"yes\"\n")
                .endsWith(":1: auto_cleanup_cache: expected true or false, found a string (\"yes\")"));
        assertTrue(refused("[vfs]\nbackend = 3\n").endsWith(":2: [vfs] backend: expected a string, found an integer (3)"));
        assertTrue(refused("vfs = \"local\"\n").endsWith(":1: vfs: expected a table, found a string (\"local\")"));
    }

    @Test
    void everyNonNegativeTomlIntegerIsTakenAsChibiTakesIt() throws IOException {
        // chibi reads them as u64 and usize: a config it runs with must not stop chibifs
        ChibiConfig c = load("tool_cache_max_age_days = 9223372036854775807\n"
                + "tool_output_cache_threshold = 9223372036854775807\ntool_cache_preview_chars = 9223372036854775807\n");
        assertEquals(Long.MAX_VALUE, c.toolCacheMaxAgeDays());
        assertEquals(Long.MAX_VALUE, c.toolOutputCacheThreshold());
        assertEquals(Long.MAX_VALUE, c.toolCachePreviewChars());
        assertEquals(100_000, load("tool_cache_max_age_days = 100000\n").toolCacheMaxAgeDays());
        assertEquals(5_000_000_000L, load("tool_output_cache_threshold = 5000000000\n").toolOutputCacheThreshold());
        // Jackson 2.22 read 1000000000000000000 as 0 (jackson-dataformats-text#663): a max age that would sweep everything
        assertEquals(1_000_000_000_000_000_000L, load("tool_cache_max_age_days = 1000000000000000000\n").toolCacheMaxAgeDays());
        assertEquals(1_234_567_890_123_456_789L,
                load("x = 1\ntool_cache_max_age_days = +1_234_567_890_123_456_789 # far\n").toolCacheMaxAgeDays());
        assertEquals(Long.MAX_VALUE, load("tool_cache_max_age_days = 0x7fffffffffffffff\n").toolCacheMaxAgeDays());
        assertEquals(999_999_999_999_999_999L, load("tool_cache_max_age_days = 999999999999999999\n").toolCacheMaxAgeDays());
    }

    @Test
    void negativeAndHugeNumbersAreOutOfRange() throws IOException {
        assertTrue(refused("tool_cache_max_age_days = -1\n")
                .contains(":1: tool_cache_max_age_days: -1 is out of range"));
        assertTrue(refused("\n\ntool_output_cache_threshold = 99999999999999999999\n")
                .contains(":3: tool_output_cache_threshold: 99999999999999999999 is out of range"));
        assertTrue(refused("tool_cache_preview_chars = -5\n")
                .endsWith(":1: tool_cache_preview_chars: -5 is out of range (0 to 9223372036854775807)"));
        assertTrue(refused("tool_cache_max_age_days = 9223372036854775808\n")
                .contains(":1: tool_cache_max_age_days: 9223372036854775808 is out of range"));
        assertTrue(refused("tool_cache_max_age_days = -1000000000000000000\n")
                .contains(":1: tool_cache_max_age_days: -1000000000000000000 is out of range"));
    }

    @Test
    void malformedTomlGivesTheLine() throws IOException {
        String msg = refused("model = \"x\"\ntool_cache_max_age_days = = 7\n");
        assertTrue(msg.startsWith(dir.resolve("config.toml") + ":2: malformed TOML: "), msg);
        assertTrue(msg.contains("tool_cache_max_age_days"), msg);
        // the parser points past a repeat, at the next line and its key ("config.toml:3: ... (key b)")
        assertTrue(refused("a = 1\na = 2\nb = 3\n").endsWith(":2: malformed TOML: key a again (first on line 1)"));
        assertTrue(refused("[x]\nk = 1\n[x]\nk = 2\n")
                .endsWith(":3: malformed TOML: table [x] again (first on line 1)"));
        assertTrue(refused("\"a\" = 1\na = 2\n").endsWith(":2: malformed TOML: key a again (first on line 1)"));
        // no repeat where the error is another: arrays of tables, and a string's lines
        assertTrue(refused("[[t]]\nk = 1\n[[t]]\nk = 2\nbad bad\n").contains(":5: malformed TOML: "));
        assertTrue(refused("s = \"\"\"\nx = 1\nx = 2\n\"\"\"\nbad bad\n").contains(":5: malformed TOML: "));
        // a line of a multi-line array is no key; "a.b" is not a.b: the repeat named is the parser's
        assertTrue(refused("arr = [\n  \"c = 1\",\n]\nc = 1\nd = 1\nd = 2\n").endsWith(":6: malformed TOML: key d again (first on line 5)"));
        assertTrue(refused("\"a.b\" = 1\na.b = 2\nc = 1\nc = 2\n").endsWith(":4: malformed TOML: key c again (first on line 3)"));
    }

    @Test
    void unknownBackendNamesItAndTheChoices() throws IOException {
        String msg = refused("model = \"x\"\n[vfs]\nbackend = \"fossil\"\n");
        assertEquals(dir.resolve("config.toml") + ":3: [vfs] backend: unknown VFS backend 'fossil' (choices: local)", msg);
    }

    @Test
    void backendLineIsFoundInDottedAndInlineForms() throws IOException {
        assertTrue(refused("a = 1\nvfs.backend = \"s3\"\n").contains(":2: [vfs] backend: unknown VFS backend 's3'"));
        assertTrue(refused("a = 1\n\nvfs = { backend = \"s3\" }\n").contains(":3: [vfs] backend: unknown VFS backend 's3'"));
    }

    @Test
    void keyInAnotherTableIsNotMistakenForTheTopLevelOne() throws IOException {
        // a same-named key in chibi's own tables is chibi's business
        ChibiConfig c = load("[models.x]\ntool_cache_max_age_days = \"whatever\"\n");
        assertEquals(7, c.toolCacheMaxAgeDays());
        assertTrue(refused("[other]\nbackend = 1\n[vfs]\nbackend = 2\n").contains(":4: [vfs] backend"));
    }

    /** config.toml as a fifo hung mount and doctor in open(2); a link to /dev/zero took the daemon's memory. */
    @Test
    void aConfigThatIsNoRegularFileOrTooLargeIsRefusedAtOnceNamingTheRule() throws IOException {
        ChibiHome home = new ChibiHome(dir);
        Path file = home.configFile();
        dev.chibifs.testing.OddFiles.fifo(file);
        assertEquals(file + ": cannot read: " + HomeFile.NOT_REGULAR, refusedPromptly(home));
        Files.delete(file);
        Files.createSymbolicLink(file, Path.of("/dev/zero"));
        assertEquals(file + ": cannot read: " + HomeFile.NOT_REGULAR, refusedPromptly(home));
        Files.delete(file);
        dev.chibifs.testing.OddFiles.sized(file, HomeFile.CONFIG_TOML_LIMIT + 1);
        assertEquals(file + ": cannot read: larger than 4 MiB, the most chibifs reads of config.toml: not read",
                refusedPromptly(home));
        Files.delete(file);
        Files.writeString(file, "tool_cache_max_age_days = 3\n");
        Path local = Files.createDirectories(home.localConfigFile("coder").getParent()).resolve("local.toml");
        dev.chibifs.testing.OddFiles.fifo(local);
        ChibiConfig global = ChibiConfig.load(home);
        assertEquals(local + ": cannot read: " + HomeFile.NOT_REGULAR, assertTimeoutPreemptively(dev.chibifs.testing.OddFiles.PROMPTLY,
                () -> assertThrows(ConfigException.class, () -> global.forContext(home, "coder")).getMessage()));
    }

    private static String refusedPromptly(ChibiHome home) {
        return assertTimeoutPreemptively(dev.chibifs.testing.OddFiles.PROMPTLY,
                () -> assertThrows(ConfigException.class, () -> ChibiConfig.load(home)).getMessage());
    }
}
