package dev.chibifs.store;

import dev.chibifs.sys.ErrnoException;
import dev.chibifs.sys.Linux;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/** The ETag of a file: the SHA-256 of its content, as 64 lower-case hex digits (seed 004). */
public final class ContentHash {

    private static final int BUFFER = 64 * 1024;

    private ContentHash() {
    }

    /** A fresh SHA-256 digest (every JDK has one). */
    public static MessageDigest digest() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("this JDK has no SHA-256", e);
        }
    }

    /** The SHA-256 of {@code bytes}, in lower-case hex (64 digits). */
    public static String sha256Hex(byte[] bytes) {
        return HexFormat.of().formatHex(digest().digest(bytes));
    }

    public static String hex(MessageDigest digest) {
        return HexFormat.of().formatHex(digest.digest());
    }

    /** The SHA-256 of no bytes: an empty file's. */
    public static final String EMPTY_SHA256 = of(new byte[0]);

    public static String of(byte[] data) {
        MessageDigest d = digest();
        d.update(data);
        return hex(d);
    }

    public static String of(InputStream in) throws IOException {
        MessageDigest d = digest();
        byte[] buf = new byte[BUFFER];
        for (int n; (n = in.read(buf)) > 0; ) {
            d.update(buf, 0, n);
        }
        return hex(d);
    }

    /** What can be read at a position: a {@link FileHandle}, a descriptor. */
    @FunctionalInterface
    public interface Source {
        /** Reads into {@code dst} from {@code position}; the bytes read, 0 at the end. */
        int read(java.nio.ByteBuffer dst, long position) throws IOException;
    }

    /**
     * The SHA-256 of what {@code source} holds, {@value #BUFFER} bytes at a time: constant memory
     * whatever the size (reading the whole file first let any reader's getfattr of a few large
     * files fill the daemon's heap).
     */
    private static String of(Source source) throws IOException {
        MessageDigest d = digest();
        java.nio.ByteBuffer buf = java.nio.ByteBuffer.allocate(BUFFER);
        long position = 0;
        for (int n; (n = source.read(buf.clear(), position)) > 0; position += n) {
            d.update(buf.array(), 0, n);
        }
        return hex(d);
    }

    /** A file at least this large is a large one to hash: seconds of a CPU per GiB. */
    static final long LARGE = 64L << 20;
    /**
     * The largest file hashed: about two minutes of a CPU. A hash goes on when its caller is gone
     * (killed, interrupted) and an unmount waits for it: a tester's sparse terabyte would have held
     * a daemon for two hours.
     */
    static final long MOST_HASHED = 16L << 30;
    /** How many large files one process hashes at once. */
    static final int LARGE_AT_ONCE = 2;
    private static final java.util.concurrent.Semaphore LARGE_HASHES = new java.util.concurrent.Semaphore(LARGE_AT_ONCE);

    /**
     * {@link #of(Source)} of a file of {@code size} bytes. Hashing runs at about 140 MB/s a CPU, and
     * a sparse file of a terabyte costs nothing to make: a tester's twelve getfattr of such files,
     * by a reader outside the uid map, kept seven of the daemon's threads hashing at 100% of both
     * CPUs for what would have been hours. Large files are hashed {@value #LARGE_AT_ONCE} at a time;
     * past that, EBUSY at once, to be asked again.
     */
    public static String of(Source source, long size) throws IOException {
        if (size < LARGE) {
            return of(source);
        }
        if (size > MOST_HASHED) {
            throw ErrnoException.of(Linux.EFBIG, null,
                    "no ETag for a file over " + (MOST_HASHED >> 30) + " GiB (minutes of hashing)");
        }
        if (!LARGE_HASHES.tryAcquire()) {
            throw ErrnoException.of(Linux.EBUSY, null,
                    LARGE_AT_ONCE + " large files are being hashed already; ask again");
        }
        try {
            return of(source);
        } finally {
            LARGE_HASHES.release();
        }
    }

    public static String of(Path file) throws IOException {
        try (InputStream in = Files.newInputStream(file)) {
            return of(in);
        }
    }

    /** Whether {@code etag} is one: 64 hex digits (what a caller passes to --if-match). */
    public static boolean isEtag(String etag) {
        return etag != null && etag.matches("[0-9a-fA-F]{64}");
    }
}
