package dev.chibifs.config;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParseException;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.math.BigInteger;
import java.util.ArrayDeque;
import java.util.Deque;

/**
 * JSON read as chibi's serde_json reads its files (registry.json, site.json, state.json,
 * transcripts) into its structs: what chibi cannot read grants nothing, and what it reads must
 * not be refused here. So the whole text is UTF-8 JSON with nothing after the value (no byte-order
 * mark, no NUL: Jackson would take UTF-16 for it), while what serde only refuses in a field its
 * struct has (that field given twice, a string with a lone surrogate escape, {@code -0} or an
 * integer too long for a u64 where a u64 is wanted) reads here as {@link #NOT_READABLE}, which is
 * no value a reader takes: refused where the reader looks, ignored elsewhere, as serde ignores the
 * fields its struct lacks. No limit on nesting, names or numbers but serde's own (it skips what it
 * ignores without one).
 */
public final class StrictJson {

    /** What a field reads as where serde would fail to read it: a key given twice, a lone surrogate, {@code -0}. */
    public static final JsonNode NOT_READABLE = JsonNodeFactory.instance.pojoNode("not readable by chibi");

    private static final JsonFactory FACTORY = JsonFactory.builder()
            .streamReadConstraints(StreamReadConstraints.builder().maxNestingDepth(Integer.MAX_VALUE)
                    .maxNameLength(Integer.MAX_VALUE).maxNumberLength(Integer.MAX_VALUE).maxStringLength(Integer.MAX_VALUE).build())
            .build();
    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;
    /** The most digits a u64 has; a longer integer is no u64, and is not parsed at all. */
    private static final int U64_DIGITS = 20;
    private static final BigInteger U64_MAX = BigInteger.ONE.shiftLeft(64).subtract(BigInteger.ONE);

    private StrictJson() {
    }

    /** The value {@code json} holds; malformed (as serde_json says of the whole text) is a {@link JsonParseException}. */
    public static JsonNode read(byte[] json) throws IOException {
        if (json.length >= 3 && (json[0] & 0xff) == 0xef && (json[1] & 0xff) == 0xbb && (json[2] & 0xff) == 0xbf) {
            throw new JsonParseException((JsonParser) null, "a byte-order mark, which chibi's serde_json refuses");
        }
        for (byte b : json) {
            if (b == 0) {
                throw new JsonParseException((JsonParser) null, "a NUL byte: not UTF-8 JSON (UTF-16?), which chibi's serde_json refuses");
            }
        }
        try (JsonParser p = FACTORY.createParser(json)) {
            JsonNode root = tree(p);
            if (p.nextToken() != null) {
                throw new JsonParseException(p, "trailing characters after the value");
            }
            return root;
        }
    }

    /** The value {@code json} holds, as {@link #read(byte[])}. */
    public static JsonNode read(String json) throws IOException {
        return read(json.getBytes(java.nio.charset.StandardCharsets.UTF_8));
    }

    /** Whether {@code v} is a JSON integer serde reads as a u64: no fraction, exponent or sign, 0 to 2^64-1. */
    public static boolean isU64(JsonNode v) {
        return v != null && v.isIntegralNumber() && v.bigIntegerValue().signum() >= 0
                && v.bigIntegerValue().compareTo(U64_MAX) <= 0;
    }

    /** Builds the tree of the next value without recursion (serde skips deep values it ignores). */
    private static JsonNode tree(JsonParser p) throws IOException {
        Deque<JsonNode> open = new ArrayDeque<>();
        Deque<String> keys = new ArrayDeque<>();
        JsonNode done = null;
        for (JsonToken t = p.nextToken(); t != null; t = p.nextToken()) {
            JsonNode value;
            switch (t) {
                case START_OBJECT -> {
                    open.push(NODES.objectNode());
                    continue;
                }
                case START_ARRAY -> {
                    open.push(NODES.arrayNode());
                    continue;
                }
                case FIELD_NAME -> {
                    keys.push(p.currentName());
                    continue;
                }
                case END_OBJECT, END_ARRAY -> value = open.pop();
                case VALUE_STRING -> value = hasLoneSurrogate(p.getText()) ? NOT_READABLE : NODES.textNode(p.getText());
                case VALUE_NUMBER_INT -> value = integer(p.getText());
                case VALUE_NUMBER_FLOAT -> value = NODES.numberNode(p.getDoubleValue());
                case VALUE_TRUE -> value = NODES.booleanNode(true);
                case VALUE_FALSE -> value = NODES.booleanNode(false);
                case VALUE_NULL -> value = NODES.nullNode();
                default -> throw new JsonParseException(p, "unexpected " + t);
            }
            JsonNode parent = open.peek();
            if (parent == null) {
                done = value;
                break;
            }
            if (parent instanceof ObjectNode o) {
                String key = keys.pop();
                // a key given twice: serde's "duplicate field" where its struct has the field
                o.set(key, o.has(key) ? NOT_READABLE : value);
            } else {
                ((ArrayNode) parent).add(value);
            }
        }
        if (done == null) {
            throw new JsonParseException(p, "no value");
        }
        return done;
    }

    /** An integer as serde reads it: {@code -0} is a float, and one longer than any u64 is none. */
    private static JsonNode integer(String text) {
        if (text.equals("-0")) {
            return NODES.numberNode(-0.0);
        }
        if (text.length() > U64_DIGITS + 1) {
            return NOT_READABLE;
        }
        return NODES.numberNode(new BigInteger(text));
    }

    private static boolean hasLoneSurrogate(String s) {
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (Character.isHighSurrogate(c) && i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1))) {
                i++;
            } else if (Character.isSurrogate(c)) {
                return true;
            }
        }
        return false;
    }
}
