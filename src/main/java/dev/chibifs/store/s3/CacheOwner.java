package dev.chibifs.store.s3;

import dev.chibifs.config.HomeFile;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;

/**
 * The store a cache directory belongs to, in its file {@value #FILE}: the bucket and key prefix its
 * journal's paths are keys below, and the endpoint they were uploaded to. Written when the directory
 * is first used (or first used by a chibifs that writes it: a directory without one is adopted), and
 * checked before the journal is replayed, since a journal replayed into another store uploads its
 * changes there (a tester's pending files went to {@code s3://chibi/ns2} from a cache of {@code ns1}).
 *
 * @param bucket the bucket
 * @param keyPrefix the key prefix, as {@link S3Spec#keyPrefix()}
 * @param endpoint where the bucket was reached ({@link Bucket#where()}: the endpoint, or AWS and its region)
 */
record CacheOwner(String bucket, String keyPrefix, String endpoint) {

    private static final Logger LOG = LoggerFactory.getLogger(CacheOwner.class);

    /** The record's file in the cache directory. */
    static final String FILE = "store";

    static CacheOwner of(S3Spec spec, String endpoint) {
        return new CacheOwner(spec.bucket(), spec.keyPrefix(), endpoint);
    }

    /** Whether this is the record of the store {@code spec}: one bucket and key prefix, whatever the endpoint. */
    boolean owns(S3Spec spec) {
        return bucket.equals(spec.bucket()) && keyPrefix.equals(spec.keyPrefix());
    }

    /** The store as a spec would name it. */
    String store() {
        return S3Spec.SCHEME + bucket + "/" + keyPrefix;
    }

    /**
     * The record of {@code dir}; null where it has none (absent, or made by a chibifs older than the
     * record). A record that cannot be read is an {@link IOException} naming it: whose changes the
     * journal holds is then not known, so nothing of it may be replayed.
     */
    /** A record is a bucket, a prefix and an endpoint: far below this. */
    private static final long RECORD_LIMIT = 64 << 10;

    static CacheOwner read(Path dir) throws IOException {
        Path file = dir.resolve(FILE);
        String text;
        try {
            // as chibi's own files are read: a fifo or a link to /dev/zero there hung or ended the daemon
            text = new String(HomeFile.read(file, RECORD_LIMIT), StandardCharsets.UTF_8);
        } catch (NoSuchFileException e) {
            return null;
        }
        try {
            JsonNode o = Journal.JSON.readTree(text);
            if (o != null && o.path("bucket").isTextual() && o.path("prefix").isTextual()) {
                return new CacheOwner(o.get("bucket").asText(), o.get("prefix").asText(),
                        o.path("endpoint").isTextual() ? o.get("endpoint").asText() : null);
            }
        } catch (JsonProcessingException e) {
            // said below
        }
        throw new IOException("cache directory " + dir + ": " + file + " does not say which S3 store the directory"
                + " belongs to (not {\"bucket\":...,\"prefix\":...}): give this store another --cache-dir, remove "
                + dir + " once the store it belongs to has its changes, or remove " + file + " to take the directory"
                + " as this store's");
    }

    /**
     * Makes {@code dir} the cache of {@code spec}, reached at {@code endpoint}, before its journal is
     * read: refused, naming both stores and the ways out, where the directory belongs to another store.
     * Under the directory's lock, so no other process reads or writes the record meanwhile. Returns the
     * record as it was (null: none), which a refused open puts back ({@link MadeAtOpen}).
     */
    static CacheOwner claim(Path dir, S3Spec spec, String endpoint) throws IOException {
        CacheOwner mine = of(spec, endpoint);
        CacheOwner recorded = read(dir);
        if (recorded != null && !recorded.owns(spec)) {
            throw new IOException("cache directory " + dir + " belongs to the S3 store " + recorded.store()
                    + ", not to " + mine.store() + " (nothing of it is used): give " + mine.store()
                    + " a --cache-dir of its own, or remove " + dir + " once " + recorded.store()
                    + " has its changes (mount it with this cache directory, then umount)");
        }
        // Another endpoint only warns: one bucket is reached under several names (a host name and its
        // address, AWS_ENDPOINT_URL or ?endpoint=, a proxy), and scripts/s3-loopback.sh takes a free
        // port at each start over the same objects, so a refusal would strand the changes of a cache
        // that is the store's. The tests' S3Server keeps its port across a stop and start, so none of
        // them needs this; an operator might. Every upload is conditional on the version this host saw
        // (If-Match, If-None-Match: *), so at another service a replay adds files, overwriting none.
        if (recorded != null && recorded.endpoint != null && endpoint != null && !recorded.endpoint.equals(endpoint)) {
            LOG.warn("cache directory {} of S3 store {} was last used with it at {}, now at {}: what it holds"
                    + " not yet sent goes to {}", dir, mine.store(), recorded.endpoint, endpoint, endpoint);
        }
        if (recorded == null && hasJournal(dir)) {
            // made by a chibifs before the record: nothing says whose changes its journal holds
            LOG.warn("cache directory {} has no record of its S3 store (made by an older chibifs): taken as {}'s,"
                    + " and the changes its journal holds go up there", dir, mine.store());
        }
        if (!mine.equals(recorded)) {
            write(dir, mine);
        }
        return recorded;
    }

    private static boolean hasJournal(Path dir) {
        try {
            return Files.size(dir.resolve(S3Storage.JOURNAL_FILE)) > 0;
        } catch (IOException none) {
            return false;
        }
    }

    /** Writes the record atomically: a temporary file, forced, renamed over the record. */
    static void write(Path dir, CacheOwner owner) throws IOException {
        ObjectNode o = Journal.JSON.createObjectNode();
        o.put("bucket", owner.bucket).put("prefix", owner.keyPrefix);
        if (owner.endpoint != null) {
            o.put("endpoint", owner.endpoint);
        }
        byte[] text = (Journal.JSON.writeValueAsString(o) + "\n").getBytes(StandardCharsets.UTF_8);
        Path tmp = dir.resolve(FILE + ".tmp");
        // through a descriptor of ours, so a full cache disk is ENOSPC (the JDK's Files.write carries no errno)
        try (CacheFile f = CacheFile.replace(tmp)) {
            f.write(ByteBuffer.wrap(text), 0);
            f.force(true);
        }
        Files.move(tmp, dir.resolve(FILE), StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    }
}
