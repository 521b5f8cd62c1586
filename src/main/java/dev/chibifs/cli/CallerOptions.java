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
        if (as != null) {
            return context(as, "");
        }
        String fromEnv = env.get("CHIBI_CONTEXT");
        if (fromEnv != null && !fromEnv.isEmpty()) {
            return context(fromEnv, " (from $CHIBI_CONTEXT)");
        }
        if (writes) {
            throw new UsageException("'" + command + "' needs a caller: pass --as NAME, set CHIBI_CONTEXT=NAME,"
                    + " or pass --as-system to act as SYSTEM");
        }
        return Caller.GUEST;
    }

    private static Caller context(String name, String source) {
        if (!ContextNames.isValid(name)) {
            String hint = ContextNames.isReserved(name) ? " (use --as-system to act as SYSTEM)" : "";
            throw new UsageException("invalid context name '" + Names.shown(name) + "'" + source + ": " + ContextNames.RULE + hint);
        }
        return Caller.context(name);
    }
}
