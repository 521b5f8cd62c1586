package dev.chibifs.config;

import com.fasterxml.jackson.core.JsonParseException;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;

import java.io.IOException;

/**
 * JSON read as strictly as chibi's serde_json reads its files (registry.json, site.json,
 * state.json, transcripts): a key given twice, anything after the value, or a byte-order mark
 * is malformed, where Jackson would take it. What chibi cannot read grants nothing, so what we
 * read must fail where chibi's read fails.
 */
public final class StrictJson {

    private static final ObjectMapper JSON = JsonMapper.builder()
            .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .build();

    private StrictJson() {
    }

    /** The value {@code json} holds; malformed (as serde_json says) is a {@link JsonParseException} or other IOException. */
    public static JsonNode read(byte[] json) throws IOException {
        if (json.length >= 3 && (json[0] & 0xff) == 0xef && (json[1] & 0xff) == 0xbb && (json[2] & 0xff) == 0xbf) {
            throw new JsonParseException((JsonParser) null, "a byte-order mark, which chibi's serde_json refuses");
        }
        return JSON.readTree(json);
    }

    /** The value {@code json} holds, as {@link #read(byte[])}. */
    public static JsonNode read(String json) throws IOException {
        return read(json.getBytes(java.nio.charset.StandardCharsets.UTF_8));
    }

    /** Whether {@code v} is a JSON integer serde reads as a u64: no fraction or exponent, 0 to 2^64-1. */
    public static boolean isU64(JsonNode v) {
        return v != null && v.isIntegralNumber() && v.bigIntegerValue().signum() >= 0
                && v.bigIntegerValue().bitLength() <= 64;
    }
}
