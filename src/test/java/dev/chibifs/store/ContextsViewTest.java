package dev.chibifs.store;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.chibifs.config.FlockRegistry;
import dev.chibifs.path.VfsPath;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.function.Supplier;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** What /sys/contexts generates, against what chibi 0.10's ContextsBackend would (the checks a tester made). */
class ContextsViewTest {

    @TempDir
    Path home;

    /** The registry read through the home's store, as the router reads it: one it cannot read or parse counts as empty. */
    private Supplier<FlockRegistry> registry() throws IOException {
        LocalStorage store = new LocalStorage(home.resolve("vfs"));
        return () -> {
            try {
                return FlockRegistry.parse(store.read(VfsPath.of("/flocks/registry.json")));
            } catch (IOException | IllegalArgumentException e) {
                return FlockRegistry.EMPTY;
            }
        };
    }

    private ContextsView view() throws java.io.IOException {
        return new ContextsView(home, () -> Optional.of("h-1"), registry());
    }

    private JsonNode state(String context) throws Exception {
        byte[] json = view().read(VfsPath.of("/" + context + "/state.json"));
        return new ObjectMapper().readTree(json);
    }

    private void write(String path, String text) throws Exception {
        Path p = home.resolve(path);
        Files.createDirectories(p.getParent());
        Files.write(p, text.getBytes(StandardCharsets.ISO_8859_1)); // bytes as given: '\u00ff' is the byte 0xff
    }

    /** /sys/contexts showed 1 Jan 1970 without chibi's state file: the view's start then, else the file's mtime. */
    @Test
    void theViewsTimeIsTheStateFilesOrWithoutOneItsStart() throws Exception {
        java.time.Instant before = java.time.Instant.now().minusSeconds(1);
        ContextsView view = view();
        java.time.Instant shown = view.metadata(VfsPath.of("/")).modified().toInstant();
        org.junit.jupiter.api.Assertions.assertTrue(!shown.isBefore(before) && !shown.isAfter(java.time.Instant.now()),
                "no state file: " + shown);
        write("state.json", "{\"contexts\":[{\"name\":\"alice\",\"created_at\":1}]}");
        Files.setLastModifiedTime(home.resolve("state.json"), java.nio.file.attribute.FileTime.fromMillis(1_700_000_000_000L));
        view.list(VfsPath.of("/")); // reads the state file
        assertEquals(java.nio.file.attribute.FileTime.fromMillis(1_700_000_000_000L), view.metadata(VfsPath.of("/")).modified());
        assertEquals(java.nio.file.attribute.FileTime.fromMillis(1_700_000_000_000L),
                view.metadata(VfsPath.of("/alice")).modified());
    }

    /** chibi's resolve_flock_vfs_root: "site" is /site too, and "site:<another site>" is a flock under /flocks. */
    @Test
    void theGoalsOfAFlockAreWhereChibiPutsThem() throws Exception {
        write("state.json", "{\"contexts\":[{\"name\":\"alice\",\"created_at\":1}]}");
        String alice = "\"members\":[{\"context\":\"alice\",\"site\":\"site:h-1\"}]";
        write("vfs/flocks/registry.json", "{\"flocks\":[{\"name\":\"site\",\"created_at\":1," + alice + "},"
                + "{\"name\":\"site:other-2\",\"created_at\":1," + alice + "},{\"name\":\"team\",\"created_at\":1," + alice + "}]}");
        List<String> goals = new java.util.ArrayList<>();
        state("alice").path("paths").path("goals").forEach(g -> goals.add(g.asText()));
        assertEquals(List.of("/site/goals.md", "/site/goals.md", "/flocks/site:other-2/goals.md", "/flocks/team/goals.md"),
                goals);
    }

    /** chibi's times are u64: the largest printed negative once they were taken. */
    @Test
    void timesPastTheLargestLongArePrintedAsChibiPrintsThem() throws Exception {
        write("state.json", "{\"contexts\":[{\"name\":\"alice\",\"created_at\":18446744073709551615,"
                + "\"last_activity_at\":9223372036854775808}]}");
        String state = new String(view().read(VfsPath.of("/alice/state.json")),
                StandardCharsets.UTF_8);
        org.junit.jupiter.api.Assertions.assertTrue(state.contains("\"created_at\": 18446744073709551615,\n"
                + "  \"last_activity_at\": 9223372036854775808,"), state);
    }

    /** A transcript line that is not UTF-8 fails chibi's whole load, and its prompt count is 0; it counted on. */
    @Test
    void aTranscriptChibiCannotReadCountsNoPrompts() throws Exception {
        write("state.json", "{\"contexts\":[{\"name\":\"alice\",\"created_at\":1}]}");
        String user = "{\"id\":\"1\",\"timestamp\":1,\"from\":\"u\",\"to\":\"alice\",\"content\":\"hi\","
                + "\"entry_type\":\"message\",\"role\":\"user\"}\n";
        write("contexts/alice/transcript/active.jsonl", user + user);
        assertEquals(2, state("alice").path("prompt_count").asLong());
        write("contexts/alice/transcript/active.jsonl", user + user.replace("hi", "\u00ff"));
        assertEquals(0, state("alice").path("prompt_count").asLong());
        // a bare '\r' ends no line for chibi (BufRead::lines): two entries on one line, which it skips
        write("contexts/alice/transcript/active.jsonl", user.replace("\n", "\r") + user.replace("\n", "\r\n"));
        assertEquals(0, state("alice").path("prompt_count").asLong());
    }

    /** chibi's state file or registry as a fifo hung /sys/contexts in open(2); a link to /dev/zero took the daemon's memory. */
    @Test
    void aStateFileOrRegistryThatIsNoRegularFileShowsNothingAtOnce() throws Exception {
        ContextsView view = view();
        dev.chibifs.testing.OddFiles.fifo(home.resolve("state.json"));
        assertEquals(List.of(), promptly(() -> view.list(VfsPath.of("/"))));
        Files.delete(home.resolve("state.json"));
        write("state.json", "{\"contexts\":[{\"name\":\"alice\",\"created_at\":1}]}");
        assertEquals(List.of(new Entry("alice", EntryKind.DIRECTORY)), promptly(() -> view.list(VfsPath.of("/"))));
        Files.createDirectories(home.resolve("vfs/flocks"));
        Files.createSymbolicLink(home.resolve("vfs/flocks/registry.json"), Path.of("/dev/zero"));
        List<String> goals = new java.util.ArrayList<>();
        new ObjectMapper().readTree(promptly(() -> view.read(VfsPath.of("/alice/state.json"))))
                .path("paths").path("goals").forEach(g -> goals.add(g.asText()));
        assertEquals(List.of("/site/goals.md"), goals, "no flocks: chibi reads no registry either");
    }

    /**
     * A look at state.json that lists /sys/contexts again meanwhile (the file linked into the mount's
     * own /sys/contexts: its stat is a request there, on another worker) is answered with what is
     * known, at once: each such look asked again, until the listing's workers all waited.
     */
    @Test
    void aLookAtTheStateFileThatListsAgainMeanwhileIsAnsweredWithWhatIsKnown() throws Exception {
        write("state.json", "{\"contexts\":[{\"name\":\"alice\",\"created_at\":1}]}");
        java.util.concurrent.atomic.AtomicReference<ContextsView> view = new java.util.concurrent.atomic.AtomicReference<>();
        java.util.concurrent.atomic.AtomicInteger looks = new java.util.concurrent.atomic.AtomicInteger();
        view.set(new ContextsView(home, () -> Optional.of("h-1"), registry(), file -> {
            if (file.endsWith("state.json") && looks.incrementAndGet() < 20) {
                try {
                    java.util.concurrent.CompletableFuture.supplyAsync(() -> {
                        try {
                            return view.get().list(VfsPath.of("/"));
                        } catch (java.io.IOException e) {
                            throw new java.io.UncheckedIOException(e);
                        }
                    }).get();
                } catch (InterruptedException | java.util.concurrent.ExecutionException e) {
                    throw new java.io.IOException(e);
                }
            }
            return dev.chibifs.config.FileStamp.of(file);
        }));
        assertEquals(List.of(new Entry("alice", EntryKind.DIRECTORY)), promptly(() -> view.get().list(VfsPath.of("/"))));
        assertEquals(1, looks.get(), "the listing meanwhile did not look");
    }

    private static <T> T promptly(org.junit.jupiter.api.function.ThrowingSupplier<T> what) {
        return org.junit.jupiter.api.Assertions.assertTimeoutPreemptively(dev.chibifs.testing.OddFiles.PROMPTLY, what);
    }
}
