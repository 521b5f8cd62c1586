package dev.chibifs.fuse;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Each request as it is served, for whoever listens ({@code chibifs trace}): who asked (context
 * and process), what (opcode, path and names), the answer and how long it took. With nobody
 * listening a request pays one volatile read. A listener slower than the requests loses events,
 * counted, rather than hold a worker: a worker held back holds the process behind its request.
 */
public final class RequestTrace {

    /**
     * What a request was about: {@code paths} the path of its node with the name it carries (two for
     * a rename's or a link's ends); {@code detail} what else it names (an attribute, a link's target,
     * a read's or write's bytes), or "".
     */
    public record Target(List<String> paths, String detail) {
    }

    /**
     * A request served: {@code program} is the asking thread's ({@link #programOf}); {@code errno}
     * 0 for success, else the errno it was answered with; {@code refusedBy} {@link #POLICY} or
     * {@link #SYMLINK_RULE} where one of them refused it, else ""; {@code waiting} for a lock
     * request that went to wait, whose answer comes as a second event when the wait ends (granted,
     * interrupted, failed), {@code micros} then the time it waited.
     */
    public record Event(Instant at, String caller, int pid, String program, String opcode, Target target, int errno,
                        String refusedBy, boolean waiting, long micros) {
    }

    /**
     * Who asked what: a traced request as it came, taken before it is served, from which each of
     * its events is made.
     */
    record Asked(String caller, int pid, String program, String opcode, Target target) {

        /** Its answer: {@code errno} 0 for success; {@code refusedBy} as {@link Event}'s. */
        Event answered(int errno, String refusedBy, long micros) {
            return new Event(Instant.now(), caller, pid, program, opcode, target, errno, refusedBy, false, micros);
        }

        /** It went to wait for a lock; its answer comes when the wait ends. */
        Event waiting() {
            return new Event(Instant.now(), caller, pid, program, opcode, target, 0, "", true, 0);
        }

        /** The same request, its target's detail {@code detail} (how its later answer is told apart). */
        Asked detailed(String detail) {
            return new Asked(caller, pid, program, opcode, new Target(target.paths(), detail));
        }
    }

    /** Who the trace says asked for a request the kernel made itself, of no file a caller opened (a RELEASEDIR). */
    public static final String KERNEL = "KERNEL";

    /** What refused a request: the zone policy (EACCES), or the mount's link rule (EPERM). */
    public static final String POLICY = "policy";
    public static final String SYMLINK_RULE = "--symlinks";

    /** One listener's events, in the order they were served; closed, it gets no more. */
    public final class Listener implements AutoCloseable {
        private final ArrayBlockingQueue<Event> events;
        private final AtomicLong lost = new AtomicLong();

        private Listener(int capacity) {
            events = new ArrayBlockingQueue<>(capacity);
        }

        /** The next event, waiting up to {@code timeout}; null when none came. */
        public Event next(long timeout, TimeUnit unit) throws InterruptedException {
            return events.poll(timeout, unit);
        }

        /** Events waiting in this listener's queue, not yet taken. */
        public int queued() {
            return events.size();
        }

        /** Events lost since the last call because this listener's queue was full. */
        public long lost() {
            return lost.getAndSet(0);
        }

        @Override
        public void close() {
            // with the trace's lock, as listen: a listen between the remove and the write of the flag
            // would otherwise see its flag turned off, and never get an event
            synchronized (RequestTrace.this) {
                listeners.remove(this);
                listened = !listeners.isEmpty();
            }
        }
    }

    private final CopyOnWriteArrayList<Listener> listeners = new CopyOnWriteArrayList<>();
    private volatile boolean listened;

    /** Starts a listener that keeps up to {@code capacity} events not yet taken. */
    public synchronized Listener listen(int capacity) {
        Listener l = new Listener(capacity);
        listeners.add(l);
        listened = true;
        return l;
    }

    /** Whether anyone listens: a worker describes its request only then. */
    boolean listened() {
        return listened;
    }

    /** The names of the opcodes traced, as {@code linux/fuse.h} has them without FUSE_ (LOOKUP, OPEN). */
    public static Set<String> opcodes() {
        Set<String> names = new TreeSet<>();
        for (int i = 0; i < FuseProtocol.OPCODE_LIMIT; i++) {
            if (FuseProtocol.named(i) && traces(i)) {
                names.add(FuseProtocol.opcodeName(i));
            }
        }
        return names;
    }

    /**
     * The name of thread {@code pid}'s program (its comm: "git", "python3"), read while the thread
     * waits for its answer, so it is there to read; "" for the kernel's own requests (pid 0) and
     * where it cannot be read.
     */
    static String programOf(int pid) {
        if (pid <= 0) {
            return "";
        }
        try {
            return Files.readString(Path.of("/proc/" + pid + "/comm")).strip();
        } catch (IOException | RuntimeException gone) {
            return "";
        }
    }

    /** Whether requests of {@code opcode} are traced: not the kernel's forgets and interrupts, which ask nothing. */
    static boolean traces(int opcode) {
        return opcode != FuseProtocol.FORGET && opcode != FuseProtocol.BATCH_FORGET && opcode != FuseProtocol.INTERRUPT;
    }

    void served(Event e) {
        for (Listener l : listeners) {
            if (!l.events.offer(e)) {
                l.lost.incrementAndGet();
            }
        }
    }
}
