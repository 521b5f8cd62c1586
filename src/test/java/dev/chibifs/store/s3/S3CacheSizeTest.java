package dev.chibifs.store.s3;

import dev.chibifs.path.VfsPath;
import dev.chibifs.store.FileHandle;
import dev.chibifs.store.OpenFlag;
import dev.chibifs.testing.Closer;
import dev.chibifs.testing.MutableClock;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * The content cache kept within {@code --cache-size}: what goes, in which order, what never goes,
 * and that what went is read whole again, over a real S3 server, with a hand-moved clock.
 */
@Timeout(60)
class S3CacheSizeTest {

    private static final String BUCKET = "sized";
    private static final AtomicInteger PREFIXES = new AtomicInteger();
    private static final int KIB = 1024;
    /** Long enough that what was used before is no longer in its grace minute. */
    private static final Duration PAST_GRACE = Duration.ofMillis(S3Storage.EVICT_AFTER_MILLIS).plusSeconds(1);

    @TempDir
    static Path temp;
    @RegisterExtension
    static final S3Server server = S3Server.perClass(BUCKET);

    private final MutableClock clock = new MutableClock(Instant.parse("2026-11-28T08:00:00Z"));
    @RegisterExtension
    final Closer open = new Closer();

    /** A store on {@code prefix} of the bucket, its content cache in {@code cacheDir} and within {@code cacheSize} bytes. */
    private S3Storage store(Path cacheDir, String prefix, long cacheSize) throws IOException {
        S3Options o = S3Options.defaults(cacheDir, server.env()).withClock(clock, false).withCacheSize(cacheSize);
        S3Storage s = S3Storage.open("s3://" + BUCKET + "/" + prefix, o);
        open.add(s);
        return s;
    }

    private static VfsPath p(String s) {
        return VfsPath.of(s);
    }

    /** {@code size} bytes that say which file they are. */
    private static byte[] content(int file, int size) {
        byte[] b = new byte[size];
        Arrays.fill(b, (byte) ('a' + file));
        return b;
    }

    private static void put(S3Storage s, String path, byte[] content) throws IOException {
        try (FileHandle h = s.open(p(path), EnumSet.of(OpenFlag.WRITE, OpenFlag.CREATE, OpenFlag.TRUNCATE), 0644)) {
            h.write(ByteBuffer.wrap(content), 0);
        }
    }

    private static long contentFiles(Path cacheDir) throws IOException {
        try (Stream<Path> files = Files.list(cacheDir.resolve("data"))) {
            return files.count();
        }
    }

    private static long gets(S3Storage s) {
        return s.requests().getOrDefault("get", 0L);
    }

    @Test
    void theFilesLeastRecentlyUsedLeaveTheCacheAndAreFetchedAgainWhole() throws Exception {
        Path cache = temp.resolve("lru");
        S3Storage s = store(cache, "lru" + PREFIXES.incrementAndGet(), 10 * KIB);
        s.mkdir(p("/d"));
        for (int i = 0; i < 8; i++) {
            put(s, "/d/f" + i, content(i, 2 * KIB));
            clock.advance(Duration.ofSeconds(1));
        }
        s.flushAll();
        assertEquals(8, contentFiles(cache));
        assertEquals(0, s.evictBeyondCacheSize(), "what was used in the last minute stays");

        clock.advance(PAST_GRACE);
        s.read(p("/d/f0")); // used again: the most recent now
        s.read(p("/d/f1"));
        // 16 KiB over 10: down to 9 at most, the least recently used first
        assertEquals(8 * KIB, s.evictBeyondCacheSize());
        assertEquals(4, contentFiles(cache));
        assertEquals(0, s.evictBeyondCacheSize(), "within the size now");

        long before = gets(s);
        for (int i = 0; i < 8; i++) {
            assertArrayEquals(content(i, 2 * KIB), s.read(p("/d/f" + i)), "f" + i);
        }
        assertEquals(before + 4, gets(s), "f2 to f5 fetched again, the rest read here");
        assertEquals(2 * KIB, s.metadata(p("/d/f3")).size());
    }

    @Test
    void aCopyKeptToSpareADownloadIsCountedAndGoesFirst() throws Exception {
        String prefix = "former" + PREFIXES.incrementAndGet();
        int large = (int) Bucket.MIN_PART_BYTES;
        S3Storage a = store(temp.resolve("former-a"), prefix, 0);
        S3Storage b = store(temp.resolve("former-b"), prefix, large + 4 * KIB);
        a.mkdir(p("/d"));
        put(a, "/d/log", content(0, large));
        a.flushAll();
        assertEquals(large, b.read(p("/d/log")).length);
        a.append(p("/d/log"), "more\n".getBytes(StandardCharsets.UTF_8));
        a.flushAll();
        clock.advance(PAST_GRACE); // b's listing expires, and its copies leave their grace minute
        assertEquals(large + 5, b.metadata(p("/d/log")).size()); // b's copy is stale now: kept aside
        put(b, "/d/small", content(1, 8 * KIB));
        b.flushAll();
        clock.advance(PAST_GRACE);
        assertEquals(large, b.evictBeyondCacheSize(), "the copy kept aside went, and it alone");
        try (Stream<Path> copies = Files.list(temp.resolve("former-b").resolve("upload"))) {
            assertEquals(0, copies.count());
        }
        long down = b.bytesMoved()[0];
        assertEquals(large + 5, b.read(p("/d/log")).length);
        assertEquals(large + 5, b.bytesMoved()[0] - down, "fetched whole, as without it");
    }

    @Test
    void changesNotYetUploadedAndOpenFilesStay() throws Exception {
        Path cache = temp.resolve("pinned");
        S3Storage s = store(cache, "pinned" + PREFIXES.incrementAndGet(), 1);
        s.mkdir(p("/d"));
        put(s, "/d/open", content(0, KIB));
        put(s, "/d/closed", content(1, KIB));
        s.flushAll();
        put(s, "/d/dirty", content(2, KIB)); // not uploaded: the debounce has not passed
        FileHandle reader = s.open(p("/d/open"), EnumSet.of(OpenFlag.READ), 0);
        clock.advance(PAST_GRACE);

        assertEquals(KIB, s.evictBeyondCacheSize(), "only the closed, uploaded file goes");
        ByteBuffer got = ByteBuffer.allocate(KIB);
        reader.read(got, 0);
        assertArrayEquals(content(0, KIB), got.array());

        s.flushAll();
        reader.close();
        clock.advance(PAST_GRACE);
        assertEquals(2 * KIB, s.evictBeyondCacheSize(), "uploaded and closed now: both go");
        assertEquals(0, contentFiles(cache));
        assertArrayEquals(content(2, KIB), s.read(p("/d/dirty")));
        assertArrayEquals(content(1, KIB), s.read(p("/d/closed")));
    }

    @Test
    void nothingGoesWhileS3IsAway() throws Exception {
        Path cache = temp.resolve("away");
        S3Storage s = store(cache, "away" + PREFIXES.incrementAndGet(), 1);
        s.mkdir(p("/d"));
        put(s, "/d/f", content(0, KIB));
        s.flushAll();
        s.list(p("/d"));
        clock.advance(PAST_GRACE);
        server.stop();
        try {
            s.list(p("/d")); // the listing is due again, and S3 does not answer: what was seen stands
            assertEquals(0, s.evictBeyondCacheSize(), "it could not be fetched again");
            assertArrayEquals(content(0, KIB), s.read(p("/d/f")));
        } finally {
            server.start();
        }
    }

    @Test
    void theCacheIsKeptWithinItsSizeWhileS3RefusesOneObject() throws Exception {
        // one object S3 refuses for good (a policy's 403) kept the store "in an outage", and the
        // cache grew past --cache-size for as long as it stayed; S3 answers, so what went can come
        // back. The refused file's content is not up, and stays
        Path cache = temp.resolve("refused");
        S3Storage s = store(cache, "refused" + PREFIXES.incrementAndGet(), 4 * KIB);
        s.mkdir(p("/d"));
        for (int i = 0; i < 4; i++) {
            put(s, "/d/f" + i, content(i, 2 * KIB));
        }
        s.flushAll();
        server.refusePuts(name -> name.endsWith("/d/refused"), -1);
        try {
            put(s, "/d/refused", content(9, 2 * KIB));
            clock.advance(PAST_GRACE);
            assertThrows(IOException.class, s::flushDue);
            assertEquals(8 * KIB, s.evictBeyondCacheSize(), "down to 9/10 of the size, the refused file counted");
            assertEquals(1, contentFiles(cache), "the refused file's");
            assertArrayEquals(content(9, 2 * KIB), s.read(p("/d/refused")));
            assertArrayEquals(content(0, 2 * KIB), s.read(p("/d/f0")), "fetched again");
        } finally {
            server.refusePuts(name -> false, 0);
        }
        s.flushAll();
    }

    @Test
    void aRestartAsksS3ForWhatWasEvicted() throws Exception {
        Path cache = temp.resolve("restart");
        String prefix = "restart" + PREFIXES.incrementAndGet();
        S3Storage s = store(cache, prefix, 1);
        s.mkdir(p("/d"));
        put(s, "/d/kept", content(0, KIB));
        put(s, "/d/evicted", content(1, KIB));
        s.flushAll();
        clock.advance(PAST_GRACE);
        s.read(p("/d/kept"));
        assertEquals(KIB, s.evictBeyondCacheSize());
        s.close(); // closing again after the test changes nothing

        S3Storage again = store(cache, prefix, 0);
        assertArrayEquals(content(1, KIB), again.read(p("/d/evicted")));
        assertArrayEquals(content(0, KIB), again.read(p("/d/kept")));
    }

    /** Eviction racing reads, writes, appends and renames of three threads: nothing fails, nothing is lost. */
    @Test
    void evictionRacingEveryOperationLosesNothing() throws Exception {
        S3Storage s = store(temp.resolve("raced"), "raced" + PREFIXES.incrementAndGet(), 1);
        s.mkdir(VfsPath.of("/d"));
        int files = 12;
        // each file's content is owned by one writer thread, so the model is that thread's
        ConcurrentHashMap<String, String> model = new ConcurrentHashMap<>();
        List<Throwable> failures = new CopyOnWriteArrayList<>();
        AtomicBoolean stop = new AtomicBoolean();
        AtomicLong evicted = new AtomicLong();
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < 3; t++) {
            int me = t;
            threads.add(new Thread(() -> {
                Random r = new Random(me);
                try {
                    // until the evictor has taken something while they ran, so the race is run
                    for (int op = 0; op < 300 || evicted.get() == 0 && failures.isEmpty(); op++) {
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
        s.flushAll();
        for (var e : model.entrySet()) {
            assertEquals(e.getValue(), new String(s.read(VfsPath.of(e.getKey())), StandardCharsets.UTF_8), e.getKey());
        }
    }
}
