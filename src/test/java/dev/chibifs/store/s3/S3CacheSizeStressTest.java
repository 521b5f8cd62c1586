package dev.chibifs.store.s3;

import dev.chibifs.path.VfsPath;
import dev.chibifs.store.FileHandle;
import dev.chibifs.store.OpenFlag;
import dev.chibifs.testing.MutableClock;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Eviction racing reads, writes, appends and renames: nothing fails, nothing is lost. */
@Timeout(120)
class S3CacheSizeStressTest {

    @TempDir
    static Path temp;
    static S3Server server;

    @BeforeAll
    static void startServer() throws Exception {
        server = new S3Server(temp.resolve("s3"));
        server.createBucket("stress");
    }

    @AfterAll
    static void stopServer() throws Exception {
        server.close();
    }

    @Test
    void evictionRacingEveryOperationLosesNothing() throws Exception {
        MutableClock clock = new MutableClock(Instant.parse("2026-11-28T08:00:00Z"));
        S3Options o = S3Options.defaults(temp.resolve("cache"), server.env()).withClock(clock, false)
                .withCacheSize(1).withFlushAfter(Duration.ZERO);
        S3Storage s = S3Storage.open("s3://stress/p", o);
        try {
            s.mkdir(VfsPath.of("/d"));
            int files = 12;
            // each file's content is owned by one writer thread, so the model is that thread's
            ConcurrentHashMap<String, String> model = new ConcurrentHashMap<>();
            List<Throwable> failures = new CopyOnWriteArrayList<>();
            AtomicBoolean stop = new AtomicBoolean();
            List<Thread> threads = new ArrayList<>();
            for (int t = 0; t < 3; t++) {
                int me = t;
                threads.add(new Thread(() -> {
                    Random r = new Random(me);
                    try {
                        for (int op = 0; op < 300; op++) {
                            String name = "/d/t" + me + "-" + r.nextInt(files / 3);
                            VfsPath p = VfsPath.of(name);
                            switch (r.nextInt(4)) {
                                case 0 -> {
                                    String v = "v" + r.nextInt(1_000_000) + "x".repeat(r.nextInt(3000));
                                    s.write(p, v.getBytes(StandardCharsets.UTF_8));
                                    model.put(name, v);
                                }
                                case 1 -> {
                                    if (model.containsKey(name)) {
                                        s.append(p, "+a".getBytes(StandardCharsets.UTF_8));
                                        model.put(name, model.get(name) + "+a");
                                    }
                                }
                                case 2 -> {
                                    if (model.containsKey(name)) {
                                        VfsPath tmp = VfsPath.of(name + ".tmp");
                                        s.rename(p, tmp);
                                        s.rename(tmp, p);
                                    }
                                }
                                default -> {
                                    String want = model.get(name);
                                    if (want != null) {
                                        try (FileHandle h = s.open(p, EnumSet.of(OpenFlag.READ), 0)) {
                                            ByteBuffer b = ByteBuffer.allocate(8192);
                                            int n = 0;
                                            for (int got; (got = h.read(b, n)) > 0; ) {
                                                n += got;
                                            }
                                            assertEquals(want, new String(b.array(), 0, n, StandardCharsets.UTF_8), name);
                                        }
                                    }
                                }
                            }
                        }
                    } catch (Throwable e) {
                        failures.add(e);
                    }
                }));
            }
            AtomicLong evicted = new AtomicLong();
            Thread evictor = new Thread(() -> {
                try {
                    while (!stop.get()) {
                        s.flushAll();
                        clock.advance(Duration.ofMillis(S3Storage.EVICT_AFTER_MILLIS + 1000));
                        evicted.addAndGet(s.evictBeyondCacheSize());
                    }
                } catch (Throwable e) {
                    failures.add(e);
                }
            });
            threads.forEach(Thread::start);
            evictor.start();
            for (Thread t : threads) {
                t.join();
            }
            stop.set(true);
            evictor.join();
            assertEquals(List.of(), failures);
            assertTrue(evicted.get() > 0, "nothing was evicted: the race was not run");
            s.flushAll();
            for (var e : model.entrySet()) {
                assertEquals(e.getValue(), new String(s.read(VfsPath.of(e.getKey())), StandardCharsets.UTF_8), e.getKey());
            }
        } finally {
            s.close();
        }
    }
}
