package dev.chibifs.store.s3;

import dev.chibifs.path.VfsPath;
import dev.chibifs.sys.Linux;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.time.Instant;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A conflict copy's name is one a lookup can reach: never past NAME_MAX bytes, whatever the name and host. */
class ConflictNameTest {

    private static final Instant AT = Instant.parse("2026-01-02T03:04:05Z");

    @Test
    void aShortNameKeepsItselfWhole() {
        assertEquals(VfsPath.of("/shared/plan.md.conflict-hosta-20260102T030405Z-2"),
                WriteBack.conflictName(VfsPath.of("/shared/plan.md"), "hosta", AT, 2));
    }

    @Test
    void aLongNameIsCutSoTheCopyFitsNameMax() {
        String name = "P".repeat(250) + ".txt";
        VfsPath copy = WriteBack.conflictName(VfsPath.of("/shared/" + name), "hostb", AT, 0);
        assertEquals(Linux.NAME_MAX, bytes(copy.fileName()));
        assertTrue(copy.fileName().startsWith("P".repeat(200)) && copy.fileName().endsWith(".conflict-hostb-20260102T030405Z"),
                copy.fileName());
    }

    @Test
    void aNameOfManyByteCharactersIsCutBetweenThemAndALongHostToo() {
        String name = "é".repeat(127); // 254 bytes
        VfsPath copy = WriteBack.conflictName(VfsPath.of("/shared/" + name), "h".repeat(300), AT, 0);
        assertTrue(bytes(copy.fileName()) <= Linux.NAME_MAX, copy.fileName());
        assertTrue(copy.fileName().startsWith("é.conflict-hhh"), "one character of the name at least: " + copy.fileName());
        assertTrue(copy.fileName().endsWith("-20260102T030405Z"), copy.fileName());
    }

    private static int bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8).length;
    }
}
