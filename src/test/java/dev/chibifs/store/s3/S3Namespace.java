package dev.chibifs.store.s3;

import dev.chibifs.testing.MutableClock;

import java.io.IOException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The fixture of tests that stand hosts on one bucket: a key prefix of its own for each test, a raw
 * client of it to look at what S3 holds, and the stores the test opened over it, closed after it.
 */
final class S3Namespace {

    private static final AtomicInteger PREFIXES = new AtomicInteger();

    final String prefix;
    final String spec;
    final Bucket raw;
    private final List<S3Storage> open = new ArrayList<>();

    S3Namespace(String bucket, S3Server server) {
        prefix = "ns" + PREFIXES.incrementAndGet();
        spec = "s3://" + bucket + "/" + prefix;
        raw = Bucket.connect(S3Spec.parse(spec), server.env());
    }

    /** Opens a store of this namespace, closed with it. */
    S3Storage open(S3Options o) throws IOException {
        return opened(S3Storage.open(spec, o));
    }

    /** {@code s}, opened by the test itself, is closed with the namespace. */
    S3Storage opened(S3Storage s) {
        open.add(s);
        return s;
    }

    /** The store opened last. */
    S3Storage last() {
        return open.get(open.size() - 1);
    }

    /** Closes every store the test left open (one it closed itself, or whose S3 it stopped, is passed over), then the client. */
    void close() throws IOException {
        for (S3Storage s : open) {
            try {
                s.close();
            } catch (IOException | IllegalStateException e) {
                // closed by the test already, or S3 stopped by it: nothing more to flush
            }
        }
        raw.close();
    }

    /** A clock that stands at 2026-01-02T03:04:05Z until a test moves it (conflict copies carry that time). */
    static MutableClock startClock() {
        return new MutableClock(Instant.parse("2026-01-02T03:04:05Z"));
    }
}
