package dev.chibifs.fuse;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;

class RepeatedFailuresTest {

    /** Collects what would be logged; debug when asked. */
    static final class Collected implements RepeatedFailures.Lines {
        final List<String> warnings = new ArrayList<>();
        final List<String> debugs = new ArrayList<>();
        boolean debug;

        @Override
        public void warn(String line) {
            warnings.add(line);
        }

        @Override
        public void debug(String line) {
            debugs.add(line);
        }

        @Override
        public boolean debugEnabled() {
            return debug;
        }
    }

    private final AtomicLong now = new AtomicLong(1_000);
    private final Collected lines = new Collected();
    private final RepeatedFailures failures = new RepeatedFailures(now::get, lines);

    private void later(long seconds) {
        now.addAndGet(TimeUnit.SECONDS.toNanos(seconds));
    }

    @Test
    void aCauseIsSaidOnceAndItsRepeatsSummedUpWhenTheWindowEnds() {
        for (int i = 0; i < 1000; i++) {
            failures.failed("store gone", "LOOKUP of node 1: /shared/n" + i + ": store gone");
        }
        assertEquals(List.of("LOOKUP of node 1: /shared/n0: store gone"), lines.warnings);
        later(59);
        failures.tick();
        assertEquals(1, lines.warnings.size(), "the window is not over");
        later(1);
        failures.tick();
        assertEquals(List.of("LOOKUP of node 1: /shared/n0: store gone", "store gone: 999 more times in 60 s"),
                lines.warnings);
        failures.tick();
        assertEquals(2, lines.warnings.size(), "summed up once");
        failures.failed("store gone", "LOOKUP of node 1: /shared/again: store gone");
        assertEquals("LOOKUP of node 1: /shared/again: store gone", lines.warnings.get(2), "a new window, said again");
    }

    @Test
    void eachCauseHasItsOwnWindowAndALoneFailureNeedsNoSummary() {
        failures.failed("store A gone", "a1");
        failures.failed("store B gone", "b1");
        failures.failed("store A gone", "a2");
        assertEquals(List.of("a1", "b1"), lines.warnings);
        later(61);
        failures.failed("store C gone", "c1"); // a failure of another cause ends the windows that are over
        assertEquals(List.of("a1", "b1", "store A gone: 1 more time in 61 s", "c1"), lines.warnings);
    }

    @Test
    void repeatsAreLoggedOneByOneOnlyAtDebug() {
        failures.failed("gone", "first");
        failures.failed("gone", "second");
        assertEquals(List.of(), lines.debugs);
        lines.debug = true;
        failures.failed("gone", "third");
        assertEquals(List.of("third"), lines.debugs);
        assertEquals(List.of("first"), lines.warnings);
    }

    @Test
    void closingSumsUpWindowsNotYetOver() {
        failures.failed("gone", "first");
        failures.failed("gone", "second");
        later(5);
        failures.close();
        assertEquals(List.of("first", "gone: 1 more time in 5 s"), lines.warnings);
    }
}
