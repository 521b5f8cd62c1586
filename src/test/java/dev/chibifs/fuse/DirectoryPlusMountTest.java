package dev.chibifs.fuse;

import dev.chibifs.testing.MountedFs;
import dev.chibifs.testing.Sh;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.StandardOpenOption;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Listings that carry attributes (READDIRPLUS, {@link DirectoryPlus}) through a real mount: what
 * they tell is what the store holds, and the kernel's lookups through them stay counted, so the
 * daemon survives the kernel forgetting every inode (libfuse 2.9 aborts on a FORGET it cannot count).
 */
@Timeout(120)
class DirectoryPlusMountTest {

    private static MountedFs fs;

    @BeforeAll
    static void mount() {
        fs = MountedFs.start("--context", "planner", "--kernel-cache", "30s");
    }

    @AfterAll
    static void unmount() {
        if (fs != null) {
            fs.close();
        }
    }

    @Test
    void aListingTellsWhatTheStoreHolds() {
        fs.sh("mkdir shared/same && for i in $(seq 60); do echo $i > shared/same/f$i; done"
                + " && for i in $(seq 0 3 60); do echo more >> shared/same/f$i; done && ln shared/same/f1 shared/same/link"
                + " && mkdir shared/same/sub").ok();
        String format = "'%P %y %s %n %i %T@\\n'";
        String mounted = fs.sh("find shared/same -mindepth 1 -printf " + format + " | sort").ok().out();
        String stored = Sh.run(fs.stored("/shared/same").getParent().getParent(),
                "find shared/same -mindepth 1 -printf " + format + " | sort").ok().out();
        assertEquals(stored, mounted);
        assertTrue(mounted.contains("link f 2 2 "), mounted);
    }

    @Test
    void theDaemonCountsTheLookupsItsListingsGaveWhenTheKernelForgetsThem() throws IOException {
        fs.sh("mkdir shared/forgot && for i in $(seq 40); do echo $i > shared/forgot/f$i; done"
                + " && ln shared/forgot/f1 shared/forgot/g1").ok();
        for (int round = 0; round < 5; round++) {
            // a hard-linked file changed in the store: its attributes in a listing tell the kernel's
            // other inode of it to drop its own (a notification sent while the listing is being made)
            Files.writeString(fs.stored("/shared/forgot/f1"), "x", StandardOpenOption.APPEND);
            fs.sh("ls -l shared/forgot > /dev/null && find shared/forgot -printf '%s\\n' > /dev/null").ok();
            // every inode the kernel can let go of goes, each with a FORGET of all its lookups
            Sh.run("sync; echo 2 > /proc/sys/vm/drop_caches 2>/dev/null || true");
        }
        assertTrue(fs.isMounted());
        assertEquals("40\n", fs.sh("ls shared/forgot/f* | wc -l").ok().out());
        assertEquals("2\n", fs.sh("stat -c %h shared/forgot/g1").ok().out());
        assertFalse(fs.log().contains("Assertion"), fs.log());
        assertFalse(fs.log().contains("WARN"), fs.log());
    }

    @Test
    void aMountWithoutListingAttributesListsAlike() throws IOException {
        try (MountedFs plain = MountedFs.start("--context", "planner", "--no-readdirplus")) {
            plain.sh("mkdir shared/p && echo abc > shared/p/a && echo de >> shared/p/a").ok();
            assertEquals("a 7\n", plain.sh("find shared/p -type f -printf '%f %s\\n'").ok().out());
            // with the inode numbers stat gives: find -inum takes readdir's d_ino for st_ino
            Files.writeString(plain.stored("/shared/p/b"), "made behind the mount\n");
            assertEquals("shared/p/b\n", plain.sh("find shared/p -inum $(stat -c %i shared/p/b)").ok().out());
        }
    }
}
