package dev.chibifs.fuse;

import dev.chibifs.store.FileHandle;
import dev.chibifs.sys.ErrnoException;
import dev.chibifs.sys.Linux;
import dev.chibifs.sys.Syscalls;

import java.io.IOException;
import java.nio.ByteBuffer;

/**
 * READ, WRITE, LSEEK, COPY_FILE_RANGE, FSYNC and FALLOCATE: served through the handle of an open
 * file, whose caller was judged at its open (as on a disk, a descriptor opened for writing needs
 * no permission now). Opens passed through never come here for reads and writes.
 */
final class ReadsAndWrites {

    /**
     * The most one COPY_FILE_RANGE copies: a request holds a worker and cannot be interrupted, so a
     * copy of gigabytes goes in several (the program's copy_file_range loop asks on), each a fraction
     * of a second on a disk.
     */
    private static final long COPY_LIMIT = 64L << 20;

    private final FuseFileSystem fs;

    ReadsAndWrites(FuseFileSystem fs) {
        this.fs = fs;
    }

    /** Reads into the worker's data buffer, which the reply sends after its header without a copy. */
    void read(FuseRequest req, FuseReply out, ByteBuffer data) throws IOException {
        OpenFile f = fs.openFile(req, false);
        data.clear().limit(Math.min(req.readSize(), data.capacity()));
        int n = f.handle().read(data, req.readOffset());
        data.flip().limit(Math.max(n, 0));
        out.data(data);
    }

    void write(FuseRequest req, FuseReply out) throws IOException {
        OpenFile f = fs.openFile(req, true);
        // the page cache's writes (an mmap's pages) come through whichever handle may write, one
        // opened O_APPEND too: they go where the page is, as the kernel's own offsets say
        int written = (req.writeFlags() & FuseProtocol.WRITE_CACHE) != 0
                ? f.handle().writeInPlace(req.writeData(), req.readOffset())
                : f.handle().write(req.writeData(), req.readOffset());
        changedBy(f);
        out.written(written);
    }

    /**
     * SEEK_DATA and SEEK_HOLE (the kernel seeks to the rest itself): where the store's file system
     * says the next data or hole begins, so cp, tar --sparse and grep skip a sparse file's holes
     * instead of reading gigabytes of zeros. A store with no file to ask (memory, S3, views) has
     * data up to the end and a hole there, as Linux says of a file system that keeps none.
     */
    void lseek(FuseRequest req, FuseReply out) throws IOException {
        OpenFile f = fs.openFile(req, false);
        long offset = req.lseekOffset();
        int whence = req.lseekWhence();
        if (whence != Linux.SEEK_DATA && whence != Linux.SEEK_HOLE || offset < 0) {
            throw new ErrnoException(Linux.EINVAL, "lseek", "Invalid argument");
        }
        int fd = f.handle().passthroughDescriptor();
        if (fd >= 0) {
            try {
                out.int64(Syscalls.lseek(fd, offset, whence)); // struct fuse_lseek_out
                return;
            } finally {
                Syscalls.close(fd);
            }
        }
        long size = f.handle().size();
        if (offset >= size) {
            throw new ErrnoException(Linux.ENXIO, "lseek", "No such device or address");
        }
        out.int64(whence == Linux.SEEK_DATA ? offset : size);
    }

    /**
     * copy_file_range(2) from one file open through the mount to another (COPY_FILE_RANGE, or
     * COPY_FILE_RANGE_64 with its 64-bit count): one request for what reads and writes served one
     * by one would take hundreds, inside the store's kernel where both are store files (extents
     * shared on a file system that can), else through the two handles, so between stores too. The
     * output was opened for writing (the policy judged that open); the kernel checked the rest
     * (modes, O_APPEND, overlapping ranges of one file) before asking. A copy may come back short,
     * as the system call's may: its caller asks again from there.
     */
    void copyFileRange(FuseRequest req, FuseReply out, ByteBuffer buffer, boolean wide) throws IOException {
        OpenFile from = fs.openFile(req, false);
        OpenFile to = fs.openFile(req.copyHandleOut(), true);
        if (req.copyFlags() != 0) {
            throw new ErrnoException(Linux.EINVAL, "copy_file_range", "Invalid argument");
        }
        long length = Math.min(req.copyLength(), COPY_LIMIT);
        long copied = copy(from.handle(), req.copyOffsetIn(), to.handle(), req.copyOffsetOut(), length, buffer);
        changedBy(to);
        if (wide) {
            out.int64(copied); // struct fuse_copy_file_range_out
        } else {
            out.written((int) copied);
        }
    }

    private static long copy(FileHandle from, long fromOffset, FileHandle to, long toOffset, long length, ByteBuffer buffer)
            throws IOException {
        int in = -1;
        int out = -1;
        try {
            in = from.passthroughDescriptor();
            out = in < 0 ? -1 : to.passthroughDescriptor();
            if (out >= 0) {
                long n = Syscalls.copyRange(in, fromOffset, out, toOffset, length);
                if (n >= 0) {
                    return n;
                }
            }
        } finally {
            if (in >= 0) {
                Syscalls.close(in);
            }
            if (out >= 0) {
                Syscalls.close(out);
            }
        }
        // no store files to copy between (memory, S3, views; across file systems): through the handles
        long done = 0;
        while (done < length) {
            buffer.clear().limit((int) Math.min(buffer.capacity(), length - done));
            try {
                int n = from.read(buffer, fromOffset + done);
                if (n <= 0) {
                    break;
                }
                to.write(buffer.flip(), toOffset + done);
                done += n;
            } catch (IOException e) {
                if (done == 0) {
                    throw e;
                }
                break; // what was copied is told, as a short write is; the caller's next call meets the error
            }
        }
        if (done > 0) {
            to.copiedHere(from, fromOffset, toOffset, done);
        }
        return done;
    }

    /**
     * A write or allocation through the mount changed {@code f}'s file: the kernel takes its size and
     * times as stale at the reply (fuse_write_update_attr), so it holds none told, and the feed's
     * event for that change is no reason to drop them again (a drop that lands after the stat
     * that follows the write costs a GETATTR more at the next).
     */
    private static void changedBy(OpenFile f) {
        f.node().untold();
    }


    void fsync(FuseRequest req, FuseReply out) throws IOException {
        fs.openFile(req, false).handle().sync((req.fsyncFlags() & FuseProtocol.FSYNC_FDATASYNC) == 0);
    }


    /**
     * fallocate(2) on the store file, for a handle opened for writing (the policy judged the open).
     * A mode the store's file system cannot do is EOPNOTSUPP, per call; never ENOSYS, after which the
     * kernel would send no FALLOCATE for the rest of the mount.
     */
    void fallocate(FuseRequest req, FuseReply out) throws IOException {
        OpenFile f = fs.openFile(req, true);
        f.handle().allocate(req.fallocateMode(), req.fallocateOffset(), req.fallocateLength());
        changedBy(f);
    }
}
