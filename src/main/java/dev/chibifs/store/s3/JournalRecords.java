package dev.chibifs.store.s3;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.chibifs.path.InvalidVfsPathException;
import dev.chibifs.path.VfsPath;
import dev.chibifs.store.s3.Overlay.Node;
import dev.chibifs.store.s3.Overlay.Tomb;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.Closeable;
import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

import static dev.chibifs.store.s3.S3Storage.DIR_MODE;
import static dev.chibifs.store.s3.S3Storage.FILE_MODE;
import static dev.chibifs.store.s3.Overlay.NOT_APPENDS;

/**
 * The S3 store's overlay as records of its {@link Journal}, and the overlay made again from them
 * when the store opens: what a daemon killed with -9 had not uploaded goes up after the restart.
 *
 * <p>Two histories, the last record of each name winning: names ({@code put}: a node with changes
 * S3 does not have; {@code clean}: one S3 has, its content cached here; {@code gone}: nothing here
 * that S3 lacks), and tombstones ({@code tomb}: a delete S3 has still to do; {@code untomb}: done,
 * or taken over by a new node's upload). A record names its object by path and kind, so the key
 * is made again at open. Records made during one operation wait until it ends ({@link #commit}),
 * so a record on disk is complete; the journal is rewritten from the overlay (compacted) at open,
 * at close and every {@value #COMPACT_AFTER} records. A {@code gone} record of the root says
 * which inode numbers may have been handed out ({@link #NEXT_INO}); new fields are added so that an
 * earlier version still reads the journal (it ignores them), never new record kinds.
 *
 * <p>Guarded by the store's monitor, as the overlay it describes: every method but {@link #close}
 * runs under it.
 */
final class JournalRecords implements Closeable {

    private static final Logger LOG = LoggerFactory.getLogger(JournalRecords.class);
    /** When the next compaction is due, in records appended since the last ({@link #COMPACT_AFTER}, later after a failed one). */
    private long compactAfter = COMPACT_AFTER;
    /** Records appended since the last rewrite before the journal is rewritten from the overlay. */
    private static final long COMPACT_AFTER = 10_000;

    /** The record kinds, the journal's {@code t} field (the class comment says what each means). */
    private static final String PUT = "put";
    private static final String CLEAN = "clean";
    private static final String GONE = "gone";
    private static final String TOMB = "tomb";
    private static final String UNTOMB = "untomb";
    /** A field of a node's record: a writer had the file open, so its content may differ in size from the record. */
    private static final String OPEN = "open";
    /**
     * A field of a record of the root (which an earlier reader skips, as it skips every record of the
     * root): every inode number below it may have been handed out before, so none is handed out again.
     */
    private static final String NEXT_INO = "nextIno";
    /** A field of a directory's {@code gone} record ({@link #keptDirectory}): its marker object is on S3. */
    private static final String MARKER = "marker";
    /**
     * A field of a changed node's record: the keys of its old names whose deletes wait for its upload
     * ({@link Node#oldNames}), an empty list for none. Without them a restart could not tell which
     * delete waits for which upload, and one change S3 refused held back every other.
     */
    private static final String OLD_NAMES = "oldNames";
    /**
     * A field of a node's record: this host claimed its name on S3, with this made-by token
     * ({@link Node#claimMadeBy}), so its remove lets a lock go.
     */
    private static final String CLAIMED = "claimed";
    /**
     * A field of a changed file's record: when its upload met another host's version ({@link
     * Node#conflictMet}, ms), the time its conflict copy is named by, so that a restart after the copy
     * went up and before that was journaled names it alike, and finds it up, instead of making a
     * second copy of the same content (a tester's kill -9 in that window).
     */
    private static final String CONFLICT_MET = "conflictMet";
    /**
     * A field of every {@code tomb} record: the made-by token of the claim whose remove lets a lock
     * go ({@link Tomb#release}), which the object must still carry to be deleted; null for none.
     */
    private static final String RELEASE = "release";
    /**
     * A field of the root's mark ({@link #inodeMark}): the journal's records say what each change
     * waits for ({@link #OLD_NAMES}, {@link #CLAIMED}, {@link #RELEASE}). A journal an earlier
     * version wrote has none: its replay stops at its first failure, as that version's did
     * ({@link Overlay#dependenciesKnown}).
     */
    private static final String DEPENDENCIES = "dependencies";
    /**
     * A field of each record of a node and of each {@code tomb}: the journal's sequence when it was
     * made ({@link #seq}), which the compaction keeps, and writes the records in the order of. The
     * compaction wrote them in the overlay's hash order, and a restart uploaded a READY marker before
     * the data written before it. A journal without it has its records in the order made.
     */
    private static final String SEQ = "seq";
    /**
     * A field of a changed node's record: the sequence when it turned changed ({@link Node#dirtySince}),
     * so that a lock let go before a restart waits for what was changed before it alone.
     */
    private static final String SINCE = "since";
    /**
     * A field of a changed node's record and of a {@code tomb}: S3 refused its upload or its delete,
     * {@code {"status": 403, "code": "AccessDenied", "count": 3, "first": 1764745200000}}
     * ({@link Overlay.Refusals}: no status for a key's error in a DeleteObjects answered 200, no
     * code where S3 gave none), so the replay asks once for it, and its retries go on from the
     * backoff the count had reached. Written again at each refusal, with the sequence of the last
     * record, which keeps its place in the replay's order.
     */
    private static final String REFUSED = "refused";
    /**
     * A field of a record of the root: a move's copies S3 is about to make ({@link CopiesUnderWay}),
     * {@code {"move": 3, "copies": [{"from": key, "etag": etag, "to": key}]}}, until a record with
     * {@link #COPIED} of its move ends it. Kept by the compaction while not ended.
     */
    private static final String COPYING = "copying";
    /** A field of a record of the root: the move it names is made, or its copies removed. */
    private static final String COPIED = "copied";
    /** How many inode numbers each {@link #NEXT_INO} record reserves ahead: one append per so many nodes placed. */
    static final long INODES_RESERVED = 1024;
    /** The last reservation could not be written (said once until one can). */
    private boolean reserveFailing;
    /** What a time field's name is followed by in the field of its nanoseconds past its milliseconds. */
    private static final String NANOS = "Ns";

    private final S3Storage store;
    private final Journal journal;
    /** The sequence of the last record of a node or tombstone ({@link #SEQ}); above every one the journal holds. */
    private long seq;
    /** The compaction writes records again as they are: it gives none a new sequence. */
    private boolean compacting;
    /** Records made during the operation under way, appended when it ends. */
    private final List<ObjectNode> pending = new ArrayList<>();
    /**
     * The directories the journal named at open (and those above them): while S3 is away they are
     * served from what this host knows, unlisted, as directories listed before the outage are.
     */
    private final Set<VfsPath> dirsNamedAtOpen = new HashSet<>();

    JournalRecords(S3Storage store, Path file) {
        this.store = store;
        this.journal = new Journal(file);
    }

    /** Whether the journal named {@code dir}, or a name below it, when the store opened. */
    boolean namedAtOpen(VfsPath dir) {
        return dirsNamedAtOpen.contains(dir);
    }

    /** {@code n} as it is now: its changes, its cached content, or nothing here S3 lacks. */
    void put(Node n) {
        if (!n.dir && !n.dirty && !n.cached) {
            // nothing here that S3 does not have: a restart asks S3 again
            gone(n.path);
            return;
        }
        ObjectNode o = record(n.dirty ? PUT : CLEAN, n.path);
        stamp(n, o);
        o.put("ino", n.ino).put("dir", n.dir).put("size", n.size).put("mode", n.mode);
        putTimes(o, n);
        o.put("etag", n.remoteEtag);
        if (n.link) {
            o.put("link", true);
        }
        if (!n.dir && !n.cached) {
            o.put("attributesOnly", true); // dirty and not here: see replay
        }
        if (n.shaGen == n.gen) {
            o.put("sha", n.sha);
        }
        if (n.xattrs != null) {
            o.put("xattrs", ObjectXattrs.encode(n.xattrs));
        }
        if (n.listedModified != null) {
            o.put("listed", n.listedModified.toEpochMilli());
        }
        if (n.uploadedAt != null) {
            o.put("uploaded", n.uploadedAt.toEpochMilli());
        }
        if (n.dirty && n.appendsFrom != NOT_APPENDS) {
            o.put("appendsFrom", n.appendsFrom);
        }
        if (n.dirty) {
            com.fasterxml.jackson.databind.node.ArrayNode old = o.putArray(OLD_NAMES);
            if (n.oldNames != null) {
                n.oldNames.forEach(old::add);
            }
        }
        if (n.claimMadeBy != null) {
            o.put(CLAIMED, n.claimMadeBy);
        }
        if (n.dirty) {
            putRefused(o, n.refusals);
            if (n.conflictMet != null) {
                o.put(CONFLICT_MET, n.conflictMet.toEpochMilli());
            }
        }
        // a writer open may change the content after this record, up to its close's record
        n.sizeJournaled = !(n.dirty && n.writers > 0 && !n.closedOnce);
        if (!n.sizeJournaled) {
            o.put(OPEN, true);
        }
    }

    private static void putRefused(ObjectNode o, Overlay.Refusals r) {
        if (r.count() > 0) {
            ObjectNode refused = o.putObject(REFUSED);
            if (r.status() != Bucket.KEY_IN_BATCH) {
                refused.put("status", r.status());
            }
            if (r.code() != null) {
                refused.put("code", r.code());
            }
            refused.put("count", r.count()).put("first", r.firstMillis());
        }
    }

    /** How S3 refused the change of the record {@code o} ({@link #REFUSED}); none where it does not say. */
    private static Overlay.Refusals refusedOf(ObjectNode o) {
        com.fasterxml.jackson.databind.JsonNode r = o.path(REFUSED);
        int count = Math.max(0, r.path("count").asInt(0));
        return count == 0 ? Overlay.Refusals.NONE : new Overlay.Refusals(count, r.path("status").asInt(Bucket.KEY_IN_BATCH),
                r.path("code").isTextual() ? r.get("code").asText() : null, r.path("first").asLong(0));
    }

    /**
     * {@code n}'s record again, with {@link #REFUSED}: S3 refused its upload. It keeps the sequence of
     * the node's last record, as a compaction does, so that the replay keeps its place.
     */
    void refused(Node n) {
        asItWas(() -> put(n));
    }

    /** The tombstone {@code t} of {@code k} recorded again, with {@link #REFUSED}: S3 refused its delete; as {@link #refused(Node)}. */
    void refused(String k, Tomb t) {
        asItWas(() -> tomb(k, t));
    }

    /** Runs {@code record} keeping the sequence its record had, as a compaction does. */
    private void asItWas(Runnable record) {
        boolean was = compacting;
        compacting = true;
        try {
            record.run();
        } finally {
            compacting = was;
        }
    }

    /** Gives {@code n}'s new record {@code o} the next sequence (as it is, in a compaction). */
    private void stamp(Node n, ObjectNode o) {
        if (!compacting) {
            n.journaledSeq = ++seq;
            if (n.dirty && n.dirtySince == Node.NOT_DIRTY) {
                n.dirtySince = n.journaledSeq;
            }
        }
        o.put(SEQ, n.journaledSeq);
        if (n.dirty) {
            o.put(SINCE, Math.max(n.dirtySince, 0));
        }
    }

    /** Nothing at {@code p} that S3 does not have: a restart asks S3. */
    void gone(VfsPath p) {
        record(GONE, p);
    }

    /**
     * The directory {@code n}, which has nothing S3 lacks, as a {@code gone} record that also keeps its
     * inode number and attributes: a restart places it with them, for its parent's listing to confirm
     * or drop, so a backup keyed by (dev, ino) (tar --listed-incremental) finds the directory it saw.
     * An earlier reader takes the record for what it says, gone, and numbers the directory anew, as
     * it did; a {@code clean} record would have it believe a directory with no marker has one.
     */
    private void keptDirectory(Node n) {
        ObjectNode o = record(GONE, n.path).put("ino", n.ino).put("dir", true).put("mode", n.mode).put(MARKER, n.marker);
        stamp(n, o);
        if (n.claimMadeBy != null) {
            o.put(CLAIMED, n.claimMadeBy);
        }
        putTimes(o, n);
    }

    /**
     * {@code n}'s times, each in milliseconds (all an earlier reader knows) and, where the time has
     * finer parts, the nanoseconds to add to them in a field of its own, which such a reader ignores:
     * a time cut to the millisecond at a remount is another time to a program that compares
     * nanoseconds (git's index records them).
     */
    private static void putTimes(ObjectNode o, Node n) {
        putTime(o, "mtime", n.mtime);
        putTime(o, "atime", n.atime);
        putTime(o, "ctime", n.ctime);
        putTime(o, "birth", n.birth);
    }

    private static void putTime(ObjectNode o, String field, FileTime t) {
        long millis = t.toMillis();
        long past = nanosPast(millis, t.toInstant());
        o.put(field, millis);
        if (past != 0) {
            o.put(field + NANOS, past);
        }
    }

    /**
     * The nanoseconds from {@code millis} to {@code exact}: under a millisecond, of either sign
     * (FileTime's rounding of times before 1970 is not said); 0 where a time too far out for
     * milliseconds was cut.
     */
    private static long nanosPast(long millis, Instant exact) {
        Instant m = Instant.ofEpochMilli(millis);
        long seconds = exact.getEpochSecond() - m.getEpochSecond();
        if (Math.abs(seconds) > 1) {
            return 0;
        }
        long past = seconds * 1_000_000_000L + exact.getNano() - m.getNano();
        return Math.abs(past) < 1_000_000 ? past : 0;
    }

    /** The time {@code field} of record {@code o}: its milliseconds, and its nanoseconds past them where it has them. */
    private static FileTime time(ObjectNode o, String field) {
        Instant t = Instant.ofEpochMilli(o.path(field).asLong());
        long past = o.path(field + NANOS).asLong(0);
        return FileTime.from(Math.abs(past) < 1_000_000 ? t.plusNanos(past) : t);
    }

    /**
     * S3 has still to delete the object {@code k}, as {@code t} says: its ETag (null for a
     * directory's marker) and, where its remove lets a lock go, the made-by token of the claim.
     */
    void tomb(String k, Tomb t) {
        ObjectNode o = keyRecord(TOMB, k);
        if (o != null) {
            if (!compacting) {
                t.seq = ++seq;
            }
            o.put("etag", t.etag).put(RELEASE, t.release == null ? null : t.release.madeBy());
            if (t.seq > 0) {
                o.put(SEQ, t.seq);
            }
            putRefused(o, t.refusals);
        }
    }

    /** The made-by token of the claim a record's node holds ({@link #CLAIMED}), else null. */
    private static String claimOf(ObjectNode o) {
        return o.path(CLAIMED).isTextual() ? o.get(CLAIMED).asText() : null;
    }

    /** The delete of the object {@code k} is done, or no longer to be done. */
    void untomb(String k) {
        keyRecord(UNTOMB, k);
    }

    /**
     * Records that inode numbers up to {@code ino} and a block beyond may have been handed out: at
     * once, not with the operation's records, as a listing that places nodes makes none. Where the
     * journal cannot be written, the number is used all the same (a listing must not fail for it) and
     * the log says that a restart after a crash may hand it out again; the close's compaction records it.
     */
    void reserveInodes(long ino) {
        long to = Math.max(store.overlay.nextIno, ino + 1) + INODES_RESERVED;
        try {
            journal.append(inodeMark(to, store.overlay.dependenciesKnown));
            store.overlay.inoReserved = to;
            reserveFailing = false;
        } catch (IOException e) {
            if (!reserveFailing) {
                LOG.warn("S3 store {}: cannot journal the inode numbers handed out ({}): a restart after a crash"
                        + " may give some of them to other files", store.spec, e.getMessage());
            }
            reserveFailing = true;
        }
    }

    private static ObjectNode inodeMark(long next, boolean dependenciesKnown) {
        ObjectNode o = Journal.JSON.createObjectNode();
        o.put("t", GONE).put("p", VfsPath.root().toString()).put(NEXT_INO, next).put(DEPENDENCIES, dependenciesKnown);
        return o;
    }

    /** A move's copies are about to be made: {@link CopiesUnderWay#begin}. */
    void copying(long move, List<CopiesUnderWay.Copy> copies) {
        pending.add(copyingRecord(move, copies));
    }

    private static ObjectNode copyingRecord(long move, List<CopiesUnderWay.Copy> copies) {
        ObjectNode o = Journal.JSON.createObjectNode();
        o.put("t", GONE).put("p", VfsPath.root().toString());
        ObjectNode c = o.putObject(COPYING).put("move", move);
        com.fasterxml.jackson.databind.node.ArrayNode list = c.putArray("copies");
        for (CopiesUnderWay.Copy copy : copies) {
            list.addObject().put("from", copy.from()).put("etag", copy.etag()).put("to", copy.to());
        }
        return o;
    }

    /** A move's copies are kept or removed: {@link CopiesUnderWay#end}. */
    void copied(long move) {
        record(GONE, VfsPath.root()).put(COPIED, move);
    }

    /** Tells {@link CopiesUnderWay} what the root's record {@code o} says of moves, if anything. */
    private void replayCopies(ObjectNode o) {
        com.fasterxml.jackson.databind.JsonNode c = o.path(COPYING);
        if (c.path("move").canConvertToLong() && c.path("copies").isArray()) {
            List<CopiesUnderWay.Copy> copies = new ArrayList<>();
            for (com.fasterxml.jackson.databind.JsonNode e : c.path("copies")) {
                if (e.path("from").isTextual() && e.path("etag").isTextual() && e.path("to").isTextual()) {
                    copies.add(new CopiesUnderWay.Copy(e.get("from").asText(), e.get("etag").asText(), e.get("to").asText()));
                }
            }
            store.copies.replayedBegun(c.get("move").asLong(), copies);
        }
        if (o.path(COPIED).canConvertToLong()) {
            store.copies.replayedEnded(o.get(COPIED).asLong());
        }
    }

    private ObjectNode record(String type, VfsPath p) {
        ObjectNode o = Journal.JSON.createObjectNode();
        o.put("t", type).put("p", p.toString());
        pending.add(o);
        return o;
    }

    /**
     * A record naming the object {@code k} by the path and kind ({@code dir}, {@code link}) replay
     * makes its key of again; null (and nothing recorded) for a key outside the store.
     */
    private ObjectNode keyRecord(String type, String k) {
        boolean dir = k.endsWith("/");
        String name = dir ? k.substring(0, k.length() - 1) : k;
        String linked = dir ? null : S3Storage.linkName(name);
        VfsPath p = pathOfKey(linked == null ? name : linked);
        if (p == null) {
            return null;
        }
        ObjectNode o = record(type, p).put("dir", dir);
        if (linked != null) {
            o.put("link", true);
        }
        return o;
    }

    /** The path of the object {@code key} (a directory's without its marker's '/'), or null where none is. */
    VfsPath pathOfKey(String key) {
        String prefix = store.spec.keyPrefix();
        String rel;
        if (prefix.isEmpty()) {
            rel = key;
        } else if (key.startsWith(prefix + "/")) {
            rel = key.substring(prefix.length() + 1);
        } else {
            return null;
        }
        try {
            return rel.isEmpty() ? VfsPath.root() : VfsPath.of("/" + rel);
        } catch (InvalidVfsPathException e) {
            return null;
        }
    }

    /** Before an operation changes the overlay: room for its records, or ENOSPC while nothing has changed. */
    void requireRoom() throws IOException {
        journal.ensureRoom();
    }

    /**
     * Before a change of names (not a file's write, whose content write fails as its record would,
     * and leaves nothing but the file to upload again): the journal's file system still takes writes.
     */
    void requireWrites() throws IOException {
        journal.requireWrites();
    }

    /** Appends the records of the operation that just ended; the journal failing fails the operation. */
    void commit() throws IOException {
        if (pending.isEmpty()) {
            return;
        }
        try {
            for (ObjectNode o : pending) {
                journal.append(o);
            }
        } finally {
            pending.clear();
        }
        if (journal.appended() > compactAfter) {
            try {
                compact();
                compactAfter = COMPACT_AFTER;
            } catch (IOException e) {
                // the operation is made and its records appended: failing here would refuse what was
                // done. Tried again after as many records more (a full disk must not make each
                // operation rewrite the whole journal), and at close
                compactAfter = journal.appended() + COMPACT_AFTER;
                LOG.warn("cannot compact the journal now ({}): it grows until it can", e.getMessage());
            }
        }
    }

    /**
     * Rewrites the journal as the overlay's state: a record for each node and pending tombstone, no
     * history, in the order their last records were made ({@link #SEQ}), which a restart uploads in.
     */
    void compact() throws IOException {
        List<Node> named = new ArrayList<>();
        for (Node n : store.overlay.nodes.values()) {
            if (n == store.overlay.root || n.dir && !n.dirty && !n.dirOnRemote || !n.dir && !n.dirty && !n.cached) {
                continue;
            }
            named.add(n);
        }
        named.sort(java.util.Comparator.comparingLong(n -> n.journaledSeq));
        List<Map.Entry<String, Tomb>> deletes = new ArrayList<>();
        for (Map.Entry<String, Tomb> e : store.overlay.tombs.entrySet()) {
            if (e.getValue().pending) {
                deletes.add(e);
            }
        }
        deletes.sort(java.util.Comparator.comparingLong(e -> e.getValue().seq));
        compacting = true;
        try {
            int d = 0;
            for (Node n : named) {
                for (; d < deletes.size() && deletes.get(d).getValue().seq < n.journaledSeq; d++) {
                    tomb(deletes.get(d).getKey(), deletes.get(d).getValue());
                }
                if (n.dir && !n.dirty) {
                    keptDirectory(n);
                } else {
                    put(n);
                }
            }
            for (; d < deletes.size(); d++) {
                tomb(deletes.get(d).getKey(), deletes.get(d).getValue());
            }
        } finally {
            compacting = false;
        }
        List<ObjectNode> state = new ArrayList<>();
        state.add(inodeMark(Math.max(store.overlay.nextIno, store.overlay.inoReserved), store.overlay.dependenciesKnown));
        store.copies.unended().forEach((move, copies) -> state.add(copyingRecord(move, copies)));
        state.addAll(pending);
        pending.clear();
        journal.rewrite(state);
    }

    /** {@link Journal#toForce}: under the store's monitor. */
    CacheFile toForce() throws IOException {
        return journal.toForce();
    }

    /** Runs before {@link #forceAndClose} syncs (tests hold a sync there). */
    Runnable beforeForce = () -> { };

    /**
     * What was appended when {@code f} was taken ({@link #toForce}) reaches the disk, without the
     * store's monitor; then {@code f} is closed. A rewrite meanwhile replaced the file by one forced
     * whole: syncing the old one is then harmless.
     */
    void forceAndClose(CacheFile f) throws IOException {
        if (f == null) {
            return;
        }
        try (f) {
            beforeForce.run();
            f.force(false);
        }
    }

    @Override
    public void close() throws IOException {
        journal.close();
    }

    /**
     * Makes the overlay again from the journal: dirty nodes and pending deletes come back due at
     * once, clean ones as cache; content files no record names are removed.
     */
    void replay() throws IOException {
        Map<VfsPath, ObjectNode> last = new TreeMap<>();
        Map<VfsPath, Long> lastAt = new java.util.HashMap<>();
        Map<String, ObjectNode> lastTomb = new TreeMap<>();
        long at = 0;
        long nextIno = 2;
        boolean dependenciesKnown = false;
        for (ObjectNode o : journal.read(msg -> LOG.warn("S3 store {}: journal {}", store.spec, msg))) {
            // its place in the order of changes: its sequence, or after the record before it in one
            // an earlier version wrote (or a record that has none); a new record's goes after every one
            at = Math.max(at + 1, o.path(SEQ).asLong(0));
            seq = Math.max(seq, at);
            nextIno = Math.max(nextIno, o.path(NEXT_INO).asLong(0));
            if (o.has(NEXT_INO)) {
                dependenciesKnown = o.path(DEPENDENCIES).asBoolean(); // the last mark's: the compaction's, or a reservation's since
            }
            replayCopies(o);
            try {
                VfsPath p = VfsPath.of(o.get("p").asText());
                String t = o.get("t").asText();
                if (t.equals(TOMB) || t.equals(UNTOMB)) {
                    lastTomb.put(store.objectKey(p, o.path("dir").asBoolean(), o.path("link").asBoolean()), o);
                } else {
                    ObjectNode before = last.put(p, o);
                    long s = o.path(SEQ).asLong(0);
                    if (before == null || s == 0 || s != before.path(SEQ).asLong(0)) {
                        lastAt.put(p, at);
                    } // else the same change said again (refused): its place in the order stays
                }
            } catch (InvalidVfsPathException e) {
                LOG.warn("S3 store {}: journal record for a bad path skipped: {}", store.spec, e.getMessage());
            }
        }
        // a journal with nothing to replay (none, or all up) has nothing whose dependencies are unknown
        store.overlay.dependenciesKnown = dependenciesKnown || last.values().stream().noneMatch(o -> o.get("t").asText().equals(PUT))
                && lastTomb.values().stream().noneMatch(o -> o.get("t").asText().equals(TOMB));
        int dirty = 0;
        Map<Tomb, String> releases = new java.util.LinkedHashMap<>();
        Map<String, Tomb> deletes = new java.util.HashMap<>();
        for (Map.Entry<String, ObjectNode> e : lastTomb.entrySet()) {
            ObjectNode o = e.getValue();
            if (o.get("t").asText().equals(TOMB) && !e.getKey().isEmpty()) {
                Tomb t = new Tomb(o.path("etag").isTextual() ? o.get("etag").asText() : null);
                t.seq = o.path(SEQ).asLong(0);
                t.refusals = refusedOf(o);
                store.overlay.tombs.put(e.getKey(), t);
                deletes.put(e.getKey(), t);
                if (o.path(RELEASE).isTextual()) {
                    releases.put(t, o.get(RELEASE).asText());
                }
                dirty++;
            }
        }
        for (ObjectNode o : last.values()) {
            nextIno = Math.max(nextIno, o.path("ino").asLong(0) + 1); // a journal an earlier version wrote has no mark
        }
        store.overlay.nextIno = nextIno;
        store.overlay.inoReserved = nextIno + INODES_RESERVED; // the compaction below records it
        TreeMap<Long, Node> inJournalOrder = new TreeMap<>();
        for (Map.Entry<VfsPath, ObjectNode> e : last.entrySet()) {
            VfsPath p = e.getKey();
            ObjectNode o = e.getValue();
            String t = o.get("t").asText();
            if (!p.isRoot() && t.equals(GONE) && o.path("dir").asBoolean() && o.path("ino").asLong(0) >= 2) {
                placeKeptDirectory(p, o, lastAt.get(p));
                continue;
            }
            if (p.isRoot() || !t.equals(PUT) && !t.equals(CLEAN)) {
                continue;
            }
            Node n = node(p, o, t.equals(PUT));
            if (n == null) {
                continue;
            }
            n.journaledSeq = lastAt.get(p);
            if (n.dirty && n.cached && shorterThanJournaled(o, n)) {
                p = keptAside(p, n, last, "is damaged (" + n.size + " bytes, the journal says " + o.path("size").asLong() + ")");
            } else if (n.dirty && n.cached && halfWritten(o, n)) {
                p = keptAside(p, n, last, "was being written when the store stopped without a close (kill -9, a crash)");
            }
            ensureParents(p);
            store.overlay.attach(p, n);
            for (VfsPath d = n.dir ? p : p.parent(); !dirsNamedAtOpen.contains(d); d = d.parent()) {
                dirsNamedAtOpen.add(d);
                if (d.isRoot()) {
                    break;
                }
            }
            if (n.dirty) {
                store.overlay.dirtyNodes.add(n);
                n.firstDirty = n.due = store.ticks();
                inJournalOrder.put(lastAt.get(e.getKey()), n);
                dirty++;
            }
        }
        releases.forEach((t, madeBy) -> t.release = store.overlay.releaseAfterReplay(releases.keySet(), t, madeBy));
        store.writeBack.replayedInOrder(List.copyOf(inJournalOrder.values()), deletes);
        removeContentNotNamed();
        compactAtStart();
        if (dirty > 0) {
            // how many went up is said once the first pass is past them (WriteBack.sayReplayed): S3 may refuse some
            LOG.info("S3 store {}: {} changes from before the last stop go up first, in their order", store.spec, dirty);
        }
    }

    /**
     * The replay's compaction, on a cache disk that may be full: content already on S3 leaves it
     * first ({@link S3Storage#makeRoom}), and where there is still no room the journal stays as it
     * is, whole, growing until a later compaction can. A daemon made room as it ran, but one started
     * on a full disk failed "No space left on device" naming nothing, and the changes it had not
     * sent waited until a hand freed the disk (a tester's finding).
     */
    private void compactAtStart() throws IOException {
        for (int tries = 1; ; tries++) {
            try {
                compact();
                return;
            } catch (IOException e) {
                if (dev.chibifs.sys.Errors.errno(e) != dev.chibifs.sys.Linux.ENOSPC) {
                    throw e;
                }
                if (tries >= S3Storage.ROOM_TRIES || !store.makeRoom(0, null, true)) {
                    LOG.warn("S3 store {}: the journal is not compacted at this start ({}): it is kept whole as it is",
                            store.spec, e.getMessage());
                    return;
                }
            }
        }
    }

    /** The node record {@code o} of {@code p} describes; null, and a warning, where it cannot be made. */
    private Node node(VfsPath p, ObjectNode o, boolean put) throws IOException {
        long ino = o.path("ino").asLong(0);
        boolean dir = o.path("dir").asBoolean();
        boolean link = o.path("link").asBoolean();
        if (ino < 2) {
            LOG.warn("S3 store {}: journal record for {} has no inode, skipped", store.spec, p);
            return null;
        }
        // a change of attributes alone to a file not fetched here has no content here: S3 has it
        boolean attributesOnly = !dir && !link && put && o.path("etag").isTextual()
                && o.path("attributesOnly").asBoolean();
        Path content = store.dataFile(ino);
        if (!dir && !attributesOnly && !Files.exists(content)) {
            LOG.warn("S3 store {}: cached content of {} is missing, {}", store.spec, p,
                    put ? "its last change is lost" : "fetched again");
            return null;
        }
        if (!dir && !put && Files.size(content) != o.path("size").asLong(Files.size(content))) {
            // S3 has this version: the damaged copy (a power cut leaves ext4 files short or empty) goes
            LOG.warn("S3 store {}: cached content of {} is damaged ({} bytes, the journal says {}): dropped,"
                    + " fetched again from S3 at its next open", store.spec, p, Files.size(content), o.path("size").asLong());
            return null;
        }
        Node n = new Node(ino, dir, link, time(o, "mtime"), o.path("mode").asInt(FILE_MODE));
        n.atime = time(o, "atime");
        n.ctime = time(o, "ctime");
        n.birth = time(o, "birth");
        n.remoteEtag = o.path("etag").isTextual() ? o.get("etag").asText() : null;
        n.dirty = put;
        n.claimMadeBy = claimOf(o);
        if (put) {
            n.dirtySince = o.path(SINCE).asLong(0);
            n.refusals = refusedOf(o);
            if (o.path(CONFLICT_MET).isIntegralNumber()) {
                n.conflictMet = java.time.Instant.ofEpochMilli(o.get(CONFLICT_MET).asLong());
            }
            for (com.fasterxml.jackson.databind.JsonNode k : o.path(OLD_NAMES)) {
                if (n.oldNames == null) {
                    n.oldNames = new HashSet<>();
                }
                n.oldNames.add(k.asText());
            }
        }
        if (dir) {
            n.dirOnRemote = n.marker = !put;
            return n;
        }
        n.cached = !attributesOnly;
        n.size = attributesOnly ? o.path("size").asLong() : Files.size(content);
        if (o.path("sha").isTextual()) {
            n.sha = o.get("sha").asText();
            n.shaGen = n.gen;
        }
        n.xattrs = ObjectXattrs.decode(o.path("xattrs").asText());
        if (o.path("listed").isIntegralNumber()) {
            n.listedModified = Instant.ofEpochMilli(o.get("listed").asLong());
        }
        if (o.path("uploaded").isIntegralNumber()) {
            n.uploadedAt = Instant.ofEpochMilli(o.get("uploaded").asLong());
        }
        long appendsFrom = o.path("appendsFrom").asLong(NOT_APPENDS);
        if (put && appendsFrom >= 0 && appendsFrom <= n.size) {
            n.appendsFrom = appendsFrom;
        }
        return n;
    }

    /**
     * Whether the content of the changed file {@code n} is shorter than its record {@code o} says it
     * was, no writer being open then: damaged since (a power cut, a hand), not a change. Where a
     * writer was open ({@link #OPEN}), a kill -9 leaves its later writes unrecorded, and a truncate
     * among them makes the content shorter, so nothing can be told; nor where it is longer.
     */
    private static boolean shorterThanJournaled(ObjectNode o, Node n) {
        return !o.path(OPEN).asBoolean() && n.size < o.path("size").asLong(0);
    }

    /**
     * Whether the changed file {@code n} had a writer open when the store stopped without closing it,
     * writing (not only appending): a file open for writing goes up at its last close, never half
     * written, and this close never came (a program's O_TRUNC rewrite cut off, an SQLite transaction
     * not yet committed by its fsync). That holds for a file S3 never had too: a report a shell was
     * still writing with {@code >} went up cut off under its name, and the other hosts took it for
     * done (a tester's finding). Appends go up as they are: each is whole lines added to S3's
     * version (or to a file an append made), as they go up while the writer is open; and so does a
     * new file still empty, as its open made it (a lock file held open).
     */
    private static boolean halfWritten(ObjectNode o, Node n) {
        return o.path(OPEN).asBoolean() && n.appendsFrom == NOT_APPENDS && (n.remoteEtag != null || n.size > 0);
    }

    /**
     * The content of the changed file {@code n}, last at {@code p}, that {@code why} says cannot be
     * trusted is kept as a conflict copy beside it, as one of a change S3 refused, rather than
     * uploaded over what S3 has at {@code p} (which shows there again); the copy's name, a new
     * object. {@code names} holds the journal's.
     */
    private VfsPath keptAside(VfsPath p, Node n, Map<VfsPath, ObjectNode> names, String why) {
        VfsPath copy;
        for (int i = 0; ; i++) {
            copy = WriteBack.conflictName(p, store.options.host(), store.options.clock().instant(), i);
            if (!names.containsKey(copy) && !store.overlay.nodes.containsKey(copy)) {
                break;
            }
        }
        LOG.error("S3 store {}: cached content of {} {}: not uploaded {} {}; kept as {}, a new object",
                store.spec, p, why, n.remoteEtag != null ? "over" : "as", p + (n.remoteEtag != null ? " on S3" : ""), copy);
        n.remoteEtag = null; // a new object: it replaces nothing on S3
        n.sha = null; // the recorded hash is of the content before the damage
        n.shaGen = -1;
        n.listedModified = null;
        n.uploadedAt = null;
        n.appendsFrom = NOT_APPENDS;
        return copy;
    }

    /**
     * The directory {@link #keptDirectory} recorded, with its number: on S3 when the store closed.
     * Not among the directories served from here while S3 is away ({@link #namedAtOpen}): its
     * files S3 has are not known here until a listing.
     */
    private void placeKeptDirectory(VfsPath p, ObjectNode o, long journaledSeq) {
        Node d = new Node(o.get("ino").asLong(), true, false, time(o, "mtime"), o.path("mode").asInt(DIR_MODE));
        d.atime = time(o, "atime");
        d.ctime = time(o, "ctime");
        d.birth = time(o, "birth");
        d.dirOnRemote = true;
        d.marker = o.path(MARKER).asBoolean();
        d.claimMadeBy = claimOf(o);
        d.journaledSeq = journaledSeq;
        ensureParents(p);
        store.overlay.attach(p, d);
    }

    /** Directory nodes for the parents of a restored node, as journaled nodes come in any order. */
    private void ensureParents(VfsPath p) {
        VfsPath parent = p.parent();
        if (store.overlay.nodes.containsKey(parent)) {
            return;
        }
        ensureParents(parent);
        Node d = store.overlay.newNode(true, DIR_MODE);
        d.dirOnRemote = true;
        store.overlay.attach(parent, d);
    }

    /**
     * Content files no record names are left from before a crash or a compaction: only names a
     * content file or its download has (an inode number, {@code .part}), since a {@code --cache-dir}
     * that was there may have held a {@code data} directory of its own (a tester's files there went).
     */
    private void removeContentNotNamed() throws IOException {
        Set<Long> named = new HashSet<>();
        for (Node n : store.overlay.nodes.values()) {
            named.add(n.ino);
        }
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(store.dataDir)) {
            for (Path f : ds) {
                java.util.regex.Matcher m = CONTENT_NAME.matcher(f.getFileName().toString());
                if (m.matches() && (m.group(2) != null || !named.contains(Long.parseLong(m.group(1))))) {
                    Files.deleteIfExists(f); // a .part is of a download cut short
                }
            }
        }
    }

    /** A content file's name (its inode number), or that of its download under way ({@code Bucket.get}). */
    private static final java.util.regex.Pattern CONTENT_NAME = java.util.regex.Pattern.compile("([0-9]{1,18})(\\.part)?");
}
