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
 * splice through a mount) is told as one while the file is watched, and only then.
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
        assertTrue(Syscalls.inotifyWatchFile(inotify, fd, Linux.IN_CLOSE_WRITE | Linux.IN_MODIFY) >= 0);
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
        assertEquals(Linux.IN_CLOSE_WRITE, nextEvent(10_000), "the write, told");
        // no change since: nothing more told
        assertEquals(0, nextEvent(100));
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
        assertEquals(0, nextEvent(200));
    }

    @Test
    void aWritersCloseIsItsOwnWhileItsFileIsWatched() throws IOException {
        int writer = Syscalls.openat(Linux.AT_FDCWD, file.toString(), Linux.O_WRONLY, 0, file.toString());
        writes.opened(1, () -> Syscalls.dup(writer));
        Syscalls.close(writer);
        // its open file description ends here, its locks and its close's event with it
        assertEquals(Linux.IN_CLOSE_WRITE, nextEvent(1_000));
        writes.released(1);
    }

    @Test
    void theLastReleaseTellsAWriteTheLooksHaveNotSeenYet() throws IOException {
        PassthroughWrites slow = new PassthroughWrites(3_600_000);
        try {
            slow.opened(7, () -> Syscalls.dup(fd));
            writeThroughAMapping((byte) 'z');
            slow.released(7);
            assertEquals(Linux.IN_CLOSE_WRITE, nextEvent(1_000));
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

    /** The mask of the next event within {@code millis}, or 0. */
    private int nextEvent(int millis) {
        if (!Syscalls.awaitReadable(inotify, millis)) {
            return 0;
        }
        Syscalls.InotifyBatch batch = Syscalls.inotifyRead(inotify);
        return batch.events().isEmpty() ? 0 : batch.events().get(0).mask();
    }
}
