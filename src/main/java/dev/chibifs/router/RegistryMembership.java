package dev.chibifs.router;

import dev.chibifs.config.FlockRegistry;
import dev.chibifs.path.VfsPath;
import dev.chibifs.policy.Membership;
import dev.chibifs.policy.Zone;
import dev.chibifs.store.Metadata;
import dev.chibifs.store.Storage;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.file.NoSuchFileException;
import java.nio.file.attribute.FileTime;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * Flock membership as chibi's registry says it now: {@code /flocks/registry.json}, read from the
 * store that serves that path whenever its inode, size or modification time changed (one stat
 * per question otherwise), so a context chibi adds to a flock writes there at its next request
 * and one it removes is refused at its next request. A registry that cannot be read or parsed
 * grants nothing, and says why in the log once per version of the file.
 */
final class RegistryMembership implements Membership {

    private static final Logger LOG = LoggerFactory.getLogger(RegistryMembership.class);

    private record Stamp(long inode, long size, FileTime modified, FileTime changed) {
    }

    private static final String REGISTRY = Zone.FLOCK_REGISTRY_PATH;
    private static final Stamp MISSING = new Stamp(-1, -1, null, null);

    private final Storage storage;
    private final VfsPath path;
    private final Supplier<Optional<String>> siteId;

    // guarded by this
    private Stamp stamp;
    private FlockRegistry registry = FlockRegistry.EMPTY;
    private String problem;

    RegistryMembership(Storage storage, VfsPath path, Supplier<Optional<String>> siteId) {
        this.storage = storage;
        this.path = path;
        this.siteId = siteId;
    }

    @Override
    public boolean isMember(String flock, String context) {
        Optional<String> site = siteId.get();
        FlockRegistry r = current();
        return site.isPresent() && r.isMember(flock, context, FlockRegistry.siteFlock(site.get()));
    }

    @Override
    public synchronized String problem() {
        return problem;
    }

    /** The registry as the store has it now; empty when missing, unreadable or malformed. */
    synchronized FlockRegistry current() {
        Stamp now;
        try {
            Metadata m = storage.metadata(path);
            now = new Stamp(m.inode(), m.size(), m.modified(), m.changed());
        } catch (NoSuchFileException e) {
            now = MISSING;
        } catch (IOException | RuntimeException e) {
            return refuse(null, "cannot read the flock registry " + REGISTRY + ": " + e.getMessage());
        }
        if (now.equals(stamp)) {
            return registry;
        }
        if (now == MISSING) {
            stamp = now;
            problem = null;
            return registry = FlockRegistry.EMPTY;
        }
        try {
            FlockRegistry parsed = FlockRegistry.parse(storage.read(path));
            stamp = now;
            problem = null;
            return registry = parsed;
        } catch (IllegalArgumentException e) {
            return refuse(now, "the flock registry " + REGISTRY + " is malformed (" + e.getMessage()
                    + "): no flock writes until chibi rewrites it");
        } catch (IOException | RuntimeException e) {
            return refuse(null, "cannot read the flock registry " + REGISTRY + ": " + e.getMessage());
        }
    }

    private FlockRegistry refuse(Stamp now, String why) {
        if (!why.equals(problem)) {
            LOG.warn(why);
        }
        stamp = now; // null when unreadable: ask the store again next time
        problem = why;
        return registry = FlockRegistry.EMPTY;
    }
}
