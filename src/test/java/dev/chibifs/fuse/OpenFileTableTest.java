package dev.chibifs.fuse;

import dev.chibifs.policy.Caller;
import dev.chibifs.sys.ErrnoException;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertThrows;

class OpenFileTableTest {

    private static void open(OpenFileTable t, Caller c, int files) {
        open(t, c, 1000, files);
    }

    private static void open(OpenFileTable t, Caller c, long uid, int files) {
        for (int i = 0; i < files; i++) {
            t.add(new OpenFile(null, c, false, null, false, 1, uid));
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
        assertThrows(ErrnoException.class, () -> t.admit(alice, 1000), "its share");
        open(t, bob, 200);
        assertDoesNotThrow(() -> t.admit(bob, 1000), "456 open: below twice the share");
        open(t, carol, 56);
        assertThrows(ErrnoException.class, () -> t.admit(bob, 1000), "512 open, and bob holds 200");
        assertDoesNotThrow(() -> t.admit(carol, 1000), "carol holds 56");
        assertDoesNotThrow(() -> t.admit(Caller.SYSTEM, 0));
    }

    /** Every unmapped uid is the one guest caller: one local account took the share of root and every other reader. */
    @Test
    void eachUnmappedUidHasAShareOfItsOwn() {
        OpenFileTable t = new OpenFileTable();
        t.share(256);
        open(t, Caller.GUEST, 4313, 256);
        assertThrows(ErrnoException.class, () -> t.admit(Caller.GUEST, 4313), "its share");
        assertDoesNotThrow(() -> t.admit(Caller.GUEST, 4314), "another unmapped uid");
        assertDoesNotThrow(() -> t.admit(Caller.GUEST, 0), "root, when it is not SYSTEM");
        open(t, Caller.GUEST, 4314, 100);
        open(t, Caller.GUEST, 4315, 156);
        assertThrows(ErrnoException.class, () -> t.admit(Caller.GUEST, 4314), "512 open, and 4314 holds 100");
        assertDoesNotThrow(() -> t.admit(Caller.GUEST, 0), "root holds none");
    }

    /** A context's uids share its one share: two uids mapped to alice are alice. */
    @Test
    void aContextsUidsShareOneShare() {
        OpenFileTable t = new OpenFileTable();
        t.share(256);
        Caller alice = Caller.context("alice");
        open(t, alice, 4311, 200);
        open(t, alice, 4312, 56);
        assertThrows(ErrnoException.class, () -> t.admit(alice, 4313));
    }

    /** A file closed gives its uid's share back, not another's. */
    @Test
    void aCloseGivesTheOpenersShareBack() {
        OpenFileTable t = new OpenFileTable();
        t.share(64);
        long last = 0;
        for (int i = 0; i < 64; i++) {
            last = t.add(new OpenFile(null, Caller.GUEST, false, null, false, 1, 4313));
        }
        assertThrows(ErrnoException.class, () -> t.admit(Caller.GUEST, 4313));
        t.remove(last);
        assertDoesNotThrow(() -> t.admit(Caller.GUEST, 4313));
    }
}
