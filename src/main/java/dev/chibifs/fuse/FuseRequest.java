package dev.chibifs.fuse;

import dev.chibifs.sys.ErrnoException;
import dev.chibifs.sys.Linux;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;

/**
 * One request as the kernel wrote it: {@code struct fuse_in_header}, then the opcode's own
 * struct and names, read in place from the worker's buffer (no copy). Each worker reuses one
 * instance; nothing here survives the request. Offsets are those of {@code linux/fuse.h}.
 */
final class FuseRequest {

    final ByteBuffer buffer;
    int length;
    int opcode;
    long unique;
    long nodeid;
    private int uid;
    int gid;
    int pid;

    FuseRequest(ByteBuffer buffer) {
        this.buffer = buffer.order(ByteOrder.nativeOrder());
    }

    /** Reads the header of the request now in the buffer; false when it is shorter than one. */
    boolean decode(int length) {
        this.length = length;
        if (length < FuseProtocol.IN_HEADER) {
            return false;
        }
        opcode = buffer.getInt(FuseProtocol.IN_OPCODE);
        unique = buffer.getLong(FuseProtocol.IN_UNIQUE);
        nodeid = buffer.getLong(FuseProtocol.IN_NODEID);
        uid = buffer.getInt(FuseProtocol.IN_UID);
        gid = buffer.getInt(FuseProtocol.IN_GID);
        pid = buffer.getInt(FuseProtocol.IN_PID);
        return true;
    }

    /** The caller's uid, unsigned: the kernel's __u32, which an int shows negative past 2^31. */
    long uid() {
        return Integer.toUnsignedLong(uid);
    }

    // ---- the body: offsets from the end of the header ----

    int int32(int offset) {
        return buffer.getInt(FuseProtocol.IN_HEADER + offset);
    }

    long int64(int offset) {
        return buffer.getLong(FuseProtocol.IN_HEADER + offset);
    }

    /** The body's bytes from {@code offset} to the end of the request, as a view (for WRITE data). */
    ByteBuffer bytes(int offset, int size) {
        int from = FuseProtocol.IN_HEADER + offset;
        return buffer.duplicate().order(buffer.order()).limit(from + size).position(from).slice();
    }

    /** Where the NUL-terminated name at body offset {@code offset} ends (the NUL's body offset). */
    int nameEnd(int offset) {
        int i = FuseProtocol.IN_HEADER + offset;
        while (i < length && buffer.get(i) != 0) {
            i++;
        }
        return i - FuseProtocol.IN_HEADER;
    }

    /** The NUL-terminated name at body offset {@code offset}, as UTF-8. */
    String name(int offset) {
        int end = nameEnd(offset);
        byte[] b = new byte[end - offset];
        buffer.get(FuseProtocol.IN_HEADER + offset, b);
        return new String(b, StandardCharsets.UTF_8);
    }

    /**
     * Where the first name in this request's body starts: after its opcode's struct, whose size is
     * the offset; -1 for an opcode that carries no name.
     */
    int nameOffset() {
        return switch (opcode) {
            case FuseProtocol.LOOKUP, FuseProtocol.UNLINK, FuseProtocol.RMDIR, FuseProtocol.SYMLINK,
                    FuseProtocol.REMOVEXATTR -> 0;
            // fuse_setxattr_in is 8 bytes without FUSE_SETXATTR_EXT, which INIT does not ask for
            case FuseProtocol.MKDIR, FuseProtocol.LINK, FuseProtocol.RENAME, FuseProtocol.GETXATTR,
                    FuseProtocol.SETXATTR -> 8;
            // TMPFILE's name is the kernel's "/" for a dentry no directory holds
            case FuseProtocol.MKNOD, FuseProtocol.CREATE, FuseProtocol.TMPFILE, FuseProtocol.RENAME2 -> 16;
            default -> -1;
        };
    }

    /**
     * The name this request carries: the entry looked up, made or removed (RENAME's old name), or
     * the extended attribute asked for. EILSEQ for one that is not UTF-8 ({@link #exact}).
     */
    String entryName() throws ErrnoException {
        return exact(shownEntryName());
    }

    /** The name following {@link #entryName} (RENAME's new name, SYMLINK's target), as {@link #entryName}. */
    String secondName() throws ErrnoException {
        return exact(shownSecondName());
    }

    /** {@link #entryName} as a trace shows it: never refused, bytes that are not UTF-8 as U+FFFD. */
    String shownEntryName() {
        return name(nameOffset());
    }

    /** {@link #secondName} as a trace shows it. */
    String shownSecondName() {
        return name(nameEnd(nameOffset()) + 1);
    }

    /**
     * Refuses a decoded name holding U+FFFD: the decoder puts one for every byte that is not UTF-8,
     * so the name would reach the store as other bytes than the caller's, and two names as one (an
     * S3 store took "x\xff" and "x\xfe" as one key, the second write over the first). A name that
     * holds U+FFFD itself cannot be told from those, and is refused alike (EILSEQ, as the local
     * store refused them already).
     */
    private static String exact(String decoded) throws ErrnoException {
        if (decoded.indexOf('\uFFFD') >= 0) {
            throw new ErrnoException(Linux.EILSEQ, decoded,
                    "Invalid or incomplete multibyte or wide character: the name is not valid UTF-8");
        }
        return decoded;
    }

    // ---- the structs, by field ----

    /** fuse_init_in: major, minor, max_readahead, flags, flags2 (when the kernel sets INIT_EXT). */
    long initFlags() {
        long flags = int32(12) & 0xffffffffL;
        if ((flags & FuseProtocol.INIT_EXT) != 0 && length >= FuseProtocol.IN_HEADER + 20) {
            flags |= (int32(16) & 0xffffffffL) << 32;
        }
        return flags;
    }

    /** fuse_getattr_in.fh when getattr_flags has GETATTR_FH, else 0. */
    long getattrHandle() {
        return (int32(0) & FuseProtocol.GETATTR_FH) != 0 ? int64(8) : 0;
    }

    /** fuse_forget_in.nlookup. */
    long forgetCount() {
        return int64(0);
    }

    /** The read and write structs, and open/release/fsync/lk/fallocate/lseek, start with fh. */
    long handle() {
        return int64(0);
    }

    long readOffset() {
        return int64(8);
    }

    int readSize() {
        return int32(16);
    }

    /** fuse_write_in.write_flags (FuseProtocol.WRITE_CACHE, WRITE_LOCKOWNER). */
    int writeFlags() {
        return int32(20);
    }

    /** The data of a WRITE, after its 40-byte fuse_write_in. */
    ByteBuffer writeData() {
        return bytes(40, int32(16));
    }

    /** fuse_open_in.flags (OPEN, OPENDIR); fuse_create_in.flags. */
    int openFlags() {
        return int32(0);
    }

    /** fuse_create_in.mode (after flags). */
    int createMode() {
        return int32(4);
    }

    /** fuse_mknod_in.mode (first; rdev follows). */
    int mknodMode() {
        return int32(0);
    }

    /** fuse_release_in.lock_owner, fuse_flush_in.lock_owner. */
    long releaseLockOwner() {
        return int64(16);
    }

    /** fuse_fsync_in.fsync_flags. */
    int fsyncFlags() {
        return int32(8);
    }

    /** fuse_access_in.mask. */
    int accessMask() {
        return int32(0);
    }

    /** fuse_link_in.oldnodeid. */
    long linkSource() {
        return int64(0);
    }

    /** fuse_rename_in.newdir (RENAME) and fuse_rename2_in.newdir (RENAME2). */
    long renameTarget() {
        return int64(0);
    }

    /** fuse_rename2_in.flags. */
    int rename2Flags() {
        return int32(8);
    }

    /** fuse_getxattr_in.size (and fuse_setxattr_in.size, the value's); the name follows. */
    int xattrSize() {
        return int32(0);
    }

    /** fuse_setxattr_in.flags (XATTR_CREATE, XATTR_REPLACE); without FUSE_SETXATTR_EXT the struct is 8 bytes. */
    int setxattrFlags() {
        return int32(4);
    }

    /** SETXATTR's value: {@link #xattrSize} bytes after the NUL of its name. */
    byte[] setxattrValue() {
        int at = nameEnd(nameOffset()) + 1;
        int size = xattrSize();
        // checked before the array is made: a size past the request would read the buffer's stale
        // bytes into the attribute, or allocate up to 2 GiB (the kernel never sends one; EIO)
        if (size < 0 || size > length - FuseProtocol.IN_HEADER - at) {
            throw new IllegalArgumentException("setxattr size " + size + " runs past the request's " + length + " bytes");
        }
        byte[] value = new byte[size];
        bytes(at, size).get(value);
        return value;
    }

    /** fuse_lk_in.owner. */
    long lockOwner() {
        return int64(8);
    }

    long lockStart() {
        return int64(16);
    }

    long lockEnd() {
        return int64(24);
    }

    int lockType() {
        return int32(32);
    }

    int lockPid() {
        return int32(36);
    }

    int lockFlags() {
        return int32(40);
    }

    /** fuse_interrupt_in.unique: the request to interrupt. */
    long interrupted() {
        return int64(0);
    }

    /** fuse_batch_forget_in.count; then count fuse_forget_one {nodeid, nlookup} from body offset 8. */
    int batchCount() {
        return int32(0);
    }

    // fuse_setattr_in

    int setattrValid() {
        return int32(0);
    }

    long setattrHandle() {
        return int64(8);
    }

    long setattrSize() {
        return int64(16);
    }

    long setattrAtime() {
        return int64(32);
    }

    long setattrMtime() {
        return int64(40);
    }

    int setattrAtimeNanos() {
        return int32(56);
    }

    int setattrMtimeNanos() {
        return int32(60);
    }

    int setattrMode() {
        return int32(68);
    }

    int setattrUid() {
        return int32(76);
    }

    int setattrGid() {
        return int32(80);
    }

    // fuse_fallocate_in: fh, offset, length, mode

    long fallocateOffset() {
        return int64(8);
    }

    long fallocateLength() {
        return int64(16);
    }

    int fallocateMode() {
        return int32(24);
    }

    // fuse_copy_file_range_in: fh_in, off_in, nodeid_out, fh_out, off_out, len, flags (the node is the input's)

    long copyOffsetIn() {
        return int64(8);
    }

    long copyHandleOut() {
        return int64(24);
    }

    long copyOffsetOut() {
        return int64(32);
    }

    long copyLength() {
        return int64(40);
    }

    long copyFlags() {
        return int64(48);
    }

    // fuse_lseek_in: fh, offset, whence

    long lseekOffset() {
        return int64(8);
    }

    int lseekWhence() {
        return int32(16);
    }
}
