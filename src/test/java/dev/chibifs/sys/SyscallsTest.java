package dev.chibifs.sys;

import org.junit.jupiter.api.Test;

import java.io.IOException;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The descriptor wrappers mounting uses: each either does what it says or throws the errno. */
class SyscallsTest {

    @Test
    void aCopyLandsAtOrAboveTheNumberAsked() throws IOException {
        int[] pipe = new int[2];
        assertEquals(0, LibC.pipe2(pipe, Linux.O_CLOEXEC));
        try {
            int copy = Syscalls.dupAtLeast(pipe[0], 100, "pipe");
            assertTrue(copy >= 100, "copy at " + copy);
            Syscalls.close(copy);
            Syscalls.setNonBlocking(pipe[0], "pipe");
            assertEquals(Linux.O_NONBLOCK, LibC.fcntl(pipe[0], Linux.F_GETFL, 0) & Linux.O_NONBLOCK);
        } finally {
            Syscalls.close(pipe[0]);
            Syscalls.close(pipe[1]);
        }
    }

    @Test
    void aBadDescriptorIsEbadfNamingTheFile() {
        IOException dup = assertThrows(IOException.class, () -> Syscalls.dupAtLeast(-1, 100, "pipe"));
        assertEquals(Linux.EBADF, Errors.errno(dup));
        assertTrue(dup.getMessage().contains("pipe"), dup.getMessage());
        IOException flags = assertThrows(IOException.class, () -> Syscalls.setNonBlocking(-1, "pipe"));
        assertEquals(Linux.EBADF, Errors.errno(flags));
    }
}
