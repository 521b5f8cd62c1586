package dev.chibifs.sys;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/** Whether a thread is being killed, from its /proc status lines. */
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
}
