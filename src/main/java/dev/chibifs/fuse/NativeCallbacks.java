package dev.chibifs.fuse;

import com.kenai.jffi.CallContext;
import com.kenai.jffi.CallingConvention;
import com.kenai.jffi.Invoker;
import com.kenai.jffi.MemoryIO;
import com.kenai.jffi.Type;
import jnr.ffi.Pointer;
import jnr.ffi.Runtime;
import jnr.ffi.annotations.Delegate;
import ru.serce.jnrfuse.struct.FuseFileInfo;
import ru.serce.jnrfuse.struct.FuseOperations;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * The callbacks behind every file request and listing, taking libfuse's arguments as plain
 * addresses. jnr-fuse's own closures decode each path through a CharsetDecoder (two calls into the
 * JVM and five objects) and wrap each struct pointer in a new object, even for read, write and
 * release, which never look at the path. Here a path is decoded only where it is used, and each
 * thread keeps a view of libfuse's structs per address libfuse passes them at.
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
    private static final int OPENDIR = 25;
    private static final int READDIR = 26;
    private static final int CREATE = 32;
    private static final int FGETATTR = 34;

    // one closure type per native signature (every pointer and size as a plain 64-bit value)

    /** getattr, open, release: {@code int (*)(const char *, struct stat * or struct fuse_file_info *)} */
    public interface TwoAddresses {
        @Delegate
        int call(long path, long struct);
    }

    /** fgetattr: {@code int (*)(const char *, struct stat *, struct fuse_file_info *)} */
    public interface ThreeAddresses {
        @Delegate
        int call(long path, long stat, long fi);
    }

    /** create: {@code int (*)(const char *, mode_t, struct fuse_file_info *)} */
    public interface Create {
        @Delegate
        int call(long path, int mode, long fi);
    }

    /**
     * read and write, {@code int (*)(const char *, char *buf, size_t, off_t, struct fuse_file_info *)};
     * readdir, {@code int (*)(const char *, void *buf, fuse_fill_dir_t, off_t, struct fuse_file_info *)}
     */
    public interface FiveWords {
        @Delegate
        int call(long path, long buf, long sizeOrFiller, long offset, long fi);
    }

    /** Held: libfuse calls these for as long as it is mounted. */
    private final List<Object> closures = new ArrayList<>();
    private final Pointer ops;
    private final ChibiFuse fs;

    /** Puts the callbacks into {@code operations}, over what jnr-fuse put there. */
    NativeCallbacks(FuseOperations operations, ChibiFuse fs) {
        Pointer ops = jnr.ffi.Struct.getMemory(operations);
        install(ops, GETATTR, TwoAddresses.class, (TwoAddresses) (path, stat) -> fs.getattr(string(path), stat));
        install(ops, FGETATTR, ThreeAddresses.class, (ThreeAddresses) (path, stat, fi) ->
                fs.fgetattr(string(path), stat, fileInfo(fi)));
        install(ops, OPEN, TwoAddresses.class, (TwoAddresses) (path, fi) -> fs.open(string(path), fileInfo(fi)));
        install(ops, CREATE, Create.class, (Create) (path, mode, fi) ->
                fs.create(string(path), mode & 0xffffffffL, fileInfo(fi)));
        // read, write and release find the file by its handle; the path is only for a log line
        install(ops, READ, FiveWords.class, (FiveWords) (path, buf, size, offset, fi) ->
                fs.read(path, buf, size, offset, fileInfo(fi)));
        install(ops, WRITE, FiveWords.class, (FiveWords) (path, buf, size, offset, fi) ->
                fs.write(path, buf, size, offset, fileInfo(fi)));
        install(ops, RELEASE, TwoAddresses.class, (TwoAddresses) (path, fi) -> fs.release(path, fileInfo(fi)));
        install(ops, READDIR, FiveWords.class, (FiveWords) (path, buf, filler, offset, fi) ->
                fs.readdir(string(path), buf, filler));
        this.ops = ops;
        this.fs = fs;
    }

    /**
     * Puts opendir in too (before mounting), for listings the kernel may keep; only when the store
     * is followed: without it libfuse answers opendir itself, with no call into Java.
     */
    void cacheListings() {
        install(ops, OPENDIR, TwoAddresses.class, (TwoAddresses) (path, fi) -> fs.opendir(string(path)));
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

    private static FuseFileInfo fileInfo(long address) {
        return VIEWS.get().fileInfos.at(address);
    }

    /** This thread's filler, set to hand entries to {@code filler} (libfuse's fill_dir) for {@code buf}. */
    static DirectoryFiller filler(long filler, long buf) {
        DirectoryFiller f = VIEWS.get().filler;
        f.filler = filler;
        f.buf = buf;
        return f;
    }

    /** One thread's struct views, path buffer and directory filler. */
    private static final class Views {
        final StructViews<FuseFileInfo> fileInfos = new StructViews<>(FuseFileInfo::of);
        final DirectoryFiller filler = new DirectoryFiller();
        byte[] bytes = new byte[256];
    }

    /**
     * Calls libfuse's {@code fill_dir} once per entry with plain addresses: jnr-fuse's FuseFillDir
     * marshals a ByteBuffer and a Pointer per call, which made a listing of 2,000 names take 1.6
     * times as long as bindfs's. The name goes into a buffer of the thread's own; the struct stat
     * carries only the type (d_type) and libfuse's "no inode number", as the kernel asks no more.
     */
    static final class DirectoryFiller {
        /** {@code int (*fuse_fill_dir_t)(void *buf, const char *name, const struct stat *stbuf, off_t off)} */
        private static final CallContext FILL_DIR = CallContext.getCallContext(Type.SINT,
                new Type[] {Type.POINTER, Type.POINTER, Type.POINTER, Type.SINT64}, CallingConvention.DEFAULT, false);
        private static final Invoker INVOKER = Invoker.getInstance();
        /** libfuse's "no inode number": the kernel makes one up, as for a null stat. */
        private static final long FUSE_UNKNOWN_INO = 0xffffffffL;

        /** A name is at most 255 bytes (NAME_MAX) plus the NUL. */
        private final ByteBuffer name = ByteBuffer.allocateDirect(1024);
        private final long nameAddress = MEMORY.getDirectBufferAddress(name);
        private final ByteBuffer stat = ByteBuffer.allocateDirect(StatLayout.BYTES);
        private final long statAddress = MEMORY.getDirectBufferAddress(stat);
        private long filler;
        private long buf;

        private DirectoryFiller() {
            StatLayout.INO.put(statAddress, FUSE_UNKNOWN_INO);
        }

        /**
         * Adds {@code entry} with file type {@code type} (S_IFREG, ...; 0 for none); false when
         * libfuse's buffer is full.
         */
        boolean add(String entry, int type) {
            int n = entry.length();
            int i = 0;
            for (char c; i < n && (c = entry.charAt(i)) < 0x80; i++) {
                MEMORY.putByte(nameAddress + i, (byte) c);
            }
            if (i < n) {
                byte[] utf8 = entry.getBytes(StandardCharsets.UTF_8);
                n = Math.min(utf8.length, name.capacity() - 1);
                MEMORY.putByteArray(nameAddress, utf8, 0, n);
            }
            return fill(n, type);
        }

        /**
         * Adds the entry whose name is {@code length} bytes at {@code offset} in {@code name}, as the
         * store holds it. ASCII goes over as it is; anything else goes through {@link #add(String, int)},
         * so a name that is not UTF-8 shows as it always did (U+FFFD for each bad byte).
         */
        boolean add(byte[] name, int offset, int length, int type) {
            for (int i = 0; i < length; i++) {
                if (name[offset + i] < 0) {
                    return add(new String(name, offset, length, StandardCharsets.UTF_8), type);
                }
            }
            MEMORY.putByteArray(nameAddress, name, offset, length);
            return fill(length, type);
        }

        private boolean fill(int nameLength, int type) {
            MEMORY.putByte(nameAddress + nameLength, (byte) 0);
            StatLayout.MODE.put(statAddress, type);
            return (int) INVOKER.invokeL4NoErrno(FILL_DIR, filler, buf, nameAddress, type == 0 ? 0 : statAddress, 0) == 0;
        }
    }

    /**
     * Views of one struct type, each kept on the address it last showed. libfuse passes each
     * callback its structs from a stack slot of the function that decoded the request, so a thread
     * sees the same few addresses over and over (the file info of open, create, read, write,
     * release): a view is made only for an address not seen lately. (A struct stat gets no view:
     * {@link StatLayout} writes it.)
     */
    private static final class StructViews<S extends jnr.ffi.Struct> {
        private final java.util.function.Function<Pointer, S> view;
        private final long[] addresses = new long[8];
        private final List<S> views = new ArrayList<>(8);
        private int next;

        StructViews(java.util.function.Function<Pointer, S> view) {
            this.view = view;
        }

        S at(long address) {
            for (int i = 0; i < views.size(); i++) {
                if (addresses[i] == address) {
                    return views.get(i);
                }
            }
            S made = view.apply(Pointer.wrap(RUNTIME, address));
            if (views.size() < addresses.length) {
                addresses[views.size()] = address;
                views.add(made);
            } else {
                // the oldest view moves on
                addresses[next] = address;
                views.set(next, made);
                next = (next + 1) % addresses.length;
            }
            return made;
        }
    }
}
