package dev.chibifs.cli;

import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The mount command's own parsing, without a mount. */
class MountCommandTest {

    @Test
    void aUidMapNamesUidsAKernelHas() {
        for (String bad : List.of("99999999999=alice", "4294967295=alice", "-1=alice")) {
            UsageException e = assertThrows(UsageException.class, () -> MountCommand.parseUidMaps(List.of(bad), null));
            assertTrue(e.getMessage().contains("'" + bad + "'") && e.getMessage().contains("0 to 4294967294"), e.getMessage());
        }
        assertEquals(Map.of(4294967294L, "alice"), MountCommand.parseUidMaps(List.of("4294967294=alice"), null));
    }
}
