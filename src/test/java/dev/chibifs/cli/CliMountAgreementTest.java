package dev.chibifs.cli;

import dev.chibifs.testing.MountedFs;
import dev.chibifs.testing.Sh;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.file.Files;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The vfs commands and a mount are two doors to one store: what one writes, the other shows, byte for byte. */
@Timeout(180)
class CliMountAgreementTest {

    @Test
    void aFileWrittenThroughTheCliIsTheFileTheMountShowsAndBack() throws Exception {
        try (MountedFs fs = MountedFs.start("--context", "planner")) {
            String home = fs.home().toString();
            MountedFs.cli("write", "--as", "planner", "--home", home, "--content", "héllo from the cli\n",
                    "vfs:///home/planner/notes.md").ok();
            assertEquals("héllo from the cli\n", fs.sh("cat home/planner/notes.md").ok().out());

            fs.sh("printf 'one\\ntwo\\nthree\\n' > shared/tasks.md").ok();
            assertEquals("one\ntwo\nthree\n", MountedFs.cli("cat", "--home", home, "vfs:///shared/tasks.md").ok().out());
            assertEquals("two\n", MountedFs.cli("lines", "--home", home, "vfs:///shared/tasks.md", "2", "2").ok().out());
            MountedFs.cli("edit", "--as", "planner", "--home", home, "--old", "two", "--new", "TWO",
                    "vfs:///shared/tasks.md").ok();
            assertEquals("one\nTWO\nthree\n", fs.sh("cat shared/tasks.md").ok().out());
            assertArrayEquals(Files.readAllBytes(fs.stored("/shared/tasks.md")),
                    Files.readAllBytes(fs.at("/shared/tasks.md")));

            Sh.Result denied = MountedFs.cli("write", "--as", "planner", "--home", home, "--content", "x",
                    "vfs:///home/coder/x");
            assertEquals(3, denied.exitCode(), denied.err());
            assertTrue(fs.sh("test ! -e home/coder/x").exitCode() == 0);
        }
    }
    /** A command that did not open the mount's store at a prefix sees what the local store hides there: it says so. */
    @Test
    void aCommandWithoutTheStoreAMountServesAPrefixFromIsWarned() throws Exception {
        try (MountedFs fs = MountedFs.start("--context", "planner", "--store", "/shared/team/scratch=memory")) {
            String home = fs.home().toString();
            Sh.Result r = MountedFs.cli("write", "--as", "planner", "--home", home, "--content", "x",
                    "vfs:///shared/team/scratch/x").ok();
            assertTrue(r.err().contains("warning: the mount at " + fs.mountpoint() + " serves /shared/team/scratch from memory"),
                    r.err());
            String warning = "warning: the mount at " + fs.mountpoint() + " serves /shared/team/scratch";
            assertEquals(1, r.err().split(warning, -1).length - 1, "once: " + r.err());
            // append and write said it twice, cp three times; cat once
            for (String[] c : new String[][] {{"append", "--content", "y", "vfs:///shared/team/scratch/x"},
                {"cp", "vfs:///shared/team/scratch/x", "vfs:///shared/team/scratch/y"}, {"cat", "vfs:///shared/team/scratch/x"}}) {
                java.util.List<String> args = new java.util.ArrayList<>(java.util.List.of(c[0], "--home", home));
                if (!c[0].equals("cat")) {
                    args.addAll(java.util.List.of("--as", "planner"));
                }
                args.addAll(java.util.List.of(c).subList(1, c.length));
                r = MountedFs.cli(args.toArray(String[]::new)).ok();
                assertEquals(1, r.err().split(warning, -1).length - 1, c[0] + " says it once: " + r.err());
            }
            assertTrue(MountedFs.cli("ls", "--home", home, "vfs:///shared").ok().err().isEmpty(), "elsewhere: nothing");
            r = MountedFs.cli("ls", "--home", home, "--store", "/shared/team/scratch=memory", "vfs:///shared/team/scratch").ok();
            assertTrue(r.err().isEmpty(), r.err());
            // removing what leads to that mount's store cut it off: refused, as the mount refuses it
            Files.createDirectories(fs.stored("/shared/team/x"));
            r = MountedFs.cli("rm", "--home", home, "--as", "planner", "vfs:///shared/team");
            assertEquals(5, r.exitCode(), r.err());
            assertTrue(r.err().contains("holds '/shared/team/scratch', where the mount at " + fs.mountpoint() + " serves memory"),
                    r.err());
            assertTrue(Files.isDirectory(fs.stored("/shared/team/x")));
        }
    }
}
