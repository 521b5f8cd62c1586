package dev.chibifs.fuse;

import jnr.ffi.Platform;
import jnr.ffi.Pointer;
import jnr.ffi.Runtime;
import jnr.ffi.Struct;
import org.junit.jupiter.api.Test;
import ru.serce.jnrfuse.struct.FileStat;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

class StatLayoutTest {

    private final Pointer memory = Runtime.getSystemRuntime().getMemoryManager()
            .allocateDirect(Struct.size(new FileStat(Runtime.getSystemRuntime())), true);
    private final FileStat view = FileStat.of(memory);
    private final long address = memory.address();

    @Test
    void whatItWritesIsWhatJnrFusesFileStatReads() {
        StatLayout.MODE.put(address, 0100644);
        StatLayout.UID.put(address, 4_000_000_001L);
        StatLayout.GID.put(address, 1001);
        StatLayout.INO.put(address, 0x1234_5678_9abcL);
        StatLayout.NLINK.put(address, 3);
        StatLayout.SIZE.put(address, 5L << 33);
        StatLayout.BLKSIZE.put(address, 4096);
        StatLayout.BLOCKS.put(address, 81);
        StatLayout.ATIME_SEC.put(address, -86_400);
        StatLayout.ATIME_NSEC.put(address, 1);
        StatLayout.MTIME_SEC.put(address, 1_700_000_000L);
        StatLayout.MTIME_NSEC.put(address, 999_999_999);
        StatLayout.CTIME_SEC.put(address, 1L << 40);
        StatLayout.CTIME_NSEC.put(address, 500);

        assertEquals(0100644, view.st_mode.intValue());
        assertEquals(4_000_000_001L, view.st_uid.longValue() & 0xffffffffL);
        assertEquals(1001, view.st_gid.intValue());
        assertEquals(0x1234_5678_9abcL, view.st_ino.longValue());
        assertEquals(3, view.st_nlink.intValue());
        assertEquals(5L << 33, view.st_size.longValue());
        assertEquals(4096, view.st_blksize.intValue());
        assertEquals(81, view.st_blocks.longValue());
        assertEquals(-86_400, view.st_atim.tv_sec.longValue());
        assertEquals(1, view.st_atim.tv_nsec.longValue());
        assertEquals(1_700_000_000L, view.st_mtim.tv_sec.longValue());
        assertEquals(999_999_999, view.st_mtim.tv_nsec.longValue());
        assertEquals(1L << 40, view.st_ctim.tv_sec.longValue());
        assertEquals(500, view.st_ctim.tv_nsec.longValue());
    }

    @Test
    void itReadsBackWhatJnrFusesFileStatWrote() {
        view.st_nlink.set(7);
        view.st_ino.set(42L);
        assertEquals(7, StatLayout.NLINK.get(address));
        assertEquals(42, StatLayout.INO.get(address));
    }

    @Test
    void onX86_64ItIsGlibcsStructStat() {
        if (Platform.getNativePlatform().getCPU() != Platform.CPU.X86_64) {
            return;
        }
        // <bits/struct_stat.h> for x86-64: st_nlink and st_blksize are 8 bytes there
        assertEquals(fields(8, 8, 16, 8, 24, 4, 28, 4, 32, 4, 48, 8, 56, 8, 64, 8, 72, 8, 88, 8, 104, 8, 112, 8),
                List.of(StatLayout.INO, StatLayout.NLINK, StatLayout.MODE, StatLayout.UID, StatLayout.GID,
                        StatLayout.SIZE, StatLayout.BLKSIZE, StatLayout.BLOCKS, StatLayout.ATIME_SEC,
                        StatLayout.MTIME_SEC, StatLayout.CTIME_SEC, StatLayout.CTIME_NSEC));
    }

    /** Fields from pairs of offset and width. */
    private static List<StatLayout.Field> fields(int... offsetsAndWidths) {
        List<StatLayout.Field> fields = new ArrayList<>();
        for (int i = 0; i < offsetsAndWidths.length; i += 2) {
            fields.add(new StatLayout.Field(offsetsAndWidths[i], offsetsAndWidths[i + 1]));
        }
        return fields;
    }
}
