package dev.chibifs.cli;

import org.junit.jupiter.api.Test;

import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
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
    void aPathThroughTheMountpointIsTheFileItNames() throws Exception {
        Path mp = Path.of("/mnt/chibi");
        assertEquals("/shared/tasks.md", ns("/mnt/chibi/shared/tasks.md", mp));
        assertEquals("/home/alice", ns("/mnt/chibi/home/alice/", mp));
        assertEquals("/", ns("/mnt/chibi", mp));
        assertEquals("/shared", ns("/mnt/chibi/x/../shared", mp));
        // the namespace's own names stay; a sibling of the mountpoint is no path in it (below)
        assertEquals("/shared/tasks.md", ns("/shared/tasks.md", mp));
        assertThrows(UsageException.class, () -> ns("/mnt/chibi2/x", mp));
        assertEquals("/shared", ns("/shared", Path.of("/")));
    }

    /** vfs:///shared, as the vfs commands take it, was refused as "must start with '/'". */
    @Test
    void aVfsUriIsThePathItNames() throws Exception {
        assertEquals("/shared/tasks.md", ns("vfs:///shared/tasks.md", Path.of("/mnt/chibi")));
        assertThrows(UsageException.class, () -> ns("vfs://shared", Path.of("/mnt/chibi")));
    }

    /**
     * A path on this host outside the mount ({@code --path /etc}, a mistyped mountpoint) matched nothing:
     * taken as the namespace's with a warning, the trace showed nothing. Refused, naming the value and the rule.
     */
    @Test
    void aPathOutsideTheNamespaceIsRefused(@org.junit.jupiter.api.io.TempDir Path dir) throws Exception {
        Path mp = java.nio.file.Files.createDirectories(dir.resolve("mnt"));
        Path outside = java.nio.file.Files.createDirectories(dir.resolve("elsewhere"));
        UsageException e = assertThrows(UsageException.class, () -> ns(outside.toString(), mp));
        assertEquals("invalid --path '" + outside + "': not a path in the namespace " + mp + " serves (under /shared,"
                + " /home, /sys, /site, /flocks, /tools, or another name at its top): name it as the namespace does"
                + " (/shared/x, vfs:///home/alice) or through the mountpoint (" + mp + "/shared/x)", e.getMessage());
        assertThrows(UsageException.class, () -> ns("/etc", mp));
        assertThrows(UsageException.class, () -> ns("vfs:///etc/passwd", mp));
        assertThrows(UsageException.class, () -> ns(mp + "/etc", mp));
        // the namespace's own directories are, whether or not this host has one of the name (/home, /sys), and its root
        for (String p : new String[] {"/", "/home", "/sys/tool_cache", "/tools", "/flocks/team", "/site/x", "vfs:///"}) {
            assertTrue(ns(p, mp).startsWith("/"), p);
        }
        // as is any other name the mount shows at its top: a --store prefix, a directory SYSTEM made
        java.nio.file.Files.createDirectories(mp.resolve("scratch"));
        assertEquals("/scratch/new", ns("/scratch/new", mp));
        assertEquals("/scratch/new", ns("vfs:///scratch/new", mp));
        assertEquals("/scratch", ns(mp + "/scratch", mp));
    }

    private static String ns(String path, Path mountpoint) throws UsageException {
        return TraceCommand.namespacePath(path, mountpoint);
    }

    /** Through a link to the mountpoint (~/chibi -> /mnt/chibi) it matched nothing, silently. */
    @Test
    void aPathThroughALinkToTheMountpointIsTheFileItNames(@org.junit.jupiter.api.io.TempDir Path dir) throws Exception {
        Path mp = java.nio.file.Files.createDirectories(dir.resolve("mnt/chibi"));
        java.nio.file.Files.createDirectories(mp.resolve("shared"));
        Path link = java.nio.file.Files.createSymbolicLink(dir.resolve("chibi"), mp);
        assertEquals("/shared", ns(link + "/shared", mp));
        assertEquals("/shared", ns(mp + "/shared", link));
    }
}
