package dev.chibifs.fuse;

import com.kenai.jffi.MemoryIO;
import jnr.ffi.Pointer;
import jnr.ffi.Runtime;
import jnr.ffi.annotations.Delegate;
import ru.serce.jnrfuse.struct.FileStat;
import ru.serce.jnrfuse.struct.FuseFileInfo;
import ru.serce.jnrfuse.struct.FuseOperations;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * The callbacks behind every file request, taking libfuse's arguments as plain addresses.
 * jnr-fuse's own closures decode each path through a CharsetDecoder (two calls into the JVM and
 * five objects) and wrap each struct pointer in a new object, even for read, write and release,
 * which never look at the path; on a cold CPU that footprint was most of the daemon's user time
 * per request. Here a path is decoded only where it is used, and the per-thread struct views are
 * re-pointed only when libfuse passes a new address (it passes the same stack slot every time).
 */
final class NativeCallbacks {

    private static final MemoryIO MEMORY = MemoryIO.getInstance();
    private static final Runtime RUNTIME = Runtime.getSystemRuntime();
    private static final ThreadLocal<Views> VIEWS = ThreadLocal.withInitial(Views::new);

    // libfuse 2.9's struct fuse_operations, in its order (fuse.h): the slots replaced here
    private static final int GETATTR = 0;
    private static final int OPEN = 14;
    private static final int READ = 15;
    private static final int WRITE = 16;
    private static final int RELEASE = 19;
    private static final int CREATE = 32;
    private static final int FGETATTR = 34;

    /** {@code int (*getattr)(const char *, struct stat *)} */
    public interface Getattr {
        @Delegate
        int getattr(long path, long stat);
    }

    /** {@code int (*fgetattr)(const char *, struct stat *, struct fuse_file_info *)} */
    public interface Fgetattr {
        @Delegate
        int fgetattr(long path, long stat, long fi);
    }

    /** {@code open} and {@code release}: {@code int (*)(const char *, struct fuse_file_info *)} */
    public interface WithFileInfo {
        @Delegate
        int call(long path, long fi);
    }

    /** {@code int (*create)(const char *, mode_t, struct fuse_file_info *)} */
    public interface Create {
        @Delegate
        int create(long path, int mode, long fi);
    }

    /** {@code read} and {@code write}: {@code int (*)(const char *, char *, size_t, off_t, struct fuse_file_info *)} */
    public interface Transfer {
        @Delegate
        int transfer(long path, long buf, long size, long offset, long fi);
    }

    /** Held: libfuse calls these for as long as it is mounted. */
    private final List<Object> closures = new ArrayList<>();

    /** Puts the callbacks into {@code operations}, over what jnr-fuse put there. */
    NativeCallbacks(FuseOperations operations, ChibiFuse fs) {
        Pointer ops = jnr.ffi.Struct.getMemory(operations);
        install(ops, GETATTR, Getattr.class, (Getattr) (path, stat) -> fs.getattr(string(path), stat(stat)));
        install(ops, FGETATTR, Fgetattr.class, (Fgetattr) (path, stat, fi) ->
                fs.fgetattr(string(path), stat(stat), fileInfo(fi)));
        install(ops, OPEN, WithFileInfo.class, (WithFileInfo) (path, fi) -> fs.open(string(path), fileInfo(fi)));
        install(ops, CREATE, Create.class, (Create) (path, mode, fi) ->
                fs.create(string(path), mode & 0xffffffffL, fileInfo(fi)));
        // read, write and release find the file by its handle; the path is only for a log line
        install(ops, READ, Transfer.class, (Transfer) (path, buf, size, offset, fi) ->
                fs.read(path, buf, size, offset, fileInfo(fi)));
        install(ops, WRITE, Transfer.class, (Transfer) (path, buf, size, offset, fi) ->
                fs.write(path, buf, size, offset, fileInfo(fi)));
        install(ops, RELEASE, WithFileInfo.class, (WithFileInfo) (path, fi) -> fs.release(path, fileInfo(fi)));
    }

    private <T> void install(Pointer ops, int slot, Class<T> type, T closure) {
        closures.add(closure);
        Pointer code = RUNTIME.getClosureManager().getClosurePointer(type, closure);
        closures.add(code);
        ops.putAddress((long) slot * RUNTIME.addressSize(), code.address());
    }

    /**
     * The NUL-terminated string at {@code address}, decoded as UTF-8 (bytes that are not UTF-8
     * become U+FFFD, as jnr-fuse's decoder made them); null for a null address.
     */
    static String string(long address) {
        if (address == 0) {
            return null;
        }
        Views v = VIEWS.get();
        byte[] bytes = v.bytes;
        int n = 0;
        for (byte b; (b = MEMORY.getByte(address + n)) != 0; n++) {
            if (n == bytes.length) {
                bytes = v.bytes = java.util.Arrays.copyOf(bytes, 2 * n);
            }
            bytes[n] = b;
        }
        return new String(bytes, 0, n, StandardCharsets.UTF_8);
    }

    private static FileStat stat(long address) {
        return VIEWS.get().stats.at(address);
    }

    private static FuseFileInfo fileInfo(long address) {
        return VIEWS.get().fileInfos.at(address);
    }

    /** One thread's struct views and path buffer. */
    private static final class Views {
        final StructViews<FileStat> stats = new StructViews<>(FileStat::of);
        final StructViews<FuseFileInfo> fileInfos = new StructViews<>(FuseFileInfo::of);
        byte[] bytes = new byte[256];
    }

    /**
     * Two views of one struct type, each kept on the address it last showed: libfuse passes a
     * getattr's struct stat from one of two stack slots (a lookup's entry, a getattr's own buffer).
     */
    private static final class StructViews<S extends jnr.ffi.Struct> {
        private final java.util.function.Function<Pointer, S> view;
        private S first;
        private long firstAddress;
        private S second;
        private long secondAddress;

        StructViews(java.util.function.Function<Pointer, S> view) {
            this.view = view;
        }

        S at(long address) {
            if (address == firstAddress && first != null) {
                return first;
            }
            if (address == secondAddress && second != null) {
                return second;
            }
            // the older view moves on to the new address
            second = first;
            secondAddress = firstAddress;
            first = view.apply(Pointer.wrap(RUNTIME, address));
            firstAddress = address;
            return first;
        }
    }
}
