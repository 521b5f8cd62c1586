package dev.chibifs.router;

import dev.chibifs.path.InvalidVfsPathException;
import dev.chibifs.path.VfsPath;
import dev.chibifs.store.StoreSpec;
import dev.chibifs.sys.InvalidSpecException;

/**
 * One {@code --store PREFIX=SPEC}: the store SPEC serves every path at or below PREFIX (the
 * prefix stripped), behind the same policy as everywhere.
 */
public record StoreMount(VfsPath prefix, StoreSpec spec) {

    /** The form, for messages. */
    public static final String RULE = "the form is PREFIX=SPEC, PREFIX an absolute path other than "
            + "/sys/contexts and /tools/sys (chibi's views), e.g. /shared/scratch=memory:64M, and / only for an s3:// store"
            + " (the whole namespace in place of <home>/vfs); " + StoreSpec.RULE;

    /** Parses {@code PREFIX=SPEC}; an {@link InvalidSpecException} names the value and the rule. */
    public static StoreMount parse(String arg) {
        return parse(arg, StoreSpec.Kind.NONE);
    }

    /** {@link #parse(String)}, with the kinds of store {@code more} knows besides memory and readonly. */
    public static StoreMount parse(String arg, StoreSpec.Kind more) {
        int eq = arg.indexOf('=');
        if (eq <= 0 || eq == arg.length() - 1) {
            throw new InvalidSpecException("invalid --store '" + StoreSpec.shown(arg) + "': " + RULE);
        }
        VfsPath prefix;
        try {
            prefix = VfsPath.of(arg.substring(0, eq));
        } catch (InvalidVfsPathException e) {
            throw new InvalidSpecException("invalid --store '" + StoreSpec.shown(arg) + "': " + e.getMessage() + "; " + RULE);
        }
        if (prefix.startsWith(Namespace.CONTEXTS) || prefix.startsWith(Namespace.TOOLS_SYS)) {
            throw new InvalidSpecException("invalid --store '" + StoreSpec.shown(arg) + "': " + RULE);
        }
        StoreSpec spec;
        try {
            spec = StoreSpec.parse(arg.substring(eq + 1), more);
        } catch (IllegalArgumentException e) {
            throw new InvalidSpecException("invalid --store '" + StoreSpec.shown(arg) + "': " + e.getMessage());
        }
        if (prefix.isRoot() && !spec.servesRoot()) {
            throw new InvalidSpecException("invalid --store '" + StoreSpec.shown(arg) + "': " + RULE);
        }
        return new StoreMount(prefix, spec);
    }

    /** {@code PREFIX=SPEC} again, the directory of a readonly store made absolute. */
    public String text() {
        return prefix + "=" + spec.text();
    }
}
