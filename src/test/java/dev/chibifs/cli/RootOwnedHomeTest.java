package dev.chibifs.cli;

import dev.chibifs.testing.Sh;
import dev.chibifs.testing.TestUsers;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A user's mount of a home root owns with no vfs directory yet: mount said "chown -R USER HOME/vfs" of a
 * directory not there, and doctor gave its probe's temporary name as the reason and "mkdir -p HOME/vfs"
 * as the fix, which leaves a store root owns. Both name the home that refused, and the fix makes the store
 * and gives it to the user; done, the store check passes.
 */
@Timeout(180)
class RootOwnedHomeTest {

    @Test
    void mountAndDoctorNameTheHomeThatRefusesAndAFixThatWorks() throws Exception {
        AsUser as = AsUser.stranger(false);
        TestUsers.User user = as.user();
        Path home = as.home(); // root's, 0755
        Path store = home.resolve("vfs");
        String refusal = "permission denied: uid " + user.uid() + " (" + user.name() + ") may not write " + home
                + " (owner root, mode 0755)";
        String fix = "as root, mkdir -p " + store + " && chown -R " + user.name() + " " + store;
        try {
            Sh.Result mount = as.mount("--foreground");
            assertEquals(ExitCodes.FAILURE, mount.exitCode(), mount.err());
            assertEquals("chibifs: cannot write the store " + store + ": " + refusal + ": " + fix
                    + ", or choose a --home of your own", mount.err().strip());

            Sh.Result doctor = as.run("doctor --home " + Sh.quote(home.toString()));
            assertTrue(doctor.out().contains("FAIL store " + store + ": absent, and cannot be made: " + refusal + "\n"
                    + "     fix: " + fix + ", or choose a --home of your own\n"), doctor.out());

            // the fix, as root: then the store is the user's
            Sh.run(fix.substring("as root, ".length())).ok();
            doctor = as.run("doctor --home " + Sh.quote(home.toString()));
            assertTrue(doctor.out().contains("OK   store writable: "), doctor.out());
        } finally {
            as.cleanUp();
        }
    }
}
