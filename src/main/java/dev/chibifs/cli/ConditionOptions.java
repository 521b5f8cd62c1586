package dev.chibifs.cli;

import dev.chibifs.store.ContentHash;
import dev.chibifs.store.LocalStorage;
import dev.chibifs.store.Precondition;
import picocli.CommandLine.Option;

import java.time.Duration;

/**
 * --if-match of the commands that change a file (seed 004's expected_etag), and how long they wait
 * for a lock another process holds on it. --if-none-match is only the commands' that can create
 * (write, append): edit changes an existing file, so it does not offer it.
 */
final class ConditionOptions {

    private static final String MATCH_CONFLICT = "  4  conflict: the file's ETag is not --if-match's (the message"
            + " names the current one)";
    /** Exit 4 of the commands with both conditions (write, append). */
    static final String FOOTER = MATCH_CONFLICT + ", or --if-none-match '*' found a file; nothing changed";
    /** Exit 4 of those with --if-match alone (edit). */
    static final String MATCH_FOOTER = MATCH_CONFLICT + "; nothing changed";

    @Option(names = "--if-match", paramLabel = "ETAG",
            description = "Change the file only if its ETag (the SHA-256 that info and cat --etag show) is still ETAG.")
    String ifMatch;

    @Option(names = "--lock-wait", paramLabel = "DURATION", converter = LockWaitConverter.class,
            description = "How long to wait while another process holds a lock on the file (flock, lockf,"
                    + " SQLite; through any mount of the store, or on it directly), e.g. 10 (seconds, as flock -w), 500ms, 1m, or 0 to try once; then exit 5"
                    + " and change nothing. Default: 10s.")
    Duration lockWait = LocalStorage.DEFAULT_LOCK_WAIT;

    /**
     * The condition asked for, with {@code ifNoneMatch} the command's --if-none-match (null where it
     * has none); a malformed one is a usage error, naming the value and the rule.
     */
    Precondition condition(String ifNoneMatch) {
        if (ifMatch != null && ifNoneMatch != null) {
            throw new UsageException("--if-match and --if-none-match cannot be used together");
        }
        if (ifNoneMatch != null) {
            if (!ifNoneMatch.equals("*")) {
                throw new UsageException("--if-none-match takes only '*' (create only), not '" + ifNoneMatch + "'");
            }
            return Precondition.absent();
        }
        if (ifMatch != null) {
            if (!ContentHash.isEtag(ifMatch)) {
                throw new UsageException("--if-match '" + ifMatch + "' is not an ETag: 64 hex digits, as info shows");
            }
            return Precondition.matching(ifMatch.toLowerCase(java.util.Locale.ROOT));
        }
        return Precondition.NONE;
    }
}
