package dev.chibifs.fuse;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Node ids as slots with generations: a freed slot is reused, an id never names two nodes. */
class NodeSlotsTest {

    private final NodeSlots slots = new NodeSlots(2);

    private NodeTable.Node added() {
        NodeTable.Node n = new NodeTable.Node(slots.newId(), null, false, null);
        slots.add(n);
        return n;
    }

    @Test
    void idsStartAtTheFirstSlotAndFindTheirNodes() {
        NodeTable.Node a = added();
        NodeTable.Node b = added();
        assertEquals(2, a.id);
        assertEquals(3, b.id);
        assertSame(a, slots.get(2));
        assertSame(b, slots.get(3));
        assertNull(slots.get(4));
        assertNull(slots.get(1L << 40), "a slot never made");
        assertEquals(2, slots.size());
    }

    @Test
    void aFreedSlotIsGivenAgainUnderANewIdAndTheOldIdFindsNothing() {
        NodeTable.Node a = added();
        slots.remove(a);
        assertNull(slots.get(a.id));
        NodeTable.Node b = added();
        assertEquals(a.id + (1L << 32), b.id, "the same slot, the next generation");
        assertNull(slots.get(a.id), "the forgotten id does not name the slot's new node");
        assertSame(b, slots.get(b.id));
        assertEquals(1, slots.size());
    }

    /**
     * A log line showed node 4294967300: no overflow, slot 4's second node (its id's high half is the
     * generation). Shown as the kernel has it, with slot and generation where the generation is not the first.
     */
    @Test
    void aReusedSlotsIdIsShownWithItsSlotAndGeneration() {
        assertEquals("4", NodeSlots.shown(4));
        assertEquals("4294967300 (slot 4, generation 1)", NodeSlots.shown((1L << 32) + 4));
        NodeTable.Node n = added();
        slots.remove(n);
        long again = slots.newId();
        assertEquals((1L << 32) + n.id, again);
        assertEquals(again + " (slot " + n.id + ", generation 1)", NodeSlots.shown(again));
    }

    @Test
    void slotsGrowPastManyChunksAndAllListsWhatIsHeld() {
        List<NodeTable.Node> held = new ArrayList<>();
        for (int i = 0; i < 20_000; i++) {
            held.add(added());
        }
        for (int i = 0; i < held.size(); i += 2) {
            slots.remove(held.get(i));
        }
        Set<Long> ids = new HashSet<>();
        for (int i = 0; i < 10_000; i++) {
            assertTrue(ids.add(added().id));
        }
        assertEquals(20_000, slots.size());
        assertEquals(20_000, slots.all().size());
        for (int i = 1; i < held.size(); i += 2) {
            assertSame(held.get(i), slots.get(held.get(i).id));
        }
        for (int i = 0; i < held.size(); i += 2) {
            assertNull(slots.get(held.get(i).id));
        }
    }
}
