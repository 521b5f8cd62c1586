package dev.chibifs.store.s3;

import dev.chibifs.path.VfsPath;
import dev.chibifs.store.FileHandle;
import dev.chibifs.store.OpenFlag;
import dev.chibifs.testing.MutableClock;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.EnumSet;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * An object S3 keeps refusing (a key a bucket policy denies, a KMS key that fails; here a 403 from
 * {@link S3Server#refusePuts}) waits on its own: every other change, deletes included, still goes up
 * at each pass, and what does wait for it is said, one line each. A tester's finding (session 65):
 * one PUT refused for good held back every {@code rm} and every old name of an {@code mv} of the
 * store, so other hosts went on reading a removed secret, and {@code chibifs sync} named the PUT alone.
 */
class S3RefusedUploadTest {

    private static final String BUCKET = "refused";

    @TempDir
    static Path temp;
    @RegisterExtension
    static final S3Server server = S3Server.perClass(BUCKET);

    private S3Namespace ns;
    private String prefix;
    private Bucket raw;

    @BeforeEach
    void newPrefix() {
        ns = new S3Namespace(BUCKET, server);
        prefix = ns.prefix;
        raw = ns.raw;
    }

    @AfterEach
    void closeStores() throws IOException {
        server.refusePuts(name -> false, 0);
        server.failPutsOf(name -> false, 0);
        server.failDeletes(name -> false, 0);
        server.refuseDeleteObjects(name -> false, 405, 0);
        server.refuseDeletesAsAPolicyDoes(name -> false, 0);
        ns.close();
    }

    /** A host whose uploads the test drives with its clock (no flusher thread). */
    private S3Storage host(String name, MutableClock clock) throws IOException {
        return open(S3Options.defaults(temp.resolve(prefix + "-" + name), server.env()).withHost(name).withClock(clock, false));
    }

    /** Another host, which asks S3 at every lookup. */
    private S3Storage reader(String name) throws IOException {
        return open(S3Options.defaults(temp.resolve(prefix + "-" + name), server.env()).withHost(name).withValidity(Duration.ZERO));
    }

    private S3Storage open(S3Options o) throws IOException {
        return ns.open(o);
    }

    private static MutableClock startClock() {
        return S3Namespace.startClock();
    }

    private static VfsPath p(String s) {
        return VfsPath.of(s);
    }

    private static void put(S3Storage s, String path, String content) throws IOException {
        s.mkdir(p(path).parent());
        try (FileHandle h = s.open(p(path), EnumSet.of(OpenFlag.WRITE, OpenFlag.CREATE, OpenFlag.TRUNCATE), 0644)) {
            h.write(ByteBuffer.wrap(content.getBytes(UTF_8)), 0);
        }
    }

    /** What S3 itself holds under {@code key} (below the test's prefix), or null. */
    private String inS3(String key) throws IOException {
        Path to = temp.resolve("get-" + System.nanoTime());
        Bucket.Head h = raw.get(prefix + "/" + key, to);
        return h == null ? null : Files.readString(to);
    }

    /** S3 refuses every PUT of the objects whose keys end so, until the test ends or says otherwise. */
    private static void refuse(String... keyEnds) {
        server.refusePuts(name -> List.of(keyEnds).stream().anyMatch(name::endsWith), -1);
    }

    private static void refuseNoMore() {
        server.refusePuts(name -> false, 0);
    }

    @Test
    void aRemovedFileGoesFromS3WhileAnotherFilesUploadIsRefused() throws Exception {
        // the tester's steps: a secret synced, a file whose PUT S3 refuses, then `rm` of the secret
        MutableClock clock = startClock();
        S3Storage a = host("a", clock);
        S3Storage b = reader("b");
        put(a, "/shared/token.txt", "secret");
        a.flushAll();
        assertEquals("secret", new String(b.read(p("/shared/token.txt")), UTF_8));
        refuse("/shared/refused");
        put(a, "/shared/refused", "x");
        clock.advance(Duration.ofSeconds(3));
        assertThrows(IOException.class, a::flushDue);
        a.removeFile(p("/shared/token.txt"));
        put(a, "/shared/after", "y");
        clock.advance(Duration.ofSeconds(3));

        IOException e = assertThrows(IOException.class, a::flushDue, "the refused PUT is tried again, and fails");
        assertTrue(e.getMessage().contains("shared/refused") && e.getMessage().contains("403"), e.getMessage());
        assertNull(inS3("shared/token.txt"), "the delete went up all the same");
        assertEquals("y", inS3("shared/after"), "and so did the other upload");
        assertFalse(b.exists(p("/shared/token.txt")), "another host no longer sees the removed file");
        assertEquals(1, a.pendingChanges(), "the refused file alone waits");

        refuseNoMore();
        clock.advance(Duration.ofSeconds(3));
        a.flushDue();
        assertEquals("x", inS3("shared/refused"));
        assertEquals(0, a.pendingChanges());
    }

    @Test
    void theOldNameOfAFileMovedOntoARefusedNameStaysUntilTheNewOneIsUpAndSyncSaysSo() throws Exception {
        // another host sees both names for a moment, never neither (docs/s3-store.md): the old name's
        // delete waits for the new name's upload, refused or not, while every other delete goes
        MutableClock clock = startClock();
        S3Storage a = host("a", clock);
        put(a, "/shared/a0", "content");
        put(a, "/shared/gone", "g");
        a.flushAll();
        refuse("/shared/refused");
        a.rename(p("/shared/a0"), p("/shared/refused"));
        a.removeFile(p("/shared/gone"));

        IOException e = assertThrows(IOException.class, a::flushAll);
        String[] lines = e.getMessage().split("\n");
        assertEquals(2, lines.length, e.getMessage());
        assertTrue(lines[0].contains("shared/refused") && lines[0].contains("403"), lines[0]);
        assertEquals("1 delete of an old name waits for the upload of its new name (another host would see neither):"
                + " /shared/refused", lines[1]);
        assertEquals("content", inS3("shared/a0"), "the old name stays while the new one is refused");
        assertNull(inS3("shared/gone"), "the other delete went");

        refuseNoMore();
        a.flushAll();
        assertEquals("content", inS3("shared/refused"));
        assertNull(inS3("shared/a0"));
        assertEquals(0, a.pendingChanges());
    }

    @Test
    void whatIsInADirectoryWhoseMarkerIsRefusedWaitsForItAndNothingElseDoes() throws Exception {
        // a directory's marker goes up before what is in it, a failed one too
        MutableClock clock = startClock();
        S3Storage a = host("a", clock);
        a.mkdir(p("/shared"));
        a.flushAll();
        refuse("/shared/refused/");
        put(a, "/shared/refused/f", "f");
        put(a, "/shared/ok", "ok");

        IOException e = assertThrows(IOException.class, a::flushAll);
        String[] lines = e.getMessage().split("\n");
        assertEquals(2, lines.length, e.getMessage());
        assertTrue(lines[0].contains("shared/refused/") && lines[0].contains("403"), lines[0]);
        assertEquals("1 file or directory in /shared/refused waits for its marker", lines[1]);
        assertNull(inS3("shared/refused/f"));
        assertEquals("ok", inS3("shared/ok"));

        refuseNoMore();
        a.flushAll();
        assertEquals("f", inS3("shared/refused/f"));
        assertEquals(0, a.pendingChanges());
    }

    @Test
    void aFileRemovedWhileItsChangeWasRefusedIsDeletedAndNotBroughtBack() throws Exception {
        // a delete must not be overtaken by an earlier upload of its key: the change refused, then the
        // file removed, goes from S3 while another upload is still refused, and stays gone after
        MutableClock clock = startClock();
        S3Storage a = host("a", clock);
        put(a, "/shared/f", "v1");
        put(a, "/shared/g", "v1");
        a.flushAll();
        refuse("/shared/f", "/shared/other");
        put(a, "/shared/f", "v2");
        put(a, "/shared/other", "o");
        assertThrows(IOException.class, a::flushAll);
        a.removeFile(p("/shared/f"));
        // made again while its delete waits: its upload takes the delete over, and replaces v1
        a.removeFile(p("/shared/g"));
        put(a, "/shared/g", "v2");
        refuse("/shared/g", "/shared/other");

        assertThrows(IOException.class, a::flushAll, "other is still refused");
        assertNull(inS3("shared/f"), "removed, though another upload failed");
        assertEquals("v1", inS3("shared/g"), "not deleted: its new version replaces it");

        refuseNoMore();
        a.flushAll();
        assertNull(inS3("shared/f"), "not brought back");
        assertEquals("v2", inS3("shared/g"));
        assertEquals("o", inS3("shared/other"));
        assertEquals(List.of("g", "other"), a.list(p("/shared")).stream().map(x -> x.name()).sorted().toList(),
                "no conflict copy");
        assertEquals(0, a.pendingChanges());
    }

    @Test
    void aNameForcedUpAtItsCapWaitsForARefusedFileClosedBeforeIt() throws Exception {
        // git commits every 0.5 s, as in S3HostsTest: when the ref goes up at its cap, what it names
        // is there. Its objects refused, the ref waits for them rather than name what S3 lacks
        MutableClock clock = startClock();
        S3Storage a = host("git", clock);
        put(a, "/shared/ref", "o0");
        put(a, "/shared/o0", "first");
        a.flushAll();
        server.refusePuts(name -> name.matches(".*/shared/o[1-9][0-9]*"), -1);
        long cap = Overlay.MAX_DEFERRALS * S3Options.DEFAULT_FLUSH_AFTER.toMillis();
        int n = 0;
        for (long elapsed = 0; elapsed <= cap + 1_000; elapsed += 500) {
            n++;
            put(a, "/shared/o" + n, "object " + n);
            put(a, "/shared/.ref.lock", "o" + n);
            a.rename(p("/shared/.ref.lock"), p("/shared/ref"));
            clock.advance(Duration.ofMillis(500));
            try {
                a.flushDue();
            } catch (IOException refused) {
                // the objects, every pass
            }
            String ref = inS3("shared/ref");
            assertTrue("o0".equals(ref) || inS3("shared/" + ref) != null, "the ref names " + ref + ", which is not up");
        }
        refuseNoMore();
        a.flushAll();
        assertEquals("o" + n, inS3("shared/ref"));
        assertEquals("object " + n, inS3("shared/o" + n));
    }

    @Test
    void anUnmountDoesTheDeletesARefusedUploadWouldHaveHeldBack() throws Exception {
        // the deletes stayed in the journal at umount, the log naming only the refused PUT
        MutableClock clock = startClock();
        S3Storage a = host("a", clock);
        put(a, "/shared/token.txt", "secret");
        a.flushAll();
        refuse("/shared/refused");
        put(a, "/shared/refused", "x");
        a.removeFile(p("/shared/token.txt"));
        IOException e = assertThrows(IOException.class, a::close, "the refused file stays in the journal");
        assertTrue(e.getMessage().contains("shared/refused"), e.getMessage());
        assertNull(inS3("shared/token.txt"));
        assertNull(inS3("shared/refused"));
    }

    /**
     * After a restart with a refused upload in the journal every change made since waited behind it,
     * and every lock let go stayed on S3 (a tester's finding, session 66): the journal now says what
     * waits for what, and the restart goes on as the daemon did before it. Here the old name of a
     * file moved onto the refused name waits for it, as it did before the stop, and nothing else does.
     */
    @Test
    void aRefusedChangeFromBeforeAStartWaitsWithItsOldNameAloneAndTheLogSaysSo() throws Exception {
        MutableClock clock = startClock();
        S3Storage a = host("a", clock);
        put(a, "/shared/a0", "content");
        a.flushAll();
        refuse("/shared/refused");
        a.rename(p("/shared/a0"), p("/shared/refused"));
        put(a, "/shared/ok", "y");
        assertThrows(IOException.class, a::close, "the refused file stays in the journal");

        String log = logged(() -> {
            S3Storage again = host("a", clock);
            put(again, "/shared/since", "made after the start");
            assertThrows(IOException.class, again::flushAll);
            assertNull(again.failing(), "nothing but what depends on it waits");
            assertEquals("made after the start", inS3("shared/since"));
            assertEquals("y", inS3("shared/ok"));
            assertEquals("content", inS3("shared/a0"), "the old name stays while the new one is refused");

            refuseNoMore();
            again.flushAll();
            assertEquals("content", inS3("shared/refused"));
            assertNull(inS3("shared/a0"));
        });
        assertTrue(log.contains("shared/refused") && log.contains("every other goes on") && !log.contains("waits behind it"),
                "the log says the rest goes on: " + log);
        // and when it finally goes up: the refusal's warning was the last word on it
        assertTrue(log.contains("the upload of s3://" + BUCKET + "/" + prefix + "/shared/refused (/shared/refused) went up,"
                + " after S3 refused it 2 times over 0.0 s"), log);
        // a tester's finding (session 68): "3 changes ... go up first", then "of the 2 changes": the
        // old name's delete was counted in the first line and left out of the second
        assertTrue(log.contains("2 changes from before the last stop go up first")
                && log.contains("of the 2 changes from before the last stop, 0 went up, 1 refused by S3 and retried"
                        + " on their own backoff, 1 delete (an old name's, a lock's release) waiting for them"), log);
    }

    /**
     * A tester's finding (session 67): S3 answering 500 for some names (s3proxy, for a name its file
     * system cannot store), each try cost the client's retries, about 1.5 s; after a restart the
     * replay tried 20 of them in a row at the head of the first pass, and every new file and lock
     * release waited 30-37 s. The journal says which changes S3 refused (its status and how many
     * times), so the replay asks S3 once for each, not with the client's retries, which until session
     * 69 came back at every mount; a refusal's retries on its own backoff take S3's answer at the
     * first attempt too. The journal here is as a kill -9 leaves it, without the close's compaction.
     */
    @Test
    void aChangeS3Answers500ForIsAskedOnceAtTheReplayAsTheJournalSaysItWasRefusedAndAtEachRetry() throws Exception {
        MutableClock clock = startClock();
        AtomicInteger asked = new AtomicInteger();
        refusedWith500BeforeAStop(clock, asked, journal -> { });

        asked.set(0);
        S3Storage[] started = new S3Storage[1];
        String log = logged(() -> {
            started[0] = host("a", clock);
            put(started[0], "/shared/since", "made after the start");
            IOException e = assertThrows(IOException.class, started[0]::flushAll);
            assertTrue(e.getMessage().contains("HTTP 500"), e.getMessage());
        });
        S3Storage again = started[0];
        assertEquals(3, asked.get(), "each asked once at the replay, the rest going on");
        // a tester's finding (session 67): the log said "26 changes ... are uploaded now" of 25 refused
        assertTrue(log.contains("3 changes from before the last stop go up first")
                && log.contains("of the 3 changes from before the last stop, 0 went up, 3 refused by S3 and retried")
                && !log.contains("uploaded now"), log);
        assertEquals("made after the start", inS3("shared/since"));
        assertNull(again.failing());

        clock.advance(Duration.ofSeconds(1));
        assertThrows(IOException.class, again::flushDue);
        assertEquals(3 + 3, asked.get(), "each asked once again at its retry time");

        server.failPutsOf(name -> false, 0);
        clock.advance(Duration.ofSeconds(2));
        again.flushDue();
        assertEquals("x2", inS3("shared/long2"));
        assertEquals(0, again.pendingChanges());
    }

    /**
     * A journal the previous version wrote does not say what S3 refused: its replay gives each change
     * the client's retries, as that version's did (a 500 that passes keeps its change in its place),
     * and journals the refusals it meets, so the next start asks once.
     */
    @Test
    void aJournalThatDoesNotSayWhatWasRefusedIsReplayedWithTheClientsRetriesOnceThenSaysIt() throws Exception {
        MutableClock clock = startClock();
        AtomicInteger asked = new AtomicInteger();
        refusedWith500BeforeAStop(clock, asked, records -> records.forEach(r -> r.remove("refused")));

        asked.set(0);
        S3Storage again = host("a", clock);
        assertThrows(IOException.class, again::flushAll);
        assertEquals(3 * Bucket.MAX_ATTEMPTS, asked.get(), "each with the client's tries, as the previous version");
        try {
            again.close();
        } catch (IOException stillRefused) {
            // its changes stay journaled, refused
        }

        asked.set(0);
        S3Storage third = host("a", clock);
        assertThrows(IOException.class, third::flushAll);
        assertEquals(3, asked.get(), "the next start asks once each");
    }

    /**
     * Each refusal journals the change again (its count), after what was written since: the replay
     * keeps its place all the same, so a data file refused for a while, written before a READY
     * marker, goes up before it once S3 takes it (restart2's ordering rule).
     */
    @Test
    void aChangeJournaledAgainAsRefusedKeepsItsPlaceInTheReplaysOrder() throws Exception {
        MutableClock clock = startClock();
        S3Storage a = host("a", clock);
        server.failPutsOf(name -> name.endsWith("/shared/w/d1"), -1);
        put(a, "/shared/w/d1", "data");
        clock.advance(Duration.ofSeconds(3));
        assertThrows(IOException.class, a::flushDue);
        put(a, "/shared/w/READY", "");
        clock.advance(Duration.ofSeconds(1)); // past d1's backoff, before READY's debounce
        assertThrows(IOException.class, a::flushDue);
        assertNull(inS3("shared/w/READY"), "still in its debounce");
        Path journal = journalOf(temp.resolve(prefix + "-a"));
        byte[] killed = Files.readAllBytes(journal);
        server.failPutsOf(name -> name.contains("/shared/w/"), -1); // nothing goes up at a's close: a kill -9
        assertThrows(IOException.class, a::close);
        Files.write(journal, killed);

        server.failPutsOf(name -> false, 0);
        int from = server.stored.size();
        S3Storage again = host("a", clock);
        again.flushAll();
        List<String> order = server.stored.subList(from, server.stored.size()).stream()
                .filter(k -> k.startsWith(prefix + "/shared/w/")).toList();
        assertEquals(List.of(prefix + "/shared/w/d1", prefix + "/shared/w/READY"), order);
    }

    /**
     * A delete S3 answers 500 for every time is journaled as an upload is: the replay after a restart
     * asks S3 once for it, as do its retries on its own backoff; until session 70 each start gave it
     * the client's retries again. A journal that does not say so (the previous version's) gives it
     * those retries once, and says it from then on.
     */
    @Test
    void aDeleteS3Answers500ForIsAskedOnceAtTheReplayAsTheJournalSaysItWasRefused() throws Exception {
        MutableClock clock = startClock();
        String key = prefix + "/shared/gone";
        java.util.function.IntSupplier asked = () -> (int) server.deletesAsked.stream().filter(d -> d.equals("DELETE " + key)).count();
        S3Storage a = host("a", clock);
        put(a, "/shared/gone", "x");
        a.flushAll();
        server.failDeletes(name -> name.equals(key), -1);
        a.removeFile(p("/shared/gone"));
        assertThrows(IOException.class, a::flushAll);
        assertEquals(Bucket.MAX_ATTEMPTS, asked.getAsInt(), "the first refusal has the client's retries");
        stoppedAsByAKill(a, records -> { });

        int before = asked.getAsInt();
        S3Storage again = host("a", clock);
        IOException e = assertThrows(IOException.class, again::flushAll);
        assertTrue(e.getMessage().contains("shared/gone") && e.getMessage().contains("HTTP 500"), e.getMessage());
        assertEquals(before + 1, asked.getAsInt(), "asked once at the replay");
        clock.advance(Duration.ofSeconds(5));
        assertThrows(IOException.class, again::flushDue);
        assertEquals(before + 2, asked.getAsInt(), "and once at its retry time");
        stoppedAsByAKill(again, records -> records.forEach(r -> r.remove("refused")));

        before = asked.getAsInt();
        S3Storage third = host("a", clock);
        assertThrows(IOException.class, third::flushAll);
        assertEquals(before + Bucket.MAX_ATTEMPTS, asked.getAsInt(), "a journal without the field: the client's retries, once");
        stoppedAsByAKill(third, records -> { });

        server.failDeletes(name -> false, 0);
        S3Storage fourth = host("a", clock);
        fourth.flushAll();
        assertEquals(0, fourth.pendingChanges());
        assertNull(inS3("shared/gone"));
    }

    /**
     * A refused change's retries wait 0.5 s after its first refusal, doubling at each to 5 s; after
     * a restart they began at 0.5 s again, a tenth of the wait reached. The journal's count of its
     * refusals carries it: the replay asks once, and the next try waits as long as it would have.
     */
    @Test
    void aRefusedChangesBackoffGoesOnAfterARestart() throws Exception {
        MutableClock clock = startClock();
        AtomicInteger asked = new AtomicInteger();
        S3Storage a = host("a", clock);
        put(a, "/shared/gone", "x");
        a.flushAll();
        server.refusePuts(name -> name.endsWith("/shared/refused") && asked.incrementAndGet() > 0, -1);
        server.failDeletes(name -> name.endsWith("/shared/gone") && asked.incrementAndGet() > 0, -1);
        put(a, "/shared/refused", "r");
        a.removeFile(p("/shared/gone"));
        assertThrows(IOException.class, a::flushAll);
        for (int i = 0; i < 5; i++) {
            clock.advance(Duration.ofSeconds(5)); // the longest wait: each asked at every step
            assertThrows(IOException.class, a::flushDue);
        }
        stoppedAsByAKill(a, records -> { });

        S3Storage again = host("a", clock);
        asked.set(0);
        assertThrows(IOException.class, again::flushAll);
        assertEquals(2, asked.get(), "each asked once at the replay");
        clock.advance(Duration.ofMillis(4_900));
        assertThrows(IOException.class, again::flushDue);
        assertEquals(2, asked.get(), "not asked again before the wait it had reached, 5 s");
        clock.advance(Duration.ofMillis(100));
        assertThrows(IOException.class, again::flushDue);
        assertEquals(4, asked.get(), "each asked once at its retry time");
    }

    /**
     * A change S3 refused 20 times before a restart waits no longer than the cap, 5 s, for its first
     * retry after it (0.5 s doubled at each of 20 refusals would be days after the fault is gone),
     * and stats says when that is: it said only that the write-back failed. The line that says it
     * went up at last counts the refusals from before the restart, and the time since the first.
     */
    @Test
    void aChangeRefused20TimesBeforeARestartIsTriedAgainWithinTheCapAndStatsSaysWhen() throws Exception {
        MutableClock clock = startClock();
        AtomicInteger asked = new AtomicInteger();
        S3Storage a = host("a", clock);
        server.refusePuts(name -> name.endsWith("/shared/refused") && asked.incrementAndGet() > 0, -1);
        put(a, "/shared/refused", "r");
        assertThrows(IOException.class, a::flushAll);
        long anHourAgo = clock.millis() - 3_600_000;
        stoppedAsByAKill(a, records -> records.stream().filter(r -> r.has("refused")).forEach(r ->
                ((com.fasterxml.jackson.databind.node.ObjectNode) r.get("refused")).put("count", 20).put("first", anHourAgo)));

        S3Storage again = host("a", clock);
        asked.set(0);
        assertThrows(IOException.class, again::flushAll);
        assertEquals(1, asked.get(), "asked once at the replay");
        assertTrue(again.state().contains("HTTP 403 AccessDenied (Input/output error); next try in 5.0 s;"), again.state());
        clock.advance(Duration.ofMillis(4_900));
        assertThrows(IOException.class, again::flushDue);
        assertEquals(1, asked.get(), "not asked again before its retry time");
        assertTrue(again.state().contains("; next try in 0.1 s;"), again.state());

        refuseNoMore();
        clock.advance(Duration.ofMillis(100));
        String log = logged(again::flushDue);
        assertEquals("r", inS3("shared/refused"), "asked at 5 s, the cap");
        assertTrue(log.contains("(/shared/refused) went up, after S3 refused it 21 times over 3605.0 s"), log);
        assertFalse(again.state().contains("next try"), again.state());
    }

    /**
     * A DeleteObjects S3 refuses whole (a 403 a bucket policy gives) was said as the delete of its
     * first key alone, in the log and in the store's state; and the keys of the batch, with no
     * retry time of their own, were asked again at every tick of the flusher.
     */
    @Test
    void aBatchOfDeletesRefusedWholeIsSaidAsTheBatchAndWaitsItsRetryTime() throws Exception {
        MutableClock clock = startClock();
        S3Storage a = host("a", clock);
        for (int i = 0; i < 3; i++) {
            put(a, "/shared/d/f" + i, "x");
        }
        a.flushAll();
        for (int i = 3; i < 20; i++) {
            put(a, "/shared/d/f" + i, "x");
        }
        a.flushAll();
        server.refuseDeleteObjects(name -> name.contains("/shared/d/f"), 403, -1);
        for (int i = 0; i < 20; i++) {
            a.removeFile(p("/shared/d/f" + i));
        }
        java.util.function.LongSupplier batches = () -> server.deletesAsked.stream().filter(d -> d.startsWith("refused DeleteObjects")).count();
        IOException e = assertThrows(IOException.class, a::flushAll);
        // its keys sorted: said alike at every refusal (a tester saw one batch led by two keys)
        assertTrue(e.getMessage().contains("delete-batch of 20 keys, the first s3://" + BUCKET + "/" + prefix + "/shared/d/f0:")
                && e.getMessage().contains("403"), e.getMessage());
        assertTrue(a.state().contains("delete-batch of 20 keys"), a.state());
        assertEquals(1, batches.getAsLong());
        for (int t = 0; t < 4; t++) {
            clock.advance(Duration.ofMillis(100));
            a.writeBack.tick();
        }
        assertEquals(1, batches.getAsLong(), "not asked again before its retry time");
        clock.advance(Duration.ofMillis(100));
        a.writeBack.tick();
        assertEquals(2, batches.getAsLong(), "asked again at its retry time, 0.5 s");

        server.refuseDeleteObjects(name -> false, 405, 0);
        String log = logged(a::flushAll);
        assertTrue(log.contains("the delete of s3://" + BUCKET + "/" + prefix + "/shared/d/f0 went up, after S3 refused it 2 times"
                + " over 0.5 s"), log);
        assertNull(inS3("shared/d/f0"));
        assertEquals(0, a.pendingChanges());
    }

    /**
     * A DeleteObjects S3 answers with an AccessDenied for each of some keys (how AWS refuses the
     * deletes a bucket policy denies) had each of them asked again at once with a DELETE of its
     * own, and at every retry twice, in a batch and alone: 1 + N requests for N keys, every 5 s
     * for as long as the policy denies. S3's error for a key is its refusal, journaled.
     */
    @Test
    void aDeleteRefusedKeyByKeyInABatchIsAskedOnceAtEachRetryAndAfterARestart() throws Exception {
        MutableClock clock = startClock();
        S3Storage a = host("a", clock);
        for (int i = 0; i < 3; i++) {
            put(a, "/shared/d/f" + i, "x");
        }
        put(a, "/shared/d/g", "x");
        a.flushAll();
        server.refuseDeletesAsAPolicyDoes(name -> name.contains("/shared/d/f"), -1);
        for (int i = 0; i < 3; i++) {
            a.removeFile(p("/shared/d/f" + i));
        }
        a.removeFile(p("/shared/d/g"));
        java.util.function.LongSupplier inBatches = () -> server.deletesAsked.stream().filter(d -> d.startsWith("refused in DeleteObjects")).count();
        java.util.function.LongSupplier alone = () -> server.deletesAsked.stream().filter(d -> d.startsWith("DELETE ") && d.contains("/shared/d/")).count();

        long firstRefused = clock.millis();
        IOException[] thrown = new IOException[1];
        String warned = logged(() -> thrown[0] = assertThrows(IOException.class, a::flushAll));
        IOException e = thrown[0];
        // S3's code for the key leads, as "HTTP 403 AccessDenied" leads a request's refusal; the 200 is the batch's
        String said = "S3 delete s3://" + BUCKET + "/" + prefix + "/shared/d/f0: AccessDenied for this key (its delete-batch"
                + " answered HTTP 200) (Input/output error)";
        assertTrue(e.getMessage().contains(said), e.getMessage());
        // one warning for the batch, naming its keys (an rm -rf of a denied tree logged one per file)
        String dir = "s3://" + BUCKET + "/" + prefix + "/shared/d/";
        List<String> warnings = warned.lines().filter(l -> l.contains("WARN")).toList();
        assertEquals(1, warnings.size(), warned);
        assertTrue(warnings.get(0).contains("S3 refused the deletes of 3 objects in one delete-batch (answered HTTP 200):"
                + " AccessDenied for 3 (" + dir + "f0, " + dir + "f1, " + dir + "f2); those changes wait here and are retried"),
                warnings.get(0));
        // stats says it as the last one said, and when it is asked again
        assertTrue(a.state().contains("the last write-back failed: " + said.replace("/f0:", "/f2:") + " (and 2 more refused);"
                + " next try in 0.5 s;"), a.state());
        assertEquals(List.of(3L, 0L), List.of(inBatches.getAsLong(), alone.getAsLong()), "each refused key asked once, in the batch");
        assertNull(inS3("shared/d/g"), "the batch's other key went");
        assertEquals(3, a.pendingChanges());
        clock.advance(Duration.ofMillis(500));
        assertThrows(IOException.class, a::flushDue);
        assertEquals(List.of(6L, 0L), List.of(inBatches.getAsLong(), alone.getAsLong()), "and once at its retry time");
        // each key's two refusals journaled (the last of its records) with S3's code for the key, not
        // the batch's 200 (which read as no refusal at all), and when it was first refused
        String journaled = "{\"code\":\"AccessDenied\",\"count\":2,\"first\":" + firstRefused + "}";
        stoppedAsByAKill(a, records -> assertEquals(List.of(journaled, journaled, journaled), records.stream()
                .filter(r -> r.has("refused") && r.get("refused").get("count").asInt() == 2).map(r -> r.get("refused").toString()).toList()));

        long before = inBatches.getAsLong();
        S3Storage again = host("a", clock);
        assertThrows(IOException.class, again::flushAll);
        assertEquals(List.of(before + 3, 0L), List.of(inBatches.getAsLong(), alone.getAsLong()), "once at the replay");
        server.refuseDeletesAsAPolicyDoes(name -> false, 0);
        clock.advance(Duration.ofSeconds(2));
        String log = logged(again::flushAll);
        assertTrue(log.contains("S3 store s3://" + BUCKET + "/" + prefix + ": the delete of s3://" + BUCKET + "/" + prefix
                + "/shared/d/f0 went up, after S3 refused it 3 times over 2.5 s"), "the journal's first refusal: " + log);
        assertNull(inS3("shared/d/f0"));
        assertEquals(0, again.pendingChanges());
    }

    /**
     * A directory removed with its files, whose deletes S3 refuses: its marker waits for them. It was
     * said as "1 directory marker waits for the deletes below them", naming no directory, and after
     * a restart as "1 delete (an old name's, a lock's release)" (a tester's finding, session 70).
     */
    @Test
    void aDirectorysMarkerWaitingForRefusedDeletesIsSaidAsTheDirectorysAndNamed() throws Exception {
        MutableClock clock = startClock();
        S3Storage a = host("a", clock);
        put(a, "/shared/d/f0", "x");
        put(a, "/shared/d/f1", "x");
        a.flushAll();
        server.refuseDeletesAsAPolicyDoes(name -> name.contains("/shared/d/f"), -1);
        a.removeFile(p("/shared/d/f0"));
        a.removeFile(p("/shared/d/f1"));
        a.removeDirectory(p("/shared/d"));

        IOException e = assertThrows(IOException.class, a::flushAll);
        assertTrue(e.getMessage().lines().anyMatch("1 directory's marker waits for the deletes in it: /shared/d"::equals), e.getMessage());
        stoppedAsByAKill(a, records -> { });
        String log = logged(() -> assertThrows(IOException.class, host("a", clock)::flushAll));
        assertTrue(log.contains("of the 3 changes from before the last stop, 0 went up, 2 refused by S3 and retried on their"
                + " own backoff, 1 directory's marker waiting for them"), log);
    }

    /**
     * Host a, {@code s}, stopped as a kill -9 leaves it: its journal as its last operation left it, not the
     * close's compaction, changed by {@code edit}.
     */
    private void stoppedAsByAKill(S3Storage s, java.util.function.Consumer<List<com.fasterxml.jackson.databind.node.ObjectNode>> edit)
            throws Exception {
        Path journal = journalOf(temp.resolve(prefix + "-a"));
        byte[] killed = Files.readAllBytes(journal);
        try {
            s.close();
        } catch (IOException stillRefused) {
            // its changes stay journaled
        }
        Files.write(journal, killed);
        List<com.fasterxml.jackson.databind.node.ObjectNode> records = new java.util.ArrayList<>();
        try (Journal j = new Journal(journal)) {
            records.addAll(j.read(bad -> fail(bad)));
            edit.accept(records);
            j.rewrite(records);
        }
    }

    /**
     * Host a's three files S3 answers 500 for (counted in {@code asked}) and one it takes, then a's
     * stop, its journal as the flush left it (not the close's compaction: a kill -9), changed by
     * {@code edit}.
     */
    private void refusedWith500BeforeAStop(MutableClock clock, AtomicInteger asked,
            java.util.function.Consumer<List<com.fasterxml.jackson.databind.node.ObjectNode>> edit) throws Exception {
        S3Storage a = host("a", clock);
        server.failPutsOf(name -> name.contains("/shared/long") && asked.incrementAndGet() > 0, -1);
        for (int i = 0; i < 3; i++) {
            put(a, "/shared/long" + i, "x" + i);
        }
        put(a, "/shared/ok", "y");
        assertThrows(IOException.class, a::flushAll);
        assertEquals("y", inS3("shared/ok"));
        assertTrue(asked.get() > 3, "the first try of each has the client's retries: " + asked.get());
        stoppedAsByAKill(a, edit);
    }

    /**
     * A journal an earlier version wrote says nothing of old names, claims or releases: its replay
     * stops at a refusal and everything made since waits behind it, as in that version, and status
     * calls the store failing until the file goes.
     */
    @Test
    void aRefusedChangeJournaledByAnEarlierVersionHoldsTheRestAndMakesTheStoreFailingUntilItGoes() throws Exception {
        MutableClock clock = startClock();
        S3Storage a = host("a", clock);
        refuse("/shared/refused");
        put(a, "/shared/refused", "x");
        put(a, "/shared/ok", "y");
        assertThrows(IOException.class, a::close, "the refused file stays in the journal");
        assertNull(a.failing(), "before the restart, other changes go up around it");
        writtenByAnEarlierVersion(temp.resolve(prefix + "-a"));

        S3Storage[] again = new S3Storage[1];
        String log = logged(() -> {
            again[0] = host("a", clock);
            put(again[0], "/shared/since", "made after the start");
            assertThrows(IOException.class, again[0]::flushAll);
            try (FileHandle h = again[0].open(p("/shared/fsynced"), EnumSet.of(OpenFlag.WRITE, OpenFlag.CREATE), 0644)) {
                h.write(ByteBuffer.wrap("x".getBytes(UTF_8)), 0);
                assertThrows(IOException.class, () -> h.sync(false), "fsync fails (EIO), as status says");
            }
        });
        assertTrue(log.contains("shared/refused") && log.contains("waits behind it") && !log.contains("every other goes on"),
                "the log says the rest waits, as it does after a start: " + log);
        assertNull(inS3("shared/since"), "what was made since waits behind it, as in the earlier version");
        assertNull(inS3("shared/fsynced"), "so does a file fsynced since");
        String failing = again[0].failing();
        assertTrue(failing != null && failing.contains("shared/refused") && failing.contains("fsync fails (EIO)")
                && !failing.contains("\n"), String.valueOf(failing));
        assertEquals(failing, again[0].unanswered(), "what status shows with it");

        again[0].removeFile(p("/shared/refused"));
        again[0].flushAll();
        assertNull(again[0].failing());
        assertEquals("made after the start", inS3("shared/since"));
    }

    /**
     * A conflict copy S3 refuses (a key too long for the bucket, a policy on the prefix) was retried
     * at every pass without a word: the refusal is said as any other upload's, the change waits, and
     * the copy goes up once S3 takes it. A tester's finding (session 76).
     */
    @Test
    void aConflictCopyS3RefusesIsSaidAndWaitsAsAnyRefusedUploadDoes() throws Exception {
        MutableClock clock = startClock();
        S3Storage a = host("a", clock);
        S3Storage b = host("b", clock);
        put(a, "/shared/x", "base");
        a.flushAll();
        assertEquals("base", new String(b.read(p("/shared/x")), UTF_8));
        put(a, "/shared/x", "theirs");
        a.flushAll();
        put(b, "/shared/x", "ours");
        refuse(".conflict-b-20260102T030405Z");
        String said = logged(() -> {
            IOException e = assertThrows(IOException.class, b::flushAll);
            assertTrue(e.getMessage().contains("conflict-b") && e.getMessage().contains("403"), e.getMessage());
        });
        assertTrue(said.contains("refused"), said);
        assertEquals(1, b.pendingChanges(), "this host's version waits");
        assertEquals("theirs", inS3("shared/x"));
        clock.advance(Duration.ofSeconds(10));
        String again = logged(() -> assertThrows(IOException.class, b::flushAll));
        assertFalse(again.contains("refused"), "said once, not at each retry: " + again);

        refuseNoMore();
        clock.advance(Duration.ofSeconds(10));
        b.flushAll();
        // named when the conflict was met: one name, its refusal said once, however many retries
        assertEquals("ours", inS3("shared/x.conflict-b-20260102T030405Z"));
        assertEquals("theirs", inS3("shared/x"));
        assertEquals(0, b.pendingChanges());
    }

    /** What {@code run} logged (slf4j-simple writes to System.err as it is at each line). */
    private static String logged(ThrowingRun run) throws Exception {
        java.io.PrintStream err = System.err;
        java.io.ByteArrayOutputStream said = new java.io.ByteArrayOutputStream();
        try {
            System.setErr(new java.io.PrintStream(said, true, UTF_8));
            run.run();
        } finally {
            System.setErr(err);
        }
        return said.toString(UTF_8);
    }

    private interface ThrowingRun {
        void run() throws Exception;
    }

    private static Path journalOf(Path cacheDir) throws IOException {
        try (java.util.stream.Stream<Path> all = Files.walk(cacheDir)) {
            return all.filter(f -> f.getFileName().toString().equals(S3Storage.JOURNAL_FILE)).findFirst().orElseThrow();
        }
    }

    /** The journal below {@code cacheDir} as chibifs wrote it before it journaled what waits for what. */
    private static void writtenByAnEarlierVersion(Path cacheDir) throws IOException {
        Path file = journalOf(cacheDir);
        List<com.fasterxml.jackson.databind.node.ObjectNode> records = new java.util.ArrayList<>();
        try (Journal j = new Journal(file)) {
            for (com.fasterxml.jackson.databind.node.ObjectNode r : j.read(bad -> { })) {
                r.remove(List.of("oldNames", "claimed", "release", "dependencies", "seq", "since"));
                records.add(r);
            }
            j.rewrite(records);
        }
    }

    @Test
    void aDirectorysFsyncFailsForWhatIsLeftBehindInItAloneOrWhileS3IsAway() throws Exception {
        // a tester's finding: one object refused anywhere failed every directory's fsync (EIO), and
        // SQLite in rollback mode, which fsyncs its directory at each commit, went ten times slower
        MutableClock clock = startClock();
        S3Storage a = host("a", clock);
        put(a, "/shared/old/f", "f");
        a.mkdir(p("/shared/kd"));
        a.flushAll();
        refuse("/shared/kd/refused", "/shared/kd/moved");
        put(a, "/shared/kd/refused", "r");
        put(a, "/shared/sq/t.db", "db");

        a.syncDirectory(p("/shared/sq"));
        assertEquals("db", inS3("shared/sq/t.db"), "what is in it went up");
        a.syncDirectory(p("/shared"));
        IOException there = assertThrows(IOException.class, () -> a.syncDirectory(p("/shared/kd")));
        assertTrue(there.getMessage().contains("shared/kd/refused") && there.getMessage().contains("403"), there.getMessage());

        // a rename's old name, which waits for its new one, is left behind in the old directory
        a.rename(p("/shared/old/f"), p("/shared/kd/moved"));
        assertThrows(IOException.class, () -> a.syncDirectory(p("/shared/old")));
        assertEquals("f", inS3("shared/old/f"));
        a.syncDirectory(p("/shared/sq"));

        put(a, "/shared/sq/t.db", "db2");
        server.stop();
        try {
            assertThrows(IOException.class, () -> a.syncDirectory(p("/shared/sq")), "S3 away fails every directory");
        } finally {
            server.start();
        }
        a.syncDirectory(p("/shared/sq"));
        assertEquals("db2", inS3("shared/sq/t.db"));

        refuseNoMore();
        a.syncDirectory(p("/shared/kd"));
        assertNull(inS3("shared/old/f"));
        assertEquals(0, a.pendingChanges());
    }

    @Test
    void aLockLetGoIsReleasedOnS3ThoughAnObjectElsewhereIsRefusedButNotOneBesideIt() throws Exception {
        // a tester's finding: with one refused file anywhere in the store, a lock let go stayed held
        // on S3, renewed for ever, and every other host got EAGAIN until the file was removed
        MutableClock clock = startClock();
        S3Storage a = host("a", clock);
        S3Storage b = host("b", clock);
        put(a, "/home/bob/db/t.db", "v1");
        a.flushAll();
        refuse("/home/alice/refused", "/home/bob/db/t.db-journal");
        put(a, "/home/alice/refused", "r");
        java.io.PrintStream err = System.err;
        java.io.ByteArrayOutputStream said = new java.io.ByteArrayOutputStream();
        try (FileHandle onA = a.open(p("/home/bob/db/t.db"), EnumSet.of(OpenFlag.READ, OpenFlag.WRITE), 0644);
             FileHandle onB = b.open(p("/home/bob/db/t.db"), EnumSet.of(OpenFlag.READ, OpenFlag.WRITE), 0644)) {
            assertTrue(onA.locks().tryLock(1, dev.chibifs.store.LockType.WRITE, 0, Long.MAX_VALUE));
            onA.write(ByteBuffer.wrap("v2".getBytes(UTF_8)), 0);
            // slf4j-simple writes to System.err as it is at each line
            System.setErr(new java.io.PrintStream(said, true, UTF_8));
            assertTrue(onA.locks().tryLock(1, dev.chibifs.store.LockType.UNLOCK, 0, Long.MAX_VALUE));
            assertTrue(onB.locks().tryLock(2, dev.chibifs.store.LockType.WRITE, 0, Long.MAX_VALUE),
                    "released: the refused file is in another directory");
            ByteBuffer got = ByteBuffer.allocate(16);
            int n = onB.read(got, 0);
            assertEquals("v2", new String(got.array(), 0, n, UTF_8), "what a changed under the lock went up first");
            assertTrue(onB.locks().tryLock(2, dev.chibifs.store.LockType.UNLOCK, 0, Long.MAX_VALUE));

            // a change beside the locked file refused (SQLite's journal) keeps the lease, as S3 away does
            assertTrue(onA.locks().tryLock(1, dev.chibifs.store.LockType.WRITE, 0, Long.MAX_VALUE));
            put(a, "/home/bob/db/t.db-journal", "j");
            assertTrue(onA.locks().tryLock(1, dev.chibifs.store.LockType.UNLOCK, 0, Long.MAX_VALUE));
            assertFalse(onB.locks().tryLock(3, dev.chibifs.store.LockType.WRITE, 0, Long.MAX_VALUE));
            refuse("/home/alice/refused");
            assertTrue(onA.locks().tryLock(1, dev.chibifs.store.LockType.UNLOCK, 0, Long.MAX_VALUE), "tried again");
            assertTrue(onB.locks().tryLock(4, dev.chibifs.store.LockType.WRITE, 0, Long.MAX_VALUE));
        } finally {
            System.setErr(err);
        }
        List<String> warned = said.toString(UTF_8).lines().filter(l -> l.contains("released with")).toList();
        assertEquals(1, warned.size(), said.toString(UTF_8));
        assertTrue(warned.get(0).contains("/home/bob/db/t.db released with 1 change S3 refuses: " + prefix
                + "/home/alice/refused;"), warned.get(0));
    }

    @Test
    void aDirectorysFsyncOrALockLetGoDoesNotAskS3AgainForWhatItRefusedElsewhereWhileTheBackoffRuns() throws Exception {
        // a tester's finding: each directory fsync (SQLite in rollback mode: one at each commit) asked
        // S3 again for an object it refuses elsewhere (s3proxy: a 500, with the client's retries), and
        // 20 transactions took 34 s, not 4
        MutableClock clock = startClock();
        S3Storage a = host("a", clock);
        S3Storage b = host("b", clock);
        put(a, "/home/bob/db/t.db", "v0");
        a.mkdir(p("/home/alice"));
        a.flushAll();
        AtomicInteger asked = new AtomicInteger();
        server.refusePuts(name -> name.endsWith("/home/alice/refused") && asked.incrementAndGet() > 0, -1);
        put(a, "/home/alice/refused", "r");
        clock.advance(Duration.ofSeconds(3));
        assertThrows(IOException.class, a::flushDue);
        assertEquals(1, asked.get());

        long puts = a.requests().get("put");
        for (int i = 1; i <= 5; i++) {
            put(a, "/home/bob/db/t.db", "v" + i);
            a.syncDirectory(p("/home/bob/db"));
        }
        assertEquals(5, a.requests().get("put") - puts, "its own uploads alone: " + a.requests());
        assertEquals(1, asked.get(), "the refused object was not asked for again");
        assertEquals("v5", inS3("home/bob/db/t.db"));
        WriteBack.Unsent unsent = a.pushAll(prefix + "/home/bob/db/");
        assertEquals(java.util.Set.of(prefix + "/home/alice/refused"), unsent.refused(), "still said as refused");
        assertTrue(unsent.refusalsOnly() && unsent.failure().getMessage().contains("403"), unsent.failure().getMessage());
        assertEquals(1, a.pendingChanges());

        try (FileHandle onA = a.open(p("/home/bob/db/t.db"), EnumSet.of(OpenFlag.READ, OpenFlag.WRITE), 0644);
             FileHandle onB = b.open(p("/home/bob/db/t.db"), EnumSet.of(OpenFlag.READ, OpenFlag.WRITE), 0644)) {
            assertTrue(onA.locks().tryLock(1, dev.chibifs.store.LockType.WRITE, 0, Long.MAX_VALUE));
            onA.write(ByteBuffer.wrap("v6".getBytes(UTF_8)), 0);
            assertTrue(onA.locks().tryLock(1, dev.chibifs.store.LockType.UNLOCK, 0, Long.MAX_VALUE));
            assertTrue(onB.locks().tryLock(2, dev.chibifs.store.LockType.WRITE, 0, Long.MAX_VALUE), "released");
            assertTrue(onB.locks().tryLock(2, dev.chibifs.store.LockType.UNLOCK, 0, Long.MAX_VALUE));
        }
        assertEquals("v6", inS3("home/bob/db/t.db"));
        assertEquals(1, asked.get(), "nor for the lock let go");

        // asked again: by its own directory's fsync, and once its retry time has come; the flusher
        // too waits for that time (its passes run on for the rest)
        IOException there = assertThrows(IOException.class, () -> a.syncDirectory(p("/home/alice")));
        assertTrue(there.getMessage().contains("home/alice/refused") && there.getMessage().contains("403"), there.getMessage());
        assertEquals(2, asked.get());
        a.syncDirectory(p("/home/bob/db"));
        assertEquals(2, asked.get());
        assertThrows(IOException.class, a::flushDue);
        assertEquals(2, asked.get());
        clock.advance(Duration.ofSeconds(6));
        a.syncDirectory(p("/home/bob/db"));
        assertEquals(3, asked.get());
        assertThrows(IOException.class, a::flushDue);
        assertEquals(3, asked.get());

        refuseNoMore();
        clock.advance(Duration.ofSeconds(6));
        a.flushDue();
        assertEquals("r", inS3("home/alice/refused"));
        assertEquals(0, a.pendingChanges());
    }

    @Test
    void aFileWhoseChangeWasRefusedThenRemovedIsDeletedByTheNextDirectorysFsync() throws Exception {
        // what S3 refused of it was its upload, not its delete: the delete is asked for
        MutableClock clock = startClock();
        S3Storage a = host("a", clock);
        put(a, "/home/alice/f", "v1");
        put(a, "/home/bob/t.db", "db");
        a.flushAll();
        refuse("/home/alice/f");
        put(a, "/home/alice/f", "v2");
        clock.advance(Duration.ofSeconds(3));
        assertThrows(IOException.class, a::flushDue);

        a.removeFile(p("/home/alice/f"));
        a.syncDirectory(p("/home/bob"));
        assertNull(inS3("home/alice/f"));
        assertEquals(0, a.pendingChanges());
    }

    @Test
    void anotherChangeGoesUpAtItsDebounceWhileAnObjectKeepsBeingRefused() throws Exception {
        // the flusher backed its whole pass off for one refused object (0.5 s doubling to 5 s), so
        // every other change of the store went up to 5 s past its debounce; the object now has a
        // retry time of its own, and the flusher's ticks go on for the rest. Its listings held for
        // the test: a listing ended the backoff (as if S3 had been away), which hid the delay
        MutableClock clock = startClock();
        S3Storage a = open(S3Options.defaults(temp.resolve(prefix + "-a"), server.env()).withHost("a")
                .withClock(clock, false).withValidity(Duration.ofHours(1)));
        a.mkdir(p("/shared"));
        a.flushAll();
        List<Long> askedAt = new java.util.concurrent.CopyOnWriteArrayList<>();
        long start = clock.millis();
        server.refusePuts(name -> name.endsWith("/shared/refused") && askedAt.add(clock.millis() - start), -1);
        put(a, "/shared/refused", "r");
        long closedAt = -1;
        long upAt = -1;
        for (long t = 0; t <= 20_000; t += 100) {
            if (t == 12_600) {
                put(a, "/shared/later", "l");
                closedAt = t;
            }
            a.writeBack.tick();
            if (closedAt >= 0 && upAt < 0 && a.pendingChanges() == 1) {
                upAt = t;
            }
            clock.advance(Duration.ofMillis(100));
        }
        assertEquals("l", inS3("shared/later"));
        assertEquals(S3Options.DEFAULT_FLUSH_AFTER.toMillis(), upAt - closedAt, "up at its debounce");
        assertEquals(List.of(2_000L, 2_500L, 3_500L, 5_500L, 9_500L, 14_500L, 19_500L), askedAt,
                "the refused object is asked for at its own backoff, not at every tick");
    }

    @Test
    void aRefusedObjectIsSaidOnceInTheLogAndReachableAgainOnlyAfterS3WasAway() throws Exception {
        // the "changes wait here and are retried" warning and "reachable again" alternated after every
        // listing for as long as one key stayed refused: one refusal is no outage
        MutableClock clock = startClock();
        S3Storage a = open(S3Options.defaults(temp.resolve(prefix + "-a"), server.env()).withHost("a")
                .withClock(clock, false).withValidity(Duration.ZERO));
        a.mkdir(p("/shared"));
        a.flushAll();
        java.io.PrintStream err = System.err;
        java.io.ByteArrayOutputStream said = new java.io.ByteArrayOutputStream();
        try {
            // slf4j-simple writes to System.err as it is at each line
            System.setErr(new java.io.PrintStream(said, true, UTF_8));
            refuse("/shared/refused");
            put(a, "/shared/refused", "r");
            for (int i = 0; i < 4; i++) {
                clock.advance(Duration.ofSeconds(6));
                assertThrows(IOException.class, a::flushDue);
                a.list(p("/shared")); // a listing that gets through
            }
            assertEquals(1, said.toString(UTF_8).lines().filter(l -> l.contains("shared/refused")).count(), said.toString(UTF_8));
            assertTrue(a.state().contains("the last write-back failed: ") && a.state().contains("403"), a.state());

            refuseNoMore();
            clock.advance(Duration.ofSeconds(6));
            a.flushDue();
            put(a, "/shared/refused", "r2");
            refuse("/shared/refused");
            clock.advance(Duration.ofSeconds(6));
            assertThrows(IOException.class, a::flushDue);
            assertEquals(2, said.toString(UTF_8).lines().filter(l -> l.contains("shared/refused") && l.contains(" WARN ")).count(),
                    "said again once refused again: " + said.toString(UTF_8));
            assertTrue(said.toString(UTF_8).contains("(/shared/refused) went up, after S3 refused it 4 times over 24.0 s"),
                    "and said once between that it went up: " + said.toString(UTF_8));
            assertFalse(said.toString(UTF_8).contains("reachable again"), said.toString(UTF_8));

            put(a, "/shared/other", "o");
            server.stop();
            try {
                clock.advance(Duration.ofSeconds(6));
                assertThrows(IOException.class, a::flushDue);
            } finally {
                server.start();
            }
            clock.advance(Duration.ofSeconds(6));
            assertThrows(IOException.class, a::flushDue, "the refused object still is");
            assertEquals("o", inS3("shared/other"));
        } finally {
            System.setErr(err);
        }
        List<String> lines = said.toString(UTF_8).lines().toList();
        assertEquals(1, lines.stream().filter(l -> l.contains("changes wait here and are retried")).count(), String.join("\n", lines));
        assertEquals(1, lines.stream().filter(l -> l.contains("reachable again")).count(), String.join("\n", lines));
    }
}
