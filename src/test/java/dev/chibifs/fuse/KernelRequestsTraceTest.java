package dev.chibifs.fuse;

import dev.chibifs.router.Router;
import dev.chibifs.store.MemoryStorage;
import dev.chibifs.sys.Linux;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static dev.chibifs.fuse.FakeKernel.body;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

/**
 * The kernel sends RELEASE and RELEASEDIR itself, with uid 0 and pid 0: on a uid-mapped mount
 * they were traced as root's caller (SYSTEM, GUEST, or whoever uid 0 maps to), so
 * {@code trace --context alice} left out alice's own closes.
 */
@Timeout(20)
class KernelRequestsTraceTest {

    private static final int ALICE = 4311;

    private FakeKernel kernel;
    private FuseSession session;
    private RequestTrace.Listener trace;

    @BeforeEach
    void start() throws Exception {
        Router router = Router.of(new MemoryStorage());
        router.createNamespace(List.of("alice"));
        FuseFileSystem fs = new FuseFileSystem(router, CallerResolver.uidMap(Map.of((long) ALICE, "alice"), 0L), 0, 0,
                FuseFileSystem.Timeouts.of(1, 1, 0), true);
        RequestStats stats = new RequestStats();
        kernel = new FakeKernel();
        session = kernel.startSession(fs, stats);
        trace = stats.trace().listen(100);
    }

    @AfterEach
    void stop() {
        trace.close();
        kernel.close();
        session.ended().join();
    }

    /** The next traced event of {@code opcode}. */
    private RequestTrace.Event next(String opcode) throws InterruptedException {
        for (RequestTrace.Event e = trace.next(5, TimeUnit.SECONDS); e != null; e = trace.next(5, TimeUnit.SECONDS)) {
            if (e.opcode().equals(opcode)) {
                return e;
            }
        }
        throw new AssertionError("no " + opcode + " traced within 5 s");
    }

    @Test
    void aFilesReleaseIsItsOpenersAndADirectorysTheKernels() throws Exception {
        long home = kernel.call(FuseProtocol.LOOKUP, FuseProtocol.ROOT_ID, ALICE, body().name("home")).int64(0);
        long dir = kernel.call(FuseProtocol.LOOKUP, home, ALICE, body().name("alice")).int64(0);
        FakeKernel.Reply created = kernel.call(FuseProtocol.CREATE, dir, ALICE,
                body().int32(Linux.O_WRONLY | Linux.O_CREAT).int32(0100644).int32(022).int32(0).name("notes"));
        assertEquals(0, created.error());
        long node = created.int64(0);
        long fh = created.int64(FuseProtocol.ENTRY_OUT);
        assertEquals("alice", next("CREATE").caller());

        kernel.pid = 0; // the kernel's own requests: no process, uid 0
        assertEquals(0, kernel.call(FuseProtocol.RELEASE, node, 0, body().int64(fh).int32(0).int32(0).int64(0)).error());
        RequestTrace.Event release = next("RELEASE");
        assertEquals("alice", release.caller(), "uid 0 is SYSTEM here, but the file was alice's");
        assertEquals(0, release.pid());

        kernel.call(FuseProtocol.RELEASEDIR, dir, 0, body().int64(12345).int32(0).int32(0).int64(0));
        assertEquals(RequestTrace.KERNEL, next("RELEASEDIR").caller());

        // pid 0 alone is no sign of the kernel: a daemon in a pid namespace of its own gets it for every outside request
        kernel.call(FuseProtocol.GETATTR, dir, 0, body().int32(0).int32(0).int64(0));
        RequestTrace.Event getattr = next("GETATTR");
        assertNotNull(getattr);
        assertEquals("SYSTEM", getattr.caller());
    }
}
