package dev.chibifs.cli;

import dev.chibifs.testing.FuseSupport;
import dev.chibifs.testing.MountedFs;
import dev.chibifs.testing.Sh;
import dev.chibifs.testing.TestUsers;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.file.Files;
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
        FuseSupport.requireFuse();
        FuseSupport.requireRoot();
        TestUsers.User user = TestUsers.ensure("chibit-stranger");
        Path root = MountedFs.tempRoot();
        String classpath = MountedFs.readableClasspath(Files.createDirectory(root.resolve("classpath")));
        Path mnt = Files.createDirectory(root.resolve("mnt"));
        Path home = Files.createDirectory(root.resolve("home")); // root's, 0755
        Sh.run("chown " + user.uid() + ":" + user.gid() + " " + Sh.quote(mnt.toString())).ok();
        String chibifs = "env -u CHIBIFS_RUNTIME_DIR XDG_RUNTIME_DIR= CHIBIFS_CLASSPATH=" + Sh.quote(classpath) + " "
                + Sh.quote(Path.of("scripts/chibifs").toAbsolutePath().toString());
        Path store = home.resolve("vfs");
        String refusal = "permission denied: uid " + user.uid() + " (" + user.name() + ") may not write " + home
                + " (owner root, mode 0755)";
        String fix = "as root, mkdir -p " + store + " && chown -R " + user.name() + " " + store;
        try {
            Sh.Result mount = Sh.as(user.uid(), user.gid(), root, chibifs + " mount --foreground --context planner --home "
                    + Sh.quote(home.toString()) + " " + Sh.quote(mnt.toString()));
            assertEquals(ExitCodes.FAILURE, mount.exitCode(), mount.err());
            assertEquals("chibifs: cannot write the store " + store + ": " + refusal + ": " + fix
                    + ", or choose a --home of your own", mount.err().strip());

            Sh.Result doctor = Sh.as(user.uid(), user.gid(), root, chibifs + " doctor --home " + Sh.quote(home.toString()));
            assertTrue(doctor.out().contains("FAIL store " + store + ": absent, and cannot be made: " + refusal + "\n"
                    + "     fix: " + fix + ", or choose a --home of your own\n"), doctor.out());

            // the fix, as root: then the store is the user's
            Sh.run(fix.substring("as root, ".length())).ok();
            doctor = Sh.as(user.uid(), user.gid(), root, chibifs + " doctor --home " + Sh.quote(home.toString()));
            assertTrue(doctor.out().contains("OK   store writable: "), doctor.out());
        } finally {
            Sh.run("umount -l " + Sh.quote(mnt.toString()) + " 2>/dev/null; true");
            Sh.run("rm -rf " + Sh.quote(root.resolve("classpath").toString()));
        }
    }
}
