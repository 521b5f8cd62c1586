package dev.chibifs.fuse;

import dev.chibifs.store.HeldFile;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Names answered ESTALE, and the files held for the kernel's retries.
 *
 * <p>An OPEN, GETATTR or ACCESS of a node whose name now stands for another file or for none
 * (replaced behind the kernel's cached name, or renamed over through the mount after the caller's
 * path walk) is answered ESTALE: the kernel then looks the name up again (LOOKUP_REVAL) and retries
 * the call, once, so the caller gets the file the name stands for now, never one replaced before its
 * call began. A file replaced again between that lookup and the retried request (a status file
 * rewritten with write-and-rename many times a second) failed the retry too, and the caller saw
 * "Stale file handle", which no disk gives. So the lookup of a name answered stale a moment ago
 * holds the file it finds ({@link HeldFile}), and the retried request reaches that file if its name
 * has moved on: the file the name stood for during the caller's call, as a disk would have given it.
 *
 * <p>Only names answered stale hold files, so the usual lookup costs one look at an empty map. Both
 * the names and the files held are bounded; past the bound a request is answered ESTALE as before.
 */
final class StaleNames {

    /** How long after an ESTALE a lookup of its name holds the file: the kernel's retry comes at once. */
    static final Duration RETRY_WITHIN = Duration.ofSeconds(1);
    /** Names remembered at most; past it the expired ones go, and if that is not enough, all. */
    static final int NAMES = 256;
    /** Files held at most, mount-wide; each is a descriptor, and keeps a removed file's space until FORGET. */
    static final int HELD = 1024;

    private final ConcurrentMap<NodeTable.Link, Instant> answered = new ConcurrentHashMap<>();
    private final AtomicInteger held = new AtomicInteger();

    /** A request about the node named {@code name} was answered ESTALE at {@code now}. */
    void answered(NodeTable.Link name, Instant now) {
        if (answered.size() >= NAMES) {
            Instant expired = now.minus(RETRY_WITHIN);
            answered.values().removeIf(at -> at.isBefore(expired));
            if (answered.size() >= NAMES) {
                answered.clear();
            }
        }
        answered.put(name, now);
    }

    /** Whether a lookup of {@code name} in {@code parent} should hold the file it finds: a request about it was answered stale just before. */
    boolean retrying(NodeTable.Node parent, String name, Clock clock) {
        if (answered.isEmpty()) {
            return false;
        }
        Instant at = answered.get(new NodeTable.Link(parent, name));
        return at != null && !at.isBefore(clock.instant().minus(RETRY_WITHIN));
    }

    /**
     * Gives {@code file} to node {@code n} to keep until it is forgotten; false (and {@code file} is
     * the caller's to close) when the node holds one already or the bound is reached.
     */
    boolean keep(NodeTable.Node n, HeldFile file) {
        synchronized (n) {
            // a node is one file (its identity), so one it holds already is this one
            if (n.held != null) {
                return false;
            }
            if (held.incrementAndGet() > HELD) {
                held.decrementAndGet();
                return false;
            }
            n.held = file;
            return true;
        }
    }

    /** Node {@code n} left the table: the file it held, if any, is let go. */
    void forgotten(NodeTable.Node n) {
        HeldFile file;
        synchronized (n) {
            file = n.held;
            n.held = null;
        }
        if (file != null) {
            held.decrementAndGet();
            file.close();
        }
    }

    /** Files held now (for tests and stats). */
    int held() {
        return held.get();
    }
}
