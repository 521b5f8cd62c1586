package dev.chibifs.store.s3;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.chibifs.path.VfsPath;
import dev.chibifs.store.Metadata;
import dev.chibifs.store.SpaceInfo;
import dev.chibifs.testing.MutableClock;
import java.io.IOException;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * What a stat and a statfs show of an S3 store, and what of it a remount over the same cache
 * directory keeps: times to the nanosecond, inode numbers (a number never passes to another
 * object), and inode counts a tool checking for free inodes accepts.
 */
@Timeout(120)
class S3IdentityTest {

    private static final String BUCKET = "chibi";
    private static final AtomicInteger RUNS = new AtomicInteger();

    @TempDir
    static Path temp;
    @RegisterExtension
    static final S3Server server = S3Server.perClass(BUCKET);

    /** Stands still unless a test moves it: nothing goes up but what a test flushes. */
    private final MutableClock clock = new MutableClock(Instant.parse("2026-01-02T03:04:05Z"));
    private Path cacheDir;
    private String spec;
    private final List<S3Storage> open = new ArrayList<>();

    @BeforeEach
    void newNames() {
        int run = RUNS.incrementAndGet();
        cacheDir = temp.resolve("cache-" + run);
        spec = "s3://" + BUCKET + "/ns" + run;
    }

    @AfterEach
    void closeAll() throws IOException {
        for (S3Storage s : open) {
            try {
                s.close();
            } catch (IOException | IllegalStateException e) {
                // closed or crashed by the test already
            }
        }
    }

    private S3Storage store(Path dir) throws IOException {
        S3Storage s = S3Storage.open(spec, S3Options.defaults(dir, server.env()).withHost("a").withClock(clock, false));
        open.add(s);
        return s;
    }

    private static VfsPath p(String s) {
        return VfsPath.of(s);
    }

    /** The inode numbers {@code s} shows for {@code paths}. */
    private static Map<String, Long> inodes(S3Storage s, List<String> paths) throws IOException {
        Map<String, Long> out = new HashMap<>();
        for (String path : paths) {
            out.put(path, s.metadata(p(path)).inode());
        }
        return out;
    }

    /** Directories another host made, which this host knows only from listings: the journal names none of them. */
    private static final List<String> THEIRS = List.of("/shared/d1", "/shared/d2", "/shared/d3", "/shared/d4");

    private void madeByAnotherHost() throws IOException {
        S3Storage b = store(temp.resolve(cacheDir.getFileName() + "-b"));
        for (String d : THEIRS) {
            b.mkdir(p(d));
        }
        b.close();
    }

    /**
     * A directory the journal did not name (made here and gone up, or another host's) was numbered
     * anew at each remount: tar --listed-incremental took each for a new directory and archived it all.
     */
    @Test
    void aRemountKeepsDirectoriesNumbers() throws IOException {
        madeByAnotherHost();
        S3Storage a = store(cacheDir);
        a.mkdir(p("/shared/mine/objects/pack"));
        a.flushAll();
        List<String> dirs = new ArrayList<>(THEIRS);
        dirs.addAll(List.of("/shared", "/shared/mine", "/shared/mine/objects", "/shared/mine/objects/pack"));
        Map<String, Long> before = inodes(a, dirs);
        Metadata pack = a.metadata(p("/shared/mine/objects/pack"));
        a.close();

        S3Storage again = store(cacheDir);
        assertEquals(before, inodes(again, dirs));
        Metadata packAfter = again.metadata(p("/shared/mine/objects/pack"));
        assertEquals(pack.modified(), packAfter.modified());
        assertEquals(pack.changed(), packAfter.changed());
        assertEquals(List.of("d1", "d2", "d3", "d4", "mine"), names(again, "/shared"), "the parent's listing confirms them");
    }

    /** A directory kept by the journal that another host removed meanwhile is gone at the parent's listing. */
    @Test
    void aKeptDirectoryAnotherHostRemovedIsGone() throws IOException {
        madeByAnotherHost();
        S3Storage a = store(cacheDir);
        inodes(a, THEIRS);
        a.close();
        S3Storage b = store(temp.resolve(cacheDir.getFileName() + "-b"));
        b.delete(p("/shared/d2"));
        b.close();

        S3Storage again = store(cacheDir);
        assertEquals(List.of("d1", "d3", "d4"), names(again, "/shared"));
        assertFalse(again.exists(p("/shared/d2")));
    }

    private static List<String> names(S3Storage s, String dir) throws IOException {
        List<String> out = new ArrayList<>();
        s.list(p(dir)).forEach(e -> out.add(e.name()));
        return out;
    }

    /**
     * At a restart the next number was the highest the journal named plus one, so directories it did
     * not name were numbered again, and a number passed from one directory to another (.git/objects/info
     * 2205 -> 2204, .git/objects/pack 2206 -> 2205): tar --listed-incremental keys directories by number.
     */
    @Test
    void aNumberNeverPassesToAnotherObjectAfterAKill() throws IOException {
        madeByAnotherHost();
        S3Storage a = store(cacheDir);
        a.write(p("/scratch"), "x".getBytes(UTF_8)); // a number used and let go before the directories'
        a.removeFile(p("/scratch"));
        Map<String, Long> before = inodes(a, THEIRS);
        a.crash(); // no compaction: what a kill -9 leaves

        S3Storage again = store(cacheDir);
        Map<String, Long> after = inodes(again, THEIRS);
        again.write(p("/new"), "y".getBytes(UTF_8));
        after.put("/new", again.metadata(p("/new")).inode());
        for (Map.Entry<String, Long> e : after.entrySet()) {
            Long had = before.get(e.getKey());
            if (had == null || had.longValue() != e.getValue()) {
                assertFalse(before.containsValue(e.getValue()), e.getKey() + " took a number another had: " + before + " -> " + after);
            }
        }
    }

    /** statfs said 0 inodes, 0 free (df -i: "-"): a tool that checks for free inodes before it writes refuses. */
    @Test
    void statfsShowsManyFreeInodes() throws IOException {
        SpaceInfo space = store(cacheDir).space();
        assertTrue(space.totalFiles() >= 1_000_000, "total " + space.totalFiles());
        assertEquals(space.totalFiles(), space.freeFiles());
        assertTrue(space.totalFiles() < 1L << 32, "a 32-bit statfs holds it");
    }

    /** git's index keeps nanoseconds (core.checkStat=default): a time cut at a remount made it look at the file again. */
    @Test
    void aRemountKeepsTimesToTheNanosecond() throws IOException {
        S3Storage a = store(cacheDir);
        a.write(p("/shared/f"), "x".getBytes(UTF_8));
        a.flushAll();
        clock.advance(Duration.ofNanos(578_660_022));
        FileTime mtime = FileTime.from(Instant.parse("2026-12-01T10:20:21.347011885Z"));
        a.setTimes(p("/shared/f"), null, mtime);
        // before 1970, where milliseconds may be rounded either way
        a.write(p("/shared/old"), "y".getBytes(UTF_8));
        FileTime old = FileTime.from(Instant.parse("1969-12-31T23:59:59.999500001Z"));
        a.setTimes(p("/shared/old"), old, old);
        Metadata before = a.metadata(p("/shared/f"));
        assertEquals(mtime, before.modified());
        a.close();

        S3Storage again = store(cacheDir);
        Metadata after = again.metadata(p("/shared/f"));
        assertEquals(mtime, after.modified());
        assertEquals(before.changed(), after.changed());
        assertEquals(Instant.parse("2026-01-02T03:04:05.578660022Z"), after.changed().toInstant());
        assertEquals(before.inode(), after.inode());
        assertEquals(old, again.metadata(p("/shared/old")).modified());
        assertEquals(old, again.metadata(p("/shared/old")).accessed());
    }
}
