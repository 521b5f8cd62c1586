package dev.chibifs.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * A chibi home as chibi 0.10 lays it out: site.json, state.json with two contexts, the flock
 * registry with two flocks (planner in "team", coder in "team" and "ops"), /site, /flocks/<n>,
 * /tools/*, and planner's transcript with a manifest, an active partition and one archived one.
 */
public final class Chibi010Home {

    public static final String SITE_ID = "testhost-1a2b3c4d";

    private Chibi010Home() {
    }

    /** Lays the home out in {@code home}; returns it. */
    public static Path create(Path home) {
        try {
            Path vfs = home.resolve("vfs");
            Files.writeString(home.resolve("site.json"),
                    "{\n  \"uuid\": \"1a2b3c4d-0000-4000-8000-000000000000\",\n  \"site_id\": \"" + SITE_ID + "\"\n}");
            Files.writeString(home.resolve("state.json"), "{\"contexts\":[{\"name\":\"planner\",\"created_at\":1700000000,"
                    + "\"last_activity_at\":1700000500,\"destroy_after_seconds_inactive\":0,\"destroy_at\":0,\"cwd\":\"/tmp\"},"
                    + "{\"name\":\"coder\",\"created_at\":1700000100,\"destroy_at\":1800000000}]}");
            writeRegistry(home, "planner:team", "coder:team", "coder:ops");
            for (String d : new String[] {"shared", "home/planner", "home/coder", "sys/tool_cache", "site",
                                          "flocks/team", "flocks/ops", "tools/shared", "tools/home/planner",
                                          "tools/home/coder", "tools/flocks/team", "tools/flocks/ops"}) {
                Files.createDirectories(vfs.resolve(d));
            }
            Files.writeString(vfs.resolve("site/goals.md"), "# site goals\n");
            Files.writeString(vfs.resolve("flocks/ops/runbook.md"), "ops only\n");
            Path t = Files.createDirectories(home.resolve("contexts/planner/transcript/partitions")).getParent();
            Files.writeString(t.resolve("manifest.json"), "{\n  \"version\": 1,\n  \"active_partition\": \"active.jsonl\",\n"
                    + "  \"partitions\": [\n    {\n      \"file\": \"partitions/1700000000-1700000300.jsonl\",\n"
                    + "      \"start_ts\": 1700000000,\n      \"end_ts\": 1700000300,\n      \"entry_count\": 2,\n"
                    + "      \"prompt_count\": 1\n    }\n  ],\n  \"rotation_policy\": {\n    \"max_entries\": 1000,\n"
                    + "    \"max_age_seconds\": 604800\n  }\n}");
            Files.writeString(t.resolve("partitions/1700000000-1700000300.jsonl"), entry("a", "user", "first") + "\n"
                    + entry("b", "agent", "reply") + "\n");
            Files.writeString(t.resolve("active.jsonl"), entry("c", "user", "second") + "\n" + entry("d", "agent", "ok")
                    + "\n" + entry("e", "user", "third") + "\nnot json\n");
            Files.createDirectories(home.resolve("contexts/coder"));
            return home;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static String entry(String id, String role, String content) {
        return "{\"id\":\"" + id + "\",\"timestamp\":1700000001,\"from\":\"x\",\"to\":\"y\",\"content\":\"" + content
                + "\",\"entry_type\":\"message\",\"role\":\"" + role + "\"}";
    }

    /** Rewrites the registry atomically, as chibi does, with members given as {@code context:flock}. */
    public static void writeRegistry(Path home, String... members) throws IOException {
        StringBuilder b = new StringBuilder("{\n  \"flocks\": [");
        java.util.Map<String, java.util.List<String>> byFlock = new java.util.LinkedHashMap<>();
        for (String m : members) {
            String[] cf = m.split(":");
            byFlock.computeIfAbsent(cf[1], k -> new java.util.ArrayList<>()).add(cf[0]);
        }
        int i = 0;
        for (var e : byFlock.entrySet()) {
            b.append(i++ == 0 ? "\n" : ",\n").append("    {\n      \"name\": \"").append(e.getKey())
                    .append("\",\n      \"created_at\": 1700000000,\n      \"members\": [");
            int j = 0;
            for (String c : e.getValue()) {
                b.append(j++ == 0 ? "\n" : ",\n").append("        {\n          \"context\": \"").append(c)
                        .append("\",\n          \"site\": \"site:").append(SITE_ID).append("\"\n        }");
            }
            b.append("\n      ]\n    }");
        }
        b.append(byFlock.isEmpty() ? "]\n}" : "\n  ]\n}");
        Path dir = Files.createDirectories(home.resolve("vfs/flocks"));
        Path tmp = dir.resolve("registry.tmp.1");
        Files.writeString(tmp, b.toString());
        Files.move(tmp, dir.resolve("registry.json"), java.nio.file.StandardCopyOption.ATOMIC_MOVE,
                java.nio.file.StandardCopyOption.REPLACE_EXISTING);
    }
}
