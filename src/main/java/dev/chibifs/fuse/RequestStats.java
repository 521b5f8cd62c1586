package dev.chibifs.fuse;

import dev.chibifs.sys.Linux;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.atomic.LongAdder;

/**
 * What the daemon served: requests and their time per opcode, errors, and policy denials per
 * context, in LongAdders, so the workers counting at once do not contend on one cache line; and
 * each request as it is served ({@link RequestTrace}).
 */
public final class RequestStats {

    private final LongAdder[] counts = adders();
    private final LongAdder[] nanos = adders();
    private final LongAdder[] errors = adders();
    /** Error answers that are no failure ({@link #expected}), not among the errors. */
    private final LongAdder[] expected = adders();
    /** fuse_notify_code's names, without FUSE_NOTIFY_, by code; 0 (no code) counts those of codes not named. */
    private static final String[] NOTICE_NAMES = {"OTHER", "POLL", "INVAL_INODE", "INVAL_ENTRY", "STORE", "RETRIEVE",
            "DELETE", "RESEND", "INC_EPOCH"};
    /** Notifications written, by their code. */
    private final LongAdder[] notices = adders(NOTICE_NAMES.length);
    private final ConcurrentMap<String, LongAdder> denials = new ConcurrentHashMap<>();
    private final RequestTrace trace = new RequestTrace();
    /** Requests of each opcode being served now, and the most there ever were at once. */
    private final java.util.concurrent.atomic.AtomicIntegerArray inFlight =
            new java.util.concurrent.atomic.AtomicIntegerArray(FuseProtocol.OPCODE_LIMIT);
    private final java.util.concurrent.atomic.AtomicIntegerArray mostInFlight =
            new java.util.concurrent.atomic.AtomicIntegerArray(FuseProtocol.OPCODE_LIMIT);
    /** The session's workers now, and the most there were: more than it keeps means requests waited in the store. */
    private volatile int workersKept;
    private final java.util.concurrent.atomic.AtomicInteger workersNow = new java.util.concurrent.atomic.AtomicInteger();
    private final java.util.concurrent.atomic.AtomicInteger mostWorkers = new java.util.concurrent.atomic.AtomicInteger();

    void started(int opcode) {
        int i = index(opcode);
        int now = inFlight.incrementAndGet(i);
        if (now > mostInFlight.get(i)) {
            mostInFlight.accumulateAndGet(i, now, Math::max);
        }
    }

    private static int index(int opcode) {
        return opcode >= 0 && opcode < FuseProtocol.OPCODE_LIMIT ? opcode : 0;
    }

    private static LongAdder[] adders() {
        return adders(FuseProtocol.OPCODE_LIMIT);
    }

    private static LongAdder[] adders(int length) {
        LongAdder[] a = new LongAdder[length];
        for (int i = 0; i < a.length; i++) {
            a[i] = new LongAdder();
        }
        return a;
    }

    /** A request answered: {@code errno} 0 when it succeeded. */
    void served(int opcode, long elapsedNanos, int errno) {
        int i = index(opcode);
        inFlight.decrementAndGet(i);
        counts[i].increment();
        nanos[i].add(elapsedNanos);
        if (errno != 0) {
            (expected(opcode, errno) ? expected : errors)[i].increment();
        }
    }

    /**
     * Error answers that are the protocol working, not failures, counted apart: the OPENDIR answered
     * ENOSYS that turns on zero-message opendir, an attribute that is not there (ENODATA) or whose
     * namespace chibifs keeps none of (ENOTSUP: the kernel asks security.capability at every write),
     * and ENOSYS of the xattr requests under --no-xattr, after which the kernel asks no more. A healthy
     * mount showed thousands of "errors" for them; `cp -a` of 50,000 files 151,533 more, its ACLs
     * (system.posix_acl_access) set where no namespace but user.* is kept.
     */
    static boolean expected(int opcode, int errno) {
        return switch (opcode) {
            case FuseProtocol.OPENDIR -> errno == Linux.ENOSYS;
            case FuseProtocol.GETXATTR, FuseProtocol.LISTXATTR, FuseProtocol.REMOVEXATTR ->
                    errno == Linux.ENODATA || errno == Linux.ENOTSUP || errno == Linux.ENOSYS;
            case FuseProtocol.SETXATTR -> errno == Linux.ENOSYS || errno == Linux.ENOTSUP;
            default -> false;
        };
    }

    /** The workers a session keeps, however few requests come. */
    void workersKept(int kept) {
        workersKept = kept;
    }

    /** One more worker reads /dev/fuse; the most there were is kept too. */
    void workerStarted() {
        mostWorkers.accumulateAndGet(workersNow.incrementAndGet(), Math::max);
    }

    void workerEnded() {
        workersNow.decrementAndGet();
    }

    /** Each request as it is served, to whoever listens. */
    public RequestTrace trace() {
        return trace;
    }

    /** A notification with code {@code code} was written to the kernel. */
    void notified(int code) {
        notices[code > 0 && code < notices.length ? code : 0].increment();
    }

    /** The notifications written so far, by kind (INVAL_INODE, INVAL_ENTRY, ...); kinds never written are left out. */
    public Map<String, Long> notices() {
        Map<String, Long> n = new LinkedHashMap<>();
        for (int i = 0; i < notices.length; i++) {
            long c = notices[i].sum();
            if (c > 0) {
                n.put(NOTICE_NAMES[i], c);
            }
        }
        return n;
    }

    void denied(String caller) {
        denials.computeIfAbsent(caller, c -> new LongAdder()).increment();
    }

    /** One opcode's totals since the mount. */
    public record OpStats(String opcode, long count, long errors, long expected, long totalMicros, int mostAtOnce) {
    }

    /** The session's workers: those it keeps, those now, and the most there were at once. */
    public record Workers(int kept, int now, int most) {
    }

    /** A snapshot: opcodes that were served, in opcode order, denials by caller, and the workers. */
    public record Snapshot(Map<String, OpStats> requests, Map<String, Long> denials, Workers workers) {
    }

    public Snapshot snapshot() {
        Map<String, OpStats> requests = new LinkedHashMap<>();
        for (int i = 0; i < FuseProtocol.OPCODE_LIMIT; i++) {
            long c = counts[i].sum();
            if (c > 0) {
                String name = FuseProtocol.opcodeName(i);
                requests.put(name, new OpStats(name, c, errors[i].sum(), expected[i].sum(), nanos[i].sum() / 1000,
                        mostInFlight.get(i)));
            }
        }
        Map<String, Long> d = new LinkedHashMap<>();
        denials.forEach((k, v) -> d.put(k, v.sum()));
        return new Snapshot(requests, d, new Workers(workersKept, workersNow.get(), mostWorkers.get()));
    }

    /** The count of one opcode, by its fuse.h name without FUSE_ (tests count requests with it). */
    public long count(String opcode) {
        for (int i = 0; i < FuseProtocol.OPCODE_LIMIT; i++) {
            if (FuseProtocol.opcodeName(i).equals(opcode)) {
                return counts[i].sum();
            }
        }
        return 0;
    }
}
