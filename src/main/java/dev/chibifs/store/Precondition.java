package dev.chibifs.store;

import dev.chibifs.path.VfsPath;

/**
 * What a conditional write asks of the file it changes (seed 004's expected_etag, HTTP's
 * If-Match and If-None-Match): its ETag is still {@code ifMatch}, or, with {@code ifNoneMatch},
 * nothing is there yet.
 *
 * @param ifMatch the ETag the file must still have; null asks nothing
 * @param ifNoneMatch only create: fail when anything is at the path
 */
public record Precondition(String ifMatch, boolean ifNoneMatch) {

    /** No condition: an ordinary write. */
    public static final Precondition NONE = new Precondition(null, false);

    public static Precondition matching(String etag) {
        return new Precondition(etag, false);
    }

    public static Precondition absent() {
        return new Precondition(null, true);
    }

    public boolean none() {
        return ifMatch == null && !ifNoneMatch;
    }

    /** Throws when {@code current} (the file's ETag now, null when there is none) breaks the condition. */
    public void check(VfsPath path, String current) throws EtagMismatchException {
        if (ifNoneMatch && current != null) {
            throw new EtagMismatchException(path.toString(), this, current);
        }
        if (ifMatch != null && !ifMatch.equalsIgnoreCase(String.valueOf(current))) {
            throw new EtagMismatchException(path.toString(), this, current);
        }
    }
}
