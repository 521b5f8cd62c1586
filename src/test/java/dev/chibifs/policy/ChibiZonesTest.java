package dev.chibifs.policy;

import dev.chibifs.path.VfsPath;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * chibi 0.10's zones, row by row: write and remove by SYSTEM, planner (member of team), coder
 * (member of nothing) and GUEST.
 */
class ChibiZonesTest {

    private static final Caller[] CALLERS = {Caller.SYSTEM, Caller.context("planner"), Caller.context("coder"), Caller.GUEST};
    private static final Membership TEAM = new Membership() {
        @Override
        public boolean isMember(String flock, String context) {
            return flock.equals("team") && context.equals("planner");
        }

        @Override
        public String problem() {
            return null;
        }
    };

    @ParameterizedTest(name = "{0}: write {1}, remove {2}")
    @CsvSource({
        "/site,                       1110, 1000",
        "/site/x,                     1110, 1110",
        "/flocks,                     1000, 1000",
        "/flocks/registry.json,       1000, 1000",
        "/flocks/team,                1100, 1000",
        "/flocks/team/x/y,            1100, 1100",
        "/flocks/ops/x,               1000, 1000",
        "/flocks/site:h-1/tasks,      1000, 1000",
        "/tools,                      1000, 1000",
        "/tools/sys,                  0000, 0000",
        "/tools/sys/x.json,           0000, 0000",
        "/tools/shared,               1110, 1000",
        "/tools/shared/x.scm,         1110, 1110",
        "/tools/home,                 1000, 1000",
        "/tools/home/planner/x.scm,   1100, 1100",
        "/tools/home/coder/x.scm,     1010, 1010",
        "/tools/flocks/team/x.scm,    1100, 1100",
        "/tools/flocks/ops/x.scm,     1000, 1000",
        "/tools/other,                1000, 1000",
        "/sys/contexts/planner,       1000, 1000",
        "/sitex,                      1000, 1000",
    })
    void zoneTable(String path, String write, String remove) {
        VfsPath p = VfsPath.of(path);
        for (int i = 0; i < CALLERS.length; i++) {
            assertEquals(write.charAt(i) == '1', ZonePolicy.mayWrite(CALLERS[i], p, TEAM), CALLERS[i] + " writes " + path);
            assertEquals(remove.charAt(i) == '1', ZonePolicy.mayRemove(CALLERS[i], p, TEAM), CALLERS[i] + " removes " + path);
        }
    }
}
