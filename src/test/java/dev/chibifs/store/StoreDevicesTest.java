package dev.chibifs.store;

import org.junit.jupiter.api.Test;

import java.util.HashMap;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

class StoreDevicesTest {

    private static long device(long major, long minor) {
        return major << 32 | minor; // as statx gives it
    }

    @Test
    void theStoresOwnNumbersStayAndAnotherFileSystemsGetOnlyTheMiddleBitsChanged() {
        assertEquals(19, StoreDevices.shownInode(19, Metadata.OWN_DEVICE), "the store's own: its file system's number");
        long shown = StoreDevices.shownInode(19, device(7, 3));
        assertNotEquals(19, shown, "another file system's file is told apart from the store's inode 19");
        assertEquals(19, shown & 0xffff_ffffL, "its own 32 bits stay, as readable as before");
        assertEquals(0, shown >>> 56, "the top byte stays free for the router's store tag");
        assertEquals(shown, StoreDevices.shownInode(19, device(7, 3)), "the same number at every look");
    }

    /** Anonymous devices (tmpfs, overlay, FUSE: major 0) and loop and disk devices, as a host has them, never meet. */
    @Test
    void theDevicesAHostHasGetBitsOfTheirOwn() {
        Map<Long, Long> seen = new HashMap<>();
        for (long major : new long[]{0, 7, 8, 252, 253, 259}) {
            for (long minor = 0; minor < 4096; minor++) {
                long d = device(major, minor);
                if (d == Metadata.OWN_DEVICE) {
                    continue;
                }
                long bits = StoreDevices.shownInode(0, d);
                assertNull(seen.put(bits, d), () -> Long.toHexString(d) + " meets " + Long.toHexString(seen.get(bits)));
            }
        }
    }
}
