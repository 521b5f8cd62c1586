package dev.chibifs.store.s3;

import java.util.Map;
import java.util.TreeMap;

/** What tests read from the counts of requests a bucket made ({@link Bucket#requests}). */
final class Requests {

    private Requests() {
    }

    /** The requests made between two counts of them, by kind; kinds not made are left out. */
    static Map<String, Long> since(Map<String, Long> before, Map<String, Long> after) {
        Map<String, Long> made = new TreeMap<>();
        after.forEach((k, v) -> {
            long n = v - before.getOrDefault(k, 0L);
            if (n != 0) {
                made.put(k, n);
            }
        });
        return made;
    }
}
