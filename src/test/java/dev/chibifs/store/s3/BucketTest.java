package dev.chibifs.store.s3;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** The S3 client against a real S3 server: the conditional writes the write-back relies on. */
@Timeout(60)
class BucketTest {

    @TempDir
    static Path temp;
    @RegisterExtension
    static final S3Server server = S3Server.perClass("bucket-test");
    static Bucket bucket;

    @BeforeAll
    static void start() throws Exception {
        bucket = Bucket.connect(S3Spec.parse("s3://bucket-test/p"), server.env());
    }

    @AfterAll
    static void stop() throws Exception {
        bucket.close();
    }

    @Test
    void conditionalPutsRefuseWhatChangedAndCreateOnlyOnce() throws Exception {
        String first = bucket.put("p/a", "one".getBytes(UTF_8), Map.of("chibi-sha256", "x"), null);
        assertThrows(Bucket.PreconditionFailed.class, () -> bucket.put("p/a", "two".getBytes(UTF_8), Map.of(), null));
        String second = bucket.put("p/a", "two".getBytes(UTF_8), Map.of(), first);
        assertNotEquals(first, second);
        assertThrows(Bucket.PreconditionFailed.class, () -> bucket.put("p/a", "three".getBytes(UTF_8), Map.of(), first));
        Path to = temp.resolve("got");
        Bucket.Head h = bucket.get("p/a", to);
        assertEquals("two", Files.readString(to));
        assertEquals(second, h.etag());
        assertThrows(Bucket.Missing.class, () -> bucket.put("p/none", "x".getBytes(UTF_8), Map.of(), first));
        assertNull(bucket.head("p/none"));
        assertEquals("x", bucket.head("p/a") == null ? null : "x");
    }

    @Test
    void listsOneLevelWithPrefixes() throws Exception {
        bucket.put("p/l/f", new byte[0], Map.of(), null);
        bucket.put("p/l/d/g", new byte[0], Map.of(), null);
        bucket.put("p/l/e/", new byte[0], Map.of(), null);
        Bucket.Level l = bucket.list("p/l/", true);
        assertEquals(List.of("p/l/f"), l.objects().stream().map(Bucket.Listed::key).toList());
        assertEquals(List.of("p/l/d/", "p/l/e/"), l.prefixes());
        assertTrue(bucket.head("p/l/e/") != null);
    }
}
