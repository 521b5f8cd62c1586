package dev.chibifs.router;

import dev.chibifs.config.ChibiHome;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** What the daemon tells {@code stats} and {@code status} of its stores includes the local store at /. */
class NamespaceTroublesTest {

    @TempDir
    Path home;

    /**
     * A local store at / failing every request (its directory gone, its disk failing) was never told:
     * only the stores of --store specs were asked, and status said active.
     */
    @Test
    void theLocalStoreAtTheRootTellsWhyItFails() throws IOException {
        try (Namespace ns = Namespace.open(new ChibiHome(home), List.of(), null)) {
            assertEquals(Map.of(), ns.storeFailures());
            assertEquals(Map.of(), ns.storeTroubles());
            assertEquals(Map.of(), ns.storeStates());
            Path vfs = home.resolve("vfs").toRealPath();
            Files.move(vfs, home.resolve("away"));
            String why = "the store directory " + vfs + " has gone (moved, removed or replaced)";
            assertEquals(Map.of("/", why), ns.storeFailures());
            assertEquals(Map.of("/", why), ns.storeTroubles());
            assertEquals(Map.of("/", "fails: " + why), ns.storeStates());
            assertEquals(Map.of(), ns.unansweredBelowRoot(), "the start's warnings are of the stores below / only");
        }
    }
}
