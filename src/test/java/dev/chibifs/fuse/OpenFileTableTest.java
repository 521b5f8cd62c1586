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
        t.share(64);
        Caller alice = Caller.context("alice");
        Caller bob = Caller.context("bob");
        Caller carol = Caller.context("carol");
        open(t, alice, 64);
        assertThrows(ErrnoException.class, () -> t.admit(alice), "its share");
        open(t, bob, 60);
        assertDoesNotThrow(() -> t.admit(bob), "124 open: below twice the share");
        open(t, carol, 4);
        assertThrows(ErrnoException.class, () -> t.admit(bob), "128 open, and bob holds 60");
        assertDoesNotThrow(() -> t.admit(carol), "carol holds 4");
        assertDoesNotThrow(() -> t.admit(Caller.SYSTEM));
    }
}
