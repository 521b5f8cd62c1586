package dev.chibifs.fuse;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A kept listing goes when the names it gave expire: once, at the newest listing's time, and only for many names. */
class ListingExpiryTest {

    private static final long VALID = 30_000_000_000L;
    private static final int MANY = ListingExpiry.MIN_NAMES;

    private record Task(long at, Runnable run) {
    }

    private long now = 1_000;
    private final List<Task> timer = new ArrayList<>();
    private final List<NodeTable.Node> dropped = new ArrayList<>();
    private final ListingExpiry expiry = expiry(dropped::add);

    /** A ListingExpiry on this test's timer and clock, dropping with {@code drop}. */
    private ListingExpiry expiry(java.util.function.Consumer<NodeTable.Node> drop) {
        return new ListingExpiry(VALID, drop, (nanos, task) -> timer.add(new Task(now + nanos, task)), () -> now);
    }

    private static NodeTable.Node directory(long id) {
        return new NodeTable.Node(id, null, true, null);
    }

    /** Moves the clock to {@code to}, running what falls due on the way, in order. */
    private void advanceTo(long to) {
        while (true) {
            Task next = timer.stream().filter(t -> t.at() <= to).min((a, b) -> Long.compare(a.at(), b.at())).orElse(null);
            if (next == null) {
                break;
            }
            timer.remove(next);
            now = Math.max(now, next.at());
            next.run().run();
        }
        now = to;
    }

    @Test
    void aListingIsDroppedWhenItsNamesExpireAndNotBefore() {
        NodeTable.Node dir = directory(2);
        expiry.listed(dir, MANY);
        advanceTo(1_000 + VALID - 1);
        assertTrue(dropped.isEmpty());
        advanceTo(1_000 + VALID);
        assertEquals(List.of(dir), dropped);
        assertTrue(timer.isEmpty(), "nothing left to do");
    }

    @Test
    void aListingGivenAgainMovesTheDropToItsOwnTimeWithOneTaskOnItsWay() {
        NodeTable.Node dir = directory(2);
        expiry.listed(dir, MANY);
        advanceTo(10_000_000_000L);
        expiry.listed(dir, MANY);
        expiry.listed(dir, MANY);
        assertEquals(1, timer.size(), "one task per directory, however often it is listed");
        advanceTo(1_000 + VALID);
        assertTrue(dropped.isEmpty(), "the first listing's time: the second's names still hold");
        advanceTo(10_000_000_000L + VALID);
        assertEquals(List.of(dir), dropped);
    }

    @Test
    void aListingGivenAfterADropIsDroppedInItsTurn() {
        NodeTable.Node dir = directory(2);
        expiry.listed(dir, MANY);
        advanceTo(1_000 + VALID);
        expiry.listed(dir, MANY);
        advanceTo(1_000 + 2 * VALID);
        assertEquals(List.of(dir, dir), dropped);
    }

    @Test
    void aSmallListingIsLeftToExpireNameByName() {
        // a walk that looks names up first (git status) would pay for reading it again
        expiry.listed(directory(2), MANY - 1);
        expiry.listed(directory(3), 0);
        assertTrue(timer.isEmpty());
    }

    @Test
    void eachDirectoryHasItsOwnTime() {
        NodeTable.Node a = directory(2);
        NodeTable.Node b = directory(3);
        expiry.listed(a, MANY);
        advanceTo(5_000_000_000L);
        expiry.listed(b, MANY);
        advanceTo(1_000 + VALID);
        assertEquals(List.of(a), dropped);
        advanceTo(5_000_000_000L + VALID);
        assertEquals(List.of(a, b), dropped);
    }

    @Test
    void aFailedDropIsLoggedAndTheNextListingStillGoes() {
        List<NodeTable.Node> tried = new ArrayList<>();
        ListingExpiry failing = expiry(d -> {
            tried.add(d);
            throw new IllegalStateException("no channel");
        });
        NodeTable.Node dir = directory(2);
        failing.listed(dir, MANY);
        advanceTo(1_000 + VALID);
        failing.listed(dir, MANY);
        advanceTo(1_000 + 2 * VALID);
        assertEquals(List.of(dir, dir), tried);
    }
}
