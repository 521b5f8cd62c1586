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
