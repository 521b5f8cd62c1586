package dev.chibifs.store;

import com.fasterxml.jackson.databind.JsonNode;
import dev.chibifs.config.FileStamp;
import dev.chibifs.config.FlockRegistry;
import dev.chibifs.config.HomeFile;
import dev.chibifs.config.StrictJson;
import dev.chibifs.path.Fnv;
import dev.chibifs.path.VfsPath;
import dev.chibifs.policy.ContextNames;
import dev.chibifs.sys.Errors;
import dev.chibifs.sys.IsDirectoryException;
import dev.chibifs.sys.Linux;
import dev.chibifs.sys.ErrnoException;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;

/**
 * chibi's read-only view {@code /sys/contexts}, over {@code <home>/contexts} and chibi's
 * {@code <home>/state.json}, as chibi 0.10's {@code ContextsBackend} serves it:
 * {@code /<name>/state.json} and {@code /<name>/task-dirs} generated on each read (byte for
 * byte chibi's output), {@code /<name>/transcript/{manifest.json, active.jsonl, partitions/*}}
 * read through from the context's transcript directory (or, in chibi's older layout, the context
 * directory itself). The context list is chibi's state file, read again whenever it changed.
 *
 * <p>Files read through come from a {@link LocalStorage} of {@code <home>/contexts}, so no link
 * found there is followed. Generated files report the size of what a read returns now (the
 * kernel cuts reads at the size it was told). Every change fails with
 * {@link ReadOnlyStoreException} ("virtual context metadata", chibi's name for it).
 */
public final class ContextsView implements ReadOnlyStore {

    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(ContextsView.class);
    /** chibi's name for this view, in refusals. */
    public static final String NAME = "virtual context metadata";
    private static final String STATE = "state.json";
    private static final String TASK_DIRS = "task-dirs";
    private static final String TRANSCRIPT = "transcript";
    private static final String MANIFEST = "manifest.json";
    private static final String ACTIVE = "active.jsonl";
    private static final String PARTITIONS = "partitions";

    private final Path stateFile;
    private final Path contextsDir;
    private LocalStorage contextsStore;
    private final Supplier<Optional<String>> siteId;
    private final Supplier<FlockRegistry> registry;

    /**
     * Each generated file as last made, and since when: its mtime. What it is made from besides
     * chibi's state file (the flock registry, site.json, a transcript) changes no stamp of ours,
     * and the kernel keeps a file's pages while its size and mtime stay: a new version of the same
     * size must still be a new mtime.
     */
    private final ConcurrentMap<VfsPath, Generated> generatedSince = new ConcurrentHashMap<>();

    private record Generated(byte[] bytes, FileTime since) {
    }

    /** What one version of a file of chibi's said; replaced whole, so no request waits for another's read. */
    private record Known<T>(FileStamp stamp, T value) {
    }

    private final AtomicReference<Known<Map<String, ContextEntry>>> state = new AtomicReference<>(new Known<>(null, Map.of()));
    /**
     * Set while one request looks at state.json; the others take what is known meanwhile. A state.json linked into this very mount's /sys/contexts made each look a request
     * there, which looked again, until the listing's workers all waited on one another.
     */
    private final java.util.concurrent.atomic.AtomicBoolean lookingAtState = new java.util.concurrent.atomic.AtomicBoolean();
    /** How a file's version is told: {@link FileStamp#of}; a test's own. */
    private final FileStamp.Stamper stamper;

    /** One context as chibi's state file lists it. */
    /** chibi's u64 times, held in longs: printed unsigned (2^64 - 1 is -1 here). */
    record ContextEntry(String name, long createdAt, long lastActivityAt, long destroyAfterSecondsInactive,
                        long destroyAt) {
    }

    /**
     * The view of chibi home {@code home} (state.json, contexts/), this site being {@code siteId},
     * its flocks what {@code registry} says: the flock registry as the policy reads it
     * (the router's {@code FlockRegistryReader}), so that this view and the policy agree.
     */
    public ContextsView(Path home, Supplier<Optional<String>> siteId, Supplier<FlockRegistry> registry) throws IOException {
        this(home, siteId, registry, FileStamp::of);
        // known before the first request: a request meanwhile takes what is known
        contextList();
    }

    ContextsView(Path home, Supplier<Optional<String>> siteId, Supplier<FlockRegistry> registry, FileStamp.Stamper stamper) {
        this.stateFile = home.resolve("state.json");
        this.contextsDir = home.resolve("contexts");
        this.siteId = siteId;
        this.registry = registry;
        this.stamper = stamper;
    }

    /** The store of {@code <home>/contexts}, opened once it exists: the view never creates chibi's directories. */
    private synchronized LocalStorage contexts() throws IOException {
        if (contextsStore == null) {
            if (!Files.isDirectory(contextsDir)) {
                throw new NoSuchFileException(contextsDir.toString());
            }
            contextsStore = new LocalStorage(contextsDir);
        }
        return contextsStore;
    }

    // ---- chibi's files, read when they changed ----

    private Map<String, ContextEntry> contextList() throws IOException {
        Known<Map<String, ContextEntry>> before = state.get();
        if (!lookingAtState.compareAndSet(false, true)) {
            return before.value();
        }
        try {
            return contextList(before);
        } finally {
            lookingAtState.set(false);
        }
    }

    private Map<String, ContextEntry> contextList(Known<Map<String, ContextEntry>> before) throws IOException {
        FileStamp now = stamper.of(stateFile);
        if (now.equals(before.stamp())) {
            return before.value();
        }
        Map<String, ContextEntry> parsed;
        String problem = null;
        try {
            parsed = now == FileStamp.MISSING ? Map.of() : parseState(HomeFile.read(stateFile, HomeFile.STATE_JSON_LIMIT));
            if (parsed == null) {
                problem = "chibi's state file " + stateFile + " is malformed";
            }
        } catch (NoSuchFileException gone) {
            parsed = Map.of();
        } catch (IOException e) {
            parsed = null;
            problem = "chibi's state file cannot be read: " + Errors.describe(e);
        }
        // as chibi, which reads it with unwrap_or_default; said once per version, by the request that records it
        if (state.compareAndSet(before, new Known<>(now, parsed == null ? Map.of() : parsed)) && problem != null) {
            LOG.warn("{}: /sys/contexts shows no contexts until it is readable", problem);
        }
        return parsed == null ? Map.of() : parsed;
    }

    /** chibi's state.json; null when malformed, which chibi counts as no contexts. */
    static Map<String, ContextEntry> parseState(byte[] json) {
        Map<String, ContextEntry> out = new LinkedHashMap<>();
        try {
            JsonNode list = StrictJson.read(json).get("contexts");
            if (list == null || !list.isArray()) {
                return null;
            }
            for (JsonNode c : list) {
                JsonNode name = c.get("name");
                if (name == null || !name.isTextual() || !isU64(c.get("created_at"))) {
                    return null;
                }
                long[] opt = new long[3];
                String[] keys = {"last_activity_at", "destroy_after_seconds_inactive", "destroy_at"};
                for (int i = 0; i < keys.length; i++) {
                    JsonNode v = c.get(keys[i]);
                    if (v != null && !isU64(v)) {
                        return null;
                    }
                    opt[i] = v == null ? 0 : v.asLong();
                }
                // a name that is no context name cannot be a path segment here (chibi never writes one)
                if (ContextNames.isValid(name.asText())) {
                    out.putIfAbsent(name.asText(), new ContextEntry(name.asText(), c.get("created_at").asLong(),
                            opt[0], opt[1], opt[2]));
                }
            }
        } catch (IOException | RuntimeException e) {
            return null;
        }
        return out;
    }

    private static boolean isU64(JsonNode v) {
        return StrictJson.isU64(v);
    }

    private ContextEntry context(String name) throws IOException {
        ContextEntry c = contextList().get(name);
        if (c == null) {
            throw new NoSuchFileException("/" + name);
        }
        return c;
    }

    // ---- what chibi generates ----

    /** The site flock and the flocks {@code name} joined, sorted (chibi's flocks_for); no site id, no flocks. */
    private List<String> flocks(String name, boolean withSite) throws IOException {
        List<String> out = new ArrayList<>();
        Optional<String> site = siteId.get();
        if (site.isPresent()) {
            String siteFlock = FlockRegistry.siteFlock(site.get());
            if (withSite) {
                out.add(siteFlock);
            }
            out.addAll(registry.get().flocksFor(name, siteFlock));
        }
        return out;
    }

    /** {@code state.json}: serde_json's pretty print of chibi's ContextStateJson, field for field. */
    byte[] stateJson(String name) throws IOException {
        ContextEntry c = context(name);
        List<String> flocks = flocks(name, true);
        List<String> goals = new ArrayList<>();
        String siteFlock = siteId.get().map(FlockRegistry::siteFlock).orElse(null);
        for (String f : flocks) {
            // chibi's resolve_flock_vfs_root: this site's flock, or one named just "site", is /site;
            // a root its VfsPath refuses ('.', '..', '//', a trailing '/') has no goals path, and
            // chibi's VfsPath rule is ours
            String root = f.equals(siteFlock) || f.equals("site") ? "/site" : "/flocks/" + f;
            if (VfsPath.isValid(root)) {
                goals.add(root + "/goals.md");
            }
        }
        StringBuilder b = new StringBuilder("{\n");
        b.append("  \"created_at\": ").append(Long.toUnsignedString(c.createdAt())).append(",\n");
        b.append("  \"last_activity_at\": ").append(Long.toUnsignedString(c.lastActivityAt())).append(",\n");
        b.append("  \"prompt_count\": ").append(promptCount(name)).append(",\n");
        b.append("  \"auto_destroy_at\": ").append(c.destroyAt() == 0 ? "null" : Long.toUnsignedString(c.destroyAt())).append(",\n");
        b.append("  \"auto_destroy_after_inactive_secs\": ")
                .append(c.destroyAfterSecondsInactive() == 0 ? "null" : Long.toUnsignedString(c.destroyAfterSecondsInactive())).append(",\n");
        b.append("  \"flocks\": ");
        array(b, flocks, "  ");
        b.append(",\n  \"paths\": {\n    \"tasks\": ");
        string(b, "/home/" + name + "/tasks");
        b.append(",\n    \"goals\": ");
        array(b, goals, "    ");
        b.append("\n  }\n}");
        return b.toString().getBytes(StandardCharsets.UTF_8);
    }

    private static void array(StringBuilder b, List<String> items, String indent) {
        if (items.isEmpty()) {
            b.append("[]");
            return;
        }
        b.append("[\n");
        for (int i = 0; i < items.size(); i++) {
            b.append(indent).append("  ");
            string(b, items.get(i));
            b.append(i + 1 < items.size() ? ",\n" : "\n");
        }
        b.append(indent).append(']');
    }

    /** A JSON string as serde_json writes it: only '"', '\\' and control characters escaped. */
    private static void string(StringBuilder b, String s) {
        b.append('"');
        for (int i = 0; i < s.length(); i++) {
            char ch = s.charAt(i);
            switch (ch) {
                case '"': b.append("\\\""); break;
                case '\\': b.append("\\\\"); break;
                case '\n': b.append("\\n"); break;
                case '\r': b.append("\\r"); break;
                case '\t': b.append("\\t"); break;
                case '\b': b.append("\\b"); break;
                case '\f': b.append("\\f"); break;
                default:
                    if (ch < 0x20) {
                        b.append(String.format("\\u%04x", (int) ch));
                    } else {
                        b.append(ch);
                    }
            }
        }
        b.append('"');
    }

    /** {@code task-dirs}: a Scheme list of strings, as tein's printer writes it, without a newline. */
    byte[] taskDirs(String name) throws IOException {
        context(name);
        List<String> dirs = new ArrayList<>();
        dirs.add("/home/" + name + "/tasks");
        for (String f : flocks(name, true)) {
            dirs.add("/flocks/" + f + "/tasks");
        }
        StringBuilder b = new StringBuilder("(");
        for (int i = 0; i < dirs.size(); i++) {
            if (i > 0) {
                b.append(' ');
            }
            b.append('"');
            for (char ch : dirs.get(i).toCharArray()) {
                switch (ch) {
                    case '"': b.append("\\\""); break;
                    case '\\': b.append("\\\\"); break;
                    case '\n': b.append("\\n"); break;
                    case '\r': b.append("\\r"); break;
                    case '\t': b.append("\\t"); break;
                    case 0x07: b.append("\\a"); break;
                    case '\b': b.append("\\b"); break;
                    case 0: b.append("\\0"); break;
                    default: b.append(ch);
                }
            }
            b.append('"');
        }
        return b.append(')').toString().getBytes(StandardCharsets.UTF_8);
    }

    /** The transcript directory inside {@code contexts}: {@code <name>/transcript}, or the context directory in chibi's older layout. */
    private VfsPath transcriptDir(String name) throws IOException {
        VfsPath sub = VfsPath.of("/" + name + "/" + TRANSCRIPT);
        try {
            if (contexts().metadata(sub).isDirectory()) {
                return sub;
            }
        } catch (NoSuchFileException | NotDirectoryException e) {
            // the older layout
        }
        return VfsPath.of("/" + name);
    }

    /** The manifest, strictly as chibi's serde reads it; null when absent; IOException when malformed. */
    private JsonNode manifest(VfsPath dir) throws IOException {
        byte[] bytes;
        try {
            bytes = contexts().read(dir.child(MANIFEST));
        } catch (NoSuchFileException e) {
            return null;
        }
        JsonNode m;
        try {
            m = StrictJson.read(bytes);
        } catch (IOException e) {
            throw new IOException("bad manifest: " + e.getMessage());
        }
        JsonNode parts = m == null ? null : m.get("partitions");
        JsonNode policy = m == null ? null : m.get("rotation_policy");
        boolean ok = m != null && isU64(m.get("version")) && m.path("active_partition").isTextual()
                && parts != null && parts.isArray() && policy != null && policy.isObject()
                && isU64(policy.get("max_entries")) && isU64(policy.get("max_age_seconds"));
        for (int i = 0; ok && i < parts.size(); i++) {
            JsonNode p = parts.get(i);
            ok = p.path("file").isTextual() && isU64(p.get("start_ts")) && isU64(p.get("end_ts"))
                    && isU64(p.get("entry_count")) && (p.get("prompt_count") == null || isU64(p.get("prompt_count")));
        }
        if (!ok) {
            throw new IOException("bad manifest: " + dir.child(MANIFEST) + " is not chibi's manifest");
        }
        return m;
    }

    /** The active partition's path inside {@code contexts}, by the manifest (default active.jsonl). */
    private VfsPath activePartition(VfsPath dir) throws IOException {
        JsonNode m = manifest(dir);
        String active = m == null ? ACTIVE : m.get("active_partition").asText();
        try {
            return VfsPath.of(dir + "/" + active);
        } catch (RuntimeException e) {
            throw new NoSuchFileException(dir + "/" + active);
        }
    }

    /**
     * chibi's prompt count: the archived partitions' {@code prompt_count} and the user messages of
     * the active partition (its PartitionManager, where an older context's {@code context.jsonl}
     * is the active partition when there is no manifest); 0 when the manifest is malformed.
     */
    private long promptCount(String name) {
        try {
            VfsPath dir = transcriptDir(name);
            JsonNode m = manifest(dir);
            long archived = 0;
            String active = ACTIVE;
            if (m != null) {
                for (JsonNode p : m.get("partitions")) {
                    archived += p.path("prompt_count").asLong(0);
                }
                active = m.get("active_partition").asText();
            } else if (contexts().exists(dir.child("context.jsonl"))) {
                active = "context.jsonl";
            }
            return archived + userPrompts(VfsPath.of(dir + "/" + active));
        } catch (IOException | RuntimeException e) {
            return 0;
        }
    }

    private long userPrompts(VfsPath file) throws IOException {
        byte[] bytes;
        try {
            bytes = contexts().read(file);
        } catch (NoSuchFileException e) {
            return 0;
        }
        long n = 0;
        // a line that is not UTF-8 fails chibi's whole load (BufRead::lines), so its count is 0: report
        // it; lines end at '\n' alone (and a "\r\n" loses its '\r'), not at a bare '\r' as readLine's do
        String text = StandardCharsets.UTF_8.newDecoder()
                .onMalformedInput(java.nio.charset.CodingErrorAction.REPORT)
                .onUnmappableCharacter(java.nio.charset.CodingErrorAction.REPORT)
                .decode(ByteBuffer.wrap(bytes)).toString();
        for (String line : text.split("\n")) {
            if (line.endsWith("\r")) {
                line = line.substring(0, line.length() - 1);
            }
            if (line.isBlank()) {
                continue;
            }
            JsonNode e;
            try {
                e = StrictJson.read(line);
            } catch (IOException bad) {
                continue;
            }
            if (isTranscriptEntry(e) && e.get("entry_type").asText().equals("message")
                    && e.path("role").isTextual() && e.get("role").asText().equals("user")) {
                n++;
            }
        }
        return n;
    }

    /** Whether a line is an entry chibi's serde reads (the others it skips). */
    private static boolean isTranscriptEntry(JsonNode e) {
        if (e == null || !e.isObject() || !isU64(e.get("timestamp"))) {
            return false;
        }
        for (String f : new String[] {"id", "from", "to", "content", "entry_type"}) {
            if (!e.path(f).isTextual()) {
                return false;
            }
        }
        for (String f : new String[] {"tool_call_id", "role"}) {
            JsonNode v = e.get(f);
            if (v != null && !v.isNull() && !v.isTextual()) {
                return false;
            }
        }
        JsonNode fc = e.get("flow_control");
        if (fc != null && !fc.isBoolean()) {
            return false;
        }
        JsonNode md = e.get("metadata");
        return md == null || md.isNull() || md.isObject();
    }

    // ---- the tree ----

    /** What a path of the view is: generated, read through (with its path in {@code contexts}), or a directory. */
    private record Node(EntryKind kind, String context, String generated, VfsPath through) {
    }

    private Node node(VfsPath path) throws IOException {
        List<String> s = path.segments();
        if (s.isEmpty()) {
            return new Node(EntryKind.DIRECTORY, null, null, null);
        }
        String name = s.get(0);
        context(name);
        if (s.size() == 1) {
            return new Node(EntryKind.DIRECTORY, name, null, null);
        }
        String rest = String.join("/", s.subList(1, s.size()));
        switch (rest) {
            case STATE:
            case TASK_DIRS:
                return new Node(EntryKind.FILE, name, rest, null);
            case TRANSCRIPT:
            case TRANSCRIPT + "/" + PARTITIONS:
                return new Node(EntryKind.DIRECTORY, name, null, null);
            case TRANSCRIPT + "/" + MANIFEST:
                return new Node(EntryKind.FILE, name, null, transcriptDir(name).child(MANIFEST));
            case TRANSCRIPT + "/" + ACTIVE:
                return new Node(EntryKind.FILE, name, null, activePartition(transcriptDir(name)));
            default:
                if (s.size() == 4 && s.get(1).equals(TRANSCRIPT) && s.get(2).equals(PARTITIONS)) {
                    return new Node(EntryKind.FILE, name, null, transcriptDir(name).child(PARTITIONS).child(s.get(3)));
                }
                throw new NoSuchFileException(path.toString());
        }
    }

    private byte[] generate(Node n) throws IOException {
        return n.generated().equals(STATE) ? stateJson(n.context()) : taskDirs(n.context());
    }

    @Override
    public byte[] read(VfsPath path) throws IOException {
        Node n = node(path);
        if (n.kind() == EntryKind.DIRECTORY) {
            throw new IsDirectoryException(path.toString());
        }
        return n.generated() != null ? generate(n) : contexts().read(n.through());
    }

    @Override
    public List<Entry> entries(VfsPath path) throws IOException {
        Node n = node(path);
        if (n.kind() != EntryKind.DIRECTORY) {
            throw new NotDirectoryException(path.toString());
        }
        List<Entry> out = new ArrayList<>();
        List<String> s = path.segments();
        if (s.isEmpty()) {
            contextList().keySet().forEach(c -> out.add(new Entry(c, EntryKind.DIRECTORY)));
        } else if (s.size() == 1) {
            out.add(new Entry(STATE, EntryKind.FILE));
            out.add(new Entry(TASK_DIRS, EntryKind.FILE));
            out.add(new Entry(TRANSCRIPT, EntryKind.DIRECTORY));
        } else if (s.size() == 2) {
            // chibi names all three; a mount lists only what a lookup finds
            for (String f : new String[] {MANIFEST, ACTIVE}) {
                if (exists(path.child(f))) {
                    out.add(new Entry(f, EntryKind.FILE));
                }
            }
            out.add(new Entry(PARTITIONS, EntryKind.DIRECTORY));
        } else {
            JsonNode m = manifest(transcriptDir(n.context()));
            if (m != null) {
                for (JsonNode p : m.get("partitions")) {
                    String file = p.get("file").asText();
                    String last = file.substring(file.lastIndexOf('/') + 1);
                    if (!last.isEmpty() && !last.equals(".") && !last.equals("..")) {
                        out.add(new Entry(last, EntryKind.FILE));
                    }
                }
            }
        }
        return out;
    }

    @Override
    public void forEachEntry(VfsPath path, EntrySink sink) throws IOException {
        EntrySink.feed(entries(path), sink);
    }

    @Override
    public boolean exists(VfsPath path) throws IOException {
        try {
            metadata(path);
            return true;
        } catch (NoSuchFileException | NotDirectoryException e) {
            return false;
        }
    }

    @Override
    public Metadata metadata(VfsPath path) throws IOException {
        Node n = node(path);
        if (n.through() != null) {
            Metadata m = contexts().metadata(n.through());
            if (!m.isFile()) {
                throw new NoSuchFileException(path.toString()); // a link or directory there is not chibi's file
            }
            return new Metadata(m.kind(), m.size(), m.created(), m.modified(), m.accessed(), m.changed(), 1, 0444, m.inode(),
                    m.blocks(), m.device());
        }
        FileTime t = stateTime();
        long inode = syntheticInode(path);
        if (n.kind() == EntryKind.DIRECTORY) {
            return new Metadata(EntryKind.DIRECTORY, BLOCK_SIZE, t, t, t, t, 2, 0555, inode);
        }
        return generatedMetadata(path, generated(path, n));
    }

    /**
     * When this view was made (the mount's start): the time of what is made from chibi's state file
     * while there is none, which showed as 1 Jan 1970 in {@code ls -l /sys/contexts}.
     */
    private final FileTime opened = FileTime.from(java.time.Instant.now());

    /** The state file's mtime, or while there is none, {@link #opened}. */
    private FileTime stateTime() {
        FileStamp stamp = state.get().stamp();
        return stamp == null || stamp == FileStamp.MISSING ? opened
                : FileTime.from(java.time.Instant.ofEpochSecond(0, stamp.modifiedNanos()));
    }

    private static Metadata generatedMetadata(VfsPath path, Generated g) {
        FileTime t = g.since();
        return new Metadata(EntryKind.FILE, g.bytes().length, t, t, t, t, 1, 0444, syntheticInode(path));
    }

    /** Generated file {@code n} at {@code path} as it is now, with the time it first was so (see {@link #generatedSince}). */
    private Generated generated(VfsPath path, Node n) throws IOException {
        byte[] now = generate(n);
        FileTime first = stateTime();
        return generatedSince.compute(path, (p, was) -> {
            if (was != null && Arrays.equals(was.bytes(), now)) {
                return was;
            }
            if (was == null) {
                return new Generated(now, first);
            }
            // later than the version before, even within one tick of the clock
            java.time.Instant at = java.time.Instant.now();
            java.time.Instant after = was.since().toInstant().plusNanos(1);
            return new Generated(now, FileTime.from(at.isAfter(after) ? at : after));
        });
    }

    /** A stable inode for a generated name, high above the real ones of the contexts directory's file system. */
    private static long syntheticInode(VfsPath path) {
        long h = Fnv.hash64(path.toString().getBytes(StandardCharsets.UTF_8));
        return (h & 0x0000_ffff_ffff_ffffL) | 0x0001_0000_0000_0000L;
    }

    @Override
    public FileHandle open(VfsPath path, Set<OpenFlag> flags, int createMode) throws IOException {
        for (OpenFlag f : flags) {
            if (f != OpenFlag.READ) {
                throw new ReadOnlyStoreException(path.toString(), NAME);
            }
        }
        Node n = node(path);
        if (n.kind() == EntryKind.DIRECTORY) {
            throw new IsDirectoryException(path.toString());
        }
        if (n.through() != null) {
            metadata(path);
            return contexts().open(n.through(), flags, createMode);
        }
        Generated g = generated(path, n);
        return new SnapshotHandle(g.bytes(), generatedMetadata(path, g));
    }

    /** A generated file as it was at its open: reads see one version, whatever changes meanwhile. */
    private static final class SnapshotHandle implements ReadOnlyFileHandle {
        private final byte[] bytes;
        private final Metadata metadata;

        SnapshotHandle(byte[] bytes, Metadata m) {
            this.bytes = bytes;
            this.metadata = new Metadata(m.kind(), bytes.length, m.created(), m.modified(), m.accessed(), m.changed(),
                    m.links(), m.mode(), m.inode());
        }

        @Override
        public int read(ByteBuffer dst, long position) {
            if (position >= bytes.length) {
                return 0;
            }
            int n = (int) Math.min(dst.remaining(), bytes.length - position);
            dst.put(bytes, (int) position, n);
            return n;
        }

        @Override
        public ReadOnlyStoreException refusal() {
            return new ReadOnlyStoreException("", NAME);
        }

        @Override
        public long inode() {
            return metadata.inode();
        }

        @Override
        public Metadata opened() {
            return metadata;
        }

        @Override
        public Metadata metadata() {
            return metadata;
        }

        @Override
        public long size() {
            return bytes.length;
        }

        /** A snapshot of what chibi wrote: nothing shares it to lock against. */
        @Override
        public FileLocks locks() throws LocksUnavailableException {
            throw new LocksUnavailableException("this store keeps no locks");
        }

        @Override
        public void close() {
        }
    }

    // ---- every change is refused ----

    @Override
    public String storeName() {
        return NAME;
    }

    @Override
    public String readLink(VfsPath path) throws IOException {
        throw ErrnoException.of(Linux.EINVAL, path.toString(), null);
    }

    @Override
    public SpaceInfo space() {
        return new SpaceInfo(BLOCK_SIZE, 0, 0, 0, Linux.NAME_MAX, 0, 0);
    }

    @Override
    public synchronized void close() throws IOException {
        if (contextsStore != null) {
            contextsStore.close();
        }
    }
}
