package dev.chibifs.cache;

import dev.chibifs.testing.MutableClock;

import dev.chibifs.config.ChibiConfig;
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
            s.start();
            Thread.sleep(100);
            assertEquals(null, sweeperThread());
            assertTrue(Files.exists(old));
        }
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
