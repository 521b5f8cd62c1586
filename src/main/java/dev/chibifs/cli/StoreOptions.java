package dev.chibifs.cli;

import dev.chibifs.config.ChibiHome;
import dev.chibifs.router.Namespace;
import dev.chibifs.router.StoreMount;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** The stores a namespace mounts beside {@code <home>/vfs}: the same options on mount, the vfs and the cache commands. */
final class StoreOptions {

    @Option(names = "--store", paramLabel = "PREFIX=SPEC",
            description = "Serve PREFIX and below from another store (repeatable; the policy is the path's, as"
                    + " everywhere): memory[:SIZE] (in the daemon's memory, empty at mount, ENOSPC past SIZE, default"
                    + " 256M) or readonly:DIR (DIR read-only, no link followed out of it). A rename or hard link"
                    + " across stores is EXDEV (mv copies).")
    List<String> stores = new ArrayList<>();

    @Option(names = "--tools-sys", paramLabel = "DIR",
            description = "Show DIR read-only at /tools/sys (chibi's tool registry; default: empty).")
    Path toolsSys;

    /** The parsed {@code --store} options; a bad one is a usage error naming the value and the rule. */
    List<StoreMount> mounts() {
        List<StoreMount> out = new ArrayList<>();
        for (String s : stores) {
            try {
                out.add(StoreMount.parse(s));
            } catch (IllegalArgumentException e) {
                throw new UsageException(e.getMessage());
            }
        }
        if (toolsSys != null && !Files.isDirectory(toolsSys)) {
            throw new UsageException("invalid --tools-sys '" + toolsSys + "': not an existing directory");
        }
        return out;
    }

    /** The namespace of {@code home} with these stores. */
    Namespace open(ChibiHome home) throws IOException {
        return open(home, dev.chibifs.policy.SymlinkRule.ZONE);
    }

    /** {@link #open(ChibiHome)} with the mount's rule for symbolic links. */
    Namespace open(ChibiHome home, dev.chibifs.policy.SymlinkRule symlinks) throws IOException {
        try {
            return Namespace.open(home, mounts(), toolsSys, symlinks);
        } catch (IllegalArgumentException e) {
            throw new UsageException(e.getMessage());
        }
    }

    /** These options again, for the daemon's own command line. */
    List<String> arguments() {
        List<String> out = new ArrayList<>();
        for (StoreMount m : mounts()) {
            out.add("--store");
            out.add(m.text());
        }
        if (toolsSys != null) {
            out.add("--tools-sys");
            out.add(toolsSys.toAbsolutePath().normalize().toString());
        }
        return out;
    }
}
