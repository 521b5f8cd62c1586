package dev.chibifs.cache;

import dev.chibifs.path.VfsPath;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class CacheStubTest {

    private static final VfsPath PATH = VfsPath.of("/sys/tool_cache/myctx/web_fetch_1234_abc");

    @Test
    void thresholdEdges() {
        assertFalse(CacheStub.shouldCache(bytes("x".repeat(100)), 100), "at the threshold passes through");
        assertTrue(CacheStub.shouldCache(bytes("x".repeat(101)), 100), "one over is cached");
        assertFalse(CacheStub.shouldCache(bytes(""), 0));
    }

    @Test
    void blankOutputIsNeverCached() {
        assertFalse(CacheStub.shouldCache(bytes(" \n\t\r\n".repeat(100)), 10));
        // Rust's trim knows the no-break space; Java's isWhitespace does not
        assertFalse(CacheStub.shouldCache(bytes("\u00a0\u3000\n".repeat(100)), 10));
        assertTrue(CacheStub.shouldCache(bytes(" ".repeat(100) + "x"), 10));
    }

    @Test
    void sizeCountsUtf8BytesLikeChibi() {
        // 'é' is one char to a person but two bytes to Rust's str::len, which chibi calls chars
        assertTrue(CacheStub.shouldCache(bytes("é".repeat(3)), 5));
        assertTrue(CacheStub.format(PATH, "t", bytes("é".repeat(3)), 10, null)
                .contains("| Size: 6 chars, ~1 tokens | Lines: 1\n"));
    }

    @Test
    void fullTextMatchesChibisForm() {
        String output = "line one\nline two\nline three\n";
        String expected = """
                [Output cached: vfs:///sys/tool_cache/myctx/web_fetch_1234_abc]

                Tool: web_fetch | Size: 29 chars, ~7 tokens | Lines: 3
                Output too large. Full output stored \u2014 do NOT re-run this tool.

                Preview:

                ---
                line one
                line two
                ---

                Use file_head, file_tail, file_lines, file_grep with path="vfs:///sys/tool_cache/myctx/web_fetch_1234_abc" to examine.""";
        assertEquals(expected, CacheStub.format(PATH, "web_fetch", bytes(output), 20, null));
    }

    @Test
    void lineCountFollowsRustLines() {
        assertEquals(0, CacheStub.lineCount(bytes("")));
        assertEquals(1, CacheStub.lineCount(bytes("a")));
        assertEquals(1, CacheStub.lineCount(bytes("a\n")));
        assertEquals(2, CacheStub.lineCount(bytes("a\nb")));
        assertEquals(3, CacheStub.lineCount(bytes("\n\n\n")));
    }

    @Test
    void previewIsCutAtTheLastNewlineWithinTheLimit() {
        assertEquals("abc", CacheStub.preview("abc\ndef\nghi", 6));
        assertEquals("abc\ndef", CacheStub.preview("abc\ndef\nghi", 8));
        assertEquals("abcdef", CacheStub.preview("abcdefghi", 6), "no newline: the whole cut");
        assertEquals("short", CacheStub.preview("short", 500));
        // chibi cuts at the last newline even when everything fits: a last line without one is dropped
        assertEquals("abc\ndef", CacheStub.preview("abc\ndef\nghi", 500));
        assertEquals("", CacheStub.preview("\nabcdef", 4));
        // the limit counts code points, so a surrogate pair is never split
        assertEquals("\uD83D\uDE00\uD83D\uDE00", CacheStub.preview("\uD83D\uDE00\uD83D\uDE00\uD83D\uDE00", 2));
    }

    @Test
    void singleLineJsonPreviewsItsStreams() {
        String json = "{\"stdout\":\"first\\nsecond\\n\",\"stderr\":\"warning: x\\n\",\"exit_code\":0}";
        assertEquals("first\nsecond\nstderr:\nwarning: x", CacheStub.preview(json, 500));
        assertEquals("first\nsecond", CacheStub.preview(json, 15), "still cut at a newline");
        assertEquals("out", CacheStub.preview("{\"stdout\":\"out\",\"stderr\":\"\"}", 500));
        assertEquals("stderr:\nboom", CacheStub.preview("{\"stderr\":\"boom\\n\"}\n", 500));
    }

    @Test
    void otherJsonPreviewsAsItIs() {
        assertEquals("{\"a\":1}", CacheStub.preview("{\"a\":1}", 500));
        assertEquals("{\"stdout\":", CacheStub.preview("{\"stdout\":\n\"x\"}", 500).substring(0, 10));
        assertEquals("{not json", CacheStub.preview("{not json", 500));
    }

    @Test
    void mountpointAddsTheShellPath() {
        String stub = CacheStub.format(PATH, "t", bytes("x"), 10, Path.of("/mnt/chibi"));
        assertTrue(stub.endsWith("to examine.\nIn a shell: head, tail or grep /mnt/chibi/sys/tool_cache/myctx/"
                + "web_fetch_1234_abc (e.g. grep -n error /mnt/chibi/sys/tool_cache/myctx/web_fetch_1234_abc)."), stub);
        String spaced = CacheStub.format(PATH, "t", bytes("x"), 10, Path.of("/mnt/my mount"));
        assertTrue(spaced.contains("grep '/mnt/my mount/sys/tool_cache/myctx/web_fetch_1234_abc'"), spaced);
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
