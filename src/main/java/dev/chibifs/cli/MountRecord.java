package dev.chibifs.cli;

import java.nio.file.Path;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.Properties;

/**
 * What a running daemon tells the registry about its mount: one {@code <key>.properties} file.
 *
 * @param mode      {@code context} or {@code uidmap}
 * @param context   the context of a per-context mount, else null
 * @param uidMap    the uid map, as {@code 1001=planner,1002=coder}; empty for a per-context mount
 * @param systemUid the uid that acts as SYSTEM, or null
 * @param options   the FUSE {@code -o} options in force, comma-separated
 * @param log       the log file, or {@code stderr}
 * @param stores    every store of the namespace as {@code PREFIX=SPEC}, space-separated, {@code /} first
 * @param session   what the kernel and the daemon settled at INIT (protocol, passthrough or served I/O)
 * @param pid       the daemon's pid as /proc counts where it ran (the host's, unless its pid namespace had a
 *                  /proc of its own)
 * @param pidNamespace the daemon's pid namespace ({@code pid:[N]}), or null (a daemon older than this)
 * @param namespacePid the daemon's pid in its own pid namespace ({@code pid} when it has none of its own)
 */
record MountRecord(Path mountpoint, long pid, String mode, String context, String uidMap,
                          Integer systemUid, Path home, Path store, Instant started, String options, String log,
                          String stores, String session, String pidNamespace, long namespacePid) {

    public static final String MODE_CONTEXT = "context";
    public static final String MODE_UIDMAP = "uidmap";

    public MountRecord {
        if (!MODE_CONTEXT.equals(mode) && !MODE_UIDMAP.equals(mode)) {
            throw new IllegalArgumentException("mode must be context or uidmap, not " + mode);
        }
        if (MODE_CONTEXT.equals(mode) && context == null) {
            throw new IllegalArgumentException("a per-context mount needs a context");
        }
        uidMap = uidMap == null ? "" : uidMap;
        options = options == null ? "" : options;
        stores = stores == null || stores.isEmpty() ? "/=" + store : stores;
        session = session == null ? "" : session;
    }

    /** A record without the pid namespace (as a daemon older than its recording wrote): its pid alone. */
    public MountRecord(Path mountpoint, long pid, String mode, String context, String uidMap, Integer systemUid,
                       Path home, Path store, Instant started, String options, String log, String stores, String session) {
        this(mountpoint, pid, mode, context, uidMap, systemUid, home, store, started, options, log, stores, session,
                null, pid);
    }

    /** A record without the session (as a daemon older than the protocol rewrite wrote). */
    public MountRecord(Path mountpoint, long pid, String mode, String context, String uidMap, Integer systemUid,
                       Path home, Path store, Instant started, String options, String log, String stores) {
        this(mountpoint, pid, mode, context, uidMap, systemUid, home, store, started, options, log, stores, null);
    }

    /** A record without a list of stores: the local store alone (as a daemon older than stores by prefix wrote). */
    public MountRecord(Path mountpoint, long pid, String mode, String context, String uidMap, Integer systemUid,
                       Path home, Path store, Instant started, String options, String log) {
        this(mountpoint, pid, mode, context, uidMap, systemUid, home, store, started, options, log, null, null);
    }

    /** Each store the mount serves, by its prefix ("/" for the root's), in the order recorded: "PREFIX=SPEC" entries. */
    public java.util.Map<String, String> storesByPrefix() {
        java.util.Map<String, String> byPrefix = new java.util.LinkedHashMap<>();
        for (String store : stores.split(" (?=/)")) {
            int eq = store.indexOf('=');
            byPrefix.put(eq > 0 ? store.substring(0, eq) : "/", store.substring(eq + 1));
        }
        return byPrefix;
    }

    /**
     * The store at {@code /} as {@code status} shows it: the local directory, or the spec of
     * another kind ({@code s3://...}), for which {@link #store} is only chibi's home store.
     */
    public String rootStore() {
        String first = stores.split(" ", 2)[0];
        return first.startsWith("/=") ? first.substring(2) : store.toString();
    }

    Properties toProperties() {
        Properties p = new Properties();
        p.setProperty("mountpoint", mountpoint.toString());
        p.setProperty("pid", Long.toString(pid));
        p.setProperty("mode", mode);
        if (context != null) {
            p.setProperty("context", context);
        }
        p.setProperty("uidmap", uidMap);
        if (systemUid != null) {
            p.setProperty("systemUid", systemUid.toString());
        }
        p.setProperty("home", home.toString());
        p.setProperty("store", store.toString());
        p.setProperty("started", started.toString());
        p.setProperty("options", options);
        p.setProperty("log", log);
        p.setProperty("stores", stores);
        p.setProperty("session", session);
        if (pidNamespace != null) {
            p.setProperty("pidNamespace", pidNamespace);
            p.setProperty("namespacePid", Long.toString(namespacePid));
        }
        return p;
    }

    /** Reads a record back; a missing or malformed key is an IllegalArgumentException that names it. */
    static MountRecord fromProperties(Properties p) {
        String systemUid = p.getProperty("systemUid");
        return new MountRecord(
                Path.of(required(p, "mountpoint")),
                number(p, "pid"),
                required(p, "mode"),
                p.getProperty("context"),
                p.getProperty("uidmap", ""),
                systemUid == null ? null : Math.toIntExact(number(p, "systemUid")),
                Path.of(required(p, "home")),
                Path.of(required(p, "store")),
                instant(p, "started"),
                p.getProperty("options", ""),
                p.getProperty("log", "stderr"),
                p.getProperty("stores"),
                p.getProperty("session"),
                p.getProperty("pidNamespace"),
                p.getProperty("pidNamespace") == null ? number(p, "pid") : number(p, "namespacePid"));
    }

    private static long number(Properties p, String key) {
        String value = required(p, key);
        try {
            return Long.parseLong(value);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(key + ": not a number: " + value, e);
        }
    }

    private static Instant instant(Properties p, String key) {
        String value = required(p, key);
        try {
            return Instant.parse(value);
        } catch (DateTimeParseException e) {
            throw new IllegalArgumentException(key + ": not an ISO-8601 instant: " + value, e);
        }
    }

    private static String required(Properties p, String key) {
        String value = p.getProperty(key);
        if (value == null) {
            throw new IllegalArgumentException("missing key '" + key + "'");
        }
        return value;
    }
}
