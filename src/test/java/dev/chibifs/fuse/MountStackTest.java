package dev.chibifs.fuse;

import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** Which of two mounts stacked at one mountpoint backs out: the one on top, whichever process asks. */
class MountStackTest {

    private static MountTable.InfoLine line(int id, String type) {
        return MountTable.InfoLine.parse(id + " 27 0:" + id + " / /mnt/chibi rw,nosuid,nodev,relatime shared:1 - " + type
                + " chibifs rw,user_id=1000,group_id=1000");
    }

    @Test
    void theMountOnTopOfAnotherBacksOutAndTheOneBelowStays() {
        MountTable.InfoLine winner = line(51, "fuse.chibifs");
        MountTable.InfoLine loser = line(48, "fuse.chibifs"); // ids are reused: the order is the table's, not the ids'
        List<MountTable.InfoLine> stack = List.of(winner, loser);
        assertEquals(Optional.of(winner), FuseMount.landedOn(stack, 48));
        assertEquals(Optional.empty(), FuseMount.landedOn(stack, 51), "the winner keeps its mount");
        assertEquals(Optional.of(winner), FuseMount.landedOn(stack, -1), "ours unknown: the topmost is taken for it");
        assertEquals(Optional.empty(), FuseMount.landedOn(List.of(winner), 51), "alone");
        assertEquals(Optional.empty(), FuseMount.landedOn(List.of(), -1));
        MountTable.MountEntry there = FuseMount.landedOn(stack, 48).orElseThrow().entry();
        assertEquals(new MountTable.MountEntry("chibifs", java.nio.file.Path.of("/mnt/chibi"), "fuse.chibifs",
                "rw,user_id=1000,group_id=1000"), there);
        assertEquals(1000, there.mounter());
    }

    @Test
    void aMountInTheMiddleOfAStackLandedOnTheOneBelowIt() {
        List<MountTable.InfoLine> stack = List.of(line(40, "tmpfs"), line(41, "fuse.chibifs"), line(42, "fuse.chibifs"));
        assertEquals(40, FuseMount.landedOn(stack, 41).orElseThrow().id());
        assertEquals("tmpfs", FuseMount.landedOn(stack, 41).orElseThrow().type());
    }
}
