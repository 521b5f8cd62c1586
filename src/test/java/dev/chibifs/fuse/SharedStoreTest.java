package dev.chibifs.fuse;

import dev.chibifs.testing.MountedFs;
import dev.chibifs.testing.Sh;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.time.Instant;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Two agents, one mount each, over one store, as in CI: what one writes, through its mount or as
 * chibi does straight into the store, the other reads whole at once, although its kernel cached
 * the file's old size a moment before.
 */
@Timeout(120)
class SharedStoreTest {

    private static MountedFs alice;
    private static MountedFs bob;

    @BeforeAll
    static void mount() {
        Path root = MountedFs.tempRoot();
        alice = MountedFs.start(root, "--context", "alice");
        Path bobs = MountedFs.tempRoot();
        try {
            // bob's mount over alice's store: the same home, a mountpoint of its own
            Files.createDirectories(bobs.resolve("mnt"));
            Files.createSymbolicLink(bobs.resolve("home"), root.resolve("home"));
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
        bob = MountedFs.start(bobs, "--context", "bob");
    }

    @AfterAll
    static void unmount() {
        if (bob != null) {
            bob.close();
        }
        if (alice != null) {
            alice.close();
        }
    }

    @Test
    void linesAppendedThroughTwoMountsAndTheStoreAtOnceStayWhole() throws IOException {
        assertEquals("6000 0", appendFromEverywhereAtOnce(alice, bob, "log"));
        // where writes are served, through the page cache a line ending in a page it did not fill from
        // its start went to the daemon as two writes, and the other mount's append could land between
        Path root = MountedFs.tempRoot();
        try (MountedFs a = MountedFs.start(root, "--context", "alice", "--no-passthrough");
             MountedFs b = MountedFs.start(LinksMountTest.secondMountOver(root), "--context", "bob", "--no-passthrough")) {
            assertEquals("6000 0", appendFromEverywhereAtOnce(a, b, "served.log"));
        }
    }

    /**
     * "L B": 2,000 lines of 4-63 bytes appended to shared/{@code name} by each of a process on
     * {@code a}, one on {@code b} and one in the store at once: how many lines there are, and how
     * many are not one whole line of one writer.
     */
    private static String appendFromEverywhereAtOnce(MountedFs a, MountedFs b, String name) throws IOException {
        String script = "import sys, multiprocessing\n"
                + "def work(path, tag):\n"
                + "    for i in range(2000):\n"
                + "        with open(path, 'a') as f: f.write('%s:%d:%s\\n' % (tag, i, 'x' * (i % 50)))\n"
                + "paths = sys.argv[1:]; open(paths[0], 'w').close()\n"
                + "ps = [multiprocessing.Process(target=work, args=(p, 'ABC'[k])) for k, p in enumerate(paths)]\n"
                + "[p.start() for p in ps]; [p.join() for p in ps]\n"
                + "lines = open(paths[0]).read().split('\\n')[:-1]\n"
                + "whole = lambda l: l.count(':') == 2 and l.split(':')[1].isdigit() and l.split(':')[2] == 'x' * (int(l.split(':')[1]) % 50)\n"
                + "print(len(lines), sum(1 for l in lines if not whole(l)))\n";
        return Sh.python(null, script, a.at("/shared/" + name).toString(), b.at("/shared/" + name).toString(),
                a.stored("/shared/" + name).toString()).ok().out().trim();
    }

    @Test
    void anAppendThroughOneMountIsReadWholeThroughTheOtherAtOnce() throws IOException {
        alice.sh("echo '- [ ] start' > shared/tasks.md").ok();
        appendsAreReadWhole("tasks.md", "- [ ] task ", 5,
                "cat shared/tasks.md > /dev/null && stat shared/tasks.md > /dev/null", "tasks.md");
    }

    @Test
    void anAppendIsReadWholeThroughEveryNameOfAHardLinkedFile() throws IOException {
        alice.sh("cd shared && echo one > linked && ln linked alias").ok();
        // the first name's open learns of the change; the other kernel inode must hear of it too
        appendsAreReadWhole("linked", "line ", 3, "cat shared/linked shared/alias > /dev/null", "alias", "linked");
    }

    /**
     * {@code rounds} times: bob runs {@code prime} (his kernel caches the file's size), alice appends
     * {@code line} and the round's number to shared/{@code file} through her mount, and bob must
     * then read each of shared/{@code names} whole.
     */
    private static void appendsAreReadWhole(String file, String line, int rounds, String prime, String... names)
            throws IOException {
        StringBuilder expected = new StringBuilder(Files.readString(alice.stored("/shared/" + file)));
        for (int i = 1; i <= rounds; i++) {
            bob.sh(prime).ok();
            alice.sh("echo '" + line + i + "' >> shared/" + file).ok();
            expected.append(line).append(i).append('\n');
            for (String name : names) {
                assertEquals(expected.toString(), bob.sh("cat shared/" + name).ok().out(), name + " after append " + i);
            }
        }
    }

    @Test
    void aSendfileIntoAFileKeptOpenIsReadThroughTheOtherMountBeforeItsClose() throws IOException {
        // at rest (a file modified in the last second is given to the kernel for a moment only)
        Path stored = Files.writeString(alice.stored("/shared/sent"), "start");
        Files.setLastModifiedTime(stored, FileTime.from(Instant.now().minus(Duration.ofMinutes(1))));
        bob.sh("cat shared/sent > /dev/null && stat shared/sent > /dev/null").ok(); // bob's kernel caches 5 bytes
        // with passthrough, the kernel splices into the store file and tells neither the daemon nor
        // the store's inotify (PassthroughWrites); served, the daemon writes it. Either way bob must
        // see its new size while alice still has the file open, within the 10 s here (30 s unheard)
        String script = "import os, sys, time\n"
                + "mine, theirs, source = sys.argv[1:]\n"
                + "data = bytes(range(256)) * 400\n"
                + "open(source, 'wb').write(data)\n"
                + "out = os.open(mine, os.O_WRONLY); os.lseek(out, 0, os.SEEK_END); src = os.open(source, os.O_RDONLY)\n"
                + "sent = 0\n"
                + "while sent < len(data): sent += os.sendfile(out, src, sent, len(data) - sent)\n"
                + "deadline = time.monotonic() + 10\n"
                + "while os.stat(theirs).st_size != 5 + len(data) and time.monotonic() < deadline: time.sleep(0.01)\n"
                + "seen = os.stat(theirs).st_size\n"
                + "whole = open(theirs, 'rb').read() == b'start' + data\n"
                + "os.close(out); os.close(src); os.unlink(source)\n"
                + "print('read whole' if whole and seen == 5 + len(data) else 'not yet: %d bytes' % seen)\n";
        Path source = MountedFs.tempRoot().resolve("source");
        assertEquals("read whole", Sh.python(null, script, alice.at("/shared/sent").toString(),
                bob.at("/shared/sent").toString(), source.toString()).ok().out().trim());
    }

    @Test
    void noOpenLeavesTheDaemonHoldingItsFileOnceClosed() throws IOException {
        // access mode 3 (O_WRONLY|O_RDWR, which Linux lets a process ask for) opens as a reader: one
        // taken for a writer at its open and a reader at its release kept a descriptor for good, and
        // with it the space of the file once removed
        // (larger than what an open stores in the kernel's pages: each open is passed through)
        alice.sh("head -c 100000 /dev/zero > shared/held && for mode in 0 1 2 3; do python3 -c \"import os;"
                + " os.close(os.open('shared/held', $mode))\"; done && rm shared/held").ok();
        long pid = alice.process().pid();
        String stored = alice.stored("/shared/held").toString();
        try (java.util.stream.Stream<Path> fds = Files.list(Path.of("/proc/" + pid + "/fd"))) {
            List<String> holding = fds.map(fd -> {
                try {
                    return Files.readSymbolicLink(fd).toString();
                } catch (IOException gone) {
                    return "";
                }
            }).filter(target -> target.startsWith(stored)).toList();
            assertEquals(List.of(), holding);
        }
    }

    @Test
    void aFileChibiReplacesInTheStoreIsReadWholeAtOnce() throws IOException {
        Path file = alice.stored("/shared/plan.md");
        Files.writeString(file, "v1\n");
        for (int i = 2; i <= 5; i++) {
            bob.sh("cat shared/plan.md > /dev/null").ok();
            // chibi's write_file: a temporary sibling renamed over the name, so a new inode each time
            Path tmp = file.resolveSibling(".plan.md.tmp");
            Files.writeString(tmp, ("v" + i + "\n").repeat(i));
            Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            assertEquals(("v" + i + "\n").repeat(i), bob.sh("cat shared/plan.md").ok().out(), "version " + i);
        }
    }
}
