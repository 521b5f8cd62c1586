package dev.chibifs.fuse;

import dev.chibifs.testing.MountedFs;
import dev.chibifs.testing.Sh;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.nio.file.Files;
import java.util.Arrays;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The programs agents actually run, in /shared of a per-context mount. */
@Timeout(300)
class OrdinaryProgramsTest {

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

    private static Sh.Result sh(String script) {
        return Sh.run(fs.at("/shared"), script);
    }

    @Test
    void sedInPlace() throws IOException {
        sh("printf 'one\\ntwo\\n' > s.txt && sed -i 's/two/three/' s.txt").ok();
        assertEquals("one\nthree\n", Files.readString(fs.stored("/shared/s.txt")));
    }

    @Test
    void mvOverAnExistingFile() throws IOException {
        sh("echo old > target.txt && echo new > source.txt && mv -f source.txt target.txt").ok();
        assertEquals("new\n", Files.readString(fs.stored("/shared/target.txt")));
        assertTrue(Files.notExists(fs.stored("/shared/source.txt")));
    }

    @Test
    void cpDashAOfATree() {
        String src = MountedFs.tempRoot().resolve("tree").toString(); // removed when the test JVM exits
        Sh.run("mkdir -p " + src + "/a/b && echo 1 > " + src + "/a/one && echo 2 > " + src + "/a/b/two"
                + " && chmod +x " + src + "/a/one && touch -d 2020-01-02T03:04:05 " + src + "/a/b/two").ok();
        sh("cp -a " + src + " tree").ok();
        sh("diff -r " + src + " tree && test -x tree/a/one"
                + " && [ \"$(stat -c %Y tree/a/b/two)\" = \"$(stat -c %Y " + src + "/a/b/two)\" ]").ok();
    }

    @Test
    void tarRoundTrip() {
        sh("mkdir -p t/d && seq 1 1000 > t/d/n && echo hi > t/h && tar cf t.tar t && mkdir x && cd x && tar xf ../t.tar"
                + " && diff -r ../t t").ok();
    }

    @Test
    void gitInitAddCommit() {
        sh("git init -q repo && cd repo && git config user.email a@b && git config user.name A"
                + " && echo hi > f && mkdir d && seq 1 100 > d/n && git add -A && git commit -qm first"
                + " && echo more >> f && git commit -qam second && git log --oneline | wc -l | grep -q 2"
                + " && git status --porcelain | wc -l | grep -q '^0$' && git fsck --no-progress 2>&1 | (! grep -q error)").ok();
    }

    @Test
    void pythonWritesAFile() throws IOException {
        sh("python3 -c \"open('py.txt','w').write('from python\\n')\"").ok();
        assertEquals("from python\n", Files.readString(fs.stored("/shared/py.txt")));
    }

    @Test
    void sqlite() {
        String out = sh("sqlite3 db.sqlite 'create table t(x); insert into t values (1),(2),(3);'"
                + " && sqlite3 db.sqlite 'select sum(x) from t;'").ok().out();
        assertEquals("6\n", out);
    }

    @Test
    void flock() {
        sh("touch lock && flock lock -c 'echo locked > locked.txt' && cat locked.txt | grep -q locked").ok();
    }

    @Test
    void ddConvNotruncAtAnOffset() throws IOException {
        sh("printf 'aaaaaaaaaa' > dd.bin && printf 'XY' | dd of=dd.bin bs=1 seek=4 conv=notrunc status=none").ok();
        assertEquals("aaaaXYaaaa", Files.readString(fs.stored("/shared/dd.bin")));
    }

    @Test
    void truncateUpAndDown() throws IOException {
        sh("printf 'hello world' > tr.txt && truncate -s 5 tr.txt").ok();
        assertEquals("hello", Files.readString(fs.stored("/shared/tr.txt")));
        sh("truncate -s 8 tr.txt").ok();
        byte[] b = Files.readAllBytes(fs.stored("/shared/tr.txt"));
        assertEquals(8, b.length);
        assertEquals("hello", new String(b, 0, 5));
        assertEquals(List.of((byte) 0, (byte) 0, (byte) 0), List.of(b[5], b[6], b[7]));
    }

    @Test
    void aLargeFileComparesEqual() {
        Sh.run("head -c 268435456 /dev/urandom > /tmp/chibit-big.bin").ok();
        try {
            sh("cp /tmp/chibit-big.bin big.bin && cmp /tmp/chibit-big.bin big.bin"
                    + " && cmp /tmp/chibit-big.bin " + fs.stored("/shared/big.bin")).ok();
        } finally {
            Sh.run("rm -f /tmp/chibit-big.bin");
            sh("rm -f big.bin");
        }
    }

    @Test
    void fourConcurrentAppendersLoseNoLine() throws IOException {
        sh("for w in 1 2 3 4; do (for i in $(seq 1 500); do echo \"w$w line $i\" >> app.log; done) & done; wait").ok();
        List<String> lines = Files.readAllLines(fs.stored("/shared/app.log"));
        assertEquals(2000, lines.size());
        for (int w = 1; w <= 4; w++) {
            for (int i = 1; i <= 500; i++) {
                assertTrue(lines.contains("w" + w + " line " + i), "lost w" + w + " line " + i);
            }
        }
        assertTrue(lines.stream().allMatch(l -> l.matches("w[1-4] line \\d+")), "torn lines: " + Arrays.toString(
                lines.stream().filter(l -> !l.matches("w[1-4] line \\d+")).limit(3).toArray()));
    }
}
