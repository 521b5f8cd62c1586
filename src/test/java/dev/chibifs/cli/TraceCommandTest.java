package dev.chibifs.cli;

import org.junit.jupiter.api.Test;

import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;

class TraceCommandTest {

    /** A path through the mountpoint, as a shell completes it, matched nothing: the trace names /shared/x. */
    @Test
    void aPathThroughTheMountpointIsTheFileItNames() {
        Path mp = Path.of("/mnt/chibi");
        assertEquals("/shared/tasks.md", TraceCommand.namespacePath("/mnt/chibi/shared/tasks.md", mp));
        assertEquals("/home/alice", TraceCommand.namespacePath("/mnt/chibi/home/alice/", mp));
        assertEquals("/", TraceCommand.namespacePath("/mnt/chibi", mp));
        assertEquals("/shared", TraceCommand.namespacePath("/mnt/chibi/x/../shared", mp));
        // the namespace's own names stay, and so does a sibling of the mountpoint
        assertEquals("/shared/tasks.md", TraceCommand.namespacePath("/shared/tasks.md", mp));
        assertEquals("/mnt/chibi2/x", TraceCommand.namespacePath("/mnt/chibi2/x", mp));
        assertEquals("/shared", TraceCommand.namespacePath("/shared", Path.of("/")));
    }

    /** Through a link to the mountpoint (~/chibi -> /mnt/chibi) it matched nothing, silently. */
    @Test
    void aPathThroughALinkToTheMountpointIsTheFileItNames(@org.junit.jupiter.api.io.TempDir Path dir) throws Exception {
        Path mp = java.nio.file.Files.createDirectories(dir.resolve("mnt/chibi"));
        java.nio.file.Files.createDirectories(mp.resolve("shared"));
        Path link = java.nio.file.Files.createSymbolicLink(dir.resolve("chibi"), mp);
        assertEquals("/shared", TraceCommand.namespacePath(link + "/shared", mp));
        assertEquals("/shared", TraceCommand.namespacePath(mp + "/shared", link));
    }
}
