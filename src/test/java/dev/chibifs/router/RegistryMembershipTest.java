package dev.chibifs.router;

import dev.chibifs.path.VfsPath;
import dev.chibifs.store.MemoryStorage;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Membership as the registry says it at each question; a malformed registry grants nothing. */
class RegistryMembershipTest {

    private final MemoryStorage store = new MemoryStorage();
    private final VfsPath path = VfsPath.of("/flocks/registry.json");
    private final RegistryMembership members = new RegistryMembership(store, path, () -> Optional.of("h-1"));

    private void registry(String json) throws Exception {
        store.write(path, json.getBytes(StandardCharsets.UTF_8));
    }

    @Test
    void readsEachChangeAndNeverGrantsOnAMalformedRegistry() throws Exception {
        assertFalse(members.isMember("team", "planner"), "no registry: no flocks");
        registry("{\"flocks\":[{\"name\":\"team\",\"created_at\":1,\"members\":[{\"context\":\"planner\",\"site\":\"site:h-1\"},"
                + "{\"context\":\"coder\",\"site\":\"site:other\"}]}]}");
        assertTrue(members.isMember("team", "planner"));
        assertFalse(members.isMember("team", "coder"), "a member of another site");
        registry("{\"flocks\":[{\"name\":\"team\",\"members\":[{\"context\":\"planner\",\"site\":\"site:h-1\"}]}]}");
        assertFalse(members.isMember("team", "planner"), "created_at missing: chibi cannot read it either");
        assertTrue(members.problem().contains("created_at"), members.problem());
        registry("{\"flocks\":[]}");
        assertFalse(members.isMember("team", "planner"));
        assertNull(members.problem());
    }

    /** Jackson took what chibi's serde_json refuses, so a flock's members wrote where chibi let nobody. */
    @Test
    void aRegistryChibisSerdeRefusesGrantsNothing() throws Exception {
        String team = "\"name\":\"team\",\"members\":[{\"context\":\"planner\",\"site\":\"site:h-1\"}]";
        registry("{\"flocks\":[{" + team + ",\"created_at\":1}]}");
        assertTrue(members.isMember("team", "planner"));
        for (String bad : new String[] {
            "{\"flocks\":[{" + team + ",\"created_at\":1764590000.0}]}", // a float for chibi's u64
            "{\"flocks\":[{" + team + ",\"created_at\":1.76459e9}]}",
            "{\"flocks\":[{" + team + ",\"created_at\":1}]} junk", // trailing characters
            "{\"flocks\":[{" + team + ",\"created_at\":1,\"created_at\":2}]}", // duplicate field
            "\ufeff{\"flocks\":[{" + team + ",\"created_at\":1}]}", // a byte-order mark
            "{\"flocks\":[{" + team + ",\"created_at\":-0}]}", // serde's -0 is a float
            "{\"flocks\":[{" + team + ",\"created_at\":1},{\"name\":\"x\\ud800\",\"created_at\":1,\"members\":[]}]}"}) {
            registry(bad);
            assertFalse(members.isMember("team", "planner"), bad);
            assertTrue(members.problem() != null, bad);
        }
        // UTF-16 (Jackson detects it; serde fails at the first NUL)
        store.write(path, ("{\"flocks\":[{" + team + ",\"created_at\":1}]}").getBytes(StandardCharsets.UTF_16LE));
        assertFalse(members.isMember("team", "planner"), "UTF-16");
        // and what serde takes, since its struct ignores it: a key twice, a lone surrogate, a long number, deep nesting
        registry("{\"flocks\":[{" + team + ",\"created_at\":1}],\"note\":{\"a\":1,\"a\":\"\\udc00\"},\"n\":"
                + "9".repeat(2000) + ",\"deep\":" + "[".repeat(3000) + "]".repeat(3000) + "}");
        assertTrue(members.isMember("team", "planner"), members.problem());
    }

    @Test
    void withoutASiteIdNobodyIsAMember() throws Exception {
        registry("{\"flocks\":[{\"name\":\"team\",\"created_at\":1,\"members\":[{\"context\":\"planner\",\"site\":\"site:h-1\"}]}]}");
        assertEquals(false, new RegistryMembership(store, path, Optional::empty).isMember("team", "planner"));
    }

    /** A registry over the limit /sys/contexts also keeps was read whole into memory at each change, and granted. */
    @Test
    void aRegistryOverTheLimitGrantsNothingAndSaysWhy() throws Exception {
        String team = "{\"flocks\":[{\"name\":\"team\",\"created_at\":1,\"members\":[{\"context\":\"planner\",\"site\":\"site:h-1\"}]";
        registry(team + ",\"padding\":\"" + "x".repeat((int) dev.chibifs.config.HomeFile.REGISTRY_JSON_LIMIT) + "\"}]}");
        assertFalse(members.isMember("team", "planner"));
        assertTrue(members.problem().contains("over the 16 MiB"), members.problem());
        registry(team + "}]}");
        assertTrue(members.isMember("team", "planner"), "rewritten within the limit: granted at once");
        assertNull(members.problem());
    }
}
