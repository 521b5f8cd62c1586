package dev.chibifs.fuse;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Which kernels {@link EntryExpiry} may merely expire names on; the notification itself is exercised by StoreChangesTest. */
class EntryExpiryTest {

    @Test
    void linuxSixTwoAndLaterExpireOnly() {
        assertTrue(EntryExpiry.expiresOnly("6.2.0"));
        assertTrue(EntryExpiry.expiresOnly("6.18.44-fc-v657"));
        assertTrue(EntryExpiry.expiresOnly("6.12.48+deb13-amd64"));
        assertTrue(EntryExpiry.expiresOnly("7.0"));
    }

    @Test
    void earlierOrUnreadableReleasesDoNot() {
        assertFalse(EntryExpiry.expiresOnly("6.1.0-40-amd64")); // Debian 12
        assertFalse(EntryExpiry.expiresOnly("5.15.0-1"));
        assertFalse(EntryExpiry.expiresOnly("4.19"));
        assertFalse(EntryExpiry.expiresOnly(""));
        assertFalse(EntryExpiry.expiresOnly("linux"));
    }
}
