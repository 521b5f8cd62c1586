package dev.chibifs.fuse;

import dev.chibifs.router.Router;
import dev.chibifs.store.MemoryStorage;
import dev.chibifs.sys.Linux;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static dev.chibifs.fuse.FakeKernel.body;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The requests a session traces ({@code chibifs trace}), through a fake kernel against
 * {@link MemoryStorage} on a uid-mapped session: who asked, about what, and the answer the
 * process got.
 */
@Timeout(20)
class RequestTraceTest {

    private static final int ALICE = 1001;
    private static final int BOB = 1002;

    private final MemoryStorage store = new MemoryStorage();
    private final RequestStats stats = new RequestStats();
    private FakeKernel kernel;
    private FuseSession session;

    @BeforeEach
    void mount() throws Exception {
        Router router = Router.of(store);
        router.createNamespace(List.of("alice", "bob"));
        FuseFileSystem fs = new FuseFileSystem(router, CallerResolver.uidMap(Map.of((long) ALICE, "alice", (long) BOB, "bob"), null),
                1000, 1000, FuseFileSystem.Timeouts.of(30, 30, 30), true);
        kernel = new FakeKernel();
        // the requests come from this JVM's main thread, whose program is java
        kernel.pid = (int) ProcessHandle.current().pid();
        session = kernel.startSession(fs, stats);
    }

    @AfterEach
    void stop() {
        kernel.close();
        session.ended().join();
    }

    private long lookup(int uid, long parent, String name) throws Exception {
        FakeKernel.Reply r = kernel.call(FuseProtocol.LOOKUP, parent, uid, body().name(name));
        assertEquals(0, r.error(), name);
        return r.int64(0);
    }

    private FakeKernel.Reply create(int uid, long parent, String name) throws Exception {
        return kernel.call(FuseProtocol.CREATE, parent, uid,
                body().int32(Linux.O_WRONLY | Linux.O_CREAT).int32(0100644).int32(022).int32(0).name(name));
    }

    /** What the listener has now, each as "context opcode paths [detail]: answer". */
    private static List<String> taken(RequestTrace.Listener events) throws InterruptedException {
        List<String> lines = new ArrayList<>();
        RequestTrace.Event e;
        while ((e = events.next(0, TimeUnit.MILLISECONDS)) != null) {
            assertEquals(ProcessHandle.current().pid(), e.pid(), "the process that asked, from the request's header");
            assertEquals("java", e.program(), "its program, while it waits for the answer");
            assertTrue(e.micros() >= 0);
            String answer = e.waiting() ? "waiting" : e.errno() == 0 ? "ok"
                    : Linux.errnoName(e.errno()) + (e.refusedBy().isEmpty() ? "" : " " + e.refusedBy());
            lines.add(e.caller() + " " + e.opcode() + " " + String.join(" -> ", e.target().paths())
                    + (e.target().detail().isEmpty() ? "" : " [" + e.target().detail() + "]") + ": " + answer);
        }
        return lines;
    }

    @Test
    void eachRequestShowsWhoAskedWhatItWasAboutAndTheAnswerTheProcessGot() throws Exception {
        try (RequestTrace.Listener events = stats.trace().listen(100)) {
            long shared = lookup(ALICE, FuseProtocol.ROOT_ID, "shared");
            // a name found missing is a success on the wire (a negative entry), ENOENT to the process
            assertEquals(0, kernel.call(FuseProtocol.LOOKUP, shared, ALICE, body().name("notes.md")).int64(0));
            FakeKernel.Reply made = create(ALICE, shared, "notes.md");
            long file = made.int64(0);
            long fh = made.int64(FuseProtocol.ENTRY_OUT);
            byte[] data = "one\n".getBytes(StandardCharsets.UTF_8);
            assertEquals(0, kernel.call(FuseProtocol.WRITE, file, ALICE,
                    body().int64(fh).int64(0).int32(data.length).int32(0).int64(0).int32(0).int32(0).bytes(data)).error());
            assertEquals(0, kernel.call(FuseProtocol.RENAME2, shared, ALICE,
                    body().int64(shared).int32(0).int32(0).name("notes.md").name("tasks.md")).error());
            assertEquals(0, kernel.call(FuseProtocol.OPEN, file, BOB, body().int32(Linux.O_RDWR | Linux.O_APPEND).int32(0)).error());
            assertEquals(0, kernel.call(FuseProtocol.SETXATTR, file, BOB,
                    body().int32(1).int32(0).name("user.seen").bytes(new byte[]{'y'})).error());
            long home = lookup(BOB, FuseProtocol.ROOT_ID, "home");
            long alices = lookup(BOB, home, "alice");
            assertEquals(-Linux.EACCES, create(BOB, alices, "x").error());
            assertEquals(-Linux.EPERM, kernel.call(FuseProtocol.SYMLINK, shared, ALICE, body().name("out").name("/etc/passwd")).error());

            assertEquals(List.of(
                    "alice LOOKUP /shared: ok",
                    "alice LOOKUP /shared/notes.md: ENOENT",
                    "alice CREATE /shared/notes.md [O_WRONLY|O_CREAT]: ok",
                    "alice WRITE /shared/notes.md [4 bytes at 0]: ok",
                    "alice RENAME2 /shared/notes.md -> /shared/tasks.md: ok",
                    "bob OPEN /shared/tasks.md [O_RDWR|O_APPEND]: ok",
                    "bob SETXATTR /shared/tasks.md [user.seen]: ok",
                    "bob LOOKUP /home: ok",
                    "bob LOOKUP /home/alice: ok",
                    "bob CREATE /home/alice/x [O_WRONLY|O_CREAT]: EACCES policy",
                    "alice SYMLINK /shared/out [-> /etc/passwd]: EPERM --symlinks"), taken(events));
        }
    }

    /** A lock request of {@code owner} on {@code node}'s handle {@code fh}, the whole file (fuse_lk_in). */
    private static FakeKernel.Body lockBody(long fh, long owner, int type) {
        return body().int64(fh).int64(owner).int64(0).int64(Long.MAX_VALUE).int32(type).int32(0).int32(0).int32(0);
    }

    @Test
    void aLockWaitShowsAsItBeginsAndAgainAsItEnds() throws Exception {
        long shared = lookup(ALICE, FuseProtocol.ROOT_ID, "shared");
        FakeKernel.Reply made = create(ALICE, shared, "db");
        long file = made.int64(0);
        long fh = made.int64(FuseProtocol.ENTRY_OUT);
        try (RequestTrace.Listener events = stats.trace().listen(100)) {
            assertEquals(0, kernel.call(FuseProtocol.SETLK, file, ALICE, lockBody(fh, 1, Linux.F_WRLCK)).error());
            long granted = kernel.send(FuseProtocol.SETLKW, file, BOB, lockBody(fh, 2, Linux.F_WRLCK));
            // a grant is answered by the notice writer's thread: its reply may come before its event
            RequestTrace.Event first = events.next(5, TimeUnit.SECONDS);
            RequestTrace.Event waiting = events.next(5, TimeUnit.SECONDS);
            assertTrue(waiting.waiting(), "bob's wait is traced as it begins");
            long unlock = kernel.send(FuseProtocol.SETLK, file, ALICE, lockBody(fh, 1, Linux.F_UNLCK));
            // the unlock tries bob's wait at once, on another thread: either reply may come first
            java.util.Map<Long, Integer> answered = new java.util.HashMap<>();
            for (int i = 0; i < 2; i++) {
                FakeKernel.Reply r = kernel.reply();
                answered.put(r.unique(), r.error());
            }
            assertEquals(java.util.Map.of(unlock, 0, granted, 0), answered);
            long interrupted = kernel.send(FuseProtocol.SETLKW, file, ALICE, lockBody(fh, 1, Linux.F_WRLCK));
            kernel.send(FuseProtocol.INTERRUPT, 0, body().int64(interrupted));
            FakeKernel.Reply eintr = kernel.reply();
            assertEquals(interrupted, eintr.unique());
            assertEquals(-Linux.EINTR, eintr.error());
            List<String> rest = new ArrayList<>();
            RequestTrace.Event e;
            while (rest.size() < 4 && (e = events.next(5, TimeUnit.SECONDS)) != null) {
                rest.add(e.caller() + " " + e.opcode() + " " + (e.waiting() ? "waiting" : e.errno() == 0 ? "ok" : Linux.errnoName(e.errno())));
            }
            assertEquals("alice SETLK /shared/db", first.caller() + " " + first.opcode() + " " + first.target().paths().get(0));
            // a wait's end is traced by the wait's thread, the other requests by the worker: only each
            // wait's own order is certain
            assertEquals(java.util.Set.of("alice SETLK ok", "bob SETLKW ok", "alice SETLKW waiting", "alice SETLKW EINTR"),
                    java.util.Set.copyOf(rest), rest.toString());
            assertTrue(rest.indexOf("alice SETLKW waiting") < rest.indexOf("alice SETLKW EINTR"), rest.toString());
        }
    }

    @Test
    void requestsAreTracedOnlyWhileSomeoneListens() throws Exception {
        RequestTrace trace = stats.trace();
        assertFalse(trace.listened());
        lookup(ALICE, FuseProtocol.ROOT_ID, "shared");
        RequestTrace.Listener events = trace.listen(100);
        lookup(ALICE, FuseProtocol.ROOT_ID, "home");
        events.close();
        assertFalse(trace.listened(), "nobody listens: workers describe nothing");
        lookup(ALICE, FuseProtocol.ROOT_ID, "sys");
        assertEquals(List.of("alice LOOKUP /home: ok"), taken(events));
    }

    @Test
    void aListenerThatFallsBehindLosesTheNewestAndIsToldHowMany() throws Exception {
        try (RequestTrace.Listener events = stats.trace().listen(2)) {
            for (String name : List.of("shared", "home", "sys", "shared", "home")) {
                lookup(ALICE, FuseProtocol.ROOT_ID, name);
            }
            assertEquals(3, events.lost());
            assertEquals(0, events.lost(), "counted once");
            assertEquals(List.of("alice LOOKUP /shared: ok", "alice LOOKUP /home: ok"), taken(events));
            lookup(ALICE, FuseProtocol.ROOT_ID, "sys");
            assertEquals(List.of("alice LOOKUP /sys: ok"), taken(events), "room again once taken");
        }
    }

    @Test
    void theKernelsForgetsAreNotTraced() throws Exception {
        try (RequestTrace.Listener events = stats.trace().listen(100)) {
            long shared = lookup(ALICE, FuseProtocol.ROOT_ID, "shared");
            kernel.send(FuseProtocol.FORGET, shared, body().int64(1));
            // requests are served in order by the one worker: the getattr's event comes after the forget's would
            assertEquals(0, kernel.call(FuseProtocol.GETATTR, FuseProtocol.ROOT_ID, ALICE, body().int32(0).int32(0).int64(0)).error());
            assertEquals(List.of("alice LOOKUP /shared: ok", "alice GETATTR /: ok"), taken(events));
        }
        assertTrue(RequestTrace.opcodes().contains("LOOKUP"));
        assertFalse(RequestTrace.opcodes().contains("FORGET"));
    }
}
