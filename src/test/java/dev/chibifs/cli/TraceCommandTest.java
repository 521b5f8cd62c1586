package dev.chibifs.cli;

import org.junit.jupiter.api.Test;

import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class TraceCommandTest {

    /** A path through the mountpoint, as a shell completes it, matched nothing: the trace names /shared/x. */
    /**
     * A name, a link's target and a program's name are anyone's bytes: shown raw, a name holding a
     * newline made one event look like two, and one holding ESC restyled the terminal.
     */
    @Test
    void aTracedLineShowsControlCharactersEscaped() throws Exception {
        com.fasterxml.jackson.databind.JsonNode e = new com.fasterxml.jackson.databind.ObjectMapper().readTree("""
                {"at":"2026-12-01T10:00:00Z","context":"alice","pid":7,"program":"\\u001b]0;x\\u0007",
                 "opcode":"SYMLINK","paths":["/shared/a\\nb","/shared/\\u001b[31mc"],"detail":"-> t\\nu",
                 "answer":"ok","refused":"","micros":5}""");
        String line = TraceCommand.format(e);
        assertTrue(line.chars().noneMatch(c -> c < 0x20 || c == 0x7f), line);
        assertTrue(line.contains("/shared/a\\nb"), line);
    }

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
