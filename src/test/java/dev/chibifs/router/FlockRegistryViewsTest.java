package dev.chibifs.router;

import dev.chibifs.config.ChibiHome;
import dev.chibifs.config.HomeFile;
import dev.chibifs.path.VfsPath;
import dev.chibifs.policy.Caller;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The policy and /sys/contexts read chibi's flock registry by one rule: they give one answer
 * for a registry that is a symbolic link, or over the size limit. The policy refused a link
 * while /sys/contexts followed it, and granted an oversized registry while /sys/contexts
 * dropped every flock of it.
 */
class FlockRegistryViewsTest {

    private static final String TEAM = "{\"flocks\":[{\"name\":\"team\",\"created_at\":1,"
            + "\"members\":[{\"context\":\"bob\",\"site\":\"site:h-1\"}]}]}";

    @TempDir
    Path home;

    private Path registry;

    @BeforeEach
    void setUp() throws IOException {
        Files.writeString(home.resolve("site.json"), "{\"uuid\":\"u\",\"site_id\":\"h-1\"}");
        Files.writeString(home.resolve("state.json"), "{\"contexts\":[{\"name\":\"bob\",\"created_at\":1}]}");
        Files.createDirectories(home.resolve("vfs/flocks/team"));
        registry = home.resolve("vfs/flocks/registry.json");
    }

    /** Whether bob may write his flock, and whether /sys/contexts lists the flock's task directory for him. */
    private List<Boolean> bobsFlock() throws IOException {
        try (Namespace ns = Namespace.open(new ChibiHome(home), List.of(), null)) {
            Router router = ns.router();
            boolean writes = router.mayWrite(Caller.context("bob"), VfsPath.of("/flocks/team/x"));
            String taskDirs = new String(router.read(Caller.GUEST, VfsPath.of("/sys/contexts/bob/task-dirs")), StandardCharsets.UTF_8);
            return List.of(writes, taskDirs.contains("/flocks/team/tasks"));
        }
    }

    @Test
    void aRegistryAsChibiWritesItGrantsAndIsShown() throws IOException {
        Files.writeString(registry, TEAM);
        assertEquals(List.of(true, true), bobsFlock());
    }

    @Test
    void aRegistryThatIsASymbolicLinkIsNeitherGrantedNorShown() throws IOException {
        Path elsewhere = Files.writeString(home.resolve("valid-registry.json"), TEAM);
        Files.createSymbolicLink(registry, elsewhere);
        assertEquals(List.of(false, false), bobsFlock());
    }

    @Test
    void aRegistryOverTheLimitIsNeitherGrantedNorShown() throws IOException {
        String padding = "x".repeat((int) HomeFile.REGISTRY_JSON_LIMIT);
        Files.writeString(registry, TEAM.replace("\"created_at\":1,", "\"created_at\":1,\"padding\":\"" + padding + "\","));
        assertTrue(Files.size(registry) > HomeFile.REGISTRY_JSON_LIMIT);
        assertEquals(List.of(false, false), bobsFlock());
    }
}
