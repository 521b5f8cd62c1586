package dev.chibifs.fuse;

import dev.chibifs.testing.FuseSupport;
import dev.chibifs.testing.MountedFs;
import dev.chibifs.testing.Sh;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/** Several processes of mixed operations against one mount for a bounded time, then the store checked against them. */
@Timeout(300)
class StressTest {

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

    /**
     * Six workers, each in a directory of its own plus one shared append log, run random creates,
     * writes, appends, truncates, renames, links, unlinks, mkdirs and rmdirs for 15 s while keeping
     * a model of what their directory must hold; then the store itself is compared with the models.
     */
    @Test
    void mixedOperationsFromSeveralProcessesLeaveExactlyWhatTheyReport() {
        Sh.Result r = fs.sh("cd shared && python3 - '" + fs.stored("/shared") + "' <<'PYEOF'\n" + """
                import os, sys, random, time, json
                store = sys.argv[1]
                workers = 6
                kids = []
                for w in range(workers):
                    pid = os.fork()
                    if pid == 0:
                        rnd = random.Random(w)
                        d = 'w%d' % w
                        os.mkdir(d)
                        model = {}
                        dirs = set()
                        log = os.open('log', os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
                        appended = 0
                        deadline = time.time() + 15
                        ops = 0
                        while time.time() < deadline:
                            ops += 1
                            name = '%s/f%d' % (d, rnd.randrange(40))
                            op = rnd.randrange(9)
                            if op == 0:
                                data = os.urandom(rnd.randrange(1, 200000))
                                with open(name, 'wb') as f:
                                    f.write(data)
                                model[name] = data
                            elif op == 1 and name in model:
                                extra = os.urandom(rnd.randrange(1, 5000))
                                with open(name, 'ab') as f:
                                    f.write(extra)
                                model[name] += extra
                            elif op == 2 and name in model:
                                size = rnd.randrange(0, len(model[name]) + 1000)
                                os.truncate(name, size)
                                model[name] = (model[name] + bytes(size))[:size]
                            elif op == 3 and name in model:
                                to = '%s/f%d' % (d, rnd.randrange(40))
                                os.rename(name, to)
                                model[to] = model.pop(name)
                            elif op == 4 and name in model:
                                os.unlink(name)
                                del model[name]
                            elif op == 5 and name in model:
                                os.link(name, name + '.lnk')
                                if open(name + '.lnk', 'rb').read() != model[name]:
                                    raise SystemExit('a hard link shows other data: ' + name)
                                os.unlink(name + '.lnk')
                            elif op == 6 and name in model:
                                off = rnd.randrange(0, len(model[name]) + 1)
                                patch = os.urandom(rnd.randrange(1, 3000))
                                fd = os.open(name, os.O_WRONLY)
                                os.pwrite(fd, patch, off)
                                os.close(fd)
                                old = model[name]
                                if off > len(old):
                                    old += bytes(off - len(old))
                                model[name] = old[:off] + patch + old[off + len(patch):]
                            elif op == 7:
                                sub = '%s/d%d' % (d, rnd.randrange(5))
                                if sub in dirs:
                                    os.rmdir(sub); dirs.discard(sub)
                                else:
                                    os.mkdir(sub); dirs.add(sub)
                            else:
                                line = ('%d %d\\n' % (w, ops)).encode()
                                os.write(log, line)
                                appended += len(line)
                        os.close(log)
                        bad = []
                        for name, data in model.items():
                            got = open(os.path.join(store, name), 'rb').read()
                            if got != data:
                                bad.append('%s: %d bytes, expected %d' % (name, len(got), len(data)))
                        listed = set(os.path.join(d, n) for n in os.listdir(os.path.join(store, d)))
                        if listed != set(model) | dirs:
                            bad.append('%s lists %s, expected %s' % (d, sorted(listed), sorted(set(model) | dirs)))
                        # one write(2) per line: with PYTHONUNBUFFERED print() writes the newline apart,
                        # and workers ending together interleaved their lines
                        os.write(1, (json.dumps({'worker': w, 'ops': ops, 'appended': appended, 'bad': bad}) + '\\n').encode())
                        os._exit(0)
                    kids.append(pid)
                status = [os.waitpid(k, 0)[1] for k in kids]
                print(json.dumps({'status': status, 'log': os.path.getsize(os.path.join(store, 'log'))}))
                """ + "\nPYEOF");
        assertEquals(0, r.exitCode(), r.err());
        long appended = 0;
        long ops = 0;
        for (String line : r.out().lines().toList()) {
            assertTrue(!line.contains("\"bad\"") || line.contains("\"bad\": []"), line);
            if (line.contains("\"appended\"")) {
                appended += Long.parseLong(line.replaceAll(".*\"appended\": (\\d+).*", "$1"));
                ops += Long.parseLong(line.replaceAll(".*\"ops\": (\\d+).*", "$1"));
            } else {
                assertTrue(line.contains("\"status\": [0, 0, 0, 0, 0, 0]"), line + "\n" + r.err());
                assertEquals(appended, Long.parseLong(line.replaceAll(".*\"log\": (\\d+).*", "$1")), r.out());
            }
        }
        assertTrue(ops > 100, r.out());
    }

    /**
     * stress-ng's file system, lock and mapping stressors at once, data checked (--verify): those
     * that use what the mount offers (no xattrs, no device nodes, no FIEMAP). The lock stressors'
     * grants catch up with the store's changes while the rename and create stressors hold
     * directory locks: that mix hung the mount when a grant wrote its invalidations itself.
     */
    @Test
    void stressNgFilesystemStressorsRunClean() {
        if (Sh.run("command -v stress-ng").exitCode() != 0) {
            if (FuseSupport.inCi()) {
                fail("CI must run stress-ng: apt-get install stress-ng");
            }
            Assumptions.abort("stress-ng is not installed");
        }
        fs.sh("mkdir -p shared/stress-ng").ok();
        Sh.Result r = Sh.run(fs.at("/shared/stress-ng"), "stress-ng --temp-path . --verify"
                + " --hdd 2 --hdd-bytes 2M --hdd-opts wr-rnd,rd-rnd --dir 2 --dentry 2 --rename 2 --open 2 --seek 2"
                + " --io 1 --fstat 2 --dirdeep 1 --link 1 --symlink 1 --mknod 1 --chmod 1 --utime 1"
                + " --lockf 2 --flock 1 --fcntl 1"
                + " --mmap 1 --mmap-file --mmap-bytes 4M --msync 1 --copy-file 1 --fallocate 1 --readahead 1"
                + " --sendfile 1 --splice 1 --sync-file 1 -t 8 2>&1");
        assertEquals(0, r.exitCode(), r.out());
        assertTrue(r.out().contains("successful run completed"), r.out());
        assertEquals("", fs.sh("ls -A shared/stress-ng").ok().out());
    }
}
