package dev.chibifs.path;

import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** FNV-1a 64 as its authors publish it: listings' offsets and /sys/contexts' inodes depend on it staying put. */
class FnvTest {

    @Test
    void theReferenceValues() {
        assertEquals(0xcbf29ce484222325L, Fnv.hash64(new byte[0]));
        assertEquals(0xaf63dc4c8601ec8cL, Fnv.hash64("a".getBytes(StandardCharsets.US_ASCII)));
        assertEquals(0x85944171f73967e8L, Fnv.hash64("foobar".getBytes(StandardCharsets.US_ASCII)));
    }
}
