package dev.chibifs.fuse;

import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class FuseDaemonTest {

    @Test
    void aTimeoutIsTheLastValueOfItAndOneSecondWhenUnset() {
        MountSpec spec = MountSpec.parse(List.of(FuseDaemon.timeoutOptions(30), "fsname=chibifs,attr_timeout=2.5"));
        assertEquals(30, spec.entryTimeout());
        assertEquals(2.5, spec.attrTimeout());
        assertEquals(30, spec.negativeTimeout());
        MountSpec plain = MountSpec.parse(List.of("big_writes"));
        assertEquals(1, plain.entryTimeout());
        assertEquals(0, plain.negativeTimeout());
    }

    @Test
    void aTimeoutThatIsNotANumberNamesItself() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> MountSpec.parse(List.of("entry_timeout=soon")));
        assertTrue(e.getMessage().contains("entry_timeout=soon"), e.getMessage());
    }

    @Test
    void theLineOfAnUnfollowedS3RootSaysWhatTheKernelKeepsAndNamesOnlyTheOptionsGiven() {
        String plain = FuseDaemon.unfollowedLine(30, false, Duration.ofSeconds(1));
        assertEquals("S3 root store: other hosts' changes cannot be followed, so the kernel keeps names, attributes"
                + " and missing names up to 1s after each S3 listing (--metadata-ttl 1s), other stores' 1 s; a longer"
                + " --metadata-ttl lists S3 less often and shows other hosts' changes later", plain);
        assertFalse(FuseDaemon.unfollowedLine(30, false, Duration.ofMillis(500)).contains("--kernel-cache"));
        assertTrue(FuseDaemon.unfollowedLine(30, false, Duration.ofMillis(500)).contains("up to 500ms after each S3"
                + " listing (--metadata-ttl 500ms)"));
        assertTrue(FuseDaemon.unfollowedLine(30, false, Duration.ofSeconds(60)).contains("up to 30s after each S3"
                + " listing (--metadata-ttl 60s, capped at the kernel cache's 30s)"));
        String asked = FuseDaemon.unfollowedLine(10, true, Duration.ofSeconds(60));
        assertTrue(asked.startsWith("--kernel-cache 10s: S3 root store: "), asked);
        assertTrue(asked.contains("up to 10s after each S3 listing (--metadata-ttl 60s, capped at --kernel-cache 10s)"), asked);
        assertEquals("the root store's changes cannot be followed: the kernel keeps names and attributes 1 s,"
                + " no missing name", FuseDaemon.unfollowedLine(30, false, null));
    }

    @Test
    void expireOnlyCameWithLinuxSixTwo() {
        assertTrue(FuseDaemon.expiresOnly("6.2.0"));
        assertTrue(FuseDaemon.expiresOnly("6.18.44-fc"));
        assertFalse(FuseDaemon.expiresOnly("6.1.90"));
        assertFalse(FuseDaemon.expiresOnly("5.15.0-generic"));
    }
}
