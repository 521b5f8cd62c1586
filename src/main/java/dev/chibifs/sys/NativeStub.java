package dev.chibifs.sys;

import com.kenai.jffi.MemoryIO;
import com.kenai.jffi.Version;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;

/**
 * jffi's native stub (the library every jnr-ffi call goes through), unpacked and loaded so that
 * the process's umask cannot keep it from loading. jffi unpacks it itself with
 * File.createTempFile, which makes the file 0600 less the umask, then opens it again to write: at
 * a umask that takes the owner's write bit (222, 277, 377) that second open fails for every user
 * but root, and every command, --version too, failed before it began. Here the file is written
 * through the descriptor that creates it and its mode set after, which no umask touches; once
 * loaded it is removed, as jffi removes its own.
 */
public final class NativeStub {

    /** Where jffi looks for the stub before unpacking one (a directory, or its platform's subdirectory). */
    static final String BOOT_PATH = "jffi.boot.library.path";

    private NativeStub() {
    }

    /**
     * Loads the stub, unpacked into a directory of its own under java.io.tmpdir. A user who named
     * a directory of their own ({@value #BOOT_PATH}) keeps it. Where the unpacked stub cannot be
     * loaded (java.io.tmpdir mounted noexec) jffi goes on to its own ways, the working directory
     * among them; only when they fail too does this throw, one line naming the file and why.
     */
    public static void load() throws IOException {
        IOException unpacking = null;
        Path dir = null;
        if (System.getProperty(BOOT_PATH) == null) {
            try {
                dir = unpack();
                System.setProperty(BOOT_PATH, dir.toString());
            } catch (IOException e) {
                unpacking = e;
            }
        }
        try {
            MemoryIO.getInstance();
        } catch (LinkageError e) {
            if (unpacking != null) {
                throw unpacking;
            }
            String why = String.valueOf(e.getMessage()).strip().lines().findFirst().orElse(e.toString());
            throw new IOException("cannot load jffi's native stub" + (dir == null ? "" : " from " + dir) + ": " + why, e);
        } finally {
            if (dir != null) {
                System.clearProperty(BOOT_PATH);
                removeQuietly(dir);
            }
        }
    }

    /** The stub, copied from the jar into a new directory readable and writable by this user alone; returns the directory. */
    static Path unpack() throws IOException {
        String name = System.mapLibraryName("jffi-" + Version.MAJOR + "." + Version.MINOR);
        String resource = "jni/" + cpu(System.getProperty("os.arch")) + "-Linux/" + name;
        Path dir = null;
        try {
            dir = Files.createTempDirectory("chibifs-jffi");
            Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx------"));
            Path lib = dir.resolve(name);
            try (InputStream in = NativeStub.class.getClassLoader().getResourceAsStream(resource)) {
                if (in == null) {
                    throw new IOException("the jar has no " + resource);
                }
                Files.copy(in, lib);
            }
            Files.setPosixFilePermissions(lib, PosixFilePermissions.fromString("r-x------"));
            return dir;
        } catch (IOException e) {
            if (dir != null) {
                removeQuietly(dir);
            }
            throw new IOException("cannot unpack jffi's native stub into "
                    + (dir != null ? dir : System.getProperty("java.io.tmpdir")) + ": " + reason(e)
                    + " (CHIBIFS_JAVA_OPTS=-Djava.io.tmpdir=DIR names another directory)", e);
        }
    }

    /**
     * jffi's name for the processor {@code osArch} names, as its jar's directories spell it. Not
     * jffi's own (StubLoader.getPlatformName, Platform.getName): they load the stub as they start,
     * before this has unpacked it. A name this gets wrong finds nothing in the jar, and jffi then
     * unpacks the stub its own way.
     */
    static String cpu(String osArch) {
        return switch (osArch) {
            case "amd64" -> "x86_64";
            case "x86", "i486", "i586", "i686", "i86pc" -> "i386";
            case "ppc64" -> java.nio.ByteOrder.nativeOrder() == java.nio.ByteOrder.LITTLE_ENDIAN ? "ppc64le" : "ppc64";
            default -> osArch;
        };
    }

    /** Why, in words: not {@link Errors#describe}, whose strerror needs the stub. */
    private static String reason(IOException e) {
        if (e instanceof AccessDeniedException) {
            return "Permission denied";
        }
        if (e instanceof java.nio.file.NoSuchFileException) {
            return "No such file or directory";
        }
        if (e instanceof FileSystemException f) {
            return f.getReason() != null ? f.getReason() : f.getClass().getSimpleName();
        }
        return e.getMessage();
    }

    private static void removeQuietly(Path dir) {
        try (var entries = Files.list(dir)) {
            for (Path p : entries.toList()) {
                Files.deleteIfExists(p);
            }
            Files.deleteIfExists(dir);
        } catch (IOException leftBehind) {
            // a few hundred KiB in java.io.tmpdir, which the system's tmp cleaning takes
        }
    }
}
