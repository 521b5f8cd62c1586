package dev.chibifs.fuse;

import com.kenai.jffi.MemoryIO;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** The INIT reply as the reply watch leaves it, on a reply laid out as libfuse 2.9 sends it. */
class ReplyWatchTest {

    private static final MemoryIO MEMORY = MemoryIO.getInstance();
    private static final int FUSE_ASYNC_READ = 1;
    private static final int FUSE_BIG_WRITES = 1 << 5;

    // iovec[2] -> fuse_out_header {len, error, unique}, fuse_init_out (libfuse 2.9's 24 bytes)
    private final long iov = MEMORY.allocateMemory(32, true);
    private final long header = MEMORY.allocateMemory(16, true);
    private final long out = MEMORY.allocateMemory(24, true);
    private final long room = MEMORY.allocateMemory(ReplyWatch.INIT_REPLY_BYTES, true);

    private void reply(int error, int flags, long length) {
        reply(error, flags, length, 128 << 10);
    }

    private void reply(int error, int flags, long length, int maxWrite) {
        MEMORY.putAddress(iov, header);
        MEMORY.putLong(iov + 8, 16);
        MEMORY.putAddress(iov + 16, out);
        MEMORY.putLong(iov + 24, length);
        MEMORY.putInt(header, 16 + 24);
        MEMORY.putInt(header + 4, error);
        MEMORY.putLong(header + 8, 1);
        MEMORY.putInt(out, 7);
        MEMORY.putInt(out + 4, 19);
        MEMORY.putInt(out + 12, flags);
        MEMORY.putInt(out + 20, maxWrite);
    }

    @AfterEach
    void free() {
        MEMORY.freeMemory(iov);
        MEMORY.freeMemory(header);
        MEMORY.freeMemory(out);
        MEMORY.freeMemory(room);
    }

    @Test
    void theKernelIsToldWhatLibfuseCannotSayWhereItCanBe() {
        reply(0, FUSE_ASYNC_READ | FUSE_BIG_WRITES, 24);
        assertEquals(iov, ReplyWatch.agree(iov, 0xffff_ffff, room));
        assertEquals(FUSE_ASYNC_READ | FUSE_BIG_WRITES | ReplyWatch.FUSE_HANDLE_KILLPRIV | ReplyWatch.FUSE_PARALLEL_DIROPS,
                MEMORY.getInt(out + 12));
        assertEquals(19, MEMORY.getInt(out + 4), "libfuse's protocol version stays");
    }

    @Test
    void writesOverAHundredAndTwentyEightKibibytesAskForTheirPagesInALongerReply() {
        reply(0, FUSE_BIG_WRITES, 24, 1 << 20);
        long sent = ReplyWatch.agree(iov, 0xffff_ffff, room);
        assertEquals(room, sent, "libfuse's 24 bytes end before max_pages");
        long header = MEMORY.getAddress(sent);
        long init = MEMORY.getAddress(sent + 16);
        assertEquals(16, MEMORY.getLong(sent + 8));
        assertEquals(ReplyWatch.INIT_OUT_WITH_MAX_PAGES, MEMORY.getLong(sent + 24));
        assertEquals(16 + ReplyWatch.INIT_OUT_WITH_MAX_PAGES, MEMORY.getInt(header), "the header's length is the reply's");
        assertEquals(1L, MEMORY.getLong(header + 8), "same request");
        assertEquals(FUSE_BIG_WRITES | ReplyWatch.FUSE_HANDLE_KILLPRIV | ReplyWatch.FUSE_PARALLEL_DIROPS
                | ReplyWatch.FUSE_MAX_PAGES, MEMORY.getInt(init + 12));
        assertEquals(1 << 20, MEMORY.getInt(init + 20), "max_write as libfuse offered it");
        assertEquals(256, MEMORY.getShort(init + 28), "max_pages");
        assertEquals(19, MEMORY.getInt(init + 4));
    }

    @Test
    void aKernelThatCannotReadMaxPagesGetsLibfusesReply() {
        reply(0, FUSE_BIG_WRITES, 24, 1 << 20);
        assertEquals(iov, ReplyWatch.agree(iov, ReplyWatch.FUSE_HANDLE_KILLPRIV, room));
        assertEquals(FUSE_BIG_WRITES | ReplyWatch.FUSE_HANDLE_KILLPRIV, MEMORY.getInt(out + 12));
    }

    @Test
    void nothingIsAddedThatTheKernelDidNotOffer() {
        reply(0, FUSE_BIG_WRITES, 24);
        assertEquals(iov, ReplyWatch.agree(iov, FUSE_ASYNC_READ | FUSE_BIG_WRITES, room));
        assertEquals(FUSE_BIG_WRITES, MEMORY.getInt(out + 12));
    }

    @Test
    void anErrorOrAReplyTooShortToHaveFlagsIsLeftAlone() {
        reply(-71, FUSE_BIG_WRITES, 24);
        assertEquals(iov, ReplyWatch.agree(iov, 0xffff_ffff, room));
        assertEquals(FUSE_BIG_WRITES, MEMORY.getInt(out + 12));
        reply(0, FUSE_BIG_WRITES, 8);
        assertEquals(iov, ReplyWatch.agree(iov, 0xffff_ffff, room));
        assertEquals(FUSE_BIG_WRITES, MEMORY.getInt(out + 12));
    }
}
