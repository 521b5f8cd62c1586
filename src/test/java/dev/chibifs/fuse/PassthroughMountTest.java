package dev.chibifs.fuse;

import com.fasterxml.jackson.databind.JsonNode;
import dev.chibifs.testing.MountedFs;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.nio.file.Files;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * FUSE passthrough (Linux 6.9, a daemon with CAP_SYS_ADMIN): the kernel reads and writes store
 * files itself, so data moves without a request to the daemon, and what a program reads is what
 * is in the store, through every name and after every kind of change.
 */
@Timeout(120)
class PassthroughMountTest {

    private static MountedFs fs;
    /**
     * A mount that serves reads and writes, for the tests that compare: one for the class, started by
     * the first that needs it (each of four started its own). Each test uses files of its own names,
     * and counts only the requests its own commands make.
     */
    private static MountedFs servedMount;

    @BeforeAll
    static void mount() {
        fs = MountedFs.start("--context", "planner");
    }

    @AfterAll
    static void unmount() {
        fs.close();
        if (servedMount != null) {
            servedMount.close();
        }
    }

    private static MountedFs served() {
        if (servedMount == null) {
            servedMount = MountedFs.start("--context", "planner", "--no-passthrough");
        }
        return servedMount;
    }

    private static JsonNode stats() throws IOException {
        return stats(fs);
    }

    private static JsonNode stats(MountedFs mount) throws IOException {
        return mount.stats();
    }

    private static long count(JsonNode stats, String opcode) {
        for (JsonNode op : stats.get("requests")) {
            if (op.get("opcode").asText().equals(opcode)) {
                return op.get("count").asLong();
            }
        }
        return 0;
    }

    /** The kernel writes an mmap's pages back through any writable handle, an O_APPEND one too: in place. */
    @Test
    void anMmapWrittenThroughAnAppendingDescriptorChangesItsPageInPlace() throws IOException {
        String program = """
                import mmap
                p = 'shared/mapped-append'
                with open(p, 'wb') as f:
                    f.write(b'a' * 10000)
                fd = os.open(p, os.O_RDWR | os.O_APPEND)
                m = mmap.mmap(fd, 10000)
                m[5000:5004] = b'ZZZZ'
                m.flush()
                m.close()
                os.close(fd)
                data = open(p, 'rb').read()
                assert len(data) == 10000, len(data)
                assert data[5000:5004] == b'ZZZZ', data[4990:5010]
                """;
        PosixBehaviourTest.python(fs, program);
        MountedFs served = served();
        PosixBehaviourTest.python(served, program);
        assertEquals(10000, Files.size(served.stored("/shared/mapped-append")), "the store's file, not only the mount's pages");
    }

    /** A served writer's pages hold what it wrote, not what chibi or another mount wrote meanwhile. */
    @Test
    void whereWritesAreServedAChangeMadeElsewhileAFileWasOpenForWritingIsReadAfterIt() throws IOException {
        MountedFs served = served();
        String store = served.stored("/shared/written-beside").toString();
        PosixBehaviourTest.python(served, """
                fd = os.open('shared/written-beside', os.O_RDWR | os.O_CREAT | os.O_TRUNC)
                os.write(fd, b'a' * 100000)
                s = os.open(STORE, os.O_WRONLY)
                os.pwrite(s, b'B' * 95, 50000)
                os.close(s)
                # as if written a while ago: a file changed in the last second is read past the pages
                old = time.time() - 10
                os.utime(STORE, (old, old))
                os.close(fd)
                with open('shared/written-beside', 'rb') as f:
                    f.seek(50000)
                    got = f.read(4)
                assert got == b'BBBB', got
                """.replace("STORE", "'" + store + "'"));
    }

    @Test
    void aFileWrittenAThousandTimesIsAskedForItsCapabilitiesOnce() throws IOException {
        // served extended attributes (user.chibi.etag) make the kernel ask security.capability before a
        // write; HANDLE_KILLPRIV_V2 lets it remember the answer per inode (SB_NOSEC) instead of asking
        // before every write, passthrough or not
        fs.sh("echo start > shared/often").ok();
        JsonNode before = stats();
        fs.sh("dd if=/dev/zero of=shared/often bs=4k count=1000 conv=notrunc status=none"
                + " && for i in 1 2 3 4 5 6 7 8 9 10; do echo $i >> shared/often; done").ok();
        JsonNode after = stats();
        long asked = count(after, "GETXATTR") - count(before, "GETXATTR");
        assertTrue(asked <= 1, asked + " GETXATTR for 1,010 writes: " + after);
    }

    /**
     * Session 67: on a store without direct I/O (ramfs), an O_DIRECT open passed through was EIO
     * (the kernel's open of the store file failed), where the file system itself answers EINVAL,
     * which dd and databases take as "use the page cache". The created file stays, as on ramfs.
     */
    @Test
    void oDirectOnAStoreWithoutDirectIoIsTheStoresEinvalNotEio() throws IOException {
        dev.chibifs.testing.FuseSupport.requireRoot();
        java.nio.file.Path root = MountedFs.tempRoot();
        java.nio.file.Path home = Files.createDirectories(root.resolve("home"));
        dev.chibifs.testing.Sh.run("mount -t ramfs chibifs-test-ramfs '" + home + "'").ok();
        try (MountedFs ram = MountedFs.start(root, "--context", "planner")) {
            String session = stats(ram).get("session").asText();
            assumeTrue(session.contains("passthrough") && !session.contains("served reads"),
                    "this kernel or daemon serves reads and writes: " + session);
            PosixBehaviourTest.python(ram, """
                    for flags in (os.O_WRONLY | os.O_CREAT, os.O_RDONLY, os.O_RDWR):
                        try:
                            os.close(os.open('shared/direct', flags | os.O_DIRECT, 0o644))
                            raise AssertionError('opened %o' % flags)
                        except OSError as e:
                            assert e.errno == errno.EINVAL, (flags, e)
                        assert os.path.exists('shared/direct'), 'created before the refusal, as on ramfs'
                    with open('shared/direct', 'w') as f:
                        f.write('buffered')
                    assert open('shared/direct').read() == 'buffered'
                    """);
        } finally {
            dev.chibifs.testing.Sh.run("umount -l '" + home + "'");
        }
        // where the store's file system has direct I/O, O_DIRECT is passed through as before
        String dd = "dd if=/dev/zero bs=4k count=1 oflag=direct status=none of=";
        assertEquals(dev.chibifs.testing.Sh.run(dd + "'" + fs.stored("/shared/direct-ok") + "'").exitCode(),
                fs.sh(dd + "shared/direct-ok2").exitCode());
    }

    @Test
    void dataMovesWithoutARequestToTheDaemon() throws IOException {
        JsonNode before = stats();
        assumeTrue(before.get("session").asText().contains("passthrough"),
                "this kernel or daemon serves reads and writes: " + before.get("session").asText());
        fs.sh("dd if=/dev/urandom of=shared/data bs=1M count=8 status=none && cat shared/data > /dev/null"
                + " && echo tail >> shared/data && tail -c 5 shared/data > shared/tail").ok();
        JsonNode after = stats();
        assertEquals(0, count(after, "WRITE") - count(before, "WRITE"), after.toString());
        assertEquals(0, count(after, "READ") - count(before, "READ"), after.toString());
        assertEquals(fs.sh("md5sum < shared/data").ok().out(), fs.sh("md5sum < '" + fs.stored("/shared/data") + "'").ok().out());
        assertEquals("tail\n", fs.sh("cat shared/tail").ok().out());
    }

    @Test
    void aCopyBetweenFilesPassedThroughIsTheStoreFilesCopyAndReadsBackWhole() throws IOException {
        // the daemon copies between the store files (copy_file_range of its own descriptors), while the
        // kernel reads and writes those same files directly: an append after the copy and a copy into
        // the middle of a file must show through both
        fs.sh("head -c 5000000 /dev/urandom > shared/cf && cp shared/cf shared/cf2 && echo tail >> shared/cf2"
                + " && python3 -c \"import os; a = os.open('shared/cf', os.O_RDONLY); b = os.open('shared/cf3', os.O_WRONLY | os.O_CREAT);"
                + " os.write(b, b'x' * 100); assert os.copy_file_range(a, b, 10, 0, 50) == 10\"").ok();
        JsonNode after = stats();
        assertTrue(count(after, "COPY_FILE_RANGE_64") + count(after, "COPY_FILE_RANGE") > 0, after.toString());
        assertEquals(fs.sh("cat shared/cf && echo tail").ok().out(), fs.sh("cat shared/cf2").ok().out());
        assertEquals(fs.sh("md5sum < shared/cf2").ok().out(), fs.sh("md5sum < '" + fs.stored("/shared/cf2") + "'").ok().out());
        assertEquals(fs.sh("od -An -tx1 -N 10 shared/cf").ok().out(), fs.sh("od -An -tx1 -N 10 -j 50 shared/cf3").ok().out());
        assertEquals("100\n", fs.sh("stat -c %s shared/cf3").ok().out(), "a copy inside a file leaves its size");
    }

    @Test
    void aFileReplacedInTheStoreIsReadFreshAndEveryOpenAfterTheFirstWorks() throws IOException {
        fs.sh("echo one > shared/p && cat shared/p shared/p shared/p > /dev/null").ok();
        java.nio.file.Path tmp = fs.stored("/shared/p.tmp");
        java.nio.file.Files.writeString(tmp, "two\n");
        java.nio.file.Files.move(tmp, fs.stored("/shared/p"), java.nio.file.StandardCopyOption.ATOMIC_MOVE);
        assertEquals("two\ntwo\n", fs.sh("cat shared/p && cat shared/p").ok().out());
    }

    @Test
    void aSmallFileRewrittenWhileReadIsNeverReadAsNuls() throws IOException {
        // through the kernel's page cache, a READ that a truncating writer races comes back short while
        // the kernel's size has moved, and the rest of the page is NULs; reads passed through read the
        // store file and see it as a disk would (empty, a version, or part of one)
        assertEquals(0, readsWithNulsWhileRewritten(fs, "shared/status.json"));
    }

    @Test
    void whereReadsAreServedAFileRewrittenWhileReadIsNeverReadAsNuls() throws IOException {
        // served reads of a file being rewritten go past the page cache (FOPEN_DIRECT_IO): a short READ
        // is then short, not NULs. Rewritten through the mount, and behind it (as chibi or another host would)
        MountedFs served = served();
        String session = stats(served).get("session").asText();
        assumeTrue(session.contains("changing files and appends go direct"),
                "this kernel has no DIRECT_IO_ALLOW_MMAP (Linux 6.6+): " + session);
        assertEquals(0, readsWithNulsWhileRewritten(served, "shared/status.json"));
        assertEquals(0, readsWithNulsWhileRewritten(served, served.stored("/shared/behind.json").toString()));
    }

    /**
     * How many of the reads of a small file through {@code m}'s shared/ made while 1,500 rewrites of it
     * (truncate, then write) go to {@code writtenAt} (relative to the mount, or a store path) held a NUL.
     */
    private static int readsWithNulsWhileRewritten(MountedFs m, String writtenAt) throws IOException {
        String check = "open(w, 'w').write('{}\\n')\n"
                + "done = []\n"
                + "def write():\n"
                + "    for i in range(1500):\n"
                + "        open(w, 'w').write('{\"v\": %d, \"pad\": \"%s\"}\\n' % (i, 'y' * (i % 3000)))\n"
                + "    done.append(1)\n"
                + "bad = []\n"
                + "def read():\n"
                + "    while not done:\n"
                + "        if '\\0' in open(p).read(): bad.append(1)\n";
        return Integer.parseInt(writerAndReaders(m, writtenAt, check, "len(bad)"));
    }

    /**
     * Runs {@code program} in Python with {@code w} the path {@code writtenAt} and {@code p} the same
     * name in the mount's shared/: its {@code write()} in one thread, its {@code read()} in three,
     * then prints {@code result}.
     */
    private static String writerAndReaders(MountedFs m, String writtenAt, String program, String result) throws IOException {
        String run = "import os, sys, threading\n"
                + "w = sys.argv[1]; p = 'shared/' + os.path.basename(w)\n"
                + program
                + "ts = [threading.Thread(target=write)] + [threading.Thread(target=read) for _ in range(3)]\n"
                + "[t.start() for t in ts]; [t.join() for t in ts]\n"
                + "print(" + result + ")\n";
        return m.python(run, writtenAt).ok().out().trim();
    }

    @Test
    void aFileReplacedManyTimesASecondIsAlwaysFoundAndOpenedWhole() throws IOException {
        // a status file replaced by write-and-rename while agents stat and read it, through the mount and
        // behind it: a stat said ENOENT, and an open retried after ESTALE found it replaced again and said
        // "Stale file handle", neither of which a disk does
        assertEquals("0 0", readsFailingWhileReplaced(fs, "shared/status.json"));
        assertEquals("0 0", readsFailingWhileReplaced(fs, fs.stored("/shared/behind.json").toString()));
    }

    /**
     * "F B": of the stats and reads of a small file through {@code m}'s shared/ made while 1,500
     * replaces of it (a new file renamed over it) go to {@code writtenAt} (relative to the mount, or a
     * store path), how many failed and how many read something other than one whole version.
     */
    private static String readsFailingWhileReplaced(MountedFs m, String writtenAt) throws IOException {
        String check = "ver = lambda i: b'{\"v\": %d, \"pad\": \"%s\"}\\n' % (i, b'y' * (i * 37 % 3000))\n"
                + "open(w, 'wb').write(ver(0))\n"
                + "done = []; failed = []; bad = []\n"
                + "def write():\n"
                + "    for i in range(1, 1500):\n"
                + "        open(w + '.tmp', 'wb').write(ver(i)); os.replace(w + '.tmp', w)\n"
                + "    done.append(1)\n"
                + "def read():\n"
                + "    while not done:\n"
                + "        try: os.stat(p); b = open(p, 'rb').read()\n"
                + "        except OSError as e: failed.append(e.errno); continue\n"
                + "        if b != ver(int(b[6:b.index(b',')])): bad.append(1)\n";
        return writerAndReaders(m, writtenAt, check, "len(failed), len(bad)");
    }

    @Test
    void aSmallFileAtRestReadAgainAsksNothingButItsOpen() throws IOException {
        // its content goes into the kernel's pages with the open's answer instead of the read passing
        // through, which would make the kernel take the atime as changed and ask GETATTR at each stat
        assertReadAgainAsksOnlyItsOpen(fs, "/shared/lib.py");
    }

    @Test
    void whereReadsAreServedASmallFileReadAgainAsksNothingButItsOpen() throws IOException {
        // no READ, and no GETATTR for the atime a served READ would make the kernel take as changed
        MountedFs served = served();
        assertReadAgainAsksOnlyItsOpen(served, "/shared/mod.py");
    }

    /** A small file at rest in {@code m}'s store, read and stat'ed 20 times: 20 OPEN, no READ, at most one GETATTR. */
    private static void assertReadAgainAsksOnlyItsOpen(MountedFs m, String path) throws IOException {
        java.nio.file.Path file = java.nio.file.Files.writeString(m.stored(path), "import os\n");
        // at rest (a file modified in the last second is read past the page cache)
        java.nio.file.Files.setLastModifiedTime(file, java.nio.file.attribute.FileTime.from(
                java.time.Instant.now().minus(java.time.Duration.ofMinutes(1))));
        String name = path.substring(1);
        JsonNode before = stats(m);
        assertEquals("import os\n".repeat(20), m.sh("for i in $(seq 20); do cat " + name + ";"
                + " stat -c %s " + name + " > /dev/null; done").ok().out());
        JsonNode after = stats(m);
        assertEquals(20, count(after, "OPEN") - count(before, "OPEN"), after.toString());
        assertEquals(0, count(after, "READ") - count(before, "READ"), after.toString());
        assertTrue(count(after, "GETATTR") - count(before, "GETATTR") <= 1, after.toString());
    }

    @Test
    void readersAndWritersOfOneFileInAnyOrderSeeEachOther() throws IOException {
        // the kernel fails (EIO) an open passed through while another open of the inode uses its page
        // cache, and the other way round: the daemon keeps every open of a file on one side
        fs.sh("echo one > shared/both").ok();
        String out = fs.sh("exec 3< shared/both && read first <&3 && echo two >> shared/both"
                + " && exec 4>> shared/both && echo three >&4 && cat <&3 && exec 4>&- && cat shared/both"
                + " && exec 3<&- && echo \"$first\"").ok().out();
        assertEquals("two\nthree\none\ntwo\nthree\none\n", out);
        assertEquals("one\ntwo\nthree\n", fs.sh("cat '" + fs.stored("/shared/both") + "'").ok().out());
        // a writer first (passed through), then readers: they share its backing file
        String big = fs.sh("exec 5>> shared/both && echo four >&5 && cat shared/both && exec 5>&-").ok().out();
        assertEquals("one\ntwo\nthree\nfour\n", big);
    }

    @Test
    void aSmallFileChangedInTheStoreIsReadWhole() throws IOException {
        fs.sh("printf 'long first version\\n' > shared/grow && cat shared/grow > /dev/null").ok();
        java.nio.file.Files.writeString(fs.stored("/shared/grow"), "v2\n");
        assertEquals("v2\n", fs.sh("cat shared/grow").ok().out());
        java.nio.file.Files.writeString(fs.stored("/shared/grow"), "version three, longer than both\n");
        assertEquals("version three, longer than both\n", fs.sh("cat shared/grow").ok().out());
        // written through the mount after a shorter store version: no byte of an older one shows
        fs.sh("printf 'x' > shared/grow && printf 'y' | dd of=shared/grow bs=1 seek=20 conv=notrunc status=none").ok();
        assertEquals("x" + "\0".repeat(19) + "y", fs.sh("cat shared/grow").ok().out());
    }
}
