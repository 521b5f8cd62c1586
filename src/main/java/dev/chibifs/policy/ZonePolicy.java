package dev.chibifs.policy;

import dev.chibifs.path.VfsPath;

/**
 * The zone policy of chibi 0.10, as a pure function of caller, path and flock membership: path
 * is policy, and nothing else (modes, ACLs, owners) changes the answer. Read is always allowed.
 *
 * <p>The write rule, in chibi's order: {@code /tools/sys} is nobody's, not even SYSTEM's; SYSTEM
 * writes everything else; a context writes {@code /shared}, its own {@code /home/<ctx>},
 * {@code /site}, {@code /flocks/<name>} of a flock it belongs to (never
 * {@code /flocks/registry.json}), {@code /tools/shared}, its own {@code /tools/home/<ctx>} and
 * {@code /tools/flocks/<name>} of a flock it belongs to; a guest writes nothing.
 */
public final class ZonePolicy {

    private ZonePolicy() {
    }

    /** Whether {@code caller} may create, modify, remove or set attributes of {@code path}. */
    public static boolean mayWrite(Caller caller, VfsPath path, Membership members) {
        Zone zone = Zone.of(path);
        if (zone.kind() == Zone.Kind.TOOLS_SYS) {
            return false;
        }
        switch (caller.kind()) {
            case SYSTEM:
                return true;
            case GUEST:
                return false;
            default:
                break;
        }
        switch (zone.kind()) {
            case SHARED:
            case SITE:
            case TOOLS_SHARED:
                return true;
            case HOME:
            case TOOLS_HOME:
                return zone.owner().equals(caller.name());
            case FLOCK:
            case TOOLS_FLOCK:
                // only here is the registry read: every other write is decided by the path alone
                return members.isMember(zone.owner(), caller.name());
            default:
                return false;
        }
    }


    /**
     * Whether {@code caller} may remove {@code path} or rename it away: write permission, and the
     * zone roots stay put for everyone but SYSTEM.
     */
    public static boolean mayRemove(Caller caller, VfsPath path, Membership members) {
        if (caller.isSystem()) {
            return mayWrite(caller, path, members);
        }
        return mayWrite(caller, path, members) && !isZoneRoot(path);
    }

    /**
     * True for {@code /} and the directories the namespace is made of: {@code /shared},
     * {@code /home}, {@code /home/<ctx>}, {@code /sys}, {@code /site}, {@code /flocks},
     * {@code /flocks/<name>}, {@code /tools} and the {@code /tools} zones' own directories.
     */
    public static boolean isZoneRoot(VfsPath path) {
        if (path.isRoot()) {
            return true;
        }
        String p = path.toString();
        switch (p) {
            case "/home":
            case "/flocks":
            case "/tools":
            case "/tools/home":
            case "/tools/flocks":
                return true;
            default:
                return p.equals(Zone.of(path).root());
        }
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
            case SITE -> SITE_ROOT;
            case FLOCK_REGISTRY -> VfsPath.of(Zone.FLOCK_REGISTRY_PATH);
            case FLOCK -> VfsPath.root().child("flocks").child(zone.owner());
            case TOOLS_SYS -> TOOLS_SYS_ROOT;
            case TOOLS_SHARED -> TOOLS_SHARED_ROOT;
            case TOOLS_HOME -> VfsPath.of("/tools/home").child(zone.owner());
            case TOOLS_FLOCK -> VfsPath.of("/tools/flocks").child(zone.owner());
            case OTHER -> VfsPath.root();
        };
    }

    private static final VfsPath SHARED_ROOT = VfsPath.of("/shared");
    private static final VfsPath SYS_ROOT = VfsPath.of("/sys");
    private static final VfsPath SITE_ROOT = VfsPath.of("/site");
    private static final VfsPath TOOLS_SYS_ROOT = VfsPath.of("/tools/sys");
    private static final VfsPath TOOLS_SHARED_ROOT = VfsPath.of("/tools/shared");

    /**
     * Whether a hard link from {@code existing} to {@code newName} is allowed: both names must be
     * writable and in the same zone, so a link never gives a file a second, writable name in a
     * zone where the caller could not write it.
     */
    public static boolean mayLink(Caller caller, VfsPath existing, VfsPath newName, Membership members) {
        return mayWrite(caller, existing, members)
                && mayWrite(caller, newName, members)
                && Zone.of(existing).equals(Zone.of(newName));
    }


    /** The message shown for a denied write, in chibi's words where chibi has them. */
    public static String denial(Caller caller, VfsPath path, Membership members) {
        Zone zone = Zone.of(path);
        if (zone.kind() == Zone.Kind.TOOLS_SYS) {
            return "'" + path + "' is read-only (virtual tool registry)";
        }
        switch (caller.kind()) {
            case GUEST:
                return "read-only caller cannot write to '" + path + "' (no context is mapped to this user)";
            case SYSTEM:
                return "SYSTEM cannot change '" + path + "'";
            default:
                break;
        }
        String name = caller.name();
        if (mayWrite(caller, path, members) && isZoneRoot(path)) {
            return "context '" + name + "' cannot remove or rename the zone root '" + path + "'";
        }
        switch (zone.kind()) {
            case FLOCK_REGISTRY:
                return "context '" + name + "' cannot write to flock registry (System only)";
            case FLOCK:
            case TOOLS_FLOCK:
                String problem = members.problem();
                return "context '" + name + "' is not a member of flock '" + zone.owner() + "'"
                        + (problem == null ? "" : " (" + problem + ")");
            case TOOLS_HOME:
                return "context '" + name + "' cannot write to /tools/home/" + zone.owner() + "/";
            default:
                return "context '" + name + "' cannot write to '" + path + "' (writable zones: /shared/, /home/" + name
                        + "/, /site/, /flocks/<joined-flock>/, /tools/shared/, /tools/home/" + name
                        + "/, /tools/flocks/<joined-flock>/)";
        }
    }
}
