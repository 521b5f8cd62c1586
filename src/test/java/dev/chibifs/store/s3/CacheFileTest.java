package dev.chibifs.store.s3;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.chibifs.sys.Errors;
import dev.chibifs.sys.Linux;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class CacheFileTest {

    @TempDir
    Path dir;

    @Test
    void aFullDiskIsEnospcNotABareIoException() throws IOException {
        // /dev/full answers every write with ENOSPC, as a full cache disk does
        try (CacheFile full = CacheFile.openForWriting(Path.of("/dev/full"))) {
            IOException e = assertThrows(IOException.class, () -> full.write(ByteBuffer.wrap(new byte[10]), 0));
            assertEquals(Linux.ENOSPC, Errors.errno(e));
        }
    }

    @Test
    void writesReadsCopiesAndTruncatesWithAHole() throws IOException {
        Path a = dir.resolve("a");
        try (CacheFile f = CacheFile.create(a)) {
            f.writeAll(new ByteArrayInputStream("hello".getBytes(StandardCharsets.UTF_8)));
            f.truncate(8);
            assertEquals(8, f.size());
            ByteBuffer buf = ByteBuffer.allocate(16);
            assertEquals(8, f.read(buf, 0));
            assertEquals("hello\0\0\0", new String(buf.array(), 0, 8, StandardCharsets.UTF_8));
            try (CacheFile copy = CacheFile.create(dir.resolve("b"))) {
                copy.copyFrom(f);
            }
        }
        assertEquals("hello\0\0\0", Files.readString(dir.resolve("b")));
        assertEquals(Linux.EEXIST, Errors.errno(assertThrows(IOException.class, () -> CacheFile.create(a))));
    }
}
