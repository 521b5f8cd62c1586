package dev.chibifs.policy;

import dev.chibifs.path.VfsPath;

/**
 * The zone a path falls in, which alone decides who may write it (chibi 0.10's namespace).
 *
 * @param kind  which part of the namespace
 * @param owner the owning context for {@link Kind#HOME} and {@link Kind#TOOLS_HOME}, the flock
 *              for {@link Kind#FLOCK} and {@link Kind#TOOLS_FLOCK}, otherwise null
 */
public record Zone(Kind kind, String owner) {

    /** The parts of the namespace. */
    public enum Kind {
        /** {@code /shared} and below: every context writes. */
        SHARED,
        /** {@code /home/<ctx>} and below: only the owner writes. */
        HOME,
        /** {@code /sys} and below: only SYSTEM writes. */
        SYS,
        /** {@code /site} and below: the site flock's space, every context of this site writes. */
        SITE,
        /** {@code /flocks/registry.json}: flock membership, SYSTEM only. */
        FLOCK_REGISTRY,
        /** {@code /flocks/<name>} and below: the members of flock {@code <name>} write. */
        FLOCK,
        /** {@code /tools/sys} and below: chibi's virtual tool registry, nobody writes, SYSTEM included. */
        TOOLS_SYS,
        /** {@code /tools/shared} and below: every context writes. */
        TOOLS_SHARED,
        /** {@code /tools/home/<ctx>} and below: only the owner writes. */
        TOOLS_HOME,
        /** {@code /tools/flocks/<name>} and below: the members of flock {@code <name>} write. */
        TOOLS_FLOCK,
        /** Anything else ({@code /}, {@code /home}, {@code /flocks}, {@code /tools}, other top-level names): SYSTEM only. */
        OTHER
    }

    static final Zone SHARED = new Zone(Kind.SHARED, null);
    static final Zone SYS = new Zone(Kind.SYS, null);
    static final Zone SITE = new Zone(Kind.SITE, null);
    static final Zone FLOCK_REGISTRY = new Zone(Kind.FLOCK_REGISTRY, null);
    static final Zone TOOLS_SYS = new Zone(Kind.TOOLS_SYS, null);
    static final Zone TOOLS_SHARED = new Zone(Kind.TOOLS_SHARED, null);
    static final Zone OTHER = new Zone(Kind.OTHER, null);

    /** chibi's registry of flocks and their members, in the store. */
    public static final String FLOCK_REGISTRY_PATH = "/flocks/registry.json";

    /** The zone of {@code path}. */
    public static Zone of(VfsPath path) {
        String p = path.toString();
        if (within(p, "/shared")) {
            return SHARED;
        }
        if (within(p, "/sys")) {
            return SYS;
        }
        if (within(p, "/site")) {
            return SITE;
        }
        String owner = nameBelow(p, "/home/");
        if (owner != null) {
            return new Zone(Kind.HOME, owner);
        }
        if (p.equals(FLOCK_REGISTRY_PATH)) {
            return FLOCK_REGISTRY;
        }
        String flock = nameBelow(p, "/flocks/");
        if (flock != null) {
            return new Zone(Kind.FLOCK, flock);
        }
        if (within(p, "/tools/sys")) {
            return TOOLS_SYS;
        }
        if (within(p, "/tools/shared")) {
            return TOOLS_SHARED;
        }
        owner = nameBelow(p, "/tools/home/");
        if (owner != null) {
            return new Zone(Kind.TOOLS_HOME, owner);
        }
        flock = nameBelow(p, "/tools/flocks/");
        if (flock != null) {
            return new Zone(Kind.TOOLS_FLOCK, flock);
        }
        return OTHER;
    }

    /** The path of this zone's own directory ({@code /home/<ctx>}, {@code /flocks/<name>}, ...), null for OTHER. */
    public String root() {
        switch (kind) {
            case SHARED: return "/shared";
            case HOME: return "/home/" + owner;
            case SYS: return "/sys";
            case SITE: return "/site";
            case FLOCK_REGISTRY: return FLOCK_REGISTRY_PATH;
            case FLOCK: return "/flocks/" + owner;
            case TOOLS_SYS: return "/tools/sys";
            case TOOLS_SHARED: return "/tools/shared";
            case TOOLS_HOME: return "/tools/home/" + owner;
            case TOOLS_FLOCK: return "/tools/flocks/" + owner;
            default: return null;
        }
    }

    private static boolean within(String p, String root) {
        return p.startsWith(root) && (p.length() == root.length() || p.charAt(root.length()) == '/');
    }

    /** The first name below {@code prefix} (which ends in '/'), or null when {@code p} is not below it. */
    private static String nameBelow(String p, String prefix) {
        if (!p.startsWith(prefix)) {
            return null;
        }
        int end = p.indexOf('/', prefix.length());
        return end < 0 ? p.substring(prefix.length()) : p.substring(prefix.length(), end);
    }
}
