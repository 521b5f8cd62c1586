package dev.chibifs.fuse;

import dev.chibifs.sys.Linux;
import dev.chibifs.testing.MountedFs;
import dev.chibifs.testing.Sh;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.UserDefinedFileAttributeView;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What programs rely on from a local disk, through a per-context mount: long paths, fresh
 * attributes, times, open files that outlive their names, races, special files. Each case is a
 * small python3 program (syscalls, not shell approximations) that prints OK or fails loudly.
 */
@Timeout(300)
class PosixBehaviourTest {

    private static MountedFs fs;

    @BeforeAll
    static void mount() {
        fs = MountedFs.start("--context", "planner");
    }

    @AfterAll
    static void unmount() {
        if (fs != null) {
            fs.close();
        }
    }

    /** Runs a python3 program in the mountpoint (its working directory) and expects it to print OK. */
    static void python(MountedFs fs, String program) {
        Sh.Result r = fs.sh("python3 - <<'PYEOF'\nimport os, sys, errno, time, stat\n" + program + "\nprint('OK')\nPYEOF");
        assertEquals("OK\n", r.out(), "exit " + r.exitCode() + ": " + r.err());
    }

    @Test
    void pathsUpTo4095BytesOf255ByteNamesWork() throws IOException {
        // /shared + 15 x (1 + 255) + / + 247 = 4095 bytes below the mount, far past PATH_MAX with the store's root
        python(fs, """
                os.chdir('shared')
                os.mkdir('deep')
                os.chdir('deep')
                depth = len('/shared/deep')
                n = 0
                while depth + 256 + 1 + 200 <= 4095:
                    name = chr(ord('a') + n % 26) * 255
                    os.mkdir(name)
                    os.chdir(name)
                    depth += 256
                    n += 1
                last = 'f' * (4095 - depth - 1)
                assert depth + 1 + len(last) == 4095, depth
                with open(last, 'w') as f:
                    f.write('deep content')
                assert open(last).read() == 'deep content'
                assert os.stat(last).st_size == 12
                os.rename(last, 'renamed')
                os.link('renamed', last)
                assert os.stat(last).st_nlink == 2
                os.unlink('renamed')
                os.utime(last, (1000000000, 1000000000))
                assert os.stat(last).st_mtime == 1000000000
                assert sorted(os.listdir('.')) == [last]
                try:
                    open('x' * 256, 'w')
                    raise SystemExit('a 256-byte name was accepted')
                except OSError as e:
                    assert e.errno == errno.ENAMETOOLONG, e
                try:
                    os.mkdir('y' * 256)
                    raise SystemExit('a 256-byte directory name was accepted')
                except OSError as e:
                    assert e.errno == errno.ENAMETOOLONG, e
                """);
        // chibi sees the same tree: walk the store relative to directory descriptors too
        Path store = fs.stored("/shared/deep");
        assertTrue(Files.isDirectory(store.resolve("a".repeat(255))));
        assertEquals("OK\n", Sh.run(store, "python3 -c \"import os\nwhile True:\n  e = os.listdir('.')\n"
                + "  if len(e) != 1: raise SystemExit(e)\n  if os.path.isdir(e[0]): os.chdir(e[0])\n"
                + "  else: print('OK' if open(e[0]).read() == 'deep content' else 'bad'); break\"").out());
        fs.sh("rm -rf shared/deep").ok();
        assertFalse(Files.exists(store));
    }

    /**
     * Size, times and link count are fresh at once through every name and handle. libfuse 2's
     * high-level API gives each name of a hard-linked file a kernel inode of its own; the daemon
     * invalidates the others when the link count changes (KernelInodes).
     */
    @Test
    void attributesAreFreshAfterEveryChangeAlsoThroughASecondHandle() {
        python(fs, """
                os.chdir('shared')
                a = os.open('fresh', os.O_CREAT | os.O_RDWR, 0o644)
                b = os.open('fresh', os.O_RDONLY)
                os.write(a, b'0123456789')
                assert os.stat('fresh').st_size == 10 and os.fstat(b).st_size == 10
                m0 = os.stat('fresh').st_mtime_ns
                time.sleep(0.02)
                os.write(a, b'abc')
                assert os.stat('fresh').st_size == 13 and os.fstat(b).st_size == 13
                assert os.stat('fresh').st_mtime_ns > m0, 'mtime after write'
                assert os.fstat(b).st_mtime_ns > m0, 'mtime after write, second handle'
                os.link('fresh', 'fresh2')
                assert os.stat('fresh2').st_nlink == 2
                assert os.stat('fresh').st_nlink == 2 and os.fstat(b).st_nlink == 2, 'nlink 2 via the old name'
                os.rename('fresh2', 'fresh3')
                assert os.stat('fresh3').st_nlink == 2 and os.stat('fresh').st_ino == os.stat('fresh3').st_ino
                os.unlink('fresh3')
                assert os.stat('fresh').st_nlink == 1 and os.fstat(b).st_nlink == 1, 'nlink 1 after unlink'
                os.link('fresh', 'looked-up')
                os.unlink('fresh')
                assert os.stat('looked-up').st_nlink == 1, 'a name the kernel has only looked up'
                assert os.fstat(b).st_nlink == 1, 'the handle, at once'
                os.rename('looked-up', 'fresh')
                os.truncate('fresh', 4)
                assert os.stat('fresh').st_size == 4 and os.fstat(b).st_size == 4 and os.fstat(a).st_size == 4
                m1 = os.stat('fresh').st_mtime_ns
                time.sleep(0.02)
                os.ftruncate(a, 100)
                assert os.stat('fresh').st_size == 100 and os.fstat(b).st_size == 100
                assert os.stat('fresh').st_mtime_ns > m1, 'mtime after ftruncate'
                assert os.pread(b, 4, 0) == b'0123'
                os.close(a); os.close(b)
                """);
    }

    @Test
    void touchSetsOnlyTheTimeAskedForWithNanoseconds() {
        fs.sh("cd shared && touch t && touch -d '2020-01-02 03:04:05.123456789' t"
                + " && [ \"$(stat -c '%x|%y' t)\" = '2020-01-02 03:04:05.123456789 +0000|2020-01-02 03:04:05.123456789 +0000' ]"
                + " && touch -a -d '2021-06-07 08:09:10.5' t"
                + " && [ \"$(stat -c '%x|%y' t)\" = '2021-06-07 08:09:10.500000000 +0000|2020-01-02 03:04:05.123456789 +0000' ]"
                + " && touch -m -d '2019-12-31 23:59:59.000000001' t"
                + " && [ \"$(stat -c '%x|%y' t)\" = '2021-06-07 08:09:10.500000000 +0000|2019-12-31 23:59:59.000000001 +0000' ]"
                + " || { stat t >&2; false; }").ok();
        python(fs, """
                before = time.time_ns()
                os.utime('shared/t', ns=(5, 7))
                s = os.stat('shared/t')
                assert (s.st_atime_ns, s.st_mtime_ns) == (5, 7), s
                os.utime('shared/t')
                s = os.stat('shared/t')
                assert s.st_atime_ns >= before - 10**9 and s.st_mtime_ns >= before - 10**9, s
                """);
    }

    @Test
    void timesBefore1970AndAfter2262KeepEveryNanosecond() {
        // the daemon keeps the store's times in nanoseconds where they fit a long (1678-2262)
        python(fs, """
                open('shared/far', 'w').close()
                for ns in (-1, -10**18 - 1, 10**19 + 7):  # 1969, 1938, 2286
                    os.utime('shared/far', ns=(ns, ns))
                    s = os.stat('shared/far')
                    assert (s.st_atime_ns, s.st_mtime_ns) == (ns, ns), (ns, s)
                """);
    }

    @Test
    void anOpenFileOutlivesRenameUnlinkAndAReplacementOfItsName() {
        python(fs, """
                os.chdir('shared')
                with open('life', 'w') as f:
                    f.write('old')
                fd = os.open('life', os.O_RDWR)
                ino = os.fstat(fd).st_ino
                os.rename('life', 'life2')
                os.pwrite(fd, b'OLD', 0)
                assert open('life2').read() == 'OLD'
                assert os.fstat(fd).st_size == 3
                with open('new', 'w') as f:
                    f.write('replacement')
                os.rename('new', 'life2')
                assert os.pread(fd, 100, 0) == b'OLD', 'the handle keeps the old file'
                st = os.fstat(fd)
                assert st.st_size == 3 and st.st_ino == ino, st
                assert open('life2').read() == 'replacement'
                os.unlink('life2')
                os.pwrite(fd, b'+more', 3)
                assert os.pread(fd, 100, 0) == b'OLD+more'
                assert os.fstat(fd).st_size == 8 and os.fstat(fd).st_nlink == 0
                os.close(fd)
                assert not os.path.exists('life') and not os.path.exists('life2')
                """);
    }

    @Test
    void aFileWithNoNameLeftIsOpenedAgainThroughProcSelfFd() {
        // what `cp /proc/PID/fd/N log` does to get back a log removed while a process still writes it
        python(fs, """
                os.chdir('shared')
                with open('log', 'w') as f:
                    f.write('kept')
                fd = os.open('log', os.O_RDWR)
                os.unlink('log')
                again = os.open('/proc/self/fd/%d' % fd, os.O_RDONLY)
                assert os.read(again, 100) == b'kept'
                assert os.fstat(again).st_ino == os.fstat(fd).st_ino and os.fstat(again).st_nlink == 0
                os.pwrite(fd, b'+more', 4)
                assert os.pread(again, 100, 0) == b'kept+more'
                os.close(again)
                empty = os.open('/proc/self/fd/%d' % fd, os.O_WRONLY | os.O_TRUNC)
                assert os.fstat(fd).st_size == 0
                os.close(empty)
                os.close(fd)
                t = os.open('.', os.O_TMPFILE | os.O_RDWR, 0o600)
                os.write(t, b'unnamed')
                again = os.open('/proc/self/fd/%d' % t, os.O_RDONLY)
                assert os.read(again, 100) == b'unnamed'
                os.close(again)
                os.close(t)
                assert 'log' not in os.listdir('.')
                """);
    }

    @Test
    void aWriteThroughOneNameOfAHardLinkedFileShowsAtOnceThroughTheOthers() {
        python(fs, """
                os.chdir('shared')
                with open('one', 'w') as f:
                    f.write('1')
                os.link('one', 'two')
                assert os.stat('two').st_size == 1
                r = os.open('two', os.O_RDONLY)
                w = os.open('one', os.O_WRONLY | os.O_APPEND)
                os.write(w, b'2345')
                assert os.stat('two').st_size == 5 and os.fstat(r).st_size == 5
                assert os.pread(r, 10, 0) == b'12345', 'read through the other name is not cut at the old size'
                m = os.stat('two').st_mtime_ns
                time.sleep(0.02)
                os.write(w, b'6')
                assert os.stat('two').st_mtime_ns > m and os.fstat(r).st_size == 6
                os.close(r); os.close(w)
                """);
    }

    /** Two zones the caller writes are two file systems to a hard link: EXDEV, on which programs copy. */
    @Test
    void aHardLinkAcrossTwoWritableZonesIsACrossDeviceLink() {
        python(fs, """
                with open('shared/across', 'w') as f:
                    f.write('a')
                try:
                    os.link('shared/across', 'home/planner/across')
                    raise AssertionError('linked across zones')
                except OSError as e:
                    assert e.errno == errno.EXDEV, e
                assert not os.path.exists('home/planner/across')
                assert os.stat('shared/across').st_nlink == 1
                """);
    }

    @Test
    void dfShowsTheStoresSpaceAndInodes() {
        String store = Sh.run("df -P --output=size,itotal '" + fs.store() + "' | tail -1").ok().out();
        assertEquals(store, fs.sh("df -P --output=size,itotal . | tail -1").ok().out());
    }

    @Test
    void statShowsTheBirthTimeTheStoreKeeps() {
        fs.sh("echo x > shared/born && mkdir shared/born-dir").ok();
        String birth = "stat -c '%n %W %w' born born-dir";
        assertEquals(Sh.run("cd '" + fs.stored("/shared") + "' && " + birth).ok().out(),
                fs.sh("cd shared && " + birth).ok().out());
    }

    @Test
    void duAddsUpWhatTheStoreFilesTakeHolesLeftOut() {
        fs.sh("mkdir shared/du && printf 12345 > shared/du/small && truncate -s 1M shared/du/sparse"
                + " && printf x >> shared/du/sparse && head -c 100000 /dev/zero > shared/du/dense").ok();
        String blocks = "stat -c '%n %b %B' small sparse dense && du -k -s .";
        assertEquals(Sh.run("cd '" + fs.stored("/shared/du") + "' && " + blocks).ok().out(),
                fs.sh("cd shared/du && " + blocks).ok().out());
    }

    @Test
    void fallocateReservesGrowsAndPunchesHolesAndEveryNameSeesTheNewSize() {
        Sh.Result r = fs.sh("cd shared && printf abcdef > pre && fallocate -l 1MiB pre && stat -c %s pre"
                + " && fallocate --punch-hole -o 1 -l 2 pre && head -c 6 pre | od -An -c").ok();
        assertEquals("1048576\n   a  \\0  \\0   d   e   f\n", r.out());
        python(fs, """
                os.chdir('shared')
                os.link('pre', 'pre2')
                assert os.stat('pre2').st_size == 1 << 20
                fd = os.open('pre', os.O_WRONLY)
                os.posix_fallocate(fd, 0, 3 << 20)
                assert os.stat('pre2').st_size == 3 << 20, 'the other name still shows the old size'
                os.close(fd)
                with open('pre2', 'rb') as f:
                    assert f.read(6) == b'a\\0\\0def'
                """);
        assertTrue(fs.sh("fallocate -l 1MiB sys/pre").err().contains("Permission denied"));
        assertFalse(Files.exists(fs.stored("/sys/pre")), "a denied fallocate left a file");
    }

    /**
     * Replies are watched for node ids only while a request about a file with several links is in
     * flight. The first link made through a fresh mount must still keep every name fresh: the name
     * linked to was created and looked up while nothing watched, and the link request itself tells
     * its node id.
     */
    @Test
    void theFirstHardLinkOfAFreshMountKeepsEveryNameFresh() {
        try (MountedFs fresh = MountedFs.start("--context", "planner")) {
            python(fresh, """
                    os.chdir('shared')
                    with open('one', 'w') as f:
                        f.write('1')
                    os.link('one', 'two')
                    w = os.open('one', os.O_WRONLY | os.O_APPEND)
                    os.write(w, b'2345')
                    os.close(w)
                    assert os.stat('two').st_size == 5, 'a write through the old name shows through the new one'
                    assert os.stat('one').st_nlink == 2
                    os.unlink('two')
                    assert os.stat('one').st_nlink == 1
                    """);
        }
    }

    /** libfuse 2 names an unlinked open file by a hidden name; every handle operation still reaches the file. */
    @Test
    void anUnlinkedOpenFileKeepsItsTruthfulLinkCountTimesModeAndSize() {
        python(fs, """
                os.chdir('shared')
                with open('kept', 'w') as f:
                    f.write('0123456789')
                fd = os.open('kept', os.O_RDWR)
                os.link('kept', 'other')
                os.unlink('kept')
                assert os.fstat(fd).st_nlink == 1, ('one name left', os.fstat(fd).st_nlink)
                os.utime(fd, ns=(5_000_000_007, 6_000_000_009))
                st = os.fstat(fd)
                assert (st.st_atime_ns, st.st_mtime_ns) == (5_000_000_007, 6_000_000_009), st
                os.fchmod(fd, 0o755)
                assert os.fstat(fd).st_mode & 0o111 == 0o111
                os.ftruncate(fd, 4)
                assert os.fstat(fd).st_size == 4 and open('other').read() == '0123'
                # the other name is another kernel inode (libfuse 2), invalidated by the daemon
                st = os.stat('other')
                assert st.st_size == 4 and st.st_mode & 0o111 == 0o111 and st.st_nlink == 1, st
                os.unlink('other')
                assert os.fstat(fd).st_nlink == 0, 'at once, though the handle is another kernel inode than the name'
                os.utime(fd, ns=(1, 2))
                assert os.fstat(fd).st_nlink == 0, 'also in what a setattr answers'
                os.fchmod(fd, 0o644)
                assert os.fstat(fd).st_mtime_ns == 2 and os.fstat(fd).st_mode & 0o111 == 0
                os.close(fd)
                assert sorted(os.listdir('.')) == [n for n in sorted(os.listdir('.')) if not n.startswith('.fuse_hidden')]
                """);
    }

    @Test
    void concurrentAppendersLoseNothing() throws IOException {
        python(fs, """
                os.chdir('shared')
                procs = 8; lines = 200
                kids = []
                for p in range(procs):
                    pid = os.fork()
                    if pid == 0:
                        fd = os.open('appended', os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
                        for i in range(lines):
                            os.write(fd, ('%02d %04d ' % (p, i) + 'x' * 90 + '\\n').encode())
                        os.close(fd)
                        os._exit(0)
                    kids.append(pid)
                for k in kids:
                    assert os.waitpid(k, 0)[1] == 0
                data = open('appended').read().splitlines()
                assert len(data) == procs * lines, len(data)
                assert all(len(l) == 98 for l in data)
                for p in range(procs):
                    mine = [int(l.split()[1]) for l in data if l.startswith('%02d ' % p)]
                    assert mine == list(range(lines)), p
                """);
        assertEquals(8 * 200 * 99, Files.size(fs.stored("/shared/appended")));
    }

    @Test
    void exclusiveCreateHasExactlyOneWinner() {
        python(fs, """
                os.chdir('shared')
                os.mkdir('excl')
                r, w = os.pipe()
                kids = []
                for p in range(8):
                    pid = os.fork()
                    if pid == 0:
                        os.close(r)
                        won = 0
                        for n in range(30):
                            try:
                                os.close(os.open('excl/%d' % n, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
                                won += 1
                                os.write(w, b'%d\\n' % n)
                            except FileExistsError:
                                pass
                        os._exit(0)
                    kids.append(pid)
                os.close(w)
                for k in kids:
                    assert os.waitpid(k, 0)[1] == 0
                wins = os.read(r, 100000).decode().split()
                assert sorted(map(int, wins)) == list(range(30)), wins
                """);
    }

    /** renameat2(2)'s flags, as `mv --exchange` (coreutils 9.5) and `mv -n` use them. */
    @Test
    void renameat2ExchangesTwoNamesAndRefusesToReplaceWhenAsked() {
        python(fs, """
                import ctypes
                libc = ctypes.CDLL(None, use_errno=True)
                NOREPLACE, EXCHANGE = 1, 2
                def renameat2(a, b, flags):
                    if libc.renameat2(-100, a.encode(), -100, b.encode(), flags) != 0:
                        return ctypes.get_errno()
                    return 0
                os.chdir('shared')
                os.mkdir('x2')
                os.chdir('x2')
                open('f', 'w').write('file')
                os.mkdir('d')
                open('d/inner', 'w').write('inner')
                fd = os.open('f', os.O_RDONLY)
                assert renameat2('f', 'd', EXCHANGE) == 0
                assert open('d').read() == 'file' and open('f/inner').read() == 'inner'
                assert os.read(fd, 10) == b'file', 'an open file goes with its name'
                assert os.path.isdir('f') and os.stat('d').st_size == 4
                assert renameat2('d', 'f', NOREPLACE) == errno.EEXIST
                assert renameat2('d', 'none', EXCHANGE) == errno.ENOENT
                assert renameat2('d', 'e', NOREPLACE) == 0 and open('e').read() == 'file'
                assert sorted(os.listdir('.')) == ['e', 'f']
                """);
        assertEquals("inner", fs.sh("cat shared/x2/f/inner").ok().out());
        assertTrue(fs.sh("cd shared/x2 && python3 -c \"import ctypes, os; l = ctypes.CDLL(None, use_errno=True);"
                + " r = l.renameat2(-100, b'e', -100, b'../../sys/tool_cache', 2); print(r, ctypes.get_errno())\"").ok().out()
                .equals("-1 " + Linux.EACCES + "\n"), "an exchange with a name in /sys is refused as any write there");
        assertTrue(Files.isDirectory(fs.stored("/sys/tool_cache")) && Files.exists(fs.stored("/shared/x2/e")));
    }

    @Test
    void anOTmpfileFileIsNamedByLinkatOrLeavesNothing() throws IOException {
        python(fs, """
                import ctypes, tempfile
                libc = ctypes.CDLL(None, use_errno=True)
                def link(fd, name):
                    # linkat(2) of /proc/self/fd/N, followed (AT_SYMLINK_FOLLOW): how an unnamed file gets a name
                    r = libc.linkat(-100, b'/proc/self/fd/%d' % fd, -100, name.encode(), 0x400)
                    return 0 if r == 0 else ctypes.get_errno()
                os.mkdir('shared/tmpf')
                os.chdir('shared/tmpf')
                fd = os.open('.', os.O_TMPFILE | os.O_RDWR, 0o644)
                os.write(fd, b'whole\\n')
                assert os.fstat(fd).st_nlink == 0 and os.listdir('.') == []
                assert link(fd, 'ready') == 0
                assert os.fstat(fd).st_nlink == 1 and os.stat('ready').st_ino == os.fstat(fd).st_ino
                os.close(fd)
                assert open('ready').read() == 'whole\\n'
                fd = os.open('.', os.O_TMPFILE | os.O_WRONLY | os.O_EXCL, 0o600)
                assert link(fd, 'never') == errno.ENOENT
                os.close(fd)
                with tempfile.TemporaryFile(dir='.') as f:
                    f.write(b'scratch')
                    f.seek(0)
                    assert f.read() == b'scratch' and os.fstat(f.fileno()).st_nlink == 0
                try:
                    os.open('../../sys', os.O_TMPFILE | os.O_RDWR, 0o600)
                    assert False, 'an unnamed file in /sys'
                except PermissionError:
                    pass
                assert os.listdir('.') == ['ready']
                """);
        try (var stored = Files.list(fs.stored("/shared/tmpf"))) {
            assertEquals(List.of("ready"), stored.map(f -> f.getFileName().toString()).toList(),
                    "nothing of the unnamed files in the store");
        }
    }

    @Test
    void renameOverAFileBeingReadLeavesTheReaderTheOldContent() {
        python(fs, """
                os.chdir('shared')
                old = bytes(range(256)) * 4096
                with open('read-me', 'wb') as f:
                    f.write(old)
                fd = os.open('read-me', os.O_RDONLY)
                got = os.read(fd, 65536)
                pid = os.fork()
                if pid == 0:
                    with open('read-me.new', 'wb') as f:
                        f.write(b'N' * len(old))
                    os.rename('read-me.new', 'read-me')
                    os._exit(0)
                assert os.waitpid(pid, 0)[1] == 0
                while True:
                    chunk = os.read(fd, 65536)
                    if not chunk:
                        break
                    got += chunk
                assert got == old
                assert open('read-me', 'rb').read(4) == b'NNNN'
                """);
    }

    @Test
    void fallocateAndCopyFileRangeWorkOrSayEopnotsupp() {
        python(fs, """
                os.chdir('shared')
                with open('src', 'wb') as f:
                    f.write(b'copy me' * 1000)
                fd = os.open('alloc', os.O_CREAT | os.O_RDWR, 0o644)
                os.write(fd, b'keep')
                # posix_fallocate falls back to writing when fallocate(2) says EOPNOTSUPP
                os.posix_fallocate(fd, 0, 8192)
                assert os.fstat(fd).st_size == 8192 and os.pread(fd, 4, 0) == b'keep'
                os.close(fd)
                s = os.open('src', os.O_RDONLY)
                d = os.open('dst', os.O_CREAT | os.O_WRONLY, 0o644)
                try:
                    n = os.copy_file_range(s, d, 7000)
                    assert n == 7000, n
                    assert open('dst', 'rb').read() == b'copy me' * 1000
                except OSError as e:
                    assert e.errno in (errno.EOPNOTSUPP, errno.EXDEV, errno.ENOSYS), e
                    assert os.fstat(d).st_size == 0
                """);
        // fallocate(1) calls fallocate(2) directly: the errno must be the one it reports as unsupported
        Sh.Result r = fs.sh("cd shared && printf keep > fa && fallocate -l 65536 fa");
        if (r.exitCode() != 0) {
            assertTrue(r.err().contains("Operation not supported"), r.err());
            assertEquals("keep", fs.sh("cat shared/fa").ok().out());
        } else {
            assertEquals("65536\n", fs.sh("stat -c %s shared/fa").ok().out());
        }
    }

    @Test
    void aFileShowsItsEtagAndKeepsTheUserAttributesSetOnIt() throws Exception {
        python(fs, """
                import hashlib
                os.chdir('shared')
                open('x', 'w').write('keep')
                assert os.getxattr('x', 'user.chibi.etag').decode() == hashlib.sha256(b'keep').hexdigest()
                assert os.listxattr('x') == [], os.listxattr('x')  # read by name, not listed
                try:
                    os.getxattr('x', 'user.a')
                    raise SystemExit('an unknown attribute had a value')
                except OSError as e:
                    assert e.errno == errno.ENODATA, e
                os.setxattr('x', 'user.a', b'1')
                assert os.getxattr('x', 'user.a') == b'1'
                assert os.listxattr('x') == ['user.a'], os.listxattr('x')
                os.mkdir('tagged')
                os.setxattr('tagged', 'user.b', b'2')
                assert os.listxattr('tagged') == ['user.b'], os.listxattr('tagged')
                # other namespaces are not the mount's, and the ETag is the content's
                for name in ('trusted.a', 'security.a'):
                    try:
                        os.setxattr('x', name, b'1')
                        raise SystemExit(name + ' was set')
                    except OSError as e:
                        assert e.errno in (errno.EOPNOTSUPP, errno.EPERM), (name, e)
                os.setxattr('x', 'user.chibi.etag', b'0' * 64)  # succeeds, and changes nothing
                assert os.getxattr('x', 'user.chibi.etag').decode() == hashlib.sha256(b'keep').hexdigest()
                # a change makes a new ETag, read fresh; the attributes stay
                with open('x', 'a') as w:
                    w.write('!')
                assert open('x').read() == 'keep!'
                assert os.getxattr('x', 'user.chibi.etag').decode() == hashlib.sha256(b'keep!').hexdigest()
                assert os.getxattr('x', 'user.a') == b'1'
                # where the caller may not write, a change is refused and leaves nothing
                try:
                    os.setxattr('../sys', 'user.a', b'1')
                    raise SystemExit('an attribute was set in /sys')
                except OSError as e:
                    assert e.errno == errno.EACCES, e
                """);
        // kept on the store file itself, where chibi's tree has them
        assertEquals("1", new String((byte[]) Files.getAttribute(fs.stored("/shared/x"), "user:a"), StandardCharsets.UTF_8));
        assertEquals(List.of(), Files.getFileAttributeView(fs.stored("/sys"), UserDefinedFileAttributeView.class).list());
    }

    @Test
    void aCopyWithItsExtendedAttributesKeepsThemAndTheEtagItHas() {
        fs.sh("mkdir -p shared/xa/src && printf one > shared/xa/src/a && printf two > shared/xa/src/b").ok();
        fs.sh("setfattr -n user.note -v kept shared/xa/src/b").ok();
        fs.sh("rsync -aX shared/xa/src/ shared/xa/rsynced/ && cp -a shared/xa/src shared/xa/copied").ok();
        assertEquals(fs.sh("getfattr --only-values -n user.chibi.etag shared/xa/src/b").ok().out(),
                fs.sh("getfattr --only-values -n user.chibi.etag shared/xa/rsynced/b").ok().out());
        assertEquals("kept", fs.sh("getfattr --only-values -n user.note shared/xa/rsynced/b").ok().out());
        assertEquals("kept", fs.sh("getfattr --only-values -n user.note shared/xa/copied/b").ok().out());
        assertEquals("two", fs.sh("cat shared/xa/copied/b").ok().out());
        // from a file system whose files have no ETag, rsync -X removes the copy's: that succeeds;
        // the attributes a download carries come along (rsync -X, cp --preserve=xattr, tar --xattrs)
        fs.sh("out=$(mktemp -d) && printf three > $out/c && setfattr -n user.xdg.origin.url -v https://example.org/c $out/c"
                + " && rsync -aX $out/ shared/xa/fromoutside/ && cp --preserve=xattr $out/c shared/xa/cp-c"
                + " && tar --xattrs --xattrs-include='user.*' -C $out -cf $out/c.tar c && mkdir shared/xa/untar"
                + " && tar --xattrs --xattrs-include='user.*' -C shared/xa/untar -xf $out/c.tar; e=$?; rm -rf $out; exit $e").ok();
        assertEquals("three", fs.sh("cat shared/xa/fromoutside/c").ok().out());
        // out and back, edited between: the copy outside has no ETag to go stale, and one a copy
        // made before it went unlisted carries (set here by hand) changes nothing coming back
        fs.sh("out=$(mktemp -d) && rsync -aX shared/xa/src/ $out/ && ! getfattr -n user.chibi.etag $out/b 2>/dev/null"
                + " && printf edited >> $out/b && setfattr -n user.chibi.etag -v 0000 $out/a && printf edited >> $out/a"
                + " && rsync -aX $out/ shared/xa/src/; e=$?; rm -rf $out; exit $e").ok();
        assertEquals("twoedited", fs.sh("cat shared/xa/src/b").ok().out());
        assertEquals("kept", fs.sh("getfattr --only-values -n user.note shared/xa/src/b").ok().out());
        assertEquals(fs.sh("printf oneedited | sha256sum | cut -c1-64 | tr -d '\\n'").ok().out(),
                fs.sh("getfattr --only-values -n user.chibi.etag shared/xa/src/a").ok().out());
        for (String copy : List.of("fromoutside/c", "cp-c", "untar/c")) {
            assertEquals("https://example.org/c",
                    fs.sh("getfattr --only-values -n user.xdg.origin.url shared/xa/" + copy).ok().out(), copy);
        }
    }

    /** Fifos, sockets and links that stay in their zone are names like any other; device nodes are refused. */
    @Test
    void devicesAndEscapingLinksAreRefusedWithEpermAndFifosSocketsAndLinksAreMade() {
        python(fs, """
                import socket
                os.chdir('shared')
                def refused(what, f):
                    try:
                        f()
                    except OSError as e:
                        assert e.errno == errno.EPERM, (what, e)
                        assert not os.path.lexists(what), what
                        return
                    raise SystemExit(what + ' was created')
                refused('dev', lambda: os.mknod('dev', 0o600 | stat.S_IFCHR, os.makedev(1, 3)))
                refused('blk', lambda: os.mknod('blk', 0o600 | stat.S_IFBLK, os.makedev(7, 0)))
                refused('abs', lambda: os.symlink('/etc/passwd', 'abs'))
                refused('out', lambda: os.symlink('../home', 'out'))
                os.mkfifo('fifo')
                assert stat.S_ISFIFO(os.lstat('fifo').st_mode)
                os.symlink('target', 'sym')
                assert os.readlink('sym') == 'target' and stat.S_ISLNK(os.lstat('sym').st_mode)
                s = socket.socket(socket.AF_UNIX)
                s.bind('sock')
                assert stat.S_ISSOCK(os.lstat('sock').st_mode)
                for n in ('fifo', 'sym', 'sock'):
                    os.unlink(n)
                """);
    }

    /** readdir says each entry's type (d_type), as a local disk does: find -type, fts and git skip a stat per entry. */
    @Test
    void directoryListingsCarryEachEntrysType() throws IOException {
        Files.createDirectories(fs.stored("/shared/types/sub"));
        Files.writeString(fs.stored("/shared/types/file"), "x");
        Files.createSymbolicLink(fs.stored("/shared/types/link"), Path.of("file"));
        Sh.run("mkfifo '" + fs.stored("/shared/types/fifo") + "'").ok();
        python(fs, """
                import ctypes, ctypes.util
                libc = ctypes.CDLL(ctypes.util.find_library('c'), use_errno=True)
                class Dirent(ctypes.Structure):
                    _fields_ = [('d_ino', ctypes.c_uint64), ('d_off', ctypes.c_int64), ('d_reclen', ctypes.c_ushort),
                                ('d_type', ctypes.c_ubyte), ('d_name', ctypes.c_char * 256)]
                libc.opendir.restype = ctypes.c_void_p
                libc.readdir.restype = ctypes.POINTER(Dirent)
                libc.readdir.argtypes = [ctypes.c_void_p]
                libc.closedir.argtypes = [ctypes.c_void_p]
                d = libc.opendir(b'shared/types')
                types = {}
                while True:
                    e = libc.readdir(d)
                    if not e:
                        break
                    types[e.contents.d_name.decode()] = e.contents.d_type
                libc.closedir(d)
                DT_FIFO, DT_DIR, DT_REG, DT_LNK, DT_UNKNOWN = 1, 4, 8, 10, 0
                assert types == {'.': DT_DIR, '..': DT_DIR, 'sub': DT_DIR, 'file': DT_REG,
                                 'link': DT_LNK, 'fifo': DT_FIFO}, types
                assert sorted(os.listdir('shared/types')) == ['fifo', 'file', 'link', 'sub']
                """);
    }

    @Test
    void aSymlinkPlantedInTheStoreIsShownAsALinkAndNeverFollowedByTheDaemon() throws IOException {
        Files.writeString(fs.stored("/shared/real.txt"), "real\n");
        Files.createSymbolicLink(fs.stored("/shared/planted"), Path.of("real.txt"));
        python(fs, """
                os.chdir('shared')
                assert stat.S_ISLNK(os.lstat('planted').st_mode)
                assert os.readlink('planted') == 'real.txt'
                # the kernel follows a relative link inside the mount: the daemon is asked for real.txt
                assert open('planted').read() == 'real\\n'
                os.rename('planted', 'planted2')
                os.utime('planted2', ns=(1, 2), follow_symlinks=False)
                assert os.lstat('planted2').st_mtime_ns == 2 and os.stat('real.txt').st_mtime_ns != 2
                os.unlink('planted2')
                assert open('real.txt').read() == 'real\\n'
                """);
        assertFalse(Files.exists(fs.stored("/shared/planted2"), java.nio.file.LinkOption.NOFOLLOW_LINKS));
    }
}
