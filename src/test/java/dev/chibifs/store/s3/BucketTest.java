package dev.chibifs.store.s3;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** The S3 client against a real S3 server: the conditional writes the write-back relies on. */
@Timeout(60)
class BucketTest {

    @TempDir
    static Path temp;
    @RegisterExtension
    static final S3Server server = S3Server.perClass("bucket-test");
    static Bucket bucket;

    @BeforeAll
    static void start() throws Exception {
        bucket = quick(Bucket.connect(S3Spec.parse("s3://bucket-test/p"), server.env()));
    }

    /** B, asking again at once what it could not use: the wire tests cut every answer, 3.1 s each otherwise. */
    private static Bucket quick(Bucket b) {
        b.askAgainAfter(java.time.Duration.ofMillis(1));
        return b;
    }

    @AfterAll
    static void stop() throws Exception {
        bucket.close();
    }

    @Test
    void conditionalPutsRefuseWhatChangedAndCreateOnlyOnce() throws Exception {
        String first = bucket.put("p/a", "one".getBytes(UTF_8), Map.of("chibi-sha256", "x"), null);
        assertThrows(Bucket.PreconditionFailed.class, () -> bucket.put("p/a", "two".getBytes(UTF_8), Map.of(), null));
        String second = bucket.put("p/a", "two".getBytes(UTF_8), Map.of(), first);
        assertNotEquals(first, second);
        assertThrows(Bucket.PreconditionFailed.class, () -> bucket.put("p/a", "three".getBytes(UTF_8), Map.of(), first));
        Path to = temp.resolve("got");
        Bucket.Head h = bucket.get("p/a", to);
        assertEquals("two", Files.readString(to));
        assertEquals(second, h.etag());
        assertThrows(Bucket.Missing.class, () -> bucket.put("p/none", "x".getBytes(UTF_8), Map.of(), first));
        assertNull(bucket.head("p/none"));
        assertEquals("x", bucket.head("p/a") == null ? null : "x");
    }

    @Test
    void aLargeConditionalPutTheServerRefusesBeforeReadingItsBodyIsAConflictNotS3Away() throws Exception {
        // the server answers 412 and closes as soon as it sees the condition fail, as s3proxy does: a
        // body larger than the sockets' buffers meets a closed connection, not the answer
        Path big = randomFile("refused-unread", 8L << 20);
        String first = bucket.put("p/unread/a", "one".getBytes(UTF_8), Map.of(), null);
        bucket.put("p/unread/a", "two".getBytes(UTF_8), Map.of(), first);
        assertThrows(Bucket.PreconditionFailed.class, () -> bucket.put("p/unread/a", big, Map.of(), first));
        assertThrows(Bucket.PreconditionFailed.class, () -> bucket.put("p/unread/a", big, Map.of(), null));
        bucket.delete("p/unread/a");
        assertThrows(Bucket.Missing.class, () -> bucket.put("p/unread/a", big, Map.of(), first));
        assertFalse(bucket.unreachable(), "S3 answered every time");
    }

    @Test
    void aCopyTakesTheSourcesVersionAndMetadataUnderThePutsConditions() throws Exception {
        String source = bucket.put("p/c/src", "one".getBytes(UTF_8), Map.of("chibi-mode", "755"), null);
        String copied = bucket.copy("p/c/src", source, 3, "p/c/dst", null, null);
        Bucket.Head h = bucket.get("p/c/dst", temp.resolve("copied"));
        assertEquals("one", Files.readString(temp.resolve("copied")));
        assertEquals(Map.of("chibi-mode", "755"), h.meta());
        assertEquals(copied, h.etag());
        // the destination's conditions, as a PUT's: no overwrite of a name that exists, or changed
        assertThrows(Bucket.PreconditionFailed.class, () -> bucket.copy("p/c/src", source, 3, "p/c/dst", null, null));
        assertThrows(Bucket.PreconditionFailed.class, () -> bucket.copy("p/c/src", source, 3, "p/c/dst", "\"0\"", null));
        String again = bucket.copy("p/c/src", source, 3, "p/c/dst", copied, null);
        // the source's: a version since, or none
        String changed = bucket.put("p/c/src", "two".getBytes(UTF_8), Map.of(), source);
        assertThrows(Bucket.PreconditionFailed.class, () -> bucket.copy("p/c/src", source, 3, "p/c/dst", again, null));
        bucket.delete("p/c/src");
        assertThrows(Bucket.Missing.class, () -> bucket.copy("p/c/src", changed, 3, "p/c/other", null, null));
        bucket.get("p/c/dst", temp.resolve("copied"));
        assertEquals("one", Files.readString(temp.resolve("copied")));
        assertNull(bucket.head("p/c/other"));
    }

    @Test
    void aCopyOfAnObjectPutInPartsAnswersTheETagTheCopyHas() throws Exception {
        try (Bucket parts = inParts()) {
            Path f = randomFile("copied-parts", 2 * Bucket.MIN_PART_BYTES + 1);
            String first = parts.put("p/cp/a", f, Map.of("chibi-sha256", "x"), null);
            String copied = parts.copy("p/cp/a", first, Files.size(f), "p/cp/b", null, null);
            assertEquals(parts.head("p/cp/b").etag(), copied);
            String replaced = parts.replaceMetadata("p/cp/b", copied, Files.size(f), Map.of("chibi-mode", "755"));
            assertEquals(parts.head("p/cp/b").etag(), replaced);
        }
    }

    @Test
    void anObjectLargerThanOneCopyIsCopiedInPartsUnderTheSameConditions() throws Exception {
        try (Bucket parts = Bucket.connect(S3Spec.parse("s3://bucket-test/p"), server.env())) {
            // copies above S3's smallest part go in parts of that size, as above 5 GiB they must
            parts.movedInParts(Bucket.MIN_PART_BYTES, Bucket.MIN_PART_BYTES, Bucket.MIN_PART_BYTES);
            Path f = randomFile("copy-in-parts", 2 * Bucket.MIN_PART_BYTES + 777);
            long size = Files.size(f);
            String source = parts.put("p/cip/src", f, Map.of("chibi-mode", "755", "chibi-sha256", "s"), null);
            Map<String, Long> before = parts.requests();
            String copied = parts.copy("p/cip/src", source, size, "p/cip/dst", null, null);
            Map<String, Long> made = Requests.since(before, parts.requests());
            assertEquals(3L, made.get("copy-part"), made.toString());
            assertNull(made.get("put-part"), made.toString());
            assertNull(made.get("get"), made.toString());
            Bucket.Head h = parts.get("p/cip/dst", temp.resolve("copied-in-parts"));
            assertArrayEquals(Files.readAllBytes(f), Files.readAllBytes(temp.resolve("copied-in-parts")));
            assertEquals(Map.of("chibi-mode", "755", "chibi-sha256", "s"), h.meta()); // the source's, read first
            assertEquals(copied, h.etag());
            // the destination's conditions, as a PUT's
            assertThrows(Bucket.PreconditionFailed.class, () -> parts.copy("p/cip/src", source, size, "p/cip/dst", null, null));
            // metadata replaced in place, in parts too (the same parts: S3 gives the same ETag, and other
            // hosts tell the change by its LastModified), while the object is the version seen
            String replaced = parts.replaceMetadata("p/cip/dst", copied, size, Map.of("chibi-mode", "644", "chibi-sha256", "s"));
            assertEquals(Map.of("chibi-mode", "644", "chibi-sha256", "s"), parts.head("p/cip/dst").meta());
            assertEquals(parts.head("p/cip/dst").etag(), replaced);
            // a version since, on either side, fails the copy, and leaves no parts behind
            String since = parts.put("p/cip/src", randomFile("copy-in-parts-2", size + 3), Map.of(), source);
            assertNotEquals(source, since);
            assertThrows(Bucket.PreconditionFailed.class, () -> parts.copy("p/cip/src", source, size, "p/cip/other", null, null));
            assertNull(parts.head("p/cip/other"));
            parts.put("p/cip/dst", randomFile("copy-in-parts-3", size + 1), Map.of(), replaced);
            assertThrows(Bucket.PreconditionFailed.class, () -> parts.replaceMetadata("p/cip/dst", replaced, size, Map.of()));
            assertEquals(0, parts.uploadsUnderway("p/cip/"));
        }
    }

    /**
     * Keys any S3 client may have put, listed as they are: one holding a control character cannot be
     * said in a listing's plain XML, which failed to parse for the whole directory (EIO on every host
     * but the writer, and the store taken for away); asked URL-encoded, each key comes back whole.
     */
    @Test
    void keysOfAnyCharactersAreListedAsTheyAre() throws Exception {
        List<String> names = List.of("x\u0001", "x\u001b[31m", "x\u007f", "x\u0085", "a b", "a+b", "a%2Fb", "caf\u00e9");
        for (String n : names) {
            bucket.put("p/k/" + n, "x".getBytes(UTF_8), Map.of(), null);
        }
        bucket.put("p/k/sub\u0001/f", "x".getBytes(UTF_8), Map.of(), null);
        Bucket.Level level = bucket.list("p/k/", true);
        assertEquals(names.stream().map(n -> "p/k/" + n).sorted().toList(),
                level.objects().stream().map(Bucket.Listed::key).sorted().toList());
        assertEquals(List.of("p/k/sub\u0001/"), level.prefixes());
        assertTrue(bucket.anyUnder("p/k/sub\u0001/"));
    }

    /**
     * An upload in parts that fails is aborted only once its parts under way have ended: a part that
     * landed after the abort stayed in the bucket for good, listed as no upload (a soak left 640 MB
     * of them), as AWS warns a part in flight may.
     */
    @Test
    void anAbortedUploadWaitsForItsPartsUnderWay() throws Exception {
        try (Bucket parts = inParts()) {
            Path f = randomFile("aborted-parts", 2 * Bucket.MIN_PART_BYTES);
            S3Server.HeldRequests held = server.holdParts((name, number) -> name.equals("p/aborted") && number == 2, 1);
            Thread up = new Thread(() -> assertThrows(Bucket.SourceChanged.class,
                    () -> parts.put("p/aborted", f, Map.of(), null, () -> false)));
            up.start();
            held.reached().await();
            // the first part's check fails the upload while the second is held: the abort comes now
            // (the parts' tasks cancelled) or once the second has ended (waited out)
            while (!server.uploadEvents.contains("abort of p/aborted")
                    && java.util.Arrays.stream(up.getStackTrace()).noneMatch(e -> e.getMethodName().equals("waitOut"))) {
                java.util.concurrent.locks.LockSupport.parkNanos(1_000_000);
            }
            held.release().countDown();
            up.join();
            List<String> events = List.copyOf(server.uploadEvents);
            assertTrue(events.contains("part 2 of p/aborted") && events.contains("abort of p/aborted"), events.toString());
            assertTrue(events.indexOf("part 2 of p/aborted") < events.indexOf("abort of p/aborted"), events.toString());
        }
    }

    @Test
    void aConditionalBatchDeleteLeavesAnObjectRewrittenSinceWhereTheServerTakesIt() throws Exception {
        server.takeConditionalDeletes(true);
        try (Bucket b = quick(Bucket.connect(S3Spec.parse("s3://bucket-test/p"), server.env()))) {
            String seen = b.put("p/cd/a", "one".getBytes(UTF_8), Map.of(), null);
            String other = b.put("p/cd/b", "one".getBytes(UTF_8), Map.of(), null);
            b.put("p/cd/a", "two".getBytes(UTF_8), Map.of(), seen); // another host's version, since
            Bucket.NotDeleted left = b.deleteAll(List.of("p/cd/a", "p/cd/b"), Map.of("p/cd/a", seen, "p/cd/b", other));
            assertEquals(new Bucket.NotDeleted(List.of(), Map.of(), java.util.Set.of("p/cd/a")), left);
            assertNotNull(b.head("p/cd/a"), "the version written since stays");
            assertNull(b.head("p/cd/b"));
            assertTrue(b.takesConditionalDeletes());
        } finally {
            server.takeConditionalDeletes(false);
        }
    }

    @Test
    void aServerRefusingConditionalDeletesGetsTheBatchWithoutThemAtOnce() throws Exception {
        try (Bucket b = quick(Bucket.connect(S3Spec.parse("s3://bucket-test/p"), server.env()))) {
            String seen = b.put("p/nc/a", "one".getBytes(UTF_8), Map.of(), null);
            b.put("p/nc/b", "one".getBytes(UTF_8), Map.of(), null);
            Map<String, Long> before = b.requests();
            // s3proxy answers 501 NotImplemented to the ETag element
            assertEquals(new Bucket.NotDeleted(List.of(), Map.of()), b.deleteAll(List.of("p/nc/a", "p/nc/b"), Map.of("p/nc/a", seen)));
            assertFalse(b.takesConditionalDeletes());
            assertEquals(Map.of("delete-batch", 2L), Requests.since(before, b.requests()), "refused once, then taken");
            assertNull(b.head("p/nc/a"));
            assertNull(b.head("p/nc/b"));
        }
    }

    @Test
    void aBatchDeleteRemovesEachObjectAndIsFineWithOnesAlreadyGone() throws Exception {
        for (String k : List.of("p/d/a", "p/d/b", "p/d/sub/c")) {
            bucket.put(k, "x".getBytes(UTF_8), Map.of(), null);
        }
        Map<String, Long> before = bucket.requests();
        assertEquals(new Bucket.NotDeleted(List.of(), Map.of()), bucket.deleteAll(List.of("p/d/a", "p/d/b", "p/d/sub/c", "p/d/never")));
        assertEquals(Map.of("delete-batch", 1L), Requests.since(before, bucket.requests()));
        for (String k : List.of("p/d/a", "p/d/b", "p/d/sub/c")) {
            assertNull(bucket.head(k), k);
        }
    }

    /** The deletes the server was asked for since {@code from} (an index of its log) of keys below {@code prefix}. */
    private static List<String> deletesOf(String prefix, int from) {
        synchronized (server.deletesAsked) {
            return server.deletesAsked.subList(from, server.deletesAsked.size()).stream()
                    .filter(d -> d.substring(d.lastIndexOf(' ') + 1).startsWith(prefix)).toList();
        }
    }

    /**
     * One refusal of a DeleteObjects (a gateway's 405 in passing) switched the mount to DELETEs for
     * good, lock releases with them, which the JDK may send twice (two holders): the release it
     * refused waits and goes again as a DeleteObjects, and so do later ones.
     */
    @Test
    void aDeleteObjectsRefusedOnceLeavesLockReleasesDeleteObjects() throws Exception {
        try (Bucket b = quick(Bucket.connect(S3Spec.parse("s3://bucket-test/p"), server.env()))) {
            b.put("p/once/lock", new byte[0], Map.of(), null);
            b.put("p/once/other", new byte[0], Map.of(), null);
            int from = server.deletesAsked.size();
            server.refuseDeleteObjects(k -> k.startsWith("p/once/"), 405, 1);
            Bucket.Refused e = assertThrows(Bucket.Refused.class, () -> b.deleteIfOurs("p/once/lock", h -> true));
            assertTrue(e.getMessage().contains("S3 answered HTTP 405 to a DeleteObjects; sent again as one, not as a DELETE"),
                    e.getMessage());
            assertTrue(e.isClientError());
            assertNull(b.oneByOne());
            assertTrue(b.head("p/once/lock") != null, "not deleted, not sent as a DELETE");

            assertNull(b.deleteIfOurs("p/once/lock", h -> true));
            assertNull(b.deleteIfOurs("p/once/other", h -> true));
            assertEquals(List.of("refused DeleteObjects p/once/lock", "DeleteObjects p/once/lock", "DeleteObjects p/once/other"),
                    deletesOf("p/once/", from));
            assertNull(b.head("p/once/lock"));
            assertNull(b.oneByOne());
        }
    }

    /**
     * A run of one refusal over a minute is a server without DeleteObjects; one taken between ends
     * the run, a batch of other objects' refusal counting as the releases' do. A count alone was
     * reached by one release's own retries, 1.5 s apart (tester's coord6 finding 1): a burst that
     * short must not switch, however many refusals it holds.
     */
    @Test
    void deletesGoOneByOneOnlyAfterRefusalsInARowOverAMinuteNoneTakenBetween() throws Exception {
        java.util.concurrent.atomic.AtomicLong nanos = new java.util.concurrent.atomic.AtomicLong();
        long second = java.util.concurrent.TimeUnit.SECONDS.toNanos(1);
        try (Bucket b = quick(Bucket.connect(S3Spec.parse("s3://bucket-test/p"), server.env()))) {
            b.nanos(nanos::get);
            for (String k : List.of("p/run/a", "p/run/b", "p/run/c", "p/run/d", "p/run/lock")) {
                b.put(k, new byte[0], Map.of(), null);
            }
            int from = server.deletesAsked.size();
            server.refuseDeleteObjects(k -> k.startsWith("p/run/"), 405, 2);
            assertEquals(List.of("p/run/a", "p/run/b"), b.deleteAll(List.of("p/run/a", "p/run/b")).again(), "left to go one by one");
            nanos.addAndGet(61 * second);
            assertThrows(Bucket.Refused.class, () -> b.deleteIfOurs("p/run/lock", h -> true));
            assertNull(b.deleteIfOurs("p/run/c", h -> true), "taken: the run ends");
            assertNull(b.oneByOne());

            server.refuseDeleteObjects(k -> k.startsWith("p/run/"), 405, -1);
            // a release's retries after the write-back's waits (0.5 s, 1 s, 2 s, ... 5 s): a burst
            for (long after : new long[] {0, 500, 1000, 2000, 4000, 5000}) {
                nanos.addAndGet(after * 1_000_000);
                assertThrows(Bucket.Refused.class, () -> b.deleteIfOurs("p/run/lock", h -> true));
            }
            assertNull(b.oneByOne(), "six in a row over 12.5 s");
            nanos.addAndGet(47 * second);
            assertThrows(Bucket.Refused.class, () -> b.deleteIfOurs("p/run/lock", h -> true));
            assertNull(b.oneByOne(), "seven over 59.5 s");
            nanos.addAndGet(second / 2);
            assertNull(b.deleteIfOurs("p/run/lock", h -> true), "refused for a minute: sent as a DELETE");
            assertTrue(b.oneByOne().contains("has no DeleteObjects (it answered HTTP 405, 8 times in a row over 60 s at "),
                    b.oneByOne());
            assertNull(b.deleteIfOurs("p/run/d", h -> true));
            List<String> refusedRun = java.util.Collections.nCopies(8, "refused DeleteObjects p/run/lock");
            List<String> expected = new ArrayList<>(List.of("refused DeleteObjects p/run/a", "refused DeleteObjects p/run/lock",
                    "DeleteObjects p/run/c"));
            expected.addAll(refusedRun);
            expected.addAll(List.of("DELETE p/run/lock", "DELETE p/run/d"));
            assertEquals(expected, deletesOf("p/run/", from));
        } finally {
            server.refuseDeleteObjects(k -> false, 405, 0);
        }
    }

    /** A refusal that lasts a minute but comes only twice (a server asked seldom) is no run yet. */
    @Test
    void twoRefusalsAMinuteApartAreNoServerWithoutDeleteObjects() throws Exception {
        java.util.concurrent.atomic.AtomicLong nanos = new java.util.concurrent.atomic.AtomicLong(-5);
        try (Bucket b = quick(Bucket.connect(S3Spec.parse("s3://bucket-test/p"), server.env()))) {
            b.nanos(nanos::get);
            b.put("p/two/lock", new byte[0], Map.of(), null);
            server.refuseDeleteObjects(k -> k.startsWith("p/two/"), 405, -1);
            assertThrows(Bucket.Refused.class, () -> b.deleteIfOurs("p/two/lock", h -> true));
            nanos.addAndGet(java.util.concurrent.TimeUnit.MINUTES.toNanos(5));
            assertThrows(Bucket.Refused.class, () -> b.deleteIfOurs("p/two/lock", h -> true));
            assertNull(b.oneByOne());
            assertNull(b.deleteIfOurs("p/two/lock", h -> true), "the third, five minutes on");
            assertTrue(b.oneByOne().contains("3 times in a row over 300 s at "), b.oneByOne());
        } finally {
            server.refuseDeleteObjects(k -> false, 405, 0);
        }
    }

    /** A server that says it has no DeleteObjects (501) is believed at once, and the mount says what that costs. */
    @Test
    void aServerWithoutDeleteObjectsGetsDeletesAtItsFirst501AndItIsSaid() throws Exception {
        try (Bucket b = quick(Bucket.connect(S3Spec.parse("s3://bucket-test/p"), server.env()))) {
            b.put("p/none/lock", new byte[0], Map.of(), null);
            int from = server.deletesAsked.size();
            server.refuseDeleteObjects(k -> k.startsWith("p/none/"), 501, -1);
            assertNull(b.deleteIfOurs("p/none/lock", h -> true));
            assertEquals(List.of("refused DeleteObjects p/none/lock", "DELETE p/none/lock"), deletesOf("p/none/", from));
            assertNull(b.head("p/none/lock"));
            String said = b.oneByOne();
            assertTrue(said.startsWith("S3 at " + server.endpoint()) && said.contains(" has no DeleteObjects (it answered HTTP 501 at "),
                    said);
            assertTrue(said.endsWith("objects are deleted one by one (DeleteObjects tried again every 10 minutes), and a"
                    + " lock's release, sent as a"
                    + " DELETE, may be sent twice and delete another host's claim (two holders)"), said);
        } finally {
            server.refuseDeleteObjects(k -> false, 501, 0);
        }
    }

    /**
     * Deletes switched one by one try a DeleteObjects again after {@link Bucket#BATCHES_TRIED_AGAIN_AFTER}
     * (the switch lasted the mount's life): refused, the switch holds as long again; taken, batches
     * and DeleteObjects releases are back.
     */
    @Test
    void deletesSwitchedOneByOneTryADeleteObjectsAgainAfterTenMinutesAndGoBackToBatchesOnceTaken() throws Exception {
        java.util.concurrent.atomic.AtomicLong nanos = new java.util.concurrent.atomic.AtomicLong();
        long minute = java.util.concurrent.TimeUnit.MINUTES.toNanos(1);
        try (Bucket b = quick(Bucket.connect(S3Spec.parse("s3://bucket-test/p"), server.env()))) {
            b.nanos(nanos::get);
            for (String k : List.of("p/back/l1", "p/back/l2", "p/back/l3", "p/back/a", "p/back/b")) {
                b.put(k, new byte[0], Map.of(), null);
            }
            int from = server.deletesAsked.size();
            server.refuseDeleteObjects(k -> k.startsWith("p/back/"), 501, -1);
            assertNull(b.deleteIfOurs("p/back/l1", h -> true));
            assertNotNull(b.oneByOne());
            nanos.addAndGet(9 * minute);
            server.refuseDeleteObjects(k -> false, 501, 0); // the server takes them again
            assertNull(b.deleteIfOurs("p/back/l2", h -> true));
            assertNotNull(b.oneByOne(), "before ten minutes, still one by one");
            server.refuseDeleteObjects(k -> k.startsWith("p/back/"), 501, -1);
            nanos.addAndGet(minute);
            assertNull(b.deleteIfOurs("p/back/l3", h -> true));
            assertNotNull(b.oneByOne(), "refused again at its try: still one by one");
            assertEquals(List.of("refused DeleteObjects p/back/l1", "DELETE p/back/l1", "DELETE p/back/l2",
                    "refused DeleteObjects p/back/l3", "DELETE p/back/l3"), deletesOf("p/back/", from));

            server.refuseDeleteObjects(k -> false, 501, 0);
            nanos.addAndGet(9 * minute);
            assertEquals(List.of("p/back/a"), b.deleteAll(List.of("p/back/a")).again(), "nine minutes after the last try: one by one");
            nanos.addAndGet(minute);
            from = server.deletesAsked.size();
            assertEquals(new Bucket.NotDeleted(List.of(), Map.of()), b.deleteAll(List.of("p/back/a", "p/back/b")));
            assertNull(b.oneByOne(), "batches are back");
            assertNull(b.head("p/back/a"));
            assertEquals(List.of("DeleteObjects p/back/a", "DeleteObjects p/back/b"), deletesOf("p/back/", from));
        } finally {
            server.refuseDeleteObjects(k -> false, 501, 0);
        }
    }

    @Test
    void anObjectsMetadataIsReplacedInPlaceWhileItIsTheVersionSeen() throws Exception {
        String first = bucket.put("p/m/a", "one".getBytes(UTF_8), Map.of("chibi-mode", "644", "chibi-sha256", "x"), null);
        String second = bucket.replaceMetadata("p/m/a", first, 3, Map.of("chibi-mode", "755", "chibi-sha256", "x"));
        Bucket.Head h = bucket.get("p/m/a", temp.resolve("meta"));
        assertEquals("one", Files.readString(temp.resolve("meta")));
        assertEquals(Map.of("chibi-mode", "755", "chibi-sha256", "x"), h.meta());
        assertEquals(second, h.etag());
        String changed = bucket.put("p/m/a", "two".getBytes(UTF_8), Map.of(), second);
        assertThrows(Bucket.PreconditionFailed.class, () -> bucket.replaceMetadata("p/m/a", second, 3, Map.of()));
        bucket.delete("p/m/a");
        assertThrows(Bucket.Missing.class, () -> bucket.replaceMetadata("p/m/a", changed, 3, Map.of()));
        assertNull(bucket.head("p/m/a"));
    }

    @Test
    void aFileAboveTheLimitGoesUpInPartsUnderThePutsConditions() throws Exception {
        try (Bucket parts = inParts()) {
            Path f = randomFile("parts", 2 * Bucket.MIN_PART_BYTES + 12345);
            Map<String, Long> before = parts.requests();
            String first = parts.put("p/parts/a", f, Map.of("chibi-sha256", "x"), null);
            assertEquals(Map.of("create-upload", 1L, "put-part", 3L, "complete-upload", 1L), Requests.since(before, parts.requests()));
            Path back = temp.resolve("parts-back");
            Bucket.Head h = parts.get("p/parts/a", back);
            assertArrayEquals(Files.readAllBytes(f), Files.readAllBytes(back));
            assertEquals(Map.of("chibi-sha256", "x"), h.meta());
            assertEquals(first, h.etag());

            assertThrows(Bucket.PreconditionFailed.class, () -> parts.put("p/parts/a", f, Map.of(), null));
            // another content (S3's ETag of an object in parts is the digest of its parts' digests)
            Path g = randomFile("parts2", 2 * Bucket.MIN_PART_BYTES + 1);
            String second = parts.put("p/parts/a", g, Map.of(), first);
            assertNotEquals(first, second);
            assertThrows(Bucket.PreconditionFailed.class, () -> parts.put("p/parts/a", f, Map.of(), first));
            assertThrows(Bucket.Missing.class, () -> parts.put("p/parts/none", f, Map.of(), first));
            // each refused upload was given up: S3 keeps (and bills) none of their parts
            assertEquals(0, parts.uploadsUnderway("p/parts/"));
            assertEquals(3L, parts.requests().get("abort-upload"));
            assertEquals(second, parts.head("p/parts/a").etag());
        }
    }

    @Test
    void aFileOnlyAppendedToSinceAVersionSendsItsNewBytesAndS3CopiesTheRest() throws Exception {
        Path log = randomFile("appended", Bucket.MIN_PART_BYTES + 100);
        String first = bucket.put("p/app/log", log, Map.of("chibi-sha256", "a"), null);
        Files.write(log, "one more line\n".getBytes(UTF_8), java.nio.file.StandardOpenOption.APPEND);
        long kept = Bucket.MIN_PART_BYTES + 100;
        Map<String, Long> before = bucket.requests();
        long up = bucket.bytesMoved()[1];
        String second = bucket.put("p/app/log", log, Map.of("chibi-sha256", "b"), first, null, kept);
        Map<String, Long> made = Requests.since(before, bucket.requests());
        assertEquals(Map.of("create-upload", 1L, "copy-part", 1L, "put-part", 1L, "complete-upload", 1L), made);
        assertEquals(14, bucket.bytesMoved()[1] - up, "only the appended line went up");
        Bucket.Head h = bucket.get("p/app/log", temp.resolve("appended-back"));
        assertArrayEquals(Files.readAllBytes(log), Files.readAllBytes(temp.resolve("appended-back")));
        assertEquals(Map.of("chibi-sha256", "b"), h.meta());
        assertEquals(second, h.etag());

        // another version since: neither a copy of the one named nor an upload lands, and no parts stay
        Files.write(log, "and another\n".getBytes(UTF_8), java.nio.file.StandardOpenOption.APPEND);
        assertThrows(Bucket.PreconditionFailed.class, () -> bucket.put("p/app/log", log, Map.of(), first, null, kept));
        bucket.delete("p/app/log");
        assertThrows(Bucket.Missing.class, () -> bucket.put("p/app/log", log, Map.of(), second, null, kept));
        assertNull(bucket.head("p/app/log"));
        assertEquals(0, bucket.uploadsUnderway("p/app/"));
    }

    @Test
    void aCompletionThatLandedWithItsAnswerLostIsTheUploadNotAConflict() throws Exception {
        try (Bucket parts = inParts()) {
            Path f = randomFile("lost", Bucket.MIN_PART_BYTES + 1);
            server.failPuts(1, true);
            // the client's retry finds the upload completed: S3 (and s3proxy) answer it as done, some
            // servers with NoSuchUpload, which the bucket tells from a conflict as it does a PUT's
            String etag = parts.put("p/lost/a", f, Map.of("chibi-sha256", "y"), null);
            assertEquals(etag, parts.head("p/lost/a").etag());
            assertEquals(Map.of("chibi-sha256", "y"), parts.head("p/lost/a").meta());
            assertEquals(0, parts.uploadsUnderway("p/lost/"));
            assertNull(parts.requests().get("abort-upload"));
        }
    }

    @Test
    void anObjectAboveTheLimitComesDownInRangesOfOneVersion() throws Exception {
        try (Bucket parts = inParts()) {
            Path f = randomFile("ranges", 2 * Bucket.MIN_PART_BYTES + 4321);
            String etag = parts.put("p/ranges/a", f, Map.of("chibi-sha256", "z"), null);
            Map<String, Long> before = parts.requests();
            Path back = temp.resolve("ranges-back");
            Bucket.Head h = parts.get("p/ranges/a", back, Files.size(f));
            assertEquals(Map.of("get", 3L), Requests.since(before, parts.requests()));
            assertArrayEquals(Files.readAllBytes(f), Files.readAllBytes(back));
            assertEquals(new Bucket.Head(Files.size(f), h.modified(), etag, Map.of("chibi-sha256", "z")), h);

            // thought larger than it is now: the first range is all of it
            parts.put("p/ranges/small", "small".getBytes(UTF_8), Map.of(), null);
            assertEquals(5, parts.get("p/ranges/small", back, 3 * Bucket.MIN_PART_BYTES).size());
            assertEquals("small", Files.readString(back));
            parts.put("p/ranges/empty", new byte[0], Map.of(), null);
            assertEquals(0, parts.get("p/ranges/empty", back, 3 * Bucket.MIN_PART_BYTES).size());
            assertEquals(0, Files.size(back));
            assertNull(parts.get("p/ranges/none", back, 3 * Bucket.MIN_PART_BYTES));
        }
    }

    @Test
    void anObjectReplacedBetweenItsRangesComesWholeWithOneGet() throws Exception {
        try (Bucket parts = inParts()) {
            Path f = randomFile("replaced", 2 * Bucket.MIN_PART_BYTES + 1);
            Path g = randomFile("replacement", Bucket.MIN_PART_BYTES + 2);
            String etag = parts.put("p/replaced/a", f, Map.of(), null);
            S3Server.HeldGet second = server.holdGetAfter(1);
            Path back = temp.resolve("replaced-back");
            var download = java.util.concurrent.CompletableFuture.supplyAsync(() -> {
                try {
                    return parts.get("p/replaced/a", back, Files.size(f));
                } catch (IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            });
            second.reached().await();
            String now = parts.put("p/replaced/a", g, Map.of(), etag);
            second.release().countDown();
            assertEquals(now, download.get().etag());
            assertArrayEquals(Files.readAllBytes(g), Files.readAllBytes(back));
        }
    }

    /** A client that moves every file above S3's smallest part in parts of that size. */
    private static Bucket inParts() {
        Bucket b = quick(Bucket.connect(S3Spec.parse("s3://bucket-test/p"), server.env()));
        b.movedInParts(Bucket.MIN_PART_BYTES, Bucket.MIN_PART_BYTES);
        return b;
    }

    private static Path randomFile(String name, long size) throws IOException {
        byte[] data = new byte[(int) size];
        new java.util.Random(size).nextBytes(data);
        return Files.write(temp.resolve(name), data);
    }


    @Test
    // on a thread of its own: without the limits the request never returns, and a thread blocked in a
    // socket's write ignores the interrupt a same-thread timeout sends
    @Timeout(value = 60, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
    void anS3ThatTakesRequestsAndAnswersNoneFailsThemWithinTheLimitAndIsThenAskedNoMore() throws Exception {
        bucket.put("p/hung", "content".getBytes(UTF_8), Map.of(), null);
        try (Bucket b = Bucket.connect(S3Spec.parse("s3://bucket-test/p"), server.env())) {
            b.answerTimeouts(java.time.Duration.ofMillis(500), java.time.Duration.ofSeconds(2), 1 << 20);
            // every GET of it held by the server, as a hung S3 (or a proxy in front of it) holds them
            S3Server.HeldRequests hung = server.holdRanges((name, from) -> name.equals("p/hung"), 1);
            try {
                long start = System.nanoTime();
                Bucket.Unavailable e = assertThrows(Bucket.Unavailable.class, () -> b.get("p/hung", temp.resolve("hung")));
                long tookMs = (System.nanoTime() - start) / 1_000_000;
                assertTrue(tookMs < 10_000, "failed after " + tookMs + " ms, not within the 2 s limit");
                assertTrue(e.getMessage().contains("cannot reach"), e.getMessage());
                assertTrue(b.unreachable());
                // what comes next fails at once, without a request
                Map<String, Long> before = b.requests();
                assertThrows(Bucket.Unavailable.class, () -> b.head("p/hung"));
                assertEquals(before, b.requests());
            } finally {
                hung.release().countDown();
            }
            b.probe("p/");
            assertFalse(b.unreachable());
            b.get("p/hung", temp.resolve("hung"));
            assertEquals("content", Files.readString(temp.resolve("hung")));
        }
    }

    @Test
    // on a thread of its own: without the limits the request never returns, and a thread blocked in a
    // socket's write ignores the interrupt a same-thread timeout sends
    @Timeout(value = 60, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
    void anUploadToAnS3ThatReadsNothingFailsWithinItsLimitWhateverItsSize() throws Exception {
        try (Bucket b = Bucket.connect(S3Spec.parse("s3://bucket-test/p"), server.env())) {
            b.answerTimeouts(java.time.Duration.ofMillis(500), java.time.Duration.ofSeconds(2), 4 << 20);
            // 8 MiB, more than the sockets' buffers hold: the write itself blocks, which no socket timeout ends
            Path f = randomFile("stuck", 8 << 20);
            S3Server.HeldRequests stuck = server.holdPuts(name -> name.equals("p/stuck"), 1);
            try {
                long start = System.nanoTime();
                assertThrows(Bucket.Unavailable.class, () -> b.put("p/stuck", f, Map.of(), null));
                long tookMs = (System.nanoTime() - start) / 1_000_000;
                // 2 s and 8 MiB at 4 MiB/s an attempt, 2 s more for retries: 6 s
                assertTrue(tookMs < 20_000, "failed after " + tookMs + " ms");
                assertTrue(b.unreachable());
            } finally {
                stuck.release().countDown();
            }
        }
    }

    @Test
    void listsOneLevelWithPrefixes() throws Exception {
        bucket.put("p/l/f", new byte[0], Map.of(), null);
        bucket.put("p/l/d/g", new byte[0], Map.of(), null);
        bucket.put("p/l/e/", new byte[0], Map.of(), null);
        Bucket.Level l = bucket.list("p/l/", true);
        assertEquals(List.of("p/l/f"), l.objects().stream().map(Bucket.Listed::key).toList());
        assertEquals(List.of("p/l/d/", "p/l/e/"), l.prefixes());
        assertTrue(bucket.head("p/l/e/") != null);
    }

    @Test
    void aGetWhoseBodyEndsBeforeItsLengthIsAskedAgainAndNeverKeptShort() throws Exception {
        Path f = randomFile("cut-short", 300_000);
        bucket.put("p/cut/a", f, Map.of(), null);
        Path to = temp.resolve("cut-got");
        server.cutGets("p/cut/a"::equals, 1);
        bucket.get("p/cut/a", to);
        assertArrayEquals(Files.readAllBytes(f), Files.readAllBytes(to));
        // cut every time: EIO for this request, nothing written, and S3 not taken for away
        Files.delete(to);
        server.cutGets("p/cut/a"::equals, -1);
        Bucket.Unavailable e = assertThrows(Bucket.Unavailable.class, () -> bucket.get("p/cut/a", to));
        assertTrue(e.getMessage().contains("ended after 150000 of its 300000 bytes"), e.getMessage());
        assertFalse(Files.exists(to));
        assertFalse(bucket.unreachable(), "S3 answered every time");
        server.cutGets(name -> false, 0);
    }

    @Test
    void aGetWhoseBytesAreNotTheSha256ItsMetadataNamesIsNotKept() throws Exception {
        bucket.put("p/cut/sha", "content".getBytes(UTF_8), Map.of(S3Storage.META_SHA,
                dev.chibifs.store.ContentHash.of("other".getBytes(UTF_8))), null);
        Path to = temp.resolve("sha-got");
        assertThrows(Bucket.Unavailable.class, () -> bucket.get("p/cut/sha", to));
        assertFalse(Files.exists(to));
        bucket.put("p/cut/sha2", "content".getBytes(UTF_8), Map.of(S3Storage.META_SHA,
                dev.chibifs.store.ContentHash.of("content".getBytes(UTF_8))), null);
        bucket.get("p/cut/sha2", to);
        assertEquals("content", Files.readString(to));
    }

    @Test
    void aRangeWhoseBodyEndsBeforeItsLengthIsAskedAgain() throws Exception {
        try (Bucket parts = inParts()) {
            Path f = randomFile("cut-ranges", 2 * Bucket.MIN_PART_BYTES + 5);
            parts.put("p/cut/r", f, Map.of(), null);
            Path to = temp.resolve("cut-ranges-got");
            server.cutGets("p/cut/r"::equals, 2);
            parts.get("p/cut/r", to, Files.size(f));
            assertArrayEquals(Files.readAllBytes(f), Files.readAllBytes(to));
        }
    }

    /** A file that comes down in ranges is checked whole: a changed byte in a 70 MiB one was kept, served and uploaded again. */
    @Test
    void rangesWhoseWholeIsNotTheSha256ItsMetadataNamesAreNotKept() throws Exception {
        try (Bucket parts = inParts()) {
            Path f = randomFile("sha-ranges", 2 * Bucket.MIN_PART_BYTES + 5);
            parts.put("p/sha/r", f, Map.of(S3Storage.META_SHA, dev.chibifs.store.ContentHash.of("other".getBytes(UTF_8))), null);
            Path to = temp.resolve("sha-ranges-got");
            assertThrows(Bucket.Unavailable.class, () -> parts.get("p/sha/r", to, Files.size(f)));
            assertFalse(Files.exists(to));
            parts.put("p/sha/r2", f, Map.of(S3Storage.META_SHA, dev.chibifs.store.ContentHash.of(f)), null);
            parts.get("p/sha/r2", to, Files.size(f));
            assertArrayEquals(Files.readAllBytes(f), Files.readAllBytes(to));
        }
    }

    @Test
    void aListingWhoseContinuationTokenRepeatsFailsRatherThanLoopingForEver() throws Exception {
        bucket.put("p/loop/a", "a".getBytes(UTF_8), Map.of(), null);
        server.loopLists("p/loop/"::equals, -1);
        try {
            Map<String, Long> before = bucket.requests();
            Bucket.Unavailable e = assertThrows(Bucket.Unavailable.class, () -> bucket.list("p/loop/", true));
            assertTrue(e.getMessage().contains("same continuation token twice"), e.getMessage());
            assertTrue(e.getMessage().contains("p/loop/"), e.getMessage());
            assertEquals(2L, Requests.since(before, bucket.requests()).get("list"), "the first page, then the page that gave its token again");
            assertFalse(bucket.unreachable(), "S3 answered every time");
        } finally {
            server.loopLists(prefix -> false, 0);
        }
        assertEquals(List.of("p/loop/a"), bucket.list("p/loop/", true).objects().stream().map(Bucket.Listed::key).toList());
    }

    @Test
    // on a thread of its own, as the tests of the other limits
    @Timeout(value = 60, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
    void aCompletionOfAnUploadInPartsThatIsNeverAnsweredFailsWithinItsLimit() throws Exception {
        try (Bucket b = inParts()) {
            b.answerTimeouts(java.time.Duration.ofMillis(500), java.time.Duration.ofSeconds(2), 4 << 20);
            Path f = randomFile("never-completed", 2 * Bucket.MIN_PART_BYTES + 1);
            S3Server.HeldRequests never = server.holdCompletions("p/never-completed"::equals, 1);
            try {
                long start = System.nanoTime();
                assertThrows(Bucket.Unavailable.class, () -> b.put("p/never-completed", f, Map.of(), null));
                long tookMs = (System.nanoTime() - start) / 1_000_000;
                // each attempt 2 s (the answer limit, no bytes), 2 s more for retries
                assertTrue(tookMs < 20_000, "failed after " + tookMs + " ms");
            } finally {
                never.release().countDown();
            }
        }
    }

    @Test
    void aPutWhoseAnswerWasLostIsRecognisedAsOursThoughTheHeadSaysNoETag() throws Exception {
        for (String key : List.of("p/no-etag/", "p/no-etag/f")) {
            server.noEtags(key::equals, -1);
            server.losePutAnswers(key::equals, 1);
            try {
                Map<String, Long> before = bucket.requests();
                // the first attempt lands, its answer a 500; the retry's 412 asks a HEAD, answered without an ETag
                bucket.put(key, new byte[0], Map.of(), null);
                assertEquals(0, bucket.head(key).size());
                assertEquals(1L, Requests.since(before, bucket.requests()).get(Bucket.PUT_ANSWER_LOST));
            } finally {
                server.losePutAnswers(name -> false, 0);
                server.noEtags(name -> false, 0);
            }
        }
    }

    /**
     * An endpoint on 127.0.0.1 that answers every request with {@code answer} (whatever was asked)
     * and closes the connection, with a reset where {@code reset}; {@code asked} counts the requests.
     */
    private static java.net.ServerSocket rawEndpoint(byte[] answer, boolean reset, java.util.concurrent.atomic.AtomicInteger asked)
            throws IOException {
        java.net.ServerSocket endpoint = new java.net.ServerSocket(0, 50, java.net.InetAddress.getLoopbackAddress());
        Thread answers = new Thread(() -> {
            while (!endpoint.isClosed()) {
                try (java.net.Socket c = endpoint.accept()) {
                    java.io.InputStream in = c.getInputStream();
                    for (int crlf = 0, b; crlf < 4 && (b = in.read()) != -1; ) {
                        crlf = (b == '\r' || b == '\n') ? crlf + 1 : 0;
                    }
                    asked.incrementAndGet();
                    c.getOutputStream().write(answer);
                    c.getOutputStream().flush();
                    if (reset) {
                        c.setSoLinger(true, 0);
                    }
                } catch (IOException e) {
                    // closed by the test
                }
            }
        }, "raw-endpoint");
        answers.setDaemon(true);
        answers.start();
        return endpoint;
    }

    private static Bucket at(java.net.ServerSocket endpoint) {
        return quick(Bucket.connect(S3Spec.parse("s3://bucket-test/p?endpoint=http://127.0.0.1:" + endpoint.getLocalPort()),
                server.env()));
    }

    @Test
    void anAnswerCutOffFailsItsRequestButDoesNotTakeS3ForAway() throws Exception {
        // the start of a listing, then the connection closes mid-XML (a reset, or a proxy giving up):
        // s3proxy itself writes its XML whole or not at all
        String body = "<?xml version=\"1.0\" encoding=\"UTF-8\"?><ListBucketResult><Name>bucket-test</Name>"
                + "<Prefix>p/</Prefix><IsTruncated>false</IsTruncated><Contents><Key>p/a</Key><Size>1";
        java.util.concurrent.atomic.AtomicInteger asked = new java.util.concurrent.atomic.AtomicInteger();
        try (java.net.ServerSocket cut = rawEndpoint(("HTTP/1.1 200 OK\r\nContent-Type: application/xml\r\nContent-Length: "
                + (body.length() + 200) + "\r\nConnection: close\r\n\r\n" + body).getBytes(UTF_8), false, asked);
             Bucket b = at(cut)) {
            Bucket.Unavailable e = assertThrows(Bucket.Unavailable.class, () -> b.list("p/", true));
            assertFalse(e.getMessage().contains("cannot reach"), e.getMessage());
            assertTrue(e.getMessage().contains("could not be used"), e.getMessage());
            assertFalse(b.unreachable(), "the endpoint answered");
            // 6 as a failed request is asked; 7 where the JDK's HttpURLConnection sent one of them
            // again itself, the connection cut before the whole answer (the likely cause of a CI run's 7, session 81)
            int tries = asked.get();
            assertTrue(tries == 6 || tries == 7, tries + " asked: asked again as a failed request is");
            b.head("p/a"); // asked of the endpoint, not refused at once
            assertTrue(asked.get() > tries);
        }
    }

    /**
     * A release a server answered NoSuchKey for, in its DeleteObjects answer, was taken for done
     * unlooked: one that says so of a key it keeps held the lock for ever (tester's coord5 N2). It
     * is looked at with a HEAD, which here finds the key every time.
     */
    @Test
    void aReleaseAnsweredNoSuchKeyIsLookedAtNotTakenForDone() throws Exception {
        String body = "<?xml version=\"1.0\" encoding=\"UTF-8\"?><DeleteResult><Error><Key>p/held</Key><Code>NoSuchKey</Code>"
                + "<Message>The specified key does not exist.</Message></Error></DeleteResult>";
        java.util.concurrent.atomic.AtomicInteger asked = new java.util.concurrent.atomic.AtomicInteger();
        // every request, HEADs too, answered so: each HEAD finds the object there
        try (java.net.ServerSocket liar = rawEndpoint(("HTTP/1.1 200 OK\r\nContent-Type: application/xml\r\nETag: \"e\"\r\n"
                + "Content-Length: " + body.length() + "\r\nConnection: close\r\n\r\n" + body).getBytes(UTF_8), false, asked);
             Bucket b = at(liar)) {
            Bucket.Unusable e = assertThrows(Bucket.Unusable.class, () -> b.deleteIfOurs("p/held", h -> true));
            assertTrue(e.getMessage().contains("S3 answered NoSuchKey (The specified key does not exist.); a HEAD first"),
                    e.getMessage());
            assertEquals(12, asked.get(), "a HEAD before each of six DeleteObjects");
        }
    }

    /** A page that says more follows but names no token: taken as the end, a listing lost 101 of 2,100 names. */
    @Test
    void aListingPageThatSaysMoreFollowsButGivesNoTokenFailsRatherThanEndingThere() throws Exception {
        String body = "<?xml version=\"1.0\" encoding=\"UTF-8\"?><ListBucketResult><Name>bucket-test</Name>"
                + "<Prefix>p/</Prefix><KeyCount>1</KeyCount><MaxKeys>1</MaxKeys><IsTruncated>true</IsTruncated>"
                + "<Contents><Key>p/a</Key><Size>1</Size><ETag>\"e\"</ETag></Contents></ListBucketResult>";
        java.util.concurrent.atomic.AtomicInteger asked = new java.util.concurrent.atomic.AtomicInteger();
        try (java.net.ServerSocket truncated = rawEndpoint(("HTTP/1.1 200 OK\r\nContent-Type: application/xml\r\nContent-Length: "
                + body.length() + "\r\nConnection: close\r\n\r\n" + body).getBytes(UTF_8), false, asked);
             Bucket b = at(truncated)) {
            Bucket.Unavailable e = assertThrows(Bucket.Unavailable.class, () -> b.list("p/", true));
            assertTrue(e.getMessage().contains("gives no continuation token"), e.getMessage());
            assertFalse(b.unreachable(), "the endpoint answered");
        }
    }

    @Test
    void aSlowDownWhoseRetryAfterOutlastsTheLimitsFailsTheRequestButDoesNotTakeS3ForAway() throws Exception {
        java.util.concurrent.atomic.AtomicInteger asked = new java.util.concurrent.atomic.AtomicInteger();
        String error = "<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>";
        try (java.net.ServerSocket slow = rawEndpoint(("HTTP/1.1 503 Slow Down\r\nRetry-After: 100\r\nContent-Type: application/xml"
                + "\r\nContent-Length: " + error.length() + "\r\nConnection: close\r\n\r\n" + error).getBytes(UTF_8), false, asked);
             Bucket b = at(slow)) {
            b.answerTimeouts(java.time.Duration.ofMillis(500), java.time.Duration.ofSeconds(2), 1 << 20);
            Bucket.Unavailable e = assertThrows(Bucket.Unavailable.class, () -> b.list("p/", true));
            assertFalse(e.getMessage().contains("cannot reach"), e.getMessage());
            assertFalse(b.unreachable(), "the endpoint answered");
        }
    }

    @Test
    void aGetBodyResetMidwayIsAskedAgainThenOneLineOfEio() throws Exception {
        java.util.concurrent.atomic.AtomicInteger asked = new java.util.concurrent.atomic.AtomicInteger();
        byte[] head = "HTTP/1.1 200 OK\r\nContent-Length: 20000\r\nETag: \"e\"\r\n\r\n".getBytes(UTF_8);
        byte[] half = java.util.Arrays.copyOf(head, head.length + 10000);
        try (java.net.ServerSocket reset = rawEndpoint(half, true, asked); Bucket b = at(reset)) {
            Path to = temp.resolve("reset-got");
            Bucket.Unavailable e = assertThrows(Bucket.Unavailable.class, () -> b.get("p/a", to));
            assertEquals(dev.chibifs.sys.Linux.EIO, e.errno());
            assertEquals(1, e.getMessage().lines().count(), e.getMessage());
            assertFalse(e.getMessage().contains("cannot reach"), e.getMessage());
            assertEquals(6, asked.get(), "asked again as a failed request is");
            assertFalse(Files.exists(to));
            assertFalse(b.unreachable());
        }
    }
}
