package dev.chibifs.fuse;

import com.fasterxml.jackson.databind.JsonNode;
import dev.chibifs.testing.FuseSupport;
import dev.chibifs.testing.MountedFs;
import dev.chibifs.testing.Sh;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * FUSE over io_uring (Linux 6.14+): with {@code --io-uring}, requests come through one io_uring
 * queue per CPU instead of /dev/fuse reads. Ordinary programs work the same, a blocking lock is
 * answered through the entry its request came in (from the lock-wait thread), an interrupt
 * (still sent through /dev/fuse) ends such a wait, and an unmount ends the queues and the daemon.
 * The kernel offers it only while the fuse module's enable_uring is on: this class turns it on
 * for its mounts (root) and puts it back after.
 */
@Timeout(120)
class IoUringMountTest {

    private static AutoCloseable ioUring;
    private static MountedFs fs;

    @BeforeAll
    static void mount() throws IOException {
        ioUring = FuseSupport.ioUringOn();
        fs = MountedFs.start("--context", "planner", "--io-uring");
    }

    @AfterAll
    static void unmount() throws Exception {
        if (fs != null) {
            fs.close();
        }
        if (ioUring != null) {
            ioUring.close();
        }
    }

    /** How the mount's session was settled, as {@code chibifs stats} says it. */
    private static String session(MountedFs mount) throws IOException {
        JsonNode stats = mount.stats();
        return stats.get("session").asText();
    }

    private static Sh.Result ok(Sh.Result r) {
        assertEquals(0, r.exitCode(), r.out() + r.err() + "\n" + fs.log());
        return r;
    }

    @Test
    void ordinaryProgramsWorkThroughTheRing() throws IOException {
        assertTrue(session(fs).endsWith(", io_uring"), session(fs));
        ok(fs.sh("mkdir -p shared/ring && cd shared/ring && echo one > notes.md && echo two >> notes.md"
                + " && sed -i 's/one/ONE/' notes.md && mv notes.md tasks.md && ln tasks.md again.md"
                + " && git init -q && git add -A && git -c user.name=t -c user.email=t@localhost commit -qm first"
                + " && tar czf /tmp/chibifs-ring-test.tgz . && mkdir back && tar xzf /tmp/chibifs-ring-test.tgz -C back"
                + " && rm /tmp/chibifs-ring-test.tgz"));
        assertEquals("ONE\ntwo\n", ok(fs.sh("cat shared/ring/back/tasks.md")).out());
        assertEquals("ONE\ntwo\n", Files.readString(fs.stored("/shared/ring/again.md")));
        assertEquals("", ok(fs.sh("cd shared/ring && git status --porcelain --untracked-files=no")).out());
    }

    @Test
    void whereTheKernelDoesNotOfferItTheMountWorksThroughDevFuseAndSaysSo() throws IOException {
        Files.writeString(FuseSupport.ENABLE_URING, "0");
        MountedFs other;
        try {
            other = MountedFs.start("--context", "coder", "--io-uring");
        } finally {
            Files.writeString(FuseSupport.ENABLE_URING, "1");
        }
        try {
            assertEquals("x\n", other.sh("echo x > shared/x && cat shared/x").out(), other.log());
            assertFalse(session(other).contains("io_uring"), session(other));
            assertTrue(other.log().contains("--io-uring: the kernel does not offer FUSE over io_uring"), other.log());
        } finally {
            other.close();
        }
    }

    @Test
    void manyProcessesAtOnceEachGetTheirOwnAnswers() {
        // more processes than a queue has entries, on both CPUs: every reply reaches its own caller
        ok(fs.sh("mkdir -p shared/many && for p in $(seq 40); do"
                + " (for i in $(seq 25); do echo \"$p $i\" > shared/many/$p-$i; done;"
                + "  for i in $(seq 25); do [ \"$(cat shared/many/$p-$i)\" = \"$p $i\" ] || exit 1; done) & done;"
                + " fail=0; for j in $(jobs -p); do wait $j || fail=1; done; exit $fail"));
        assertEquals("1000\n", ok(fs.sh("ls shared/many | wc -l")).out());
    }

    /**
     * Processes taking and letting go of one flock in turn, as stress-ng's flock stressor does: each
     * wait is answered off the queue's thread. (A tester's stress-ng run on Linux 6.18 left lock
     * requests unanswered for good, their callers in D state; neither this nor stress-ng alone on a
     * fresh mount brought that back.)
     */
    @Test
    void contendedLocksTakenInTurnAreAllAnswered() {
        ok(fs.sh("mkdir -p shared/turns && touch shared/turns/lock && timeout -k 5 60 python3 -c '\n"
                + "import fcntl, os, sys\n"
                + "kids = []\n"
                + "for p in range(4):\n"
                + "    pid = os.fork()\n"
                + "    if pid == 0:\n"
                + "        fd = os.open(\"shared/turns/lock\", os.O_RDWR)\n"
                + "        for i in range(2000):\n"
                + "            fcntl.flock(fd, fcntl.LOCK_EX)\n"
                + "            fcntl.flock(fd, fcntl.LOCK_UN)\n"
                + "        os._exit(0)\n"
                + "    kids.append(pid)\n"
                + "sys.exit(max(os.waitpid(k, 0)[1] for k in kids))'"));
    }

    @Test
    void aWaitingLockIsAnsweredWhenFreedAndAnInterruptEndsAnother() throws Exception {
        ok(fs.sh("touch shared/locked"));
        Process holder = new ProcessBuilder("timeout", "-k", "5", "60", "flock", fs.at("/shared/locked").toString(),
                "sh", "-c", "echo held; cat > /dev/null").redirectErrorStream(true).start();
        BufferedReader said = new BufferedReader(new InputStreamReader(holder.getInputStream(), StandardCharsets.UTF_8));
        assertEquals("held", said.readLine());
        // SIGINT to a waiting flock: the kernel sends INTERRUPT through /dev/fuse, the wait ends with EINTR
        Sh.Result interrupted = fs.sh("timeout -s INT 1 flock shared/locked true; echo \"exit $?\"");
        assertEquals("exit 124\n", interrupted.out(), interrupted.err());
        Process waiter = new ProcessBuilder("timeout", "-k", "5", "60", "flock", fs.at("/shared/locked").toString(),
                "echo", "got it").redirectErrorStream(true).start();
        holder.getOutputStream().close();
        assertTrue(holder.waitFor(30, TimeUnit.SECONDS));
        assertTrue(waiter.waitFor(30, TimeUnit.SECONDS));
        assertEquals("got it\n", new String(waiter.getInputStream().readAllBytes(), StandardCharsets.UTF_8));
        assertEquals(0, waiter.exitValue());
    }

    @Test
    void moreLockWaitsThanAQueueCanHoldAreRefusedInsteadOfHangingTheirCpu() throws Exception {
        // everything on CPU 0, so on one queue: a holder, then more waiters than the queue has entries.
        // Were every entry waiting, the holder's unlock (on CPU 0 too) would find none: a hang
        ok(fs.sh("touch shared/crowded"));
        String file = fs.at("/shared/crowded").toString();
        Process holder = new ProcessBuilder("timeout", "-k", "5", "60", "taskset", "-c", "0", "flock", file,
                "sh", "-c", "echo held; cat > /dev/null").redirectErrorStream(true).start();
        assertEquals("held", new BufferedReader(new InputStreamReader(holder.getInputStream(), StandardCharsets.UTF_8)).readLine());
        int waiters = FuseRing.DEPTH + 4;
        int refusedAtOnce = waiters - FuseRing.LOCK_WAITS;
        java.util.List<Process> all = new java.util.ArrayList<>();
        java.util.concurrent.CountDownLatch refused = new java.util.concurrent.CountDownLatch(refusedAtOnce);
        for (int i = 0; i < waiters; i++) {
            Process w = new ProcessBuilder("timeout", "-k", "5", "60", "taskset", "-c", "0", "flock", file, "true")
                    .redirectErrorStream(true).start();
            w.onExit().thenRun(refused::countDown);
            all.add(w);
        }
        assertTrue(refused.await(30, TimeUnit.SECONDS), "the waiters beyond what the queue keeps for locks were not refused");
        holder.getOutputStream().close();
        assertTrue(holder.waitFor(30, TimeUnit.SECONDS), "the holder could not unlock and end");
        int got = 0;
        int deadlock = 0;
        for (Process w : all) {
            assertTrue(w.waitFor(30, TimeUnit.SECONDS), "a waiter never got the lock");
            String said = new String(w.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (w.exitValue() == 0) {
                got++;
            } else {
                assertTrue(said.contains("Resource deadlock avoided"), said);
                deadlock++;
            }
        }
        assertEquals(FuseRing.LOCK_WAITS, got);
        assertEquals(refusedAtOnce, deadlock);
    }

    @Test
    void anUnmountEndsTheQueuesAndTheDaemon() throws Exception {
        MountedFs other = MountedFs.start("--context", "coder", "--io-uring");
        try {
            assertEquals(0, other.sh("echo x > shared/x && cat shared/x > /dev/null").exitCode(), other.log());
            assertTrue(session(other).endsWith(", io_uring"), session(other));
        } finally {
            other.close();
        }
        assertTrue(other.process().waitFor(20, TimeUnit.SECONDS), "the daemon still runs after its unmount");
        assertFalse(other.isMounted());
    }

    @Test
    void aSessionAbortedWhileALockWaitHoldsAnEntryStillEndsTheDaemon() throws Exception {
        // a waiting lock keeps its ring entry, which the kernel does not give back when the session
        // ends: the queues must end anyway, or the daemon would outlive its mount
        MountedFs other = MountedFs.start("--context", "coder", "--io-uring");
        Process holder = null;
        Process waiter = null;
        try {
            assertEquals(0, other.sh("touch shared/held").exitCode(), other.log());
            holder = new ProcessBuilder("timeout", "-k", "5", "60", "flock", other.at("/shared/held").toString(),
                    "sh", "-c", "echo held; cat > /dev/null").redirectErrorStream(true).start();
            assertEquals("held", new BufferedReader(new InputStreamReader(holder.getInputStream(),
                    StandardCharsets.UTF_8)).readLine());
            waiter = new ProcessBuilder("timeout", "-k", "5", "60", "flock", other.at("/shared/held").toString(), "true")
                    .redirectErrorStream(true).start();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (setlkw(other) < 2) { // the holder's lock and the waiter's, now waiting
                assertTrue(System.nanoTime() < deadline, "the waiting flock never reached the daemon");
            }
            assertTrue(FuseMount.abort(other.mountpoint().toString()));
            assertTrue(other.process().waitFor(20, TimeUnit.SECONDS), "the daemon still runs after its session was aborted");
        } finally {
            for (Process p : new Process[] {holder, waiter}) {
                if (p != null) {
                    p.destroyForcibly();
                }
            }
            other.close();
        }
    }

    /** How many SETLKW requests (flock waits) the mount's daemon has served or is serving. */
    private static long setlkw(MountedFs mount) throws IOException {
        JsonNode stats = mount.stats();
        for (JsonNode op : stats.get("requests")) {
            if (op.get("opcode").asText().equals("SETLKW")) {
                return op.get("count").asLong();
            }
        }
        return 0;
    }
}
