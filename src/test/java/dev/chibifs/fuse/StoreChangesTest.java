package dev.chibifs.fuse;

import dev.chibifs.testing.MountedFs;
import dev.chibifs.testing.Sh;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * With {@code --kernel-cache 30s} the kernel caches names, attributes and missing names for 30 s; what changes in the store behind the mount (chibi writes it directly, another agent's
 * mount is another daemon) must still show within moments. Each case first makes the kernel cache
 * the old state, then changes the store directly, then expects the new state well within the
 * timeout: without invalidations it would take 30 s.
 */
@Timeout(120)
class StoreChangesTest {

    /** Far below the 30 s the kernel would otherwise serve the old state for. */
    private static final long WITHIN_MS = 5_000;

    private static MountedFs fs;

    @BeforeAll
    static void mount() {
        fs = MountedFs.start("--context", "planner", "--kernel-cache", "30s");
    }

    @AfterAll
    static void unmount() {
        if (fs != null) {
            fs.close();
        }
    }

    @Test
    void theMountCachesForLong() {
        // otherwise every case below would pass on the kernel's 1 s default alone; the daemon logs
        // its options just after the mount answers, so the line may be a moment behind
        String options = "entry_timeout=30,attr_timeout=30,negative_timeout=30";
        long deadline = System.currentTimeMillis() + WITHIN_MS;
        while (!fs.log().contains(options) && System.currentTimeMillis() < deadline) {
            sleep(20);
        }
        assertTrue(fs.log().contains(options), fs.log());
    }

    @Test
    void thirtySecondsIsTheDefaultWhereTheKernelCanExpireNamesAndOffKeepsLibfusesSecond() {
        try (MountedFs byDefault = MountedFs.start("--context", "planner");
             MountedFs off = MountedFs.start("--context", "planner", "--kernel-cache", "off")) {
            // the daemons log their options just after the mount answers
            long deadline = System.currentTimeMillis() + WITHIN_MS;
            while (!(byDefault.log().contains("; options ") && off.log().contains("; options "))
                    && System.currentTimeMillis() < deadline) {
                sleep(20);
            }
            // before Linux 6.2 a changed directory's name can only be dropped, which fails getcwd inside it
            String expected = FuseDaemon.kernelExpiresOnly()
                    ? "; options entry_timeout=30,attr_timeout=30,negative_timeout=30,fsname=chibifs,"
                    : "; options fsname=chibifs,";
            assertTrue(byDefault.log().contains(expected), byDefault.log());
            assertTrue(off.log().contains("; options fsname=chibifs,"), off.log());
            assertFalse(off.log().contains("entry_timeout"), off.log());
        }
    }

    @Test
    void withNothingFollowedAFileGrownInTheStoreIsReadWholeByTheNextOpen() throws IOException {
        // off follows nothing: the kernel keeps a size it was told for its 1 s attribute timeout, and a
        // read through its page cache stops there, so the open that finds the file changed drops it
        try (MountedFs off = MountedFs.start("--context", "planner", "--kernel-cache", "off", "--no-passthrough")) {
            Path small = off.stored("/shared/grown.txt");
            Path big = off.stored("/shared/grown.bin");
            Files.writeString(small, "one\n");
            Files.write(big, new byte[100_000]);
            assertEquals("4\n100000\n", off.sh("wc -c < shared/grown.txt && wc -c < shared/grown.bin").ok().out());
            Files.writeString(small, "two\n", java.nio.file.StandardOpenOption.APPEND);
            Files.write(big, new byte[50_000], java.nio.file.StandardOpenOption.APPEND);
            assertEquals("one\ntwo\n", off.sh("cat shared/grown.txt").ok().out());
            assertEquals("150000\n", off.sh("cat shared/grown.bin | wc -c").ok().out());
        }
    }

    @Test
    void aKernelCacheOutOfRangeIsRefusedNamingTheRule() throws IOException {
        Path mnt = Files.createTempDirectory("chibifs-kc");
        Sh.Result r = MountedFs.cli("mount", "--context", "planner", "--kernel-cache", "2h", mnt.toString());
        assertEquals(2, r.exitCode(), r.err());
        assertTrue(r.err().contains("'--kernel-cache': '2h' is out of range: whole seconds from 1s to 1h, or off"), r.err());
        Files.delete(mnt);
    }

    @Test
    void aNameCreatedInTheStoreShowsAlthoughItsAbsenceWasCached() throws IOException {
        assertEquals("absent\n", fs.sh("test -e shared/late.md || echo absent").ok().out());
        Files.writeString(fs.stored("/shared/late.md"), "here\n");
        eventually("cat shared/late.md 2>&1", "here\n");
    }

    /** A hard-linked file's first name renamed in the store: the others, and the new one, still reach it. */
    @Test
    void aHardLinkedFileRenamedInTheStoreIsReachedByEveryNameLeft() throws IOException {
        fs.sh("echo hello > shared/hl-first && ln shared/hl-first shared/hl-second && cat shared/hl-first shared/hl-second").ok();
        Files.move(fs.stored("/shared/hl-first"), fs.stored("/shared/hl-moved"));
        eventually("cat shared/hl-moved 2>&1", "hello\n");
        assertEquals("hello\n", fs.sh("cat shared/hl-second").ok().out());
        fs.sh("echo more >> shared/hl-second").ok();
        assertEquals("hello\nmore\n", fs.sh("cat shared/hl-moved").ok().out());
        assertEquals("2\n", fs.sh("stat -c %h shared/hl-second").ok().out());
    }

    /** A log renamed in the store and written there on: a descriptor open on it sees it grow, as tail -f polls. */
    @Test
    void aFileRenamedInTheStoreAndGrownThereGrowsInTheFstatOfItsOpenDescriptors() {
        String store = fs.stored("/shared").toString();
        PosixBehaviourTest.python(fs, """
                with open('shared/rotated.log', 'w') as f:
                    f.write('one\\n')
                fd = os.open('shared/rotated.log', os.O_RDONLY)
                assert os.fstat(fd).st_size == 4
                os.rename(STORE + '/rotated.log', STORE + '/rotated.log.1')
                deadline = time.time() + 5
                while os.path.exists('shared/rotated.log') and time.time() < deadline:
                    time.sleep(0.02)  # until the mount has heard of the rename (the name goes after the attributes)
                assert os.fstat(fd).st_size == 4
                with open(STORE + '/rotated.log.1', 'a') as f:
                    f.write('two\\n')
                deadline = time.time() + 5
                while os.fstat(fd).st_size != 8 and time.time() < deadline:
                    time.sleep(0.02)  # a poll's interval, as tail -f's; the deadline decides
                assert os.fstat(fd).st_size == 8, os.fstat(fd).st_size
                os.close(fd)
                """.replace("STORE", "'" + store + "'"));
    }

    /**
     * fchmod(2), futimens(2) and fsetxattr(2) come as requests about the node, without the handle: of
     * a file renamed (and its name taken by another) in the store, they act on the descriptor's file
     * as on a disk, also from a child that inherited the descriptor and opened nothing itself.
     */
    @Test
    void aDescriptorInheritedAcrossForkChangesItsFileRenamedInTheStore() {
        String store = fs.stored("/shared").toString();
        PosixBehaviourTest.python(fs, """
                with open('shared/forked', 'w') as f:
                    f.write('mine')
                fd = os.open('shared/forked', os.O_RDWR)
                os.rename(STORE + '/forked', STORE + '/forked.moved')
                deadline = time.time() + 5
                while os.path.exists('shared/forked') and time.time() < deadline:
                    time.sleep(0.02)  # until the mount has heard of the rename
                # not looked up through the mount: a lookup finding another file there would leave the
                # kernel no name for the node, so only descriptors could reach it
                with open(STORE + '/forked', 'w') as f:
                    f.write('another file')
                pid = os.fork()
                if pid == 0:
                    try:
                        os.fchmod(fd, 0o755)
                        os.utime(fd, ns=(0, 0))
                        os.setxattr(fd, 'user.mark', b'child')
                        os._exit(0)
                    except OSError as e:
                        print(e)
                        os._exit(1)
                assert os.waitpid(pid, 0)[1] == 0, 'the child failed'
                moved = os.stat(STORE + '/forked.moved')
                assert moved.st_mode & 0o111 == 0o111 and moved.st_mtime_ns == 0, moved
                assert os.getxattr(STORE + '/forked.moved', 'user.mark') == b'child'
                other = os.stat(STORE + '/forked')
                assert other.st_mode & 0o111 == 0 and other.st_mtime_ns != 0, other
                assert 'user.mark' not in os.listxattr(STORE + '/forked')
                os.close(fd)
                """.replace("STORE", "'" + store + "'"));
    }

    /** As {@link #aDescriptorInheritedAcrossForkChangesItsFileRenamedInTheStore}, by a thread of the process whose opening thread has exited. */
    @Test
    void aDescriptorOpenedByAThreadThatExitedChangesItsFileRenamedInTheStore() {
        String store = fs.stored("/shared").toString();
        PosixBehaviourTest.python(fs, """
                import threading
                with open('shared/threaded', 'w') as f:
                    f.write('mine')
                opened = []
                t = threading.Thread(target=lambda: opened.append(os.open('shared/threaded', os.O_RDWR)))
                t.start()
                t.join()
                os.rename(STORE + '/threaded', STORE + '/threaded.moved')
                deadline = time.time() + 5
                while os.path.exists('shared/threaded') and time.time() < deadline:
                    time.sleep(0.02)  # until the mount has heard of the rename
                os.utime(opened[0], ns=(0, 0))
                assert os.stat(STORE + '/threaded.moved').st_mtime_ns == 0
                os.close(opened[0])
                """.replace("STORE", "'" + store + "'"));
    }

    /** A name of a hard-linked file removed in the store: its other names show one link less. */
    @Test
    void aLinkRemovedInTheStoreShowsInTheLinkCountOfTheOthers() throws IOException {
        fs.sh("echo x > shared/linked-kept && ln shared/linked-kept shared/linked-extra && stat shared/linked-kept > /dev/null").ok();
        assertEquals("2\n", fs.sh("stat -c %h shared/linked-kept").ok().out());
        Files.delete(fs.stored("/shared/linked-extra"));
        eventually("stat -c %h shared/linked-kept", "1\n");
    }

    @Test
    void anAppendInTheStoreShowsInStat() throws IOException {
        fs.sh("echo one > shared/grow.md").ok();
        assertEquals("4\n", fs.sh("stat -c %s shared/grow.md").ok().out());
        Files.writeString(fs.stored("/shared/grow.md"), "two\n", StandardOpenOption.APPEND);
        eventually("stat -c %s shared/grow.md", "8\n");
        assertEquals("one\ntwo\n", fs.sh("cat shared/grow.md").ok().out());
    }

    @Test
    void anOpenFileSeesItGrowInTheStore() throws Exception {
        fs.sh("echo one > shared/log.txt").ok();
        // fstat of an open descriptor, as tail -f polls: no name is walked, so the inode itself must hear
        try (FileChannel open = FileChannel.open(fs.at("/shared/log.txt"), StandardOpenOption.READ)) {
            assertEquals(4, open.size());
            Files.writeString(fs.stored("/shared/log.txt"), "two\n", StandardOpenOption.APPEND);
            long deadline = System.currentTimeMillis() + WITHIN_MS;
            while (open.size() != 8 && System.currentTimeMillis() < deadline) {
                Thread.sleep(20);
            }
            assertEquals(8, open.size());
        }
    }

    @Test
    void aRemovalAndAnAtomicReplaceInTheStoreShow() throws IOException {
        fs.sh("echo old > shared/gone.md && echo old > shared/replaced.md").ok();
        fs.sh("stat shared/gone.md shared/replaced.md > /dev/null").ok();
        Files.delete(fs.stored("/shared/gone.md"));
        // as chibi writes: a temporary file renamed over the name
        Path tmp = fs.stored("/shared/.replaced.md.tmp");
        Files.writeString(tmp, "the new text\n");
        Files.move(tmp, fs.stored("/shared/replaced.md"), StandardCopyOption.ATOMIC_MOVE);
        eventually("test -e shared/gone.md && echo present || echo absent", "absent\n");
        eventually("stat -c %s shared/replaced.md && cat shared/replaced.md", "13\nthe new text\n");
    }

    @Test
    void aDirectoryMadeInTheStoreIsListed() throws IOException {
        fs.sh("mkdir shared/work").ok();
        assertEquals("", fs.sh("ls shared/work; ls -d shared/work/sub 2>/dev/null || true").ok().out());
        Files.createDirectories(fs.stored("/shared/work/sub"));
        Files.writeString(fs.stored("/shared/work/sub/a.txt"), "a\n");
        eventually("ls shared/work && cat shared/work/sub/a.txt", "sub\na\n");
        eventually("stat -c %h shared/work", "3\n");
    }

    @Test
    void aNameMadeThroughTheMountShowsAgainWhenMovedBackInTheStore() throws IOException {
        // made through the mount, so the kernel got each name in an entry reply, and the daemon skips
        // the store's echo of it; once the name was invalidated and cached missing, that reply vouches for nothing
        fs.sh("echo here > shared/roam.md && mkdir shared/roam.d").ok();
        Files.move(fs.stored("/shared/roam.md"), fs.stored("/shared/roam.away"));
        Files.move(fs.stored("/shared/roam.d"), fs.stored("/shared/roam.d.away"));
        eventually("test -e shared/roam.md || test -e shared/roam.d || echo absent", "absent\n");
        Files.move(fs.stored("/shared/roam.away"), fs.stored("/shared/roam.md"));
        Files.move(fs.stored("/shared/roam.d.away"), fs.stored("/shared/roam.d"));
        eventually("cat shared/roam.md && test -d shared/roam.d && echo back", "here\nback\n");
    }

    @Test
    void aListingTheKernelKeepsShowsChangesFromEitherSide() throws IOException {
        // listed twice, so the kernel keeps the listing: each change must still show in the next ls
        fs.sh("mkdir shared/kept && touch shared/kept/a && ls shared/kept && ls shared/kept").ok();
        assertEquals("a\nb\n", fs.sh("touch shared/kept/b && ls shared/kept").ok().out(), "made through the mount: at once");
        Files.writeString(fs.stored("/shared/kept/c"), "c\n");
        eventually("ls shared/kept", "a\nb\nc\n");
        Files.move(fs.stored("/shared/kept/a"), fs.stored("/shared/kept/d"));
        Files.delete(fs.stored("/shared/kept/b"));
        eventually("ls shared/kept", "c\nd\n");
        assertEquals("c\n", fs.sh("rm shared/kept/d && ls shared/kept").ok().out());
    }

    @Test
    void aNameRemovedInTheStoreLeavesAListingTheKernelKeepsAfterItForgotTheNames() throws IOException {
        assumeTrue(Files.isWritable(Path.of("/proc/sys/vm/drop_caches")), "needs root, to make the kernel forget");
        // the shell in the directory pins it, and its kept listing, while the kernel evicts the
        // names' inodes (FORGET): the daemon then holds no node for b when the store loses it
        Path b = fs.stored("/shared/forgot/b");
        String script = "mkdir shared/forgot && touch shared/forgot/a shared/forgot/b && cd shared/forgot"
                + " && ls > /dev/null && ls > /dev/null && sync && echo 2 > /proc/sys/vm/drop_caches"
                + " && rm '" + b + "'"
                + " && i=0; while ls | grep -qx b && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done; ls";
        assertEquals("a\n", fs.sh(script).ok().out());
    }

    @Test
    void attributesAListingBroughtShowChangesMadeInTheStore() throws IOException {
        // find -printf gets sizes from the listing itself (READDIRPLUS), kept for 30 s like a lookup's
        fs.sh("mkdir shared/sizes && echo a > shared/sizes/one && echo bb > shared/sizes/two").ok();
        assertEquals("one 2\ntwo 3\n", fs.sh("find shared/sizes -type f -printf '%f %s\\n' | sort").ok().out());
        Files.writeString(fs.stored("/shared/sizes/one"), "more\n", StandardOpenOption.APPEND);
        Files.delete(fs.stored("/shared/sizes/two"));
        Files.writeString(fs.stored("/shared/sizes/three"), "ccc\n");
        eventually("find shared/sizes -type f -printf '%f %s\\n' | sort", "one 7\nthree 4\n");
        eventually("stat -c %s shared/sizes/one", "7\n");
    }

    @Test
    void aListingRightAfterChangesThroughTheMountShowsThem() {
        // a listing sends each file's metadata as last read (kept with its node) instead of reading
        // the store again: what the mount's own writes, truncates, renames and links change must
        // show in the very next listing, without waiting for the store's change feed
        fs.sh("mkdir shared/ownchanges && for i in $(seq 1 300); do printf %0${i}d 0 > shared/ownchanges/f$i; done").ok();
        java.util.Set<String> sizes = lines(fs.sh("find shared/ownchanges -type f -printf '%f %s\\n'").ok().out());
        assertEquals(300, sizes.size());
        for (int i = 1; i <= 300; i++) {
            assertTrue(sizes.contains("f" + i + " " + i), "f" + i + " in " + sizes);
        }
        // a file open for writing: its passthrough writes reach the store without the daemon, and the
        // new name makes the kernel ask for the listing again while the file is still open
        // (writes in a run: the feed gathers their echo for 10 ms, so the listings come before it)
        String growing = fs.sh("exec 3>> shared/ownchanges/f5 && for i in $(seq 1 30); do echo x >&3"
                + " && : > shared/ownchanges/new$i && find shared/ownchanges -name f5 -printf '%s '; done; exec 3>&-").ok().out();
        assertEquals(java.util.stream.IntStream.rangeClosed(1, 30).mapToObj(i -> (5 + 2 * i) + " ")
                .collect(java.util.stream.Collectors.joining()), growing);
        fs.sh("rm shared/ownchanges/new* && truncate -s 5 shared/ownchanges/f5").ok();
        java.util.Set<String> after = lines(fs.sh("for i in $(seq 1 300); do echo >> shared/ownchanges/f$i; done"
                + " && truncate -s 7 shared/ownchanges/f1 && mv shared/ownchanges/f2 shared/ownchanges/g2 && ln shared/ownchanges/f3 shared/ownchanges/h3"
                + " && find shared/ownchanges -type f -printf '%f %s %n\\n'").ok().out());
        assertEquals(301, after.size());
        for (int i = 4; i <= 300; i++) {
            assertTrue(after.contains("f" + i + " " + (i + 1) + " 1"), "f" + i + " in " + after);
        }
        assertTrue(after.containsAll(java.util.List.of("f1 7 1", "g2 3 1", "f3 4 2", "h3 4 2")), after.toString());
    }

    @Test
    void listingsThroughChangesOnBothSidesEndTrueToTheStore() throws Exception {
        // what a listing keeps of each file must never outlast a change: appends, truncates, renames
        // and links through the mount and appends in the store, while find lists throughout
        fs.sh("mkdir shared/churn && for i in $(seq 1 100); do echo $i > shared/churn/f$i; done").ok();
        java.util.concurrent.atomic.AtomicBoolean going = new java.util.concurrent.atomic.AtomicBoolean(true);
        Thread behind = new Thread(() -> {
            java.util.Random random = new java.util.Random(1);
            while (going.get()) {
                try {
                    Files.writeString(fs.stored("/shared/churn/f" + (1 + random.nextInt(100))), "store\n",
                            StandardOpenOption.APPEND);
                } catch (IOException renamedMeanwhile) {
                    // moved away by the mount's side for a moment
                }
            }
        });
        behind.start();
        try {
            fs.sh("d=shared/churn"
                    + "; i=0; while [ $i -lt 600 ]; do echo more >> $d/f$((i * 37 % 100 + 1)); i=$((i + 1)); done & w=$!"
                    + "; i=0; while [ $i -lt 200 ]; do n=$((i * 53 % 100 + 1)); truncate -s $((i % 20)) $d/f$n;"
                    + " mv $d/f$n $d/g$n && mv $d/g$n $d/f$n; ln $d/f$n $d/h$n && rm $d/h$n; i=$((i + 1)); done 2>/dev/null & m=$!"
                    + "; while kill -0 $w 2>/dev/null || kill -0 $m 2>/dev/null; do"
                    + " find $d -type f -printf '%f %s\\n' > /dev/null 2>&1; done; wait").ok();
        } finally {
            going.set(false);
            behind.join();
        }
        StringBuilder expected = new StringBuilder();
        try (java.util.stream.Stream<Path> files = Files.list(fs.stored("/shared/churn"))) {
            for (Path f : files.sorted().toList()) {
                expected.append(f.getFileName()).append(' ').append(Files.size(f)).append('\n');
            }
        }
        eventually("find shared/churn -type f -printf '%f %s\\n' | LC_ALL=C sort", expected.toString());
    }

    private static java.util.Set<String> lines(String out) {
        return java.util.Set.copyOf(out.lines().toList());
    }

    @Test
    void aFileListedBeforeShowsInTheNextListingAsChangedInTheStore() throws IOException {
        fs.sh("mkdir shared/listed && echo a > shared/listed/one && echo b > shared/listed/two").ok();
        assertEquals("one 2\ntwo 2\n", fs.sh("find shared/listed -type f -printf '%f %s\\n' | sort").ok().out());
        Files.writeString(fs.stored("/shared/listed/one"), "longer\n", StandardOpenOption.APPEND);
        Files.move(fs.stored("/shared/listed/two"), fs.stored("/shared/listed/three"));
        // a new name makes the kernel ask for the listing again; the change is the feed's to tell
        eventually(": > shared/listed/new && find shared/listed -type f -printf '%f %s\\n' | sort",
                "new 0\none 9\nthree 2\n");
    }

    @Test
    void aDirectoryNothingLookedIntoShowsItsNewLinkCount() throws IOException {
        // its name is followed (its parent's watch), but a subdirectory made inside it changes only its
        // own link count and mtime, which no watch tells until something looks into it
        Files.createDirectories(fs.stored("/shared/unvisited"));
        assertEquals("2\n", fs.sh("stat -c %h shared/unvisited").ok().out());
        Files.createDirectory(fs.stored("/shared/unvisited/inner"));
        eventually("stat -c %h shared/unvisited", "3\n");
    }

    @Test
    void whatIsInADirectoryThatCannotBeFollowedShowsWithinLibfusesSecond() throws IOException {
        // a FUSE file system mounted inside the store (NFS alike): inotify hears none of its changes,
        // so the kernel may keep what it learns there for libfuse's 1 s only, not the mount's 30 s
        Path remote = Files.createDirectory(fs.stored("/shared/remote"));
        try (MountedFs inner = MountedFs.startAt(remote, "--context", "planner", "--kernel-cache", "off")) {
            Files.writeString(inner.stored("/shared/x.md"), "one\n");
            assertEquals("4\n", fs.sh("stat -c %s shared/remote/shared/x.md").ok().out());
            assertEquals("absent\n", fs.sh("test -e shared/remote/shared/late.md || echo absent").ok().out());
            Files.writeString(inner.stored("/shared/x.md"), "two\n", StandardOpenOption.APPEND);
            Files.writeString(inner.stored("/shared/late.md"), "here\n");
            eventually("stat -c %s shared/remote/shared/x.md", "8\n");
            eventually("cat shared/remote/shared/late.md 2>&1", "here\n");
            assertTrue(fs.log().contains("is on a file system whose changes inotify cannot see"), fs.log());
        }
    }

    @Test
    void aProcessWorkingInADirectoryChangedInTheStoreKeepsItsWorkingDirectory() throws IOException {
        // an agent's shell or git sits in a directory that someone else touches, chmods or fills:
        // the name is made stale, not dropped (FUSE_EXPIRE_ONLY), or getcwd in it fails with ENOENT;
        // and the directory's own attributes, which "." shows without walking a name, follow too
        Files.createDirectories(fs.stored("/shared/cwd/inner"));
        Path inner = fs.stored("/shared/cwd/inner");
        // "test -e": a lookup in it, so the mount follows it, and from then on keeps its attributes for
        // long (the lookup's own reply kept them for 1 s only); touch -d: a change only its own watch tells
        String script = "cd shared/cwd/inner && test ! -e nothing && sleep 1.1 && stat . > /dev/null"
                + " && touch -d @1000000000 '" + inner + "' && touch '" + inner.getParent() + "'"
                + " && i=0; while [ \"$(stat -c %Y .)\" != 1000000000 ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done"
                + "; sleep 0.2; stat -c %Y . && /bin/pwd -P"
                + " && echo new > '" + inner.resolve("new.md") + "' && sleep 0.2 && cat new.md";
        assertEquals("1000000000\n" + fs.at("/shared/cwd/inner").toRealPath() + "\nnew\n",
                fs.sh(script).ok().out());
    }

    @Test
    void aProcessWorkingInADirectoryMovedAwayAndBackInTheStoreKeepsItsWorkingDirectory() throws IOException {
        // a name event the daemon cannot vouch for: the name is invalidated; where the kernel can
        // (Linux 6.2), only expired, so the shell inside still has a working directory
        Files.createDirectories(fs.stored("/shared/roundtrip/inner"));
        Path inner = fs.stored("/shared/roundtrip/inner");
        Path away = inner.resolveSibling("away");
        String script = "cd shared/roundtrip/inner && test ! -e nothing"
                + " && mv '" + inner + "' '" + away + "' && mv '" + away + "' '" + inner + "'"
                + " && sleep 0.3 && /bin/pwd -P";
        Sh.Result r = fs.sh(script);
        if (FuseDaemon.kernelExpiresOnly()) {
            assertEquals(fs.at("/shared/roundtrip/inner").toRealPath() + "\n", r.ok().out());
        } else {
            assertTrue(r.exitCode() == 0 || r.err().contains("pwd"), r.err()); // unhashed: no stronger promise
        }
    }

    /** Runs {@code script} until it prints {@code expected}, for {@link #WITHIN_MS} at most. */
    private static void eventually(String script, String expected) {
        long deadline = System.currentTimeMillis() + WITHIN_MS;
        Sh.Result r = fs.sh(script);
        while (!expected.equals(r.out()) && System.currentTimeMillis() < deadline) {
            sleep(20);
            r = fs.sh(script);
        }
        assertEquals(expected, r.out(), script + " (stderr: " + r.err() + ")");
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
