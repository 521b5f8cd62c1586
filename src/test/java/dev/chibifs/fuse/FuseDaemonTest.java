package dev.chibifs.fuse;

import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

class FuseDaemonTest {

    @Test
    void aTimeoutIsLibfusesLastValueOfItAndOneSecondWhenUnset() {
        List<String> options = List.of(KernelEntries.timeoutOptions(30), "fsname=chibifs,attr_timeout=2.5");
        assertEquals(30, FuseDaemon.timeout(options, "entry_timeout"));
        assertEquals(2.5, FuseDaemon.timeout(options, "attr_timeout"));
        assertEquals(1, FuseDaemon.timeout(List.of("big_writes"), "entry_timeout"));
        // not a number: libfuse refuses to mount; nothing is kept past it meanwhile
        assertEquals(0, FuseDaemon.timeout(List.of("entry_timeout=soon"), "entry_timeout"));
    }
}
