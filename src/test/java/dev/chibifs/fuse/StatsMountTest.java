package dev.chibifs.fuse;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.chibifs.testing.MountedFs;
import dev.chibifs.testing.Sh;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.io.RandomAccessFile;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code chibifs stats} of a real mount: what the daemon holds for the kernel, and its memory. */
@Timeout(60)
class StatsMountTest {

    private static JsonNode stats(MountedFs fs) throws IOException {
        return new ObjectMapper().readTree(MountedFs.cli("stats", "--json", fs.mountpoint().toString()).ok().out());
    }

    @Test
    void statsSaysWhatTheDaemonHoldsForTheKernelAndItsMemory() throws Exception {
        try (MountedFs fs = MountedFs.start("--context", "planner")) {
            Sh.run(fs.mountpoint(), "mkdir shared/d && for i in $(seq 20); do echo $i > shared/d/f$i; done && ls -l shared/d").ok();
            try (RandomAccessFile open = new RandomAccessFile(fs.at("/shared/d/f1").toFile(), "r")) {
                JsonNode s = stats(fs);
                JsonNode held = s.get("held");
                // the open file holds its node and its directories' (the others the kernel may let go)
                assertTrue(held.get("nodes").asLong() >= 4, "root, shared, d and the open f1: " + held);
                assertEquals(1, held.get("openFiles").asLong(), held.toString());
                assertTrue(held.get("followedDirectories").asLong() >= 2, "shared and d: " + held);
                JsonNode memory = s.get("memory");
                assertTrue(memory.get("heapUsedBytes").asLong() > 0 && memory.get("residentBytes").asLong()
                        > memory.get("heapUsedBytes").asLong(), memory.toString());
                String text = MountedFs.cli("stats", fs.mountpoint().toString()).ok().out();
                assertTrue(text.lines().anyMatch(l -> l.startsWith("held: ") && l.contains(" nodes, 1 open files, ")
                        && l.contains(" MiB")), text);
            }
        }
    }
}
