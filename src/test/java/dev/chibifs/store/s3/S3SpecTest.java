package dev.chibifs.store.s3;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.chibifs.config.ChibiHome;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The store spec s3://BUCKET/KEYPREFIX[?endpoint=URL&region=R] and the options a mount gives. */
class S3SpecTest {

    @Test
    void parsesBucketPrefixAndOptions() {
        S3Spec s = S3Spec.parse("s3://team-bucket/chibi/ns/?endpoint=http%3A%2F%2F127.0.0.1%3A9000&region=eu-west-1");
        assertEquals("team-bucket", s.bucket());
        assertEquals("chibi/ns", s.keyPrefix());
        assertEquals(URI.create("http://127.0.0.1:9000"), s.endpoint());
        assertEquals("eu-west-1", s.region());
        assertEquals("chibi/ns/shared/tasks.md", s.key("shared/tasks.md"));
        S3Spec top = S3Spec.parse("s3://b12");
        assertEquals("", top.keyPrefix());
        assertEquals("shared/x", top.key("shared/x"));
        assertNull(top.endpoint());
        assertEquals("s3-team-bucket_chibi_ns", s.cacheName());
        assertEquals(URI.create("http://minio:9000/"), S3Spec.parse("s3://b12/p?endpoint=http://minio:9000/").endpoint());
    }

    @Test
    void aBadSpecNamesTheValueAndTheRule() {
        for (String bad : new String[] {"s3:/bbb/p", "s3://ab/p", "s3://", "s3://B12/p", "s3://bb//p", "s3://bbb/p?endpoint=ftp://x",
            "s3://bbb/p?endpoint=", "s3://bbb/p?colour=red", "s3://bbb/p?region="}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> S3Spec.parse(bad), bad);
            assertTrue(e.getMessage().contains("'" + bad + "'"), e.getMessage());
        }
    }

    @Test
    void aBadEscapeAPortPast65535AndATwiceGivenOptionAreSaidInTheirTerms() {
        String escape = "s3://bkt/p?endpoint=http://h%zz";
        assertEquals("'" + escape + "': option 'endpoint' has a bad escape in 'http://h%zz': '%' starts an escape of"
                + " two hex digits (%3A), '%25' is '%' itself", refusal(escape));
        String port = "s3://bkt/p?endpoint=http://127.0.0.1:99999";
        assertEquals("'" + port + "': endpoint 'http://127.0.0.1:99999' has port 99999: a port is 1 to 65535",
                refusal(port));
        assertEquals(65535, S3Spec.parse("s3://bkt/p?endpoint=http://127.0.0.1:65535").endpoint().getPort());
        String twice = "s3://bkt/p?endpoint=http://a&endpoint=http://b";
        assertEquals("'" + twice + "': option 'endpoint' is given twice: give it once", refusal(twice));
        String region = "s3://bkt/p?region=a&region=a";
        assertEquals("'" + region + "': option 'region' is given twice: give it once", refusal(region));
    }

    /**
     * An endpoint's USER:PASSWORD@ was accepted, never used to sign, and shown by ps, the log, the cache's record
     * of its store and status. Refused, and the refusal shows the password as ***, however it was written.
     */
    @Test
    void anEndpointWithUserInfoIsRefusedWithoutShowingThePassword() {
        String rule = ": an endpoint with user info (USER:PASSWORD@): give it as http(s)://HOST[:PORT]; credentials"
                + " come from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE and the AWS tools' other"
                + " sources), never from the URL";
        assertEquals("'s3://chibi/ns?endpoint=http://AKIA:***@127.0.0.1:9000'" + rule,
                refusal("s3://chibi/ns?endpoint=http://AKIA:sup3rs3cret@127.0.0.1:9000"));
        // a secret with '/' in it is no URI authority, so URI alone would not see user info there
        assertEquals("'s3://chibi/ns?endpoint=http://AKIA:***@h:9000&region=r'" + rule,
                refusal("s3://chibi/ns?endpoint=http://AKIA:s3c/r+t@h:9000&region=r"));
        assertEquals("'s3://chibi/ns?endpoint=http://AKIA:***@127.0.0.1:9000'" + rule,
                refusal("s3://chibi/ns?endpoint=http%3A%2F%2FAKIA%3As3cret%40127.0.0.1%3A9000"));
        assertEquals("'s3://chibi/ns?endpoint=https://***@h'" + rule, refusal("s3://chibi/ns?endpoint=https://t0ken@h"));
        // before the checks whose messages echo the spec: a bad escape, an option given twice
        for (String spec : new String[] {"s3://chibi/ns?endpoint=http://AKIA:s3cret%zz@h",
            "s3://chibi/ns?endpoint=http://a&endpoint=http://AKIA:s3cret@h", "s3://Bad/ns?endpoint=http://AKIA:s3cret@h"}) {
            String message = refusal(spec);
            assertTrue(message.endsWith(rule) && !message.contains("s3cret"), message);
        }
        assertEquals("a@b", S3Spec.parse("s3://chibi/a@b").keyPrefix(), "'@' in a key is no credential");
    }

    private static String refusal(String spec) {
        return assertThrows(IllegalArgumentException.class, () -> S3Spec.parse(spec), spec).getMessage();
    }

    @Test
    void aMountsStoreCachesUnderTheHomeUnlessToldOtherwise() {
        ChibiHome home = new ChibiHome(Path.of("/srv/chibi"));
        S3Options o = S3Options.forMount(home, "s3://b12/team", null, null, null, 0, null, null,
                Map.of("HOSTNAME", "planner-1"));
        assertEquals(Path.of("/srv/chibi/chibifs/cache/s3-b12_team"), o.cacheDir());
        assertEquals(S3Options.DEFAULT_FLUSH_AFTER, o.flushAfter());
        assertEquals(S3Options.DEFAULT_VALIDITY, o.validity());
        assertEquals("planner-1", o.host());
        assertEquals(0, o.cacheSize(), "no limit unless told");
        assertEquals(S3Options.DEFAULT_PREFETCH_BELOW, o.prefetchBelow());
        assertEquals(S3Options.DEFAULT_LOCK_LEASE, o.lockLease(), "locks reach every host unless told");
        S3Options told = S3Options.forMount(home, "s3://b12/team", Path.of("/var/cache/x"), Duration.ofMillis(500),
                Duration.ofSeconds(10), 20L << 30, 0L, Duration.ZERO, Map.of());
        assertEquals(Path.of("/var/cache/x"), told.cacheDir());
        assertEquals(Duration.ofMillis(500), told.flushAfter());
        assertEquals(Duration.ofSeconds(10), told.validity());
        assertEquals(20L << 30, told.cacheSize());
        assertEquals(0, told.prefetchBelow(), "0: attributes only");
        assertEquals(Duration.ZERO, told.lockLease(), "--local-locks");
    }
}
