package dev.chibifs.router;

import dev.chibifs.testing.Chibi010Home;
import dev.chibifs.testing.FuseSupport;
import dev.chibifs.testing.MountedFs;
import dev.chibifs.testing.Sh;
import dev.chibifs.testing.TestUsers;
import dev.chibifs.testing.TestUsers.User;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** chibi 0.10's zones on one mount for two real users: access(2) tells each the truth about flocks. */
@Timeout(300)
class NamespaceUidMapTest {

    private static User planner;
    private static User coder;
    private static MountedFs fs;

    @BeforeAll
    static void mount() throws IOException {
        FuseSupport.requireFuse();
        FuseSupport.requireRoot();
        planner = TestUsers.ensure("chibit-planner");
        coder = TestUsers.ensure("chibit-coder");
        Path root = MountedFs.tempRoot();
        Chibi010Home.create(Files.createDirectories(root.resolve("home")));
        fs = MountedFs.start(root, "--uid-map", planner.uid() + "=planner", "--uid-map", coder.uid() + "=coder");
    }

    @AfterAll
    static void unmount() {
        if (fs != null) {
            fs.close();
        }
    }

    @Test
    void eachUserWritesTheFlocksItJoinedAndAccessSaysSo() {
        fs.shAs(coder, "echo c > flocks/ops/c.md && echo c > tools/flocks/ops/c.scm && test -w flocks/ops").ok();
        fs.shAs(planner, "! test -w flocks/ops && test -w flocks/team && test -w site && ! test -w tools/home/coder"
                + " && test -w tools/home/planner && ! test -w tools/sys").ok();
        Sh.Result r = fs.shAs(planner, "echo p > flocks/ops/p.md");
        assertTrue(r.err().contains("Permission denied"), r.err());
        assertFalse(Files.exists(fs.stored("/flocks/ops/p.md")));
        fs.shAs(planner, "echo p > flocks/team/p.md && echo p > site/p.md").ok();
        r = fs.sh("echo root > flocks/team/root.md");
        assertTrue(r.err().contains("Permission denied"), "root is a guest: " + r.err());
        assertEquals("c\n", fs.shAs(planner, "cat flocks/ops/c.md").ok().out());
    }

    @Test
    void aRegistryChangeCountsForTheNextRequestOfEveryUser() throws IOException {
        try {
            Chibi010Home.writeRegistry(fs.home(), "planner:team", "planner:ops", "coder:team");
            fs.shAs(planner, "test -w flocks/ops && echo p > flocks/ops/joined.md").ok();
            fs.shAs(coder, "! test -w flocks/ops").ok();
            Sh.Result r = fs.shAs(coder, "echo c > flocks/ops/left.md");
            assertTrue(r.err().contains("Permission denied"), r.err());
        } finally {
            Chibi010Home.writeRegistry(fs.home(), "planner:team", "coder:team", "coder:ops");
        }
    }
}
