package dev.chibifs.fuse;

import dev.chibifs.policy.Caller;
import dev.chibifs.router.Router;
import dev.chibifs.store.LocalStorage;
import dev.chibifs.sys.Linux;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import static dev.chibifs.fuse.FakeKernel.body;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * In a user namespace CAP_SYS_ADMIN is not the initial namespace's: the daemon must not ask for
 * passthrough there, and where the kernel refuses its backing files anyway, it serves every open
 * and says so, rather than report passthrough while every open falls back.
 */
@Timeout(20)
class PassthroughRefusedTest {

    private static final String CAP_ALL = "000001ffffffffff";
    private static final String CAP_NONE = "0000000000000000";

    @Test
    void passthroughOnlyWithCapSysAdminInTheInitialUserNamespace() {
        assertNull(FuseDaemon.whyNoPassthrough(CAP_ALL, "         0          0 4294967295\n"), "root on the host");
        String unshared = FuseDaemon.whyNoPassthrough(CAP_ALL, "         0       4311          1\n");
        assertNotNull(unshared, "root of unshare -U -r");
        assertTrue(unshared.contains("user namespace") && unshared.contains("0 4311 1"), unshared);
        assertNotNull(FuseDaemon.whyNoPassthrough(CAP_ALL, "0 100000 65536\n"), "a rootless container");
        assertNotNull(FuseDaemon.whyNoPassthrough(CAP_ALL, "0 0 4294967295\n1 1 1\n"), "not the identity map alone");
        assertNotNull(FuseDaemon.whyNoPassthrough(CAP_ALL, "0 0 4294967294\n"), "almost the identity map");
        assertNotNull(FuseDaemon.whyNoPassthrough(CAP_NONE, "0 0 4294967295\n"), "no CAP_SYS_ADMIN");
        assertNotNull(FuseDaemon.whyNoPassthrough(null, "0 0 4294967295\n"), "capabilities unknown");
        assertNotNull(FuseDaemon.whyNoPassthrough("zz", "0 0 4294967295\n"), "capabilities unreadable");
    }

    @TempDir
    Path home;

    private FakeKernel kernel;
    private FuseSession session;

    @AfterEach
    void stop() {
        if (kernel != null) {
            kernel.close();
            session.ended().join();
        }
    }

    @Test
    void theFirstRefusedBackingFileTurnsTheMountToServed() throws Exception {
        Router router = Router.of(new LocalStorage(home));
        router.createNamespace(List.of("alice"));
        Files.writeString(home.resolve("shared/a"), "a\n");
        Files.writeString(home.resolve("shared/b"), "b\n");
        FuseFileSystem fs = new FuseFileSystem(router, CallerResolver.fixed(Caller.context("alice")), 1000, 1000,
                FuseFileSystem.Timeouts.of(1, 1, 0), true);
        AtomicInteger told = new AtomicInteger();
        fs.backingFiles.whenPassthroughRefused(told::incrementAndGet);
        kernel = new FakeKernel();
        session = new FuseSession(kernel, fs, new FuseSession.Settings(1 << 20, 1, true, true, false), new RequestStats());
        session.start();
        FakeKernel.Reply init = kernel.init(FuseProtocol.DO_READDIRPLUS | FuseProtocol.INIT_EXT | FuseProtocol.PASSTHROUGH);
        assertEquals(0, init.error());
        assertNull(fs.backingFiles.passthroughRefused(), "granted, nothing refused yet");

        long dir = kernel.call(FuseProtocol.LOOKUP, FuseProtocol.ROOT_ID, body().name("shared")).int64(0);
        for (String name : List.of("a", "b")) {
            long node = kernel.call(FuseProtocol.LOOKUP, dir, body().name(name)).int64(0);
            FakeKernel.Reply opened = kernel.call(FuseProtocol.OPEN, node, body().int32(Linux.O_RDWR).int32(0));
            assertEquals(0, opened.error(), "the open is served, not failed");
            assertEquals(0, opened.int32(8) & FuseProtocol.FOPEN_PASSTHROUGH, name);
            assertEquals(0, opened.int32(12), "no backing id");
        }
        assertNotNull(fs.backingFiles.passthroughRefused());
        assertEquals(1, kernel.backingsAsked.get(), "asked once, not at every open");
        assertEquals(1, told.get(), "the registry is told once, so status says served");
    }
}
