package dev.chibifs.router;

import dev.chibifs.path.VfsPath;

import java.io.IOException;
import java.util.List;

/**
 * A read-only store lacking directories the namespace needs in it (the zones, the homes), which it
 * cannot make: its prefix, and the directories, as the namespace names them.
 */
public final class ReadOnlyStoreLacksException extends IOException {
    private static final long serialVersionUID = 1L;

    private final VfsPath prefix;
    private final List<String> missing;

    ReadOnlyStoreLacksException(VfsPath prefix, List<String> missing) {
        super("the store at " + prefix + " is read-only and lacks the directories chibifs needs in it: "
                + String.join(", ", missing));
        this.prefix = prefix;
        this.missing = List.copyOf(missing);
    }

    /** The prefix of the read-only store. */
    public VfsPath prefix() {
        return prefix;
    }

    /** What it lacks, as the namespace's paths. */
    public List<String> missing() {
        return missing;
    }
}
