package dev.chibifs.sys;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/** Whether a thread is being killed, and its supplementary groups, from its /proc status lines. */
class ProcStatusTest {

    private static List<String> status(String sigPnd, String shdPnd, String blk, String ign, String cgt) {
        return List.of("Name:\tpython3", "SigQ:\t1/31448", "SigPnd:\t" + sigPnd, "ShdPnd:\t" + shdPnd,
                "SigBlk:\t" + blk, "SigIgn:\t" + ign, "SigCgt:\t" + cgt);
    }

    @Test
    void aPendingSignalThatEndsTheProcessAndNothingHandlesIsDying() {
        String none = "0000000000000000";
        assertTrue(ProcStatus.dying(status("0000000000000100", none, none, none, none)), "SIGKILL");
        // a handled SIGINT pending, then timeout's SIGTERM: the kernel made no SIGKILL of it (a tester's
        // python, 28 s on a hung S3 where kill -9 took 0.02 s)
        assertTrue(ProcStatus.dying(status(none, "0000000000004002", none, none, "0000000000000002")));
        assertFalse(ProcStatus.dying(status(none, "0000000000000002", none, none, "0000000000000002")),
                "a handled SIGINT alone: the request goes on");
        assertFalse(ProcStatus.dying(status(none, "0000000000004000", "0000000000004000", none, none)), "blocked");
        assertFalse(ProcStatus.dying(status(none, "0000000000004000", none, "0000000000004000", none)), "ignored");
        assertFalse(ProcStatus.dying(status(none, "0000000000010000", none, none, none)), "SIGCHLD ends nothing");
        assertFalse(ProcStatus.dying(List.of("Name:\tgone")), "nothing to tell");
    }

    private static List<String> ids(String uid, String gid, String groups) {
        return List.of("Name:\trsync", "Uid:\t" + uid, "Gid:\t" + gid, "FDSize:\t64", "Groups:\t" + groups, "NStgid:\t7");
    }

    @Test
    void aThreadsGroupsAreReadWhereItsFileSystemIdsAreTheRequests() {
        assertArrayEquals(new long[] {27, 4369}, ProcStatus.groups(ids("4361\t4361\t4361\t4361", "4361\t4361\t4361\t4361",
                "27 4369 "), 4361, 4361), "the kernel ends the list with a space");
        assertArrayEquals(new long[] {4369}, ProcStatus.groups(ids("0\t4361\t0\t4361", "0\t4361\t0\t4361", "4369"),
                4361, 4361), "the fourth value is the file system id, which the request carries");
        assertArrayEquals(new long[0], ProcStatus.groups(ids("4361\t4361\t4361\t4361", "4361\t4361\t4361\t4361", ""),
                4361, 4361), "none");
        assertArrayEquals(new long[0], ProcStatus.groups(ids("4362\t4362\t4362\t4362", "4361\t4361\t4361\t4361", "4369"),
                4361, 4361), "another user's process has the thread's id now");
        assertArrayEquals(new long[0], ProcStatus.groups(ids("4361\t4361\t4361\t4361", "100\t100\t100\t100", "4369"),
                4361, 4361), "another group's");
        assertArrayEquals(new long[0], ProcStatus.groups(List.of("Name:\tx", "Groups:\t4369"), 4361, 4361),
                "no ids to compare: not known to be the request's");
    }

    @Test
    @org.junit.jupiter.api.Timeout(30)
    void aProcessStoppedBySigstopIsStoppedUntilContinued() throws Exception {
        Process sleeper = new ProcessBuilder("sleep", "60").start();
        try {
            assertFalse(ProcStatus.stopped(sleeper.pid()));
            assertTrue(new ProcessBuilder("kill", "-STOP", Long.toString(sleeper.pid())).start().waitFor() == 0);
            while (!ProcStatus.stopped(sleeper.pid())) {
                Thread.onSpinWait(); // the stop is delivered as the process is next scheduled
            }
            assertTrue(new ProcessBuilder("kill", "-CONT", Long.toString(sleeper.pid())).start().waitFor() == 0);
            while (ProcStatus.stopped(sleeper.pid())) {
                Thread.onSpinWait();
            }
        } finally {
            sleeper.destroyForcibly().waitFor();
        }
        assertFalse(ProcStatus.stopped(sleeper.pid()), "gone: not known to be stopped");
    }

    @Test
    void thisProcesssGroupsAreItsOwnAndAGoneThreadHasNone() {
        com.sun.security.auth.module.UnixSystem self = new com.sun.security.auth.module.UnixSystem();
        long[] expected = java.util.Arrays.stream(self.getGroups()).filter(g -> g != self.getGid()).sorted().toArray();
        long[] read = java.util.Arrays.stream(ProcStatus.groups(ProcessHandle.current().pid(), self.getUid(), self.getGid()))
                .filter(g -> g != self.getGid()).sorted().toArray();
        assertArrayEquals(expected, read);
        assertArrayEquals(new long[0], ProcStatus.groups(0, self.getUid(), self.getGid()), "pid 0: another PID namespace's caller");
        assertArrayEquals(new long[0], ProcStatus.groups(1L << 40, self.getUid(), self.getGid()), "no such thread");
    }
}
