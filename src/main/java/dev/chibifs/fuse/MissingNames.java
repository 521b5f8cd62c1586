package dev.chibifs.fuse;

import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.LongPredicate;

/**
 * Names the kernel may hold as missing (negative entries), by the node id of their directory, so
 * that what a directory held goes when the kernel forgets the directory: its negative entries went
 * with it. Kept as one set of pairs, every name ever probed in a directory since removed stayed, and
 * a daemon that passed the limit (python's imports probe thousands) cached no missing name again.
 *
 * <p>Each directory's names change only inside the map's per-key compute, so a name added while
 * the directory is forgotten or drained lands in the set that is taken, or in a new one, never in
 * one already dropped; reads ({@link #contains}) take no lock.
 */
final class MissingNames {

    private final ConcurrentMap<Long, Set<String>> byDirectory = new ConcurrentHashMap<>();
    private final AtomicInteger count = new AtomicInteger();

    boolean isEmpty() {
        return count.get() == 0;
    }

    int size() {
        return count.get();
    }

    boolean contains(long dir, String name) {
        Set<String> names = byDirectory.get(dir);
        return names != null && names.contains(name);
    }

    void add(long dir, String name) {
        byDirectory.compute(dir, (k, names) -> {
            Set<String> s = names != null ? names : ConcurrentHashMap.newKeySet();
            if (s.add(name)) {
                count.incrementAndGet();
            }
            return s;
        });
    }

    /** Whether {@code name} in {@code dir} was held missing (and is no longer). */
    boolean remove(long dir, String name) {
        boolean[] removed = new boolean[1];
        byDirectory.computeIfPresent(dir, (k, names) -> {
            removed[0] = names.remove(name);
            if (removed[0]) {
                count.decrementAndGet();
            }
            return names.isEmpty() ? null : names;
        });
        return removed[0];
    }

    /** The kernel forgot directory {@code dir}: its negative entries went with it. */
    void forget(long dir) {
        byDirectory.computeIfPresent(dir, (k, names) -> {
            count.addAndGet(-names.size());
            return null;
        });
    }

    /** A name no longer held missing, handed on with its directory's node id. */
    interface Each {
        void name(long dir, String name);
    }

    /** Takes every name held missing in the directories {@code which} accepts, and hands each to {@code each}. */
    void drain(LongPredicate which, Each each) {
        for (Long dir : List.copyOf(byDirectory.keySet())) {
            Set<String> names = which.test(dir) ? byDirectory.get(dir) : null;
            for (String name : names == null ? List.<String>of() : List.copyOf(names)) {
                if (remove(dir, name)) {
                    each.name(dir, name);
                }
            }
        }
    }
}
