package dev.chibifs.fuse;

import dev.chibifs.path.VfsPath;
import dev.chibifs.store.FileHandle;
import dev.chibifs.store.LocalStorage;
import dev.chibifs.store.LockType;
import dev.chibifs.store.MemoryStorage;
import dev.chibifs.store.OpenFlag;
import dev.chibifs.store.Storage;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Path;
import java.util.EnumSet;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Which lock requests the WAL index guard judges, and how, against two stores over one directory. */
@Timeout(20)
class WalIndexGuardTest {

    private static final VfsPath INDEX = VfsPath.of("/shared/tasks.db-shm");
    private static final long DMS = WalIndexGuard.DMS_BYTE;

    @TempDir
    Path root;

    @Test
    void onlySqlitesDeadManLockOfAnIndexIsJudged() {
        assertTrue(WalIndexGuard.guards(INDEX, LockType.READ, DMS, DMS));
        assertTrue(WalIndexGuard.guards(INDEX, LockType.WRITE, DMS, DMS), "the first connection's, which rebuilds the index");
        assertFalse(WalIndexGuard.guards(INDEX, LockType.UNLOCK, DMS, DMS));
        assertFalse(WalIndexGuard.guards(INDEX, LockType.WRITE, 120, 120), "the WAL's own locks, taken while connected");
        assertFalse(WalIndexGuard.guards(INDEX, LockType.WRITE, 0, Long.MAX_VALUE), "another program's lock of the whole file");
        assertFalse(WalIndexGuard.guards(VfsPath.of("/shared/tasks.db"), LockType.READ, DMS, DMS));
    }

    @Test
    void aConnectionJoinsThoseOfItsOwnMountButNotAnotherMountsAlone() throws IOException {
        // two LocalStorages over one directory: what two mounts of one store are
        try (LocalStorage mine = new LocalStorage(root); LocalStorage theirs = new LocalStorage(root)) {
            mine.mkdir(INDEX.parent());
            mine.write(INDEX, new byte[0]);
            try (FileHandle here = open(mine); FileHandle there = open(theirs)) {
                WalIndexGuard guard = new WalIndexGuard();
                assertTrue(guard.mayTry(here.locks(), INDEX), "nobody connected: this one may build the index");
                assertTrue(here.locks().tryLock(1, LockType.READ, DMS, DMS));
                assertTrue(guard.mayTry(here.locks(), INDEX), "a connection beside one of its own mount shares its pages");
                // the other mount's connection joined ours (it never asks this guard)
                assertTrue(there.locks().tryLock(1, LockType.READ, DMS, DMS));
                assertTrue(guard.mayTry(here.locks(), INDEX), "ours are connected still: refusing now saves nothing");
                here.locks().releaseOwner(1);
                assertFalse(guard.mayTry(here.locks(), INDEX), "only the other mount's connection: its index is not ours");
                assertFalse(guard.mayTry(here.locks(), INDEX), "and not while it stays");
                there.locks().releaseOwner(1);
                assertTrue(guard.mayTry(here.locks(), INDEX), "once it has gone");
            }
        }
    }

    @Test
    void locksOnlyTheDaemonSeesAreNeverAnotherMounts() throws IOException {
        Storage memory = new MemoryStorage();
        memory.mkdir(INDEX.parent());
        memory.write(INDEX, new byte[0]);
        try (FileHandle a = open(memory); FileHandle b = open(memory)) {
            assertTrue(b.locks().tryLock(2, LockType.READ, DMS, DMS));
            assertTrue(new WalIndexGuard().mayTry(a.locks(), INDEX));
        }
    }

    private static FileHandle open(Storage store) throws IOException {
        return store.open(INDEX, EnumSet.of(OpenFlag.READ, OpenFlag.WRITE), 0);
    }
}
