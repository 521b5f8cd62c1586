package dev.chibifs.fuse;

import dev.chibifs.path.VfsPath;
import dev.chibifs.policy.Caller;
import dev.chibifs.router.Router;
import dev.chibifs.store.FileHandle;
import dev.chibifs.store.XattrMode;
import dev.chibifs.sys.ErrnoException;
import dev.chibifs.sys.Linux;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.NoSuchFileException;

/**
 * GETXATTR, LISTXATTR, SETXATTR and REMOVEXATTR: user.* names, kept by the store; a file's ETag
 * besides, read-only. The kernel sends them by node, for a call by name and one through a
 * descriptor alike, so each reaches the node's file as {@link FuseFileSystem} finds it.
 */
final class ExtendedAttributes {

    /**
     * The attribute every file has: its ETag (the SHA-256 of its content), as {@code chibifs info}
     * shows it. Read by name, never listed, as CephFS's virtual attributes are: a copy made with its
     * attributes (`cp -a`, `rsync -X`, `tar --xattrs`) would else carry a hash that no longer says
     * anything once the copy is edited, and fail on a file system without user attributes.
     */
    static final String ETAG_XATTR = "user.chibi.etag";
    /** The one namespace of extended attributes the mount has. */
    private static final String USER_XATTR_PREFIX = "user.";

    private final FuseFileSystem fs;
    private final Router router;

    ExtendedAttributes(FuseFileSystem fs) {
        this.fs = fs;
        this.router = fs.router();
    }

    /**
     * getxattr(2): a user.* attribute the store keeps, or {@value #ETAG_XATTR} of a file. Other
     * namespaces (security.*, system.*, trusted.*) are not supported at all: EOPNOTSUPP, as on a
     * file system without them. That answer is what lets programs stop asking: `ls -l` asks
     * security.selinux and system.posix_acl_access of every file until one says ENOTSUP, then no
     * more on that device (coreutils' getfilecon_cache and file_has_acl_cache), so a listing of
     * 100,000 files sends two GETXATTR, not 200,000. The kernel's own security.capability check
     * before a write takes any error as "no capabilities".
     */
    void getxattr(FuseRequest req, FuseReply out) throws IOException {
        NodeTable.Node n = fs.node(req);
        String name = req.entryName();
        if (!name.startsWith(USER_XATTR_PREFIX)) {
            // answered, not thrown: the kernel asks security.capability before the first write to
            // each file, and filling in an exception's stack was most of that request's time
            out.error(Linux.EOPNOTSUPP);
        } else if (!ETAG_XATTR.equals(name)) {
            Caller caller = fs.caller(req);
            xattrValue(req.xattrSize(), ofOwnFile(req, n, fs.path(n), at -> router.xattr(caller, at, name),
                    handle -> handle.xattr(name)), out);
        } else if (n.directory) {
            out.error(Linux.ENODATA);
        } else {
            // an open file's hash is not worked out: ESTALE where no name reaches it
            String etag = ofOwnFile(req, n, fs.path(n), at -> router.etag(null, at), handle -> null);
            xattrValue(req.xattrSize(), etag.getBytes(StandardCharsets.US_ASCII), out);
        }
    }

    /** listxattr(2): the user.* attributes the store keeps ({@value #ETAG_XATTR} is not listed). */
    void listxattr(FuseRequest req, FuseReply out) throws IOException {
        NodeTable.Node n = fs.node(req);
        ByteArrayOutputStream names = new ByteArrayOutputStream();
        Caller caller = fs.caller(req);
        for (String name : ofOwnFile(req, n, fs.path(n), at -> router.xattrNames(caller, at), FileHandle::xattrNames)) {
            // the store file's own labels (security.selinux, ...) are not the mount's to show
            if (name.startsWith(USER_XATTR_PREFIX) && !ETAG_XATTR.equals(name)) {
                names.writeBytes(name.getBytes(StandardCharsets.UTF_8));
                names.write(0);
            }
        }
        xattrValue(req.xattrSize(), names.toByteArray(), out);
    }

    /** A size probe (size 0) gets the length; a buffer too small ERANGE; else the bytes. */
    private static void xattrValue(int size, byte[] value, FuseReply out) throws IOException {
        if (size == 0) {
            out.int32(value.length).int32(0);
        } else if (size < value.length) {
            throw new ErrnoException(Linux.ERANGE, "xattr", "Numerical result out of range");
        } else {
            out.bytes(value);
        }
    }

    /**
     * setxattr(2) of a user.* name, kept by the store where the caller may write. The ETag follows
     * the content, so setting it succeeds and changes nothing, whatever the value: a file copied out
     * with its attributes before the ETag went unlisted carries the one it had then, and `rsync -aX`
     * of it back after an edit sets that stale value on a copy whose content has another (it failed
     * the whole transfer, exit 23, when refused). Other namespaces are not supported.
     */
    void setxattr(FuseRequest req, FuseReply out) throws IOException {
        NodeTable.Node n = fs.node(req);
        VfsPath p = fs.path(n);
        Caller caller = fs.caller(req);
        router.checkWrite(caller, p);
        String name = req.entryName();
        int flags = req.setxattrFlags();
        if (ETAG_XATTR.equals(name) && !n.directory) {
            if ((flags & Linux.XATTR_CREATE) != 0) {
                throw new FileAlreadyExistsException(p.toString(), null, ETAG_XATTR + " exists");
            }
            return;
        }
        if (!name.startsWith(USER_XATTR_PREFIX) || ETAG_XATTR.equals(name)) {
            throw new ErrnoException(Linux.EOPNOTSUPP, p.toString(), "Operation not supported");
        }
        XattrMode mode = switch (flags & (Linux.XATTR_CREATE | Linux.XATTR_REPLACE)) {
            case 0 -> XattrMode.SET;
            case Linux.XATTR_CREATE -> XattrMode.CREATE;
            case Linux.XATTR_REPLACE -> XattrMode.REPLACE;
            default -> throw new ErrnoException(Linux.EINVAL, p.toString(), "Invalid argument: XATTR_CREATE and XATTR_REPLACE at once");
        };
        byte[] value = req.setxattrValue();
        ofOwnFile(req, n, p, at -> {
            router.setXattr(caller, at, name, value, mode);
            return at;
        }, handle -> {
            router.checkWrite(caller, fs.judgedAt(p, handle));
            handle.setXattr(name, value, mode);
            return p;
        });
    }

    /**
     * removexattr(2) of a user.* name the store keeps, where the caller may write. Removing the
     * ETag succeeds and changes nothing (it is the content's, and shows again at once), as
     * setting it does. Other namespaces are not supported, as for getxattr.
     */
    void removexattr(FuseRequest req, FuseReply out) throws IOException {
        NodeTable.Node n = fs.node(req);
        VfsPath p = fs.path(n);
        Caller caller = fs.caller(req);
        router.checkWrite(caller, p);
        String name = req.entryName();
        if (!name.startsWith(USER_XATTR_PREFIX)) {
            out.error(Linux.EOPNOTSUPP);
        } else if (ETAG_XATTR.equals(name)) {
            if (n.directory) {
                out.error(Linux.ENODATA);
            }
        } else {
            ofOwnFile(req, n, p, at -> {
                router.removeXattr(caller, at, name);
                return at;
            }, handle -> {
                router.checkWrite(caller, fs.judgedAt(p, handle));
                handle.removeXattr(name);
                return p;
            });
        }
    }

    /** What is done with a name that reaches a node's file; see {@link #ofOwnFile}. */
    private interface PathCall<T> {
        T apply(VfsPath at) throws IOException;
    }

    /**
     * {@code byName} with {@code p}, node {@code n}'s path, or another name, where one reaches the
     * node's file; else {@code byHandle} through an open file of it (any, where its every name went
     * through this mount; else where the caller holds a descriptor of it: see
     * {@link FuseFileSystem#throughOwnOpenFile}), null from it being no answer. GETXATTR, SETXATTR, LISTXATTR and
     * REMOVEXATTR carry the node alone, for getxattr(2) by name and fgetxattr(2) of a descriptor
     * alike: by the path only, an fsetxattr of a file replaced since its open set the attribute on
     * the new file now named so. None: ENOENT where this mount removed it (a disk's unlinked file
     * not open), else ESTALE, and a call by name looks the name up again.
     */
    private <T> T ofOwnFile(FuseRequest req, NodeTable.Node n, VfsPath p, PathCall<T> byName, FuseFileSystem.HandleCall<T> byHandle)
            throws IOException {
        VfsPath at = fs.reaching(n, p);
        if (at != null) {
            return byName.apply(at);
        }
        T done = n.removed ? fs.throughAnOpenFile(n, byHandle) : fs.throughOwnOpenFile(req, n, byHandle);
        if (done != null) {
            return done;
        }
        if (n.removed) {
            throw new NoSuchFileException(p.toString());
        }
        throw new ErrnoException(Linux.ESTALE, p.toString(), "Stale file handle");
    }
}
