package dev.chibifs.policy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.chibifs.path.VfsPath;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The zone table of design.md, row by row. Callers: SYSTEM, the owner context (planner), another
 * context (coder) and GUEST. Columns: write by SYSTEM, planner, coder, guest; then remove by the
 * same four (remove = write, minus the zone roots for everyone but SYSTEM).
 */
class ZonePolicyTest {

    private static final Caller PLANNER = Caller.context("planner");
    private static final Caller CODER = Caller.context("coder");
    private static final Caller[] CALLERS = {Caller.SYSTEM, PLANNER, CODER, Caller.GUEST};

    static Stream<Arguments> table() {
        return Stream.of(
                //            path                         write: S  planner coder guest   remove: S  planner coder guest
                row("/shared",                       "1110", "1000"),
                row("/shared/x/y",                   "1110", "1110"),
                row("/home/planner",                 "1100", "1000"),
                row("/home/planner/x",               "1100", "1100"),
                row("/home/coder/x",                 "1010", "1010"),
                row("/home",                         "1000", "1000"),
                row("/sys",                          "1000", "1000"),
                row("/sys/tool_cache",               "1000", "1000"),
                row("/sys/tool_cache/planner/id",    "1000", "1000"),
                row("/",                             "1000", "1000"),
                row("/other",                        "1000", "1000"),
                row("/sharedx",                      "1000", "1000"),
                row("/sharedx/y",                    "1000", "1000"),
                row("/homex/planner",                "1000", "1000"),
                row("/sysx",                         "1000", "1000"));
    }

    private static Arguments row(String path, String write, String remove) {
        return Arguments.of(path, write, remove);
    }

    @ParameterizedTest(name = "{0}: write {1}, remove {2}")
    @MethodSource("table")
    void zoneTable(String path, String write, String remove) {
        VfsPath p = VfsPath.of(path);
        for (int i = 0; i < CALLERS.length; i++) {
            Caller c = CALLERS[i];
            assertEquals(write.charAt(i) == '1', ZonePolicy.mayWrite(c, p, Membership.NONE), c + " writes " + path);
            assertEquals(remove.charAt(i) == '1', ZonePolicy.mayRemove(c, p, Membership.NONE), c + " removes " + path);
        }
    }

    @Test
    void zoneRoots() {
        for (String root : new String[] {"/", "/shared", "/home", "/home/planner", "/home/x", "/sys"}) {
            assertTrue(ZonePolicy.isZoneRoot(VfsPath.of(root)), root);
        }
        for (String p : new String[] {"/shared/a", "/home/planner/a", "/sys/tool_cache", "/other", "/sharedx"}) {
            assertFalse(ZonePolicy.isZoneRoot(VfsPath.of(p)), p);
        }
    }

    static Stream<Arguments> links() {
        return Stream.of(
                // caller, existing, new name, allowed
                Arguments.of(PLANNER, "/shared/a", "/shared/sub/b", true),
                Arguments.of(PLANNER, "/home/planner/a", "/home/planner/b", true),
                Arguments.of(PLANNER, "/shared/a", "/home/planner/a", false),
                Arguments.of(PLANNER, "/home/planner/a", "/shared/a", false),
                Arguments.of(PLANNER, "/home/coder/a", "/home/coder/b", false),
                Arguments.of(PLANNER, "/sys/a", "/sys/b", false),
                Arguments.of(PLANNER, "/sys/a", "/shared/a", false),
                Arguments.of(Caller.GUEST, "/shared/a", "/shared/b", false),
                Arguments.of(Caller.SYSTEM, "/sys/a", "/sys/b", true),
                Arguments.of(Caller.SYSTEM, "/sys/a", "/shared/a", false),
                Arguments.of(Caller.SYSTEM, "/home/planner/a", "/home/coder/a", false));
    }

    @ParameterizedTest(name = "{0}: link {1} -> {2}: {3}")
    @MethodSource("links")
    void linksStayInsideOneZone(Caller caller, String existing, String newName, boolean allowed) {
        assertEquals(allowed, ZonePolicy.mayLink(caller, VfsPath.of(existing), VfsPath.of(newName), Membership.NONE));
    }

    @Test
    void denialsNameCallerAndPath() {
        String other = ZonePolicy.denial(PLANNER, VfsPath.of("/home/coder/x"), Membership.NONE);
        assertTrue(other.contains("'planner'") && other.contains("'/home/coder/x'"), other);
        assertTrue(other.contains("/home/planner/"), other);
        String root = ZonePolicy.denial(PLANNER, VfsPath.of("/home/planner"), Membership.NONE);
        assertTrue(root.contains("'planner'") && root.contains("'/home/planner'") && root.contains("zone root"), root);
        String guest = ZonePolicy.denial(Caller.GUEST, VfsPath.of("/shared/x"), Membership.NONE);
        assertTrue(guest.contains("'/shared/x'") && guest.contains("read-only"), guest);
        String sys = ZonePolicy.denial(CODER, VfsPath.of("/sys/x"), Membership.NONE);
        assertTrue(sys.contains("'coder'") && sys.contains("'/sys/x'"), sys);
    }

    @Test
    void zoneOf() {
        assertEquals(new Zone(Zone.Kind.HOME, "planner"), Zone.of(VfsPath.of("/home/planner/x")));
        assertEquals(new Zone(Zone.Kind.HOME, "planner"), Zone.of(VfsPath.of("/home/planner")));
        assertEquals(Zone.Kind.SHARED, Zone.of(VfsPath.of("/shared/x")).kind());
        assertEquals(Zone.Kind.SYS, Zone.of(VfsPath.of("/sys/tool_cache/planner/id")).kind());
        assertEquals(Zone.Kind.OTHER, Zone.of(VfsPath.of("/home")).kind());
        assertEquals(Zone.Kind.OTHER, Zone.of(VfsPath.of("/sharedx")).kind());
    }
}
