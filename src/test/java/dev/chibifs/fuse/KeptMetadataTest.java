package dev.chibifs.fuse;

import dev.chibifs.store.EntryKind;
import dev.chibifs.store.MemoryStorage;
import dev.chibifs.store.Metadata;
import org.junit.jupiter.api.Test;

import java.nio.file.attribute.FileTime;
import java.time.Instant;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;

/** What a node keeps of a file's metadata for the next listing, and when it may keep it. */
class KeptMetadataTest {

    private final MemoryStorage store = new MemoryStorage();

    /** A file of {@code size} bytes that takes a 4 KiB block, as on a disk. */
    private static Metadata file(long size, long links) {
        return new Metadata(EntryKind.FILE, size, ns(1_000), ns(2_000_000_123L), ns(3_000), ns(4_000), links, 0644, 42, 8);
    }

    private static FileTime ns(long n) {
        return FileTime.from(n, TimeUnit.NANOSECONDS);
    }

    @Test
    void aFileComesBackAsItWasRead() {
        Metadata m = file(10, 1);
        KeptMetadata k = KeptMetadata.of(m, 5, 99);
        assertNotNull(k);
        assertEquals(m, k.metadata(NodeTable.Identity.of(store, m)));
        assertEquals(5, k.followKey());
        assertEquals(99, k.readAt());
    }

    @Test
    void onlyAFileWithOneNameInAFollowedDirectoryIsKept() {
        assertNull(KeptMetadata.of(file(10, 2), 5, 0), "another name's changes are told in another directory");
        assertNull(KeptMetadata.of(file(10, 1), -1, 0), "nothing tells the changes of an unfollowed directory");
        Metadata dir = new Metadata(EntryKind.DIRECTORY, 0, ns(0), ns(0), ns(0), ns(0), 2, 0755, 7);
        assertNull(KeptMetadata.of(dir, 5, 0), "a directory changes with what is in it");
        Metadata ancient = new Metadata(EntryKind.FILE, 1, ns(0), FileTime.from(Instant.parse("1600-01-01T00:00:00Z")),
                ns(0), ns(0), 1, 0644, 8);
        assertNull(KeptMetadata.of(ancient, 5, 0), "a time nanoseconds cannot hold is read each time");
    }

    @Test
    void aReadThatRacedAChangeIsNotKept() {
        NodeTable t = new NodeTable();
        NodeTable.Node n = t.remember(t.root(), "f", new NodeTable.Identity(store, Metadata.OWN_DEVICE, 42, 1_000), false, true, true);
        KeptMetadata k = KeptMetadata.of(file(10, 1), 5, 0);
        long from = n.keepingFrom();
        n.changing();
        n.keep(k, from);
        assertNull(n.kept, "read before the change");
        n.keep(k, n.keepingFrom());
        assertSame(k, n.kept);
        n.changing();
        assertNull(n.kept, "a change drops it");
    }

    @Test
    void nothingIsKeptWhileTheFileIsOpenForWriting() {
        NodeTable t = new NodeTable();
        NodeTable.Node n = t.remember(t.root(), "f", new NodeTable.Identity(store, Metadata.OWN_DEVICE, 42, 1_000), false, true, true);
        KeptMetadata k = KeptMetadata.of(file(10, 1), 5, 0);
        n.keep(k, n.keepingFrom());
        n.writerOpened();
        assertNull(n.kept, "passthrough writes reach the store without the daemon");
        n.keep(k, n.keepingFrom());
        assertNull(n.kept);
        n.writerOpened();
        n.writerReleased();
        n.keep(k, n.keepingFrom());
        assertNull(n.kept, "another writer still has it open");
        n.writerReleased();
        n.keep(k, n.keepingFrom());
        assertSame(k, n.kept, "what the last writer left, read after its release");
    }

    @Test
    void aNodeFoundByItsSoleNameIsRememberedAgainWhileSoKnown() {
        NodeTable t = new NodeTable();
        NodeTable.Node dir = t.remember(t.root(), "d", new NodeTable.Identity(store, Metadata.OWN_DEVICE, 1, 1), true, true, true);
        NodeTable.Node n = t.remember(dir, "f", new NodeTable.Identity(store, Metadata.OWN_DEVICE, 42, 1_000), false, true, true);
        assertSame(n, t.soleChild(dir, "f"));
        assertSame(n, t.rememberAgain(n, dir, "f"));
        assertNull(t.rememberAgain(n, dir, "g"), "another name");
        t.forget(n.id, 2);
        assertNull(t.rememberAgain(n, dir, "f"), "forgotten: no longer in the table");
        assertNull(t.soleChild(dir, "f"));
    }
}
