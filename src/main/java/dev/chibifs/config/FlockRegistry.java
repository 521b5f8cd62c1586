package dev.chibifs.config;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import dev.chibifs.sys.InvalidSpecException;

import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;

/**
 * chibi's flock registry, {@code vfs/flocks/registry.json}: {@code {"flocks": [{"name",
 * "created_at", "members": [{"context", "site"}]}]}}. Parsed as strictly as chibi's serde does
 * (a missing field, a wrong type, a fraction in created_at, a key twice or anything after the
 * value is malformed; unknown fields are ignored), because chibi then grants no flock write either.
 */
public record FlockRegistry(List<Flock> flocks) {

    /** An empty registry: what a missing file means to chibi. */
    public static final FlockRegistry EMPTY = new FlockRegistry(List.of());

    /** One flock and its members. */
    public record Flock(String name, long createdAt, List<Member> members) {
    }

    /** A member: a context of a site ({@code "site:<site_id>"}). */
    public record Member(String context, String site) {
    }

    /** The registry in {@code json}; throws {@link InvalidSpecException} saying what is wrong where. */
    public static FlockRegistry parse(byte[] json) {
        JsonNode root;
        try {
            root = StrictJson.read(json);
        } catch (JsonProcessingException e) {
            throw new InvalidSpecException("not JSON: " + e.getOriginalMessage()
                    + (e.getLocation() == null ? "" : " at line " + e.getLocation().getLineNr()));
        } catch (java.io.IOException e) {
            throw new InvalidSpecException("not JSON: " + e.getMessage());
        }
        if (root == null || !root.isObject()) {
            throw new InvalidSpecException("not a JSON object");
        }
        JsonNode flocks = root.get("flocks");
        if (flocks == null || !flocks.isArray()) {
            throw new InvalidSpecException("\"flocks\" is not an array");
        }
        List<Flock> out = new ArrayList<>();
        for (int i = 0; i < flocks.size(); i++) {
            JsonNode f = flocks.get(i);
            String where = "flocks[" + i + "]";
            if (!f.isObject()) {
                throw new InvalidSpecException(where + " is not an object");
            }
            String name = text(f, "name", where);
            JsonNode created = f.get("created_at");
            if (!StrictJson.isU64(created)) {
                throw new InvalidSpecException(where + ".created_at is not a non-negative integer");
            }
            JsonNode members = f.get("members");
            if (members == null || !members.isArray()) {
                throw new InvalidSpecException(where + ".members is not an array");
            }
            List<Member> ms = new ArrayList<>();
            for (int j = 0; j < members.size(); j++) {
                JsonNode m = members.get(j);
                String mw = where + ".members[" + j + "]";
                if (!m.isObject()) {
                    throw new InvalidSpecException(mw + " is not an object");
                }
                ms.add(new Member(text(m, "context", mw), text(m, "site", mw)));
            }
            out.add(new Flock(name, created.asLong(), List.copyOf(ms)));
        }
        return new FlockRegistry(List.copyOf(out));
    }

    private static String text(JsonNode node, String field, String where) {
        JsonNode v = node.get(field);
        if (v == null || !v.isTextual()) {
            throw new InvalidSpecException(where + "." + field + " is not a string");
        }
        return v.asText();
    }

    /** chibi's site flock name for a site id: {@code site:<site_id>}. */
    public static String siteFlock(String siteId) {
        return "site:" + siteId;
    }

    /** Whether {@code context} of site {@code siteFlock} is listed in flock {@code flock} (the first so named, as chibi finds it). */
    public boolean isMember(String flock, String context, String siteFlock) {
        for (Flock f : flocks) {
            if (f.name().equals(flock)) {
                return f.members().stream().anyMatch(m -> m.context().equals(context) && m.site().equals(siteFlock));
            }
        }
        return false;
    }

    /** The flocks {@code context} of site {@code siteFlock} belongs to, sorted by name (chibi's flocks_for). */
    public List<String> flocksFor(String context, String siteFlock) {
        List<String> out = new ArrayList<>();
        for (Flock f : flocks) {
            if (f.members().stream().anyMatch(m -> m.context().equals(context) && m.site().equals(siteFlock))) {
                out.add(f.name());
            }
        }
        out.sort(null);
        return out;
    }
}
