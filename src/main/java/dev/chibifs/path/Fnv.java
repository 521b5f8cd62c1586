package dev.chibifs.path;

/** FNV-1a, 64 bits: a fast, stable hash of a name's bytes, the same in every run and every JVM. */
public final class Fnv {

    private static final long OFFSET_BASIS = 0xcbf29ce484222325L;
    private static final long PRIME = 0x100000001b3L;

    private Fnv() {
    }

    /** The FNV-1a 64 hash of {@code bytes}. */
    public static long hash64(byte[] bytes) {
        long h = OFFSET_BASIS;
        for (byte b : bytes) {
            h = (h ^ (b & 0xff)) * PRIME;
        }
        return h;
    }
}
