package dev.chibifs.cache;

import dev.chibifs.testing.MutableClock;

import dev.chibifs.config.ChibiConfig;
import dev.chibifs.config.ChibiHome;
import dev.chibifs.router.Router;
import dev.chibifs.store.LocalStorage;
import dev.chibifs.store.Storage;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

@Timeout(30)
class CacheSweeperTest {

    private static final Instant NOW = Instant.parse("2026-03-01T12:00:00Z");
    private static final ChibiConfig CONFIG = new ChibiConfig("local", 4000, 7, 500, true);

    @TempDir
    Path dir;

    private Router router;
    private MutableClock clock;

    @BeforeEach
    void setUp() throws IOException {
        router = Router.of(new LocalStorage(dir));
        clock = new MutableClock(NOW);
    }

    private Path entry(String name, Duration age) throws IOException {
        Path p = dir.resolve("sys/tool_cache/planner").resolve(name);
        Files.createDirectories(p.getParent());
        Files.writeString(p, name);
        Files.setLastModifiedTime(p, FileTime.from(NOW.minus(age)));
        return p;
    }

    private static void awaitGone(Path p) throws InterruptedException {
        while (Files.exists(p)) {
            Thread.sleep(10);
        }
    }

    private static Thread sweeperThread() {
        return Thread.getAllStackTraces().keySet().stream()
                .filter(t -> t.getName().equals(CacheSweeper.THREAD_NAME)).findFirst().orElse(null);
    }

    @Test
    void itsStartLineShowsTheIntervalAsTheCommandLineTakesIt() {
        try (CacheSweeper s = CacheSweeper.create(router, CONFIG, Duration.ofSeconds(2), clock);
             CacheSweeper hourly = CacheSweeper.create(router, CONFIG, Duration.ofHours(1), clock)) {
            assertTrue(s.startLine().contains(" every 2s "), s.startLine());
            assertTrue(hourly.startLine().contains(" every 1h "), hourly.startLine());
        }
    }

    @Test
    void sweepsAtStartInOneNamedDaemonThread() throws Exception {
        // chibi's rule: older than tool_cache_max_age_days + 1 (7 + 1 here), so 7.5 days stays
        Path old = entry("old_1_00000000", Duration.ofDays(8).plusHours(1));
        Path fresh = entry("fresh_1_00000000", Duration.ofDays(7).plusHours(12));
        try (CacheSweeper s = CacheSweeper.create(router, CONFIG, Duration.ofHours(1), clock)) {
            s.start();
            Thread t = sweeperThread();
            assertTrue(t != null && t.isDaemon());
            awaitGone(old);
            assertTrue(Files.exists(fresh));
        }
    }

    @Test
    void sweepsAgainEveryInterval() throws Exception {
        Path entry = entry("e_1_00000000", Duration.ofDays(1));
        try (CacheSweeper s = CacheSweeper.create(router, CONFIG, Duration.ofMillis(50), clock)) {
            s.start();
            Thread.sleep(150);
            assertTrue(Files.exists(entry), "not yet expired");
            clock.advance(Duration.ofDays(7).plusSeconds(1)); // 8 days and a second: past 7 + 1
            awaitGone(entry);
        }
    }

    @Test
    void closeStopsPromptlyAndWaits() throws Exception {
        CacheSweeper s = CacheSweeper.create(router, CONFIG, Duration.ofHours(1), clock);
        s.start();
        Thread t = sweeperThread();
        long start = System.nanoTime();
        s.close();
        assertTrue(System.nanoTime() - start < Duration.ofSeconds(5).toNanos());
        assertFalse(t.isAlive());
        s.close();
    }

    @Test
    void survivesAFailedSweep() throws Exception {
        Path old = entry("old_1_00000000", Duration.ofDays(8).plusHours(1));
        Storage local = new LocalStorage(dir);
        AtomicInteger failures = new AtomicInteger(3);
        // the first sweeps cannot even list the cache; a later one must still run and succeed
        Storage flaky = (Storage) Proxy.newProxyInstance(Storage.class.getClassLoader(), new Class<?>[] {Storage.class},
                (proxy, method, args) -> {
                    if (method.getName().equals("list") && failures.getAndDecrement() > 0) {
                        throw new IOException("Input/output error");
                    }
                    try {
                        return method.invoke(local, args);
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
        try (CacheSweeper s = CacheSweeper.create(Router.of(flaky), CONFIG, Duration.ofMillis(20), clock)) {
            s.start();
            awaitGone(old);
            assertTrue(sweeperThread().isAlive());
        }
    }

    @Test
    void doesNothingWhenAutoCleanupIsOff() throws Exception {
        Path old = entry("old_1_00000000", Duration.ofDays(30));
        ChibiConfig off = new ChibiConfig("local", 4000, 7, 500, false);
        try (CacheSweeper s = CacheSweeper.create(router, off, Duration.ofMillis(10), clock)) {
            assertEquals(0, s.sweepOnce());
            assertTrue(Files.exists(old));
        }
    }

    @Test
    void readsConfigTomlAgainAtEverySweep() throws IOException {
        // chibi reads config.toml at every command: a change must not wait for a remount
        ChibiHome home = new ChibiHome(dir.resolve("home"));
        Files.createDirectories(home.dir());
        Path old = entry("old_1_00000000", Duration.ofDays(10));
        Files.writeString(home.configFile(), "tool_cache_max_age_days = 30\n");
        try (CacheSweeper s = CacheSweeper.create(router, ChibiConfig.load(home), () -> ChibiConfig.load(home),
                Duration.ofHours(1), clock)) {
            assertEquals(0, s.sweepOnce());
            Files.writeString(home.configFile(), "tool_cache_max_age_days = 7\nauto_cleanup_cache = false\n");
            assertEquals(0, s.sweepOnce());
            assertTrue(Files.exists(old), "auto_cleanup_cache = false, read at this sweep");
            Files.delete(home.configFile());
            assertEquals(1, s.sweepOnce(), "no file: chibi's defaults, 7 + 1 days");
            assertFalse(Files.exists(old));
        }
    }

    @Test
    void aBadFileKeepsTheLastGoodSettingsAndIsLoggedOnce() throws IOException {
        ChibiHome home = new ChibiHome(dir.resolve("home"));
        String logged = sweptAfter(home, config -> Files.writeString(config, "tool_cache_max_age_days = \"two\"\n"));
        assertTrue(logged.contains(home.configFile() + ":1: tool_cache_max_age_days: expected a non-negative integer"),
                logged);
    }

    /** config.toml as a link to /dev/zero killed the daemon at its next sweep (read until out of memory); a fifo hung it. */
    @Test
    void aConfigThatIsNoRegularFileKeepsTheLastGoodSettingsAndIsLoggedOnce() throws IOException {
        ChibiHome home = new ChibiHome(dir.resolve("home"));
        String logged = sweptAfter(home, config -> {
            Files.delete(config);
            Files.createSymbolicLink(config, Path.of("/dev/zero"));
        });
        assertTrue(logged.contains(home.configFile() + ": cannot read: " + dev.chibifs.config.HomeFile.NOT_REGULAR
                + "; the tool cache sweep keeps the settings read before"), logged);
    }

    /** A change made to config.toml between two sweeps. */
    private interface ConfigChange {
        void apply(Path config) throws IOException;
    }

    /**
     * Sweeps with config.toml saying 2 days, then after {@code breakIt}: the sweeps keep the 2 days
     * (an entry 4 days old goes each time, none 3 days old stays) and one WARN line says why; what was
     * logged is returned.
     */
    private String sweptAfter(ChibiHome home, ConfigChange breakIt) throws IOException {
        Files.createDirectories(home.dir());
        Files.writeString(home.configFile(), "tool_cache_max_age_days = 2\n");
        java.io.PrintStream realErr = System.err;
        java.io.ByteArrayOutputStream log = new java.io.ByteArrayOutputStream();
        try (CacheSweeper s = CacheSweeper.create(router, ChibiConfig.DEFAULTS, () -> ChibiConfig.load(home),
                Duration.ofHours(1), clock)) {
            s.sweepOnce();
            breakIt.apply(home.configFile());
            Path old = entry("old_1_00000000", Duration.ofDays(4));
            System.setErr(new java.io.PrintStream(log, true, java.nio.charset.StandardCharsets.UTF_8));
            assertEquals(1, s.sweepOnce(), "2 + 1 days, the last good setting, not the default 7");
            assertFalse(Files.exists(old));
            entry("old_2_00000000", Duration.ofDays(4));
            assertEquals(1, s.sweepOnce());
            assertEquals(2, s.settings().toolCacheMaxAgeDays());
        } finally {
            System.setErr(realErr);
        }
        String logged = log.toString(java.nio.charset.StandardCharsets.UTF_8);
        assertEquals(1, logged.lines().filter(l -> l.contains("WARN")).count(), logged);
        return logged;
    }

    @Test
    void refusesANonPositiveIntervalAndASecondStart() {
        assertThrows(IllegalArgumentException.class, () -> CacheSweeper.create(router, CONFIG, Duration.ZERO, clock));
        try (CacheSweeper s = CacheSweeper.create(router, CONFIG, Duration.ofHours(1), clock)) {
            s.start();
            assertThrows(IllegalStateException.class, s::start);
        }
    }
}
