package dev.chibifs.cli;

import dev.chibifs.testing.Chibi010Home;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The vfs commands over chibi 0.10's namespace: the mount's rules, exit 3 for each refusal, stores and views. */
class NamespaceCliTest {

    @TempDir
    Path home;
    private Cli cli;

    @BeforeEach
    void layOut() {
        Chibi010Home.create(home);
        cli = new Cli(home);
    }

    private void assertExit(int code, Cli.Result r) {
        assertEquals(code, r.code(), r.toString());
    }

    @Test
    void theWritesChibiAllowsLandAndTheOthersAreExit3AndLeaveNothing() throws IOException {
        for (String uri : new String[] {"vfs:///site/a", "vfs:///flocks/team/a", "vfs:///tools/shared/a.scm",
                                        "vfs:///tools/home/planner/a.scm", "vfs:///tools/flocks/team/a.scm"}) {
            assertExit(0, cli.run("write", "--as", "planner", uri, "--content", "x"));
        }
        assertTrue(Files.exists(cli.file("/tools/flocks/team/a.scm")));
        for (String uri : new String[] {"vfs:///flocks/ops/a", "vfs:///flocks/registry.json", "vfs:///tools/home/coder/a",
                                        "vfs:///tools/flocks/ops/a", "vfs:///tools/sys/a", "vfs:///flocks/x/a"}) {
            assertExit(3, cli.run("write", "--as", "planner", uri, "--content", "x"));
        }
        assertFalse(Files.exists(cli.file("/flocks/ops/a")) || Files.exists(cli.file("/tools/home/coder/a")));
        Cli.Result r = cli.run("write", "--as", "planner", "vfs:///flocks/ops/a", "--content", "x");
        assertEquals("chibifs: context 'planner' is not a member of flock 'ops'\n", r.err());
        r = cli.run("write", "--as-system", "vfs:///tools/sys/a", "--content", "x");
        assertExit(3, r);
        assertEquals("chibifs: '/tools/sys/a' is read-only (virtual tool registry)\n", r.err());
        Chibi010Home.writeRegistry(home, "planner:ops");
        assertExit(0, cli.run("write", "--as", "planner", "vfs:///flocks/ops/a", "--content", "x"));
        assertExit(3, cli.run("write", "--as", "planner", "vfs:///flocks/team/b", "--content", "x"));
    }

    @Test
    void storesAndViewsAreTheMountsToo(@TempDir Path docs) throws IOException {
        Files.writeString(docs.resolve("d.md"), "doc\n");
        Cli.Result r = cli.run("cat", "--store", "/shared/docs=readonly:" + docs, "vfs:///shared/docs/d.md");
        assertEquals("doc\n", r.out());
        r = cli.run("write", "--as", "planner", "--store", "/shared/docs=readonly:" + docs, "vfs:///shared/docs/n",
                "--content", "x");
        assertExit(3, r);
        assertEquals("chibifs: '/shared/docs/n' is read-only (readonly:" + docs + ")\n", r.err());
        r = cli.run("ls", "--store", "/shared/scratch=memory", "vfs:///shared");
        assertTrue(r.out().contains("scratch/"), r.out());
        assertEquals("(\"/home/planner/tasks\" \"/flocks/site:" + Chibi010Home.SITE_ID + "/tasks\" \"/flocks/team/tasks\")\n",
                cli.run("cat", "vfs:///sys/contexts/planner/task-dirs").out() + "\n");
        assertExit(3, cli.run("write", "--as-system", "vfs:///sys/contexts/planner/state.json", "--content", "x"));
    }

    /** A store at a prefix names its own paths; the message names the one the user typed. */
    @Test
    void aFailureInAStoreAtAPrefixNamesTheNamespacePath() {
        Cli.Result r = cli.run("cat", "--store", "/shared/mem=memory", "vfs:///shared/mem/x");
        assertExit(1, r);
        assertEquals("chibifs: no such file or directory: vfs:///shared/mem/x\n", r.err());
        r = cli.run("ls", "vfs:///sys/contexts/nobody");
        assertEquals("chibifs: no such file or directory: vfs:///sys/contexts/nobody\n", r.err());
        // the local store's own name, above the prefix: was "vfs:///shared/x/c/shared/x"
        r = cli.run("cat", "--store", "/shared/x/c=memory", "vfs:///shared/x");
        assertEquals("chibifs: no such file or directory: vfs:///shared/x\n", r.err());
        // a directory holding a prefix: was "vfs:///sys/contexts" for vfs:///
        assertEquals("chibifs: is a directory: vfs:///\n", cli.run("cat", "vfs:///").err());
        r = cli.run("cat", "--store", "/shared/mem=memory", "vfs:///shared/mem");
        assertEquals("chibifs: is a directory: vfs:///shared/mem\n", r.err()); // was EBUSY
    }

    /** A failure past a link into a store at a prefix named that store's own path, vfs:/// or vfs:///nope. */
    @Test
    void aFailurePastALinkIntoAnotherStoreNamesThePathGiven(@TempDir Path docs) throws IOException {
        Path alice = Files.createDirectories(cli.file("/home/alice"));
        Files.createSymbolicLink(alice.resolve("toro_d"), Path.of("../../shared/docs"));
        String store = "/shared/docs=readonly:" + docs;
        Cli.Result r = cli.run("cat", "--store", store, "vfs:///home/alice/toro_d");
        assertExit(4, r);
        assertEquals("chibifs: is a directory: vfs:///home/alice/toro_d (a symbolic link on it leads to"
                + " vfs:///shared/docs)\n", r.err());
        r = cli.run("cat", "--store", store, "vfs:///home/alice/toro_d/nope");
        assertExit(1, r);
        assertEquals("chibifs: no such file or directory: vfs:///home/alice/toro_d/nope (a symbolic link on it leads"
                + " to vfs:///shared/docs/nope)\n", r.err());
    }

    @Test
    void aBadStoreOptionNamesTheValueAndTheRule() {
        for (String bad : new String[] {"shared=memory", "/=memory", "/x=disk", "/x=memory:lots", "/x=readonly:/no/such/dir",
                                        "/sys/contexts=memory", "/x"}) {
            Cli.Result r = cli.run("ls", "--store", bad, "vfs:///");
            assertExit(2, r);
            assertTrue(r.err().contains("'" + bad + "'") && r.err().contains("PREFIX=SPEC")
                    || r.err().contains("SPEC is memory"), r.err());
        }
    }

    @Test
    void aPrefixNamedTwiceIsShownAsTyped() {
        Cli.Result r = cli.run("ls", "--store", "/x=memory", "--store", "/x=memory:1M", "vfs:///");
        assertExit(2, r);
        assertEquals("chibifs: invalid --store '/x=memory:1M': /x is named twice (also --store '/x=memory');"
                + " one store per prefix\n", r.err());
    }

    @Test
    void s3OptionsAreCheckedBeforeAnythingIsOpened() {
        String s3 = "/shared/team=s3://team-bucket/chibi";
        // only an S3 store may serve the whole namespace; a malformed bucket is named with its rule
        Cli.Result r = cli.run("ls", "--store", "/=readonly:/tmp", "vfs:///");
        assertExit(2, r);
        assertTrue(r.err().contains("'/=readonly:/tmp'") && r.err().contains("/ only for an s3:// store"), r.err());
        r = cli.run("ls", "--store", "/shared/team=s3://Bad_Bucket/x", "vfs:///");
        assertExit(2, r);
        assertTrue(r.err().contains("'Bad_Bucket'") && r.err().contains("bucket name"), r.err());
        // --cache-dir, --cache-size, --flush-after, --metadata-ttl, --prefetch-below and the locks' options mean something only
        // with an S3 store, and a cache holds one store
        r = cli.run("ls", "--cache-dir", "/tmp/c", "vfs:///");
        assertExit(2, r);
        assertTrue(r.err().contains("--cache-dir, --cache-size, --flush-after, --metadata-ttl, --prefetch-below,"
                + " --lock-lease, --local-locks and --exclusive-creates are for an S3 store"), r.err());
        r = cli.run("ls", "--local-locks", "vfs:///");
        assertExit(2, r);
        assertTrue(r.err().contains("are for an S3 store"), r.err());
        r = cli.run("ls", "--exclusive-creates", "vfs:///");
        assertExit(2, r);
        assertTrue(r.err().contains("are for an S3 store"), r.err());
        r = cli.run("ls", "--store", s3, "--local-locks", "--lock-lease", "5s", "vfs:///");
        assertExit(2, r);
        assertTrue(r.err().contains("--lock-lease and --local-locks cannot go together"), r.err());
        r = cli.run("ls", "--store", s3, "--lock-lease", "0s", "vfs:///");
        assertExit(2, r);
        assertTrue(r.err().contains("invalid duration '0s'"), r.err());
        r = cli.run("ls", "--store", s3, "--lock-lease", "1ms", "vfs:///"); // 729 PUTs for one flock held 5 s
        assertExit(2, r);
        assertTrue(r.err().contains("invalid --lock-lease '0.001s': at least 3s"), r.err());
        r = cli.run("ls", "--prefetch-below", "0", "vfs:///");
        assertExit(2, r);
        assertTrue(r.err().contains("are for an S3 store"), r.err());
        r = cli.run("ls", "--store", s3, "--prefetch-below", "-1", "vfs:///");
        assertExit(2, r);
        assertTrue(r.err().contains("invalid size '-1': 0 bytes or more"), r.err());
        r = cli.run("ls", "--cache-size", "1G", "vfs:///");
        assertExit(2, r);
        assertTrue(r.err().contains("are for an S3 store"), r.err());
        r = cli.run("ls", "--metadata-ttl", "10s", "vfs:///");
        assertExit(2, r);
        assertTrue(r.err().contains("are for an S3 store"), r.err());
        r = cli.run("ls", "--store", s3, "--metadata-ttl", "0s", "vfs:///");
        assertExit(2, r);
        assertTrue(r.err().contains("invalid duration '0s'"), r.err());
        r = cli.run("ls", "--store", s3, "--cache-size", "12Q", "vfs:///");
        assertExit(2, r);
        assertTrue(r.err().contains("invalid size '12Q': more than 0 bytes, with an optional K, M or G"), r.err());
        r = cli.run("ls", "--store", s3, "--store", "/shared/other=s3://team-bucket/other", "--cache-dir", "/tmp/c",
                "vfs:///");
        assertExit(2, r);
        assertTrue(r.err().contains("invalid --cache-dir '/tmp/c'") && r.err().contains("2 are named"), r.err());
        r = cli.run("ls", "--store", s3, "--flush-after", "0s", "vfs:///");
        assertExit(2, r);
        assertTrue(r.err().contains("invalid duration '0s'"), r.err());
        r = cli.run("ls", "--store", "/x=s3://bkt/p?endpoint=http://h%zz", "vfs:///");
        assertExit(2, r);
        assertTrue(r.err().contains("option 'endpoint' has a bad escape in 'http://h%zz'")
                && !r.err().contains("URLDecoder"), r.err());
        // the password is shown by neither the S3 spec's message nor --store's around it
        r = cli.run("ls", "--store", "/=s3://chibi/ns?endpoint=http://AKIA:sup3rs3cret@127.0.0.1:9000", "vfs:///");
        assertExit(2, r);
        assertEquals("chibifs: invalid --store '/=s3://chibi/ns?endpoint=http://AKIA:***@127.0.0.1:9000':"
                + " 's3://chibi/ns?endpoint=http://AKIA:***@127.0.0.1:9000': an endpoint with user info"
                + " (USER:PASSWORD@): give it as http(s)://HOST[:PORT]; credentials come from AWS_ACCESS_KEY_ID and"
                + " AWS_SECRET_ACCESS_KEY (or AWS_PROFILE and the AWS tools' other sources), never from the URL\n",
                r.err());
        r = cli.run("ls", "--store", "shared=s3://chibi/ns?endpoint=http://AKIA:sup3rs3cret@h", "vfs:///");
        assertExit(2, r);
        assertTrue(r.err().contains("http://AKIA:***@h") && !r.err().contains("sup3rs3cret"), r.err());
        for (String option : new String[] {"--flush-after", "--metadata-ttl", "--lock-lease"}) {
            r = cli.run("ls", "--store", s3, option, "99999999999999d", "vfs:///");
            assertExit(2, r);
            assertTrue(r.err().contains("'" + option + "': invalid duration '99999999999999d': at most 365d"), r.err());
        }
    }
}
