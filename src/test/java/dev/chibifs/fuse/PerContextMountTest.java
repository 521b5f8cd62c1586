package dev.chibifs.fuse;

import dev.chibifs.testing.MountedFs;
import dev.chibifs.testing.Sh;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A per-context mount as {@code planner}: its writable zones work, every other write is EACCES and leaves nothing. */
@Timeout(300)
class PerContextMountTest {

    private static MountedFs fs;

    @BeforeAll
    static void mount() throws IOException {
        Path root = MountedFs.tempRoot();
        // another context's home and some /sys content, written to the store directly as chibi would
        Path store = root.resolve("home/vfs");
        Files.createDirectories(store.resolve("home/coder/sub"));
        Files.writeString(store.resolve("home/coder/notes.md"), "coder's notes\n");
        Files.createDirectories(store.resolve("sys"));
        Files.writeString(store.resolve("sys/info"), "system info\n");
        Files.writeString(store.resolve("top.txt"), "top level\n");
        fs = MountedFs.start(root, "--context", "planner");
    }

    @AfterAll
    static void unmount() {
        if (fs != null) {
            fs.close();
        }
    }

    @Test
    void writesAndReadsInSharedAndOwnHome() throws IOException {
        fs.sh("echo hello > shared/a.txt && echo more >> shared/a.txt && cat shared/a.txt").ok();
        assertEquals("hello\nmore\n", Files.readString(fs.stored("/shared/a.txt")));
        fs.sh("mkdir -p home/planner/d/e && printf 'x' > home/planner/d/e/f && touch home/planner/t"
                + " && mv home/planner/t home/planner/u && rm home/planner/u && cat home/planner/d/e/f").ok();
        assertEquals("x", Files.readString(fs.stored("/home/planner/d/e/f")));
    }

    @Test
    void filesWrittenToTheStoreDirectlyAreReadable() throws IOException {
        assertEquals("coder's notes\n", fs.sh("cat home/coder/notes.md").ok().out());
        assertEquals("system info\n", fs.sh("cat sys/info").ok().out());
        Files.writeString(fs.stored("/shared/from-chibi.md"), "# tasks\n- review\n");
        assertEquals("# tasks\n- review\n", fs.sh("cat shared/from-chibi.md").ok().out());
    }

    /** The kernel keeps pages across opens (Node.pages); a rewrite in the store must still reach the next open. */
    @Test
    void aFileRewrittenInTheStoreIsReadFreshByTheNextOpen() throws IOException, InterruptedException {
        Path stored = fs.stored("/shared/cached.txt");
        Files.writeString(stored, "version 1\n");
        assertEquals("version 1\n", fs.sh("cat shared/cached.txt >/dev/null && cat shared/cached.txt").ok().out());
        // same size, rewritten in place: only the mtime tells
        Files.writeString(stored, "version 2\n");
        assertEquals("version 2\n", fs.sh("cat shared/cached.txt").ok().out());
        // replaced by rename, as chibi's atomic writes do, with another size; the kernel trusts a
        // size it was told for attr_timeout (1 s, libfuse's default), so wait that out first
        Thread.sleep(1100);
        Path tmp = stored.resolveSibling("cached.txt.new");
        Files.writeString(tmp, "version three\n");
        Files.move(tmp, stored, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
        assertEquals("version three\n", fs.sh("cat shared/cached.txt").ok().out());
        assertEquals("14\n", fs.sh("stat -c %s shared/cached.txt").ok().out());
    }

    /**
     * The kernel keeps an unchanged file's pages across opens; a rewrite in the store must still
     * reach the next open, even at the same size with the mtime set back (the ctime tells).
     */
    @Test
    void aFileWrittenThroughTheMountThenRewrittenInTheStoreIsReadFresh() throws IOException {
        assertEquals("written here\n", fs.sh("printf 'written here\\n' > shared/w.txt && cat shared/w.txt").ok().out());
        Path stored = fs.stored("/shared/w.txt");
        java.nio.file.attribute.FileTime mtime = Files.getLastModifiedTime(stored);
        Files.writeString(stored, "WRITTEN HERE\n");
        Files.setLastModifiedTime(stored, mtime);
        assertEquals("WRITTEN HERE\n", fs.sh("cat shared/w.txt").ok().out());
    }

    /** One denied write: the command, and what must not exist afterwards. */
    record Denied(String name, String command) {
        @Override
        public String toString() {
            return name;
        }
    }

    static Stream<Denied> deniedWrites() {
        List<Denied> all = new ArrayList<>();
        for (String zone : List.of("home/coder", "sys", ".")) {
            String existing = zone.equals("home/coder") ? zone + "/notes.md" : zone.equals("sys") ? "sys/info" : "top.txt";
            all.add(new Denied("create in " + zone, "echo x > " + zone + "/new.txt"));
            all.add(new Denied("append in " + zone, "echo x >> " + existing));
            all.add(new Denied("truncate in " + zone, "truncate -s 0 " + existing));
            all.add(new Denied("shell truncate in " + zone, ": > " + existing));
            all.add(new Denied("rm in " + zone, "rm -f " + existing));
            all.add(new Denied("mkdir in " + zone, "mkdir " + zone + "/newdir"));
            all.add(new Denied("touch new in " + zone, "touch " + zone + "/touched"));
            all.add(new Denied("touch existing in " + zone, "touch " + existing));
            all.add(new Denied("chmod in " + zone, "chmod 600 " + existing));
            all.add(new Denied("chown in " + zone, "chown 0:0 " + existing));
            all.add(new Denied("mv out of " + zone, "mv " + existing + " shared/stolen"));
            all.add(new Denied("mv into " + zone, "echo y > shared/mine && mv shared/mine " + zone + "/mine"));
            all.add(new Denied("cp into " + zone, "cp shared/a-src " + zone + "/copied"));
            all.add(new Denied("hard link into " + zone, "ln shared/a-src " + zone + "/linked"));
            all.add(new Denied("hard link out of " + zone, "ln " + existing + " shared/linked-out"));
            all.add(new Denied("symlink in " + zone, "ln -s /etc/passwd " + zone + "/sym"));
        }
        all.add(new Denied("rmdir coder's dir", "rmdir home/coder/sub"));
        all.add(new Denied("rm -r coder's home", "rm -rf home/coder"));
        all.add(new Denied("rmdir /shared root", "rmdir shared"));
        all.add(new Denied("mv own home away", "mv home/planner home/planner2"));
        all.add(new Denied("mkdir another home", "mkdir home/intruder"));
        return all.stream();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("deniedWrites")
    void everyWriteOutsideWritableZonesIsEaccesAndChangesNothing(Denied d) throws IOException {
        fs.sh("echo src > shared/a-src").ok();
        String before = snapshotOutsideShared();
        Sh.Result r = fs.sh(d.command());
        assertTrue(r.exitCode() != 0, d + " should fail, but succeeded");
        String err = r.err();
        assertTrue(err.contains("Permission denied") || err.contains("Operation not permitted"),
                d + " should fail with EACCES (or EPERM for symlinks), got: " + err);
        assertEquals(before, snapshotOutsideShared(), d + " changed the store");
    }

    /** Every path and content outside /shared (and planner's home) in the store, as text. */
    private static String snapshotOutsideShared() throws IOException {
        StringBuilder b = new StringBuilder();
        try (Stream<Path> walk = Files.walk(fs.store())) {
            for (Path p : (Iterable<Path>) walk.sorted()::iterator) {
                String rel = fs.store().relativize(p).toString();
                if (rel.startsWith("shared") || rel.startsWith("home/planner")) {
                    continue;
                }
                b.append(rel).append(Files.isDirectory(p) ? "/" : " " + Files.size(p) + " "
                        + Files.readString(p).hashCode() + " " + Integer.toOctalString(
                        (Integer) Files.getAttribute(p, "unix:mode") & 0777) + " "
                        + Files.getLastModifiedTime(p)).append('\n');
            }
        }
        return b.toString();
    }

    @Test
    void aDeniedCreateLeavesNoFileBehind() {
        Sh.Result r = fs.sh("echo x > home/coder/ghost.txt");
        assertTrue(r.err().contains("Permission denied"), r.err());
        assertFalse(Files.exists(fs.stored("/home/coder/ghost.txt")));
        assertFalse(Files.exists(fs.at("/home/coder/ghost.txt")));
    }

    @Test
    void listingShowsThePolicy() {
        String shared = fs.sh("stat -c '%A' shared home/planner home/coder sys .").ok().out();
        assertEquals("drwxr-xr-x\ndrwxr-xr-x\ndr-xr-xr-x\ndr-xr-xr-x\ndr-xr-xr-x\n", shared);
        assertEquals("-r--r--r--\n", fs.sh("stat -c '%A' home/coder/notes.md").ok().out());
        fs.sh("echo '#!/bin/sh' > shared/run.sh && echo 'echo ran' >> shared/run.sh && chmod +x shared/run.sh").ok();
        assertEquals("-rwxr-xr-x\n", fs.sh("stat -c '%A' shared/run.sh").ok().out());
        assertEquals("ran\n", fs.sh("./shared/run.sh").ok().out());
    }

    @Test
    void testDashWTellsTheTruth() {
        fs.sh("test -w shared && test -w home/planner && ! test -w home/coder && ! test -w sys"
                + " && ! test -w home/coder/notes.md && test -r home/coder/notes.md").ok();
    }

    @Test
    void proctMountsShowsAStableNameAndType() {
        String line = Sh.run("grep ' " + fs.mountpoint() + " ' /proc/mounts").ok().out();
        assertTrue(line.startsWith("chibifs " + fs.mountpoint() + " fuse.chibifs "), line);
    }
}
