package dev.chibifs.fuse;

import dev.chibifs.sys.Errors;
import dev.chibifs.sys.Linux;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.attribute.FileTime;
import java.time.Instant;

/**
 * One reply (or notification) being written: {@code struct fuse_out_header}, then the opcode's
 * reply structs, into a worker's own direct buffer, and sent with one writev. Offsets and sizes
 * are those of {@code linux/fuse.h}; {@link FuseProtocol} has the constants.
 */
final class FuseReply {

    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(FuseReply.class);

    /** Seconds and nanoseconds of a validity, as entry and attribute replies carry them. */
    record Validity(long seconds, int nanos) {
        static final Validity NONE = new Validity(0, 0);

        static Validity of(double seconds) {
            if (seconds <= 0) {
                return NONE;
            }
            long whole = (long) seconds;
            return new Validity(whole, (int) Math.round((seconds - whole) * 1e9));
        }

        long nanosTotal() {
            return seconds * 1_000_000_000L + nanos;
        }

        /** This validity, or {@code most} nanoseconds where that is shorter. */
        Validity atMost(long most) {
            if (most >= nanosTotal()) {
                return this;
            }
            return most <= 0 ? NONE : new Validity(most / 1_000_000_000L, (int) (most % 1_000_000_000L));
        }
    }

    /** The attributes of one node, as a {@code struct fuse_attr} carries them. */
    record Attributes(long ino, long size, long blocks, long atime, int atimeNanos, long mtime, int mtimeNanos,
                      long ctime, int ctimeNanos, int mode, int nlink, int uid, int gid, int rdev, int blksize) {
    }

    final ByteBuffer buffer;
    /** The node an entry reply counts a lookup of, taken back by the session if the reply is not delivered. */
    NodeTable.Node rememberedNode;
    /** Set by {@link #negativeEntry}. */
    private boolean negative;
    /** Likewise, the nodes of a READDIRPLUS reply's entries. */
    final java.util.List<NodeTable.Node> plusNodes = new java.util.ArrayList<>();
    /** Likewise, the handle an OPEN, CREATE or OPENDIR reply gives (0: none), released if it is not delivered. */
    long openedHandle;
    /** A second part sent after the buffer (READ data), or null. */
    private ByteBuffer data;
    private long unique;
    private int error;

    FuseReply(int capacity) {
        this.buffer = ByteBuffer.allocateDirect(capacity).order(ByteOrder.nativeOrder());
    }

    /** The most body this reply can hold. */
    int bodyCapacity() {
        return buffer.capacity() - FuseProtocol.OUT_HEADER;
    }

    /** Starts the reply to request {@code unique}: the body follows the header. */
    FuseReply begin(long unique) {
        this.unique = unique;
        this.error = 0;
        this.data = null;
        this.rememberedNode = null;
        this.negative = false;
        this.openedHandle = 0;
        plusNodes.clear();
        buffer.clear().position(FuseProtocol.OUT_HEADER);
        return this;
    }

    /** Whether the reply is a negative entry: a success on the wire, ENOENT to the process that looked. */
    boolean isNegative() {
        return negative;
    }

    /** Starts a notification: unique 0, the code in the error field; each notice's writer calls it with its own code. */
    private FuseReply notification(int code) {
        begin(0);
        this.error = code;
        return this;
    }

    /** Makes the reply an error: a header alone, with {@code -errno}. */
    FuseReply error(int errno) {
        buffer.position(FuseProtocol.OUT_HEADER);
        this.error = -Math.abs(errno);
        this.data = null;
        return this;
    }

    /** Appends {@code bytes} after the body as a second iovec (READ data, sent without a copy). */
    FuseReply data(ByteBuffer bytes) {
        this.data = bytes;
        return this;
    }

    boolean isError() {
        return error < 0;
    }

    int errno() {
        return -error;
    }

    /** Finishes the header and sends the reply in one write. */
    void send(FuseChannel channel) throws java.io.IOException {
        finishHeader();
        if (data != null) {
            channel.write(buffer, data);
        } else {
            channel.write(buffer);
        }
    }

    /** Finishes the header and returns a copy of the message, to be written later (a notification: no data part). */
    byte[] finish() {
        finishHeader();
        byte[] bytes = new byte[buffer.remaining()];
        buffer.get(bytes);
        return bytes;
    }

    private void finishHeader() {
        int body = buffer.position();
        int total = body + (data != null ? data.remaining() : 0);
        buffer.putInt(0, total).putInt(4, error).putLong(8, unique);
        buffer.flip();
    }

    /**
     * Sends a notification, which nobody waits for: one the kernel refuses is logged, not thrown,
     * and ENOENT (the kernel holds that node or name no more, so nothing is left to invalidate)
     * not even logged.
     */
    void sendNotice(FuseChannel channel) {
        try {
            send(channel);
        } catch (java.io.IOException e) {
            notDelivered(e);
        }
    }

    /**
     * A notification the kernel refused: logged, but not ENOENT (the kernel holds that node or name
     * no more, so nothing was left to invalidate).
     */
    static void notDelivered(Exception e) {
        if (Errors.errno(e) != Linux.ENOENT) {
            LOG.debug("notification not delivered: {}", e.toString());
        }
    }

    /** Room left in the body, for listings. */
    int remaining() {
        return buffer.remaining();
    }

    // ---- structs ----

    FuseReply int32(int v) {
        buffer.putInt(v);
        return this;
    }

    FuseReply int64(long v) {
        buffer.putLong(v);
        return this;
    }

    /** struct fuse_attr. */
    FuseReply attr(Attributes a) {
        buffer.putLong(a.ino()).putLong(a.size()).putLong(a.blocks())
                .putLong(a.atime()).putLong(a.mtime()).putLong(a.ctime())
                .putInt(a.atimeNanos()).putInt(a.mtimeNanos()).putInt(a.ctimeNanos())
                .putInt(a.mode()).putInt(a.nlink()).putInt(a.uid()).putInt(a.gid()).putInt(a.rdev())
                .putInt(a.blksize()).putInt(0);
        return this;
    }

    /** struct fuse_entry_out: a name's node, how long the kernel may keep the name and the attributes. */
    FuseReply entry(long nodeid, Validity entry, Validity attr, Attributes a) {
        buffer.putLong(nodeid).putLong(0) // generation: node ids are never reused while the mount lives
                .putLong(entry.seconds()).putLong(attr.seconds())
                .putInt(entry.nanos()).putInt(attr.nanos());
        return attr(a);
    }

    /** A negative entry (node id 0): the name is missing, and the kernel may remember that for {@code entry}. */
    FuseReply negativeEntry(Validity entry) {
        negative = true;
        buffer.putLong(0).putLong(0).putLong(entry.seconds()).putLong(0).putInt(entry.nanos()).putInt(0);
        for (int i = 0; i < FuseProtocol.ATTR; i += 8) {
            buffer.putLong(0);
        }
        return this;
    }

    /** struct fuse_attr_out. */
    FuseReply attrOut(Validity attr, Attributes a) {
        buffer.putLong(attr.seconds()).putInt(attr.nanos()).putInt(0);
        return attr(a);
    }

    /**
     * struct fuse_statx_out (7.39): the attributes in struct fuse_statx's layout, and the birth
     * time where the store tells it ({@code born} null: not in the mask). No device files here:
     * rdev and the attributes words are 0; dev is the kernel's to fill.
     */
    FuseReply statxOut(Validity attr, Attributes a, FileTime born) {
        buffer.putLong(attr.seconds()).putInt(attr.nanos()).putInt(0).putLong(0).putLong(0);
        buffer.putInt(Linux.STATX_BASIC_STATS | (born != null ? Linux.STATX_BTIME : 0)).putInt(a.blksize()).putLong(0)
                .putInt(a.nlink()).putInt(a.uid()).putInt(a.gid()).putShort((short) a.mode()).putShort((short) 0)
                .putLong(a.ino()).putLong(a.size()).putLong(a.blocks()).putLong(0);
        statxTime(a.atime(), a.atimeNanos());
        if (born != null) {
            Instant b = born.toInstant();
            statxTime(b.getEpochSecond(), b.getNano());
        } else {
            statxTime(0, 0);
        }
        statxTime(a.ctime(), a.ctimeNanos());
        statxTime(a.mtime(), a.mtimeNanos());
        buffer.putInt(0).putInt(0).putInt(0).putInt(0);
        for (int i = 0; i < 14; i++) {
            buffer.putLong(0);
        }
        return this;
    }

    /** struct fuse_sx_time. */
    private void statxTime(long seconds, int nanos) {
        buffer.putLong(seconds).putInt(nanos).putInt(0);
    }

    /** struct fuse_open_out. */
    FuseReply open(long fh, int openFlags, int backingId) {
        openedHandle = fh;
        buffer.putLong(fh).putInt(openFlags).putInt(backingId);
        return this;
    }

    /** struct fuse_write_out. */
    FuseReply written(int size) {
        buffer.putInt(size).putInt(0);
        return this;
    }

    /** struct fuse_statfs_out (struct fuse_kstatfs). */
    FuseReply statfs(long blocks, long bfree, long bavail, long files, long ffree, int bsize, int namelen, int frsize) {
        buffer.putLong(blocks).putLong(bfree).putLong(bavail).putLong(files).putLong(ffree)
                .putInt(bsize).putInt(namelen).putInt(frsize).putInt(0);
        for (int i = 0; i < 6; i++) {
            buffer.putInt(0);
        }
        return this;
    }

    /** struct fuse_lk_out (struct fuse_file_lock). */
    FuseReply lock(long start, long end, int type, int pid) {
        buffer.putLong(start).putLong(end).putInt(type).putInt(pid);
        return this;
    }

    /**
     * One struct fuse_dirent (name padded to 8 bytes); false, writing nothing, when it does not fit
     * in {@code room} bytes of body.
     */
    boolean dirent(long ino, long offset, int type, byte[] name, int nameOffset, int nameLength, int room) {
        int size = align8(FuseProtocol.DIRENT + nameLength);
        if (buffer.position() - FuseProtocol.OUT_HEADER + size > room) {
            return false;
        }
        putDirent(ino, offset, type, name, nameOffset, nameLength);
        return true;
    }

    /** Whether a READDIRPLUS entry with a name of {@code nameLength} bytes still fits in {@code room}. */
    boolean fitsPlus(int nameLength, int room) {
        return buffer.position() - FuseProtocol.OUT_HEADER + align8(FuseProtocol.DIRENTPLUS + nameLength) <= room;
    }

    /** One struct fuse_direntplus: an entry (as {@link #entry}) and a dirent; call {@link #fitsPlus} first. */
    void direntPlus(long nodeid, Validity entry, Validity attr, Attributes a, long offset, int type,
                    byte[] name, int nameOffset, int nameLength) {
        entry(nodeid, entry, attr, a);
        putDirent(a.ino(), offset, type, name, nameOffset, nameLength);
    }

    /** A READDIRPLUS entry without a node (a name the kernel must look up itself): node id 0, no attributes. */
    void direntPlusBare(long ino, long offset, int type, byte[] name, int nameOffset, int nameLength) {
        for (int i = 0; i < FuseProtocol.ENTRY_OUT; i += 8) {
            buffer.putLong(0);
        }
        putDirent(ino, offset, type, name, nameOffset, nameLength);
    }

    private void putDirent(long ino, long offset, int type, byte[] name, int nameOffset, int nameLength) {
        buffer.putLong(ino).putLong(offset).putInt(nameLength).putInt(type).put(name, nameOffset, nameLength);
        int pad = align8(nameLength) - nameLength;
        for (int i = 0; i < pad; i++) {
            buffer.put((byte) 0);
        }
    }

    static int align8(int n) {
        return (n + 7) & ~7;
    }

    /** Raw bytes (READLINK's target, GETXATTR's value). */
    FuseReply bytes(byte[] b) {
        buffer.put(b);
        return this;
    }

    /** struct fuse_notify_inval_entry_out and the name: the kernel forgets (or, EXPIRE_ONLY, stales) one name. */
    FuseReply invalEntry(long parent, String name, int flags) {
        notification(FuseProtocol.NOTIFY_INVAL_ENTRY);
        byte[] n = name.getBytes(StandardCharsets.UTF_8);
        buffer.putLong(parent).putInt(n.length).putInt(flags).put(n).put((byte) 0);
        return this;
    }

    /** struct fuse_notify_inval_inode_out: attributes (and pages from {@code offset}; -1 for none) of a node. */
    FuseReply invalInode(long nodeid, long offset, long length) {
        notification(FuseProtocol.NOTIFY_INVAL_INODE);
        buffer.putLong(nodeid).putLong(offset).putLong(length);
        return this;
    }

    /** struct fuse_notify_store_out: {@code size} bytes of a node's content from {@code offset}, given as {@link #data}, for its page cache. */
    FuseReply store(long nodeid, long offset, int size) {
        notification(FuseProtocol.NOTIFY_STORE);
        buffer.putLong(nodeid).putLong(offset).putInt(size).putInt(0);
        return this;
    }

    /** struct fuse_init_out, as far as protocol 7.40 has it. */
    FuseReply init(int minor, int maxReadahead, long flags, int maxBackground, int congestionThreshold,
                   int maxWrite, int maxPages, int maxStackDepth) {
        buffer.putInt(FuseProtocol.MAJOR).putInt(minor).putInt(maxReadahead).putInt((int) flags)
                .putShort((short) maxBackground).putShort((short) congestionThreshold)
                .putInt(maxWrite).putInt(1) // time_gran: nanoseconds
                .putShort((short) maxPages).putShort((short) 0) // map_alignment: DAX only
                .putInt((int) (flags >>> 32)).putInt(maxStackDepth);
        for (int i = 0; i < 6; i++) {
            buffer.putInt(0);
        }
        return this;
    }
}
