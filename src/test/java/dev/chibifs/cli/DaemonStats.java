package dev.chibifs.cli;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;

/**
 * A running daemon's stats, read from its socket in the test's own JVM: what {@code chibifs stats
 * --json} prints, without the second or so of a new JVM (a test counting requests asked twice per
 * step). StatsCommandTest and StatsMountTest run the command itself.
 */
public final class DaemonStats {

    private static final Duration ANSWER_LIMIT = Duration.ofSeconds(30);

    private DaemonStats() {
    }

    /** The snapshot of the daemon {@code pid}, whose environment was {@code env}, as the JSON it wrote. */
    public static JsonNode of(Map<String, String> env, long pid) {
        Path socket = StatsSocket.pathFor(MountRegistry.defaultDir(MountRegistry.currentUid(), env), pid);
        // the daemon listens just after its mount first answers, which is all a test's start waited
        // for: until then its socket is missing (ENOENT), or bound and not yet listening (refused).
        // Not whether the socket exists after the failure: bound between the two, it was there by
        // then and a connect that met ENOENT was taken for the daemon's silence (a CI run, session 75)
        long giveUp = System.nanoTime() + ANSWER_LIMIT.toNanos();
        StatsSocket.Answer answer = StatsSocket.askWithin(socket, ANSWER_LIMIT);
        while (answer.json() == null && !answer.silent() && System.nanoTime() < giveUp
                && answer.failure() instanceof java.net.SocketException) {
            java.util.concurrent.locks.LockSupport.parkNanos(10_000_000);
            answer = StatsSocket.askWithin(socket, ANSWER_LIMIT);
        }
        if (answer.json() == null) {
            throw new AssertionError("the daemon (pid " + pid + ") gave no stats at " + socket
                    + (answer.silent() ? ": no answer within " + ANSWER_LIMIT : "") + "; there: " + listing(socket.getParent()),
                    answer.failure());
        }
        return answer.json();
    }

    private static String listing(Path dir) {
        try (var names = java.nio.file.Files.list(dir)) {
            return names.map(p -> p.getFileName().toString()).sorted().toList().toString();
        } catch (java.io.IOException e) {
            return e.toString();
        }
    }
}
