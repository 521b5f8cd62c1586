package dev.chibifs.fuse;

import dev.chibifs.testing.MountedFs;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;

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
    void anAppendThroughOneMountIsReadWholeThroughTheOtherAtOnce() {
        alice.sh("echo '- [ ] start' > shared/tasks.md").ok();
        StringBuilder expected = new StringBuilder("- [ ] start\n");
        for (int i = 1; i <= 5; i++) {
            bob.sh("cat shared/tasks.md > /dev/null && stat shared/tasks.md > /dev/null").ok();
            alice.sh("echo '- [ ] task " + i + "' >> shared/tasks.md").ok();
            expected.append("- [ ] task ").append(i).append('\n');
            assertEquals(expected.toString(), bob.sh("cat shared/tasks.md").ok().out(), "after append " + i);
        }
    }

    @Test
    void anAppendIsReadWholeThroughEveryNameOfAHardLinkedFile() {
        alice.sh("cd shared && echo one > linked && ln linked alias").ok();
        StringBuilder expected = new StringBuilder("one\n");
        for (int i = 1; i <= 3; i++) {
            bob.sh("cat shared/linked shared/alias > /dev/null").ok();
            alice.sh("echo 'line " + i + "' >> shared/linked").ok();
            expected.append("line ").append(i).append('\n');
            // the first name's open learns of the change; the other kernel inode must hear of it too
            assertEquals(expected.toString(), bob.sh("cat shared/alias").ok().out(), "alias after append " + i);
            assertEquals(expected.toString(), bob.sh("cat shared/linked").ok().out(), "linked after append " + i);
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
