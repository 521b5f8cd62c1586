package dev.chibifs.store.s3;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Iterator;
import java.util.Map;
import java.util.TreeMap;

/**
 * A file's extended attributes as one value of its object's user metadata: a JSON object of name
 * to Base64 value, itself in URL-safe Base64, since S3 carries metadata as HTTP headers of
 * US-ASCII. The journal keeps the same text.
 */
final class ObjectXattrs {

    /** The metadata key (x-amz-meta-chibi-xattrs). */
    static final String META_KEY = "chibi-xattrs";
    /**
     * The most the encoded attributes may take: S3 limits an object's user metadata to 2 KiB (keys
     * and values, counted in UTF-8), and the SHA-256, execute bits and mtime the store keeps there
     * besides take about 150 bytes.
     */
    static final int MAX_ENCODED = 2048 - 160 - META_KEY.length();

    private ObjectXattrs() {
    }

    /** The metadata value for {@code xattrs}, which is not empty. */
    static String encode(Map<String, byte[]> xattrs) {
        ObjectNode o = Journal.JSON.createObjectNode();
        Base64.Encoder values = Base64.getEncoder();
        xattrs.forEach((name, value) -> o.put(name, values.encodeToString(value)));
        try {
            return Base64.getUrlEncoder().withoutPadding().encodeToString(
                    Journal.JSON.writeValueAsBytes(o));
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("an object of strings is always JSON", e);
        }
    }

    /** The attributes a metadata value holds; null for none, or for a value this store did not write. */
    static Map<String, byte[]> decode(String encoded) {
        if (encoded == null || encoded.isEmpty()) {
            return null;
        }
        try {
            JsonNode o = Journal.JSON.readTree(new String(Base64.getUrlDecoder().decode(encoded), StandardCharsets.UTF_8));
            if (o == null || !o.isObject() || o.isEmpty()) {
                return null;
            }
            Map<String, byte[]> xattrs = new TreeMap<>();
            Base64.Decoder values = Base64.getDecoder();
            for (Iterator<Map.Entry<String, JsonNode>> it = o.fields(); it.hasNext(); ) {
                Map.Entry<String, JsonNode> e = it.next();
                if (!e.getValue().isTextual()) {
                    return null;
                }
                xattrs.put(e.getKey(), values.decode(e.getValue().asText()));
            }
            return xattrs;
        } catch (IllegalArgumentException | JsonProcessingException e) {
            return null; // another tool's metadata under our key: the object has none of ours
        }
    }

    /** Whether {@code xattrs} fit in an object's metadata. */
    static boolean fit(Map<String, byte[]> xattrs) {
        return xattrs.isEmpty() || encode(xattrs).length() <= MAX_ENCODED;
    }
}
