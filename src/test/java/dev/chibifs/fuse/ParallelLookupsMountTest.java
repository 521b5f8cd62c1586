package dev.chibifs.fuse;

import dev.chibifs.path.VfsPath;
import dev.chibifs.policy.Caller;
import dev.chibifs.router.Router;
import dev.chibifs.store.MemoryStorage;
import dev.chibifs.store.Storage;
import dev.chibifs.testing.FuseSupport;
import dev.chibifs.testing.Sh;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * FUSE_PARALLEL_DIROPS, shown by the kernel itself: without it the kernel holds each LOOKUP in a
 * directory until the one before it is answered. A daemon in this JVM, over a store whose look-up
 * of a "gate" name waits for the other one to arrive, proves it without depending on timing:
 * counting how many lookups a busy run happened to overlap failed on a loaded 2-core machine.
 */
@Timeout(60)
class ParallelLookupsMountTest {

    private static final Duration WAIT = Duration.ofSeconds(15);

    @Test
    void twoLookupsInOneDirectoryReachTheDaemonTogether(@TempDir Path mnt) throws Exception {
        FuseSupport.requireFuse();
        MemoryStorage memory = new MemoryStorage();
        Router.of(memory).createNamespace(List.of("planner"));
        memory.write(VfsPath.of("/shared/gate1"), "1".getBytes(StandardCharsets.UTF_8));
        memory.write(VfsPath.of("/shared/gate2"), "2".getBytes(StandardCharsets.UTF_8));
        AtomicInteger arrivals = new AtomicInteger();
        CountDownLatch secondArrived = new CountDownLatch(1);
        AtomicBoolean metWhileWaiting = new AtomicBoolean();
        Storage gated = (Storage) Proxy.newProxyInstance(Storage.class.getClassLoader(), new Class<?>[]{Storage.class},
                (proxy, method, args) -> {
                    if (method.getName().equals("metadata") && args != null && args.length == 1
                            && args[0] instanceof VfsPath p && !p.isRoot() && p.fileName().startsWith("gate")) {
                        if (arrivals.incrementAndGet() == 1) {
                            // the first waits here, unanswered, for the second: which comes only in parallel
                            metWhileWaiting.set(secondArrived.await(WAIT.toMillis(), TimeUnit.MILLISECONDS));
                        } else {
                            secondArrived.countDown();
                        }
                    }
                    try {
                        return method.invoke(memory, args);
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
        // the mount is this JVM's own: root's mount(2), or a user's fusermount3
        long uid = ((Number) java.nio.file.Files.getAttribute(Path.of("/proc/self"), "unix:uid")).longValue();
        long gid = ((Number) java.nio.file.Files.getAttribute(Path.of("/proc/self"), "unix:gid")).longValue();
        FuseDaemon daemon = FuseDaemon.create(mnt, Router.of(gated), CallerResolver.fixed(Caller.context("planner")),
                FuseDaemon.DEFAULT_OPTIONS, uid, gid);
        daemon.start(WAIT);
        try {
            Sh.Result r = Sh.run("cd '" + mnt + "/shared' && (stat -c %s gate1 & stat -c %s gate2 & wait)");
            assertTrue(metWhileWaiting.get(),
                    "the second lookup in the directory came only after the first was answered: " + r.out());
        } finally {
            daemon.unmount(WAIT);
        }
    }
}
