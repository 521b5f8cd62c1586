package dev.chibifs.fuse;

import dev.chibifs.store.MemoryStorage;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** The node table finds any node's path. */
@Timeout(20)
class NodeTableTest {

    private final MemoryStorage store = new MemoryStorage();
    private final NodeTable t = new NodeTable();

    @Test
    void aPathDeeperThanAThreadsStackIsFound() {
        NodeTable.Node dir = t.root();
        int depth = 20_000;
        for (int i = 0; i < depth; i++) {
            dir = t.remember(dir, "d", new NodeTable.Identity(store, 10 + i, 1), true, true, true);
        }
        assertEquals(depth * 2, t.path(dir).toString().length());
    }
}
