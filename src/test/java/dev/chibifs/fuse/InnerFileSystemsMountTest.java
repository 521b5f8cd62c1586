package dev.chibifs.fuse;

import dev.chibifs.testing.FuseSupport;
import dev.chibifs.testing.MountedFs;
import dev.chibifs.testing.Sh;
import dev.chibifs.testing.Tmpfs;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** File systems mounted inside the store: their files are not taken for the store's. */
@Timeout(120)
class InnerFileSystemsMountTest {

    /**
     * Session 67: with another file system mounted inside the store, tar stored a hard-linked file
     * of it as a link to an unrelated file of the store's with the same inode number, and extracted
     * the wrong content. A tmpfs store and a tmpfs inside it number their files alike.
     */
    @Test
    void tarKeepsTheFilesOfAFileSystemInsideTheStoreApartAndTheStoresNumbersStay() throws IOException {
        FuseSupport.requireRoot();
        Path root = MountedFs.tempRoot();
        try (Tmpfs home = Tmpfs.mount(root.resolve("home"), "8m");
             MountedFs fs = MountedFs.start(root, "--context", "planner");
             Tmpfs innerDisk = Tmpfs.mount(fs.stored("/shared/sub"), "1m")) {
            Path inner = innerDisk.path();
            fs.sh("for i in 1 2 3 4 5 6; do echo outer$i > shared/o$i; ln shared/o$i shared/o$i.l; done").ok();
            // the store's tmpfs numbered its skeleton first: the inner one's files are brought to the same numbers
            Sh.run("cd '" + inner + "' && n=$(stat -c %i '" + fs.stored("/shared/o1") + "')"
                    + " && for k in $(seq 2 $((n - 1))); do : > pad$k; done").ok();
            fs.sh("for i in 1 2 3 4 5 6; do echo inner$i > shared/sub/i$i; ln shared/sub/i$i shared/sub/i$i.l; done").ok();
            Set<String> outerRaw = lines(Sh.run("stat -c %i '" + fs.stored("/shared") + "'/o?").ok().out());
            Set<String> innerRaw = lines(Sh.run("stat -c %i '" + inner + "'/i?").ok().out());
            innerRaw.retainAll(outerRaw);
            assertFalse(innerRaw.isEmpty(), "the two tmpfs share numbers, as the test needs");

            assertEquals(Sh.run("stat -c '%n %i' '" + fs.stored("/shared") + "'/o*").ok().out()
                            .replace(fs.stored("/shared").toString(), "shared"),
                    fs.sh("stat -c '%n %i' shared/o*").ok().out(), "the store's own inode numbers, unchanged");
            List<String> shown = Arrays.asList(fs.sh("stat -c %i shared/o? shared/sub/i?").ok().out().split("\n"));
            assertEquals(12, new HashSet<>(shown).size(), "one number per file: " + shown);

            Path out = Files.createDirectories(root.resolve("out"));
            fs.sh("tar cf - shared/o* shared/sub | tar xf - -C '" + out + "'").ok();
            Sh.run("diff -r '" + fs.at("/shared/sub") + "' '" + out.resolve("shared/sub") + "'").ok();
            assertEquals("inner3\n", Files.readString(out.resolve("shared/sub/i3.l")));
            assertTrue(fs.process().isAlive());
        }
    }

    private static Set<String> lines(String out) {
        return new HashSet<>(Arrays.asList(out.strip().split("\n")));
    }
}
