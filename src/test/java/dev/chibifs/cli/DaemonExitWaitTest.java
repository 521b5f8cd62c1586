package dev.chibifs.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.chibifs.store.Storage.Uploads;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.LongFunction;
import org.junit.jupiter.api.Test;

/** umount's wait for a daemon that uploads before it exits, on a clock of the test's own. */
class DaemonExitWaitTest {

    private static final Path MP = Path.of("/mnt/s3");
    private static final long GIB = 1L << 30;

    /** A daemon that exits at {@code exitsAt} ms (never: Long.MAX_VALUE) and reports {@code uploads} by the time. */
    private static final class Daemon {
        long now;
        final long exitsAt;
        final LongFunction<Uploads> uploads;
        final List<String> said = new ArrayList<>();
        final List<Long> saidAt = new ArrayList<>();

        /** Why a store of the daemon fails until someone acts, as it says; null: none does. */
        String failing;
        /** Why a store's last write-back failed, as it says; null: none did. */
        String troubled;
        /** What it said waits to go up before the unmount; null: not asked. */
        Uploads before;

        Daemon(long exitsAt, LongFunction<Uploads> uploads) {
            this.exitsAt = exitsAt;
            this.uploads = uploads;
        }

        String await() {
            return new DaemonExitWait(millis -> {
                now += millis;
                return now >= exitsAt;
            }, () -> uploads.apply(now), () -> failing, () -> troubled, () -> now, line -> {
                said.add(line);
                saidAt.add(now);
            }).await(MP, 42, before);
        }
    }

    @Test
    void aDaemonUploadingPastTheQuietLimitIsWaitedForAndSaysHowMuchIsLeft() {
        // a tester's 1.5 GiB file: umount gave up at 30 s while it went up (done 20 s later)
        long exits = 200_000;
        Daemon d = new Daemon(exits, t -> new Uploads(1, 1536L << 20, 100L + t * 8_000, 0));
        assertNull(d.await(), "waited until it exited");
        assertEquals(exits, d.now);
        assertTrue(d.said.get(0).contains("its daemon (pid 42) sends 1 change (1.5 GiB) to S3 before it exits"), d.said.get(0));
        for (int i = 1; i < d.saidAt.size(); i++) {
            assertTrue(d.saidAt.get(i) - d.saidAt.get(i - 1) >= DaemonExitWait.SAY_EVERY_MILLIS, "one line at most every 5 s");
        }
        assertTrue(d.said.size() >= 30, "and not only once: " + d.said.size());
        assertTrue(d.said.get(d.said.size() - 1).endsWith(DaemonExitWait.size(8_000L * (d.saidAt.get(d.said.size() - 1) - 1_000))
                + " sent since the unmount"), d.said.get(d.said.size() - 1));
    }

    @Test
    void anUploadThatSendsNothingForTheStallLimitEndsTheWaitSayingSo() {
        long stops = 50_000;
        Daemon d = new Daemon(Long.MAX_VALUE, t -> new Uploads(2, 3 * GIB, Math.min(t, stops) * 1_000, 0));
        String why = d.await();
        assertEquals(stops + DaemonExitWait.STALL_SECONDS * 1000, d.now, "120 s after the last byte sent");
        assertTrue(why.startsWith("unmounted /mnt/s3, but its daemon (pid 42) has sent nothing for 120 s with 2 changes"
                + " (3.0 GiB) still to send: the upload has stalled"), why);
        assertTrue(why.contains("The daemon goes on"), why);
    }

    /**
     * A large file is read whole and hashed before its first byte goes (its object's metadata carries
     * the SHA-256): 3 GiB took 10 s here, so past about 40 GiB the wait said "stalled" while it hashed.
     */
    @Test
    void aFileReadAndHashedBeforeItGoesIsProgressToo() {
        long hashedBy = 300_000; // 5 minutes of reading, nothing sent, then it goes up in 100 s
        long exits = hashedBy + 100_000;
        Daemon d = new Daemon(exits, t -> new Uploads(1, 90 * GIB, Math.max(0, t - hashedBy) * 1_000_000,
                Math.min(t, hashedBy) * 300_000));
        assertNull(d.await(), "waited until it exited");
        assertEquals(exits, d.now);
        String hashing = d.said.get(20);
        assertTrue(hashing.endsWith("0.0 MiB sent since the unmount (" + DaemonExitWait.size(300_000L * d.saidAt.get(20)
                - 300_000L * d.saidAt.get(0)) + " read and hashed)"), hashing);
    }

    @Test
    void fewerChangesLeftIsProgressToo() {
        // small files: each goes up in one PUT, counted as sent as it ends
        Daemon d = new Daemon(Long.MAX_VALUE, t -> new Uploads((int) Math.max(1, 1000 - t / 1000), 1000, 0, 0));
        d.await();
        assertEquals(999_000 + DaemonExitWait.STALL_SECONDS * 1000, d.now);
    }

    @Test
    void aDaemonWithNothingToUploadHasTheQuietLimit() {
        Daemon silent = new Daemon(Long.MAX_VALUE, t -> null);
        assertEquals("unmounted /mnt/s3, but its daemon (pid 42) has not exited after 30 s", silent.await());
        assertEquals(DaemonExitWait.QUIET_SECONDS * 1000, silent.now);
        assertEquals(List.of(), silent.said);

        Daemon done = new Daemon(Long.MAX_VALUE, t -> new Uploads(t < 10_000 ? 1 : 0, 5, t < 10_000 ? 0 : 5, 0));
        assertEquals("unmounted /mnt/s3, but its daemon (pid 42) has not exited after 30 s with nothing left to send",
                done.await());
        assertEquals(10_000 + DaemonExitWait.QUIET_SECONDS * 1000, done.now, "30 s from its last upload");
    }

    /**
     * After a restart with a refused upload in the journal, umount said the daemon "uploads 1 change
     * before it exits" and exited 0 quietly, while the daemon gave up and kept it journaled.
     */
    @Test
    void aDaemonThatExitsWithAChangeItCannotUploadSaysWhatItLeft() {
        Daemon d = new Daemon(10_000, t -> new Uploads(1, 2, 0, 0));
        d.failing = "a change from before this start does not go up (S3 put ns/x: HTTP 500)";
        assertNull(d.await());
        assertTrue(d.said.get(0).endsWith("its daemon (pid 42) cannot send 1 change (0.0 MiB) to S3 before it exits: " + d.failing),
                d.said.get(0));
        assertEquals("chibifs: /mnt/s3 is unmounted, but its daemon (pid 42) exited with 1 change (0.0 MiB) not sent to S3,"
                + " kept in its cache directory for the next mount of the store: " + d.failing, d.said.get(d.said.size() - 1));

        Daemon done = new Daemon(10_000, t -> new Uploads(t < 5_000 ? 1 : 0, 2, t < 5_000 ? 0 : 2, 0));
        assertNull(done.await());
        assertTrue(done.said.stream().noneMatch(l -> l.contains("exited with")), done.said.toString());
    }

    /** A crash tester's S3 hang: umount printed the same "tries to send" line 12 times in a minute. */
    @Test
    void aFailureThatStaysTheSameIsSaidOnce() {
        Daemon d = new Daemon(60_000, t -> new Uploads(6, 6, 0, 0));
        d.troubled = "cannot reach http://127.0.0.1:43137: Read timed out";
        assertNull(d.await());
        assertEquals(2, d.said.size(), "the line once, then what the daemon left: " + d.said);
        assertTrue(d.said.get(0).contains("tries to send 6 changes"), d.said.get(0));
    }

    /**
     * A change S3 refused while the daemon ran (a 255-byte name): umount said the daemon "uploads 1
     * change before it exits", and nothing more, while the daemon kept it journaled for the next start.
     */
    @Test
    void aDaemonWhoseLastWriteBackFailedSaysWhatFailsAgainStaysJournaled() {
        Daemon d = new Daemon(3_000, t -> new Uploads(1, 2, 0, 0));
        d.troubled = "S3 put ns/yyy: HTTP 500";
        assertNull(d.await());
        assertEquals("chibifs: /mnt/s3 is unmounted; its daemon (pid 42) tries to send 1 change (0.0 MiB) to S3 before it"
                + " exits, but its last write-back failed (" + d.troubled + "): what fails again stays in its cache"
                + " directory for the next mount", d.said.get(0));
        assertTrue(d.said.stream().noneMatch(l -> l.contains("sends 1 change")), d.said.toString());
        assertEquals("chibifs: /mnt/s3 is unmounted; its daemon (pid 42) exited with 1 change (0.0 MiB) to send to S3 when"
                + " last asked, its last write-back having failed: what failed again at its close is kept in its cache"
                + " directory for the next mount of the store (its log says): " + d.troubled, d.said.get(d.said.size() - 1));
    }

    /**
     * A tester's finding (storefs2, session 67): a daemon whose cache directory's file system had
     * failed exited at once after the unmount, before umount first asked it, and umount exited 0
     * saying nothing while 2 changes stayed journaled. What it said before the unmount is used.
     */
    @Test
    void aDaemonThatExitsBeforeItIsAskedSaysWhatItKeptJournaledAsItSaidBeforeTheUnmount() {
        Daemon d = new Daemon(0, t -> null);
        d.before = new Uploads(2, 10, 0, 0);
        d.failing = "its cache directory /c answers EIO (Input/output error): every change fails, and 2 change(s)"
                + " to send wait there";
        assertNull(d.await());
        assertEquals(List.of("chibifs: /mnt/s3 is unmounted, but its daemon (pid 42) exited with 2 changes (0.0 MiB) not sent"
                + " to S3, kept in its cache directory for the next mount of the store: " + d.failing), d.said);
    }
}
