package dev.chibifs.cli;

import dev.chibifs.policy.Caller;
import dev.chibifs.path.Names;
import dev.chibifs.policy.ContextNames;
import picocli.CommandLine.Option;

import java.nio.file.Path;
import java.util.Map;

/** The options every vfs command shares: who it acts as, and which CHIBI_HOME it works on. */
final class CallerOptions {

    @Option(names = "--as", paramLabel = "NAME",
            description = "Act as context NAME (default: $CHIBI_CONTEXT). "
                    + "Names are [A-Za-z0-9_-]+ (at most 255), not starting with '-', never 'system'.")
    String as;

    @Option(names = "--as-system",
            description = "Act as the reserved SYSTEM caller, which may write everywhere but /tools/sys (never implied).")
    boolean asSystem;

    @Option(names = "--home", paramLabel = "DIR", converter = HomeConverter.class,
            description = "CHIBI_HOME to work on; the store is DIR/vfs (default: $CHIBI_HOME, else ~/.chibi).")
    Path home;

    /**
     * The caller: {@code --as-system}, else {@code --as}, else {@code $CHIBI_CONTEXT}; with none
     * of them a command that only reads acts as a read-only guest and one that writes is refused.
     */
    Caller resolve(Map<String, String> env, String command, boolean writes) {
        if (asSystem && as != null) {
            throw new UsageException("--as and --as-system cannot be used together: name one caller");
        }
        if (asSystem) {
            return Caller.SYSTEM;
        }
        String name = contextName(as, env, " (use --as-system to act as SYSTEM)");
        if (name != null) {
            return Caller.context(name);
        }
        if (writes) {
            throw new UsageException("'" + command + "' needs a caller: pass --as NAME, set CHIBI_CONTEXT=NAME,"
                    + " or pass --as-system to act as SYSTEM");
        }
        return Caller.GUEST;
    }

    /** Where a context comes from when a command's option names none: chibi's own variable. */
    static final String CONTEXT_VARIABLE = "CHIBI_CONTEXT";

    /**
     * The context a command acts as: {@code given} (its option), else {@code $CHIBI_CONTEXT} (empty
     * counts as unset), as mount, the vfs commands and {@code cache put} all take it; null where
     * neither names one. A name that breaks chibi's rule is refused naming the value, where it came
     * from and the rule, with {@code reservedHint} after it where the name is the reserved 'system'.
     */
    static String contextName(String given, Map<String, String> env, String reservedHint) {
        String fromEnv = env.get(CONTEXT_VARIABLE);
        String name = given != null ? given : fromEnv != null && !fromEnv.isEmpty() ? fromEnv : null;
        if (name != null && !ContextNames.isValid(name)) {
            String source = given != null ? "" : " (from $" + CONTEXT_VARIABLE + ")";
            String hint = ContextNames.isReserved(name) ? reservedHint : "";
            throw new UsageException("invalid context name '" + Names.shown(name) + "'" + source + ": " + ContextNames.RULE + hint);
        }
        return name;
    }
}
