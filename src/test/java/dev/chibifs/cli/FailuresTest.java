package dev.chibifs.cli;

import dev.chibifs.path.VfsPath;
import dev.chibifs.router.CrossDeviceException;
import dev.chibifs.router.PolicyDeniedException;
import org.junit.jupiter.api.Test;

import java.nio.file.AccessDeniedException;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

class FailuresTest {

    private static final Path STORE = Path.of("/srv/root-home/vfs");
    private static final List<VfsPath> SHARED_X = List.of(VfsPath.of("/shared/x"));

    /**
     * An agent's write --as-system through --home to a store root owns was refused by the operating system, and
     * said "permission denied" with exit 3, which the docs gave the zone policy alone: it now says who refused,
     * whom, and which store.
     */
    @Test
    void theOperatingSystemsRefusalNamesTheStoreTheUidAndThatThePolicyAllowedIt() {
        Failures.Report r = new Failures(STORE, List.of(), SHARED_X, true, 4752)
                .report(new AccessDeniedException(STORE + "/shared/x"));
        assertEquals(ExitCodes.PERMISSION_DENIED, r.exitCode());
        assertEquals("the store /srv/root-home/vfs is not writable by uid 4752 (the operating system refused, not the"
                + " zone policy): vfs:///shared/x", r.message());
        r = new Failures(STORE, List.of(), SHARED_X, false, 4752).report(new AccessDeniedException(STORE + "/shared/x"));
        assertEquals("the store /srv/root-home/vfs is not readable by uid 4752 (the operating system refused, not the"
                + " zone policy): vfs:///shared/x", r.message());
    }

    /** After a link into a store mounted at a prefix, a failure named that store's own path: vfs:/// or vfs:///nope. */
    @Test
    void aFailureAfterALinkIntoAnotherStoreNamesThePathGivenAndWhereItLed() {
        VfsPath given = VfsPath.of("/home/alice/toro_d");
        Failures.Report r = new Failures(STORE, List.of(VfsPath.of("/shared/ro")), List.of(given),
                java.util.Map.of(VfsPath.of("/shared/ro"), given), false, 4752)
                .report(dev.chibifs.sys.Errors.of(dev.chibifs.sys.Linux.EISDIR, "/"));
        assertEquals(ExitCodes.CONFLICT, r.exitCode());
        assertEquals("is a directory: vfs:///home/alice/toro_d (a symbolic link on it leads to vfs:///shared/ro)",
                r.message());
        VfsPath below = VfsPath.of("/home/alice/toro_d/nope");
        r = new Failures(STORE, List.of(VfsPath.of("/shared/ro")), List.of(below),
                java.util.Map.of(VfsPath.of("/shared/ro/nope"), below), false, 4752)
                .report(new java.nio.file.NoSuchFileException("/nope"));
        assertEquals(ExitCodes.NOT_FOUND, r.exitCode());
        assertEquals("no such file or directory: vfs:///home/alice/toro_d/nope (a symbolic link on it leads to"
                + " vfs:///shared/ro/nope)", r.message());
    }

    @Test
    void thePolicysRefusalIsInItsOwnWords() {
        Failures.Report r = new Failures(STORE, List.of(), SHARED_X, true, 4752)
                .report(new PolicyDeniedException("/home/planner/x", "coder may not write /home/planner/x"));
        assertEquals(ExitCodes.PERMISSION_DENIED, r.exitCode());
        assertEquals("coder may not write /home/planner/x", r.message());
    }

    /** A hard link across zones was reported as strerror, the why and one file's URI; between stores, as the why: now every EXDEV the router gives is its why. */
    @Test
    void everyCrossDeviceRefusalIsItsWhy() {
        Failures.Report r = new Failures(STORE, List.of(), SHARED_X, true, 4752)
                .report(new CrossDeviceException("/shared/a", "/home/planner/a", "hard links cannot cross zones"));
        assertEquals(ExitCodes.IO_ERROR, r.exitCode());
        assertEquals("hard links cannot cross zones (Invalid cross-device link)", r.message());
    }
}
