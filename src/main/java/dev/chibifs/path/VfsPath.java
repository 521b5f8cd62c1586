package dev.chibifs.path;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * An absolute, validated path in the chibi namespace; the only way to address VFS content.
 *
 * <p>Invariants, checked once at construction so nothing downstream re-validates: starts with
 * {@code /}; no empty segment ({@code //}); no {@code .} or {@code ..} segment; no NUL; no
 * trailing {@code /} except for the root itself.
 */
public final class VfsPath implements Comparable<VfsPath> {

    /** The scheme prefix of a VFS URI: scheme, empty authority, then the absolute path. */
    public static final String URI_PREFIX = "vfs://";

    private static final VfsPath ROOT = new VfsPath("/");

    private final String path;

    private VfsPath(String path) {
        this.path = path;
    }

    /** The root path {@code /}. */
    public static VfsPath root() {
        return ROOT;
    }

    /** Parses and validates {@code path}; throws {@link InvalidVfsPathException} naming the rule broken. */
    public static VfsPath of(String path) {
        if (path == null || path.isEmpty()) {
            throw new InvalidVfsPathException(String.valueOf(path), "a VFS path cannot be empty");
        }
        if (path.equals("/")) {
            return ROOT;
        }
        if (path.charAt(0) != '/') {
            throw new InvalidVfsPathException(path, "a VFS path must start with '/'");
        }
        if (path.indexOf('\0') >= 0) {
            throw new InvalidVfsPathException(path, "a VFS path cannot contain NUL bytes");
        }
        if (path.endsWith("/")) {
            throw new InvalidVfsPathException(path, "a VFS path cannot end with '/' (except the root)");
        }
        int start = 1;
        while (start <= path.length()) {
            int end = path.indexOf('/', start);
            if (end < 0) {
                end = path.length();
            }
            checkSegment(path, start, end);
            start = end + 1;
        }
        return new VfsPath(path);
    }

    /** Whether {@link #of} takes {@code path}: for text from elsewhere whose refusal is an answer, not an error. */
    public static boolean isValid(String path) {
        try {
            of(path);
            return true;
        } catch (InvalidVfsPathException e) {
            return false;
        }
    }

    /** Checks the segment {@code path[start, end)} in place: every request parses a path, and a substring per segment was garbage. */
    private static void checkSegment(String path, int start, int end) {
        int length = end - start;
        if (length == 0) {
            throw new InvalidVfsPathException(path, "a VFS path cannot contain '//'");
        }
        if (length <= 2 && path.charAt(start) == '.' && (length == 1 || path.charAt(start + 1) == '.')) {
            throw new InvalidVfsPathException(path, length == 2
                    ? "a VFS path cannot contain '..'" : "a VFS path cannot contain '.' segments");
        }
    }

    /** True when {@code s} is a VFS URI: {@code vfs:///} followed by the path (exactly three slashes). */
    static boolean isVfsUri(String s) {
        return s != null && s.startsWith("vfs:///") && !s.startsWith("vfs:////");
    }

    /** Parses a {@code vfs:///path} URI; any other form is refused with a message that shows the right one. */
    public static VfsPath fromUri(String uri) {
        if (!isVfsUri(uri)) {
            String hint = uri != null && uri.startsWith(URI_PREFIX)
                    ? " (use three slashes: vfs:///" + uri.substring(URI_PREFIX.length()).replaceFirst("^/+", "") + ")"
                    : " (use vfs:///path, e.g. vfs:///shared/tasks.md)";
            throw new InvalidVfsPathException(String.valueOf(uri), "not a vfs:/// URI" + hint);
        }
        return of(uri.substring(URI_PREFIX.length()));
    }

    /** True for the root {@code /}. */
    public boolean isRoot() {
        return this == ROOT || path.equals("/");
    }

    /** The parent path, or null for the root. */
    public VfsPath parent() {
        if (isRoot()) {
            return null;
        }
        int slash = path.lastIndexOf('/');
        return slash == 0 ? ROOT : new VfsPath(path.substring(0, slash));
    }

    /** The last segment, or null for the root. */
    public String fileName() {
        return isRoot() ? null : path.substring(path.lastIndexOf('/') + 1);
    }

    /** Appends a relative {@code segment} (which may hold several names); absolute or {@code ..} segments are refused. */
    public VfsPath join(String segment) {
        if (segment == null || segment.isEmpty()) {
            throw new InvalidVfsPathException(String.valueOf(segment), "a joined segment cannot be empty");
        }
        if (segment.startsWith("/")) {
            throw new InvalidVfsPathException(segment, "a joined segment must be relative");
        }
        for (String s : segment.split("/", -1)) {
            if (s.equals("..")) {
                throw new InvalidVfsPathException(segment, "a joined segment cannot contain '..'");
            }
        }
        return of(isRoot() ? "/" + segment : path + "/" + segment);
    }

    /** Appends one name that was already read from a directory listing; refuses names containing '/'. */
    public VfsPath child(String name) {
        if (name.indexOf('/') >= 0) {
            throw new InvalidVfsPathException(name, "a file name cannot contain '/'");
        }
        if (name.isEmpty() || name.equals(".") || name.equals("..") || name.indexOf('\0') >= 0) {
            return join(name); // refused there, naming the rule
        }
        // this path is valid and so is one more plain name: no split and no re-validation of the
        // whole path, which every name of every READDIRPLUS reply and every lookup paid
        return new VfsPath(isRoot() ? "/" + name : path + "/" + name);
    }

    /** The names from the root down; empty for the root. */
    public List<String> segments() {
        if (isRoot()) {
            return Collections.emptyList();
        }
        List<String> out = new ArrayList<>();
        for (String s : path.substring(1).split("/")) {
            out.add(s);
        }
        return out;
    }

    /** The number of names below the root. */
    public int depth() {
        if (isRoot()) {
            return 0;
        }
        int n = 0;
        for (int i = 0; i < path.length(); i++) {
            if (path.charAt(i) == '/') {
                n++;
            }
        }
        return n;
    }

    /** True when this path is {@code other} or lies below it. */
    public boolean startsWith(VfsPath other) {
        if (other.isRoot()) {
            return true;
        }
        return path.equals(other.path)
                || (path.startsWith(other.path) && path.charAt(other.path.length()) == '/');
    }

    /**
     * The parent's {@link #relative} path ("" for the root and its children), without making the
     * parent: the store opens the directory of every operation's name by it.
     */
    public String parentRelative() {
        int slash = path.lastIndexOf('/');
        return slash <= 0 ? "" : path.substring(1, slash);
    }

    /** The path relative to the root, without the leading slash ("" for the root). */
    public String relative() {
        return path.substring(1);
    }

    /** The {@code vfs:///...} URI of this path. */
    public String toUri() {
        return URI_PREFIX + path;
    }

    @Override
    public String toString() {
        return path;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof VfsPath && ((VfsPath) o).path.equals(path);
    }

    @Override
    public int hashCode() {
        return path.hashCode();
    }

    @Override
    public int compareTo(VfsPath o) {
        return path.compareTo(o.path);
    }
}
