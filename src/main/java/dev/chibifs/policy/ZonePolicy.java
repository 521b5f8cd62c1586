package dev.chibifs.policy;

import dev.chibifs.path.VfsPath;

/**
 * The zone policy, as a pure function of caller and path: path is policy, and nothing else
 * (modes, ACLs, owners) changes the answer. Read is always allowed.
 */
public final class ZonePolicy {

    private ZonePolicy() {
    }

    /** Every caller reads every path. */
    public static boolean mayRead(Caller caller, VfsPath path) {
        return true;
    }

    /**
     * Whether {@code caller} may create, modify, or set attributes of {@code path}: SYSTEM
     * everywhere; a context in {@code /shared/**} and its own {@code /home/<ctx>/**}; a guest
     * nowhere.
     */
    public static boolean mayWrite(Caller caller, VfsPath path) {
        switch (caller.kind()) {
            case SYSTEM:
                return true;
            case GUEST:
                return false;
            default:
                Zone zone = Zone.of(path);
                return zone.kind() == Zone.Kind.SHARED
                        || (zone.kind() == Zone.Kind.HOME && zone.owner().equals(caller.name()));
        }
    }

    /**
     * Whether {@code caller} may remove {@code path} or rename it away: write permission, and the
     * zone roots ({@code /shared}, {@code /home}, {@code /home/<ctx>}, {@code /sys}) stay put for
     * everyone but SYSTEM.
     */
    public static boolean mayRemove(Caller caller, VfsPath path) {
        return caller.isSystem() || (mayWrite(caller, path) && !isZoneRoot(path));
    }

    /** True for {@code /}, {@code /shared}, {@code /home}, {@code /home/<ctx>} and {@code /sys}. */
    public static boolean isZoneRoot(VfsPath path) {
        int depth = path.depth();
        if (depth == 0) {
            return true;
        }
        String p = path.toString();
        if (depth == 1) {
            return p.equals("/shared") || p.equals("/home") || p.equals("/sys");
        }
        return depth == 2 && p.startsWith("/home/");
    }

    /**
     * The root of the zone {@code path} is in: the directory below which one write rule holds for
     * everything ({@code /shared}, {@code /home/<ctx>}, {@code /sys}), and {@code /} for the rest
     * (SYSTEM's alone to write). {@link SymlinkRule} keeps a link's target inside it. A zone added
     * here is a zone links respect; every kind must be named, so a new one cannot fall to {@code /}
     * by accident (that would let its links reach the whole store).
     */
    public static VfsPath zoneRoot(VfsPath path) {
        Zone zone = Zone.of(path);
        return switch (zone.kind()) {
            case SHARED -> SHARED_ROOT;
            case HOME -> VfsPath.root().child("home").child(zone.owner());
            case SYS -> SYS_ROOT;
            case OTHER -> VfsPath.root();
        };
    }

    private static final VfsPath SHARED_ROOT = VfsPath.of("/shared");
    private static final VfsPath SYS_ROOT = VfsPath.of("/sys");

    /**
     * Whether a hard link from {@code existing} to {@code newName} is allowed: both names must be
     * writable and in the same zone, so a link never gives a file a second, writable name in a
     * zone where the caller could not write it.
     */
    public static boolean mayLink(Caller caller, VfsPath existing, VfsPath newName) {
        return mayWrite(caller, existing)
                && mayWrite(caller, newName)
                && Zone.of(existing).equals(Zone.of(newName));
    }

    /** The message shown for a denied write: the caller, the path, and where the caller may write. */
    public static String denial(Caller caller, VfsPath path) {
        switch (caller.kind()) {
            case GUEST:
                return "read-only caller cannot write to '" + path + "' (no context is mapped to this user)";
            case SYSTEM:
                return "SYSTEM cannot change '" + path + "'";
            default:
                if (mayWrite(caller, path) && isZoneRoot(path)) {
                    return "context '" + caller.name() + "' cannot remove or rename the zone root '" + path + "'";
                }
                return "context '" + caller.name() + "' cannot write to '" + path
                        + "' (writable zones: /shared/, /home/" + caller.name() + "/)";
        }
    }
}
