package dev.chibifs.fuse;

import dev.chibifs.policy.Caller;
import dev.chibifs.sys.ErrnoException;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertThrows;

class OpenFileTableTest {

    private static void open(OpenFileTable t, Caller c, int files) {
        for (int i = 0; i < files; i++) {
            t.add(new OpenFile(null, c, false, null, false, 1));
        }
    }

    /** With a quarter each, four agents took every descriptor, and SYSTEM's and a light user's cat failed. */
    @Test
    void onceTwiceTheShareIsOpenOnlyCallersHoldingLittleOpenMore() {
        OpenFileTable t = new OpenFileTable();
        t.share(256); // a quarter of 1,024: past 512 in all, only callers holding fewer than 64 open more
        Caller alice = Caller.context("alice");
        Caller bob = Caller.context("bob");
        Caller carol = Caller.context("carol");
        open(t, alice, 256);
        assertThrows(ErrnoException.class, () -> t.admit(alice), "its share");
        open(t, bob, 200);
        assertDoesNotThrow(() -> t.admit(bob), "456 open: below twice the share");
        open(t, carol, 56);
        assertThrows(ErrnoException.class, () -> t.admit(bob), "512 open, and bob holds 200");
        assertDoesNotThrow(() -> t.admit(carol), "carol holds 56");
        assertDoesNotThrow(() -> t.admit(Caller.SYSTEM));
    }
}
