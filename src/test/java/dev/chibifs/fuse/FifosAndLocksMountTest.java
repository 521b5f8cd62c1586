package dev.chibifs.fuse;

import dev.chibifs.testing.MountedFs;
import dev.chibifs.testing.Sh;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import static dev.chibifs.fuse.LinksMountTest.ok;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Fifos and locks (issue 25) on two per-context mounts of one store, the setup recommended for
 * agents: a fifo carries data between two processes of one mount (and only of one mount); flock,
 * fcntl record locks and SQLite's locking exclude each other across the two mounts.
 */
@Timeout(300)
class FifosAndLocksMountTest {

    /** One reader per started process, so no line read ahead for one call is lost to the next. */
    private static final Map<Process, BufferedReader> READERS = new ConcurrentHashMap<>();

    private static MountedFs planner;
    private static MountedFs coder;

    @BeforeAll
    static void mount() throws IOException {
        Path root = MountedFs.tempRoot();
        planner = MountedFs.start(root, "--context", "planner");
        coder = MountedFs.start(LinksMountTest.secondMountOver(root), "--context", "coder");
    }

    @AfterAll
    static void unmount() {
        if (coder != null) {
            coder.close();
        }
        if (planner != null) {
            planner.close();
        }
    }

    private static String q(Path p) {
        return "'" + p.toString().replace("'", "'\\''") + "'";
    }

    @Test
    void aFifoMadeThroughTheMountCarriesDataBetweenTwoProcesses() throws IOException {
        ok(planner, planner.sh("mkfifo shared/pipe && test -p shared/pipe"));
        assertEquals("fifo\n", Sh.run("stat -c %F " + q(planner.stored("/shared/pipe"))).ok().out(),
                "the fifo is a name in the store");
        // reader and writer are two processes that meet only at the fifo's name on the mount
        Sh.Result r = ok(planner, planner.sh("cat shared/pipe | md5sum > " + q(planner.root().resolve("got")) + " & reader=$!;"
                + " seq 1 100000 > shared/pipe; wait $reader && cat " + q(planner.root().resolve("got"))));
        assertEquals(Sh.run("seq 1 100000 | md5sum").ok().out(), r.out());
        // the other mount sees the name as a fifo, and its own processes can talk through it too
        assertEquals("hello\n", ok(coder, coder.sh("test -p shared/pipe && { cat shared/pipe & echo hello > shared/pipe; wait; }")).out());
    }

    /**
     * Each mount is its own kernel inode for the fifo, so the kernel connects the processes of one
     * mount only: a writer on one mount finds no reader waiting on the other (ENXIO).
     */
    @Test
    void aFifoConnectsProcessesOfOneMountOnly() {
        ok(planner, planner.sh("mkfifo shared/onemount"));
        String a = planner.at("/shared/onemount").toString();
        String b = coder.at("/shared/onemount").toString();
        Sh.Result r = Sh.run("python3 - <<'EOF'\nimport os, errno\n"
                + "reader = os.open('" + b + "', os.O_RDONLY | os.O_NONBLOCK)\n"
                + "try:\n    os.open('" + a + "', os.O_WRONLY | os.O_NONBLOCK)\n    print('connected across mounts')\n"
                + "except OSError as e:\n    assert e.errno == errno.ENXIO, e\n"
                + "w = os.open('" + b + "', os.O_WRONLY | os.O_NONBLOCK)\nos.write(w, b'same mount')\n"
                + "print(os.read(reader, 100).decode())\nEOF");
        assertEquals("same mount\n", ok(planner, r).out());
    }

    @Test
    void sqliteOnTwoMountsOfOneStoreInserts400RowsAtOnceAndStaysWhole() {
        String a = q(planner.at("/shared/rows.db"));
        ok(planner, Sh.run("sqlite3 " + a + " 'create table t(who text, n integer)'"));
        insertFromBothMountsAtOnce(a, q(coder.at("/shared/rows.db")));
        // and chibi's own view of the store agrees
        assertEquals("ok\n400\n", Sh.run("sqlite3 " + q(planner.stored("/shared/rows.db"))
                + " 'pragma integrity_check; select count(*) from t;'").ok().out());
    }

    @Test
    void sqliteReadOnlyConnectionsBesideAWriterInOneProcessNeverFailItsLocks() throws IOException {
        // one process's read-only connections (mode=ro: O_RDONLY handles) lock first, then its writer
        // takes RESERVED through its read-write handle: that was EBADF, SQLITE_IOERR_LOCK
        String check = "import sqlite3, sys, threading\n"
                + "p = sys.argv[1]; c = sqlite3.connect(p); c.execute('create table t(x)'); c.commit(); c.close()\n"
                + "errors = []; done = []\n"
                + "def write():\n"
                + "    c = sqlite3.connect(p, timeout=30)\n"
                + "    for i in range(300):\n"
                + "        try: c.execute('insert into t values(?)', (i,)); c.commit()\n"
                + "        except Exception as e: errors.append(str(e))\n"
                + "    done.append(1)\n"
                + "def read():\n"
                + "    while not done:\n"
                + "        try:\n"
                + "            c = sqlite3.connect('file:' + p + '?mode=ro', uri=True, timeout=30)\n"
                + "            c.execute('select count(*) from t').fetchone(); c.close()\n"
                + "        except Exception as e: errors.append(str(e))\n"
                + "ts = [threading.Thread(target=write), threading.Thread(target=read), threading.Thread(target=read)]\n"
                + "[t.start() for t in ts]; [t.join() for t in ts]\n"
                + "print(len(errors), sorted(set(errors))[:3])\n";
        assertEquals("0 []\n", ok(planner, Sh.python(null, check, planner.at("/shared/ro.db").toString())).out());
        assertEquals("ok\n300\n", Sh.run("sqlite3 " + q(planner.stored("/shared/ro.db"))
                + " 'pragma integrity_check; select count(*) from t;'").ok().out());
    }

    @Test
    void sqliteInWalModeOnTwoMountsWithPassthroughStaysWhole() {
        // WAL keeps its index in a shared mapping of the -shm file: two mounts see one mapping only when
        // each maps the store file itself (passthrough); served, each mount's mapping is its own
        for (MountedFs m : List.of(planner, coder)) {
            String session = m.stats().toString();
            assumeTrue(session.contains("passthrough"), "no passthrough on this kernel or daemon: WAL is not shared");
        }
        String a = q(planner.at("/shared/wal.db"));
        assertEquals("wal\n", ok(planner, Sh.run("sqlite3 " + a
                + " 'pragma journal_mode=wal; create table t(who text, n integer)'")).out());
        insertFromBothMountsAtOnce(a, q(coder.at("/shared/wal.db")));
    }

    /**
     * WAL on two served mounts (no passthrough: a daemon not run as root, README line 1's case). Each
     * mount maps its own copy of the -shm index, and the two copies parted: committed rows were lost
     * without an error, and the database failed its integrity check. The daemon lets one mount's
     * connections in at a time (the other's wait, as SQLite does for a lock); an insert that fails
     * anyway is retried, as an application would: every row is there, the database whole.
     */
    @Test
    void sqliteInWalModeOnTwoServedMountsLosesNoRow() throws Exception {
        Path root = MountedFs.tempRoot();
        try (MountedFs a = MountedFs.start(root, "--context", "planner", "--no-passthrough");
             MountedFs b = MountedFs.start(LinksMountTest.secondMountOver(root), "--context", "coder", "--no-passthrough")) {
            String script = "import sqlite3, sys, multiprocessing\n"
                    + "def work(path, tag):\n"
                    + "    c = None\n"
                    + "    for i in range(200):\n"
                    + "        for attempt in range(50):\n"
                    + "            try:\n"
                    + "                if c is None or i % 10 == 0:\n"
                    + "                    if c: c.close()\n"
                    + "                    c = sqlite3.connect(path, timeout=60)\n"
                    + "                with c: c.execute('insert into t values (?, ?)', (tag, i))\n"
                    + "                break\n"
                    + "            except sqlite3.Error as e:\n"
                    + "                print('ERR', tag, i, attempt, e, flush=True)\n"
                    + "                if c: c.close()\n"
                    + "                c = None\n"
                    + "        else:\n"
                    + "            print('EXHAUSTED', tag, i, flush=True)\n"
                    + "    if c: c.close()\n"
                    + "a, b = sys.argv[1:]\n"
                    + "c = sqlite3.connect(a); c.execute('pragma journal_mode=wal'); c.execute('create table t(who, n)'); c.commit(); c.close()\n"
                    + "ps = [multiprocessing.Process(target=work, args=(p, t)) for p, t in ((a, 'a'), (b, 'b'))]\n"
                    + "[p.start() for p in ps]; [p.join() for p in ps]\n"
                    + "c = sqlite3.connect(b)\n"
                    + "print(c.execute('pragma integrity_check').fetchone()[0], c.execute('select count(*), count(distinct who || n) from t').fetchone())\n";
            String db = "/shared/served-wal.db";
            // the inserts' errors and any row given up on come before the count: a failure says which
            String got = Sh.python(null, script, a.at(db).toString(), b.at(db).toString()).ok().out().trim();
            assertTrue(got.endsWith("ok (400, 400)"), got);

            // while a connection through a served mount is open, a program on the store file finds the
            // index's DMS byte locked exclusively, so SQLite there waits rather than map a second index
            Process connected = start("python3 -c 'import sqlite3, sys\nc = sqlite3.connect(sys.argv[1])\n"
                    + "c.execute(\"select count(*) from t\").fetchone()\nprint(\"connected\", flush=True)\nsys.stdin.readline()' "
                    + q(a.at(db)));
            String index = a.stored(db + "-shm").toString();
            try {
                assertEquals("connected", line(connected, 30));
                assertEquals("write", Sh.python(null, "import fcntl, os, struct, sys\n"
                        + "fd = os.open(sys.argv[1], os.O_RDWR)\n"
                        + "got = fcntl.fcntl(fd, fcntl.F_GETLK, struct.pack('hhqqi4x', fcntl.F_RDLCK, 0, 128, 1, 0))\n"
                        + "print({fcntl.F_UNLCK: 'free', fcntl.F_RDLCK: 'read', fcntl.F_WRLCK: 'write'}[struct.unpack('hhqqi4x', got)[0]])\n",
                        index).ok().out().trim());
            } finally {
                connected.getOutputStream().close();
            }
            assertEquals(0, exit(connected, 30));
            // (the last connection to close removes the index: a new one is free at once)
            assertEquals("free", Sh.python(null, "import fcntl, os, sys\nfd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)\n"
                    + "fcntl.lockf(fd, fcntl.LOCK_EX, 1, 128)\nprint('free')\n", index).ok().out().trim(),
                    "the byte is free once the connection has gone");
        }
    }

    /**
     * 200 transactions from each mount at once, one sqlite3 per mount reading the table every 50
     * ({@code .timeout} waits for the other's lock); then each mount sees all 400 rows, whole.
     */
    private static void insertFromBothMountsAtOnce(String a, String b) {
        String script = "rows() { echo '.timeout 60000'; i=1; while [ $i -le 200 ]; do"
                + " echo \"insert into t values ('$1', $i);\"; [ $((i % 50)) = 0 ] && echo 'select count(*) from t;';"
                + " i=$((i + 1)); done; };"
                + " rows planner | sqlite3 -bail " + a + " >/dev/null & pa=$!;"
                + " rows coder | sqlite3 -bail " + b + " >/dev/null & pb=$!;"
                + " wait $pa; ra=$?; wait $pb; rb=$?; echo \"exits $ra $rb\"; [ $ra = 0 ] && [ $rb = 0 ]";
        Sh.Result r = Sh.run(script);
        if (r.exitCode() != 0) {
            throw new AssertionError(r.out() + r.err() + "\n" + LinksMountTest.diagnostics(planner)
                    + LinksMountTest.diagnostics(coder));
        }
        for (String db : List.of(a, b)) {
            assertEquals("ok\n400\n200|200|20100|20100\n", ok(planner, Sh.run("sqlite3 " + db + " 'pragma integrity_check;"
                    + " select count(*) from t; select sum(who = \"planner\"), sum(who = \"coder\"),"
                    + " sum(case who when \"planner\" then n end), sum(case who when \"coder\" then n end) from t;'")).out(), db);
        }
    }

    @Test
    void theCliWaitsForALockTakenThroughAMountBeforeItWrites() throws Exception {
        String file = q(planner.at("/shared/notes.md"));
        ok(planner, Sh.run("echo one > " + file));
        String home = planner.home().toString();
        // flock through the mount locks the store file itself: chibifs's own append waits for it
        Process holder = start("exec flock " + file + " sh -c 'echo held; cat >/dev/null'");
        CompletableFuture<Sh.Result> waiting;
        try {
            assertEquals("held", line(holder, 30));
            Sh.Result refused = MountedFs.cli("append", "--as", "planner", "--home", home, "--lock-wait", "300ms",
                    "--content", "never\n", "vfs:///shared/notes.md");
            assertEquals(5, refused.exitCode(), refused.out() + refused.err());
            assertTrue(refused.err().contains("holds a lock"), refused.err());
            waiting = CompletableFuture.supplyAsync(() -> MountedFs.cli("append", "--as", "planner", "--home", home,
                    "--lock-wait", "60s", "--content", "two\n", "vfs:///shared/notes.md"));
            assertEquals("one\n", ok(planner, Sh.run("cat " + file)).out());
        } finally {
            holder.getOutputStream().close();
        }
        assertEquals(0, exit(holder, 30));
        assertEquals(0, waiting.get(60, TimeUnit.SECONDS).exitCode());
        assertEquals("one\ntwo\n", ok(planner, Sh.run("cat " + file)).out());
    }

    @Test
    void flockDashNFromASecondMountFailsWhileTheFirstHoldsTheLockAndSucceedsAfter() throws Exception {
        ok(planner, planner.sh("touch shared/flocked"));
        String b = q(coder.at("/shared/flocked"));
        try (Holder holder = new Holder(planner.at("/shared/flocked"))) {
            holder.send("flock");
            Sh.Result busy = coder.sh("flock -n " + b + " -c 'echo got it'");
            assertEquals(1, busy.exitCode(), "flock -n through the second mount while the first holds it: " + busy.out() + busy.err());
            // the holder's own mount refuses a second open file too
            assertEquals(1, planner.sh("flock -n shared/flocked true").exitCode());
            // once the holder unlocks (LOCK_UN: answered only when done), flock -n there succeeds at once
            holder.send("unlock");
            ok(coder, coder.sh("flock -n " + b + " -c true"));
            // a blocking waiter on the second mount gets the lock once the first lets go
            holder.send("flock");
            Process waiter = start("flock -w 60 " + b + " -c 'echo waited'");
            holder.send("unlock");
            assertEquals("waited", line(waiter, 60));
            assertEquals(0, exit(waiter, 30));
        }
        // a lock goes with its holder: killed while holding it, it leaves the file free
        Process killed = start("exec flock " + q(planner.at("/shared/flocked")) + " -c 'echo held; exec cat'");
        assertEquals("held", line(killed, 60));
        assertEquals(1, coder.sh("flock -n " + b + " true").exitCode());
        killed.descendants().forEach(ProcessHandle::destroyForcibly);
        killed.destroyForcibly();
        exit(killed, 30);
        // the kernel sends a closed file's release without waiting for it (so the lock goes a moment
        // after the process): a waiting flock, not flock -n, is what may count on having it
        ok(coder, coder.sh("flock -w 30 " + b + " true"));
    }

    /**
     * close(2) lets go of a flock or an OFD lock before it returns, though the kernel sends the
     * RELEASE that does it in the background: on the same mount, the next try through another open
     * file, one already open or opened after, gets the lock at once, every time (ReleasesUnderWay),
     * and two open files never hold it together.
     */
    @Test
    void aLockLetGoByACloseIsFreeAtOnceForTheNextTryThroughTheSameMount() {
        ok(planner, planner.sh("touch shared/closed-lock"));
        String script = String.join("\n",
                "import fcntl, os, struct, sys",
                "p = sys.argv[1]",
                "wr = struct.pack('hhqqi', fcntl.F_WRLCK, 0, 0, 0, 0)",
                "def lock(kind, fd):",
                "    if kind == 'flock': fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)",
                "    else: fcntl.fcntl(fd, 37, wr)  # F_OFD_SETLK",
                "late = 0",
                "for kind in ('flock', 'ofd'):",
                "    for i in range(300):",
                "        a = os.open(p, os.O_RDWR); b = os.open(p, os.O_RDWR)",
                "        lock(kind, a)  # b's close, a moment ago, let go of it",
                "        try:",
                "            lock(kind, b); sys.exit(kind + ': two open files hold the lock')",
                "        except BlockingIOError: pass",
                "        os.close(a)",
                "        try: lock(kind, b)",
                "        except BlockingIOError: late += 1",
                "        os.close(b)",
                "print(late)");
        Sh.Result r = ok(planner, Sh.run("python3 -c \"" + script + "\" " + q(planner.at("/shared/closed-lock"))));
        assertEquals("0", r.out().strip(), "tries refused right after the holder closed");
    }

    /**
     * A process waiting for a lock another mount holds waits in the kernel for the daemon's answer;
     * a signal ends the wait at once (EINTR, so its handler runs), and the abandoned wait takes
     * nothing later: once the holder lets go, the file is free although the waiter still has it open.
     */
    @Test
    void aSignalEndsALockWaitAtOnceAndTheAbandonedWaitTakesNothingLater() throws Exception {
        ok(planner, planner.sh("touch shared/interrupted"));
        Path b = coder.at("/shared/interrupted");
        try (Holder holder = new Holder(planner.at("/shared/interrupted"))) {
            holder.send("flock");
            Process waiter = start("exec python3 -u -c 'import fcntl, os, signal, sys\n"
                    + "class Stop(Exception): pass\ndef stop(*a): raise Stop()\nsignal.signal(signal.SIGUSR1, stop)\n"
                    + "fd = os.open(\"" + b + "\", os.O_RDWR)\nprint(os.getpid())\n"
                    + "try:\n    fcntl.flock(fd, fcntl.LOCK_EX)\n    print(\"got it\")\n"
                    + "except Stop:\n    print(\"interrupted\")\nsys.stdin.read()'");
            String pid = line(waiter, 60);
            // waiting for the daemon's answer to its SETLKW (a poll with a deadline: no event says so)
            ok(coder, Sh.run("timeout 30 sh -c 'until grep -q request_wait_answer /proc/" + pid + "/wchan; do sleep 0.02; done'"));
            Sh.run("kill -USR1 " + pid).ok();
            assertEquals("interrupted", line(waiter, 10));
            holder.send("unlock");
            ok(coder, coder.sh("flock -n " + q(b) + " true"));
            waiter.getOutputStream().close();
            assertEquals(0, exit(waiter, 30));
        }
    }

    /**
     * fcntl record locks (lockf, SQLite's) across mounts: ranges conflict only where they overlap,
     * and a lock is released when the open file that took it is released, as an OFD lock: closing
     * another descriptor of the same file keeps it (POSIX would drop it), closing the last one or
     * the process's end lets it go.
     */
    @Test
    void recordLocksHoldAcrossMountsByRangeUntilTheirOpenFileIsReleased() throws Exception {
        ok(planner, planner.sh("head -c 1000 /dev/zero > shared/records"));
        Path b = coder.at("/shared/records");
        try (Holder holder = new Holder(planner.at("/shared/records"))) {
            holder.send("lockf 100 0");
            assertEquals("busy\n", tryLock(b, 10, 50));
            assertEquals("free\n", tryLock(b, 100, 500), "a range the holder does not hold");
            assertEquals("busy\n", tryLock(planner.at("/shared/records"), 10, 0), "another process on the holder's mount");
            holder.send("close-other");
            assertEquals("busy\n", tryLock(b, 10, 50), "closing another descriptor keeps the lock (as an OFD lock)");
            // an F_SETLKW waiter on the second mount gets it when the holder lets go
            Process waiter = start("python3 -c 'import fcntl, os; fd = os.open(\"" + b + "\", os.O_RDWR);"
                    + " fcntl.lockf(fd, fcntl.LOCK_EX, 10, 50); print(\"waited\", flush=True)'");
            holder.send("close");
            assertEquals("waited", line(waiter, 60));
            assertEquals(0, exit(waiter, 30));
            // the waiter's file is released a moment after it exits (the kernel does not wait for it)
            assertEquals("free\n", tryLockWaiting(b, 10, 50));
            holder.send("reopen");
            holder.send("lockf 0 0");
            assertEquals("busy\n", tryLock(b, 10, 50));
        }
        // the holder ended (its stdin closed): its open file was released with it
        assertEquals("free\n", tryLockWaiting(b, 10, 50));
    }

    /** "free" if an exclusive lock on {@code len} bytes at {@code start} of {@code file} can be had at once, else "busy". */
    private static String tryLock(Path file, int len, int start) {
        return ok(coder, Sh.run("python3 -c 'import fcntl, os, errno\nfd = os.open(\"" + file + "\", os.O_RDWR)\n"
                + "try:\n    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, " + len + ", " + start + ")\n    print(\"free\")\n"
                + "except OSError as e:\n    assert e.errno in (errno.EAGAIN, errno.EACCES), e\n    print(\"busy\")\n'")).out();
    }

    /** As {@link #tryLock}, but waits (30 s at most) for the lock first: "free" once it is. */
    private static String tryLockWaiting(Path file, int len, int start) {
        return ok(coder, Sh.run("timeout 30 python3 -c 'import fcntl, os\nfd = os.open(\"" + file + "\", os.O_RDWR)\n"
                + "fcntl.lockf(fd, fcntl.LOCK_EX, " + len + ", " + start + ")\nprint(\"free\")'")).out();
    }

    /** Starts {@code script} under {@code sh -c} and {@code timeout}, its stdin a pipe the test holds. */
    private static Process start(String script) throws IOException {
        ProcessBuilder pb = new ProcessBuilder("timeout", "-k", "5", "120", "sh", "-c", script).redirectErrorStream(true);
        pb.environment().put("LC_ALL", "C.UTF-8");
        return pb.start();
    }

    /** The next line {@code p} prints, waiting {@code seconds} at most. */
    private static String line(Process p, int seconds) throws Exception {
        BufferedReader r = READERS.computeIfAbsent(p,
                k -> new BufferedReader(new InputStreamReader(k.getInputStream(), StandardCharsets.UTF_8)));
        try {
            String l = CompletableFuture.supplyAsync(() -> {
                try {
                    return r.readLine();
                } catch (IOException e) {
                    return "(" + e + ")";
                }
            }).get(seconds, TimeUnit.SECONDS);
            return l == null ? "(end of output, exit " + exit(p, 10) + ")" : l;
        } catch (TimeoutException e) {
            p.destroyForcibly();
            throw new AssertionError("no line within " + seconds + " s\n" + LinksMountTest.diagnostics(planner)
                    + LinksMountTest.diagnostics(coder));
        } catch (ExecutionException e) {
            throw new AssertionError(e);
        }
    }

    private static int exit(Process p, int seconds) throws InterruptedException {
        if (!p.waitFor(seconds, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError("did not exit within " + seconds + " s");
        }
        return p.exitValue();
    }

    /**
     * A python process on the first mount that holds a lock on one file and does what the test
     * sends it, one command a line, answering each once done: {@code flock}, {@code unlock},
     * {@code lockf LEN START}, {@code close-other} (opens a second descriptor of the file and closes
     * it), {@code close}, {@code reopen}. Closing it ends the process.
     */
    private static final class Holder implements AutoCloseable {

        private final Process process;
        private final Writer in;

        Holder(Path file) throws Exception {
            process = start("exec python3 -u -c '\nimport fcntl, os, sys\n"
                    + "path = \"" + file + "\"\nfd = os.open(path, os.O_RDWR)\nprint(\"open\")\n"
                    + "for line in sys.stdin:\n    cmd, *args = line.split()\n"
                    + "    if cmd == \"flock\": fcntl.flock(fd, fcntl.LOCK_EX)\n"
                    + "    elif cmd == \"unlock\": fcntl.flock(fd, fcntl.LOCK_UN)\n"
                    + "    elif cmd == \"lockf\": fcntl.lockf(fd, fcntl.LOCK_EX, int(args[0]), int(args[1]))\n"
                    + "    elif cmd == \"close-other\": os.close(os.open(path, os.O_RDWR))\n"
                    + "    elif cmd == \"close\": os.close(fd)\n"
                    + "    elif cmd == \"reopen\": fd = os.open(path, os.O_RDWR)\n"
                    + "    print(\"done\", cmd)\n'");
            in = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
            assertEquals("open", line(process, 60));
        }

        void send(String command) throws Exception {
            in.write(command + "\n");
            in.flush();
            assertEquals("done " + command.split(" ")[0], line(process, 60), command);
        }

        @Override
        public void close() throws Exception {
            in.close();
            exit(process, 30);
        }
    }
}
