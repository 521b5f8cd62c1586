package dev.chibifs.router;

import dev.chibifs.config.FlockRegistry;
import dev.chibifs.config.HomeFile;
import dev.chibifs.path.VfsPath;
import dev.chibifs.policy.Zone;
import dev.chibifs.store.Metadata;
import dev.chibifs.store.Storage;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.file.NoSuchFileException;
import java.nio.file.attribute.FileTime;

/**
 * chibi's flock registry ({@code /flocks/registry.json}) as the store serving it has it now: the
 * one reader behind both the policy's membership and {@code /sys/contexts}, so the two never give
 * different answers. Read again whenever its inode, size, modification or change time changed
 * (one stat per question otherwise). Read through the store, so a symbolic link there is never
 * followed, as the store serves none as a file; one over {@link HomeFile#REGISTRY_JSON_LIMIT}
 * is not read. A registry that cannot be read, is over the limit or is malformed counts as
 * empty (no flock write is granted), and the log says why once per version of the file.
 */
final class FlockRegistryReader {

    private static final Logger LOG = LoggerFactory.getLogger(FlockRegistryReader.class);

    private record Stamp(long inode, long size, FileTime modified, FileTime changed) {
    }

    private static final String REGISTRY = Zone.FLOCK_REGISTRY_PATH;
    private static final Stamp MISSING = new Stamp(-1, -1, null, null);

    private final Storage storage;
    private final VfsPath path;

    // guarded by this
    private Stamp stamp;
    private FlockRegistry registry = FlockRegistry.EMPTY;
    private String problem;

    /** The registry at {@code path} of {@code storage} (the store that serves {@code /flocks/registry.json}, and its path there). */
    FlockRegistryReader(Storage storage, VfsPath path) {
        this.storage = storage;
        this.path = path;
    }

    /** Why the registry grants nothing now (unreadable, too big, malformed); null when it was read or is absent. */
    synchronized String problem() {
        return problem;
    }

    /** The registry as the store has it now; empty when missing, unreadable, too big or malformed. */
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
        if (now.size() > HomeFile.REGISTRY_JSON_LIMIT) {
            return refuse(now, tooBig(now.size()));
        }
        try {
            byte[] bytes = storage.read(path);
            if (bytes.length > HomeFile.REGISTRY_JSON_LIMIT) {
                return refuse(null, tooBig(bytes.length)); // grew after the stat
            }
            FlockRegistry parsed = FlockRegistry.parse(bytes);
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

    private static String tooBig(long size) {
        return "the flock registry " + REGISTRY + " holds " + size + " bytes, over the " + (HomeFile.REGISTRY_JSON_LIMIT >> 20)
                + " MiB a registry may hold: no flock writes until chibi rewrites it";
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
