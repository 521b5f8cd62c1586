package dev.chibifs.store.s3;

import dev.chibifs.path.VfsPath;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The copies S3 makes under the new names of a move of files this host does not hold ({@code
 * S3Storage.copyOnS3}), journaled before they begin and ended once the move is made or they are
 * removed. A daemon killed during the copies left them under the new name for good, beside the old
 * name whole (a tester's 39 of 1,000 files), and moving again nested the tree under them.
 *
 * <p>The next start removes the copies of a move the journal did not see end, where S3 says the
 * move was not made: the old name still has the version copied and nothing here deletes it (a move
 * made journals its old names' deletes; the end record alone may be lost, and a node of a file S3
 * copied is journaled by no record, so the replay cannot tell the move by its nodes). Each copy goes
 * only while S3 still has it as copied: a HEAD, then one delete ({@link Bucket#deleteIfOurs}),
 * since another host may have made the name its own meanwhile.
 *
 * <p>Guarded by the store's monitor, but {@link #removeLeftOvers}, which asks S3 outside it (and
 * takes the store's monitor inside its own lock, never the other way round).
 */
final class CopiesUnderWay {
    private static final Logger LOG = LoggerFactory.getLogger(CopiesUnderWay.class);

    /** One copy: the object {@code from} at version {@code etag}, copied by S3 to {@code to}. */
    record Copy(String from, String etag, String to) {
    }

    private final S3Storage store;
    private final Bucket bucket;
    /** Each move under way, or left over from before: its copies. */
    private final Map<Long, List<Copy>> moves = new LinkedHashMap<>();
    /** The moves whose copies {@link #removeLeftOvers} looks at: found unended at the replay, or left by a failed move. */
    private final Map<Long, List<Copy>> leftOver = new LinkedHashMap<>();
    private long nextId = 1;
    /**
     * Held over {@link #removeLeftOvers}: the flusher's pass and a sync each removed the same copies
     * at once, and said so twice (65 and 14 of 65). A second caller waits, then finds them done.
     */
    private final Object removing = new Object();

    CopiesUnderWay(S3Storage store, Bucket bucket) {
        this.store = store;
        this.bucket = bucket;
    }

    /** Journals the copies about to be made; their move's id. */
    long begin(List<Copy> copies) throws IOException {
        long id = nextId++;
        moves.put(id, List.copyOf(copies));
        try {
            store.journal.copying(id, copies);
            store.journal.commit();
        } catch (IOException | RuntimeException e) {
            moves.remove(id);
            throw e;
        }
        return id;
    }

    /**
     * The move {@code id} made, or its copies removed: its end journaled. A failure to write it
     * leaves its record, which the next start finds with nothing to remove.
     */
    void end(long id) {
        leftOver.remove(id);
        if (moves.remove(id) == null) {
            return;
        }
        try {
            store.journal.copied(id);
            store.journal.commit();
        } catch (IOException e) {
            LOG.debug("S3 store {}: the end of move {} is not journaled: {}", store.spec, id, e.getMessage());
        }
    }

    /** The move {@code id} failed and S3 did not take all its copies' removal: the flusher tries again. */
    void leftBehind(long id) {
        List<Copy> copies = moves.get(id);
        if (copies != null) {
            leftOver.put(id, copies);
        }
    }

    /** The moves to journal again at a compaction: those under way and those not yet cleaned up. */
    Map<Long, List<Copy>> unended() {
        return moves;
    }

    /** The replay found move {@code id} begun, with {@code copies}. */
    void replayedBegun(long id, List<Copy> copies) {
        moves.put(id, copies);
        leftOver.put(id, copies);
        nextId = Math.max(nextId, id + 1);
    }

    /** The replay found move {@code id} ended. */
    void replayedEnded(long id) {
        moves.remove(id);
        leftOver.remove(id);
        nextId = Math.max(nextId, id + 1);
    }

    /** Whether copies left over wait to be looked at: the flusher does not sleep idle meanwhile. */
    boolean leftOvers() {
        return !leftOver.isEmpty();
    }

    /**
     * Removes the copies of the moves left over that were not made: at the flusher's passes, until
     * S3 answers for all of them. Not under the store's monitor. A move S3 did not answer for is
     * left for the next pass, which itself says S3 away: this does not fail it.
     */
    void removeLeftOvers() {
        synchronized (removing) {
            try {
                removeLeftOversNow();
            } catch (IOException e) {
                LOG.debug("S3 store {}: the copies of a move not made are removed later: {}", store.spec, e.getMessage());
            }
        }
    }

    private void removeLeftOversNow() throws IOException {
        List<Map.Entry<Long, List<Copy>>> todo;
        synchronized (store) {
            todo = List.copyOf(leftOver.entrySet());
        }
        for (Map.Entry<Long, List<Copy>> move : todo) {
            int[] removed = {0};
            for (Copy copy : move.getValue()) {
                synchronized (store) {
                    if (store.overlay.tombs.containsKey(copy.from()) || changedHere(copy.to())) {
                        continue; // the move was made (its old name goes), or what this host did since decides
                    }
                }
                Bucket.Head source = bucket.head(copy.from());
                if (source == null || !copy.etag().equals(source.etag())) {
                    continue; // made, and its old name gone already; or changed since, by another host
                }
                bucket.deleteIfOurs(copy.to(), head -> {
                    boolean ours = copy.etag().equals(head.etag());
                    removed[0] += ours ? 1 : 0;
                    return ours;
                });
            }
            synchronized (store) {
                end(move.getKey());
            }
            if (removed[0] > 0) {
                LOG.info("S3 store {}: {} copies S3 made for a move that was not made (the daemon killed, S3 away)"
                        + " removed; those files are under their old names", store.spec, removed[0]);
            }
        }
    }

    /** Whether this host holds a change or content at the object {@code key}: under the store's monitor. */
    private boolean changedHere(String key) {
        VfsPath p = store.journal.pathOfKey(key);
        Overlay.Node n = p == null ? null : store.overlay.nodes.get(p);
        return p == null || n != null && (n.dirty || n.cached);
    }
}
