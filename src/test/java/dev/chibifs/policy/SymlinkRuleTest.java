package dev.chibifs.policy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.chibifs.path.VfsPath;
import org.junit.jupiter.api.Test;

class SymlinkRuleTest {

    private static VfsPath p(String path) {
        return VfsPath.of(path);
    }

    private static void allowed(String link, String target) {
        assertNull(SymlinkRule.ZONE.refusal(p(link), target), link + " -> " + target);
        assertNull(SymlinkRule.NONE.carryRefusal(p(link), target), link + " -> " + target);
    }

    private static String refused(String link, String target) {
        String why = SymlinkRule.ZONE.refusal(p(link), target);
        assertNotNull(why, link + " -> " + target);
        assertEquals(why, SymlinkRule.ZONE.carryRefusal(p(link), target));
        assertNull(SymlinkRule.ANY.refusal(p(link), target));
        return why;
    }

    @Test
    void zoneRootsAreTheZonesOwnDirectories() {
        assertEquals(p("/shared"), ZonePolicy.zoneRoot(p("/shared")));
        assertEquals(p("/shared"), ZonePolicy.zoneRoot(p("/shared/a/b")));
        assertEquals(p("/home/planner"), ZonePolicy.zoneRoot(p("/home/planner/x/y")));
        assertEquals(p("/home/planner"), ZonePolicy.zoneRoot(p("/home/planner")));
        assertEquals(p("/sys"), ZonePolicy.zoneRoot(p("/sys/tool_cache/planner/id")));
        assertEquals(VfsPath.root(), ZonePolicy.zoneRoot(p("/home")));
        assertEquals(VfsPath.root(), ZonePolicy.zoneRoot(p("/elsewhere/x")));
        assertEquals(VfsPath.root(), ZonePolicy.zoneRoot(VfsPath.root()));
    }

    @Test
    void relativeTargetsThatStayInTheZoneAreAllowed() {
        allowed("/shared/venv/lib64", "lib");
        allowed("/shared/node_modules/.bin/tool", "../tool/bin/cli.js");
        allowed("/home/planner/a/b/l", "../../c");
        allowed("/home/planner/l", ".");
        allowed("/home/planner/a/up", "..");
        allowed("/home/planner/a/l", "./../x/./y//z/");
        allowed("/shared/dangling", "no/such/thing");
        allowed("/shared/l", "...");
        allowed("/elsewhere/l", "../shared/x"); // SYSTEM's zone: the whole namespace, not beyond
    }

    @Test
    void targetsThatLeaveTheZoneAreRefusedNamingTheZone() {
        assertTrue(refused("/shared/l", "/etc/passwd").contains("absolute"));
        assertTrue(refused("/home/planner/l", "/home/planner/x").contains("absolute"));
        assertTrue(refused("/shared/l", "..").contains("'/shared'"));
        assertTrue(refused("/home/planner/a/l", "../../coder/notes").contains("'/home/planner'"));
        refused("/home/planner/l", "../planner/x"); // back in, but by way of /home: counted as out
        refused("/shared/a/b/l", "../../../home/coder/x");
        refused("/shared/l", "../../../../root/.ssh/id_rsa");
        refused("/elsewhere/l", "../../x"); // out of the store altogether
        refused("/sys/x/l", "../../shared/x");
    }

    @Test
    void aDotDotAfterANameIsRefusedBecauseTheNameMayBeALink() {
        // 'up' could be a link to the zone root: up/.. is then the zone's parent, whatever the text says
        assertTrue(refused("/shared/l", "up/../x").contains("'..' after a name"));
        refused("/shared/a/b/l", "c/../../x");
        refused("/shared/l", "./a/..");
    }

    @Test
    void aZoneRootCannotBeALink() {
        refused("/shared", "elsewhere");
        refused("/home/planner", "planner2");
    }

    @Test
    void noneRefusesEveryNewLinkAnyAllowsEveryOne() {
        assertNotNull(SymlinkRule.NONE.refusal(p("/shared/l"), "x"));
        assertNull(SymlinkRule.ANY.refusal(p("/shared/l"), "/etc/passwd"));
        assertNull(SymlinkRule.ANY.carryRefusal(p("/shared/l"), "../../.."));
        assertNotNull(SymlinkRule.NONE.carryRefusal(p("/shared/l"), "/etc/passwd"));
    }

    @Test
    void theOptionValuesParseAndAnythingElseIsNamed() {
        assertEquals(SymlinkRule.ZONE, SymlinkRule.parse("zone"));
        assertEquals(SymlinkRule.ANY, SymlinkRule.parse("any"));
        assertEquals(SymlinkRule.NONE, SymlinkRule.parse("none"));
        assertEquals("zone", SymlinkRule.ZONE.option());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> SymlinkRule.parse("Zone"));
        assertTrue(e.getMessage().contains("'Zone'") && e.getMessage().contains("zone, any or none"), e.getMessage());
    }
}
