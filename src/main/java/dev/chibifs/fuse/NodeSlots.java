package dev.chibifs.fuse;

import dev.chibifs.fuse.NodeTable.Node;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * The nodes the kernel holds, by node id: an id's low 32 bits are a slot, its high 32 bits the
 * slot's generation. A slot freed at a FORGET is given to the next node with the next generation,
 * so no id ever names two nodes (as ids counted up for ever would not), and the table takes a
 * slot's reference per node instead of a map entry and a boxed key (about 70 bytes a node).
 *
 * <p>{@link #get} reads without a lock: every request looks its node up. {@link #add} and
 * {@link #remove} are called under the node table's monitor. A reader that races a removal sees
 * the node or null; one that races the slot's reuse sees the new node, whose id differs, and gets
 * null: the kernel only names ids it was given and has not forgotten.
 */
final class NodeSlots {

    private static final int CHUNK_BITS = 12;
    private static final int CHUNK = 1 << CHUNK_BITS;
    private static final long GENERATION = 1L << 32;

    /** Chunks of slots; replaced by a longer array (same chunks) as slots are needed. */
    private volatile AtomicReferenceArray<Node>[] chunks = newChunks(1);
    /** The next slot never used; slots below it are in use or in {@link #freed}. */
    private int nextSlot;
    /** The ids last given to free slots, to be given again a generation on. */
    private long[] freed = new long[16];
    private int freedCount;
    private volatile int size;

    /** Slots below {@code firstSlot} are never given (FUSE's id 0 is no node, 1 is the root's, given by the caller). */
    NodeSlots(int firstSlot) {
        nextSlot = firstSlot;
    }

    /**
     * Node {@code id} as a log line shows it: the id itself, as the kernel has it, and where its
     * generation is not the first, its slot and generation. A reused slot's id is past 2^32 (slot 4's
     * second node is 4294967300), which in a log looked like an int's overflow or a sign mixed up.
     */
    static String shown(long id) {
        long generation = id >>> 32;
        return generation == 0 ? Long.toUnsignedString(id)
                : Long.toUnsignedString(id) + " (slot " + (id & 0xffffffffL) + ", generation " + generation + ")";
    }

    /** A new id, for a node to be {@link #add added}: a free slot's next generation, or a new slot. */
    long newId() {
        if (freedCount > 0) {
            return freed[--freedCount] + GENERATION;
        }
        int slot = nextSlot++;
        if (slot >>> CHUNK_BITS >= chunks.length) {
            AtomicReferenceArray<Node>[] longer = Arrays.copyOf(chunks, chunks.length * 2);
            for (int i = chunks.length; i < longer.length; i++) {
                longer[i] = new AtomicReferenceArray<>(CHUNK);
            }
            chunks = longer;
        }
        return slot;
    }

    /** Puts {@code node} in the slot of its id (one {@link #newId} gave, or the root's). */
    void add(Node node) {
        int slot = (int) node.id;
        chunks[slot >>> CHUNK_BITS].set(slot & (CHUNK - 1), node);
        size++;
    }

    /** Empties {@code node}'s slot, for the next generation. */
    void remove(Node node) {
        int slot = (int) node.id;
        chunks[slot >>> CHUNK_BITS].set(slot & (CHUNK - 1), null);
        size--;
        if (freedCount == freed.length) {
            freed = Arrays.copyOf(freed, freed.length * 2);
        }
        freed[freedCount++] = node.id;
    }

    /** The node with id {@code id}, or null. */
    Node get(long id) {
        long slot = id & 0xffffffffL;
        AtomicReferenceArray<Node>[] c = chunks;
        if (slot >>> CHUNK_BITS >= c.length) {
            return null;
        }
        Node n = c[(int) (slot >>> CHUNK_BITS)].get((int) slot & (CHUNK - 1));
        return n != null && n.id == id ? n : null;
    }

    int size() {
        return size;
    }

    /** A snapshot of every node held. */
    List<Node> all() {
        List<Node> out = new ArrayList<>(size);
        for (AtomicReferenceArray<Node> chunk : chunks) {
            for (int i = 0; i < CHUNK; i++) {
                Node n = chunk.get(i);
                if (n != null) {
                    out.add(n);
                }
            }
        }
        return out;
    }

    @SuppressWarnings("unchecked")
    private static AtomicReferenceArray<Node>[] newChunks(int n) {
        AtomicReferenceArray<Node>[] c = new AtomicReferenceArray[n];
        for (int i = 0; i < n; i++) {
            c[i] = new AtomicReferenceArray<>(CHUNK);
        }
        return c;
    }
}
