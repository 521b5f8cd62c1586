package dev.chibifs.fuse;

import java.time.Instant;
import java.util.List;

/** Requests served as a worker hands them to a {@link RequestTrace}, for tests of its followers in other packages. */
public final class TraceEvents {

    private TraceEvents() {
    }

    /** Hands {@code trace} {@code count} GETATTRs of {@code path}, as served one after another. */
    public static void serve(RequestTrace trace, String path, int count) {
        for (int i = 0; i < count; i++) {
            trace.served(new RequestTrace.Event(Instant.now(), "alice", 1000 + i, "cat", "GETATTR",
                    new RequestTrace.Target(List.of(path), ""), 0, "", false, 12));
        }
    }
}
