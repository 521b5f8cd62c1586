package dev.chibifs.fuse;

import org.junit.jupiter.api.Test;

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
    void expireOnlyCameWithLinuxSixTwo() {
        assertTrue(FuseDaemon.expiresOnly("6.2.0"));
        assertTrue(FuseDaemon.expiresOnly("6.18.44-fc"));
        assertFalse(FuseDaemon.expiresOnly("6.1.90"));
        assertFalse(FuseDaemon.expiresOnly("5.15.0-generic"));
    }
}
