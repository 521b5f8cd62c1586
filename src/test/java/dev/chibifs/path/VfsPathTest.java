package dev.chibifs.path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class VfsPathTest {

    @ParameterizedTest
    @ValueSource(strings = {"/shared/foo.txt", "/home/planner/notes.md", "/sys/info", "/", "/a b/.hidden", "/x..y",
            "/shared/...", "/shared/.a", "/shared/a.", "/..a/b", "/a/..b"})
    void acceptsValidPaths(String p) {
        assertEquals(p, VfsPath.of(p).toString());
    }

    @ParameterizedTest
    @ValueSource(strings = {"/shared/../etc/passwd", "/home/ctx/../../secret", "/..", "/shared/.."})
    void rejectsDotDot(String p) {
        assertRule(p, "'..'", () -> VfsPath.of(p));
    }

    @ParameterizedTest
    @ValueSource(strings = {"/shared/./foo", "/.", "/shared/."})
    void rejectsDotSegments(String p) {
        assertRule(p, "'.'", () -> VfsPath.of(p));
    }

    @Test
    void rejectsDoubleSlash() {
        assertRule("/shared//foo", "'//'", () -> VfsPath.of("/shared//foo"));
        assertRule("//", "", () -> VfsPath.of("//"));
    }

    @Test
    void rejectsMissingLeadingSlashAndEmpty() {
        assertRule("shared/foo", "start with '/'", () -> VfsPath.of("shared/foo"));
        assertRule("", "empty", () -> VfsPath.of(""));
        assertThrows(InvalidVfsPathException.class, () -> VfsPath.of(null));
    }

    @Test
    void rejectsNulBytes() {
        assertRule("/shared/\0bad", "NUL", () -> VfsPath.of("/shared/\0bad"));
    }

    @Test
    void rejectsTrailingSlashExceptRoot() {
        assertRule("/shared/", "end with '/'", () -> VfsPath.of("/shared/"));
        assertTrue(VfsPath.of("/").isRoot());
    }

    @Test
    void parent() {
        assertEquals(VfsPath.of("/shared/sub"), VfsPath.of("/shared/sub/foo.txt").parent());
        assertSame(VfsPath.root(), VfsPath.of("/shared").parent());
        assertNull(VfsPath.root().parent());
    }

    @Test
    void fileName() {
        assertEquals("foo.txt", VfsPath.of("/shared/foo.txt").fileName());
        assertEquals("shared", VfsPath.of("/shared").fileName());
        assertNull(VfsPath.root().fileName());
    }

    @Test
    void join() {
        assertEquals(VfsPath.of("/shared/sub/file.txt"), VfsPath.of("/shared").join("sub/file.txt"));
        assertEquals(VfsPath.of("/shared"), VfsPath.root().join("shared"));
    }

    @Test
    void joinRejectsAbsoluteDotDotAndEmpty() {
        VfsPath base = VfsPath.of("/shared");
        assertRule("/etc/passwd", "relative", () -> base.join("/etc/passwd"));
        assertRule("../etc/passwd", "'..'", () -> base.join("../etc/passwd"));
        assertRule("sub/..", "'..'", () -> base.join("sub/.."));
        assertThrows(InvalidVfsPathException.class, () -> base.join(""));
        assertThrows(InvalidVfsPathException.class, () -> base.join("a//b"));
        assertThrows(InvalidVfsPathException.class, () -> base.join("./a"));
    }

    @Test
    void childTakesOneName() {
        assertEquals(VfsPath.of("/shared/a.txt"), VfsPath.of("/shared").child("a.txt"));
        assertRule("a/b", "'/'", () -> VfsPath.of("/shared").child("a/b"));
        assertThrows(InvalidVfsPathException.class, () -> VfsPath.of("/shared").child(".."));
        assertEquals(VfsPath.of("/shared"), VfsPath.root().child("shared"));
        assertEquals(VfsPath.of("/shared/.hidden..x"), VfsPath.of("/shared").child(".hidden..x"));
        assertRule("/shared/.", "'.' segments", () -> VfsPath.of("/shared").child("."));
        assertRule("", "empty", () -> VfsPath.of("/shared").child(""));
        assertRule("/shared/a\0b", "NUL", () -> VfsPath.of("/shared").child("a\0b"));
    }

    @Test
    void fromUri() {
        assertEquals(VfsPath.of("/shared/foo.txt"), VfsPath.fromUri("vfs:///shared/foo.txt"));
        assertEquals(VfsPath.root(), VfsPath.fromUri("vfs:///"));
    }

    @Test
    void fromUriRejectsOtherSchemesAndPlainPaths() {
        assertThrows(InvalidVfsPathException.class, () -> VfsPath.fromUri("/shared/foo.txt"));
        assertThrows(InvalidVfsPathException.class, () -> VfsPath.fromUri("file:///shared/foo.txt"));
        assertThrows(InvalidVfsPathException.class, () -> VfsPath.fromUri(null));
        assertThrows(InvalidVfsPathException.class, () -> VfsPath.fromUri("vfs:///shared/../x"));
    }

    @Test
    void fromUriNeedsExactlyThreeSlashesAndShowsTheRightForm() {
        InvalidVfsPathException two = assertThrows(InvalidVfsPathException.class,
                () -> VfsPath.fromUri("vfs://shared/x"));
        assertTrue(two.getMessage().contains("'vfs://shared/x'"), two.getMessage());
        assertTrue(two.getMessage().contains("vfs:///shared/x"), two.getMessage());
        InvalidVfsPathException four = assertThrows(InvalidVfsPathException.class,
                () -> VfsPath.fromUri("vfs:////x"));
        assertTrue(four.getMessage().contains("vfs:///x)"), four.getMessage());
        assertEquals("vfs:////x", four.value());
    }

    @Test
    void isVfsUri() {
        assertTrue(VfsPath.isVfsUri("vfs:///shared/foo.txt"));
        assertFalse(VfsPath.isVfsUri("/shared/foo.txt"));
        assertFalse(VfsPath.isVfsUri("vfs://shared"));
        assertFalse(VfsPath.isVfsUri("vfs:////shared"));
        assertFalse(VfsPath.isVfsUri(null));
    }

    @Test
    void toUriRoundTrips() {
        assertEquals("vfs:///shared/foo.txt", VfsPath.of("/shared/foo.txt").toUri());
        assertEquals("vfs:///", VfsPath.root().toUri());
        VfsPath p = VfsPath.of("/home/planner/a b.md");
        assertEquals(p, VfsPath.fromUri(p.toUri()));
    }

    @Test
    void startsWithRespectsSegmentBoundaries() {
        VfsPath shared = VfsPath.of("/shared");
        assertTrue(VfsPath.of("/shared").startsWith(shared));
        assertTrue(VfsPath.of("/shared/x/y").startsWith(shared));
        assertFalse(VfsPath.of("/sharedx").startsWith(shared));
        assertFalse(VfsPath.of("/sharedx/y").startsWith(shared));
        assertFalse(shared.startsWith(VfsPath.of("/shared/x")));
        assertTrue(shared.startsWith(VfsPath.root()));
        assertTrue(VfsPath.root().startsWith(VfsPath.root()));
        assertFalse(VfsPath.root().startsWith(shared));
    }

    @Test
    void segmentsAndDepth() {
        assertEquals(List.of(), VfsPath.root().segments());
        assertEquals(0, VfsPath.root().depth());
        assertEquals(List.of("home", "planner", "x"), VfsPath.of("/home/planner/x").segments());
        assertEquals(3, VfsPath.of("/home/planner/x").depth());
        assertEquals(1, VfsPath.of("/shared").depth());
        assertEquals("home/planner", VfsPath.of("/home/planner").relative());
        assertEquals("", VfsPath.root().relative());
    }

    @Test
    void parentRelativeIsTheParentsRelativePath() {
        for (String p : List.of("/shared/sub/foo.txt", "/shared", "/a/b/c/d")) {
            assertEquals(VfsPath.of(p).parent().relative(), VfsPath.of(p).parentRelative(), p);
        }
        assertEquals("", VfsPath.root().parentRelative());
    }

    @Test
    void equalityHashAndOrder() {
        assertEquals(VfsPath.of("/shared/a"), VfsPath.of("/shared/a"));
        assertEquals(VfsPath.of("/shared/a").hashCode(), VfsPath.of("/shared/a").hashCode());
        assertEquals(VfsPath.of("/shared/a"), VfsPath.of("/shared").join("a"));
        assertNotEquals(VfsPath.of("/shared/a"), VfsPath.of("/shared/A"));
        assertNotEquals(VfsPath.of("/shared/a"), "/shared/a");
        assertSame(VfsPath.root(), VfsPath.of("/"));
        assertTrue(VfsPath.of("/a").compareTo(VfsPath.of("/b")) < 0);
    }

    /** Checks the exception names both the rejected value and the rule. */
    private static void assertRule(String value, String rule, org.junit.jupiter.api.function.Executable call) {
        InvalidVfsPathException e = assertThrows(InvalidVfsPathException.class, call);
        assertEquals(value, e.value());
        assertTrue(e.getMessage().contains("'" + value + "'"), e.getMessage());
        assertTrue(e.getMessage().contains(rule), e.getMessage());
    }

    @Test
    void isValidAnswersWhatOfTakes() {
        assertTrue(VfsPath.isValid("/flocks/team"));
        assertTrue(VfsPath.isValid("/"));
        for (String bad : new String[] {"/flocks/", "/flocks/..", "/flocks/.", "/a//b", "/a\0b", "a", ""}) {
            assertFalse(VfsPath.isValid(bad), bad);
        }
    }
}
