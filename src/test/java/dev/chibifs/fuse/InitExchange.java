package dev.chibifs.fuse;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The daemon's side of a FUSE session, as little as a mount test needs: INIT answered by hand
 * (no features asked for), every later request refused with ENOENT. Written from
 * include/uapi/linux/fuse.h, not from our codec, so it checks the device and the mount alone.
 */
final class InitExchange {

    static final int FUSE_LOOKUP = 1;
    static final int FUSE_FORGET = 2;
    static final int FUSE_INIT = 26;
    static final int FUSE_ACCESS = 34;
    static final int FUSE_INTERRUPT = 36;
    static final int FUSE_BATCH_FORGET = 42;
    private static final int IN_HEADER = 40;
    private static final int OUT_HEADER = 16;
    /** struct fuse_init_out since 7.40 (max_stack_depth, request_timeout and unused[11] included). */
    private static final int INIT_OUT = 64;
    private static final int ENOENT = 2;
    private static final int ENOSYS = 38;

    /** What the kernel said in INIT; {@code flags} holds flags2 in its upper half, as FUSE numbers its bits. */
    record Init(int length, int major, int minor, int maxReadahead, long flags) {
        /** The names of the bits set, as include/uapi/linux/fuse.h spells them (BIT_n for any newer). */
        String flagNames() {
            StringBuilder s = new StringBuilder();
            for (int bit = 0; bit < 64; bit++) {
                if ((flags & (1L << bit)) != 0) {
                    s.append(s.length() == 0 ? "" : " ").append(FLAG_NAMES.getOrDefault(bit, "BIT_" + bit));
                }
            }
            return s.toString();
        }
    }

    private static final Map<Integer, String> FLAG_NAMES = new TreeMap<>();

    static {
        String[] names = {"ASYNC_READ", "POSIX_LOCKS", "FILE_OPS", "ATOMIC_O_TRUNC", "EXPORT_SUPPORT", "BIG_WRITES",
            "DONT_MASK", "SPLICE_WRITE", "SPLICE_MOVE", "SPLICE_READ", "FLOCK_LOCKS", "HAS_IOCTL_DIR",
            "AUTO_INVAL_DATA", "DO_READDIRPLUS", "READDIRPLUS_AUTO", "ASYNC_DIO", "WRITEBACK_CACHE",
            "NO_OPEN_SUPPORT", "PARALLEL_DIROPS", "HANDLE_KILLPRIV", "POSIX_ACL", "ABORT_ERROR", "MAX_PAGES",
            "CACHE_SYMLINKS", "NO_OPENDIR_SUPPORT", "EXPLICIT_INVAL_DATA", "MAP_ALIGNMENT", "SUBMOUNTS",
            "HANDLE_KILLPRIV_V2", "SETXATTR_EXT", "INIT_EXT", "INIT_RESERVED", "SECURITY_CTX", "HAS_INODE_DAX",
            "CREATE_SUPP_GROUP", "HAS_EXPIRE_ONLY", "DIRECT_IO_ALLOW_MMAP", "PASSTHROUGH", "NO_EXPORT_SUPPORT",
            "HAS_RESEND", "ALLOW_IDMAP", "OVER_IO_URING", "REQUEST_TIMEOUT"};
        for (int i = 0; i < names.length; i++) {
            FLAG_NAMES.put(i, names[i]);
        }
    }

    private InitExchange() {
    }

    /** A buffer the kernel's requests fit in whatever max_write is offered. */
    static ByteBuffer requestBuffer() {
        return ByteBuffer.allocateDirect(1024 * 1024 + 4096).order(ByteOrder.nativeOrder());
    }

    /** Reads the first request, which must be INIT, and accepts it asking for nothing. */
    static Init answerInit(FuseChannel channel) throws IOException {
        return answerInit(channel, false);
    }

    /**
     * Reads the first request, which must be INIT, and accepts it asking for nothing but, when
     * {@code passthrough}, FUSE_PASSTHROUGH (with INIT_EXT, as bits above 31 need, and a stack depth of 1).
     */
    static Init answerInit(FuseChannel channel, boolean passthrough) throws IOException {
        ByteBuffer in = requestBuffer();
        int n = channel.read(in);
        if (in.position() != 0 || in.limit() != n) {
            throw new AssertionError("read left position " + in.position() + ", limit " + in.limit() + " for " + n + " bytes");
        }
        int length = in.getInt(0);
        int opcode = in.getInt(4);
        if (length != n || opcode != FUSE_INIT) {
            throw new AssertionError("expected INIT (26) of " + n + " bytes, got opcode " + opcode + " of length " + length);
        }
        long unique = in.getLong(8);
        int major = in.getInt(IN_HEADER);
        int minor = in.getInt(IN_HEADER + 4);
        int readahead = in.getInt(IN_HEADER + 8);
        long flags = in.getInt(IN_HEADER + 12) & 0xffffffffL;
        if (n >= IN_HEADER + 20) {
            flags |= (long) in.getInt(IN_HEADER + 16) << 32;
        }
        // fuse_out_header { u32 len; s32 error; u64 unique; } then fuse_init_out
        ByteBuffer out = ByteBuffer.allocate(OUT_HEADER + INIT_OUT).order(ByteOrder.nativeOrder());
        out.putInt(0, OUT_HEADER + INIT_OUT).putInt(4, 0).putLong(8, unique);
        out.putInt(OUT_HEADER, 7).putInt(OUT_HEADER + 4, minor).putInt(OUT_HEADER + 8, readahead)
                .putInt(OUT_HEADER + 12, passthrough ? 1 << 30 : 0) // flags: INIT_EXT, or nothing
                .putInt(OUT_HEADER + 20, 4096) // max_write
                .putInt(OUT_HEADER + 24, 1);   // time_gran: 1 ns
        if (passthrough) {
            out.putInt(OUT_HEADER + 32, 1 << (37 - 32)) // flags2: PASSTHROUGH
                    .putInt(OUT_HEADER + 36, 1);       // max_stack_depth
        }
        channel.write(out);
        if (out.hasRemaining()) {
            throw new AssertionError("write left " + out.remaining() + " bytes of the INIT reply");
        }
        return new Init(n, major, minor, readahead, flags);
    }

    /**
     * A thread answering every request on {@code channel} with ENOENT until the session ends, but
     * ACCESS with ENOSYS, which the kernel takes as "allow, and ask no more" (so chdir works).
     */
    static final class Refuser extends Thread {
        final List<Integer> opcodes = new CopyOnWriteArrayList<>();
        final AtomicReference<Throwable> end = new AtomicReference<>();
        private final FuseChannel channel;

        Refuser(FuseChannel channel) {
            super("init-exchange-refuser");
            this.channel = channel;
            setDaemon(true);
        }

        @Override
        public void run() {
            ByteBuffer in = requestBuffer();
            ByteBuffer out = ByteBuffer.allocateDirect(OUT_HEADER).order(ByteOrder.nativeOrder());
            try {
                while (true) {
                    channel.read(in);
                    int opcode = in.getInt(4);
                    opcodes.add(opcode);
                    if (opcode == FUSE_FORGET || opcode == FUSE_BATCH_FORGET || opcode == FUSE_INTERRUPT) {
                        continue;
                    }
                    out.clear();
                    out.putInt(0, OUT_HEADER).putInt(4, opcode == FUSE_ACCESS ? -ENOSYS : -ENOENT).putLong(8, in.getLong(8));
                    try {
                        channel.write(out);
                    } catch (dev.chibifs.sys.ErrnoException e) {
                        if (e.errno() != ENOENT) { // ENOENT: interrupted meanwhile, nobody waits
                            throw e;
                        }
                    }
                }
            } catch (Throwable t) {
                end.set(t);
            }
        }
    }
}
