package dev.chibifs.fuse;

import dev.chibifs.testing.MountedFs;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The round trips the kernel need not make, it does not: every request costs a caller a wait on
 * the daemon. Counted with {@code chibifs stats}, the daemon's own count of the requests it
 * served: a program's requests are all served by the time it exits.
 */
@Timeout(120)
class KernelRequestsTest {

    private static MountedFs fs;

    @BeforeAll
    static void mount() {
        // kernel cache on: a cached lookup sends nothing, so what a program needs shows alone;
        // no passthrough: these count the requests of reads and writes the daemon serves; no xattr: the
        // kernel then asks none, not even security.capability before each write it serves
        fs = MountedFs.start("--context", "planner", "--kernel-cache", "30s", "--no-passthrough", "--no-xattr");
    }

    @AfterAll
    static void unmount() {
        fs.close();
    }

    @Test
    void aChownOfAFileAsksForNoAttributesFirst() {
        String chown = "chown \"$(id -u):$(id -g)\" shared/owned";
        Map<String, Long> sent = requestsOf("echo x > shared/owned && stat shared/owned >/dev/null", chown);
        if (sent.containsKey("LOOKUP") || sent.containsKey("GETATTR")) {
            // the kernel dropped the name or its attributes between the setup and the chown (seen
            // beside StressTest, this class taking 44-428 s: the store's event of the setup's write
            // told after the settling lock, or a timeout run out): that GETATTR says nothing of
            // killpriv, so it is measured again, settled; a kernel asking for killpriv asks again
            sent = requestsOf("stat shared/owned >/dev/null", chown);
        }
        // without FUSE_HANDLE_KILLPRIV in the INIT reply the kernel first asks for the file's attributes
        // (GETATTR), to learn whether set-user-ID bits need clearing: chibifs never shows any
        assertTrue(sent.containsKey("SETATTR") && !sent.containsKey("GETATTR"), sent.toString());
    }

    @Test
    void aCloseSendsNoFlushAndAWriteAsksForNoExtendedAttribute() {
        // the first FLUSH and GETXATTR may come (and be answered ENOSYS) while setting up
        Map<String, Long> sent = requestsOf("echo x > shared/w1 && echo y >> shared/w1 && cat shared/w1 >/dev/null",
                "echo z >> shared/w1 && cat shared/w1 >/dev/null");
        assertTrue(sent.containsKey("WRITE"), sent.toString());
        assertTrue(!sent.containsKey("FLUSH") && !sent.containsKey("GETXATTR"), sent.toString());
    }

    @Test
    void aLinkIsReadOnceThenKeptByTheKernel() {
        // FUSE_CACHE_SYMLINKS: a walk through a link (a venv's lib64 -> lib, node_modules/.bin) asks nothing
        String script = "readlink shared/link && cat shared/link && readlink shared/link && cat shared/link";
        Map<String, Long> sent = requestsOf("echo x > shared/target && ln -s target shared/link && readlink shared/link", script);
        if (sent.containsKey("READLINK")) {
            // the setup's own events, told by the store's feed after the settling lock on a loaded
            // machine (a two-fork CI run, this test taking 48 s), may drop the link's page once: the
            // kernel's keeping is measured again, settled; a kernel that keeps nothing asks again
            sent = requestsOf("true", script);
        }
        assertTrue(!sent.containsKey("READLINK"), sent.toString());
    }

    @Test
    void aWriteOfOneMebibyteIsOneRequest() {
        // the kernel would cut it at 32 pages without FUSE_MAX_PAGES and max_write of 1 MiB
        Map<String, Long> sent = requestsOf("true", "dd if=/dev/zero of=shared/big bs=1M count=2 status=none");
        assertEquals(2L, sent.get("WRITE"), sent.toString());
        assertEquals("2097152\n", fs.sh("stat -c %s shared/big").ok().out());
    }

    @Test
    void aListingCarriesTheAttributesOfWhatWasWrittenThroughTheMount() {
        // each write drops the file's size and mtime in the kernel: without READDIRPLUS, find asks for
        // each file again (a GETATTR per file); with it, the listing brings them
        Map<String, Long> sent = requestsOf("mkdir -p shared/plus && for i in $(seq 40); do echo x > shared/plus/f$i; done"
                        + " && for i in $(seq 40); do echo yz >> shared/plus/f$i; done",
                "find shared/plus -type f -printf '%s\\n' | sort -u > shared/plus.out");
        assertEquals("5\n", fs.sh("cat shared/plus.out").ok().out());
        // a few: find's look at shared/plus itself, whose attributes the creates in it dropped, and the root's
        assertTrue(sent.getOrDefault("GETATTR", 0L) <= 3, sent.toString());
    }

    @Test
    void aWalkThroughATreeOpensNoDirectory() {
        // FUSE_NO_OPENDIR_SUPPORT (Linux 5.1): the first OPENDIR is answered ENOSYS, and from then on
        // the kernel opens directories itself; git status, find and rm -r walk with no OPENDIR or
        // RELEASEDIR, two round trips per directory
        Map<String, Long> sent = requestsOf("mkdir -p shared/walk/a/b/c shared/walk/d/e && touch shared/walk/a/b/c/f"
                        + " && ls -R shared > /dev/null",
                "find shared/walk > /dev/null && ls -R shared/walk > /dev/null && rm -r shared/walk/d");
        assertTrue(!sent.containsKey("OPENDIR") && !sent.containsKey("RELEASEDIR"), sent.toString());
        assertEquals("shared/walk/a/b/c/f\n", fs.sh("find shared/walk -type f").ok().out());
    }

    @Test
    void aLongListingAsksTheFirstFileForItsLabelAndAclAndNoOtherFile() {
        // with extended attributes on (the default): security.* and system.* are unsupported
        // (EOPNOTSUPP), which `ls` takes as "none on this device", where ENODATA had it ask each file
        try (MountedFs withXattr = MountedFs.start("--context", "planner", "--kernel-cache", "30s")) {
            Map<String, Long> sent = requestsOf(withXattr, "mkdir -p shared/many && for i in $(seq 50); do : > shared/many/f$i; done",
                    "ls -l shared/many > /dev/null && ls -l shared/many > /dev/null");
            assertTrue(sent.getOrDefault("GETXATTR", 0L) <= 4, sent.toString());
            assertEquals("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", withXattr.sh(
                    "python3 -c \"import os; print(os.getxattr('shared/many/f1', 'user.chibi.etag').decode(), end='')\"").ok().out(),
                    "the ETag is still there");
        }
    }

    @Test
    void aWalkAfterTheNamesExpiredReadsTheListingAgainInsteadOfLookingUpEachName() {
        // the kernel keeps a followed directory's listing until the directory changes, but the names
        // it came with expire with --kernel-cache: left kept, find would read it without asking and
        // then look each of the 100 names up again (an agent's find or grep -r after a pause)
        try (MountedFs brief = MountedFs.start("--context", "planner", "--kernel-cache", "1s")) {
            brief.sh("mkdir -p shared/many && for i in $(seq 100); do : > shared/many/f$i; done"
                    + " && find shared/many > /dev/null").ok();
            long deadline = System.currentTimeMillis() + 20_000;
            Map<String, Long> sent;
            do {
                // walks before the listing goes may look names up; the one after it reads the listing
                // (each round takes a second or so: two `chibifs stats` JVMs)
                sent = requestsOf(brief, "true", "find shared/many -printf '%s\\n' > /dev/null");
            } while (!sent.containsKey("READDIRPLUS") && System.currentTimeMillis() < deadline);
            assertTrue(sent.containsKey("READDIRPLUS"), "the listing was never asked for again: " + sent);
            // shared/many itself may be looked up: its name in shared expired too
            assertTrue(sent.getOrDefault("LOOKUP", 0L) <= 2, sent.toString());
        }
    }

    /** The requests the kernel sent while {@code script} ran, once {@code setup}'s have been served. */
    @Test
    void aCopyInsideTheMountIsMadeByTheDaemonNotReadAndWrittenThroughIt() {
        // cp asks copy_file_range(2); without COPY_FILE_RANGE the kernel copies by READ and WRITE, a
        // request per MiB each way (10x the disk's time for 512 MiB here), with it one request per 64 MiB
        Map<String, Long> sent = requestsOf("head -c 3000000 /dev/urandom > shared/orig", "cp shared/orig shared/dup");
        assertTrue(sent.containsKey("COPY_FILE_RANGE_64") || sent.containsKey("COPY_FILE_RANGE"), sent.toString());
        assertTrue(!sent.containsKey("READ") && !sent.containsKey("WRITE"), sent.toString());
        fs.sh("cmp shared/orig shared/dup").ok();
    }

    @Test
    void aSparseFileIsCopiedByItsDataNotReadThroughItsHoles() {
        // cp asks where the data is (SEEK_DATA, SEEK_HOLE): answered ENOSYS, the kernel says all of
        // the file is data and cp reads every zero (1 GiB with 8 KiB in it: 4.7 s, 278,000 READs)
        Map<String, Long> sent = requestsOf("truncate -s 64M shared/sparse"
                + " && printf data | dd of=shared/sparse bs=4096 seek=5000 conv=notrunc status=none",
                "cp shared/sparse shared/sparse2");
        assertTrue(sent.getOrDefault("READ", 0L) < 16 && sent.containsKey("LSEEK"), sent.toString());
        String where = "import os, sys\n"
                + "f = os.open(sys.argv[1], os.O_RDONLY)\n"
                + "data = os.lseek(f, 0, os.SEEK_DATA)\n"
                + "print(data, os.lseek(f, data, os.SEEK_HOLE))\n";
        String inStore = dev.chibifs.testing.Sh.python(fs.stored("/shared").getParent(), where, "shared/sparse").ok().out();
        assertEquals(inStore, fs.python(where, "shared/sparse").ok().out(), "where the data is, as the store's file system says");
        assertEquals(inStore, fs.python(where, "shared/sparse2").ok().out(), "the copy has its data where the file has");
        assertEquals(fs.sh("md5sum < '" + fs.stored("/shared/sparse") + "'").ok().out(),
                fs.sh("md5sum < '" + fs.stored("/shared/sparse2") + "'").ok().out());
    }

    private static Map<String, Long> requestsOf(String setup, String script) {
        return requestsOf(fs, setup, script);
    }

    private static Map<String, Long> requestsOf(MountedFs fs, String setup, String script) {
        fs.sh(setup).ok();
        // the store's change feed tells the setup's changes up to 10 ms later (later still on a loaded
        // machine), and what it tells can make the kernel ask again while the script runs: a granted
        // lock has the daemon tell them all first
        fs.sh(": > shared/.settled && flock shared/.settled true").ok();
        return fs.requestsSentBy(script);
    }
}
