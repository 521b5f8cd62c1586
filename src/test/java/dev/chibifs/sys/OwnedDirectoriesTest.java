package dev.chibifs.sys;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;

class OwnedDirectoriesTest {

    /** A root mount of a missing ~agent/.chibi made it root's for the log, and the store below stayed root's. */
    @Test
    void asRootWhatIsMadeInAUsersDirectoryIsTheUsers(@TempDir Path temp) throws Exception {
        Assumptions.assumeTrue(LibC.c().geteuid() == 0, "only root gives directories away");
        Path home = Files.createDirectories(temp.resolve("agent"));
        Files.setAttribute(home, "unix:uid", 4242);
        Files.setAttribute(home, "unix:gid", 4243);
        OwnedDirectories.make(home.resolve(".chibi/chibifs/logs"));
        for (Path d : new Path[] {home.resolve(".chibi"), home.resolve(".chibi/chibifs"), home.resolve(".chibi/chibifs/logs")}) {
            assertEquals(4242, Files.getAttribute(d, "unix:uid"), d.toString());
            assertEquals(4243, Files.getAttribute(d, "unix:gid"), d.toString());
        }
        // in a directory of root's, root's
        OwnedDirectories.make(temp.resolve("srv/chibi"));
        assertEquals(0, Files.getAttribute(temp.resolve("srv/chibi"), "unix:uid"));
    }
}
