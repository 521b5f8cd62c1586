package dev.chibifs.cache;

import dev.chibifs.testing.MutableClock;
import dev.chibifs.testing.Sh;

import dev.chibifs.path.VfsPath;
import dev.chibifs.router.Router;
import dev.chibifs.store.LocalStorage;
import dev.chibifs.store.Storage;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.time.Instant;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ToolCacheTest {

    private static final Instant NOW = Instant.parse("2026-03-01T12:00:00Z");
    private static final Duration WEEK = Duration.ofDays(7);

    @TempDir
    Path dir;

    private Path store;
    private MutableClock clock;
    private ToolCache cache;

    @BeforeEach
    void setUp() throws IOException {
        store = dir.resolve("vfs");
        clock = new MutableClock(NOW);
        cache = new ToolCache(Router.of(new LocalStorage(store)), clock);
    }

    private Path file(VfsPath p) {
        return store.resolve(p.toString().substring(1));
    }

    private Path writeAged(String relative, Duration age) throws IOException {
        Path p = store.resolve(relative);
        Files.createDirectories(p.getParent());
        Files.writeString(p, relative);
        Files.setLastModifiedTime(p, FileTime.from(NOW.minus(age)));
        return p;
    }

    @Test
    void putWritesTheEntryIntoTheStoreAtItsPath() throws IOException {
        byte[] out = "big output\n".getBytes(StandardCharsets.UTF_8);
        VfsPath p = cache.put("planner", "shell", "{}", out);
        assertTrue(p.toString().matches("/sys/tool_cache/planner/shell_[0-9a-f]+_[0-9a-f]{8}"), p.toString());
        assertEquals(Long.toHexString(NOW.getEpochSecond()), p.fileName().split("_")[1]);
        assertArrayEquals(out, Files.readAllBytes(file(p)));
        try (var names = Files.list(file(p).getParent())) {
            assertEquals(1, names.count(), "no temporaries or sidecars left beside the entry");
        }
    }

    @Test
    void listGivesContextIdSizeAndTime() throws IOException {
        VfsPath a = cache.put("planner", "shell", "{}", new byte[10]);
        VfsPath b = cache.put("coder", "web_fetch", "{}", new byte[20]);
        writeAged("sys/tool_cache/coder/" + LocalStorage.TEMP_PREFIX + "0123456789abcdef", Duration.ZERO);
        List<CachedEntry> all = cache.list(null);
        assertEquals(List.of(b, a), all.stream().map(CachedEntry::path).toList());
        assertEquals("coder", all.get(0).context());
        assertEquals(b.fileName(), all.get(0).id());
        assertEquals(20, all.get(0).size());
        assertEquals(List.of(a), cache.list("planner").stream().map(CachedEntry::path).toList());
        assertEquals(List.of(), cache.list("nobody"));
    }

    @Test
    void removesOnlyEntriesOlderThanTheLimit() throws IOException {
        Path old = writeAged("sys/tool_cache/planner/old_1_00000000", WEEK.plusSeconds(1));
        Path edge = writeAged("sys/tool_cache/planner/edge_1_00000000", WEEK);
        Path fresh = writeAged("sys/tool_cache/coder/fresh_1_00000000", Duration.ofDays(1));
        List<VfsPath> removed = cache.removeOlderThan(WEEK, () -> false);
        assertEquals(List.of(VfsPath.of("/sys/tool_cache/planner/old_1_00000000")), removed);
        assertFalse(Files.exists(old));
        assertTrue(Files.exists(edge), "exactly the limit is not older than it");
        assertTrue(Files.exists(fresh));

        clock.advance(Duration.ofDays(6).plusSeconds(1));
        assertEquals(2, cache.removeOlderThan(WEEK, () -> false).size(), "the fake clock moves expiry");
    }

    /** A put that fails (a full store) leaves no directory it made, as the vfs commands' writes leave none. */
    @Test
    void aPutThatFailsLeavesNoDirectoryItMade() throws IOException {
        dev.chibifs.store.MemoryStorage small = new dev.chibifs.store.MemoryStorage(64 * 1024);
        ToolCache full = new ToolCache(Router.of(small), clock);
        assertThrows(IOException.class, () -> full.put("planner", "t", "{}", new byte[128 * 1024]));
        assertFalse(small.exists(VfsPath.of("/sys/tool_cache/planner")), "the context's directory was left");
        VfsPath entry = full.put("planner", "t", "{}", new byte[1024]);
        assertTrue(small.exists(entry), "a put that fits keeps its directories");
    }

    @Test
    void anEntryThatCannotBeRemovedIsToldNotSkippedInSilence() throws IOException {
        writeAged("sys/tool_cache/planner/old_1_00000000", WEEK.plusSeconds(1));
        // a store this process may not change (as a user other than the store's owner finds it)
        ToolCache readOnly = new ToolCache(Router.of(new dev.chibifs.store.ReadOnlyStorage(new LocalStorage(store), "test")), clock);
        List<VfsPath> failed = new java.util.ArrayList<>();
        assertEquals(List.of(), readOnly.removeOlderThan(WEEK, () -> false, (p, e) -> failed.add(p)));
        assertEquals(List.of(VfsPath.of("/sys/tool_cache/planner/old_1_00000000")), failed);
    }

    @Test
    void aCommandReportsFailuresItselfAndTheDaemonLogsThemAsOnePlainLine() throws IOException {
        writeAged("sys/tool_cache/planner/old\n1_00000000", WEEK.plusSeconds(1));
        ToolCache readOnly = new ToolCache(Router.of(new dev.chibifs.store.ReadOnlyStorage(new LocalStorage(store), "test")), clock);
        java.io.PrintStream realErr = System.err;
        java.io.ByteArrayOutputStream log = new java.io.ByteArrayOutputStream();
        List<String> told = new java.util.ArrayList<>();
        try {
            System.setErr(new java.io.PrintStream(log, true, StandardCharsets.UTF_8));
            readOnly.removeOlderThan(WEEK, () -> false, (p, e) -> told.add(ToolCache.describe(e)));
            assertEquals("", log.toString(StandardCharsets.UTF_8), "the command prints its own line, not a logger's");
            readOnly.removeOlderThan(WEEK, () -> false);
        } finally {
            System.setErr(realErr);
        }
        assertEquals(1, told.size());
        assertFalse(told.get(0).contains("dev.chibifs") || told.get(0).contains("Exception"), told.get(0));
        String logged = log.toString(StandardCharsets.UTF_8);
        assertEquals(1, logged.lines().count(), logged);
        assertTrue(logged.contains("WARN") && logged.contains("cannot check or remove /sys/tool_cache/planner/old\\n1_00000000: "),
                logged);
        assertFalse(logged.contains("dev.chibifs.") || logged.contains("Exception"), logged);
    }

    @Test
    void aRemovalIsOneLogLineWhateverTheName() throws IOException {
        writeAged("sys/tool_cache/planner/old\n1_00000000", WEEK.plusSeconds(1));
        java.io.PrintStream realErr = System.err;
        java.io.ByteArrayOutputStream log = new java.io.ByteArrayOutputStream();
        try {
            System.setErr(new java.io.PrintStream(log, true, StandardCharsets.UTF_8));
            assertEquals(1, cache.removeOlderThan(WEEK, () -> false).size());
        } finally {
            System.setErr(realErr);
        }
        String logged = log.toString(StandardCharsets.UTF_8);
        assertEquals(1, logged.lines().count(), logged);
        assertTrue(logged.contains("tool cache: removed /sys/tool_cache/planner/old\\n1_00000000 (modified "), logged);
    }

    @Test
    void printableEscapesWhatWouldSplitALine() {
        assertEquals("plain_1_00000000", ToolCache.printable("plain_1_00000000"));
        assertEquals("a\\nb\\rc\\td\\033e\\\\f\\177 caf\u00e9", ToolCache.printable("a\nb\rc\td\u001be\\f\u007f caf\u00e9"));
    }

    @Test
    void touchesNothingOutsideTheCache() throws IOException {
        Path sys = writeAged("sys/config", Duration.ofDays(100));
        Path shared = writeAged("shared/notes.md", Duration.ofDays(100));
        Path home = writeAged("home/planner/tool_cache/x", Duration.ofDays(100));
        Path strayFile = writeAged("sys/tool_cache/stray", Duration.ofDays(100));
        Path nested = writeAged("sys/tool_cache/planner/sub/deep", Duration.ofDays(100));
        assertEquals(List.of(), cache.removeOlderThan(WEEK, () -> false));
        for (Path p : List.of(sys, shared, home, strayFile, nested)) {
            assertTrue(Files.exists(p), p.toString());
        }
    }

    @Test
    void sweepsEveryDirectoryAsChibiDoesNotOnlyValidContexts() throws IOException {
        // cleanup_all_tool_caches looks into every directory under /sys/tool_cache whose path VfsPath takes
        List<String> names = List.of("bad name", "System", "-x", "a.b", "caf\u00e9", "x".repeat(255));
        for (String name : names) {
            writeAged("sys/tool_cache/" + name + "/t_1_00000000", Duration.ofDays(100));
        }
        Path fresh = writeAged("sys/tool_cache/-x/t_2_00000000", Duration.ofDays(1));
        assertEquals(names.size(), cache.list(null).size() - 1, "ls shows what the sweep looks at");
        List<VfsPath> removed = cache.removeOlderThan(WEEK, () -> false);
        assertEquals(names.size(), removed.size(), removed.toString());
        for (String name : names) {
            assertFalse(Files.exists(store.resolve("sys/tool_cache/" + name + "/t_1_00000000")), name);
        }
        assertTrue(Files.exists(fresh));
    }

    @Test
    void neverFollowsSymbolicLinks() throws IOException {
        Path outsideDir = Files.createDirectories(dir.resolve("outside"));
        Path outsideFile = outsideDir.resolve("precious");
        Files.writeString(outsideFile, "keep");
        Files.setLastModifiedTime(outsideFile, FileTime.from(NOW.minus(Duration.ofDays(100))));
        Files.createDirectories(store.resolve("sys/tool_cache/planner"));
        Path entryLink = Files.createSymbolicLink(store.resolve("sys/tool_cache/planner/link_1_00000000"), outsideFile);
        Path contextLink = Files.createSymbolicLink(store.resolve("sys/tool_cache/coder"), outsideDir);

        assertEquals(List.of(), cache.removeOlderThan(WEEK, () -> false));
        assertEquals(List.of(), cache.list(null));
        assertTrue(Files.exists(outsideFile));
        assertTrue(Files.isSymbolicLink(entryLink));
        assertTrue(Files.isSymbolicLink(contextLink));
    }

    @Test
    void aCacheRootThatIsALinkIsNotSwept() throws IOException {
        Path outsideDir = Files.createDirectories(dir.resolve("outside/planner"));
        Path victim = outsideDir.resolve("old_1_00000000");
        Files.writeString(victim, "keep");
        Files.setLastModifiedTime(victim, FileTime.from(NOW.minus(Duration.ofDays(100))));
        Files.createDirectories(store.resolve("sys"));
        Files.createSymbolicLink(store.resolve("sys/tool_cache"), dir.resolve("outside"));
        assertEquals(List.of(), cache.removeOlderThan(WEEK, () -> false));
        assertTrue(Files.exists(victim));
    }

    @Test
    void toleratesEntriesThatVanishOrCannotBeRead() throws IOException {
        Storage local = new LocalStorage(store);
        VfsPath vanishing = VfsPath.of("/sys/tool_cache/a/gone_1_00000000");
        VfsPath broken = VfsPath.of("/sys/tool_cache/a/broken_1_00000000");
        writeAged("sys/tool_cache/a/gone_1_00000000", Duration.ofDays(30));
        writeAged("sys/tool_cache/a/broken_1_00000000", Duration.ofDays(30));
        Path kept = writeAged("sys/tool_cache/a/zzz_1_00000000", Duration.ofDays(30));
        // a storage that loses one entry to a concurrent remover and fails to stat another
        Storage racing = (Storage) Proxy.newProxyInstance(Storage.class.getClassLoader(), new Class<?>[] {Storage.class},
                (proxy, method, args) -> {
                    if (method.getName().equals("metadata") && vanishing.equals(args[0])) {
                        local.delete(vanishing);
                    }
                    if (method.getName().equals("metadata") && broken.equals(args[0])) {
                        throw new java.nio.file.AccessDeniedException(broken.toString());
                    }
                    try {
                        return method.invoke(local, args);
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
        ToolCache c = new ToolCache(Router.of(racing), clock);
        assertEquals(List.of(VfsPath.of("/sys/tool_cache/a/zzz_1_00000000")), c.removeOlderThan(WEEK, () -> false));
        assertFalse(Files.exists(kept));
        assertTrue(Files.exists(file(broken)), "an unreadable entry is skipped, not removed");
    }

    @Test
    void namesThatAreNotUtf8AreSkippedAsChibiSkipsThem() throws IOException {
        Path old = writeAged("sys/tool_cache/coder/t_1_00000000", Duration.ofDays(30));
        VfsPath fresh = cache.put("coder", "t", "{}", new byte[3]);
        // planted by someone else: a file and a context directory whose names no VfsPath can hold
        Sh.run("cd '" + store.resolve("sys/tool_cache") + "' && printf x > \"coder/$(printf 'bad\\377')\""
                + " && mkdir \"$(printf 'ctx\\377')\" && printf y > \"$(printf 'ctx\\377')/t_1_00000000\"").ok();
        try (var names = Files.list(store.resolve("sys/tool_cache"))) {
            assertEquals(2, names.count());
        }
        List<VfsPath> both = List.of(VfsPath.of("/sys/tool_cache/coder/t_1_00000000"), fresh);
        assertEquals(both, cache.list(null).stream().map(CachedEntry::path).toList());
        assertEquals(both, cache.list("coder").stream().map(CachedEntry::path).toList());
        List<VfsPath> failed = new java.util.ArrayList<>();
        assertTrue(cache.removeOlderThan(WEEK, () -> false, (p, e) -> failed.add(p))
                .contains(VfsPath.of("/sys/tool_cache/coder/t_1_00000000")));
        assertEquals(List.of(), failed, "skipped, not failed");
        assertFalse(Files.exists(old));
        assertEquals("x", Sh.run("cat \"" + store.resolve("sys/tool_cache/coder") + "/$(printf 'bad\\377')\"").ok().out(),
                "left alone");
    }

    @Test
    void anAgePastWhatADateHoldsKeepsEverything() throws IOException {
        Path ancient = writeAged("sys/tool_cache/a/t_1_00000000", Duration.ofDays(30));
        Files.setLastModifiedTime(ancient, FileTime.from(Instant.EPOCH.minus(Duration.ofDays(365L * 1_000_000))));
        for (long days : new long[] {100_000, 1_000_000_000_000L, Long.MAX_VALUE / 86_400, Long.MAX_VALUE}) {
            assertEquals(List.of(), cache.removeOlderThan(ToolCache.expiry(days), () -> false), "max age " + days);
        }
        assertTrue(Files.exists(ancient));
        assertEquals(Duration.ofDays(8), ToolCache.expiry(7));
        assertEquals(1, cache.removeOlderThan(ToolCache.expiry(0), () -> false).size());
    }

    @Test
    void stopsBetweenEntriesWhenAsked() throws IOException {
        writeAged("sys/tool_cache/a/one_1_00000000", Duration.ofDays(30));
        writeAged("sys/tool_cache/a/two_1_00000000", Duration.ofDays(30));
        int[] asked = {0};
        List<VfsPath> removed = cache.removeOlderThan(WEEK, () -> asked[0]++ > 0);
        assertEquals(1, removed.size());
    }

    @Test
    void clearRemovesOneContextOnly() throws IOException {
        cache.put("planner", "shell", "{}", new byte[1]);
        cache.put("planner", "shell", "{}", new byte[2]);
        VfsPath other = cache.put("coder", "shell", "{}", new byte[1]);
        assertEquals(java.util.OptionalInt.of(2), cache.clear("planner"));
        assertFalse(Files.exists(store.resolve("sys/tool_cache/planner")));
        assertTrue(Files.exists(file(other)));
        assertEquals(java.util.OptionalInt.empty(), cache.clear("planner"), "no directory: nothing to remove");
    }
}
