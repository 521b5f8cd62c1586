package dev.chibifs.sys;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class OwnedDirectoriesTest {

    /** A root mount of a missing ~agent/.chibi made it root's for the log, and the store below stayed root's. */
    @Test
    void asRootWhatIsMadeInAUsersDirectoryIsTheUsers(@TempDir Path temp) throws Exception {
        Assumptions.assumeTrue(Syscalls.geteuid() == 0, "only root gives directories away");
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

    // which groups are a user's alone: their write bit on a directory is the user's own (umask 002)

    private static final List<String> PASSWD = List.of("root:x:0:0:root:/root:/bin/sh",
            "bob:x:1001:1001::/home/bob:/bin/sh", "eve:x:1002:1002::/home/eve:/bin/sh", "ann:x:1003:1003::/home/ann:/bin/sh",
            "sam:x:1004:1005::/home/sam:/bin/sh", "tim:x:1006:1005::/home/tim:/bin/sh");
    private static final List<String> GROUP = List.of("root:x:0:", "bob:x:1001:", "eve:x:1002:bob",
            "ann:x:1003:ann", "shared:x:1005:", "empty:x:1010:", "team:x:1020:bob,eve");

    @Test
    void aUsersOwnGroupWithNobodyElseIsTheirs() {
        assertTrue(OwnedDirectories.privateGroup(1001, 1001, PASSWD, GROUP));
        assertTrue(OwnedDirectories.privateGroup(1003, 1003, PASSWD, GROUP), "the owner listed as its only member");
        assertTrue(OwnedDirectories.privateGroup(0, 0, PASSWD, GROUP));
    }

    @Test
    void anyGroupOthersMayHoldIsNot() {
        assertFalse(OwnedDirectories.privateGroup(1002, 1002, PASSWD, GROUP), "bob is a member of eve's group");
        assertFalse(OwnedDirectories.privateGroup(1005, 1004, PASSWD, GROUP), "tim's own group too");
        assertFalse(OwnedDirectories.privateGroup(1010, 1001, PASSWD, GROUP), "empty, but not bob's own");
        assertFalse(OwnedDirectories.privateGroup(1010, 0, PASSWD, GROUP), "empty, but not root's own");
        assertFalse(OwnedDirectories.privateGroup(1020, 1001, PASSWD, GROUP), "a team's");
        assertFalse(OwnedDirectories.privateGroup(1001, 1002, PASSWD, GROUP), "another user's own");
        assertFalse(OwnedDirectories.privateGroup(4242, 4242, PASSWD, GROUP), "one the files do not name");
    }
}
