package dev.chibifs.cli;

import dev.chibifs.sys.LibC;
import dev.chibifs.sys.Syscalls;
import dev.chibifs.sys.Linux;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertTrue;

/** Which descriptor a background mount takes for the launcher's pipe: a pipe at the one it names, and nothing else. */
class DetachedMountTest {

    @Test
    void onlyAnOpenPipeAtTheNamedDescriptorIsTheLaunchers(@TempDir Path tmp) throws Exception {
        assertTrue(DetachedMount.fromEnvironment(Map.of()).isEmpty());
        assertTrue(DetachedMount.fromEnvironment(Map.of(DetachedMount.ENV, "three")).isEmpty());
        // stdout may be a pipe too (a test runner's): never one of the three standard descriptors
        assertTrue(DetachedMount.fromEnvironment(Map.of(DetachedMount.ENV, "1")).isEmpty());
        int[] pipe = new int[2];
        assertTrue(LibC.pipe2(pipe, Linux.O_CLOEXEC) == 0);
        int file = LibC.open(LibC.path(Files.writeString(tmp.resolve("f"), "x").toString()), Linux.O_RDONLY | Linux.O_CLOEXEC, 0);
        try {
            assertTrue(DetachedMount.fromEnvironment(Map.of(DetachedMount.ENV, String.valueOf(pipe[1]))).isPresent());
            // where the variable outlived the launcher: the JVM's own files, or nothing open there
            assertTrue(DetachedMount.fromEnvironment(Map.of(DetachedMount.ENV, String.valueOf(file))).isEmpty());
        } finally {
            Syscalls.close(pipe[0]);
            Syscalls.close(pipe[1]);
            Syscalls.close(file);
        }
        assertTrue(DetachedMount.fromEnvironment(Map.of(DetachedMount.ENV, String.valueOf(pipe[1]))).isEmpty());
    }
}
