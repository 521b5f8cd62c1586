package dev.chibifs.store.s3;

import dev.chibifs.store.ContentHash;
import dev.chibifs.store.StoreSpec;
import dev.chibifs.sys.InvalidSpecException;

import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.HashSet;
import java.util.Locale;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * A parsed store spec {@code s3://BUCKET/KEYPREFIX[?endpoint=URL&region=R]}: where the namespace
 * lives in S3. The key prefix may be empty; it never starts or ends with '/'.
 *
 * @param endpoint the endpoint from the spec, null to take it the way the AWS tools do
 * @param region the region from the spec, null likewise
 */
record S3Spec(String bucket, String keyPrefix, URI endpoint, String region) {

    public static final String SCHEME = "s3://";

    /** S3's bucket naming rule (the lenient legacy form, which MinIO and Ceph still allow). */
    private static final int MAX_PORT = 65_535;

    private static final Pattern BUCKET = Pattern.compile("[a-z0-9][a-z0-9._-]{2,254}");

    /** Parses {@code spec}; an {@link InvalidSpecException} names the value and the rule it breaks. */
    public static S3Spec parse(String spec) {
        if (spec == null || !spec.startsWith(SCHEME)) {
            throw new InvalidSpecException("'" + spec + "' is not an S3 store: write s3://BUCKET/KEYPREFIX");
        }
        refuseCredentials(spec);
        String rest = spec.substring(SCHEME.length());
        String query = null;
        int q = rest.indexOf('?');
        if (q >= 0) {
            query = rest.substring(q + 1);
            rest = rest.substring(0, q);
        }
        int slash = rest.indexOf('/');
        String bucket = slash < 0 ? rest : rest.substring(0, slash);
        String prefix = slash < 0 ? "" : rest.substring(slash + 1);
        if (!BUCKET.matcher(bucket).matches()) {
            throw new InvalidSpecException("'" + spec + "': bucket '" + bucket
                    + "' is not a bucket name (lower-case letters, digits, '.', '-', '_'; 3 to 255 characters)");
        }
        while (prefix.endsWith("/")) {
            prefix = prefix.substring(0, prefix.length() - 1);
        }
        if (prefix.startsWith("/") || prefix.contains("//")) {
            throw new InvalidSpecException("'" + spec + "': key prefix '" + prefix + "' has an empty segment");
        }
        URI endpoint = null;
        String region = null;
        if (query != null && !query.isEmpty()) {
            Set<String> seen = new HashSet<>();
            for (String pair : query.split("&")) {
                int eq = pair.indexOf('=');
                String key = eq < 0 ? pair : pair.substring(0, eq);
                String value = eq < 0 ? "" : decode(spec, key, pair.substring(eq + 1));
                if (!seen.add(key)) {
                    // which one counts would be the parser's whim: a second endpoint is most likely a mistake
                    throw new InvalidSpecException("'" + spec + "': option '" + key + "' is given twice: give it once");
                }
                switch (key) {
                    case "endpoint" -> endpoint = endpoint(spec, value);
                    case "region" -> {
                        if (value.isEmpty()) {
                            throw new InvalidSpecException("'" + spec + "': region is empty");
                        }
                        region = value;
                    }
                    default -> throw new InvalidSpecException("'" + spec + "': unknown option '" + key
                            + "' (known: endpoint, region)");
                }
            }
        }
        return new S3Spec(bucket, prefix, endpoint, region);
    }

    /**
     * Refuses an endpoint with {@code USER:PASSWORD@} before any other check, so no message (a bad escape, an
     * option given twice) echoes the password: the spec goes on the daemon's command line, into the log, the
     * cache's record of its store and {@code status}, and the SDK signs with the AWS credentials anyway, never
     * with these.
     */
    private static void refuseCredentials(String spec) {
        int q = spec.indexOf('?');
        for (String pair : q < 0 ? new String[0] : spec.substring(q + 1).split("&")) {
            // '@' has no other use in an endpoint, and one escaped as %40 is still there after decoding
            if (pair.startsWith("endpoint=") && (pair.contains("@") || pair.toLowerCase(Locale.ROOT).contains("%40"))) {
                throw new InvalidSpecException("'" + StoreSpec.shown(spec) + "': an endpoint with user info"
                        + " (USER:PASSWORD@): give it as http(s)://HOST[:PORT]; credentials come from AWS_ACCESS_KEY_ID"
                        + " and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE and the AWS tools' other sources), never from"
                        + " the URL");
            }
        }
    }

    private static String decode(String spec, String key, String value) {
        try {
            return URLDecoder.decode(value, StandardCharsets.UTF_8);
        } catch (IllegalArgumentException e) {
            throw new InvalidSpecException("'" + spec + "': option '" + key + "' has a bad escape in '" + value
                    + "': '%' starts an escape of two hex digits (%3A), '%25' is '%' itself");
        }
    }

    private static URI endpoint(String spec, String value) {
        URI uri = null;
        try {
            uri = URI.create(value);
        } catch (IllegalArgumentException e) {
            // reported below, with the rule
        }
        String scheme = uri == null || uri.getScheme() == null ? "" : uri.getScheme().toLowerCase(Locale.ROOT);
        if (!(scheme.equals("http") || scheme.equals("https")) || uri.getHost() == null) {
            throw new InvalidSpecException("'" + spec + "': endpoint '" + value
                    + "' is not an http:// or https:// URL with a host");
        }
        // URI takes any number of digits; the SDK refused a port past 65535 only at the first request
        if (uri.getPort() == 0 || uri.getPort() > MAX_PORT) {
            throw new InvalidSpecException("'" + spec + "': endpoint '" + value + "' has port " + uri.getPort()
                    + ": a port is 1 to " + MAX_PORT);
        }
        return uri;
    }

    /** The S3 key of a namespace path given relative to the root ("" for the root itself). */
    String key(String relative) {
        if (keyPrefix.isEmpty()) {
            return relative;
        }
        return relative.isEmpty() ? keyPrefix : keyPrefix + "/" + relative;
    }

    /** A file-system-safe name for this store, for its default cache directory. */
    public String cacheName() {
        String raw = bucket + (keyPrefix.isEmpty() ? "" : "_" + keyPrefix);
        return "s3-" + raw.replaceAll("[^A-Za-z0-9._-]", "_");
    }

    /**
     * Eight hex digits of the SHA-256 of the bucket and key prefix exactly: the default cache name of a
     * store whose {@link #cacheName()} another store's directory already has.
     */
    String identityHash() {
        byte[] sha = ContentHash.digest().digest((bucket + "/" + keyPrefix).getBytes(StandardCharsets.UTF_8));
        return java.util.HexFormat.of().formatHex(sha, 0, IDENTITY_HASH_BYTES);
    }

    /** Four bytes: a second store of one cache name is rare, and another of its hash too, then refused at open. */
    private static final int IDENTITY_HASH_BYTES = 4;

    @Override
    public String toString() {
        return SCHEME + bucket + "/" + keyPrefix;
    }
}
