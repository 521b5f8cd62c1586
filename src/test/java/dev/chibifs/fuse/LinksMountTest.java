package dev.chibifs.fuse;

import dev.chibifs.testing.MountedFs;
import dev.chibifs.testing.Sh;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Symbolic links as the programs a coding agent runs in its first hour make them (issue 25): tar,
 * git, cp -a, rsync -a, npm and python's venv, on a per-context mount with the default
 * {@code --symlinks zone}, and what they make followed through a second mount of the same store.
 * Links that would leave their zone are refused, by ln -s and by a mv that would carry them there.
 */
@Timeout(300)
class LinksMountTest {

    private static MountedFs planner;
    private static MountedFs coder;
    /** Host-side scratch for the trees, tarballs and repositories the tests bring to the mount. */
    private static Path host;

    @BeforeAll
    static void mount() throws IOException {
        Path root = MountedFs.tempRoot();
        planner = MountedFs.start(root, "--context", "planner");
        coder = MountedFs.start(secondMountOver(root), "--context", "coder");
        host = Files.createDirectories(root.resolve("host"));
    }

    /** A new temp dir whose home is {@code root}'s: a second mount there serves the same store. */
    static Path secondMountOver(Path root) throws IOException {
        Path second = MountedFs.tempRoot();
        Files.createDirectories(second.resolve("mnt"));
        Files.createSymbolicLink(second.resolve("home"), root.resolve("home"));
        return second;
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

    /** {@code r} if it succeeded; else an error with its output, the mount's request counts and the daemon's log. */
    static Sh.Result ok(MountedFs fs, Sh.Result r) {
        if (r.exitCode() != 0) {
            throw new AssertionError("command failed (" + r.exitCode() + "):\n" + r.err() + r.out() + "\n"
                    + diagnostics(fs));
        }
        return r;
    }

    /** {@code chibifs stats} of the mount and the end of its daemon's log, for a failure message. */
    static String diagnostics(MountedFs fs) {
        Sh.Result stats = MountedFs.cli("stats", fs.mountpoint().toString());
        String log = fs.log();
        return "chibifs stats " + fs.mountpoint() + ":\n" + stats.out() + stats.err() + "daemon log (end):\n"
                + log.substring(Math.max(0, log.length() - 4000));
    }

    private static Sh.Result sh(MountedFs fs, String script) {
        return ok(fs, fs.sh(script));
    }

    /** Every name below {@code dir} with its type and, for a link, its target, one a line, sorted. */
    private static String tree(String dir) {
        return Sh.run("cd '" + dir + "' && find . -printf '%p %y %l\\n' | LC_ALL=C sort").ok().out();
    }

    /** The links in {@code dir} whose targets are absolute, "name -> target" a line. */
    private static String absoluteLinks(Path dir) {
        return Sh.run("cd " + q(dir) + " && find . -maxdepth 1 -lname '/*' -printf '%f -> %l\\n' | LC_ALL=C sort").ok().out();
    }

    private static String q(Path p) {
        return "'" + p.toString().replace("'", "'\\''") + "'";
    }

    @Test
    void tarExtractsRelativeLinksAndRefusesAnAbsoluteOneWhileTheRestExtracts() throws IOException {
        Path src = host.resolve("tarsrc");
        Sh.run("mkdir -p " + q(src) + "/pkg/lib " + q(src) + "/pkg/bin && cd " + q(src)
                + " && echo data > pkg/lib/data.txt && ln -s ../lib/data.txt pkg/bin/data && ln -s lib pkg/lib64"
                + " && ln -s /etc/hostname pkg/abs && echo after > pkg/zz_after.txt && tar cf ../links.tar pkg").ok();
        Sh.Result tar = planner.sh("mkdir shared/tar && cd shared/tar && tar xf " + q(host.resolve("links.tar")));
        // GNU tar goes on past the refused link and exits 2 at the end, naming it
        assertEquals(2, tar.exitCode(), tar.err() + tar.out());
        assertTrue(tar.err().contains("pkg/abs: Cannot create symlink to") && tar.err().contains("Operation not permitted"),
                tar.err());
        assertFalse(Files.exists(planner.stored("/shared/tar/pkg/abs"), LinkOption.NOFOLLOW_LINKS));
        assertEquals("after\n", Files.readString(planner.stored("/shared/tar/pkg/zz_after.txt")));
        // stored as real links in the store, byte for byte what tar was given
        assertEquals(Path.of("../lib/data.txt"), Files.readSymbolicLink(planner.stored("/shared/tar/pkg/bin/data")));
        assertEquals(Path.of("lib"), Files.readSymbolicLink(planner.stored("/shared/tar/pkg/lib64")));
        assertEquals("data\ndata\n", sh(planner, "cat shared/tar/pkg/bin/data shared/tar/pkg/lib64/data.txt").out());
        sh(planner, "test -L shared/tar/pkg/bin/data && [ \"$(readlink shared/tar/pkg/lib64)\" = lib ]");
    }

    @Test
    void aRelativeLinkIsFollowedThroughTheMountAndThroughASecondMountOfTheStore() throws IOException {
        sh(planner, "mkdir -p shared/follow/d && echo v1 > shared/follow/d/file && cd shared/follow"
                + " && ln -s d/file top && ln -s ../follow/d dirlink && ln -s ../top d/up");
        for (MountedFs fs : new MountedFs[] {planner, coder}) {
            assertEquals("v1\nv1\nv1\n", sh(fs, "cat shared/follow/top shared/follow/dirlink/file shared/follow/d/up").out(),
                    fs.mountpoint().toString());
            assertEquals("d/file\n", sh(fs, "readlink shared/follow/top").out());
            assertEquals(fs.at("/shared/follow/d/file") + "\n", sh(fs, "readlink -f shared/follow/d/up").out());
            sh(fs, "test -L shared/follow/top && test -d shared/follow/dirlink/ && ls shared/follow/dirlink/ | grep -qx file"
                    + " && [ \"$(stat -c %F shared/follow/top)\" = 'symbolic link' ]");
        }
        // written through the link on one mount, read through it on the other
        sh(coder, "echo v2 >> shared/follow/top");
        assertEquals("v1\nv2\n", sh(planner, "cat shared/follow/dirlink/file").out());
        assertEquals("v1\nv2\n", Files.readString(planner.stored("/shared/follow/d/file")));
        // a link in planner's home is read (never written) by coder through it; renamed and hard linked, it stays a link
        sh(planner, "echo mine > home/planner/notes && ln -s notes home/planner/n && mv home/planner/n home/planner/n2"
                + " && ln -P home/planner/n2 home/planner/n3");
        assertEquals("mine\nmine\n", sh(coder, "cat home/planner/n2 home/planner/n3").out());
        sh(coder, "test -L home/planner/n3 && [ \"$(readlink home/planner/n3)\" = notes ]");
        Sh.Result denied = coder.sh("echo x >> home/planner/n2");
        assertTrue(denied.exitCode() != 0 && denied.err().contains("Permission denied"), denied.err());
        assertEquals("mine\n", Files.readString(planner.stored("/home/planner/notes")));
    }

    @Test
    void lnDashSRefusesALinkThatLeavesItsZone() {
        sh(planner, "mkdir -p shared/esc/a home/planner/esc && echo x > shared/esc/x");
        String[][] refused = {
            {"/etc/passwd", "shared/esc/abs"},            // absolute
            {"../../../home/planner", "shared/esc/a/up"}, // out of /shared into another zone
            {"../../../../../etc/passwd", "shared/esc/far"},  // out of the store
            {"a/../../../shared", "shared/esc/mid"},      // a '..' after a name: judged as text, refused
            {"../../shared/esc/x", "home/planner/esc/x"}, // out of planner's home into /shared
        };
        for (String[] r : refused) {
            Sh.Result ln = planner.sh("ln -s '" + r[0] + "' " + r[1]);
            assertEquals(1, ln.exitCode(), r[1] + " -> " + r[0] + ": " + ln.out());
            assertTrue(ln.err().contains("Operation not permitted"), r[1] + " -> " + r[0] + ": " + ln.err());
            assertFalse(Files.exists(planner.stored("/" + r[1]), LinkOption.NOFOLLOW_LINKS), r[1]);
        }
        // inside the zone, dangling or not, is fine; so is '..' back up to the zone root
        sh(planner, "ln -s ../x shared/esc/a/ok && ln -s nowhere shared/esc/dangling && ln -s ../../esc/x shared/esc/a/viaroot"
                + " && cat shared/esc/a/ok shared/esc/a/viaroot");
        // a context cannot make a link in a zone it may not write: EACCES, as for any write
        Sh.Result other = coder.sh("ln -s notes home/planner/esc/fromcoder");
        assertTrue(other.exitCode() != 0 && other.err().contains("Permission denied"), other.err());
    }

    @Test
    void mvRefusesToCarryALinkToWhereItsTargetLeavesTheZoneAlsoInsideAMovedDirectory() throws IOException {
        sh(planner, "mkdir -p shared/mv/a/b && echo x > shared/mv/x && echo keep > shared/mv/a/b/f"
                + " && ln -s ../x shared/mv/a/l && ln -s ../../x shared/mv/a/b/l2 && ln -s f shared/mv/a/b/near");
        // shared/mv/a/l -> ../x moved to home/planner/l would point at /home/x, outside planner's home
        Sh.Result link = planner.sh("mv shared/mv/a/l home/planner/l");
        assertEquals(1, link.exitCode(), link.out());
        assertTrue(link.err().contains("home/planner/l") && link.err().contains("Operation not permitted"), link.err());
        assertFalse(Files.exists(planner.stored("/home/planner/l"), LinkOption.NOFOLLOW_LINKS));
        assertEquals(Path.of("../x"), Files.readSymbolicLink(planner.stored("/shared/mv/a/l")));
        // the directory b carries l2 -> ../../x, which from home/planner/b leaves the home: mv copies what it may
        // and refuses l2 by name, so the source stays whole and nothing in the copy leads out
        Sh.Result dir = planner.sh("mv shared/mv/a/b home/planner/b");
        assertEquals(1, dir.exitCode(), dir.out());
        assertTrue(dir.err().contains("home/planner/b/l2") && dir.err().contains("Operation not permitted"), dir.err());
        assertFalse(Files.exists(planner.stored("/home/planner/b/l2"), LinkOption.NOFOLLOW_LINKS));
        assertEquals("keep\n", Files.readString(planner.stored("/home/planner/b/f")));
        assertEquals(Path.of("f"), Files.readSymbolicLink(planner.stored("/home/planner/b/near")));
        assertEquals(Path.of("../../x"), Files.readSymbolicLink(planner.stored("/shared/mv/a/b/l2")));
        // inside one zone too: one level up, l2 would leave /shared
        Sh.Result up = planner.sh("mv shared/mv/a/b/l2 shared/l2");
        assertEquals(1, up.exitCode(), up.out());
        assertFalse(Files.exists(planner.stored("/shared/l2"), LinkOption.NOFOLLOW_LINKS));
        // a link whose target stays in the zone moves, across zones too, and still leads where it did relative to itself
        sh(planner, "mv shared/mv/a/b/near home/planner/near && mv shared/mv/a shared/mv/a2"
                + " && [ \"$(cat shared/mv/a2/l)\" = x ] && test -L home/planner/near");
    }

    @Test
    void gitClonesAndChecksOutARepositoryWithLinks() {
        Path repo = host.resolve("gitrepo");
        String git = "git -c user.email=a@b -c user.name=A -c init.defaultBranch=main -c advice.detachedHead=false ";
        Sh.run("mkdir -p " + q(repo) + " && cd " + q(repo) + " && " + git + "init -q && mkdir -p src docs"
                + " && echo 'int x;' > src/x.c && ln -s src/x.c main.c && ln -s ../src docs/src && echo readme > README"
                + " && " + git + "add -A && " + git + "commit -qm links"
                + " && " + git + "checkout -qb other && rm main.c && ln -s README main.c && rm README && ln -s docs/src README"
                + " && echo new > src/y.c && ln -s y.c src/current && " + git + "add -A && " + git + "commit -qm swapped"
                + " && " + git + "checkout -q main").ok();
        sh(planner, "cd shared && git clone -q " + q(repo) + " clone && cd clone && test -L main.c && test -L docs/src"
                + " && [ \"$(cat main.c)\" = 'int x;' ] && [ \"$(readlink docs/src)\" = ../src ]"
                + " && git status --porcelain | wc -l | grep -qx 0");
        assertEquals(tree(repo.toString()).replaceAll("(?m)^\\./\\.git.*\\n", ""),
                tree(planner.at("/shared/clone").toString()).replaceAll("(?m)^\\./\\.git.*\\n", ""));
        // a checkout turns a file into a link, changes a link's target and adds one; and back
        sh(planner, "cd shared/clone && git checkout -q other && [ \"$(readlink main.c)\" = README ]"
                + " && [ \"$(readlink README)\" = docs/src ] && [ \"$(cat src/current)\" = new ] && ls README/ | grep -qx y.c"
                + " && git status --porcelain | wc -l | grep -qx 0 && git checkout -q main && test -f README && ! test -L README"
                + " && ! test -e src/current && git status --porcelain | wc -l | grep -qx 0"
                + " && git fsck --no-progress 2>&1 | (! grep -q error)");
        // the other agent sees the same checkout through its own mount
        assertEquals("int x;\n", sh(coder, "cat shared/clone/main.c").out());
    }

    @Test
    void cpDashAAndRsyncDashACopyATreeWithLinks() {
        Path src = host.resolve("copysrc");
        Sh.run("mkdir -p " + q(src) + "/a/b && cd " + q(src) + " && echo one > a/one && echo two > a/b/two"
                + " && ln -s one a/l1 && ln -s b/two a/l2 && ln -s ../../a a/b/back && ln -s missing a/dangling && ln -s b a/dir"
                + " && touch -h -d 2020-01-02T03:04:05 a/l1").ok();
        String expected = tree(src.toString());
        // host -> mount
        sh(planner, "cp -a " + q(src) + " shared/cpa && rsync -a " + q(src) + "/ shared/rsynca/");
        assertEquals(expected, tree(planner.at("/shared/cpa").toString()));
        assertEquals(expected, tree(planner.at("/shared/rsynca").toString()));
        sh(planner, "[ \"$(stat -c %Y shared/cpa/a/l1)\" = \"$(stat -c %Y " + q(src) + "/a/l1)\" ]"
                + " && [ \"$(cat shared/rsynca/a/b/back/l2)\" = two ]");
        // mount -> mount (within /shared, and into planner's home), and back to the host
        sh(planner, "cp -a shared/cpa home/planner/cpa && rsync -a shared/rsynca/ home/planner/rsynca/"
                + " && rsync -a shared/rsynca/ " + q(host.resolve("back")) + "/");
        assertEquals(expected, tree(planner.at("/home/planner/cpa").toString()));
        assertEquals(expected, tree(planner.at("/home/planner/rsynca").toString()));
        assertEquals(expected, tree(host.resolve("back").toString()));
        // a second rsync finds nothing to do, and one that changed a link's target replaces just that link
        assertEquals("", sh(planner, "rsync -ai " + q(src) + "/ shared/rsynca/").out());
        Sh.run("cd " + q(src) + " && ln -sfn b/two a/l1").ok();
        assertTrue(sh(planner, "rsync -ai " + q(src) + "/ shared/rsynca/").out().contains("a/l1 -> b/two"));
        assertEquals("b/two\n", sh(coder, "readlink shared/rsynca/a/l1").out());
    }

    @Test
    void npmInstallsALocalPackageWithABinLinkThatRuns() throws IOException {
        Path pkg = Files.createDirectories(host.resolve("npm/hello/bin"));
        Files.writeString(pkg.resolveSibling("package.json"),
                "{\"name\":\"chibifs-hello\",\"version\":\"1.0.0\",\"bin\":{\"chibifs-hello\":\"bin/hello.js\"}}\n");
        Files.writeString(pkg.resolve("hello.js"), "#!/usr/bin/env node\nconsole.log('hello from ' + process.argv[2]);\n");
        // no network: npm packs the package here and installs the tarball offline
        String npm = "npm --offline --no-audit --no-fund --no-update-notifier --loglevel=error --cache " + q(host.resolve("npm/cache")) + " ";
        Sh.run("cd " + q(host.resolve("npm")) + " && " + npm + "pack ./hello >/dev/null && test -f chibifs-hello-1.0.0.tgz").ok();
        sh(planner, "mkdir -p shared/app && cd shared/app && echo '{\"name\":\"app\",\"version\":\"1.0.0\"}' > package.json"
                + " && " + npm + "install " + q(host.resolve("npm/chibifs-hello-1.0.0.tgz")));
        assertEquals(Path.of("../chibifs-hello/bin/hello.js"),
                Files.readSymbolicLink(planner.stored("/shared/app/node_modules/.bin/chibifs-hello")));
        assertEquals("hello from mount\n", sh(planner, "shared/app/node_modules/.bin/chibifs-hello mount").out());
        assertEquals("hello from npx\n", sh(planner, "cd shared/app && " + npm + "exec -- chibifs-hello npx").out());
        // the other agent runs it through its own mount
        assertEquals("hello from coder\n", sh(coder, "shared/app/node_modules/.bin/chibifs-hello coder").out());
        // and npm removes it again, link and all
        sh(planner, "cd shared/app && " + npm + "uninstall chibifs-hello && ! test -e node_modules/.bin/chibifs-hello");
    }

    @Test
    void pythonVenvWithCopiesMakesLib64AndItsPipRuns() throws IOException {
        sh(planner, "cd shared && /usr/bin/python3 -m venv --copies venv");
        assertEquals(Path.of("lib"), Files.readSymbolicLink(planner.stored("/shared/venv/lib64")));
        assertTrue(sh(planner, "shared/venv/bin/pip --version").out().startsWith("pip "));
        assertTrue(sh(coder, "shared/venv/bin/python -m pip --version").out().contains(coder.at("/shared/venv/lib").toString()));
    }

    @Test
    void pythonVenvWithoutCopiesFallsBackToACopyOfPythonUnderTheZoneRule() throws IOException {
        // venv's link to /usr/bin/python3 leaves the zone: venv says so, copies the interpreter and goes on
        Sh.Result venv = ok(planner, planner.sh("cd home/planner && /usr/bin/python3 -m venv venv"));
        assertTrue(venv.err().contains("Unable to symlink") || venv.out().contains("Unable to symlink"), venv.err() + venv.out());
        // which of python, python3, python3.X is the copy and which link to it depends on the Python version
        assertEquals("", absoluteLinks(planner.stored("/home/planner/venv/bin")));
        assertEquals(planner.at("/home/planner/venv/bin").toString(),
                sh(planner, "dirname \"$(readlink -f home/planner/venv/bin/python3)\"").out().strip());
        assertTrue(sh(planner, "home/planner/venv/bin/pip --version").out().startsWith("pip "));
    }

    @Test
    void pythonVenvWithSymlinksWorksOnASymlinksAnyMount() throws IOException {
        try (MountedFs any = MountedFs.start("--context", "planner", "--symlinks", "any")) {
            Sh.Result venv = ok(any, any.sh("cd shared && /usr/bin/python3 -m venv venv"));
            assertFalse((venv.err() + venv.out()).contains("Unable to symlink"), venv.err() + venv.out());
            assertTrue(absoluteLinks(any.stored("/shared/venv/bin")).contains("/usr/bin/python3"), "links to the host's python");
            assertTrue(sh(any, "shared/venv/bin/pip --version").out().startsWith("pip "));
            // and 'any' means any: an absolute link out of the store is made
            sh(any, "ln -s /etc/hostname shared/host && cat shared/host > /dev/null");
        }
    }
}
