package dev.chibifs.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class CacheCommandTest {

    private static final Pattern STUB_URI = Pattern.compile("^\\[Output cached: vfs://(/sys/tool_cache/[^\\]]+)\\]");

    @TempDir
    Path home;

    private final InputStream realIn = System.in;
    private final PrintStream realOut = System.out;
    private ByteArrayOutputStream rawOut;
    private StringWriter out;
    private StringWriter err;

    @BeforeEach
    void captureRawStdout() {
        rawOut = new ByteArrayOutputStream();
        System.setOut(new PrintStream(rawOut, true));
    }

    @AfterEach
    void restore() {
        System.setIn(realIn);
        System.setOut(realOut);
    }

    private int run(byte[] stdin, String... args) {
        System.setIn(new ByteArrayInputStream(stdin));
        out = new StringWriter();
        err = new StringWriter();
        CommandLine cl = Main.commandLine();
        cl.setOut(new PrintWriter(out, true));
        cl.setErr(new PrintWriter(err, true));
        List<String> all = new ArrayList<>(List.of(args));
        all.add("--home");
        all.add(home.toString());
        return cl.execute(all.toArray(new String[0]));
    }

    private int run(String... args) {
        return run(new byte[0], args);
    }

    private Path storeFile(String vfsPath) {
        return home.resolve("vfs").resolve(vfsPath.substring(1));
    }

    private String stdout() {
        return rawOut.toString(StandardCharsets.UTF_8);
    }

    @Test
    void hundredKilobytesRoundTripThroughPut() throws IOException {
        byte[] output = new byte[100 * 1024];
        // arbitrary bytes, not even UTF-8: the entry must still be byte-identical
        new Random(42).nextBytes(output);
        // a link to the store shows it as a mount of it does (CacheMountTest puts through a real one)
        Path mnt = Files.createSymbolicLink(home.resolve("mnt"), home.resolve("vfs"));
        assertEquals(0, run(output, "cache", "put", "--context", "coder", "--tool", "shell_exec",
                "--args", "{ \"cmd\": \"make\" }", "--mountpoint", mnt.toString()), err.toString());
        String stub = stdout();
        Matcher m = STUB_URI.matcher(stub);
        assertTrue(m.find(), stub);
        String path = m.group(1);
        assertTrue(path.matches("/sys/tool_cache/coder/shell_exec_[0-9a-f]+_[0-9a-f]{8}"), path);
        assertArrayEquals(output, Files.readAllBytes(storeFile(path)));
        long newlines = 0;
        for (byte b : output) {
            newlines += b == '\n' ? 1 : 0;
        }
        long lines = output[output.length - 1] == '\n' ? newlines : newlines + 1;
        assertTrue(stub.contains("Tool: shell_exec | Size: 102400 chars, ~25600 tokens | Lines: " + lines + "\n"), stub);
        assertTrue(stub.contains("with path=\"vfs://" + path + "\" to examine.\n"));
        assertTrue(stub.contains("In a shell: head, tail or grep " + mnt + path + " "), stub);
        assertTrue(stub.endsWith(").\n"));
    }

    @Test
    void anEntryGetsTheModeChibisWritesGet() throws IOException {
        // chibi writes entries with Rust's default mode, 0666 less the umask of whoever runs it
        for (String umask : new String[] {"077", "002", "022"}) {
            String ctx = "c" + umask;
            dev.chibifs.testing.Sh.run("umask " + umask + " && head -c 5000 /dev/zero | tr '\\0' x | "
                    + dev.chibifs.testing.MountedFs.cliScript("cache", "put", "--context", ctx, "--tool", "t",
                    "--home", home.toString()) + " > /dev/null").ok();
            try (var entries = Files.list(home.resolve("vfs/sys/tool_cache/" + ctx))) {
                Path entry = entries.findFirst().orElseThrow();
                int mode = 0666 & ~Integer.parseInt(umask, 8);
                assertEquals(java.nio.file.attribute.PosixFilePermissions.toString(
                        permissions(mode)), java.nio.file.attribute.PosixFilePermissions.toString(
                        Files.getPosixFilePermissions(entry)), umask);
            }
        }
    }

    private static java.util.Set<java.nio.file.attribute.PosixFilePermission> permissions(int mode) {
        java.util.Set<java.nio.file.attribute.PosixFilePermission> set = java.util.EnumSet.noneOf(
                java.nio.file.attribute.PosixFilePermission.class);
        java.nio.file.attribute.PosixFilePermission[] bits = java.nio.file.attribute.PosixFilePermission.values();
        for (int i = 0; i < 9; i++) {
            // values() runs OWNER_READ .. OTHERS_EXECUTE, from bit 8 down to bit 0
            if ((mode & (0400 >> i)) != 0) {
                set.add(bits[i]);
            }
        }
        return set;
    }

    @Test
    void smallAndBlankOutputPassThroughUnchanged() throws IOException {
        byte[] small = "x".repeat(4000).getBytes(StandardCharsets.UTF_8);
        assertEquals(0, run(small, "cache", "put", "--context", "coder", "--tool", "t"));
        assertArrayEquals(small, rawOut.toByteArray());

        rawOut.reset();
        byte[] blank = " \n".repeat(5000).getBytes(StandardCharsets.UTF_8);
        assertEquals(0, run(blank, "cache", "put", "--context", "coder", "--tool", "t"));
        assertArrayEquals(blank, rawOut.toByteArray());

        rawOut.reset();
        byte[] notUtf8 = {(byte) 0xff, (byte) 0xfe, 'a', '\n'};
        assertEquals(0, run(notUtf8, "cache", "put", "--context", "coder", "--tool", "t"));
        assertArrayEquals(notUtf8, rawOut.toByteArray());
        assertFalse(Files.exists(home.resolve("vfs/sys/tool_cache/coder")));
    }

    @Test
    void anErrorPassesThroughUnchangedHoweverLong() {
        byte[] error = ("Error: the tool failed\n" + "trace line\n".repeat(1000)).getBytes(StandardCharsets.UTF_8);
        assertEquals(0, run(error, "cache", "put", "--context", "coder", "--tool", "t"));
        assertArrayEquals(error, rawOut.toByteArray());
        assertFalse(Files.exists(home.resolve("vfs/sys/tool_cache/coder")), "chibi never caches an error");
    }

    @Test
    void thresholdComesFromChibisConfig() throws IOException {
        Files.writeString(home.resolve("config.toml"), "tool_output_cache_threshold = 10\ntool_cache_preview_chars = 4\n");
        assertEquals(0, run("0123456789\nabc\n".getBytes(StandardCharsets.UTF_8),
                "cache", "put", "--context", "coder", "--tool", "t"));
        assertTrue(stdout().contains("\n---\n0123\n---\n"), stdout());
    }

    @Test
    void aContextsLocalTomlOverridesThresholdAndPreview() throws IOException {
        Files.writeString(home.resolve("config.toml"), "tool_output_cache_threshold = 10\n");
        Path local = Files.createDirectories(home.resolve("contexts/coder")).resolve("local.toml");
        Files.writeString(local, "tool_output_cache_threshold = 100\n");
        byte[] output = "0123456789\nabcdefghij\n".repeat(3).getBytes(StandardCharsets.UTF_8);
        assertEquals(0, run(output, "cache", "put", "--context", "coder", "--tool", "t"));
        assertArrayEquals(output, rawOut.toByteArray(), "under coder's own threshold");
        rawOut.reset();
        assertEquals(0, run(output, "cache", "put", "--context", "planner", "--tool", "t"));
        assertTrue(stdout().startsWith("[Output cached: vfs:///sys/tool_cache/planner/"), stdout());

        Files.writeString(local, "tool_cache_preview_chars = 12\n");
        rawOut.reset();
        assertEquals(0, run(output, "cache", "put", "--context", "coder", "--tool", "t"));
        assertTrue(stdout().endsWith("Preview (first 1 lines):\n---\n0123456789\n---\n"), stdout());

        Files.writeString(local, "tool_cache_preview_chars = \"many\"\n");
        rawOut.reset();
        assertEquals(2, run(output, "cache", "put", "--context", "coder", "--tool", "t"));
        assertArrayEquals(output, rawOut.toByteArray());
        assertEquals("chibifs: " + local + ":1: tool_cache_preview_chars: expected a non-negative integer, found a"
                + " string (\"many\")\n", err.toString());
    }

    @Test
    void badNamesAreUsageErrorsThatStillPrintTheOutput() {
        byte[] output = "y".repeat(5000).getBytes(StandardCharsets.UTF_8);
        assertEquals(2, run(output, "cache", "put", "--context", "System", "--tool", "t"));
        assertTrue(err.toString().contains("'System'"), err.toString());
        assertArrayEquals(output, rawOut.toByteArray(), "nothing is lost");

        rawOut.reset();
        assertEquals(2, run(output, "cache", "put", "--context", "coder", "--tool", "../x"));
        assertTrue(err.toString().contains("invalid tool name '../x'"), err.toString());
        assertArrayEquals(output, rawOut.toByteArray());

        rawOut.reset();
        assertEquals(2, run(output, "cache", "put", "--context", "coder", "--tool", "t", "--args", "{oops"));
        assertTrue(err.toString().contains("--args '{oops' is not valid JSON"), err.toString());
        assertEquals(2, run("cache", "ls", "--context", "a b"));
        assertEquals(2, run("cache", "clear", "--context", "-"));
        assertEquals(2, run("cache", "clear", "--context=-x"));
        assertEquals(2, run("cache", "ls", "--context=--"));
        rawOut.reset();
        assertEquals(2, run(output, "cache", "put", "--context=-coder", "--tool", "t"));
        assertArrayEquals(output, rawOut.toByteArray());
        assertFalse(Files.exists(home.resolve("vfs/sys/tool_cache")));
    }

    @Test
    void putPrintsTheOutputWhenTheCommandLineIsRefused() throws IOException {
        byte[] output = "p".repeat(5000).getBytes(StandardCharsets.UTF_8);
        Path file = Files.writeString(home.resolve("a-file"), "");
        String[][] refused = {
            {"cache", "put", "--tool", "t"},
            {"cache", "put", "--context", "coder"},
            {"cache", "put", "--context", "coder", "--tool", "t", "--bogus"},
            {"cache", "put", "--context", "coder", "--tool", "t", "--home", ""},
            {"cache", "put", "--context", "coder", "--tool", "t", "stray"},
            {"cache", "put", "--context", "coder", "--tool", "t", "--home", file.toString()},
        };
        Cli cli = new Cli(home);
        for (String[] args : refused) {
            Cli.Result r = cli.run(java.util.Map.of(), output, args);
            assertEquals(2, r.code(), r.toString());
            assertArrayEquals(output, r.outBytes(), String.join(" ", args));
            assertEquals(1, r.err().lines().count(), r.err());
            assertTrue(r.err().startsWith("chibifs: "), r.err());
        }
        assertFalse(Files.exists(home.resolve("vfs")));
    }

    /**
     * cache put alone made --context required, where mount and the vfs commands take $CHIBI_CONTEXT:
     * a shell agent whose environment names its context had its output refused (printed unchanged, exit 2).
     */
    @Test
    void putTakesItsContextFromChibiContextAsTheOtherCommandsDo() throws IOException {
        byte[] output = "c".repeat(5000).getBytes(StandardCharsets.UTF_8);
        Cli cli = new Cli(home);
        Cli.Result r = cli.run(java.util.Map.of("CHIBI_CONTEXT", "coder"), output, "cache", "put", "--tool", "t");
        Cli.assertExit(0, r);
        Matcher m = STUB_URI.matcher(r.out());
        assertTrue(m.find(), r.out());
        assertTrue(m.group(1).startsWith("/sys/tool_cache/coder/t_"), m.group(1));
        assertArrayEquals(output, Files.readAllBytes(storeFile(m.group(1))));

        // --context wins over the environment, as --as and mount's --context do
        r = cli.run(java.util.Map.of("CHIBI_CONTEXT", "coder"), output, "cache", "put", "--context", "planner", "--tool", "t");
        Cli.assertExit(0, r);
        assertTrue(r.out().startsWith("[Output cached: vfs:///sys/tool_cache/planner/t_"), r.out());

        // a bad name from the environment says where it came from; the output is printed all the same
        r = cli.run(java.util.Map.of("CHIBI_CONTEXT", "a b"), output, "cache", "put", "--tool", "t");
        Cli.assertExit(2, r);
        assertArrayEquals(output, r.outBytes());
        assertEquals("chibifs: invalid context name 'a b' (from $CHIBI_CONTEXT): " + dev.chibifs.policy.ContextNames.RULE
                + "\n", r.err());

        // neither: both ways are named; an empty variable is none, as for the other commands
        for (java.util.Map<String, String> env : List.of(java.util.Map.<String, String>of(), java.util.Map.of("CHIBI_CONTEXT", ""))) {
            r = cli.run(env, output, "cache", "put", "--tool", "t");
            Cli.assertExit(2, r);
            assertArrayEquals(output, r.outBytes());
            assertEquals("chibifs: 'cache put' needs a context: pass --context NAME, or set CHIBI_CONTEXT=NAME\n", r.err());
        }
    }

    @Test
    void lsListsEntriesAsTextAndJson() throws IOException {
        run("z".repeat(5000).getBytes(StandardCharsets.UTF_8), "cache", "put", "--context", "coder", "--tool", "t");
        run("w".repeat(6000).getBytes(StandardCharsets.UTF_8), "cache", "put", "--context", "planner", "--tool", "u");

        assertEquals(0, run("cache", "ls"));
        String[] lines = out.toString().split("\n");
        assertEquals(3, lines.length, out.toString());
        assertTrue(lines[0].matches("CONTEXT\\s+ID\\s+SIZE\\s+AGE"), lines[0]);
        assertTrue(lines[1].matches("coder\\s+t_[0-9a-f]+_[0-9a-f]{8}\\s+5000\\s+\\d+s"), lines[1]);

        assertEquals(0, run("cache", "ls", "--context", "planner", "--json"));
        JsonNode json = new ObjectMapper().readTree(out.toString());
        assertEquals(1, json.size());
        assertEquals("planner", json.get(0).get("context").asText());
        assertEquals(6000, json.get(0).get("size").asLong());
        assertTrue(json.get(0).get("path").asText().startsWith("vfs:///sys/tool_cache/planner/u_"));
    }

    /** Without --home, $CHIBI_HOME of the command's own environment: ls read the JVM's, not the one it was given. */
    @Test
    void lsWithoutHomeReadsChibiHomeOfItsEnvironment() throws IOException {
        Path ahead = Files.createDirectories(home.resolve("vfs/sys/tool_cache/coder")).resolve("t_1_00000000");
        Files.writeString(ahead, "x");
        Cli.Result r = new Cli(home).run("cache", "ls", "--json");
        Cli.assertExit(0, r);
        assertEquals("coder", new ObjectMapper().readTree(r.out()).get(0).get("context").asText(), r.toString());
    }

    @Test
    void anEntryFromTheFutureShowsANegativeAge() throws IOException {
        assertEquals("0s", dev.chibifs.cache.ToolCache.shown(Duration.ZERO));
        assertEquals("3d4h", dev.chibifs.cache.ToolCache.shown(Duration.ofHours(76)));
        assertEquals("-5m", dev.chibifs.cache.ToolCache.shown(Duration.ofMinutes(-5)));
        assertEquals("-1d2h", dev.chibifs.cache.ToolCache.shown(Duration.ofHours(-26)));
        Path ahead = Files.createDirectories(home.resolve("vfs/sys/tool_cache/coder")).resolve("t_1_00000000");
        Files.writeString(ahead, "x");
        Files.setLastModifiedTime(ahead, FileTime.from(Instant.now().plus(Duration.ofDays(2)).plusSeconds(60)));
        assertEquals(0, run("cache", "ls"));
        assertTrue(out.toString().lines().skip(1).findFirst().orElseThrow().endsWith("  -2d"), out.toString());
        assertEquals(0, run("cache", "ls", "--json"));
        long age = new ObjectMapper().readTree(out.toString()).get(0).get("age_seconds").asLong();
        assertTrue(age < -2 * 86_400, "age_seconds " + age);
    }

    @Test
    void lsOnAHomeWithoutAStoreIsEmptyAndCreatesNothing() throws IOException {
        Files.writeString(home.resolve("config.toml"), "");
        assertEquals(0, run("cache", "ls", "--json"));
        assertEquals("[]", out.toString().strip());
        assertFalse(Files.exists(home.resolve("vfs")));
    }

    /** A mistyped --home was an empty cache, exit 0: a script could not tell it from a real, empty one. */
    @Test
    void aHomeThatIsNotChibisIsRefusedByEveryCommandThatReads() {
        Path typo = home.resolve("typo");
        String[][] commands = {{"cache", "ls"}, {"cache", "clean"}, {"cache", "clear", "--context", "coder"}};
        for (String[] cmd : commands) {
            Cli.Result r = new Cli(home).run(withHome(cmd, typo));
            Cli.assertExit(1, r);
            assertEquals("chibifs: no chibi home at " + typo + " (no such directory: is --home or $CHIBI_HOME right?)\n",
                    r.err(), r.toString());
            assertEquals("", r.out());
            assertFalse(Files.exists(typo), "nothing made");
        }
        // there, but neither a store nor a config.toml in it: someone else's directory
        for (String[] cmd : commands) {
            Cli.Result r = new Cli(home).run(withHome(cmd, home));
            Cli.assertExit(1, r);
            assertEquals("chibifs: " + home + " is not a chibi home (it has no store, vfs/, and no config.toml:"
                    + " is --home or $CHIBI_HOME right?)\n", r.err(), r.toString());
            assertFalse(Files.exists(home.resolve("vfs")), "nothing made");
        }
    }

    /**
     * A mistyped --home was made by cache put, which cached there with exit 0 where cache ls said it
     * was not there: refused as ls refuses it, the output printed whole all the same.
     */
    @Test
    void putRefusesAHomeThatIsNotThereAndPrintsTheOutput() {
        Path typo = home.resolve("typo");
        byte[] large = "x".repeat(5000).getBytes(StandardCharsets.UTF_8);
        for (byte[] output : new byte[][] {large, "small\n".getBytes(StandardCharsets.UTF_8)}) {
            Cli.Result r = new Cli(home).runWithStdin(output, withHome(new String[] {"cache", "put", "--context", "coder",
                    "--tool", "t"}, typo));
            Cli.assertExit(1, r);
            assertArrayEquals(output, r.outBytes());
            assertEquals("chibifs: cannot cache the output (printed unchanged instead): no chibi home at " + typo
                    + " (no such directory: is --home or $CHIBI_HOME right?)\n", r.err());
            assertFalse(Files.exists(typo), "nothing made");
        }
        Cli.Result r = new Cli(typo).runWithStdin(large, "cache", "put", "--context", "coder", "--tool", "t");
        Cli.assertExit(1, r);
        assertTrue(r.err().contains("no chibi home at " + typo), r.err());
        assertFalse(Files.exists(typo), "$CHIBI_HOME named it: nothing made");
    }

    /**
     * A --mountpoint that does not show the entry (mistyped, another home's mount, none) gave a stub
     * whose shell line named a path where the entry is not, exit 0, under "do NOT re-run this tool":
     * now the output is printed unchanged, one line names the value and the rule, exit 2.
     */
    @Test
    void putRefusesAMountpointThatDoesNotShowTheEntryAndPrintsTheOutput() throws IOException {
        byte[] output = "m".repeat(5000).getBytes(StandardCharsets.UTF_8);
        Path otherHomesStore = Files.createDirectories(home.resolve("other/vfs"));
        for (Path wrong : List.of(home.resolve("nonexistent"), otherHomesStore)) {
            Cli.Result r = new Cli(home).runWithStdin(output, "cache", "put", "--context", "coder", "--tool", "t",
                    "--mountpoint", wrong.toString());
            Cli.assertExit(2, r);
            assertArrayEquals(output, r.outBytes(), "the output, unchanged");
            assertTrue(r.err().matches("chibifs: printed the output unchanged: --mountpoint " + Pattern.quote(wrong.toString())
                    + " does not show the entry: " + Pattern.quote(wrong.toString()) + "/sys/tool_cache/coder/t_[0-9a-f]+_[0-9a-f]{8} is not"
                    + " there \\(DIR must be where this home's store, " + Pattern.quote(home.resolve("vfs").toString())
                    + ", is mounted\\)\n"), r.err());
        }
        // small output is printed as it is, with no stub to check DIR for
        Cli.Result small = new Cli(home).runWithStdin("ok\n".getBytes(StandardCharsets.UTF_8), "cache", "put",
                "--context", "coder", "--tool", "t", "--mountpoint", home.resolve("nonexistent").toString());
        Cli.assertExit(0, small);
    }

    /** The same file is the same inode, size and time; a copy, however alike, is another file. */
    @Test
    void aMountpointShowsTheEntryOnlyWhereItIsTheSameFile() throws IOException {
        Path stored = Files.writeString(home.resolve("entry"), "same content");
        Path link = Files.createLink(home.resolve("hard-link"), stored);
        assertEquals(new CachePutCommand.Shown(ExitCodes.OK, null), CachePutCommand.Shown.of(stored, link));
        Path copy = Files.copy(stored, home.resolve("copy"));
        Files.setLastModifiedTime(copy, Files.getLastModifiedTime(stored));
        assertEquals(Files.getLastModifiedTime(stored), Files.getLastModifiedTime(copy), "alike but for the inode");
        assertEquals(new CachePutCommand.Shown(ExitCodes.USAGE, copy + " is another file"),
                CachePutCommand.Shown.of(stored, copy));
        Path absent = home.resolve("absent");
        assertEquals(new CachePutCommand.Shown(ExitCodes.USAGE, absent + " is not there"),
                CachePutCommand.Shown.of(stored, absent));
    }

    /**
     * A mount hears of its store's change a moment after it (its daemon's follower): an entry just
     * replaced (the same output put again within its second) shows the file it replaced meanwhile.
     */
    @Test
    @org.junit.jupiter.api.Timeout(30)
    void aMountpointThatCatchesUpWithinTheWindowShowsTheEntry() throws Exception {
        CachePutCommand.Shown replaced = new CachePutCommand.Shown(ExitCodes.USAGE, "shown is another file");
        CachePutCommand.Shown entry = new CachePutCommand.Shown(ExitCodes.OK, null);
        // the mount shows the file replaced for its first three looks, then the entry
        java.util.concurrent.atomic.AtomicInteger looks = new java.util.concurrent.atomic.AtomicInteger();
        assertEquals(entry, CachePutCommand.Shown.onceCaughtUp(() -> looks.incrementAndGet() > 3 ? entry : replaced,
                CachePutCommand.MOUNT_CATCHES_UP));
        assertEquals(4, looks.get());
        // one that never does is refused once the window has passed
        Path stored = Files.writeString(home.resolve("entry"), "same content");
        Path copy = Files.writeString(home.resolve("copy"), "same content");
        assertEquals(new CachePutCommand.Shown(ExitCodes.USAGE, copy + " is another file"),
                CachePutCommand.Shown.onceCaughtUp(stored, copy, java.time.Duration.ofMillis(20)));
    }

    /** A full disk's line named no path ("No space left on device"): now the entry it was storing. */
    @Test
    void aPutThatFillsTheDiskNamesTheEntryAndPrintsTheOutput() throws IOException {
        dev.chibifs.testing.FuseSupport.requireRoot();
        byte[] output = "f".repeat(2 << 20).getBytes(StandardCharsets.UTF_8);
        try (dev.chibifs.testing.Tmpfs disk = dev.chibifs.testing.Tmpfs.mount(home.resolve("small"), "1m")) {
            Files.createDirectories(disk.path().resolve("vfs"));
            Cli.Result r = new Cli(disk.path()).runWithStdin(output, "cache", "put", "--context", "coder", "--tool", "t");
            Cli.assertExit(1, r);
            assertArrayEquals(output, r.outBytes());
            assertTrue(r.err().matches("chibifs: cannot cache the output \\(printed unchanged instead\\): No space left on"
                    + " device: /sys/tool_cache/coder/t_[0-9a-f]+_[0-9a-f]{8}\n"), r.err());
        }
    }

    private static String[] withHome(String[] cmd, Path dir) {
        List<String> all = new ArrayList<>(List.of(cmd));
        all.add("--home");
        all.add(dir.toString());
        return all.toArray(new String[0]);
    }

    @Test
    void cleanRemovesWhatIsOlderThanTheLimit() throws IOException {
        Path old = Files.createDirectories(home.resolve("vfs/sys/tool_cache/coder")).resolve("t_1_00000000");
        Files.writeString(old, "old");
        Files.setLastModifiedTime(old, FileTime.from(Instant.now().minus(Duration.ofDays(3))));
        Path fresh = old.resolveSibling("t_2_00000000");
        Files.writeString(fresh, "fresh");

        assertEquals(0, run("cache", "clean"));
        assertTrue(Files.exists(old), "the default limit is 7 days");
        assertEquals(0, run("cache", "clean", "--max-age-days", "2"));
        assertFalse(Files.exists(old));
        assertTrue(Files.exists(fresh));
        // --max-age-days 2 is chibi's setting: what goes is more than 3 days old, and the line says 3
        assertEquals("removed vfs:///sys/tool_cache/coder/t_1_00000000\nremoved 1 tool cache entry older than 3 days"
                + " (max age 2 + 1, as chibi counts)\n", out.toString());
        assertEquals(2, run("cache", "clean", "--max-age-days", "-1"));
        assertTrue(err.toString().contains("--max-age-days must be 0 or more, not -1"), err.toString());
        assertEquals(2, run("cache", "clean", "--max-age-days", "seven"));
        Files.setLastModifiedTime(fresh, FileTime.from(Instant.now().minus(Duration.ofDays(200_000))));
        assertEquals(0, run("cache", "clean", "--max-age-days", "99999999999999"));
        assertTrue(Files.exists(fresh));
        assertEquals("removed 0 tool cache entries older than 100000000000000 days (max age 99999999999999 + 1,"
                + " as chibi counts)\n", out.toString());
    }

    @Test
    void theLargestSettingsChibiTakesAreTaken() throws IOException {
        // chibi reads these as u64 and usize; TOML's largest integer is i64's
        Files.writeString(home.resolve("config.toml"), "tool_cache_max_age_days = 9223372036854775807\n"
                + "tool_output_cache_threshold = 9223372036854775807\ntool_cache_preview_chars = 9223372036854775807\n");
        Path old = Files.createDirectories(home.resolve("vfs/sys/tool_cache/coder")).resolve("t_1_00000000");
        Files.writeString(old, "old");
        Files.setLastModifiedTime(old, FileTime.from(Instant.EPOCH));
        assertEquals(0, run("cache", "clean"));
        assertTrue(Files.exists(old));
        assertTrue(out.toString().endsWith("older than 9223372036854775808 days (max age 9223372036854775807 + 1,"
                + " as chibi counts)\n"), out.toString());
        byte[] output = "x".repeat(100_000).getBytes(StandardCharsets.UTF_8);
        assertEquals(0, run(output, "cache", "put", "--context", "coder", "--tool", "t"));
        assertArrayEquals(output, rawOut.toByteArray());
        assertEquals(0, run("cache", "ls"));
    }

    @Test
    void cleanPrintsANameWithANewlineOnOneLine() throws IOException {
        Path old = Files.createDirectories(home.resolve("vfs/sys/tool_cache/coder")).resolve("t\n1_00000000");
        Files.writeString(old, "old");
        Files.setLastModifiedTime(old, FileTime.from(Instant.now().minus(Duration.ofDays(30))));
        assertEquals(0, run("cache", "ls"));
        assertEquals(2, out.toString().lines().count(), out.toString());
        assertTrue(out.toString().contains("coder    t\\n1_00000000"), out.toString());
        assertEquals(0, run("cache", "clean"));
        assertEquals("removed vfs:///sys/tool_cache/coder/t\\n1_00000000\nremoved 1 tool cache entry older than 8 days"
                + " (max age 7 + 1, as chibi counts)\n", out.toString());
        assertFalse(Files.exists(old));
    }

    @Test
    void clearRemovesOneContext() throws IOException {
        run("z".repeat(5000).getBytes(StandardCharsets.UTF_8), "cache", "put", "--context", "coder", "--tool", "t");
        run("z".repeat(5000).getBytes(StandardCharsets.UTF_8), "cache", "put", "--context", "planner", "--tool", "t");
        Files.writeString(Files.createDirectories(home.resolve("vfs/sys/tool_cache/coder/sub/deeper")).resolve("f"), "x");
        assertEquals(0, run("cache", "clear", "--context", "coder"));
        assertEquals("removed vfs:///sys/tool_cache/coder with the 2 files in it\n", out.toString(),
                "the entry and the file in a subdirectory: what went, not what looked like an entry");
        assertFalse(Files.exists(home.resolve("vfs/sys/tool_cache/coder")));
        assertTrue(Files.exists(home.resolve("vfs/sys/tool_cache/planner")));
        assertEquals(0, run("cache", "clear", "--context", "coder"));
        assertEquals("no tool cache for context coder (vfs:///sys/tool_cache/coder)\n", out.toString());
    }

    /**
     * Another user's clear said only "Permission denied: /sys/tool_cache/coder": not whose cache, nor
     * why. (The tests run as root, whom no permission refuses: the failure is made here.)
     */
    @Test
    void aRefusedClearSaysWhoseCacheWhoseStoreAndWhy() throws IOException {
        Files.createDirectories(home.resolve("vfs"));
        CommandFailure f = CacheStores.couldNotRemove("context coder's tool cache vfs:///sys/tool_cache/coder",
                new dev.chibifs.config.ChibiHome(home), dev.chibifs.sys.Errors.of(dev.chibifs.sys.Linux.EACCES,
                        "/sys/tool_cache/coder"));
        assertEquals(ExitCodes.FAILURE, f.exitCode());
        assertEquals("could not remove context coder's tool cache vfs:///sys/tool_cache/coder: the store "
                + home.resolve("vfs") + " (owned by uid " + Files.getAttribute(home.resolve("vfs"), "unix:uid")
                + ") is not writable by uid " + MountRegistry.currentUid() + " (the operating system refused: the cache"
                + " commands write the store directly, as the user who runs them; run them as its owner):"
                + " Permission denied: /sys/tool_cache/coder", f.getMessage());
        f = CacheStores.couldNotRemove("context coder's tool cache vfs:///sys/tool_cache/coder",
                new dev.chibifs.config.ChibiHome(home), new IOException("disk on fire"));
        assertEquals("could not remove context coder's tool cache vfs:///sys/tool_cache/coder: disk on fire",
                f.getMessage());
    }

    /**
     * vfscmd3 finding 6: a directory root made inside bob's store refused bob's clear, and the line
     * told bob that his store (owned by uid 4651) was not writable by uid 4651. It now names the
     * part that refused and its owner. (Run as root: the part is made another uid's here.)
     */
    @Test
    void aRefusedClearNamesThePartThatRefusedAndItsOwner() throws IOException {
        Path coder = Files.createDirectories(home.resolve("vfs/sys/tool_cache/coder"));
        Files.setAttribute(coder, "unix:uid", 4651);
        CommandFailure f = CacheStores.couldNotRemove("context coder's tool cache vfs:///sys/tool_cache/coder",
                new dev.chibifs.config.ChibiHome(home), dev.chibifs.sys.Errors.of(dev.chibifs.sys.Linux.EACCES,
                        "/sys/tool_cache/coder"));
        assertEquals("could not remove context coder's tool cache vfs:///sys/tool_cache/coder: the store's directory"
                + " vfs:///sys/tool_cache/coder (owned by uid 4651) is not writable by uid " + MountRegistry.currentUid()
                + " (the operating system refused: the cache commands write the store directly, as the user who runs"
                + " them; run them as its owner): Permission denied: /sys/tool_cache/coder", f.getMessage());
    }

    /** dev-vfssmall's note: a refused clean said only "Operation not permitted"; it says what clear says. */
    @Test
    void aRefusedCleanSaysWhatARefusedClearSays() throws IOException {
        Path coder = Files.createDirectories(home.resolve("vfs/sys/tool_cache/coder"));
        Path old = coder.resolve("t_1_00000000");
        Files.writeString(old, "old");
        Files.setLastModifiedTime(old, FileTime.from(Instant.now().minus(Duration.ofDays(30))));
        Files.setAttribute(coder, "unix:uid", 4651);
        // an immutable entry refuses even root (EPERM), whom no permission refuses
        assertEquals(0, dev.chibifs.testing.Sh.run("chattr +i " + dev.chibifs.testing.Sh.quote(old.toString())).exitCode());
        try {
            assertEquals(1, run("cache", "clean"));
        } finally {
            dev.chibifs.testing.Sh.run("chattr -i " + dev.chibifs.testing.Sh.quote(old.toString()));
        }
        assertTrue(err.toString().contains("could not check or remove 1 entry: vfs:///sys/tool_cache/coder/t_1_00000000"
                + " (the store's directory vfs:///sys/tool_cache/coder (owned by uid 4651) is not writable by uid "
                + MountRegistry.currentUid() + " (the operating system refused"), err.toString());
    }

    @Test
    void badConfigRefusesEveryCommandWithFileLineAndKey() throws IOException {
        Files.writeString(home.resolve("config.toml"), "model = \"x\"\n[vfs]\nbackend = \"fossil\"\n");
        for (String[] cmd : new String[][] {{"cache", "ls"}, {"cache", "clean"}, {"cache", "clear", "--context", "a"}}) {
            assertEquals(2, run(cmd));
            assertEquals("chibifs: " + home.resolve("config.toml")
                    + ":3: [vfs] backend: unknown VFS backend 'fossil' (choices: local)\n", err.toString());
        }
        byte[] output = "q".repeat(5000).getBytes(StandardCharsets.UTF_8);
        assertEquals(2, run(output, "cache", "put", "--context", "coder", "--tool", "t"));
        assertArrayEquals(output, rawOut.toByteArray(), "put still prints the output");
        assertEquals("chibifs: " + home.resolve("config.toml")
                + ":3: [vfs] backend: unknown VFS backend 'fossil' (choices: local)\n", err.toString());
        assertFalse(Files.exists(home.resolve("vfs")), "refused before doing anything");

        Files.writeString(home.resolve("config.toml"), "tool_cache_max_age_days = \"seven\"\n");
        assertEquals(2, run("cache", "ls"));
        assertTrue(err.toString().contains("config.toml:1: tool_cache_max_age_days: expected a non-negative integer"));

        assertEquals(0, run("cache", "ls", "--help"), "help still works");
    }
}
