package dev.chibifs.fuse;

import dev.chibifs.sys.Linux;
import dev.chibifs.sys.Syscalls;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A write the store raises no inotify event for (a shared mapping's here; the kernel's passthrough
 * splice through a mount) is told as one while the file is watched, and only then: IN_ATTRIB, or
 * IN_CLOSE_WRITE where trusted.* attributes cannot be set.
 */
@Timeout(30)
class PassthroughWritesTest {

    @TempDir
    Path dir;
    private Path file;
    private int fd = -1;
    private int inotify = -1;
    /** Open for the whole test: its close, for writing, would raise the very event looked for. */
    private FileChannel mapped;
    private MappedByteBuffer mapping;
    private final PassthroughWrites writes = new PassthroughWrites(10);

    @BeforeEach
    void open() throws IOException {
        file = dir.resolve("data");
        Files.write(file, new byte[4096]);
        fd = Syscalls.openat(Linux.AT_FDCWD, file.toString(), Linux.O_RDWR, 0, file.toString());
        inotify = Syscalls.inotifyInit();
        assertTrue(Syscalls.inotifyWatchFile(inotify, fd, Linux.IN_CLOSE_WRITE | Linux.IN_MODIFY | Linux.IN_ATTRIB) >= 0);
        mapped = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE);
        mapping = mapped.map(FileChannel.MapMode.READ_WRITE, 0, 4096);
    }

    @AfterEach
    void close() throws IOException {
        writes.close();
        mapped.close();
        Syscalls.close(fd);
        Syscalls.close(inotify);
    }

    @Test
    void aMappedWriteOfAWatchedFileIsToldAsItsClose() throws IOException {
        writes.opened(1, () -> Syscalls.dup(fd));
        writeThroughAMapping((byte) 'x');
        assertTold(told(10_000), "the write");
        // no change since: nothing more told
        assertEquals(0, told(100));
        writes.released(1);
        assertEquals(0, writes.watching());
    }

    @Test
    void aFileNotWatchedAnyMoreIsNotLookedAt() throws IOException {
        writes.opened(1, () -> Syscalls.dup(fd));
        writes.opened(1, () -> { throw new AssertionError("one descriptor per file"); });
        writes.released(1);
        assertEquals(1, writes.watching(), "one writer is still open");
        writes.released(1);
        assertEquals(0, writes.watching());
        writeThroughAMapping((byte) 'y');
        assertEquals(0, told(200));
    }

    @Test
    void aWritersCloseIsItsOwnWhileItsFileIsWatched() throws IOException {
        int writer = Syscalls.openat(Linux.AT_FDCWD, file.toString(), Linux.O_WRONLY, 0, file.toString());
        writes.opened(1, () -> Syscalls.dup(writer));
        Syscalls.close(writer);
        // its open file description ends here, its locks and its close's event with it
        assertEquals(Linux.IN_CLOSE_WRITE, told(1_000));
        writes.released(1);
    }

    @Test
    void aFileLeftAloneLongIsStillLookedAt() throws IOException {
        writes.opened(1, () -> Syscalls.dup(fd));
        // unchanged through many looks: looked at once in QUIET_LOOKS_AT_MOST of them
        assertEquals(0, told(20 * PassthroughWrites.QUIET_LOOKS_AT_MOST));
        writeThroughAMapping((byte) 'q');
        assertTold(told(10_000), "the write after a quiet spell");
        writes.released(1);
    }

    @Test
    void aReleaseTellsNothingItself() throws IOException {
        // the writer's own close told it: the kernel's backing file of its open closed with it
        PassthroughWrites slow = new PassthroughWrites(3_600_000);
        try {
            slow.opened(7, () -> Syscalls.dup(fd));
            writeThroughAMapping((byte) 'z');
            slow.released(7);
            assertEquals(0, told(200));
            assertEquals(0, slow.watching());
        } finally {
            slow.close();
        }
    }

    /**
     * Writes {@code b} at offset 0 through a shared mapping, which raises no event: the write fault
     * of a page made clean by the last msync updates the file's times, and nothing else is told.
     */
    private void writeThroughAMapping(byte b) {
        mapping.put(0, b);
        mapping.force();
    }

    /**
     * The masks of the events that came, or-ed: the first within {@code millis}, then those that
     * follow it within 50 ms (a change is told with two); 0 when none came.
     */
    private int told(int millis) {
        int masks = 0;
        int wait = millis;
        while (Syscalls.awaitReadable(inotify, wait)) {
            for (Syscalls.InotifyEvent e : Syscalls.inotifyRead(inotify).events()) {
                masks |= e.mask();
            }
            wait = 50;
        }
        return masks;
    }

    /** A change told as the watch tells it: attributes changed, or a close for writing; never as a write. */
    private static void assertTold(int masks, String what) {
        assertTrue((masks & (Linux.IN_ATTRIB | Linux.IN_CLOSE_WRITE)) != 0 && (masks & Linux.IN_MODIFY) == 0,
                what + " told: mask " + Integer.toHexString(masks));
    }
}
