package dev.chibifs.cache;

import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.time.Instant;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class CacheIdTest {

    private static final Instant T = Instant.ofEpochSecond(0x67b4a2c0L);

    @Test
    void hasChibisForm() {
        String id = CacheId.of("web_fetch", "{\"url\":\"x\"}", bytes("out"), T);
        assertTrue(id.matches("web_fetch_67b4a2c0_[0-9a-f]{8}"), id);
    }

    @Test
    void isFirstEightHexOfSha256OverArgsNulOutput() {
        // recomputed here with the JDK digest, independently of CacheId
        String id = CacheId.of("t", "{}", bytes("abc"), T);
        assertEquals("t_67b4a2c0_" + sha256Prefix("{}\0abc"), id);
    }

    @Test
    void differsByOutputAndByArgsButNotByCall() {
        String a = CacheId.of("t", "{}", bytes("a"), T);
        assertEquals(a, CacheId.of("t", "{}", bytes("a"), T));
        assertNotEquals(a, CacheId.of("t", "{}", bytes("b"), T));
        assertNotEquals(a, CacheId.of("t", "{\"n\":1}", bytes("a"), T));
    }

    @Test
    void toolNamesMustMakeSafeFileNames() {
        assertTrue(CacheId.isValidTool("shell_exec"));
        assertTrue(CacheId.isValidTool("mcp.server-tool"));
        for (String bad : new String[] {"", ".hidden", "a/b", "a b", "..", "x".repeat(129), null}) {
            assertFalse(CacheId.isValidTool(bad), String.valueOf(bad));
        }
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> CacheId.of("a/b", "{}", bytes(""), T));
        assertTrue(e.getMessage().contains("'a/b'") && e.getMessage().contains(CacheId.TOOL_RULE));
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static String sha256Prefix(String s) {
        try {
            byte[] d = java.security.MessageDigest.getInstance("SHA-256").digest(bytes(s));
            return java.util.HexFormat.of().formatHex(d, 0, 4);
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new AssertionError(e);
        }
    }
}
