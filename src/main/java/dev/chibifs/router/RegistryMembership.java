package dev.chibifs.router;

import dev.chibifs.config.FlockRegistry;
import dev.chibifs.path.VfsPath;
import dev.chibifs.policy.Membership;
import dev.chibifs.store.Storage;

import java.util.Optional;
import java.util.function.Supplier;

/**
 * Flock membership as chibi's registry says it now ({@link FlockRegistryReader}, the reader
 * {@code /sys/contexts} shares): a context chibi adds to a flock writes there at its next request
 * and one it removes is refused at its next request. A registry that cannot be read, is too big
 * or cannot be parsed grants nothing, and says why in the log once per version of the file.
 */
final class RegistryMembership implements Membership {

    private final FlockRegistryReader reader;
    private final Supplier<Optional<String>> siteId;

    RegistryMembership(Storage storage, VfsPath path, Supplier<Optional<String>> siteId) {
        this.reader = new FlockRegistryReader(storage, path);
        this.siteId = siteId;
    }

    @Override
    public boolean isMember(String flock, String context) {
        Optional<String> site = siteId.get();
        FlockRegistry r = current();
        return site.isPresent() && r.isMember(flock, context, FlockRegistry.siteFlock(site.get()));
    }

    @Override
    public String problem() {
        return reader.problem();
    }

    /** The registry as the store has it now; empty when missing, unreadable, too big or malformed. */
    FlockRegistry current() {
        return reader.current();
    }
}
