package dev.chibifs.store;

import dev.chibifs.sys.InvalidSpecException;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What {@code --store PREFIX=SPEC} names as SPEC: the one place a store kind is parsed and
 * opened. {@code memory[:SIZE]} (a scratch store in the daemon's memory, empty at mount, gone
 * at unmount; SIZE bytes with an optional K, M or G, default 256M) and {@code readonly:DIR} (a
 * host directory shown read-only). A new kind is one more case in {@link #parse}.
 */
public interface StoreSpec {

    /** The form of every kind, for messages naming the rule. */
    String RULE = "SPEC is memory[:SIZE] (SIZE in bytes with an optional K, M or G, default 256M), readonly:DIR"
            + " (an existing directory) or s3://BUCKET/KEYPREFIX[?endpoint=URL&region=R]";

    /** The prefix of a read-only host directory's spec, {@code readonly:DIR}. */
    String READONLY = "readonly:";

    /** The default size of a memory store. */
    long DEFAULT_MEMORY_SIZE = 256L << 20;

    /** The spec as it should be written again (a directory made absolute), for status and for the daemon's command line. */
    String text();

    /** Opens the store: a new, empty one for memory. */
    Storage open() throws IOException;

    /**
     * Whether this store may serve the whole namespace ({@code --store /=SPEC}) in place of
     * {@code <home>/vfs}: a store that keeps what is written and that several hosts share. Not a
     * memory store (everything gone at unmount) nor a read-only one (nothing could be written).
     */
    default boolean servesRoot() {
        return false;
    }

    /** The host directory this store shows ({@code readonly:DIR}), if any: a mountpoint inside it would serve itself. */
    default java.util.Optional<Path> shownDirectory() {
        return java.util.Optional.empty();
    }

    /**
     * A kind of store parsed outside this package (the S3 store lives in {@code store.s3}, which
     * depends on this one, so it is handed in by the front end rather than named here).
     */
    @FunctionalInterface
    interface Kind {
        /** No kinds beyond memory and readonly. */
        Kind NONE = spec -> null;

        /** The spec when it is of this kind, else null; an {@link InvalidSpecException} when it is but is malformed. */
        StoreSpec parse(String spec);
    }

    /** Parses {@code spec}; an {@link InvalidSpecException} says what is wrong and the rule. */
    static StoreSpec parse(String spec) {
        return parse(spec, Kind.NONE);
    }

    /** {@link #parse(String)}, trying {@code more} before refusing a spec as unknown. */
    static StoreSpec parse(String spec, Kind more) {
        StoreSpec other = more.parse(spec);
        if (other != null) {
            return other;
        }
        if (spec.equals("memory") || spec.startsWith("memory:")) {
            return Memory.parse(spec);
        }
        if (spec.startsWith(READONLY)) {
            return ReadOnlyDirectory.parse(spec);
        }
        throw new InvalidSpecException("unknown store '" + shown(spec) + "': " + RULE);
    }

    /** What a message shows in place of a password written into a spec: never the password itself. */
    String MASKED_PASSWORD = "***";

    /**
     * {@code text} (a spec, or {@code PREFIX=SPEC}) as a message may show it: the user info of a URL in an
     * option ({@code ?endpoint=http://USER:PASSWORD@HOST}, plain or %-escaped) with the password, or the whole
     * user info when it has no ':', as {@link #MASKED_PASSWORD}. No store takes a credential from its spec, so
     * one there was written by mistake, and a message goes to a terminal, a log, a journal.
     */
    static String shown(String text) {
        int q = text.indexOf('?');
        if (q < 0) {
            return text;
        }
        StringBuilder out = new StringBuilder(text.substring(0, q + 1));
        String[] pairs = text.substring(q + 1).split("&", -1);
        for (int i = 0; i < pairs.length; i++) {
            String pair = pairs[i];
            if (i > 0) {
                out.append('&');
            }
            int eq = pair.indexOf('=');
            String value = eq < 0 ? "" : leniently(pair.substring(eq + 1));
            int at = value.lastIndexOf('@');
            if (at < 0) {
                out.append(pair);
                continue;
            }
            int scheme = value.indexOf("://");
            int start = scheme < 0 ? 0 : scheme + "://".length();
            int colon = value.indexOf(':', start);
            int from = colon >= 0 && colon < at ? colon + 1 : start;
            out.append(pair, 0, eq + 1).append(value, 0, from).append(MASKED_PASSWORD).append(value, at, value.length());
        }
        return out.toString();
    }

    /** A query value %-decoded, or as written when it has a bad escape (refused elsewhere, with the rule). */
    private static String leniently(String value) {
        try {
            return java.net.URLDecoder.decode(value, java.nio.charset.StandardCharsets.UTF_8);
        } catch (IllegalArgumentException e) {
            return value;
        }
    }

    /**
     * The bytes a size in a store's options stands for: a number with an optional K, M or G (and B or
     * iB): {@code 512M}, {@code 20G}, {@code 4096}. -1 when {@code size} is not one, -2 past what a
     * long holds.
     */
    static long bytes(String size) {
        Matcher m = Pattern.compile("([0-9]{1,19})([KMG]?)(I?B)?").matcher(size.toUpperCase(Locale.ROOT));
        if (!m.matches()) {
            return -1;
        }
        int shift = switch (m.group(2)) {
            case "K" -> 10;
            case "M" -> 20;
            case "G" -> 30;
            default -> 0;
        };
        long n;
        try {
            n = Long.parseLong(m.group(1));
        } catch (NumberFormatException e) {
            return -2;
        }
        return n > (Long.MAX_VALUE >> 1) >> shift ? -2 : n << shift;
    }

    /** {@code memory[:SIZE]}. */
    record Memory(long size) implements StoreSpec {

        static Memory parse(String spec) {
            if (spec.equals("memory")) {
                return new Memory(DEFAULT_MEMORY_SIZE);
            }
            String size = spec.substring("memory:".length());
            long n = bytes(size);
            if (n == -1) {
                throw new InvalidSpecException("invalid size '" + size + "' in '" + spec + "': " + RULE);
            }
            if (n <= 0) {
                throw new InvalidSpecException("invalid size '" + size + "' in '" + spec + "': "
                        + (n == -2 ? "too large for a size in bytes, " : "more than 0 bytes, ") + RULE);
            }
            return new Memory(n);
        }

        @Override
        public String text() {
            long s = size;
            String unit = "";
            for (String u : new String[] {"K", "M", "G"}) {
                if (s % 1024 == 0 && s >= 1024) {
                    s /= 1024;
                    unit = u;
                }
            }
            return "memory:" + s + unit;
        }

        @Override
        public Storage open() {
            return new MemoryStorage(size);
        }
    }

    /** {@code readonly:DIR}. */
    record ReadOnlyDirectory(Path dir) implements StoreSpec {
        static ReadOnlyDirectory parse(String spec) {
            String d = spec.substring(READONLY.length());
            if (d.isEmpty()) {
                throw new InvalidSpecException("'" + spec + "' names no directory: " + RULE);
            }
            Path dir = Path.of(d).toAbsolutePath().normalize();
            if (!Files.isDirectory(dir)) {
                throw new InvalidSpecException("'" + spec + "': " + dir + " is not an existing directory; " + RULE);
            }
            return new ReadOnlyDirectory(dir);
        }

        @Override
        public String text() {
            return READONLY + dir;
        }

        @Override
        public java.util.Optional<Path> shownDirectory() {
            return java.util.Optional.of(dir);
        }

        @Override
        public Storage open() throws IOException {
            // LocalStorage opens every name beneath DIR refusing links, so nothing outside DIR is reached
            return new ReadOnlyStorage(new LocalStorage(dir), text());
        }
    }
}
