package dev.chibifs.fuse;

import com.kenai.jffi.MemoryIO;
import jnr.ffi.Pointer;
import jnr.ffi.Runtime;
import jnr.ffi.Struct;
import ru.serce.jnrfuse.struct.FileStat;

/**
 * Where this platform's struct stat keeps the fields an attribute reply fills, so they are written
 * with plain stores. A jnr-fuse FileStat field takes its value as a Number, which boxed most of the
 * ten values of every reply. The offsets and widths are learned from jnr-fuse's own FileStat at
 * class load (each field is set to all ones in a zeroed buffer and found again), so the layout is
 * jnr-fuse's, whatever the CPU: st_nlink and st_blksize are 8 bytes on x86-64 and 4 on arm64.
 */
final class StatLayout {

    private static final MemoryIO MEMORY = MemoryIO.getInstance();

    /** One field: its offset in struct stat and its width in bytes (4 or 8). */
    record Field(long offset, int width) {
        void put(long stat, long value) {
            if (width == 8) {
                MEMORY.putLong(stat + offset, value);
            } else {
                MEMORY.putInt(stat + offset, (int) value);
            }
        }

        long get(long stat) {
            return width == 8 ? MEMORY.getLong(stat + offset) : MEMORY.getInt(stat + offset) & 0xffffffffL;
        }
    }

    /** sizeof(struct stat), as jnr-fuse lays it out. */
    static final int BYTES;
    static final Field MODE;
    static final Field UID;
    static final Field GID;
    static final Field INO;
    static final Field NLINK;
    static final Field SIZE;
    static final Field BLKSIZE;
    static final Field BLOCKS;
    static final Field ATIME_SEC;
    static final Field ATIME_NSEC;
    static final Field MTIME_SEC;
    static final Field MTIME_NSEC;
    static final Field CTIME_SEC;
    static final Field CTIME_NSEC;

    static {
        Runtime runtime = Runtime.getSystemRuntime();
        int size = Struct.size(new FileStat(runtime));
        BYTES = size;
        Pointer scratch = runtime.getMemoryManager().allocateDirect(size, true);
        FileStat view = FileStat.of(scratch);
        MODE = learn(scratch, size, view.st_mode);
        UID = learn(scratch, size, view.st_uid);
        GID = learn(scratch, size, view.st_gid);
        INO = learn(scratch, size, view.st_ino);
        NLINK = learn(scratch, size, view.st_nlink);
        SIZE = learn(scratch, size, view.st_size);
        BLKSIZE = learn(scratch, size, view.st_blksize);
        BLOCKS = learn(scratch, size, view.st_blocks);
        ATIME_SEC = learn(scratch, size, view.st_atim.tv_sec);
        ATIME_NSEC = learn(scratch, size, view.st_atim.tv_nsec);
        MTIME_SEC = learn(scratch, size, view.st_mtim.tv_sec);
        MTIME_NSEC = learn(scratch, size, view.st_mtim.tv_nsec);
        CTIME_SEC = learn(scratch, size, view.st_ctim.tv_sec);
        CTIME_NSEC = learn(scratch, size, view.st_ctim.tv_nsec);
    }

    private StatLayout() {
    }

    /** Sets the field to all ones in the zeroed {@code scratch} and finds the bytes that changed. */
    private static Field learn(Pointer scratch, int size, Struct.NumberField field) {
        field.set(-1L);
        int first = -1;
        int last = -1;
        for (int i = 0; i < size; i++) {
            if (scratch.getByte(i) != 0) {
                first = first < 0 ? i : first;
                last = i;
            }
        }
        scratch.setMemory(0, size, (byte) 0);
        int width = last - first + 1;
        if (first < 0 || (width != 4 && width != 8)) {
            throw new IllegalStateException("jnr-fuse's struct stat has a field of " + width + " bytes at " + first);
        }
        return new Field(first, width);
    }
}
