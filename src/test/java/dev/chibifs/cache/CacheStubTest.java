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
    void anErrorIsNeverCached() {
        // send.rs: !tool_result.starts_with("Error:") && should_cache(...)
        assertFalse(CacheStub.shouldCache(bytes("Error: " + "x".repeat(100)), 10));
        assertFalse(CacheStub.shouldCache(bytes("Error:"), 1));
        assertTrue(CacheStub.shouldCache(bytes(" Error: " + "x".repeat(100)), 10), "only at the very start");
        assertTrue(CacheStub.shouldCache(bytes("error: " + "x".repeat(100)), 10), "case matters");
    }

    @Test
    void theLargestSettingsChibiTakesWork() {
        assertFalse(CacheStub.shouldCache(bytes("x".repeat(100)), Long.MAX_VALUE));
        assertTrue(CacheStub.format(PATH, "t", bytes("ab\ncd"), Long.MAX_VALUE, null).endsWith("---\nab\n---"));
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
    void fullTextIsChibisTruncatedMessage() {
        String output = "line one\nline two\nline three\n";
        // vfs_cache.rs truncated_message, character for character: no blank lines, the tools line before the preview
        String expected = """
                [Output cached: vfs:///sys/tool_cache/myctx/web_fetch_1234_abc]
                Tool: web_fetch | Size: 29 chars, ~7 tokens | Lines: 3
                Output too large. Full output stored \u2014 do NOT re-run this tool.
                Use file_head, file_tail, file_lines, or file_grep with path="vfs:///sys/tool_cache/myctx/web_fetch_1234_abc" to examine.
                Preview (first 2 lines):
                ---
                line one
                line two
                ---""";
        assertEquals(expected, CacheStub.format(PATH, "web_fetch", bytes(output), 20, null));
    }

    @Test
    void previewLineCountIsOfThePreviewShown() {
        assertTrue(CacheStub.format(PATH, "t", bytes("abcdef"), 3, null).endsWith("Preview (first 1 lines):\n---\nabc\n---"));
        assertTrue(CacheStub.format(PATH, "t", bytes("\nabcdef"), 3, null).endsWith("Preview (first 0 lines):\n---\n\n---"));
        assertTrue(CacheStub.format(PATH, "t", bytes("a\n\nb"), 3, null).endsWith("Preview (first 1 lines):\n---\na\n\n---"));
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
    void singleLineJsonPreviewsItsStreamsLabelled() {
        String json = "{\"stdout\":\"first\\nsecond\\n\",\"stderr\":\"warning: x\\n\",\"exit_code\":0}";
        assertEquals("[stdout]\nfirst\nsecond\n\n\n[stderr]\nwarning: x", CacheStub.preview(json, 500));
        assertEquals("[stdout]\nfirst", CacheStub.preview(json, 20), "still cut at a newline");
        assertEquals("[stdout]\nout", CacheStub.previewContent("{\"stdout\":\"out\",\"stderr\":\"\"}"));
        // a final newline still makes one line, and serde_json takes the whitespace around the value
        assertEquals("[stderr]\nboom", CacheStub.preview(" {\"stderr\":\"boom\\n\"}\n", 500));
        assertEquals("[stdout]\nhello world\nline2",
                CacheStub.previewContent("{\"stdout\":\"hello world\\nline2\",\"stderr\":\"\",\"exit_code\":0}"));
        assertEquals("[stderr]\nerror: something failed\ndetails",
                CacheStub.previewContent("{\"stdout\":\"\",\"stderr\":\"error: something failed\\ndetails\",\"exit_code\":1}"));
    }

    @Test
    void otherJsonPreviewsAsItIs() {
        assertEquals("{\"a\":1}", CacheStub.previewContent("{\"a\":1}"));
        assertEquals("{\"stdout\":\n\"x\"}", CacheStub.previewContent("{\"stdout\":\n\"x\"}"), "two lines");
        assertEquals("{not json", CacheStub.previewContent("{not json"));
        String bothEmpty = "{\"stdout\":\"\",\"stderr\":\"\",\"exit_code\":0}";
        assertEquals(bothEmpty, CacheStub.previewContent(bothEmpty), "both streams empty: the raw content");
        String notStrings = "{\"stdout\":5,\"stderr\":[\"x\"]}";
        assertEquals(notStrings, CacheStub.previewContent(notStrings));
        String trailing = "{\"stdout\":\"x\"} {\"stderr\":\"y\"}";
        assertEquals(trailing, CacheStub.previewContent(trailing), "serde_json refuses what follows the value");
        assertEquals("[\"stdout\"]", CacheStub.previewContent("[\"stdout\"]"), "not an object");
        assertEquals("", CacheStub.previewContent(""));
    }

    @Test
    void mountpointAddsTheShellPath() {
        String stub = CacheStub.format(PATH, "t", bytes("x"), 10, Path.of("/mnt/chibi"));
        assertTrue(stub.endsWith("\n---\nIn a shell: head, tail or grep /mnt/chibi/sys/tool_cache/myctx/"
                + "web_fetch_1234_abc (e.g. grep -n error /mnt/chibi/sys/tool_cache/myctx/web_fetch_1234_abc)."), stub);
        String spaced = CacheStub.format(PATH, "t", bytes("x"), 10, Path.of("/mnt/my mount"));
        assertTrue(spaced.contains("grep '/mnt/my mount/sys/tool_cache/myctx/web_fetch_1234_abc'"), spaced);
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
