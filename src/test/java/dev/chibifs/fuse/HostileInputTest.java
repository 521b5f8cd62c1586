package dev.chibifs.fuse;

import dev.chibifs.testing.MountedFs;
import dev.chibifs.testing.Sh;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import static dev.chibifs.fuse.PosixBehaviourTest.python;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Things planted in the store behind the daemon's back, hostile names, and every denied write as a syscall table. */
@Timeout(300)
class HostileInputTest {

    private static MountedFs fs;

    @BeforeAll
    static void mount() throws IOException {
        Path root = MountedFs.tempRoot();
        Path store = root.resolve("home/vfs");
        Files.createDirectories(store.resolve("home/coder/dir"));
        Files.writeString(store.resolve("home/coder/notes.md"), "coder's\n");
        Files.createDirectories(store.resolve("shared"));
        fs = MountedFs.start(root, "--context", "planner");
    }

    @AfterAll
    static void unmount() {
        if (fs != null) {
            fs.close();
        }
    }

    @Test
    void aFifoPlantedInTheStoreNeverBlocksTheDaemon() throws IOException {
        Sh.run("mkfifo '" + fs.stored("/shared/fifo") + "'").ok();
        // the kernel serves a fifo's data itself, as on a local disk: a reader with no writer waits
        // (timeout's 124), and meanwhile the daemon answers everything else, since it never opens the fifo
        Sh.Result waiting = fs.sh("timeout 2 cat shared/fifo");
        assertEquals(124, waiting.exitCode(), waiting.err());
        for (String cmd : new String[] {"truncate -s 0 shared/fifo", "chmod +x shared/fifo"}) {
            Sh.Result r = fs.sh("timeout 10 sh -c '" + cmd + "'");
            assertTrue(r.exitCode() != 124, cmd + ": exit " + r.exitCode() + " " + r.err());
        }
        assertEquals("through the fifo\n",
                fs.sh("(timeout 10 sh -c 'echo through the fifo > shared/fifo' &) ; timeout 10 cat shared/fifo").ok().out());
        fs.sh("touch shared/fifo && ls -l shared >/dev/null && rm shared/fifo").ok();
        assertFalse(Files.exists(fs.stored("/shared/fifo")));
    }

    @Test
    void aLinkPlantedAsADirectoryIsNeverFollowedByTheDaemon() throws IOException {
        Path outside = Files.createDirectories(fs.root().resolve("outside"));
        Files.writeString(outside.resolve("secret"), "host file\n");
        Files.createSymbolicLink(fs.stored("/shared/evil"), outside);
        // the CLI goes through the same storage as the daemon: nothing reaches the host directory
        Sh.Result read = MountedFs.cli("cat", "--home", fs.home().toString(), "vfs:///shared/evil/secret");
        assertTrue(read.exitCode() != 0 && !read.out().contains("host file"), read.out() + read.err());
        Sh.Result write = MountedFs.cli("write", "--home", fs.home().toString(), "--context", "planner",
                "vfs:///shared/evil/planted", "x");
        assertTrue(write.exitCode() != 0, write.out());
        assertFalse(Files.exists(outside.resolve("planted")));
        assertEquals("evil\n", fs.sh("cd shared && find . -maxdepth 1 -type l").ok().out().replace("./", ""));
        Files.delete(fs.stored("/shared/evil"));
    }

    @Test
    void namesWithNewlinesControlCharactersAndBadBytesAreKeptOrRefusedNeverChanged() throws IOException {
        python(fs, """
                os.chdir('shared')
                os.mkdir('names')
                os.chdir('names')
                good = ['new\\nline', 'tab\\tand\\x01ctl\\x7f', ' lead and trail ', '-dash', 'ünïcødé 日本', '.chibifs-tmp-notes']
                for n in good:
                    with open(n, 'w') as f:
                        f.write(n)
                assert sorted(os.listdir('.')) == sorted(good), os.listdir('.')
                for n in good:
                    assert open(n).read() == n
                for bad in [b'bad\\xff', b'half\\xc3', b'\\xed\\xa0\\x80surrogate']:
                    try:
                        os.close(os.open(bad, os.O_CREAT | os.O_WRONLY))
                        raise SystemExit('created %r' % bad)
                    except OSError as e:
                        assert e.errno in (errno.EILSEQ, errno.EINVAL), e
                # the store's own temporaries are reserved (libfuse's .fuse_hidden names went with libfuse)
                for reserved in ['.chibifs-tmp-0123456789abcdef']:
                    try:
                        open(reserved, 'w')
                        raise SystemExit('created ' + reserved)
                    except OSError as e:
                        assert e.errno == errno.EINVAL, e
                assert sorted(os.listdir('.')) == sorted(good), os.listdir('.')
                """);
        try (Stream<Path> names = Files.list(fs.stored("/shared/names"))) {
            assertEquals(6, names.count());
        }
        assertEquals("new\nline", Files.readString(fs.stored("/shared/names/new\nline")));
        // bytes that are not UTF-8, planted by someone else: listed, refused with EILSEQ, the store untouched
        Sh.run("cd '" + fs.stored("/shared/names") + "' && printf x > \"$(printf 'planted\\377')\"").ok();
        python(fs, """
                names = os.listdir(b'shared/names')
                assert len(names) == 7, names
                try:
                    os.stat(b'shared/names/planted\\xff')
                    raise SystemExit('stat of a name that is not UTF-8 succeeded')
                except OSError as e:
                    assert e.errno in (errno.EILSEQ, errno.ENOENT), e
                """);
        assertEquals("x", Sh.run("cd '" + fs.stored("/shared/names") + "' && cat \"$(printf 'planted\\377')\"").ok().out());
    }

    /** The real command in its own JVM for an escape and an impersonation; MountCommandTest tries every such name in-process. */
    @ParameterizedTest
    @ValueSource(strings = {"../x", "SYSTEM"})
    void contextNamesThatImpersonateOrEscapeAreRefusedAtStartup(String name) {
        Path root = MountedFs.tempRoot();
        Sh.Result r = MountedFs.cli("mount", "--foreground", "--home", root.resolve("home").toString(),
                "--context", name, root.resolve("mnt").toString());
        assertEquals(2, r.exitCode(), r.out() + r.err());
        Sh.Result map = MountedFs.cli("mount", "--foreground", "--home", root.resolve("home").toString(),
                "--uid-map", "4242=" + name, root.resolve("mnt").toString());
        assertEquals(2, map.exitCode(), map.out() + map.err());
        assertFalse(Files.exists(root.resolve("home/vfs/home").resolve(name.isEmpty() ? "x" : "x")));
    }

    @Test
    void anEmptyMountpointIsRefusedNotTakenForTheWorkingDirectory() {
        Sh.Result r = MountedFs.cli("mount", "--home", MountedFs.tempRoot().resolve("home").toString(), "--context",
                "planner", "");
        assertEquals(2, r.exitCode(), r.out() + r.err());
        assertTrue(r.err().contains("MOUNTPOINT is empty"), r.err());
    }

    @Test
    void aMountpointInsideTheStoreItWouldServeIsRefusedInOneLine() throws IOException {
        Path root = MountedFs.tempRoot();
        Path inside = root.resolve("home/vfs/shared/mp");
        Files.createDirectories(inside);
        Sh.Result r = MountedFs.cli("mount", "--home", root.resolve("home").toString(), "--context", "planner",
                inside.toString());
        assertEquals(2, r.exitCode(), r.out() + r.err());
        assertTrue(r.err().contains("inside the store") && r.err().strip().lines().count() == 1, r.err());
    }

    @Test
    void aMountpointGivenThroughALinkIsMountedWhereItLeadsAndUnmountedByEitherName() throws IOException {
        Path root = MountedFs.tempRoot();
        Path mnt = root.resolve("mnt");
        Files.createDirectories(mnt);
        Path link = Files.createSymbolicLink(root.resolve("link"), mnt);
        Sh.Result r = MountedFs.cli("mount", "--home", root.resolve("home").toString(), "--context", "planner", link.toString());
        try {
            assertEquals(0, r.exitCode(), r.out() + r.err());
            assertTrue(r.out().contains("mounted " + mnt), "the kernel mounts where the link leads, as mount(8): " + r.out());
            assertTrue(Files.isDirectory(mnt.resolve("shared")));
        } finally {
            MountedFs.cli("umount", link.toString()).ok();
        }
        assertFalse(Files.exists(mnt.resolve("shared")), "unmounted by the link's name");
    }

    /**
     * Every write-type syscall against zones planner may not write: EACCES (the kernel's own errno
     * where it refuses before asking the daemon, e.g. ftruncate of a read-only handle), and the
     * store unchanged. One python program runs the table and prints one line per row.
     */
    @Test
    void everyWriteTypeSyscallInADeniedZoneIsRefusedAndChangesNothing() throws IOException {
        String before = snapshot();
        fs.sh("echo mine > shared/mine && mkdir -p shared/mydir").ok();
        Sh.Result r = fs.sh("python3 - <<'PYEOF'\n" + """
                import os, errno, fcntl
                A = errno.EACCES
                def row(name, f, ok=(A,)):
                    try:
                        f()
                        print('FAIL %s: succeeded' % name)
                    except OSError as e:
                        print(('ok' if e.errno in ok else 'FAIL') + ' %s: %s' % (name, errno.errorcode.get(e.errno)))
                for z, existing, d in [('home/coder', 'home/coder/notes.md', 'home/coder/dir'),
                                       ('sys', None, None), ('.', None, None)]:
                    row(z + ' create', lambda: os.open(z + '/new', os.O_CREAT | os.O_WRONLY, 0o644))
                    row(z + ' create excl', lambda: os.open(z + '/new', os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
                    row(z + ' mkdir', lambda: os.mkdir(z + '/newdir'))
                    row(z + ' rename in', lambda: os.rename('shared/mine', z + '/mine'))
                    row(z + ' rename dir in', lambda: os.rename('shared/mydir', z + '/mydir'))
                    row(z + ' link in', lambda: os.link('shared/mine', z + '/linked'))
                    row(z + ' symlink', lambda: os.symlink('x', z + '/sym'))
                    row(z + ' mkfifo', lambda: os.mkfifo(z + '/fifo'))
                    if existing:
                        row(z + ' open write', lambda: os.open(existing, os.O_WRONLY))
                        row(z + ' open append', lambda: os.open(existing, os.O_WRONLY | os.O_APPEND))
                        row(z + ' open trunc', lambda: os.open(existing, os.O_RDONLY | os.O_TRUNC))
                        row(z + ' truncate', lambda: os.truncate(existing, 0))
                        fd = os.open(existing, os.O_RDONLY)
                        row(z + ' ftruncate read-only handle', lambda: os.ftruncate(fd, 0), (A, errno.EINVAL, errno.EBADF))
                        row(z + ' fallocate read-only handle', lambda: os.posix_fallocate(fd, 0, 100), (A, errno.EBADF))
                        row(z + ' write read-only handle', lambda: os.write(fd, b'x'), (errno.EBADF,))
                        os.close(fd)
                        row(z + ' unlink', lambda: os.unlink(existing))
                        row(z + ' rename out', lambda: os.rename(existing, 'shared/stolen'))
                        row(z + ' rename within', lambda: os.rename(existing, z + '/renamed'))
                        row(z + ' link out', lambda: os.link(existing, 'shared/linked-out'))
                        row(z + ' chmod', lambda: os.chmod(existing, 0o755))
                        row(z + ' chown', lambda: os.chown(existing, 0, 0))
                        row(z + ' utime', lambda: os.utime(existing, (1, 1)))
                        row(z + ' utime now', lambda: os.utime(existing))
                        row(z + ' setxattr', lambda: os.setxattr(existing, 'user.x', b'1'))
                        row(z + ' removexattr', lambda: os.removexattr(existing, 'user.x'))
                        row(z + ' rmdir', lambda: os.rmdir(d))
                        row(z + ' rename dir out', lambda: os.rename(d, 'shared/dir-out'))
                """ + "\nPYEOF");
        String failures = r.out().lines().filter(l -> !l.startsWith("ok ")).collect(Collectors.joining("\n"));
        assertEquals("", failures + r.err(), r.out());
        assertEquals(43, r.out().lines().count(), r.out());
        assertEquals(before, snapshot());
    }

    private static String snapshot() throws IOException {
        StringBuilder b = new StringBuilder();
        try (Stream<Path> walk = Files.walk(fs.store())) {
            for (Path p : (Iterable<Path>) walk.sorted()::iterator) {
                String rel = fs.store().relativize(p).toString();
                if (rel.startsWith("shared") || rel.startsWith("home/planner")) {
                    continue;
                }
                b.append(rel).append(Files.isDirectory(p) ? "/" : " " + Files.readString(p).hashCode()
                        + " " + Files.getAttribute(p, "unix:mode") + " " + Files.getLastModifiedTime(p)).append('\n');
            }
        }
        return b.toString();
    }
}
