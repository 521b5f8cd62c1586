package dev.chibifs.policy;

import dev.chibifs.path.VfsPath;

import java.util.Locale;

/**
 * Which symbolic links may be made, as a pure function of the link's path and its target text
 * (no I/O). It matters because chibi itself follows links in the store: its local backend reads
 * and appends through them and checks only the path it was given, so a link whose target leads
 * out of its zone would let a context write another context's home through chibi, or read host
 * files into a conversation. The daemon itself never follows a link.
 *
 * <p>Who may write the link's name is the zone policy's question, asked first; this rule only
 * judges the target.
 */
public enum SymlinkRule {

    /**
     * The default: a target must be relative and, resolved by its text from the link's directory,
     * stay inside the zone root the link is in ({@link ZonePolicy#zoneRoot}). Every {@code ..}
     * must come before the first name: after a name, {@code ..} climbs from wherever that name
     * leads, and a name may itself be a link (to the zone root, say), so only leading {@code ..}
     * can be counted without following anything. With that, following a chain of such links
     * never leaves the zone either: each one starts inside it and climbs no higher than its root.
     */
    ZONE,
    /** Every target, absolute or climbing anywhere: the operator accepts that chibi follows them wherever they lead. */
    ANY,
    /** No link is made at all (chibifs before links: EPERM). Moving links chibi or others made is judged as by ZONE. */
    NONE;

    /** The rule for the command line, as the operator writes it. */
    public static final String CHOICES = "zone, any or none";

    /** {@code zone}, {@code any} or {@code none}; anything else is refused naming the value and the choices. */
    public static SymlinkRule parse(String value) {
        for (SymlinkRule r : values()) {
            if (r.option().equals(value)) {
                return r;
            }
        }
        throw new IllegalArgumentException("invalid --symlinks '" + value + "': " + CHOICES
                + " (zone: a link's target must be relative and stay in the link's zone)");
    }

    /** The rule's name on the command line: zone, any, none. */
    public String option() {
        return name().toLowerCase(Locale.ROOT);
    }

    /**
     * Why making {@code link} with {@code target} is refused, or null when it is allowed: symlink(2)
     * through a mount, or a link a copy recreates.
     */
    public String refusal(VfsPath link, String target) {
        return switch (this) {
            case ANY -> null;
            case NONE -> "symbolic links cannot be made on this mount";
            case ZONE -> escape(link, target);
        };
    }

    /**
     * Why an existing link with {@code target} may not come to be at {@code link} (a rename, or a
     * hard link of the link, moves the directory its target is resolved from), or null when it may.
     * NONE judges as ZONE: it makes no links, but chibi follows those that others made.
     */
    public String carryRefusal(VfsPath link, String target) {
        return this == ANY ? null : escape(link, target);
    }

    /**
     * The zone test: null when {@code target}, resolved by its text from the directory of
     * {@code link}, stays inside the zone root of {@code link}; otherwise what is wrong with it.
     */
    private static String escape(VfsPath link, String target) {
        VfsPath root = ZonePolicy.zoneRoot(link);
        if (target.startsWith("/")) {
            return "an absolute target leaves the zone; a target must be relative to the link's directory"
                    + " and stay inside the link's zone '" + root + "'";
        }
        if (link.equals(root)) {
            return "a zone root cannot be a symbolic link";
        }
        // the link is below its zone root, so its directory is the root or below it: climbing is
        // safe while the depth stays at the root's or deeper, and names after that only descend
        int depth = link.parent().depth();
        int floor = root.depth();
        boolean named = false;
        for (String segment : target.split("/", -1)) {
            if (segment.isEmpty() || segment.equals(".")) {
                continue;
            }
            if (!segment.equals("..")) {
                named = true;
            } else if (named) {
                return "a '..' after a name could climb out of the zone through another link;"
                        + " a target's '..' must all come first (as in ../../dir/file)";
            } else if (--depth < floor) {
                return "the target climbs out of the link's zone '" + root + "' (from '" + link.parent() + "')";
            }
        }
        return null;
    }
}
