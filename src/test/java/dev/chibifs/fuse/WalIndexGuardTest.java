package dev.chibifs.fuse;

import dev.chibifs.path.VfsPath;
import dev.chibifs.store.FileHandle;
import dev.chibifs.store.LocalStorage;
import dev.chibifs.store.LockState;
import dev.chibifs.store.LockType;
import dev.chibifs.store.OpenFlag;
import dev.chibifs.store.Storage;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Path;
import java.util.EnumSet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The WAL index guard of a served mount, against two stores over one directory (what two mounts of
 * one store are): which requests it keeps, how the mount's connections share the DMS byte, and
 * what every other holder sees of them.
 */
@Timeout(20)
class WalIndexGuardTest {

    private static final VfsPath INDEX = VfsPath.of("/shared/tasks.db-shm");
    private static final long DMS = WalIndexGuard.DMS_BYTE;

    @TempDir
    Path root;
    /** Two stores over one directory: what two mounts of one store are. */
    private LocalStorage mine;
    private LocalStorage theirs;
    private final NodeTable.Node node = new NodeTable.Node(2, null, false, null);
    private final WalIndexGuard guard = new WalIndexGuard();

    @BeforeEach
    void createIndex() throws IOException {
        mine = new LocalStorage(root);
        theirs = new LocalStorage(root);
        mine.mkdir(INDEX.parent());
        mine.write(INDEX, new byte[0]);
    }

    @AfterEach
    void closeStores() throws IOException {
        mine.close();
        theirs.close();
    }

    @Test
    void onlySqlitesDeadManLockOfAnIndexIsKept() {
        assertTrue(WalIndexGuard.isIndex(INDEX) && WalIndexGuard.reaches(DMS, DMS));
        assertTrue(WalIndexGuard.keeps(LockType.READ, DMS, DMS));
        assertTrue(WalIndexGuard.keeps(LockType.WRITE, DMS, DMS), "the first connection's, which rebuilds the index");
        assertFalse(WalIndexGuard.keeps(LockType.UNLOCK, DMS, DMS));
        assertFalse(WalIndexGuard.reaches(120, 127), "the WAL's own locks, taken while connected");
        assertTrue(WalIndexGuard.reaches(0, Long.MAX_VALUE), "an unlock of the whole file ends a connection too");
        assertFalse(WalIndexGuard.keeps(LockType.WRITE, 0, Long.MAX_VALUE), "another program's lock of the whole file goes to the store");
        assertFalse(WalIndexGuard.isIndex(VfsPath.of("/shared/tasks.db")));
    }

    @Test
    void theMountsConnectionsShareTheIndexAndAreOneExclusiveHolderToEveryoneElse() throws IOException {
        WalIndexGuard.Opener opener = writable -> open(mine, writable);
        try (FileHandle there = open(theirs, true)) {
            assertNull(guard.test(node, 1, LockType.WRITE), "nobody connected here: the store answers");
            // the first connection builds the index: a write lock, then read
            assertTrue(guard.tryLock(node, INDEX, 1, 10, LockType.WRITE, opener));
            assertEquals(LockType.WRITE, guard.test(node, 2, LockType.WRITE).type(), "another connection here waits for it");
            assertFalse(guard.tryLock(node, INDEX, 2, 11, LockType.READ, opener));
            assertTrue(guard.tryLock(node, INDEX, 1, 10, LockType.READ, opener));
            assertEquals(LockType.READ, guard.test(node, 2, LockType.WRITE).type(), "so a second connection here joins it");
            assertTrue(guard.tryLock(node, INDEX, 2, 11, LockType.READ, opener));
            assertEquals(LockType.UNLOCK, guard.test(node, 1, LockType.READ).type(), "readers beside readers");
            assertFalse(guard.tryLock(node, INDEX, 1, 10, LockType.WRITE, opener), "nor rebuilds it while another is connected");

            // outside, a connection finds the byte locked exclusively, and cannot join
            assertEquals(LockType.WRITE, there.locks().testLock(7, LockType.READ, DMS, DMS).type());
            assertFalse(there.locks().tryLock(7, LockType.READ, DMS, DMS));

            guard.unlock(node, 1);
            assertFalse(there.locks().tryLock(7, LockType.READ, DMS, DMS), "one connection here is left");
            guard.released(node, 11); // its open file closed
            assertNull(guard.test(node, 1, LockType.WRITE));
            assertTrue(there.locks().tryLock(7, LockType.READ, DMS, DMS), "with none left the byte is free");

            // and while the other mount is connected, this one's first connection waits
            assertFalse(guard.tryLock(node, INDEX, 3, 12, LockType.WRITE, opener));
            assertFalse(guard.tryLock(node, INDEX, 3, 12, LockType.READ, opener));
            assertTrue(there.locks().tryLock(7, LockType.UNLOCK, DMS, DMS));
            assertTrue(guard.tryLock(node, INDEX, 3, 12, LockType.READ, opener));
            guard.released(node, 12);
            assertTrue(there.locks().tryLock(7, LockType.WRITE, DMS, DMS));
        }
    }

    @Test
    void aCallerWhoMayOnlyReadHoldsTheIndexSharedAgainstAFirstConnectionElsewhere() throws IOException {
        WalIndexGuard.Opener readOnly = writable -> {
            if (writable) {
                throw new java.nio.file.AccessDeniedException(INDEX.toString());
            }
            return open(mine, false);
        };
        try (FileHandle there = open(theirs, true)) {
            assertTrue(guard.tryLock(node, INDEX, 1, 10, LockType.READ, readOnly));
            assertFalse(there.locks().tryLock(7, LockType.WRITE, DMS, DMS), "no first connection elsewhere rebuilds it");
            guard.released(node, 10);
            assertTrue(there.locks().tryLock(7, LockType.WRITE, DMS, DMS));
        }
    }

    private static FileHandle open(Storage store, boolean writable) throws IOException {
        return store.open(INDEX, writable ? EnumSet.of(OpenFlag.READ, OpenFlag.WRITE) : EnumSet.of(OpenFlag.READ), 0);
    }
}
