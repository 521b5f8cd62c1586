package dev.chibifs.fuse;

import dev.chibifs.store.EntryKind;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

class DirectoryListingsTest {

    private static final int NAMES = 100;
    private static final long LISTING = NAMES * (10 + DirectoryListings.Listing.NAME_OVERHEAD);

    /** A listing of NAMES names of 10 bytes, as READDIR loads one, read part-way by thread {@code pid}. */
    private static DirectoryListings.Listing readPartWay(DirectoryListings listings, NodeTable.Node dir, int pid) {
        DirectoryListings.Listing l = listings.unopened(dir, pid, 0, 0);
        for (int i = 0; i < NAMES; i++) {
            l.add(String.format("name-%05d", i).getBytes(StandardCharsets.UTF_8), EntryKind.FILE, 0);
        }
        l.ordered();
        l.replied(0, 5, 0);
        return l;
    }

    /** Readers that stop part-way (a getdents, then nothing) left whole snapshots behind, counted but not weighed. */
    @Test
    void listingsLeftPartReadHoldAtMostTheirBytesBesideTheNewest() {
        DirectoryListings listings = new DirectoryListings(5 * LISTING);
        NodeTable.Node dir = new NodeTable.Node(7, null, true, null);
        DirectoryListings.Listing first = readPartWay(listings, dir, 1);
        for (int pid = 2; pid <= 40; pid++) {
            readPartWay(listings, dir, pid);
            assertTrue(listings.unopenedBytes() <= 6 * LISTING, listings.unopenedBytes() + " bytes held");
        }
        assertEquals(6 * LISTING, listings.unopenedBytes(), "five kept, and the newest");
        // the first reader's went: going on, it reads a new one (from the name its offset names)
        assertNotSame(first, listings.unopened(dir, 1, first.offsetAfter(5), 0));
    }

    /** Forty readers starting at once: each listing was empty when made, the only time the bytes were counted. */
    @Test
    void listingsMadeAtOnceAndReadAfterAreBoundedWhenRead() {
        DirectoryListings listings = new DirectoryListings(5 * LISTING);
        NodeTable.Node dir = new NodeTable.Node(7, null, true, null);
        java.util.List<DirectoryListings.Listing> made = new java.util.ArrayList<>();
        for (int pid = 1; pid <= 40; pid++) {
            made.add(listings.unopened(dir, pid, 0, 0));
        }
        for (DirectoryListings.Listing l : made) {
            for (int i = 0; i < NAMES; i++) {
                l.add(String.format("name-%05d", i).getBytes(StandardCharsets.UTF_8), EntryKind.FILE, 0);
            }
            listings.loaded(l);
            assertTrue(listings.unopenedBytes() <= 6 * LISTING, listings.unopenedBytes() + " bytes held");
        }
    }

    @Test
    void aListingBiggerThanTheLimitStaysWhileItIsTheNewest() {
        DirectoryListings listings = new DirectoryListings(LISTING / 2);
        NodeTable.Node dir = new NodeTable.Node(7, null, true, null);
        DirectoryListings.Listing l = readPartWay(listings, dir, 1);
        assertSame(l, listings.unopened(dir, 1, l.offsetAfter(5), 0), "its reader goes on with it");
    }
}
