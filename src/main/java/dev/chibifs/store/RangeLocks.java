package dev.chibifs.store;

import dev.chibifs.sys.ErrnoException;
import dev.chibifs.sys.Linux;

import java.util.ArrayList;
import java.util.List;

/**
 * One owner's record locks on one file, as the kernel keeps them per owner: disjoint ranges,
 * sorted, each READ or WRITE; setting a range replaces whatever the owner held there (splitting
 * ranges it cuts into) and merges with touching ranges of the same type. {@link MemoryStorage}
 * decides conflicts with it; {@link LocalStorage}, where the kernel decides, keeps it only to know
 * when an owner holds nothing any more. Not thread-safe: its users hold a lock around it.
 */
final class RangeLocks {

    /** One locked range; end inclusive, Long.MAX_VALUE for "to the end". */
    record Range(LockType type, long start, long end) {
        boolean overlaps(long s, long e) {
            return start <= e && s <= end;
        }
    }

    private final List<Range> ranges = new ArrayList<>(2);

    boolean isEmpty() {
        return ranges.isEmpty();
    }

    /** Sets {@code type} on [start, end]; UNLOCK removes the owner's locks there. */
    void set(LockType type, long start, long end) {
        List<Range> out = new ArrayList<>(ranges.size() + 2);
        long from = start;
        long to = end;
        for (Range r : ranges) {
            if (!r.overlaps(start, end)) {
                // a touching range of the same type joins the new one, as the kernel merges them
                if (type != LockType.UNLOCK && r.type() == type
                        && ((end != Long.MAX_VALUE && r.start() == end + 1) || (start > 0 && r.end() == start - 1))) {
                    from = Math.min(from, r.start());
                    to = Math.max(to, r.end());
                } else {
                    out.add(r);
                }
                continue;
            }
            if (type != LockType.UNLOCK && r.type() == type) {
                from = Math.min(from, r.start());
                to = Math.max(to, r.end());
                continue;
            }
            // cut: what lies outside [start, end] stays the owner's
            if (r.start() < start) {
                out.add(new Range(r.type(), r.start(), start - 1));
            }
            if (r.end() > end) {
                out.add(new Range(r.type(), end + 1, r.end()));
            }
        }
        if (type != LockType.UNLOCK) {
            out.add(new Range(type, from, to));
        }
        out.sort((a, b) -> Long.compare(a.start(), b.start()));
        ranges.clear();
        ranges.addAll(out);
    }

    /** The first of these ranges that conflicts with another owner's {@code type} on [start, end], or null. */
    Range conflict(LockType type, long start, long end) {
        for (Range r : ranges) {
            if (r.overlaps(start, end) && (type == LockType.WRITE || r.type() == LockType.WRITE)) {
                return r;
            }
        }
        return null;
    }

    List<Range> ranges() {
        return List.copyOf(ranges);
    }

    /** Refuses what F_SETLK refuses: a negative start, or an end before it (EINVAL). */
    static void checkRange(long start, long end) throws java.nio.file.FileSystemException {
        if (start < 0 || end < start) {
            throw ErrnoException.of(Linux.EINVAL, null,
                    "lock range " + start + ".." + end + " (start >= 0, end >= start)");
        }
    }
}
