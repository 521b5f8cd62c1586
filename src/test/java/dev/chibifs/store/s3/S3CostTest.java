package dev.chibifs.store.s3;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.chibifs.path.VfsPath;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** What a store costs in requests to S3: nothing while idle, one listing per validity while watched, a PUT per change. */
@Timeout(60)
class S3CostTest {

    @TempDir
    Path temp;

    private static long total(Map<String, Long> requests) {
        return requests.values().stream().mapToLong(Long::longValue).sum();
    }

    /**
     * One PUT per file written, none sent twice: sent {@code aws-chunked} over http://, about one PUT
     * in ten landed on s3proxy while its client saw the connection break, and went again (then a HEAD).
     */
    @Test
    void eachFileWrittenGoesUpInOnePut() throws Exception {
        try (S3Server server = new S3Server(temp.resolve("s3"))) {
            server.createBucket("cost");
            try (S3Storage s = S3Storage.open("s3://cost/ns", S3Options.defaults(temp.resolve("cache"), server.env()))) {
                int files = 200;
                for (int i = 0; i < files; i++) {
                    s.write(VfsPath.of("/shared/many/f" + i), ("line " + i + "\n").getBytes(UTF_8));
                }
                s.flushAll();
                Map<String, Long> requests = s.requests();
                assertEquals(0L, requests.getOrDefault(Bucket.PUT_ANSWER_LOST, 0L), requests.toString());
                assertEquals(0L, requests.getOrDefault("head", 0L), requests.toString());
                // the files, and the markers of /shared and /shared/many
                assertEquals(files + 2L, requests.get("put"), requests.toString());
            }
        }
    }

    /** What a store remembers of directories it listed or made goes with them: a soak kept every one. */
    /**
     * A READDIRPLUS asks each name's attributes of the listing it read: a directory another host
     * made, whose listing's validity ran out part-way (here: at once), was listed again for every
     * name (`ls` of 5,000 files took up to 38 s).
     */
    @Test
    void theAttributesOfAListingsNamesAskNoListingAgain() throws Exception {
        try (S3Server server = new S3Server(temp.resolve("s3"))) {
            server.createBucket("cost");
            try (S3Storage writer = S3Storage.open("s3://cost/ns", S3Options.defaults(temp.resolve("w"), server.env()))) {
                for (int i = 0; i < 50; i++) {
                    writer.write(VfsPath.of("/shared/many/f" + i), ("line " + i + "\n").getBytes(UTF_8));
                }
                writer.flushAll();
            }
            S3Options expiring = S3Options.defaults(temp.resolve("r"), server.env()).withValidity(java.time.Duration.ZERO)
                    .withPrefetchBelow(0);
            try (S3Storage s = S3Storage.open("s3://cost/ns", expiring)) {
                VfsPath dir = VfsPath.of("/shared/many");
                List<String> names = s.entries(dir).stream().map(e -> e.name()).toList();
                long lists = s.requests().getOrDefault("list", 0L);
                try (dev.chibifs.store.Storage.Siblings siblings = s.siblings(dir)) {
                    for (String name : names) {
                        assertEquals(("line " + name.substring(1) + "\n").length(), siblings.metadata(name).size());
                    }
                }
                assertEquals(lists, s.requests().getOrDefault("list", 0L), s.requests().toString());
            }
        }
    }

    /**
     * Questions about a directory whose listing is under way wait for that listing: the threads of
     * git's preloaded index, or one `ls -l`'s lookups, in a directory another host filled made a
     * LIST each.
     */
    @Test
    void questionsAboutADirectoryBeingListedWaitForThatListing() throws Exception {
        try (S3Server server = new S3Server(temp.resolve("s3"))) {
            server.createBucket("cost");
            int files = 6;
            try (S3Storage writer = S3Storage.open("s3://cost/ns", S3Options.defaults(temp.resolve("w"), server.env()))) {
                for (int i = 0; i < files; i++) {
                    writer.write(VfsPath.of("/shared/many/f" + i), ("line " + i + "\n").getBytes(UTF_8));
                }
                writer.flushAll();
            }
            try (S3Storage s = S3Storage.open("s3://cost/ns", S3Options.defaults(temp.resolve("r"), server.env()))) {
                s.entries(VfsPath.of("/shared"));
                String many = "ns/shared/many/";
                S3Server.HeldRequests held = server.holdLists(many::equals, 1);
                java.util.concurrent.atomic.AtomicReferenceArray<Object> answers = new java.util.concurrent.atomic.AtomicReferenceArray<>(files);
                List<Thread> askers = new java.util.ArrayList<>();
                for (int i = 0; i < files; i++) {
                    int file = i;
                    Thread t = new Thread(() -> {
                        try {
                            answers.set(file, s.metadata(VfsPath.of("/shared/many/f" + file)).size());
                        } catch (Exception e) {
                            answers.set(file, e);
                        }
                    });
                    t.start();
                    askers.add(t);
                }
                // one LIST reached S3, and the other askers wait for it, or a second LIST came
                while ((held.reached().getCount() > 0 || askers.stream().filter(t -> t.getState() == Thread.State.WAITING
                        || t.getState() == Thread.State.TIMED_WAITING).count() < files - 1)
                        && server.listsAsked.stream().filter(many::equals).count() < 2 && !Thread.interrupted()) {
                    LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1));
                }
                held.release().countDown();
                for (Thread t : askers) {
                    t.join();
                }
                for (int i = 0; i < files; i++) {
                    assertEquals((long) ("line " + i + "\n").length(), answers.get(i), "f" + i);
                }
                assertEquals(1, server.listsAsked.stream().filter(many::equals).count(), server.listsAsked.toString());
            }
        }
    }

    /**
     * A listing is believed for its validity from its answer: an S3 slower than the validity (1.5 s
     * an answer against 1 s) gave listings stale on arrival, each lookup listed its parents again,
     * and an `ls -l` of three files took 40 s.
     */
    @Test
    void aListingSlowerThanItsValidityIsBelievedFromItsAnswer() throws Exception {
        try (S3Server server = new S3Server(temp.resolve("s3"))) {
            server.createBucket("cost");
            try (S3Storage writer = S3Storage.open("s3://cost/ns", S3Options.defaults(temp.resolve("w"), server.env()))) {
                writer.write(VfsPath.of("/shared/slow/f"), "f\n".getBytes(UTF_8));
                writer.flushAll();
            }
            dev.chibifs.testing.MutableClock clock = new dev.chibifs.testing.MutableClock(java.time.Instant.parse("2026-12-01T00:00:00Z"));
            try (S3Storage s = S3Storage.open("s3://cost/ns", S3Options.defaults(temp.resolve("cache"), server.env())
                    .withClock(clock, true))) {
                VfsPath dir = VfsPath.of("/shared/slow");
                S3Server.HeldRequests held = server.holdLists("ns/shared/slow/"::equals, 1);
                Thread lister = new Thread(() -> {
                    try {
                        s.entries(dir);
                    } catch (java.io.IOException e) {
                        throw new java.io.UncheckedIOException(e);
                    }
                });
                lister.start();
                assertTrue(held.reached().await(20, TimeUnit.SECONDS), "the listing reached S3");
                clock.advance(Duration.ofSeconds(3)); // the answer takes longer than the validity (1 s)
                held.release().countDown();
                lister.join();
                assertTrue(s.answersHeld(dir).compareTo(Duration.ZERO) > 0, "believed from its answer: " + s.answersHeld(dir));
            } finally {
                server.holdLists(prefix -> false, 0);
            }
        }
    }

    @Test
    void directoriesMadeAndRemovedAreNotRememberedForGood() throws Exception {
        try (S3Server server = new S3Server(temp.resolve("s3"))) {
            server.createBucket("cost");
            try (S3Storage s = S3Storage.open("s3://cost/ns", S3Options.defaults(temp.resolve("cache"), server.env()))) {
                int kept = 0;
                for (int round = 0; round < 8; round++) {
                    VfsPath tree = VfsPath.of("/shared/r" + round);
                    s.mkdir(tree);
                    for (int i = 0; i < 500; i++) {
                        s.mkdir(tree.child("d" + i));
                    }
                    s.entries(tree);
                    s.delete(tree);
                    kept = Math.max(kept, s.listings.remembered());
                }
                assertTrue(kept <= 2 * 1024 + 1, "at most twice the least sweep size, not 8 x 501: " + kept);
            }
        }
    }

    @Test
    void anIdleStoreAsksNothingAndAWatchedFileOneListingPerValidity() throws Exception {
        try (S3Server server = new S3Server(temp.resolve("s3"))) {
            server.createBucket("cost");
            try (S3Storage s = S3Storage.open("s3://cost/ns", S3Options.defaults(temp.resolve("cache"), server.env()))) {
                VfsPath file = VfsPath.of("/shared/deep/er/tasks.md");
                s.write(file, "- one\n".getBytes(UTF_8));
                s.flushAll();

                // idle for 3 s with the write-back thread running: not one request
                long before = total(s.requests());
                long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(3);
                while (System.nanoTime() < until) {
                    LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(100));
                }
                assertEquals(before, total(s.requests()), s.requests().toString());

                // a process polling the file (tail -f, an editor) every 50 ms for 3 s
                Map<String, Long> start = s.requests();
                long t0 = System.nanoTime();
                int stats = 0;
                while (System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(3)) {
                    s.metadata(file);
                    stats++;
                    LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(50));
                }
                double seconds = (System.nanoTime() - t0) / 1e9;
                long lists = s.requests().getOrDefault("list", 0L) - start.getOrDefault("list", 0L);
                long all = total(s.requests()) - total(start);
                System.out.printf("S3 cost: %d stats in %.1f s took %d requests (%d lists): %.0f requests/minute%n",
                        stats, seconds, all, lists, all * 60 / seconds);
                Duration validity = S3Options.DEFAULT_VALIDITY;
                long bound = (long) Math.ceil(seconds * 1000 / validity.toMillis()) + 1;
                assertEquals(all, lists, "only listings: " + s.requests());
                assertTrue(lists <= bound, lists + " listings, bound " + bound);
            }
        }
    }

    /**
     * An idle store's write-back sleeps until a change wakes it: it looked ten times a second for
     * uploads that were not there, waking an idle daemon for nothing.
     */
    @Test
    void anIdleWriteBackSleepsUntilAChangeWakesIt() throws Exception {
        try (S3Server server = new S3Server(temp.resolve("s3"))) {
            server.createBucket("cost");
            // a debounce longer than the test: what is written stays pending until flushAll
            S3Options options = S3Options.defaults(temp.resolve("cache"), server.env()).withFlushAfter(Duration.ofHours(1));
            try (S3Storage s = S3Storage.open("s3://cost/ns", options)) {
                awaitIdle(s);
                s.write(VfsPath.of("/shared/a"), "a\n".getBytes(UTF_8));
                assertFalse(s.writeBack.idle(), "a file changed wakes the write-back");
                s.flushAll();
                awaitIdle(s);
                s.delete(VfsPath.of("/shared/a"));
                assertFalse(s.writeBack.idle(), "an object to delete wakes the write-back");
                s.flushAll();
                awaitIdle(s);
                assertEquals(0, s.pendingChanges());
            }
        }
    }

    private static void awaitIdle(S3Storage s) {
        while (!s.writeBack.idle()) {
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(5));
        }
    }

    /**
     * A directory whose own listing, within the validity, showed what is in it is looked up without
     * listing its parent: the kernel looks each name of a path up again once its answer expires, and
     * git's lookups in .git/objects/xx listed the repository, .git and .git/objects each second too.
     */
    @Test
    void aDirectoryItsOwnListingShowedIsLookedUpWithoutItsParentsListing() throws Exception {
        try (S3Server server = new S3Server(temp.resolve("s3"))) {
            server.createBucket("cost");
            VfsPath objects = VfsPath.of("/shared/repo/objects");
            VfsPath ab = objects.child("ab");
            try (S3Storage writer = S3Storage.open("s3://cost/ns", S3Options.defaults(temp.resolve("w"), server.env()))) {
                writer.write(ab.child("f"), "object\n".getBytes(UTF_8));
                writer.flushAll();
            }
            java.util.concurrent.atomic.AtomicLong ticks = new java.util.concurrent.atomic.AtomicLong();
            S3Options options = S3Options.defaults(temp.resolve("r"), server.env()).withTicker(ticks::get)
                    .withValidity(Duration.ofSeconds(1));
            try (S3Storage s = S3Storage.open("s3://cost/ns", options)) {
                assertEquals(7, s.metadata(ab.child("f")).size());
                ticks.addAndGet(1_500); // every listing expired
                long lists = s.requests().getOrDefault("list", 0L);
                assertEquals(7, s.metadata(ab.child("f")).size()); // lists ab
                assertTrue(s.metadata(ab).isDirectory());
                assertTrue(s.metadata(ab).isDirectory());
                assertEquals(lists + 1, s.requests().getOrDefault("list", 0L), s.requests().toString());
                ticks.addAndGet(1_500); // ab's own listing expired too: its parent's tells
                assertTrue(s.metadata(ab).isDirectory());
                assertEquals(lists + 2, s.requests().getOrDefault("list", 0L), s.requests().toString());
            }
        }
    }

    /**
     * Another host's removal of a directory still shows within the validity: where the directory's
     * own listing comes back empty, its lookup lists its parent, which no longer shows it.
     */
    @Test
    void aDirectoryAnotherHostRemovedIsGoneOnceItsOwnListingShowsNothing() throws Exception {
        try (S3Server server = new S3Server(temp.resolve("s3"))) {
            server.createBucket("cost");
            VfsPath ab = VfsPath.of("/shared/repo/objects/ab");
            try (S3Storage writer = S3Storage.open("s3://cost/ns", S3Options.defaults(temp.resolve("w"), server.env()))) {
                writer.write(ab.child("f"), "object\n".getBytes(UTF_8));
                writer.flushAll();
            }
            java.util.concurrent.atomic.AtomicLong ticks = new java.util.concurrent.atomic.AtomicLong();
            S3Options options = S3Options.defaults(temp.resolve("r"), server.env()).withTicker(ticks::get)
                    .withValidity(Duration.ofSeconds(1));
            try (S3Storage s = S3Storage.open("s3://cost/ns", options)) {
                assertTrue(s.exists(ab.child("f")));
                try (S3Storage other = S3Storage.open("s3://cost/ns", S3Options.defaults(temp.resolve("w"), server.env()))) {
                    other.removeFile(ab.child("f"));
                    other.removeDirectory(ab);
                    other.flushAll();
                }
                assertTrue(s.exists(ab)); // within the validity: as listed
                ticks.addAndGet(1_500);
                assertFalse(s.exists(ab.child("f")));
                assertFalse(s.exists(ab));
            }
        }
    }
    /**
     * The directories above a file this host uploaded, or above a directory a listing showed
     * something in, are looked up without listing their parents for the validity from that answer:
     * git's lookups of .git/objects, .git and the repository, each second, listed their parents
     * again although S3 had just answered an upload or a listing below them.
     */
    @Test
    void theDirectoriesAboveAFileThisHostJustUploadedAreLookedUpWithoutAListing() throws Exception {
        try (S3Server server = new S3Server(temp.resolve("s3"))) {
            server.createBucket("cost");
            VfsPath objects = VfsPath.of("/shared/repo/objects");
            VfsPath f = objects.child("ab").child("f");
            java.util.concurrent.atomic.AtomicLong ticks = new java.util.concurrent.atomic.AtomicLong();
            S3Options options = S3Options.defaults(temp.resolve("a"), server.env()).withTicker(ticks::get)
                    .withValidity(Duration.ofSeconds(1));
            try (S3Storage s = S3Storage.open("s3://cost/ns", options)) {
                s.write(f, "object\n".getBytes(UTF_8)); // lists what it writes in, at 0
                ticks.addAndGet(900);
                s.flushAll(); // S3 answers the upload at 900
                ticks.addAndGet(300); // every listing expired, the upload's answer is 300 ms old
                long lists = s.requests().getOrDefault("list", 0L);
                assertTrue(s.metadata(objects).isDirectory());
                assertTrue(s.metadata(VfsPath.of("/shared/repo")).isDirectory());
                assertTrue(s.metadata(VfsPath.of("/shared")).isDirectory());
                assertEquals(lists, s.requests().getOrDefault("list", 0L), s.requests().toString());
                s.dropHeldAnswers(); // a sync, a lock's pull: asked again at once
                assertTrue(s.metadata(objects).isDirectory());
                assertEquals(lists + 1, s.requests().getOrDefault("list", 0L), s.requests().toString());
            }
        }
    }
}
