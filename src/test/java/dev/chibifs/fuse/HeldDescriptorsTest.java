package dev.chibifs.fuse;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Which threads hold a descriptor of a file of this mount, read from a /proc made for the test. */
class HeldDescriptorsTest {

    @TempDir
    Path proc;

    private HeldDescriptors mount;

    @BeforeEach
    void ourMountOnTopOfAStaleOne() throws IOException {
        write("self/mountinfo", """
                1 0 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
                40 1 0:40 / /mnt/chibi\\040home rw,nosuid,nodev,relatime shared:7 - fuse.chibifs chibifs rw,user_id=0
                41 1 0:41 / /mnt/other rw,nosuid,nodev,relatime - fuse.sshfs host: rw
                45 40 0:42 / /mnt/chibi\\040home rw,nosuid,nodev,relatime shared:9 master:3 - fuse.chibifs chibifs rw,user_id=0
                """);
        mount = HeldDescriptors.ofMount(proc, Path.of("/mnt/chibi home"));
    }

    private void write(String path, String text) throws IOException {
        Path p = proc.resolve(path);
        Files.createDirectories(p.getParent());
        Files.writeString(p, text);
    }

    private void fd(int tid, int fd, int mountId, String ino) throws IOException {
        write(tid + "/fdinfo/" + fd, "pos:\t0\nflags:\t0100002\nmnt_id:\t" + mountId + "\nino:\t" + ino + "\n");
    }

    @Test
    void theMountIsTheLastChibifsOneListedAtItsPathWithItsEscapesUndone() throws IOException {
        assertNotNull(mount);
        assertEquals(45, mount.mountId());
        assertEquals("0:42", mount.device());
        assertNull(HeldDescriptors.ofMount(proc, Path.of("/mnt/other")), "not chibifs");
        assertNull(HeldDescriptors.ofMount(proc, Path.of("/mnt/chibi")), "not mounted");
    }

    @Test
    void aDescriptorOfTheInodeOnThisMountIsHeld() throws IOException {
        fd(100, 0, 12, "77");
        fd(100, 3, 45, "77");
        assertTrue(mount.holds(100, 77));
        assertFalse(mount.holds(100, 78), "another file of the mount");
    }

    @Test
    void theSameInodeNumberOnAnotherMountIsNotHeld() throws IOException {
        fd(100, 3, 41, "77");
        write("100/mountinfo", Files.readString(proc.resolve("self/mountinfo")));
        assertFalse(mount.holds(100, 77), "another FUSE mount");
        fd(101, 3, 40, "77");
        write("101/mountinfo", Files.readString(proc.resolve("self/mountinfo")));
        assertFalse(mount.holds(101, 77), "the stale chibifs mount below ours is another connection");
    }

    @Test
    void aBindMountOrAnotherNamespacesCopyOfThisMountIsHeldByItsDevice() throws IOException {
        fd(200, 4, 300, "77");
        write("200/mountinfo", """
                290 289 8:1 / / rw,relatime - ext4 /dev/sda1 rw
                300 290 0:42 /shared /work rw,nosuid,nodev,relatime - fuse.chibifs chibifs rw,user_id=0
                """);
        assertTrue(mount.holds(200, 77));
        fd(201, 4, 301, "77");
        write("201/mountinfo", "301 290 0:43 / /work rw,relatime - fuse.chibifs chibifs rw,user_id=0\n");
        assertFalse(mount.holds(201, 77), "another chibifs mount's device");
    }

    @Test
    void onlyTheDescriptorsOwnInodeLineCounts() throws IOException {
        // an inotify descriptor names the inodes it watches in lines of its own
        write("100/fdinfo/5", "pos:\t0\nflags:\t02004000\nmnt_id:\t16\nino:\t1057\n"
                + "inotify wd:1 ino:77 sdev:2a mask:fce ignored_mask:0 fhandle-bytes:8 fhandle-type:1 f_handle:4d00000000000000\n");
        assertFalse(mount.holds(100, 77));
    }

    @Test
    void inodeNumbersAreUnsigned() throws IOException {
        fd(100, 3, 45, "18446744073709551615");
        assertTrue(mount.holds(100, -1L));
    }

    @Test
    void aThreadGoneOrUnreadableOrMalformedHoldsNothing() throws IOException {
        assertFalse(mount.holds(0, 77), "no pid (a request the kernel made itself)");
        assertFalse(mount.holds(999, 77), "gone");
        write("102/fdinfo/3", "pos:\t0\nmnt_id:\t45\n");
        assertFalse(mount.holds(102, 77), "no ino line (closed and reused while read)");
        write("103/fdinfo/3", "mnt_id:\tforty-five\nino:\t77\n");
        assertFalse(mount.holds(103, 77));
        assertNull(MountTable.InfoLine.parse("45 40 0:42 / /mnt/chibi rw"), "no separator");
    }
}
