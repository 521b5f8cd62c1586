package dev.chibifs.policy;

import dev.chibifs.path.VfsPath;

/**
 * The zone a path falls in, which alone decides who may write it.
 *
 * @param kind  which part of the namespace
 * @param owner the owning context for {@link Kind#HOME}, otherwise null
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
        /** Anything else ({@code /}, {@code /home} itself, other top-level names): only SYSTEM writes. */
        OTHER
    }

    static final Zone SHARED = new Zone(Kind.SHARED, null);
    static final Zone SYS = new Zone(Kind.SYS, null);
    static final Zone OTHER = new Zone(Kind.OTHER, null);

    /** The zone of {@code path}. */
    public static Zone of(VfsPath path) {
        String p = path.toString();
        if (p.equals("/shared") || p.startsWith("/shared/")) {
            return SHARED;
        }
        if (p.equals("/sys") || p.startsWith("/sys/")) {
            return SYS;
        }
        if (p.startsWith("/home/")) {
            int end = p.indexOf('/', 6);
            String owner = end < 0 ? p.substring(6) : p.substring(6, end);
            return new Zone(Kind.HOME, owner);
        }
        return OTHER;
    }
}
